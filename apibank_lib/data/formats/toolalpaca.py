"""Reading ToolAlpaca-format files and converting them into our dialogues and samples.

A ToolAlpaca file is a JSON list of API entries. Every entry describes one web
API (``Name``, ``Description``, ``Category``, ``Introduction``, ``Functions``,
``Documentation``: an OpenAPI document as a dict or as JSON text,
``NLDocumentation``, ``Function_Description``: function name -> text) and holds
either

* training data, ``Instances``: ``{"input", "output", "Final Thought",
  "intermediate_steps"}`` where every step is ``[[action, action_input, thought],
  observation]``; or
* evaluation data, ``Instructions`` (user requests) and, parallel to them,
  ``Golden_Answers`` (lists of ``{"Action", "Action_Input"}`` steps). An
  evaluation entry may also ship ``Instances`` next to them: solution records,
  read like training instances and used for their observations (see below).

An entry is an evaluation entry when it has ``Golden_Answers``, or
``Instructions`` without ``Instances``; otherwise ``Instances`` make it a
training entry.

Only ``Name`` and the instance or instruction fields the conversion needs are
required; a missing required field, or one of the wrong type, is a
:class:`~apibank_lib.core.errors.DataError` naming the file, the entry (index and
name), the instance or step and the field. Optional fields may be absent.

What the conversion makes:

* :func:`convert_training`: one level-1 :class:`~apibank_lib.core.types.Dialogue`
  per usable instance (the user's request, one :class:`~apibank_lib.core.types.ApiRecord`
  per usable step, the final answer as an AI turn) and a
  :class:`~apibank_lib.core.types.ToolSchema` per function.
* :func:`convert_evaluation`: one :class:`~apibank_lib.core.types.ApiCallSample` per
  gold step (the request and the earlier gold steps as history, the step as
  gold, judged by API name and arguments with :func:`gold_matches`).

A golden step marked ``[Optional]`` (a step a solution may skip) is read as the call it names and kept as gold.
Step references, ToolAlpaca's open placeholders (``${start date}``) included, are read as
:mod:`apibank_lib.data.formats.step_references` describes.

What is left out is counted by reason (:attr:`ConversionResult.dropped`):
documentation look-ups (``getDetails``), action inputs that are not a JSON
object, actions that are none of the entry's functions, instances or
instructions left with no usable step, and empty requests or answers.

Observations are kept as parsed JSON when they are JSON, else as text. An
observation written as ``Status Code: N. Response: BODY`` keeps only its
parsed body as the output; a status of 400 or more also fills the envelope's
``exception`` (``"status code N"``), as our envelopes mark a failed call.

Step references (ToolAlpaca's ``${FIELD from STEP}``, an argument taken from an
earlier step's result) are read, resolved, given their values and judged by
:mod:`apibank_lib.data.formats.step_references`; the training conversion replaces a
reference by its value (or its placeholder text), the evaluation conversion
keeps it in the gold, and the conversion report counts them.

:func:`write_converted` writes the result in a byte-stable layout (see there).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from apibank_lib.core.errors import ConfigError, DataError
from apibank_lib.core.types import ApiCallSample, ApiRecord, Dialogue, Param, ToolSchema, Turn, Utterance
from apibank_lib.data.formats.official import turn_record
from apibank_lib.data.formats.step_references import (
    NAME_RULE,
    VALUE_RULE,
    CallJudgment,
    StepReference,
    display_call,
    gold_matches,
    judge_call,
    materialise,
    parse_action_input,
    references_in,
    resolve_references,
    step_value,
    to_jsonable,
)
from apibank_lib.env.databases import load_json

__all__ = [
    "DOCUMENTATION_ACTIONS",
    "EVAL_REASONS",
    "NAME_RULE",
    "REFERENCE_COUNTS",
    "TRAIN_REASONS",
    "VALUE_RULE",
    "ApiGroup",
    "CallJudgment",
    "ConversionResult",
    "GoldStep",
    "StepReference",
    "ToolAlpacaEntry",
    "ToolAlpacaFile",
    "ToolAlpacaInstance",
    "ToolAlpacaInstruction",
    "ToolAlpacaStep",
    "convert",
    "convert_evaluation",
    "convert_training",
    "display_call",
    "gold_matches",
    "judge_call",
    "parse_action_input",
    "read_toolalpaca",
    "write_converted",
]

Kind = Literal["train", "eval"]

DOCUMENTATION_ACTIONS = frozenset({"getDetails"})
"""Actions that fetch an API's documentation instead of calling one of its functions."""

# Drop reasons. Every unit read is either converted or dropped for exactly one of them.
DOCUMENTATION_STEP = "documentation_step"
UNPARSABLE_INPUT = "unparsable_action_input"
UNKNOWN_FUNCTION = "unknown_function"
INSTANCE_DROPPED = "instance_dropped"
INSTRUCTION_DROPPED = "instruction_dropped"
EMPTY_INPUT = "empty_input"
EMPTY_OUTPUT = "empty_output"
EMPTY_INSTRUCTION = "empty_instruction"
NO_GOLDEN_ANSWER = "no_golden_answer"
NO_USABLE_STEP = "no_usable_step"
NO_CONVERTED_INSTANCE = "no_converted_instance"
NO_CONVERTED_INSTRUCTION = "no_converted_instruction"

