"""The five synthesis agents: a prompt and a strict parser for each model stage, and the tester as the fifth.

The stages follow the paper's recipe, in our own words:

1. ``domains``: :func:`domains_prompt` asks for N domain names, one a line;
   :func:`parse_domains` strips bullets and numbering and drops repeats.
2. ``apis``: :func:`apis_prompt` asks for plausible APIs of one domain in our
   corpus YAML ``apis:`` shape, with two evaluation APIs as style references;
   :func:`parse_apis` reads them and validates each with
   :func:`~apibank_lib.data.check_train.check_schema`.
3. ``requests``: :func:`request_prompt` shows the domain's APIs and the ability
   to practise; the model picks the APIs and writes the user's request as a small
   YAML mapping, read by :func:`parse_request` into a :class:`RequestDraft`.
4. ``dialogues``: :func:`dialogue_prompt` shows the chosen APIs, the ability and
   the request; :func:`parse_dialogue_output` reads the dialogue with the corpus
   reader (:func:`~apibank_lib.data.formats.train_corpus.parse_dialogue`).
5. ``tester``: :func:`judge` is the rule-based tester
   (:func:`~apibank_lib.data.check_train.check_dialogue`); no model is asked.

Every prompt is built both as chat messages and as one text for completion
models; the text ends with a *lead* (an opened code fence) that the model
continues. A completion is read as if the model had written the lead itself
(:func:`answer_text`), so one parser serves both kinds of backend.

Parsers are strict. They tolerate a code fence around the answer and chatter
outside that fence, nothing else: no missing or unknown keys, no unknown APIs,
no free text where YAML is expected. Model output is only ever read with
``yaml.safe_load``. A failure raises :class:`SynthesisParseError` with the stage
and a kind (:data:`PARSE_KINDS`) that reports count by.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from apibank_lib.core.errors import DataError
from apibank_lib.core.types import ToolSchema
from apibank_lib.data.check_train import (
    check_dialogue,
    check_schema,
    near_evaluation,
    near_evaluation_message,
    said_in,
    shared_inputs,
)

# `_schema` is the corpus reader's own API reader: model-written APIs are read exactly as a corpus file's are.
from apibank_lib.data.formats.train_corpus import ABILITIES, SEARCHER, CorpusDialogue, _schema, parse_dialogue
from apibank_lib.prompting.prompts import Prompt

__all__ = [
    "STAGES",
    "PARSE_KINDS",
    "LEAD",
    "LIST_LEAD",
    "SynthesisParseError",
    "RequestDraft",
    "slugify",
    "extract_payload",
    "answer_text",
    "schema_entry",
    "render_apis",
    "dialogue_mapping",
    "DOMAIN_AREAS",
    "domains_prompt",
    "parse_domains",
    "apis_prompt",
    "parse_apis",
    "request_prompt",
    "parse_request",
    "needed_values",
    "dialogue_prompt",
    "parse_dialogue_output",
    "read_apis",
    "read_dialogue",
    "judge",
    "API_LIMITS",
    "FORMS",
    "JSON_LEAD",
    "API_RULES",
    "DIALOGUE_RULES",
    "SHAPE_RULES",
    "shape_rules",
    "ABILITY_TEXT",
    "EXAMPLES",
    "INTRO",
    "fenced",
    "in_form",
    "EVALUATED_WORDS",
    "domain_taken",
]

STAGES: tuple[str, ...] = ("domains", "apis", "requests", "dialogues", "tester")
"""The five stages, in the order they run."""

PARSE_KINDS: tuple[str, ...] = ("empty", "yaml", "shape", "value", "schema")
"""What a parse failure is about: nothing to read, not YAML, the wrong structure,
a value that is not allowed, an API definition the tester refuses."""

LEAD = "```yaml\n"
"""The lead of the YAML stages: completion prompts end with it, so the model writes the block's body."""

LIST_LEAD = "```text\n"
"""The lead of the domains stage (a plain list)."""

JSON_LEAD = ""
"""The lead of a stage in JSON form: none, the grammar (or the server's schema) starts the object."""

FORMS: tuple[str, ...] = ("yaml", "json")
"""How a stage's answer is written: YAML in a fenced block (any model), or one JSON object that a schema
constrains (:func:`stage_schema`; a backend with :attr:`~apibank_lib.models.base.Backend.constrains_json`)."""

API_LIMITS: dict[str, tuple[int, int]] = {"call": (1, 4), "retrieve_call": (1, 4), "plan_retrieve_call": (2, 3)}
"""How many of the domain's APIs a request of each ability may use (a plan needs two or three)."""

STAGE_SOURCE = "synthesis:{stage}"
"""A synthesis prompt's :attr:`~apibank_lib.prompting.prompts.Prompt.source`: which stage asks (journals and scripted test
backends read it). The stage is not written into the prompt text: a small model copies it into the names it
invents."""


