"""Our training-corpus format: one YAML file per domain with its APIs and dialogues.

A file holds ``domain``, ``apis`` (name, description, typed input and output
parameters, ``required: false`` for optional inputs) and ``dialogues`` of three
abilities (``docs/training_corpus_brief.md`` is the writers' brief):

* ``call``: ``turns`` of ``user:``, ``ai:`` and ``api: Name(k='v')`` with an
  ``output:`` (the simulated result); cut into samples like a level-1 dialogue.
* ``retrieve_call``: the same, with ``ToolSearcher(keywords='...')`` turns
  before each API's first call; their output is filled in here (the description
  of the API called next), as the evaluation's level-2 dialogues show it.
* ``plan_retrieve_call``: a ``requirement``, ``steps`` (searches and calls) and
  a ``response``, like a level-3 item.

Reading is lenient about nothing: :func:`read_corpus_file` raises
:class:`~apibank_lib.core.errors.DataError` naming the file and place for a shape it
cannot read at all (not YAML, no ``apis`` list), and keeps everything else as
:class:`CorpusDialogue` records for the tester (:mod:`apibank_lib.data.check_train`)
to judge. Converting accepted records to the evaluation types
(:func:`to_dialogue`, :func:`to_level3_item`) lets training export reuse the
evaluation's sample cutting, prompts and targets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from apibank_lib.core.calls import parse_calls
from apibank_lib.core.errors import DataError, ParseError
from apibank_lib.core.paths import PROJECT_ROOT
from apibank_lib.core.types import ApiCall, ApiRecord, Dialogue, Level3Item, Param, ToolSchema, Utterance
from apibank_lib.core.yamlfile import read_yaml

__all__ = [
    "corpus_schemas",
    "ABILITIES",
    "ABILITY_LEVEL",
    "SEARCHER",
    "CorpusTurn",
    "CorpusDialogue",
    "CorpusFile",
    "read_corpus_file",
    "parse_dialogue",
    "corpus_files",
    "default_corpus_dir",
    "to_dialogue",
    "to_level3_item",
    "searcher_output",
]

Ability = Literal["call", "retrieve_call", "plan_retrieve_call"]
ABILITIES: tuple[str, ...] = ("call", "retrieve_call", "plan_retrieve_call")
ABILITY_LEVEL = {"call": 1, "retrieve_call": 2, "plan_retrieve_call": 3}
"""The evaluation level whose samples an ability's dialogues resemble."""
SEARCHER = "ToolSearcher"


@dataclass
class CorpusTurn:
    """One turn as written: ``role`` is ``user``, ``ai`` or ``api``.

    ``call`` is the parsed call of an API turn (None when it did not parse, with
    ``problem`` saying why); ``output`` the written result (``has_output`` tells
    an absent output from a null one); ``retrieves`` a search's explicit list of
    retrieved APIs, if written.
    """

    role: str
    text: str
    call: ApiCall | None = None
    output: Any = None
    has_output: bool = False
    retrieves: list[str] | None = None
    problem: str | None = None


@dataclass
class CorpusDialogue:
    """One dialogue (or plan) of a corpus file, not yet judged."""

    id: str
    ability: str
    domain: str
    path: str
    index: int
    turns: list[CorpusTurn] = field(default_factory=list)
    requirement: str | None = None
    response: str | None = None
    problem: str | None = None

    @property
    def where(self) -> str:
        """``file: dialogue #n (id)`` for messages."""
        return f"{self.path}: dialogue #{self.index + 1} ({self.id})"

    @property
    def api_turns(self) -> list[CorpusTurn]:
        """The API turns (steps of a plan), in order."""
        return [t for t in self.turns if t.role == "api"]


@dataclass
class CorpusFile:
    """A read corpus file: its domain, APIs and dialogues.

    ``api_problems`` lists APIs that could not be read (name -> reason); they are
    left out of ``schemas``.
    """

    path: str
    domain: str
    schemas: dict[str, ToolSchema]
    dialogues: list[CorpusDialogue]
    api_problems: dict[str, str] = field(default_factory=dict)


