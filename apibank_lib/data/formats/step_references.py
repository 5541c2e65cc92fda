"""ToolAlpaca's step references: an argument taken from an earlier step's result, read, resolved, valued and judged.

ToolAlpaca writes an argument taken from an earlier step's result as a
placeholder, ``${FIELD from STEP}``. :func:`parse_action_input`
reads these forms, nothing is ever evaluated:

* bare, where a JSON value goes: ``{"animeId": ${animeId from searchAnime}}``
  (replaced by a token string before :func:`json.loads`, mapped back after);
* quoted, the whole string: ``{"id": "${id from getUser}"}``;
* embedded in a longer string: ``{"url": "https://x/${slug from listItems}"}``;
* with any spacing inside the braces (``${ id  from  getUser }``), STEP as an
  action name or a step number (``${id from step 1}``), or dotted as
  ``${STEP.FIELD}`` (``${step1.id}``, ``${getUser.id}``).

Each becomes a :class:`StepReference` (an embedded one with its string as a
template). ToolAlpaca's own files also hold three looser forms, read too:

* an *open* placeholder, bare, naming no step (``{"startDate": ${start date}}``,
  ``[${some permission}]``): a value the instruction leaves to the model, kept as a
  reference with an empty STEP, never resolved, so it is judged by name only;
* a bare reference whose closing brace is missing before the next comma
  (``${userId from authenticateUser,``);
* a stray quote right after a bare reference (``${start date}",``), dropped.

Still unparsable, and dropped as before: a dict key that is a reference, and a string holding two or more
references. A quoted ``${...}`` of no form above stays plain text.

A reference is resolved to the nearest earlier converted step of its
instance or instruction whose action is STEP; failing that, STEP read as a
step number N (``step 1``, ``step1``, ``Step_1``) names the N-th step as
written, counted from 1 with documentation look-ups included, when it is
earlier and was converted. Otherwise it is kept, unresolved
(``StepReference.index`` is None) and counted so. Its *value* is the referred
step's output (a failed call, one with an ``exception``, has none): the top-level
key FIELD, else the first key FIELD met in a depth-first walk (each object's
own keys before its children, objects and lists in written order); a null
counts as no value. An embedded reference's value is its string with that
value put in (a non-text value as JSON).

* Training (:func:`~apibank_lib.data.formats.toolalpaca.convert_training`): a reference with a value becomes that
  value in the :class:`~apibank_lib.core.types.ApiRecord`; one without (unresolved,
  or the field not found) is kept as its placeholder text
  (:attr:`StepReference.placeholder`, the canonical ``${FIELD from STEP}``,
  inside its string when embedded). No :class:`StepReference` is left in a
  training dialogue.
* Evaluation (:func:`~apibank_lib.data.formats.toolalpaca.convert_evaluation`): the gold record keeps the
  :class:`StepReference`; the earlier steps shown in a sample's history carry
  the value when there is one, else the placeholder text. Evaluation gold
  steps carry no observation, so there is a value only when the entry's
  ``Instances`` line up with the instruction: the instance at the same index
  calls the same actions in the same order (documentation look-ups left out
  on both sides); its observations then become the gold steps' outputs, shown
  in the history as a model would have seen them.
* :meth:`~apibank_lib.data.formats.toolalpaca.ConversionResult.counts` (``references``) counts, over converted
  steps, the steps with references, the references, the unresolved ones and
  those with a value (training: replaced by it; evaluation: judged by it).
* ``samples.jsonl`` and ``dialogues.jsonl`` write a reference as
  ``{"$ref": {"field", "step", "template", "index"}}``.

Judging (:func:`judge_call`; :func:`gold_matches` is its verdict): same
function, same argument names, every argument equal (scalars by their text,
objects and lists item by item). A referring gold argument is judged

* by ``"value"`` when its reference has a value in the sample's own gold
  record (the referred step's output in the history): the prediction must
  equal that value, or for an embedded reference the string with it put in;
* by ``"name only"`` otherwise: the argument must be present and non-empty
  (not null, not blank text, not an empty list or object); for an embedded
  reference, a text that starts with the template's text before the slot,
  ends with its text after it (outer spaces ignored) and has non-blank text
  between them.

The rule used is recorded per referring argument (:attr:`CallJudgment.rules`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from string import Formatter
from typing import Any

from apibank_lib.core.types import ApiCall, ApiCallSample, ApiRecord

__all__ = [
    "NAME_RULE",
    "VALUE_RULE",
    "CallJudgment",
    "StepReference",
    "display_call",
    "gold_matches",
    "judge_call",
    "materialise",
    "parse_action_input",
    "references_in",
    "resolve_references",
    "step_value",
    "to_jsonable",
]

VALUE_RULE = "value"
"""A referring argument judged against the value the referred step returned."""
NAME_RULE = "name only"
"""A referring argument judged by its presence only (no value to compare with)."""

@dataclass(frozen=True)
class StepReference:
    """An argument value taken from an earlier step's result: ToolAlpaca's ``${FIELD from STEP}``.

    Attributes:
        field: the name of the value in the referred step's result (``animeId``).
        step: the referred step as written: an action name (``searchAnime``) or a step number (``step 1``).
        template: for a reference inside a longer string, that string in :meth:`str.format` syntax,
            with one ``{}`` where the value goes and literal braces doubled (``"https://x/{}"``);
            None when the reference is the whole value.
        index: the referred step's position among the converted steps of its instruction (or
            instance), from 0; None when unresolved (no earlier converted step is the one named).
    """

    field: str
    step: str
    template: str | None = None
    index: int | None = None

    @property
    def resolved(self) -> bool:
        """True when an earlier converted step is the one named."""
        return self.index is not None

    @property
    def placeholder(self) -> str:
        """The value as text, the reference written ``${FIELD from STEP}`` (``${FIELD}`` for an open one), inside
        its template, if any."""
        return self.fill(f"${{{self.field} from {self.step}}}" if self.step else f"${{{self.field}}}")

    @property
    def open(self) -> bool:
        """An open placeholder: a value the instruction leaves to the model, from no step (module docstring)."""
        return not self.step

    def fill(self, value: Any) -> Any:
        """The argument with ``value`` in place of the reference: the value, or the template's string with it.

        A value that is not text goes into a template as JSON (``7``, ``true``).
        """
        if self.template is None:
            return value
        return self.template.format(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))

    def to_json(self) -> dict[str, Any]:
        """The JSON shape written to ``samples.jsonl`` and ``dialogues.jsonl``."""
        return {"$ref": {"field": self.field, "step": self.step, "template": self.template, "index": self.index}}

    def __str__(self) -> str:
        # Text renderings of a gold call (the paper prompt's format) show the placeholder, not the repr.
        return self.placeholder


_REFERENCE = re.compile(
    r"\$\{\s*(?:(?P<field>[^{}]*?\S)\s+from\s+(?P<step>[^{}]*?\S)"
    r"|(?P<dotted_step>[A-Za-z_][\w-]*)\.(?P<dotted_field>[^{}\s]+))\s*\}",
    re.IGNORECASE,
)
_OPEN = re.compile(r"\$\{\s*(?P<field>[^{}$\"]*?\S)\s*\}")
_UNCLOSED = re.compile(r"\$\{\s*(?P<field>[^{},\"]*?\S)\s+from\s+(?P<step>[A-Za-z_][\w-]*)\s*(?=,)", re.IGNORECASE)
_STRAY_QUOTE = re.compile(r"\"(?=\s*[,}\]])")
_STEP_NUMBER = re.compile(r"step[\s_-]*(\d+)", re.IGNORECASE)
_TOKEN = "\x00step-reference-"
"""Stands for a bare reference while the JSON is parsed. JSON text cannot hold a raw NUL, so an input string
equals a token only if it spells one with ``\\u0000``, which no hand- or model-written input does."""


class _Unreadable(Exception):
    """A placeholder that cannot be represented; the step's input then counts as unparsable."""