class SynthesisParseError(DataError):
    """A model's answer that a synthesis stage cannot use.

    Attributes:
        stage: the stage whose parser refused it (one of :data:`STAGES`).
        kind: the class of the problem (one of :data:`PARSE_KINDS`); reports count rejections by it.
        reason: what is wrong, in words.
    """

    def __init__(self, stage: str, kind: str, reason: str) -> None:
        self.stage = stage
        self.kind = kind
        self.reason = reason
        super().__init__(f"{stage} stage: {kind}: {reason}")


@dataclass(frozen=True)
class RequestDraft:
    """What the request agent decided: the ability, the domain's APIs it uses, the user's words, and (with
    ``values``) the value of each input the user gives, by parameter name, each one written in the request."""

    ability: str
    apis: tuple[str, ...]
    request: str
    values: tuple[tuple[str, str], ...] = ()


# --- shared reading -------------------------------------------------------------------------------

_FENCE = re.compile(r"^[ \t]*```")


def slugify(name: str) -> str:
    """A domain's file name stem: lower case, runs of other characters turned into one underscore."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def extract_payload(text: str, stage: str) -> str:
    """The part of an answer to read: the first fenced block's body, or the whole text when there is no fence.

    A fence that is opened and never closed (the answer was cut off) runs to the end.

    Raises:
        SynthesisParseError: nothing is left to read.
    """
    lines = text.strip().splitlines()
    start = next((i for i, line in enumerate(lines) if _FENCE.match(line)), None)
    if start is not None:
        end = next((j for j in range(start + 1, len(lines)) if _FENCE.match(lines[j])), len(lines))
        lines = lines[start + 1 : end]
    payload = textwrap.dedent("\n".join(lines)).strip()
    if not payload:
        raise SynthesisParseError(stage, "empty", "the answer holds nothing to read")
    return payload


def answer_text(completion: str, lead: str) -> str:
    """The answer as the parsers read it: a completion model continued ``lead``, so it is put back in front."""
    return lead + completion


def _load(payload: str, stage: str) -> Any:
    if payload[:1] in "{[":
        # A JSON answer (a constrained stage) is read as JSON; YAML would read most of it too, but not all
        # (a "\/" escape, a long key).
        try:
            return json.loads(payload)
        except json.JSONDecodeError:
            pass  # flow-style YAML also starts with a bracket
    try:
        return yaml.safe_load(payload)
    except yaml.YAMLError as exc:
        # PyYAML's messages span several lines; one line keeps journals and tables readable.
        raise SynthesisParseError(stage, "yaml", "not valid YAML: " + " ".join(str(exc).split())) from exc


def _prompt(stage: str, system: str, user: str, lead: str, form: str = "yaml") -> Prompt:
    if form == "json":
        lead = JSON_LEAD
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return Prompt(messages, f"{system}\n\n{user}\n\n{lead}", source=STAGE_SOURCE.format(stage=stage), lead=lead)


def schema_entry(schema: ToolSchema) -> dict[str, Any]:
    """An API as one item of a corpus file's ``apis:`` list (``required: false`` kept for optional inputs)."""

    def params(group: Mapping[str, Any], inputs: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, p in group.items():
            entry: dict[str, Any] = {"type": p.type, "description": p.description}
            if inputs and not p.required:
                entry["required"] = False
            out[name] = entry
        return out

    return {
        "name": schema.name,
        "description": schema.description,
        "input_parameters": params(schema.input_parameters, True),
        "output_parameters": params(schema.output_parameters, False),
    }


def render_apis(schemas: Iterable[ToolSchema], form: str = "yaml") -> str:
    """APIs as the YAML list a corpus file holds (parameters on one line each), or as a JSON list (one API a line)."""
    entries = [schema_entry(s) for s in schemas]
    if form == "json":
        return "[\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in entries) + "\n]"
    return yaml.safe_dump(entries, sort_keys=False, default_flow_style=None, width=1000, allow_unicode=True).rstrip()


def fenced(body: str, form: str) -> str:
    """A fenced block of the stage's form."""
    return f"```{form}\n{body}\n```"


def in_form(yaml_text: str, form: str) -> str:
    """A YAML example written in the stage's form (JSON: one object, its lists one item a line)."""
    if form == "yaml":
        return yaml_text.rstrip()
    data = yaml.safe_load(yaml_text)
    parts = []
    for key, value in data.items():
        if isinstance(value, list):
            items = ",\n    ".join(json.dumps(v, ensure_ascii=False) for v in value)
            parts.append(f"  {json.dumps(key)}: [\n    {items}\n  ]")
        else:
            parts.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(parts) + "\n}"