TRAIN_REASONS: dict[str, tuple[str, ...]] = {
    "apis": (NO_CONVERTED_INSTANCE,),
    "instances": (EMPTY_INPUT, EMPTY_OUTPUT, NO_USABLE_STEP),
    "steps": (DOCUMENTATION_STEP, UNPARSABLE_INPUT, UNKNOWN_FUNCTION, INSTANCE_DROPPED),
}
"""Per counted unit of a training file, its drop reasons in report order."""

EVAL_REASONS: dict[str, tuple[str, ...]] = {
    "apis": (NO_CONVERTED_INSTRUCTION,),
    "instructions": (EMPTY_INSTRUCTION, NO_GOLDEN_ANSWER, UNPARSABLE_INPUT, UNKNOWN_FUNCTION, NO_USABLE_STEP),
    "steps": (DOCUMENTATION_STEP, UNPARSABLE_INPUT, UNKNOWN_FUNCTION, INSTRUCTION_DROPPED),
}
"""Per counted unit of an evaluation file, its drop reasons in report order.

An instruction with a gold step whose input cannot be parsed, or whose action is
unknown, is dropped whole: the later samples' history would otherwise miss a step.
"""

REFERENCE_COUNTS: dict[str, str] = {
    "steps": "steps with references",
    "total": "references",
    "unresolved": "unresolved",
    "with_value": "with a value",
}
"""The step-reference counts of a report (over converted steps): key in :meth:`ConversionResult.counts` ->
its measure in :meth:`ConversionResult.rows`."""

_TYPES = {
    "string": "str",
    "str": "str",
    "integer": "int",
    "int": "int",
    "number": "float",
    "float": "float",
    "double": "float",
    "boolean": "bool",
    "bool": "bool",
    "array": "list",
    "list": "list",
    "object": "dict",
    "dict": "dict",
}
_STATUS = re.compile(r"\s*Status Code:\s*(\d{3})\.?\s*Response:\s*(.*)\Z", re.DOTALL)
_PARAM_TEXT = re.compile(
    r"\s*(?:(required|optional)\.\s*)?(?:(string|integer|number|boolean|array|object|int|float|str|bool|list|dict)\b"
    r"(?:\[[^\]]*\])?\.?\s*)?(.*)\Z",
    re.DOTALL | re.IGNORECASE,
)
_HTTP_METHODS = ("get", "post", "put", "patch", "delete", "head", "options")


# --- what a file holds ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolAlpacaStep:
    """One intermediate step of a training instance, as written in the file.

    Attributes:
        action: the function called (or a documentation look-up such as ``getDetails``).
        action_input: the arguments as written: JSON text, or already an object.
        thought: the reasoning text written with the action ("" when absent).
        observation: what came back, as written (usually text, often JSON text).
    """

    action: str
    action_input: Any
    thought: str
    observation: Any


@dataclass(frozen=True)
class ToolAlpacaInstance:
    """One training instance: a request, the steps taken and the final answer.

    Attributes:
        index: position in its entry's ``Instances``.
        input: the user's request.
        output: the final answer.
        final_thought: the closing reasoning ("" when absent).
        steps: the intermediate steps in order.
    """

    index: int
    input: str
    output: str
    final_thought: str
    steps: tuple[ToolAlpacaStep, ...]


@dataclass(frozen=True)
class GoldStep:
    """One step of a golden answer: the function and its input as written."""

    action: str
    action_input: Any


@dataclass(frozen=True)
class ToolAlpacaInstruction:
    """One evaluation request and its golden answer (``None`` when the file gives none)."""

    index: int
    instruction: str
    golden: tuple[GoldStep, ...] | None


@dataclass(frozen=True)
class ToolAlpacaEntry:
    """One API entry of a ToolAlpaca file.

    Attributes:
        index: position in the file.
        name: the API's name.
        description, category, introduction, nl_documentation: the texts ("" when absent).
        functions: the ``Functions`` field as written (a list of texts, or one text).
        documentation: the OpenAPI document as an object, or None when absent or not JSON.
        function_descriptions: function name -> description text, in file order
            (the ``components`` key of ``Function_Description`` is kept apart).
        components: the ``components`` value of ``Function_Description``, if any.
        instances: the training instances (training files); in an evaluation file, the
            solution records shipped next to the instructions, if any (by index).
        instructions: the evaluation requests (evaluation files).
    """

    index: int
    name: str
    description: str = ""
    category: str = ""
    introduction: str = ""
    functions: Any = None
    documentation: dict[str, Any] | None = None
    nl_documentation: str = ""
    function_descriptions: dict[str, str] = field(default_factory=dict)
    components: Any = None
    instances: tuple[ToolAlpacaInstance, ...] = ()
    instructions: tuple[ToolAlpacaInstruction, ...] = ()

    @property
    def function_names(self) -> tuple[str, ...]:
        """The callable functions: the ``Function_Description`` keys, else the OpenAPI operation ids."""
        if self.function_descriptions:
            return tuple(self.function_descriptions)
        return tuple(_openapi_operations(self.documentation))