def _reference(match: re.Match[str], template: str | None = None) -> StepReference:
    field_name = match.group("field") or match.group("dotted_field")
    step = match.group("step") or match.group("dotted_step")
    return StepReference(field_name, step, template)


def _bare_references(text: str) -> tuple[str, dict[str, StepReference]]:
    """The JSON text with each reference outside a string replaced by a token string; token -> reference."""
    if "${" not in text:
        return text, {}
    out: list[str] = []
    found: dict[str, StepReference] = {}
    in_string = False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "\\":  # an escaped character, the quote included, never ends the string
                out.append(text[i : i + 2])
                i += 2
                continue
            in_string = ch != '"'
        elif ch == '"':
            in_string = True
        elif text.startswith("${", i):
            match = _REFERENCE.match(text, i)
            if match is not None:
                ref = _reference(match)
            elif (match := _UNCLOSED.match(text, i)) is not None:
                ref = StepReference(match.group("field"), match.group("step"))
            elif (match := _OPEN.match(text, i)) is not None:
                ref = StepReference(match.group("field"), "")
            else:
                raise _Unreadable
            token = f"{_TOKEN}{len(found)}"
            found[token] = ref
            out.append(json.dumps(token))
            i = match.end()
            stray = _STRAY_QUOTE.match(text, i)
            if stray is not None:  # ``${start date}",``: the quote closes no string
                i = stray.end()
            continue
        out.append(ch)
        i += 1
    return "".join(out), found