def dialogue_mapping(d: CorpusDialogue) -> dict[str, Any]:
    """A read dialogue back as the mapping a corpus file holds (the inverse of the corpus reader)."""
    out: dict[str, Any] = {"id": d.id, "ability": d.ability}

    def api(t: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {"api": t.text}
        if t.has_output:
            entry["output"] = t.output
        if t.retrieves is not None:
            entry["retrieves"] = list(t.retrieves)
        return entry

    if d.ability == "plan_retrieve_call":
        out["requirement"] = d.requirement
        out["steps"] = [api(t) for t in d.turns]
        out["response"] = d.response
    else:
        out["turns"] = [api(t) if t.role == "api" else {t.role: t.text} for t in d.turns]
    return out


# --- 1. domains -----------------------------------------------------------------------------------

INTRO = (
    "You help build training data that teaches small language models to use APIs. "
    "An API here is an online service that an assistant can call for a user: it has named inputs and returns a structured result."
)

_EVALUATED_AREAS = (
    "alarms, reminders, agendas and meetings, smart-home scenes, bank accounts, stocks and taxes, hotel bookings, "
    "doctor appointments and health records, weather, translation, email, music and films, user accounts and passwords"
)


DOMAIN_AREAS = (
    "repairs and upkeep of a home",
    "outdoor hobbies",
    "arts and handicrafts",
    "community and neighbourhood life",
    "raising children",
    "animals kept by people",
    "cars, motorbikes and bicycles",
    "boats and water sports",
    "farming and growing food",
    "running a small shop",
    "office administration",
    "building and construction work",
    "collecting and antiques",
    "board games and puzzles",
    "theatre, dance and performance",
    "writing and publishing",
    "amateur science and nature study",
    "clothes and fashion",
    "hairdressing and personal grooming",
    "weddings, parties and celebrations",
    "moving house",
    "services of a town council",
    "buying and selling used goods",
    "repairing electronics and appliances",
    "energy use at home",
    "amateur sports clubs",
    "camping and mountain trips",
    "learning a practical skill",
    "care for older relatives",
    "religious and cultural communities",
)
"""Broad areas of everyday life, one a further domains answer (:func:`domains_prompt` with ``area``). A small
model asked once for many domains repeats a few (Qwen2.5-Coder-1.5B's 40 held 17 different names); asked for a
few within one area at a time, it names new ones."""


def domains_prompt(
    n: int, form: str = "yaml", taken: Sequence[str] = (), *, lists: bool = True, area: str | None = None
) -> Prompt:
    """Ask for ``n`` domain names, one a line (``yaml`` form: a plain list; ``json``: ``{"domains": [...]}``),
    away from the evaluated areas and from ``taken`` (domains another corpus has).

    ``lists=False`` leaves out the two example domains and both lists to keep away from: a small model copies
    them (Qwen2.5-Coder-1.5B's 40 domains began with the examples and went on through the list); the pipeline
    drops such domains instead (:func:`domain_taken`). ``area`` (one of :data:`DOMAIN_AREAS`) asks for domains
    within that area of life."""
    system = INTRO
    answer = (
        f"Answer with the list inside one {LIST_LEAD.strip()} block."
        if form == "yaml"
        else 'Answer with one JSON object: {"domains": ["First domain", "Second domain", ...]}.'
    )
    asked = (
        f"Name {n} different everyday domains"
        + (f" within {area}" if area else "")
        + " in which a person could ask an assistant to get something done through an online service"
    )
    if lists:
        keep_away = (
            " (for instance: Boat hire, Tailoring and alterations).\n"
            f"Keep away from areas that are already covered: {_EVALUATED_AREAS}"
            + (f", and from these domains: {', '.join(taken)}" if taken else "")
            + ".\n"
        )
    else:
        keep_away = ": specific trades, hobbies and public services, each unlike the others.\n"
    user = (
        asked + keep_away
        + "Each domain is a short name of one to five words. Write one domain a line, with no explanation.\n"
        + answer
    )
    return _prompt("domains", system, user, LIST_LEAD, form)


EVALUATED_WORDS = frozenset(
    "alarm alarms reminder reminders agenda agendas meeting meetings scene scenes smart home bank banking stock stocks "
    "tax taxes hotel hotels doctor doctors health medical medicine medicines medication medications pharmacy weather "
    "translation translate email emails music film films movie movies account accounts password passwords finance "
    "financial investment investments".split()
)
"""Words of the evaluated areas: a model-made domain naming one is dropped (its APIs would shadow evaluated ones)."""

_STOP = frozenset("and or of the a an for to in on with services service".split())


def _content_words(name: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", name.lower()) if w not in _STOP}


def domain_taken(name: str, taken: Iterable[str]) -> str | None:
    """Why a domain name is not new: it names an evaluated area, or its words are (nearly) those of a taken domain
    (all of the shorter name's words in the longer, e.g. "Gym and fitness" and "Gym and fitness classes"); None
    when it is new."""
    words = _content_words(name)
    if words & EVALUATED_WORDS:
        return f"{name!r} names an evaluated area ({', '.join(sorted(words & EVALUATED_WORDS))})"
    for other in taken:
        theirs = _content_words(other)
        if words and theirs and (words <= theirs or theirs <= words):
            return f"{name!r} is taken ({other!r})"
    return None


_BULLET = re.compile(r"^(?:[-*\u2022](?:\s+|$)|\(?\d{1,3}[.):]\s*)")
_DOMAIN = re.compile(r"^[A-Za-z][A-Za-z0-9&/' -]*[A-Za-z0-9]$")


def parse_domains(text: str) -> list[str]:
    """Domain names, one a line, in order; bullets and numbering stripped, repeats (same slug) dropped.

    Raises:
        SynthesisParseError: a line that is not a short name (``value``), or no line at all (``empty``).
    """
    payload = extract_payload(text, "domains")
    lines = payload.splitlines()
    if payload[:1] in "{[":  # the JSON form: {"domains": [...]} (or a bare list)
        data = _load(payload, "domains")
        data = data.get("domains") if isinstance(data, dict) and set(data) == {"domains"} else data
        if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
            raise SynthesisParseError("domains", "shape", 'expected {"domains": [names]}')
        lines = data
    out: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        name = _BULLET.sub("", line.strip(), count=1).strip()
        if not name:
            continue
        if len(name) > 40 or len(name.split()) > 5 or not _DOMAIN.match(name):
            raise SynthesisParseError(
                "domains", "value", f"line {number} is not a domain name of one to five words: {line.strip()!r}"
            )
        slug = slugify(name)
        if slug not in seen:
            seen.add(slug)
            out.append(name)
    if not out:
        raise SynthesisParseError("domains", "empty", "no domain name in the answer")
    return out


# --- 2. APIs --------------------------------------------------------------------------------------

_API_KEYS = {"name", "description", "input_parameters", "output_parameters"}

API_RULES = """- Names are CamelCase and name the action and the thing it acts on in this domain, never a bare verb.
- Invent new names: never reuse the name of an API shown here or of another existing service's API.
- One plain sentence per description; a date or time says its format, such as %Y-%m-%d.
- Parameter names are lower-case identifiers with underscores; vary them from one API to the next.
- Each API takes one to four inputs; about a third of the APIs take one optional input.
- Every API returns one to three output parameters."""
"""The data standards of an invented API. (The names it must not reuse are not listed: a small model copies
what it is shown; the tester refuses them.)"""
_PARAM_KEYS = {"type", "description", "required"}


def apis_prompt(
    domain: str, n: int, references: Sequence[ToolSchema], form: str = "yaml"
) -> Prompt:
    """Ask for ``n`` APIs of ``domain`` in the corpus ``apis:`` shape.

    Args:
        domain: the domain name (from stage 1).
        n: how many APIs to invent.
        references: evaluation APIs shown for their layout only (none: no layout shown; a small model copies the
            references' names, and in the JSON form the schema holds the layout).
        form: ``yaml`` or ``json`` (:data:`FORMS`).
    """
    written = "YAML" if form == "yaml" else "JSON"
    answer = (
        f"Answer with the {n} new APIs as one YAML list inside a {LEAD.strip()} block."
        if form == "yaml"
        else f'Answer with one JSON object: {{"apis": [the {n} new APIs]}}.'
    )
    system = (
        INTRO + "\n"
        f"An API is written in {written} with a name, a description, input_parameters and output_parameters. "
        "Each parameter has a type (str, int, float, bool, list or dict) and a one-sentence description; "
        'an optional input also says "required: false" and its description starts with "Optional.".'
    )
    user = (
        f"Domain: {domain}\n\n"
        f"Invent {n} APIs that a service in this domain could plausibly offer.\n"
        + API_RULES
        + "\n\n"
        + (
            "Two existing APIs show the layout (copy their form, not their names or purposes):\n"
            f"{fenced(render_apis(references, form), form)}\n\n"
            if references
            else ""
        )
        + answer
    )
    return _prompt("apis", system, user, LEAD, form)


def parse_apis(
    text: str, *, evaluation_names: Iterable[str] = (), evaluation: Sequence[ToolSchema] = ()
) -> list[ToolSchema]:
    """The APIs of a YAML list (or a mapping whose only key is ``apis``), each accepted by the tester's schema check.

    Raises:
        SynthesisParseError: not YAML, not a list of API mappings, unknown keys (``shape``); a
            parameter name that is not an identifier, an API without outputs, a name given twice
            (``value``); a definition :func:`check_schema` refuses, e.g. an evaluation API's name (``schema``);
            an ``evaluation`` API under another name (:func:`near_evaluation`, ``schema``); variations on one call
            (:func:`shared_inputs`, ``value``).
    """
    data = _load(extract_payload(text, "apis"), "apis")
    if isinstance(data, dict) and set(data) == {"apis"}:
        data = data["apis"]
    schemas = read_apis(data, "apis", evaluation_names, evaluation)
    # Only the APIs stage: the few APIs one dialogue uses (the single agent's) may well share their inputs.
    for names, inputs in shared_inputs(schemas):
        taken = ", ".join(inputs) if inputs else "no input"
        raise SynthesisParseError(
            "apis", "value",
            f"{len(names)} APIs ({', '.join(names)}) take the same inputs ({taken}); give each API the inputs its own task needs",
        )
    return schemas



def read_apis(
    data: Any, stage: str, evaluation_names: Iterable[str] = (), evaluation: Sequence[ToolSchema] = ()
) -> list[ToolSchema]:
    """API definitions already loaded (a list of mappings), checked as :func:`parse_apis` does; ``stage`` names
    who wrote them in an error."""
    if not isinstance(data, list) or not data:
        raise SynthesisParseError(
            stage, "shape", "expected a list of APIs (name, description, input_parameters, output_parameters)"
        )
    names = list(evaluation_names)
    out: list[ToolSchema] = []
    for i, raw in enumerate(data):
        if not isinstance(raw, dict):
            raise SynthesisParseError(stage, "shape", f"API #{i + 1} is not a mapping")
        label = f"API #{i + 1} ({raw['name']})" if isinstance(raw.get("name"), str) else f"API #{i + 1}"
        extra = sorted(map(str, set(raw) - _API_KEYS))
        if extra:
            raise SynthesisParseError(stage, "shape", f"{label} has unknown keys {extra}")
        for group in ("input_parameters", "output_parameters"):
            params = raw.get(group)
            for pname, spec in params.items() if isinstance(params, dict) else ():
                if not isinstance(pname, str) or not pname.isidentifier():
                    raise SynthesisParseError(
                        stage, "value", f"{label}: the parameter name {pname!r} cannot be written in a call"
                    )
                if isinstance(spec, dict) and set(spec) - _PARAM_KEYS:
                    raise SynthesisParseError(
                        stage,
                        "shape",
                        f"{label}: {group}.{pname} has unknown keys {sorted(map(str, set(spec) - _PARAM_KEYS))}",
                    )
        try:
            schema = _schema(raw, i)
        except ValueError as exc:
            raise SynthesisParseError(stage, "shape", f"{label}: {exc}") from exc
        why = check_schema(schema, names)
        if why:
            raise SynthesisParseError(stage, "schema", why)
        if not schema.output_parameters:
            raise SynthesisParseError(stage, "value", f"{schema.name} declares no output parameter")
        if any(s.name == schema.name for s in out):
            raise SynthesisParseError(stage, "value", f"{schema.name} is defined twice")
        out.append(schema)
    for name, (closest, score) in near_evaluation(out, evaluation).items():
        raise SynthesisParseError(stage, "schema", near_evaluation_message(name, closest, score))
    return out


# --- 3. requests ----------------------------------------------------------------------------------

# Each completes "<ability>, where ...".
ABILITY_TEXT = {
    "call": "the assistant sees the APIs' descriptions and calls them directly.",
    "retrieve_call": (
        "the assistant knows only ToolSearcher, which finds an API from a few keywords, "
        "so it searches before the first use of each API."
    ),
    "plan_retrieve_call": (
        "the user makes one self-contained request that needs two or three APIs one after another; the assistant "
        "finds each with ToolSearcher, calls it, and answers once at the end."
    ),
}


def request_prompt(
    domain: str,
    schemas: Sequence[ToolSchema],
    ability: str,
    earlier: Sequence[str] = (),
    form: str = "yaml",
    focus: str | None = None,
    *,
    values: bool = False,
) -> Prompt:
    """Ask for one user request of ``ability`` over some of the domain's APIs.

    Args:
        domain: the domain name.
        schemas: the domain's APIs (stage 2).
        ability: the ability to practise (``call``, ``retrieve_call`` or ``plan_retrieve_call``).
        earlier: requests already written for this domain, which the new one must not repeat.
        form: ``yaml`` or ``json`` (:data:`FORMS`).
        focus: an API the request is built around (the pipeline rotates it over the domain's APIs, so that the
            requests differ and every API gets used; a small model otherwise writes the same request again).
        values: ask first for the value of each input the user gives, then the request that says them all
            (:func:`parse_request` checks it); a small model otherwise writes a request without them and the
            dialogue invents them.
    """
    low, high = API_LIMITS[ability]
    if values:
        return _values_request_prompt(domain, schemas, ability, form, focus, earlier)
    answer = (
        f"Answer with one YAML mapping inside a {LEAD.strip()} block, in this form:\n"
        f"ability: {ability}\n"
        "apis: [FirstApi, SecondApi]\n"
        'request: "what the user asks"'
        if form == "yaml"
        else "Answer with one JSON object in this form:\n"
        f'{{"ability": "{ability}", "apis": ["FirstApi", "SecondApi"], "request": "what the user asks"}}'
    )
    system = INTRO + "\nYou now write what a user asks the assistant, so that a dialogue can be written from it."
    seen = "".join(f"- {r}\n" for r in earlier)
    user = (
        f"Domain: {domain}\n"
        f"The domain's APIs:\n{fenced(render_apis(schemas, form), form)}\n\n"
        f"Ability to practise: {ability}, where {ABILITY_TEXT[ability]}\n"
        + (f"Requests already written for this domain (write a different one):\n{seen}" if earlier else "")
        + (f"This request is built around {focus}; it may use other APIs of the domain too.\n" if focus else "")
        + f"Choose the {low} to {high} APIs the request needs (list them in the order they are used) and write the request "
        "in the user's own voice, with every detail the calls need: names, dates in 2023, numbers, codes.\n"
        + answer
    )
    return _prompt("requests", system, user, LEAD, form)


def _values_request_prompt(
    domain: str, schemas: Sequence[ToolSchema], ability: str, form: str, focus: str | None, earlier: Sequence[str]
) -> Prompt:
    low, high = API_LIMITS[ability]
    example = {"ability": ability, "apis": ["FirstApi", "SecondApi"], "values": {"some_input": "its value"}, "request": "what the user asks, saying its value"}
    answer = (
        f"Answer with one YAML mapping inside a {LEAD.strip()} block, in this form:\n"
        + yaml.safe_dump(example, sort_keys=False, allow_unicode=True).rstrip()
        if form == "yaml"
        else "Answer with one JSON object in this form:\n" + json.dumps(example, ensure_ascii=False)
    )
    system = INTRO + "\nYou now write what a user asks the assistant, so that a dialogue can be written from it."
    user = (
        f"Domain: {domain}\n"
        f"The domain's APIs:\n{fenced(render_apis(schemas, form), form)}\n\n"
        f"Ability to practise: {ability}, where {ABILITY_TEXT[ability]}\n"
        + ("Requests already written for this domain (write a different one):\n" + "".join(f"- {r}\n" for r in earlier) if earlier else "")
        + (f"This request is built around {focus}; it may use other APIs of the domain too.\n" if focus else "")
        + f"1. Choose the {low} to {high} APIs the request needs, in the order they are used.\n"
        "2. Under values, give a concrete, realistic value for every required input of those APIs (a name, a date "
        "in 2023, a number, a code), except an input that an earlier API's output supplies.\n"
        "3. Write the request in the user's own voice; it says every one of those values exactly as written.\n"
        + answer
    )
    return _prompt("requests", system, user, LEAD, form)


def needed_values(schemas: Sequence[ToolSchema]) -> list[str]:
    """The inputs a request over ``schemas`` (in order of use) must give: every required input of each API but
    those an output of an API before it supplies (named like it, or named in its description), each name once."""
    out: list[str] = []
    supplied: set[str] = set()
    for s in schemas:
        for name, p in s.input_parameters.items():
            fed = any(other == name or other.startswith(name) for other in supplied)
            if p.required and not fed and name not in out:
                out.append(name)
        for name, p in s.output_parameters.items():
            # an output names what it supplies, or lists it ("lessons, each with lesson_id and start")
            supplied.add(name)
            supplied.update(re.findall(r"[a-z][a-z0-9_]*", p.description.lower()))
    return out


def _read_values(data: Mapping[str, Any], chosen: Sequence[ToolSchema], request: str) -> tuple[tuple[str, str], ...]:
    raw = data["values"]
    if not isinstance(raw, dict) or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in raw.values()):
        raise SynthesisParseError("requests", "shape", "values must map input names to single values")
    given = {str(k): str(v).strip() for k, v in raw.items()}
    missing = [n for n in needed_values(chosen) if not given.get(n)]
    if missing:
        raise SynthesisParseError("requests", "value", f"no value for the required input {', '.join(missing)}")
    unsaid = [f"{k}={v!r}" for k, v in given.items() if v and not said_in(v, request)]
    if unsaid:
        raise SynthesisParseError("requests", "value", f"the request does not say {', '.join(unsaid)}")
    known = {n for s in chosen for n in s.input_parameters}
    return tuple((k, v) for k, v in given.items() if k in known and v)


def parse_request(
    text: str, schemas: Mapping[str, ToolSchema], *, ability: str | None = None, values: bool = False
) -> RequestDraft:
    """The request agent's answer: a mapping of exactly ``ability``, ``apis`` and ``request``.

    Args:
        text: the answer.
        schemas: the domain's APIs by name; the request may only use these.
        ability: the ability that was asked for; the answer must keep it.
        values: the answer must give ``values`` (:func:`request_prompt` with ``values=True``): a value for each
            input :func:`needed_values` names, each of them said in the request. An answer that gives ``values``
            unasked is checked the same way.

    Raises:
        SynthesisParseError: not YAML or missing/unknown keys (``shape``); an unknown ability or
            API, ToolSearcher listed, too few or too many APIs, an empty request, a needed value missing or
            not said in the request (``value``).
    """
    data = _load(extract_payload(text, "requests"), "requests")
    keys = {"ability", "apis", "request"}
    if not isinstance(data, dict):
        raise SynthesisParseError("requests", "shape", "expected a YAML mapping with ability, apis and request")
    if values or "values" in data:
        keys.add("values")  # asked for by request_prompt(values=True)
    missing, extra = sorted(keys - set(data)), sorted(map(str, set(data) - keys))
    if missing or extra:
        what = (
            (f"missing {missing}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unknown keys {extra}" if extra else "")
        )
        raise SynthesisParseError("requests", "shape", what)
    chosen = data["ability"]
    if chosen not in ABILITIES:
        raise SynthesisParseError("requests", "value", f"ability must be one of {', '.join(ABILITIES)}, not {chosen!r}")
    if ability is not None and chosen != ability:
        raise SynthesisParseError("requests", "value", f"a {ability} request was asked for, not {chosen}")
    apis = data["apis"]
    if not isinstance(apis, list) or not all(isinstance(a, str) for a in apis):
        raise SynthesisParseError("requests", "shape", "apis must be a list of API names")
    if SEARCHER in apis:
        raise SynthesisParseError(
            "requests", "value", f"{SEARCHER} comes with the ability; list only the domain's APIs"
        )
    unknown = [a for a in apis if a not in schemas]
    if unknown:
        raise SynthesisParseError(
            "requests", "value", f"unknown API {', '.join(unknown)} (the domain has {', '.join(schemas)})"
        )
    if len(set(apis)) != len(apis):
        raise SynthesisParseError("requests", "value", "an API is listed twice")
    low, high = API_LIMITS[chosen]
    if not low <= len(apis) <= high:
        raise SynthesisParseError("requests", "value", f"a {chosen} request uses {low} to {high} APIs, not {len(apis)}")
    request = data["request"]
    if not isinstance(request, str) or not request.strip():
        raise SynthesisParseError("requests", "value", "the request is empty")
    request = " ".join(request.split())
    values = _read_values(data, [schemas[a] for a in apis], request) if "values" in data else ()
    return RequestDraft(chosen, tuple(apis), request, values)


# --- 4. dialogues ---------------------------------------------------------------------------------

DIALOGUE_RULES = """Rules for every dialogue:
- A call is written Name(key='value', ...): single-quoted values, only the API's declared parameters, every required one given, never a single quote inside a value.
- Every call except ToolSearcher has an output: a plausible result as {written} whose keys are the API's output parameters, consistent with the call.
- A value in a call comes from what the user said or from an earlier result, copied exactly. Dates are in 2023, in the format the parameter's description gives.
- The assistant's reply after the last results repeats a concrete value from them (a code, a number, a name)."""

_ASK_RULE = "\n- Ask the user for a missing detail before calling, as a careful assistant would."

SHAPE_RULES = {
    "call": """Rules for this ability:
- turns: the first is the user's (user:), then assistant replies (ai:) and calls (api: with output:); the last is an ai: reply.
- The assistant already knows the APIs: it never calls ToolSearcher."""
    + _ASK_RULE,
    "retrieve_call": """Rules for this ability:
- turns: the first is the user's (user:), then assistant replies (ai:) and calls (api: with output:); the last is an ai: reply.
- Before the first call of each API, a search: api: ToolSearcher(keywords='...') with two to six plain words describing the need, never the API's name, and no output. The next call is the API it found.""",
    "plan_retrieve_call": """Rules for this ability:
- requirement: the user's request in one sentence; steps: searches and calls; response: the final answer stating the results. No user: or ai: turns.
- In steps, each API's first call comes right after api: ToolSearcher(keywords='...') with two to six plain words describing the need, never the API's name, and no output.""",
}


def shape_rules(ability: str, clarify: bool = True) -> str:
    """The rules of an ability's shape; ``clarify=False`` replaces asking for a missing detail by calling at once."""
    rules = SHAPE_RULES[ability]
    return rules if clarify else rules.replace(_ASK_RULE, "\n- The request gives every detail: call at once.")


# Worked examples in an invented domain; they pass our tester.
EXAMPLES = {
    "call": """ability: call
turns:
  - user: "Is a rowing boat free at Lake Bled on July 14?"
  - api: FindFreeBoats(lake='Lake Bled', day='2023-07-14', boat_kind='rowing')
    output: {boats: [{boat_id: "RB-7", hourly_rate: 12.0}]}
  - ai: "Yes: rowing boat RB-7 is free that day, at 12.0 an hour." """,
    "retrieve_call": """ability: retrieve_call
turns:
  - user: "Please hire boat RB-7 for Ana Silva on July 14."
  - api: ToolSearcher(keywords='hire a boat for a day')
  - api: HireBoat(boat_id='RB-7', renter='Ana Silva', day='2023-07-14')
    output: {hire_code: "H-3310", deposit: 40}
  - ai: "Done: RB-7 is hired for Ana Silva on July 14, code H-3310, with a deposit of 40." """,
    "plan_retrieve_call": """ability: plan_retrieve_call
requirement: "Find a free rowing boat at Lake Bled on 2023-07-14 and hire it for Ana Silva."
steps:
  - api: ToolSearcher(keywords='free boats on a lake')
  - api: FindFreeBoats(lake='Lake Bled', day='2023-07-14', boat_kind='rowing')
    output: {boats: [{boat_id: "RB-7", hourly_rate: 12.0}]}
  - api: ToolSearcher(keywords='hire a boat for a day')
  - api: HireBoat(boat_id='RB-7', renter='Ana Silva', day='2023-07-14')
    output: {hire_code: "H-3310", deposit: 40}
response: "Boat RB-7 is hired for Ana Silva at Lake Bled on July 14; the hire code is H-3310." """,
}


def dialogue_prompt(
    domain: str,
    schemas: Sequence[ToolSchema],
    draft: RequestDraft,
    form: str = "yaml",
    *,
    example: bool = True,
    clarify: bool = True,
) -> Prompt:
    """Ask for the dialogue (or plan) that fulfils ``draft`` with the APIs it chose.

    Args:
        domain: the domain name.
        schemas: the APIs the request uses (stage 3's choice), in order.
        draft: the request (stage 3).
        form: ``yaml`` or ``json`` (:data:`FORMS`).
        example: show a worked example from another domain (a small model copies its names and values, and in
            the JSON form the schema holds the shape: the pipeline leaves it out with ``lists=False``).
        clarify: the assistant may ask for a missing detail before calling (``clarify=False``: the request gives
            every value and the dialogue calls at once, as the pipeline's ``clarify`` setting says).
    """
    written = "YAML" if form == "yaml" else "JSON"
    answer = (
        f"Answer with the dialogue as one YAML mapping inside a {LEAD.strip()} block."
        if form == "yaml"
        else "Answer with the dialogue as one JSON object."
    )
    system = (
        INTRO + f"\nYou now write one training dialogue in {written}, following the rules exactly.\n\n"
        + DIALOGUE_RULES.format(written=written)
    )
    user = (
        f"Domain: {domain}\n"
        f"APIs to use:\n{fenced(render_apis(schemas, form), form)}\n\n"
        f"Ability: {draft.ability}, where {ABILITY_TEXT[draft.ability]}\n"
        f"The user's request: {draft.request}\n"
        + (
            "The values the user gives (use them exactly): " + ", ".join(f"{k}={v!r}" for k, v in draft.values) + "\n"
            if draft.values
            else ""
        )
        + f"\n{shape_rules(draft.ability, clarify)}\n\n"
        + (
            "An example of the form, from another domain (its APIs are not yours):\n"
            f"{fenced(in_form(EXAMPLES[draft.ability], form), form)}\n\n"
            if example
            else ""
        )
        + answer
    )
    return _prompt("dialogues", system, user, LEAD, form)


_DIALOGUE_KEYS = {
    "call": {"id", "ability", "turns"},
    "retrieve_call": {"id", "ability", "turns"},
    "plan_retrieve_call": {"id", "ability", "requirement", "steps", "response"},
}


def parse_dialogue_output(
    text: str, draft: RequestDraft, *, dialogue_id: str, domain: str, path: str, index: int = 0
) -> CorpusDialogue:
    """The dialogue agent's answer as a :class:`CorpusDialogue`, read by the corpus reader.

    The id is the pipeline's (``dialogue_id``), whatever the model wrote. Problems of single
    turns (a call that does not parse, an unknown turn key) are left on the record for the
    tester, which rejects them as ``format``; the structure around them must be right here.

    Raises:
        SynthesisParseError: not YAML, not a mapping, unknown keys or a structure the reader
            cannot use (``shape``); another ability than the request's, or an API the request
            chose that is never called (``value``).
    """
    data = _load(extract_payload(text, "dialogues"), "dialogues")
    d = read_dialogue(data, draft.ability, "dialogues", dialogue_id=dialogue_id, domain=domain, path=path, index=index)
    if not any(t.problem for t in d.turns):
        called = {t.call.name for t in d.api_turns if t.call is not None}
        missing = [a for a in draft.apis if a not in called]
        if missing:
            raise SynthesisParseError("dialogues", "value", f"the request's API {', '.join(missing)} is never called")
    return d


def read_dialogue(
    data: Any, ability: str, stage: str, *, dialogue_id: str, domain: str, path: str, index: int = 0
) -> CorpusDialogue:
    """A dialogue already loaded (a mapping) as a :class:`CorpusDialogue` of ``ability``, read by the corpus reader;
    problems of single turns are left for the tester (see :func:`parse_dialogue_output`)."""
    if not isinstance(data, dict):
        raise SynthesisParseError(
            stage, "shape", "expected one mapping (ability, then turns or requirement/steps/response)"
        )
    if data.get("ability") != ability:
        raise SynthesisParseError(stage, "value", f"ability must be the asked {ability}, not {data.get('ability')!r}")
    extra = sorted(map(str, set(data) - _DIALOGUE_KEYS[ability]))
    if extra:
        raise SynthesisParseError(stage, "shape", f"unknown keys {extra} in a {ability} dialogue")
    d = parse_dialogue({**data, "id": dialogue_id}, index, domain, path)
    if d.problem:
        raise SynthesisParseError(stage, "shape", d.problem)
    return d


# --- 5. tester ------------------------------------------------------------------------------------


def judge(d: CorpusDialogue, schemas: Mapping[str, ToolSchema]) -> tuple[str, str] | None:
    """The tester agent: ``(reason, message)`` for a dialogue the rules reject, None when accepted.

    Duplicates across dialogues are judged when the corpus is checked as a whole.
    """
    return check_dialogue(d, dict(schemas))