def _params(raw: Any, where: str, *, inputs: bool) -> dict[str, Param]:
    if raw in (None, {}):
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be a mapping of name -> {{type, description}}")
    out: dict[str, Param] = {}
    for name, spec in raw.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("type"), str) or not isinstance(spec.get("description"), str):
            raise ValueError(f"{where}.{name} needs a type and a description")
        required = spec.get("required", True)
        if not isinstance(required, bool):
            raise ValueError(f"{where}.{name}: required must be true or false")
        out[str(name)] = Param(spec["type"], spec["description"], required if inputs else True)
    return out


def _schema(raw: Any, index: int) -> ToolSchema:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not isinstance(raw.get("description"), str):
        raise ValueError(f"API #{index + 1} needs a name and a description")
    name = raw["name"]
    return ToolSchema(
        name,
        raw["description"],
        _params(raw.get("input_parameters"), f"{name}.input_parameters", inputs=True),
        _params(raw.get("output_parameters"), f"{name}.output_parameters", inputs=False),
    )


def _api_turn(raw: dict[str, Any]) -> CorpusTurn:
    text = raw.get("api")
    if not isinstance(text, str) or not text.strip():
        return CorpusTurn("api", str(text), problem="an api turn needs a call text")
    extra = set(raw) - {"api", "output", "retrieves"}
    turn = CorpusTurn("api", text.strip(), output=raw.get("output"), has_output="output" in raw)
    if extra:
        turn.problem = f"unknown keys beside api: {sorted(extra)}"
    retrieves = raw.get("retrieves")
    if retrieves is not None:
        if isinstance(retrieves, list) and all(isinstance(r, str) for r in retrieves):
            turn.retrieves = list(retrieves)
        else:
            turn.problem = "retrieves must be a list of API names"
    call_text = turn.text if turn.text.startswith("[") else f"[{turn.text}]"
    try:
        calls = parse_calls(call_text)
    except ParseError as exc:
        turn.problem = turn.problem or f"call does not parse: {exc}"
        return turn
    if len(calls) != 1:
        turn.problem = turn.problem or f"expected exactly one call, found {len(calls)}"
    else:
        turn.call = calls[0]
    return turn


def _turn(raw: Any) -> CorpusTurn:
    if isinstance(raw, dict) and "api" in raw:
        return _api_turn(raw)
    if isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) in ("user", "ai"):
        role, text = next(iter(raw.items()))
        if not isinstance(text, str) or not text.strip():
            return CorpusTurn(role, str(text), problem=f"the {role} turn is empty")
        return CorpusTurn(role, text.strip())
    return CorpusTurn("?", repr(raw)[:60], problem="write exactly one of user:, ai:, or api: (with output:)")


def _dialogue(raw: Any, index: int, domain: str, path: str) -> CorpusDialogue:
    if not isinstance(raw, dict):
        return CorpusDialogue(f"#{index + 1}", "?", domain, path, index, problem="a dialogue must be a mapping")
    did = str(raw.get("id") or f"#{index + 1}")
    ability = str(raw.get("ability") or "?")
    d = CorpusDialogue(did, ability, domain, path, index)
    if not isinstance(raw.get("id"), str):
        d.problem = "missing id"
    elif ability not in ABILITIES:
        d.problem = f"ability must be one of {', '.join(ABILITIES)}, not {ability!r}"
    elif ability == "plan_retrieve_call":
        req, resp, steps = raw.get("requirement"), raw.get("response"), raw.get("steps")
        if not isinstance(req, str) or not isinstance(resp, str) or not isinstance(steps, list) or not steps:
            d.problem = "a plan needs requirement, steps and response"
        else:
            d.requirement, d.response = req.strip(), resp.strip()
            d.turns = [_api_turn(s) if isinstance(s, dict) else CorpusTurn("?", str(s), problem="a step is api: ... with output:") for s in steps]
    else:
        turns = raw.get("turns")
        if not isinstance(turns, list) or not turns:
            d.problem = "a dialogue needs a turns list"
        else:
            d.turns = [_turn(t) for t in turns]
    return d


def parse_dialogue(raw: Any, index: int, domain: str, path: str) -> CorpusDialogue:
    """Read one dialogue mapping as a corpus file holds it (the synthesis pipeline reads model output with it).

    Args:
        raw: the dialogue as loaded from YAML.
        index: its position in its file (for messages).
        domain: the domain it belongs to.
        path: the file it is (or will be) written to.

    Problems are kept on the record (``problem``, turn ``problem``) for the tester, never raised.
    """
    return _dialogue(raw, index, domain, path)