def _escape_braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _in_string(text: str) -> Any:
    """A string value: itself, a :class:`StepReference` when it is one, or one with a template around it."""
    matches = list(_REFERENCE.finditer(text))
    if not matches:
        return text
    if len(matches) > 1:  # a template holds one value
        raise _Unreadable
    match = matches[0]
    before, after = text[: match.start()], text[match.end() :]
    if not before.strip() and not after.strip():
        return _reference(match)
    return _reference(match, f"{_escape_braces(before)}{{}}{_escape_braces(after)}")


def _bind(value: Any, tokens: dict[str, StepReference]) -> Any:
    """The parsed value with tokens mapped back to their references and quoted references read."""
    if isinstance(value, str):
        return tokens[value] if value in tokens else _in_string(value)
    if isinstance(value, dict):
        if any(key in tokens for key in value):
            raise _Unreadable  # a name cannot come from a result
        return {key: _bind(v, tokens) for key, v in value.items()}
    if isinstance(value, list):
        return [_bind(v, tokens) for v in value]
    return value


def parse_action_input(raw: Any) -> dict[str, Any] | None:
    """The arguments of a step, with ToolAlpaca's step references made explicit (nothing is evaluated).

    Args:
        raw: the ``Action_Input`` as written: JSON text of an object (``""`` means no argument), or an object.

    Returns:
        Argument name -> value, where a value taken from an earlier step's result is an unresolved
        :class:`StepReference` (the forms read are listed in the module's docstring); None when the input
        is not a JSON object, or holds a placeholder that cannot be represented.
    """
    if isinstance(raw, dict):
        value: Any = raw
        tokens: dict[str, StepReference] = {}
    elif isinstance(raw, str):
        text = raw.strip()
        if not text:
            return {}
        try:
            text, tokens = _bare_references(text)
            value = json.loads(text)
        except (json.JSONDecodeError, _Unreadable):
            return None
    else:
        return None
    if not isinstance(value, dict):
        return None
    try:
        return _bind(value, tokens)
    except _Unreadable:
        return None


def references_in(value: Any) -> list[StepReference]:
    """The references inside a value, in written order."""
    if isinstance(value, StepReference):
        return [value]
    if isinstance(value, dict):
        return [r for v in value.values() for r in references_in(v)]
    if isinstance(value, list):
        return [r for v in value for r in references_in(v)]
    return []


def _referred_index(step: str, earlier: Sequence[tuple[str, int | None]]) -> int | None:
    """The converted step a reference names, given each earlier written step's (action, converted index)."""
    if not step:  # an open placeholder names none
        return None
    for action, index in reversed(earlier):
        if action == step and index is not None:
            return index
    number = _STEP_NUMBER.fullmatch(step.strip())
    if number is not None and 1 <= int(number.group(1)) <= len(earlier):
        return earlier[int(number.group(1)) - 1][1]
    return None


def resolve_references(value: Any, earlier: Sequence[tuple[str, int | None]]) -> Any:
    """The value with each reference's ``index`` set (None when no earlier converted step is the one named)."""
    if isinstance(value, StepReference):
        return replace(value, index=_referred_index(value.step, earlier))
    if isinstance(value, dict):
        return {k: resolve_references(v, earlier) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_references(v, earlier) for v in value]
    return value


def _find_field(node: Any, name: str) -> tuple[bool, Any]:
    """(found, value) of the first non-null key ``name``: each object's own keys before its children."""
    if isinstance(node, dict):
        if node.get(name) is not None:
            return True, node[name]
        children: Any = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return False, None
    for child in children:
        found, value = _find_field(child, name)
        if found:
            return True, value
    return False, None


def step_value(ref: StepReference, records: Sequence[ApiRecord]) -> tuple[bool, Any]:
    """(found, value) of a reference in the records of its instruction or instance (see the module docstring)."""
    if ref.index is None or ref.index >= len(records):
        return False, None
    record = records[ref.index]
    if record.result.get("exception") is not None:  # a failed call returned no value
        return False, None
    return _find_field(record.output, ref.field)


def materialise(value: Any, records: Sequence[ApiRecord]) -> Any:
    """The value with each reference replaced by its value when it has one, else by its placeholder text."""
    if isinstance(value, StepReference):
        found, found_value = step_value(value, records)
        return value.fill(found_value) if found else value.placeholder
    if isinstance(value, dict):
        return {k: materialise(v, records) for k, v in value.items()}
    if isinstance(value, list):
        return [materialise(v, records) for v in value]
    return value