@dataclass(frozen=True)
class ToolAlpacaFile:
    """A whole ToolAlpaca file: training (``Instances``) or evaluation (``Instructions``)."""

    path: Path
    kind: Kind
    entries: tuple[ToolAlpacaEntry, ...]


# --- reading --------------------------------------------------------------------------------------


class _Where:
    """Builds error messages naming the file, the entry and the place inside it."""

    def __init__(self, path: Path, index: int, name: str | None = None) -> None:
        self.path, self.index, self.name = path, index, name

    def error(self, message: str, inside: str = "") -> DataError:
        entry = f"entry {self.index}" + (f" ({self.name})" if self.name else "")
        return DataError(f"{entry}{', ' + inside if inside else ''}: {message}", self.path)


def _optional_text(raw: dict[str, Any], key: str, where: _Where, inside: str = "") -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise where.error(f"field {key!r} must be text, found {type(value).__name__}", inside)
    return value


def _documentation(value: Any) -> dict[str, Any] | None:
    """The OpenAPI document as an object; text that is not a JSON object counts as absent."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def _read_step(raw: Any, where: _Where, inside: str) -> ToolAlpacaStep:
    shape = "[[action, action_input, thought], observation]"
    if not isinstance(raw, (list, tuple)) or len(raw) != 2 or not isinstance(raw[0], (list, tuple)):
        raise where.error(f"a step must be {shape}, found {json.dumps(raw, ensure_ascii=False)[:60]}", inside)
    head, observation = raw
    if len(head) not in (2, 3):
        raise where.error(
            f"a step's action part must be [action, action_input, thought], found {len(head)} items", inside
        )
    action = head[0]
    if not isinstance(action, str) or not action.strip():
        raise where.error("the step's action must be a non-empty function name", inside)
    thought = head[2] if len(head) == 3 and isinstance(head[2], str) else ""
    return ToolAlpacaStep(action.strip(), head[1], thought, observation)


def _read_instance(raw: Any, k: int, where: _Where) -> ToolAlpacaInstance:
    inside = f"instance {k}"
    if not isinstance(raw, dict):
        raise where.error(f"an instance must be an object, found {type(raw).__name__}", inside)
    for key in ("input", "output", "intermediate_steps"):
        if key not in raw:
            raise where.error(f"field {key!r} is missing", inside)
    text = {}
    for key in ("input", "output"):
        value = raw[key]
        if value is not None and not isinstance(value, str):
            raise where.error(f"field {key!r} must be text, found {type(value).__name__}", inside)
        text[key] = value or ""
    steps = raw["intermediate_steps"]
    if not isinstance(steps, list):
        raise where.error(f"field 'intermediate_steps' must be a list, found {type(steps).__name__}", inside)
    final = _optional_text(raw, "Final Thought", where, inside)
    parsed = tuple(_read_step(s, where, f"{inside}, step {j}") for j, s in enumerate(steps))
    return ToolAlpacaInstance(k, text["input"], text["output"], final, parsed)


def _read_golden(raw: Any, k: int, where: _Where) -> tuple[GoldStep, ...] | None:
    if raw is None:
        return None
    inside = f"golden answer {k}"
    if not isinstance(raw, list):
        raise where.error(f"a golden answer must be a list of steps, found {type(raw).__name__}", inside)
    steps = []
    for j, st in enumerate(raw):
        at = f"{inside}, step {j}"
        if not isinstance(st, dict):
            raise where.error(
                f"a golden step must be an object with Action and Action_Input, found {type(st).__name__}", at
            )
        for key in ("Action", "Action_Input"):
            if key not in st:
                raise where.error(f"field {key!r} is missing", at)
        if not isinstance(st["Action"], str) or not st["Action"].strip():
            raise where.error("field 'Action' must be a non-empty function name", at)
        steps.append(GoldStep(st["Action"].strip(), st["Action_Input"]))
    return tuple(steps)


def _read_entry(raw: Any, i: int, path: Path) -> tuple[ToolAlpacaEntry, Kind]:
    where = _Where(path, i)
    if not isinstance(raw, dict):
        raise where.error(f"an API entry must be an object, found {type(raw).__name__}")
    name = raw.get("Name")
    if not isinstance(name, str) or not name.strip():
        raise where.error("field 'Name' is missing or empty")
    where.name = name = name.strip()
    fd_raw = raw.get("Function_Description") or {}
    if not isinstance(fd_raw, dict):
        raise where.error(f"field 'Function_Description' must be an object, found {type(fd_raw).__name__}")
    descriptions: dict[str, str] = {}
    for fn, text in fd_raw.items():
        if fn == "components":
            continue
        if not isinstance(text, str):
            raise where.error(
                f"the description of function {fn!r} must be text, found {type(text).__name__}", "Function_Description"
            )
        descriptions[fn] = text
    common = {
        "index": i,
        "name": name,
        "description": _optional_text(raw, "Description", where),
        "category": _optional_text(raw, "Category", where),
        "introduction": _optional_text(raw, "Introduction", where),
        "functions": raw.get("Functions"),
        "documentation": _documentation(raw.get("Documentation")),
        "nl_documentation": _optional_text(raw, "NLDocumentation", where),
        "function_descriptions": descriptions,
        "components": fd_raw.get("components"),
    }
    instances = raw.get("Instances", [])
    if not isinstance(instances, list):
        raise where.error(f"field 'Instances' must be a list, found {type(instances).__name__}")
    read = tuple(_read_instance(x, k, where) for k, x in enumerate(instances))
    # Golden answers make an evaluation entry even with Instances beside them (its solution records).
    if "Instances" in raw and "Golden_Answers" not in raw:
        entry = ToolAlpacaEntry(**common, instances=read)
        kind: Kind = "train"
    elif "Instructions" in raw:
        requests = raw["Instructions"]
        if not isinstance(requests, list):
            raise where.error(f"field 'Instructions' must be a list, found {type(requests).__name__}")
        golden = raw.get("Golden_Answers")
        if golden is None:
            golden = []
        if not isinstance(golden, list):
            raise where.error(f"field 'Golden_Answers' must be a list, found {type(golden).__name__}")
        if len(golden) > len(requests):
            raise where.error(f"field 'Golden_Answers' has {len(golden)} answers for {len(requests)} instructions")
        items = []
        for k, text in enumerate(requests):
            if text is not None and not isinstance(text, str):
                raise where.error(f"an instruction must be text, found {type(text).__name__}", f"instruction {k}")
            answer = _read_golden(golden[k], k, where) if k < len(golden) else None
            items.append(ToolAlpacaInstruction(k, text or "", answer))
        entry = ToolAlpacaEntry(**common, instances=read, instructions=tuple(items))
        kind = "eval"
    else:
        raise where.error("needs 'Instances' (a training file) or 'Instructions' (an evaluation file)")
    if not entry.function_names:
        raise where.error(
            "declares no function: give 'Function_Description' or OpenAPI 'Documentation' with operationIds"
        )
    return entry, kind


def read_toolalpaca(path: str | Path) -> ToolAlpacaFile:
    """Read a ToolAlpaca training or evaluation file.

    Args:
        path: a JSON file holding a list of API entries.

    Returns:
        The typed file; its ``kind`` is ``"eval"`` when the entries carry
        ``Golden_Answers``, or ``Instructions`` without ``Instances``, and
        ``"train"`` when they carry ``Instances`` (without ``Golden_Answers``).

    Raises:
        DataError: unreadable or invalid JSON, not a list, a required field
            missing or of the wrong type, entries of both kinds, a repeated API name.
    """
    path = Path(path)
    data = load_json(path)
    if not isinstance(data, list):
        raise DataError(f"a ToolAlpaca file must be a JSON list of API entries, found {type(data).__name__}", path)
    if not data:
        raise DataError("the file holds no API entry", path)
    entries: list[ToolAlpacaEntry] = []
    kinds: list[Kind] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(data):
        entry, kind = _read_entry(raw, i, path)
        if kinds and kind != kinds[0]:
            first = "Instances" if kinds[0] == "train" else "Instructions"
            raise _Where(path, i, entry.name).error(
                f"has no {first!r} like entry 0: a file is all training or all evaluation"
            )
        if entry.name in seen:
            raise _Where(path, i, entry.name).error(f"the API name repeats entry {seen[entry.name]}")
        seen[entry.name] = i
        entries.append(entry)
        kinds.append(kind)
    return ToolAlpacaFile(path, kinds[0], tuple(entries))


# --- schemas ----------------------------------------------------------------------------------------


def _type_name(word: Any) -> str:
    text = str(word or "").strip().lower()
    return _TYPES.get(text.split("[", 1)[0], "str")


def _param_from_text(value: Any) -> Param:
    """A parameter from its description: ``"Required. string. The id."`` or ``{"type", "description", "required"}``."""
    if isinstance(value, dict):
        required = value.get("required")
        return Param(_type_name(value.get("type")), str(value.get("description", "")).strip(), bool(required))
    match = _PARAM_TEXT.match(str(value))
    if match is None:  # the pattern accepts any text; kept for the type checker
        return Param("str", str(value).strip(), False)
    required, type_word, rest = match.groups()
    return Param(_type_name(type_word), rest.strip(), (required or "").lower() == "required")


def _split_description(text: str) -> tuple[str, dict[str, Param] | None, str]:
    """(description, input parameters, output text) of a ``Function_Description`` text.

    The text is the description, then ``Parameters: {JSON object}``, then
    ``Output: ...`` (whose `` - Format``/`` - Structure`` lines are left out).
    The parameters are None when the text has none that can be read.
    """
    marker = re.search(r"(?:^|\n)\s*Parameters:\s*", text)
    output_at = re.search(r"(?:^|\n)\s*Output:\s*", text)
    if marker is None:
        if output_at is None:
            return text.strip(), None, ""
        return text[: output_at.start()].strip(), None, text[output_at.end() :].split("\n - ", 1)[0].strip()
    head, rest = text[: marker.start()], text[marker.end() :]
    body, output = rest, ""
    output_at = re.search(r"\n\s*Output:\s*", rest)
    if output_at is not None:
        body, output = rest[: output_at.start()], rest[output_at.end() :].split("\n - ", 1)[0].strip()
    body = body.strip()
    params: dict[str, Param] | None = None
    if body.lower() in ("", "none", "{}", "null"):
        params = {}
    else:
        try:
            raw = json.loads(body)
        except json.JSONDecodeError:
            raw = None
        if isinstance(raw, dict):
            params = {str(k): _param_from_text(v) for k, v in raw.items()}
    return head.strip(), params, output


def _openapi_operations(doc: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """operationId -> operation (with the path's shared parameters merged), in document order."""
    ops: dict[str, dict[str, Any]] = {}
    paths = doc.get("paths") if isinstance(doc, dict) else None
    if not isinstance(paths, dict):
        return ops
    for item in paths.values():
        if not isinstance(item, dict):
            continue
        shared = item.get("parameters") if isinstance(item.get("parameters"), list) else []
        for method in _HTTP_METHODS:
            op = item.get(method)
            if isinstance(op, dict) and isinstance(op.get("operationId"), str) and op["operationId"] not in ops:
                own = op.get("parameters") if isinstance(op.get("parameters"), list) else []
                ops[op["operationId"]] = {**op, "parameters": [*shared, *own]}
    return ops


def _resolve(doc: dict[str, Any], node: Any, depth: int = 0) -> Any:
    """Follow a local ``$ref`` (``#/components/...``) a few levels deep; anything else is returned as is."""
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < 8:
        target: Any = doc
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        node, depth = target, depth + 1
    return node


def _openapi_params(doc: dict[str, Any] | None, function: str) -> tuple[str, dict[str, Param] | None]:
    """(summary, input parameters) of an operation; parameters None when the operation is not documented."""
    op = _openapi_operations(doc).get(function)
    if op is None or doc is None:
        return "", None
    params: dict[str, Param] = {}
    for p in op["parameters"]:
        p = _resolve(doc, p)
        if isinstance(p, dict) and isinstance(p.get("name"), str):
            schema = _resolve(doc, p.get("schema")) or {}
            kind = schema.get("type") if isinstance(schema, dict) else None
            params[p["name"]] = Param(_type_name(kind), str(p.get("description", "")).strip(), bool(p.get("required")))
    body = _resolve(doc, op.get("requestBody"))
    content = body.get("content") if isinstance(body, dict) else None
    if isinstance(content, dict) and content:
        media = content.get("application/json") or next(iter(content.values()))
        schema = _resolve(doc, media.get("schema")) if isinstance(media, dict) else None
        if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
            needed = set(schema.get("required") or ())
            for name, prop in schema["properties"].items():
                prop = _resolve(doc, prop) or {}
                kind = prop.get("type") if isinstance(prop, dict) else None
                text = str(prop.get("description", "")).strip() if isinstance(prop, dict) else ""
                params[str(name)] = Param(_type_name(kind), text, name in needed)
    summary = str(op.get("summary") or op.get("description") or "").strip()
    return summary, params


def _inferred_params(calls: list[dict[str, Any]]) -> dict[str, Param]:
    """Parameters seen in the converted calls, for a function documented nowhere (optional, typed by value)."""
    found: dict[str, Param] = {}
    for args in calls:
        for key, value in args.items():
            if key not in found:
                kind = {bool: "bool", int: "int", float: "float", list: "list", dict: "dict"}.get(type(value), "str")
                found[key] = Param(kind, "Not documented; seen in the example calls.", False)
    return found


def _schema(entry: ToolAlpacaEntry, function: str, calls: list[dict[str, Any]]) -> ToolSchema:
    description, params, output = _split_description(entry.function_descriptions.get(function, ""))
    summary, documented = _openapi_params(entry.documentation, function)
    if params is None:
        params = documented
    if params is None:
        params = _inferred_params(calls)
    outputs = {"output": Param("json", output)} if output else {}
    return ToolSchema(function, description or summary, params, outputs)


@dataclass(frozen=True)
class ApiGroup:
    """One converted API entry: its texts and the schemas of its functions, in declaration order."""

    name: str
    description: str
    category: str
    functions: tuple[ToolSchema, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape written to ``apis.json``."""
        return {
            "name": self.name,
            "description": self.description,
            "category": self.category,
            "functions": [s.to_dict() for s in self.functions],
        }


# --- conversion ---------------------------------------------------------------------------------------


@dataclass
class ConversionResult:
    """What a conversion made, and what it left out and why.

    Attributes:
        kind: ``"train"`` or ``"eval"``.
        source: the file converted.
        apis: the converted API entries (those with at least one converted unit).
        dialogues: training: one per converted instance; evaluation: the request
            and the gold steps of each converted instruction (references kept; outputs
            only from solution records that line up).
        samples: evaluation only: one API-call sample per gold step.
        origins: dialogue id -> the API entry it came from.
        read, converted: per unit (``apis``, ``instances`` or ``instructions``, ``steps``), how many.
        dropped: per unit, reason -> how many.
        references: step references in the converted steps, per :data:`REFERENCE_COUNTS` key.
    """

    kind: Kind
    source: Path
    apis: list[ApiGroup] = field(default_factory=list)
    dialogues: list[Dialogue] = field(default_factory=list)
    samples: list[ApiCallSample] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)
    read: Counter[str] = field(default_factory=Counter)
    converted: Counter[str] = field(default_factory=Counter)
    dropped: dict[str, Counter[str]] = field(default_factory=dict)
    references: Counter[str] = field(default_factory=Counter)

    @property
    def reasons(self) -> dict[str, tuple[str, ...]]:
        """Per unit, the drop reasons in report order."""
        return TRAIN_REASONS if self.kind == "train" else EVAL_REASONS

    @property
    def schemas(self) -> list[ToolSchema]:
        """Every converted function's schema, API by API."""
        return [s for group in self.apis for s in group.functions]

    def counts(self) -> dict[str, Any]:
        """Read, converted and dropped (every reason, zeros included) per unit, plus what was written.

        Every unit satisfies ``read == converted + sum(dropped.values())``. ``references`` counts the
        step references of the converted steps (:data:`REFERENCE_COUNTS`).
        """
        out: dict[str, Any] = {"kind": self.kind, "source": self.source.name}
        for unit, reasons in self.reasons.items():
            lost = self.dropped.get(unit, Counter())
            out[unit] = {
                "read": self.read[unit],
                "converted": self.converted[unit],
                "dropped": {r: lost[r] for r in reasons},
            }
        out["references"] = {key: self.references[key] for key in REFERENCE_COUNTS}
        out["functions"] = len(self.schemas)
        out["dialogues"] = len(self.dialogues)
        if self.kind == "eval":
            out["samples"] = len(self.samples)
        return out

    def rows(self) -> list[tuple[str, str, int]]:
        """The report as ``(unit, measure, count)`` rows: read, converted, then ``dropped: <reason>``; then the
        ``references`` rows (:data:`REFERENCE_COUNTS`)."""
        rows: list[tuple[str, str, int]] = []
        counts = self.counts()
        for unit in self.reasons:
            c = counts[unit]
            rows += [(unit, "read", c["read"]), (unit, "converted", c["converted"])]
            rows += [(unit, f"dropped: {r}", n) for r, n in c["dropped"].items()]
        rows += [("references", measure, counts["references"][key]) for key, measure in REFERENCE_COUNTS.items()]
        return rows

    def report(self) -> Any:
        """The report as a pandas DataFrame with the columns ``unit``, ``measure`` and ``count``."""
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=["unit", "measure", "count"])

    def _drop(self, unit: str, reason: str, n: int = 1) -> None:
        self.dropped.setdefault(unit, Counter())[reason] += n


def _parse_observation(raw: Any) -> tuple[Any, str | None]:
    """(output, exception) of an observation: JSON when it is JSON, the HTTP status prefix handled."""
    if not isinstance(raw, str):
        return raw, None
    exception = None
    text = raw
    status = _STATUS.match(raw)
    if status is not None:
        code, text = int(status.group(1)), status.group(2)
        exception = f"status code {code}" if code >= 400 else None
    try:
        return json.loads(text), exception
    except json.JSONDecodeError:
        return text.strip() if status is not None else raw, exception


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_") or "api"


OPTIONAL_MARK = "[Optional]"
"""How ToolAlpaca's golden answers mark a step a solution may skip (``[Optional]updateUserProfile``)."""


def _action_name(action: str) -> str:
    """A golden step's action without ToolAlpaca's optional mark: the step is kept as gold, as the call it names."""
    return action.removeprefix(OPTIONAL_MARK).strip() if action.startswith(OPTIONAL_MARK) else action


def _classify(action: str, raw_input: Any, functions: tuple[str, ...]) -> tuple[str | None, dict[str, Any] | None]:
    """(drop reason or None, parsed arguments) of one step."""
    if action in DOCUMENTATION_ACTIONS:
        return DOCUMENTATION_STEP, None
    if action not in functions:
        return UNKNOWN_FUNCTION, None
    args = parse_action_input(raw_input)
    if args is None:
        return UNPARSABLE_INPUT, None
    return None, args


def _record(name: str, args: dict[str, Any], output: Any, exception: str | None) -> ApiRecord:
    return ApiRecord(name, args, {"api_name": name, "input": dict(args), "output": output, "exception": exception})


def _count_references(counts: Counter[str], args: dict[str, Any], records: Sequence[ApiRecord]) -> None:
    """Add one converted step's references (resolved, ``records`` its earlier steps) to ``counts``."""
    refs = references_in(args)
    if refs:
        counts["steps"] += 1
        counts["total"] += len(refs)
        counts["unresolved"] += sum(not r.resolved for r in refs)
        counts["with_value"] += sum(step_value(r, records)[0] for r in refs)


def _observations(entry: ToolAlpacaEntry, item: ToolAlpacaInstruction) -> list[Any] | None:
    """The observations of the solution record that lines up with an instruction, one per gold step that is
    not a documentation look-up; None when no record lines up (same index, same actions in the same order)."""
    if item.golden is None or item.index >= len(entry.instances):
        return None
    steps = [s for s in entry.instances[item.index].steps if s.action not in DOCUMENTATION_ACTIONS]
    wanted = [_action_name(s.action) for s in item.golden if s.action not in DOCUMENTATION_ACTIONS]
    if [s.action for s in steps] != wanted:
        return None
    return [s.observation for s in steps]


def _groups(entry: ToolAlpacaEntry, calls: dict[str, list[dict[str, Any]]]) -> ApiGroup:
    functions = tuple(_schema(entry, fn, calls.get(fn, [])) for fn in entry.function_names)
    return ApiGroup(entry.name, entry.description, entry.category, functions)


def convert_training(file: ToolAlpacaFile) -> ConversionResult:
    """Convert a training file into level-1 dialogues and function schemas.

    Each usable instance becomes the dialogue ``<API>-<instance index>``: the
    request (User), one :class:`ApiRecord` per usable step and the final answer
    (AI). Steps are dropped one by one (documentation look-ups, unknown
    functions, inputs that are not a JSON object); an instance is dropped when
    its request or answer is empty or no step is left. A step reference becomes
    the referred step's value when its observation holds it, else its
    placeholder text (see the module docstring).

    Raises:
        ConfigError: the file is an evaluation file.
    """
    if file.kind != "train":
        raise ConfigError(f"{file.path} is an evaluation file (it has Instructions); use convert_evaluation")
    result = ConversionResult("train", file.path)
    for entry in file.entries:
        slug = _slug(entry.name)
        functions = entry.function_names
        calls: dict[str, list[dict[str, Any]]] = {}
        made = 0
        for inst in entry.instances:
            records: list[ApiRecord] = []
            earlier: list[tuple[str, int | None]] = []  # per written step: its action, its index in records
            references: Counter[str] = Counter()
            step_reasons: list[str] = []
            for step in inst.steps:
                reason, args = _classify(step.action, step.action_input, functions)
                if reason is not None or args is None:
                    step_reasons.append(reason or UNPARSABLE_INPUT)
                    earlier.append((step.action, None))
                    continue
                args = resolve_references(args, earlier)
                _count_references(references, args, records)
                output, exception = _parse_observation(step.observation)
                earlier.append((step.action, len(records)))
                records.append(_record(step.action, materialise(args, records), output, exception))
            usable = len(records)
            result.read["steps"] += len(inst.steps)
            for r in step_reasons:
                result._drop("steps", r)
            result.read["instances"] += 1
            why = (
                EMPTY_INPUT
                if not inst.input.strip()
                else EMPTY_OUTPUT
                if not inst.output.strip()
                else NO_USABLE_STEP
                if not usable
                else None
            )
            if why is not None:
                result._drop("instances", why)
                result._drop("steps", INSTANCE_DROPPED, usable)
                continue
            turns: list[Turn] = [Utterance("User", inst.input.strip()), *records, Utterance("AI", inst.output.strip())]
            dialogue = Dialogue(f"{slug}-{inst.index}", 1, turns, str(file.path))
            for rec in dialogue.api_turns:
                calls.setdefault(rec.api_name, []).append(rec.args)
            result.dialogues.append(dialogue)
            result.origins[dialogue.id] = entry.name
            result.converted["instances"] += 1
            result.converted["steps"] += usable
            result.references.update(references)
            made += 1
        result.read["apis"] += 1
        if made:
            result.converted["apis"] += 1
            result.apis.append(_groups(entry, calls))
        else:
            result._drop("apis", NO_CONVERTED_INSTANCE)
    return result


def convert_evaluation(file: ToolAlpacaFile) -> ConversionResult:
    """Convert an evaluation file into level-1 API-call samples judged by name and arguments.

    Each usable instruction of an entry gives one sample per gold step: the
    history is the request and the earlier gold steps (as :class:`ApiRecord`,
    with no output unless a solution record lines up, and step references
    shown as their value or placeholder text), the gold the step itself (its
    references kept as :class:`StepReference`), the APIs shown that entry's
    functions. The sample's dialogue id is ``<API>-<instruction index>``.
    Documentation look-ups among the gold steps are skipped; an instruction is
    dropped when it is empty, has no golden answer, has a step that cannot be
    used (unparsable input, unknown function) or no step left.

    Raises:
        ConfigError: the file is a training file.
    """
    if file.kind != "eval":
        raise ConfigError(f"{file.path} is a training file (it has Instances); use convert_training")
    result = ConversionResult("eval", file.path)
    for entry in file.entries:
        slug = _slug(entry.name)
        functions = entry.function_names
        calls: dict[str, list[dict[str, Any]]] = {}
        made = 0
        for item in entry.instructions:
            golden = item.golden or ()
            observations = _observations(entry, item)
            records: list[ApiRecord] = []  # the gold steps, references kept
            shown: list[ApiRecord] = []  # the same steps as a later sample's history shows them
            earlier: list[tuple[str, int | None]] = []  # per written step: its action, its index in records
            references: Counter[str] = Counter()
            fatal: str | None = None
            result.read["instructions"] += 1
            result.read["steps"] += len(golden)
            for step in golden:
                action = _action_name(step.action)
                reason, args = _classify(action, step.action_input, functions)
                if reason is not None or args is None:
                    result._drop("steps", reason or UNPARSABLE_INPUT)
                    if reason != DOCUMENTATION_STEP:
                        fatal = fatal or reason or UNPARSABLE_INPUT
                    earlier.append((action, None))
                    continue
                args = resolve_references(args, earlier)
                _count_references(references, args, records)
                output, exception = (
                    _parse_observation(observations[len(records)]) if observations is not None else (None, None)
                )
                earlier.append((action, len(records)))
                shown.append(_record(action, materialise(args, records), output, exception))
                records.append(_record(action, args, output, exception))
            why = (
                EMPTY_INSTRUCTION
                if not item.instruction.strip()
                else NO_GOLDEN_ANSWER
                if not golden
                else fatal
                if fatal
                else NO_USABLE_STEP
                if not records
                else None
            )
            if why is not None:
                result._drop("instructions", why)
                result._drop("steps", INSTRUCTION_DROPPED, len(records))
                continue
            request = Utterance("User", item.instruction.strip())
            dialogue = Dialogue(f"{slug}-{item.index}", 1, [request, *records], str(file.path))
            for j, rec in enumerate(records):
                history = (request, *shown[:j])
                result.samples.append(ApiCallSample(1, dialogue.id, j, history, functions, rec))
                calls.setdefault(rec.api_name, []).append(shown[j].args)
            result.dialogues.append(dialogue)
            result.origins[dialogue.id] = entry.name
            result.converted["instructions"] += 1
            result.converted["steps"] += len(records)
            result.references.update(references)
            made += 1
        result.read["apis"] += 1
        if made:
            result.converted["apis"] += 1
            result.apis.append(_groups(entry, calls))
        else:
            result._drop("apis", NO_CONVERTED_INSTRUCTION)
    return result


def convert(file: ToolAlpacaFile) -> ConversionResult:
    """Convert a file of either kind (:func:`convert_training` or :func:`convert_evaluation`)."""
    return convert_training(file) if file.kind == "train" else convert_evaluation(file)


# --- writing ----------------------------------------------------------------------------------------


def _turn_json(turn: Turn) -> dict[str, Any]:
    return to_jsonable(turn_record(turn))


def _jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def write_converted(result: ConversionResult, out_dir: str | Path) -> list[Path]:
    """Write a conversion into ``out_dir`` (created if needed); returns the files written.

    * ``dialogues.jsonl``: one dialogue a line, ``{"id", "level", "api", "turns"}``,
      turns as official records (:func:`~apibank_lib.data.formats.official.turn_record`).
    * ``apis.json``: a list of ``{"name", "description", "category", "functions"}``,
      each function a :meth:`ToolSchema.to_dict`.
    * ``samples.jsonl`` (evaluation only; a stale one is removed for training):
      ``{"key", "dialogue_id", "sample_id", "level", "api", "api_names", "history", "gold"}``.
    * ``report.json``: :meth:`ConversionResult.counts`.

    A step reference is written ``{"$ref": {"field", "step", "template", "index"}}``
    (:meth:`StepReference.to_json`). Order follows the source file; arguments and results keep their written key
    order; the report's keys are sorted. The same input always gives the same bytes.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DataError("the output folder is a file", out)
    out.mkdir(parents=True, exist_ok=True)
    dialogues = [
        {"id": d.id, "level": d.level, "api": result.origins[d.id], "turns": [_turn_json(t) for t in d.turns]}
        for d in result.dialogues
    ]
    written = {
        "dialogues.jsonl": _jsonl(dialogues),
        "apis.json": json.dumps([g.to_dict() for g in result.apis], indent=1, ensure_ascii=False) + "\n",
        "report.json": json.dumps(result.counts(), indent=1, sort_keys=True, ensure_ascii=False) + "\n",
    }
    if result.kind == "eval":
        samples = [
            {
                "key": s.key,
                "dialogue_id": s.dialogue_id,
                "sample_id": s.sample_id,
                "level": s.level,
                "api": result.origins[s.dialogue_id],
                "api_names": list(s.api_names),
                "history": [_turn_json(t) for t in s.history],
                "gold": _turn_json(s.gold),
            }
            for s in result.samples
        ]
        written["samples.jsonl"] = _jsonl(samples)
    else:
        (out / "samples.jsonl").unlink(missing_ok=True)
    paths = []
    for name, text in written.items():
        (out / name).write_text(text, encoding="utf-8")
        paths.append(out / name)
    return paths