def read_corpus_file(path: str | Path) -> CorpusFile:
    """Read one corpus file; dialogues are kept as written for the tester to judge."""
    path = Path(path)
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("apis"), list) or not isinstance(data.get("dialogues"), list):
        raise DataError("a corpus file needs top-level 'domain', 'apis' and 'dialogues'", path)
    domain = str(data.get("domain") or path.stem)
    schemas: dict[str, ToolSchema] = {}
    problems: dict[str, str] = {}
    for i, raw in enumerate(data["apis"]):
        try:
            s = _schema(raw, i)
        except ValueError as exc:
            name = raw.get("name") if isinstance(raw, dict) and isinstance(raw.get("name"), str) else f"#{i + 1}"
            problems[name] = str(exc)
            continue
        if s.name in schemas:
            problems[s.name] = "defined twice in this file"
            continue
        schemas[s.name] = s
    dialogues = [_dialogue(raw, i, domain, str(path)) for i, raw in enumerate(data["dialogues"])]
    return CorpusFile(str(path), domain, schemas, dialogues, problems)


def default_corpus_dir() -> Path:
    """Our training corpus, ``data/train/corpus`` beside the package."""
    return PROJECT_ROOT / "data" / "train" / "corpus"


def corpus_files(root: str | Path) -> list[Path]:
    """The corpus files under ``root`` (a file, or a folder searched for ``*.yaml``), sorted."""
    root = Path(root)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise DataError("no such corpus file or folder", root)
    return sorted(root.rglob("*.yaml"))


def corpus_schemas(root: str | Path | None = None) -> dict[str, ToolSchema]:
    """Every API the corpus files under ``root`` describe (default: :func:`default_corpus_dir`), by name, in file
    order; a name described in several files keeps its first description."""
    out: dict[str, ToolSchema] = {}
    for path in corpus_files(root if root is not None else default_corpus_dir()):
        for name, schema in read_corpus_file(path).schemas.items():
            out.setdefault(name, schema)
    return out


# --- conversion to evaluation types ---------------------------------------------------------------


def searcher_output(retrieved: list[ToolSchema], *, level: int) -> Any:
    """What ToolSearcher returns in a training record: a list of descriptions (level 2), one (level 3)."""
    if level == 3:
        return retrieved[0].to_dict()
    return [s.to_dict() for s in retrieved]


def _retrieved(turns: list[CorpusTurn], i: int, schemas: dict[str, ToolSchema]) -> list[ToolSchema]:
    t = turns[i]
    if t.retrieves:
        return [schemas[n] for n in t.retrieves if n in schemas]
    for later in turns[i + 1 :]:
        if later.role == "api" and later.call is not None and later.call.name != SEARCHER:
            return [schemas[later.call.name]] if later.call.name in schemas else []
    return []


def _records(turns: list[CorpusTurn], schemas: dict[str, ToolSchema], level: int) -> list[Utterance | ApiRecord]:
    out: list[Utterance | ApiRecord] = []
    for i, t in enumerate(turns):
        if t.role == "api":
            assert t.call is not None
            args = {k: v if isinstance(v, str) else str(v) for k, v in t.call.args.items()}
            if t.call.name == SEARCHER:
                found = _retrieved(turns, i, schemas)
                output: Any = searcher_output(found, level=level) if found else None
            else:
                output = t.output
            result = {"api_name": t.call.name, "input": args, "output": output, "exception": None}
            out.append(ApiRecord(t.call.name, args, result))
        else:
            out.append(Utterance("User" if t.role == "user" else "AI", t.text))
    return out


def to_dialogue(d: CorpusDialogue, schemas: dict[str, ToolSchema]) -> Dialogue:
    """An accepted ``call``/``retrieve_call`` dialogue as a level-1/2 :class:`Dialogue`."""
    level = ABILITY_LEVEL[d.ability]
    return Dialogue(d.id, level, _records(d.turns, schemas, level), d.path)  # type: ignore[arg-type]


def to_level3_item(d: CorpusDialogue, schemas: dict[str, ToolSchema], index: int = 0) -> Level3Item:
    """An accepted plan as a :class:`Level3Item` (steps with their whole result envelopes)."""
    steps = [r for r in _records(d.turns, schemas, 3) if isinstance(r, ApiRecord)]
    return Level3Item(index, d.requirement or "", d.response or "", steps)