def display_call(record: ApiRecord) -> ApiCall:
    """The record's call with each reference written as its placeholder text (for showing and hashing)."""
    return ApiCall(record.api_name, materialise(dict(record.args), ()))


def to_jsonable(value: Any) -> Any:
    """The value with each reference in its JSON shape (:meth:`StepReference.to_json`)."""
    if isinstance(value, StepReference):
        return value.to_json()
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


# --- judging ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallJudgment:
    """A predicted call judged against a converted evaluation sample (:func:`judge_call`).

    Attributes:
        correct: same function, same arguments (referring ones by their rule).
        rules: per referring gold argument, in gold order, the rule it is judged by:
            :data:`VALUE_RULE` or :data:`NAME_RULE`. Keys are argument paths: ``bookId``,
            ``filter.id`` inside an object, ``ids[0]`` inside a list. Empty when no argument refers.
    """

    correct: bool
    rules: dict[str, str] = field(default_factory=dict)


def _template_parts(template: str) -> tuple[str, str]:
    """The literal text before and after a template's slot."""
    before: list[str] = []
    after: list[str] = []
    slot_seen = False
    for literal, name, _spec, _conversion in Formatter().parse(template):
        (after if slot_seen else before).append(literal)
        slot_seen = slot_seen or name is not None
    return "".join(before), "".join(after)


def _named(predicted: Any, ref: StepReference) -> bool:
    """The name-only rule (see the module docstring); the argument's presence is checked by the caller."""
    if ref.template is None:
        if isinstance(predicted, str):
            return bool(predicted.strip())
        if isinstance(predicted, (list, dict)):
            return bool(predicted)
        return predicted is not None
    if predicted is None or isinstance(predicted, (list, dict)):
        return False
    text = str(predicted).strip()
    before, after = _template_parts(ref.template)
    before, after = before.lstrip(), after.rstrip()
    # When the two parts overlap in the text, the slice is empty: nothing stands in the slot.
    middle = text[len(before) : len(text) - len(after)]
    return text.startswith(before) and text.endswith(after) and bool(middle.strip())


def _same_value(predicted: Any, gold: Any, records: Sequence[ApiRecord]) -> bool:
    if isinstance(gold, StepReference):
        found, value = step_value(gold, records)
        return _same_value(predicted, gold.fill(value), records) if found else _named(predicted, gold)
    if isinstance(predicted, dict) and isinstance(gold, dict):
        return predicted.keys() == gold.keys() and all(_same_value(predicted[k], gold[k], records) for k in gold)
    if isinstance(predicted, list) and isinstance(gold, list):
        return len(predicted) == len(gold) and all(_same_value(x, y, records) for x, y in zip(predicted, gold))
    if isinstance(predicted, (dict, list)) or isinstance(gold, (dict, list)):
        return False
    return str(predicted).strip() == str(gold).strip()


def _reference_rules(value: Any, records: Sequence[ApiRecord], path: str, rules: dict[str, str]) -> None:
    if isinstance(value, StepReference):
        rules[path] = VALUE_RULE if step_value(value, records)[0] else NAME_RULE
    elif isinstance(value, dict):
        for key, v in value.items():
            _reference_rules(v, records, f"{path}.{key}" if path else str(key), rules)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _reference_rules(v, records, f"{path}[{i}]", rules)


def judge_call(sample: ApiCallSample, call: ApiCall | None) -> CallJudgment:
    """Judge a predicted call against a converted evaluation sample: same function, same arguments.

    Scalars compare by their text (``5`` equals ``"5"``, surrounding spaces
    ignored); objects and lists compare item by item; argument order is ignored.
    A referring gold argument (:class:`StepReference`) is judged by value when
    the referred step's output in the sample's history holds it, else by name
    only (the rules are in the module docstring).

    Args:
        sample: a sample of :func:`~apibank_lib.data.formats.toolalpaca.convert_evaluation`.
        call: the predicted call; None when none was read (never correct; the rules are still given).

    Returns:
        The verdict and, per referring argument, the rule used.
    """
    records = [t for t in sample.history if isinstance(t, ApiRecord)]
    gold = dict(sample.gold.args)
    rules: dict[str, str] = {}
    _reference_rules(gold, records, "", rules)
    correct = call is not None and call.name == sample.gold.api_name and _same_value(dict(call.args), gold, records)
    return CallJudgment(correct, rules)


def gold_matches(sample: ApiCallSample, call: ApiCall) -> bool:
    """Whether a predicted call is correct for a converted evaluation sample (:func:`judge_call`'s verdict)."""
    return judge_call(sample, call).correct
