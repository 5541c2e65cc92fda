"""The tester: the fifth synthesis agent, as rules. It accepts a training dialogue or rejects it with a reason.

The checks follow the data standards of the paper's tester, made explicit:

* ``format``: the dialogue has an id, a known ability, well-formed turns and
  calls that parse; the first turn is the user's; no assistant turn writes an
  API call as text (calls are API turns); the user neither names an API nor
  is a placeholder person (``John Doe``).
* ``api``: every called API is defined (``ToolSearcher`` is the one shared
  API), with a CamelCase name that is not an evaluation API's (or a near copy),
  that is not an evaluation API under another name (its search text or its name as close to
  one as a rename, :func:`near_evaluation`), and is not one of three or more
  APIs of its domain that take the same inputs (variations on one call,
  :func:`shared_inputs`); an API defined in several files is defined the same
  way in each.
* ``parameters``: only declared parameter names, every required one given,
  values that fit the declared type (``int``, ``float``, ``bool``), and no
  placeholder the user never said (``your_session_key``, ``<date>``, ``...``,
  ``John Doe``, a value that repeats its parameter's name): a value stands for
  something, it is not a slot to fill; and no identifier (an id number, a code,
  a URL or path, a person's full name) that is in neither the user's words nor
  an earlier result: an invented value teaches a model to invent.
* ``result``: every call but a search has an output; a mapping output uses only
  declared output parameters.
* ``grounding``: the reply that closes the last API results (a plan's
  response) repeats at least one concrete value of those results.
* ``shape``: the ability's shape: ``call`` has API calls and no search;
  ``retrieve_call`` searches before each API's first call and the search
  retrieves what is called next; a plan has at least two retrieved calls; a
  search's keywords are plain words, not the API's CamelCase name.
* ``duplicate``: ids are unique across every file judged together; no two
  dialogues open with the same request; no request nearly repeats one of the
  evaluation benchmark's.

:func:`check_corpus` judges whole files and returns a :class:`CheckReport`
(accepted dialogues, rejections with reasons, counts as a DataFrame); the
``apibank check-train PATH`` command prints it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, Iterable

from apibank_lib.core.types import ToolSchema
from apibank_lib.data.formats.train_corpus import (
    ABILITIES,
    SEARCHER,
    CorpusDialogue,
    CorpusFile,
    corpus_files,
    read_corpus_file,
)

__all__ = ["Rejection", "CheckReport", "check_dialogue", "check_schema", "shared_inputs", "near_evaluation", "near_evaluation_message", "NEAR_EVALUATION", "evaluation_schemas", "check_corpus", "check_retrieval", "REASONS", "evaluation_texts", "opening", "date_in_words", "text_words", "said_in"]

REASONS = ("format", "api", "parameters", "result", "grounding", "shape", "duplicate")
"""The rejection reasons, in the order the checks run."""

_CAMEL = re.compile(r"^[A-Z][A-Za-z0-9]+$")
_TYPES = {"str", "int", "float", "bool", "list", "dict"}
_WORD = re.compile(r"[a-z0-9]+")
_CALL_TEXT = re.compile(r"\b[A-Z][A-Za-z0-9]{2,}\(\s*[a-z_][a-z0-9_]*\s*=")
"""An API call written out (``Name(param=``), which an assistant turn must not hold."""
_PLACEHOLDER = re.compile(
    r"^(your|my)[ _-]|^<[^>]*>$|^\{[^}]*\}$|\.\.\.|…|^x{3,}$|^(placeholder|example|sample|string|value|tbd|n/a)$"
    r"|\b(john|jane) doe\b",
    re.IGNORECASE,
)
"""A value that holds a slot's place instead of a value: ``your_session_key``, ``My Account``, ``<date>``,
``{id}``, ``...``, ``xxx``, ``placeholder``, ``John Doe``."""
_FORMAT_WORDS = frozenset({"required", "optional"})
"""Parameter names that are the API format's words, not values (Qwen2.5-Coder-1.5B gave five APIs an input
``optional``, two an input ``required``)."""
_DATE_OR_TIME = re.compile(r"^\d{4}-\d{2}(-\d{2})?([ T]\d{2}:\d{2}(:\d{2})?)?$|^\d{1,2}:\d{2}(:\d{2})?$")
_NUMBER = re.compile(r"^[-+]?\d+(\.\d+)?$")
_CODE = re.compile(r"\d{3,}.*[A-Za-z]|[A-Za-z].*\d{3,}|[/@]")
_LOCATOR = re.compile(r"^https?:|^www\.|\S@\S+\.\w|\w/\w+/|\.(com|org|net|jpg|jpeg|png|txt|pdf|csv)\b", re.IGNORECASE)
_FULL_NAME = re.compile(r"[A-Z][a-z]+\s+[A-Z][a-z]+")
_ID_PARAM = re.compile(r"(^|_)(id|ids|number|no|code|key|ref|reference|token)$|[a-z](Id|Number|Code)$")
_NAME_PARAM = re.compile(r"name|person|student|customer|child|guest|patient|owner|judge|reviewer|renter|driver|passenger", re.IGNORECASE)
_STOP_WORDS = frozenset("with from that this your have into about their there what which".split())


def _alnum(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _identifier(value: str, param: str) -> bool:
    """Whether a call value names one particular thing that the user or a result must have given: a number where
    the parameter is an identifier (``student_id='12345'``), a code (``AA123``), a URL, path or address, or a full
    name where the parameter holds a name. Dates, amounts, free text and common words may be reworded from the
    request (``two hours`` -> ``120``), so they are not checked."""
    if not value or _DATE_OR_TIME.match(value) or len(value.split()) >= 4:
        return False
    if _NUMBER.match(value):
        return len(value) >= 3 and _ID_PARAM.search(param) is not None
    if _CODE.search(value):
        return True
    return _FULL_NAME.search(value) is not None and _NAME_PARAM.search(param) is not None


def _written_out(value: str, sources: str) -> bool:
    """Whether an identifier value is in ``sources`` (what the user said and the earlier results): letters and
    digits in order (``7730 2215`` gives ``77302215``); a code's digits and one of its words (``Nozomi 225``); a
    name's words; a URL, path or address only as written."""
    if _alnum(value) and _alnum(value) in _alnum(sources):
        return True
    if _LOCATOR.search(value):
        return False
    digits = re.sub(r"(?<=\d)[ ,.-](?=\d)", "", sources)
    runs = re.findall(r"\d{3,}", value)
    if any(run not in digits for run in runs):
        return False
    words = [w for w in text_words(value) if len(w) >= 4 and not any(c.isdigit() for c in w) and w not in _STOP_WORDS]
    if not words:
        return bool(runs)
    known = set(text_words(sources))
    return any(w in known for w in words)


def _invented(value: str, param: str, sources: str) -> bool:
    """An identifier value (:func:`_identifier`) that neither the user nor an earlier result gave; a list value
    (``E7,E8``) is judged item by item."""
    value = value.strip()
    if _written_out(value, sources):
        return False
    if _LOCATOR.search(value):
        return _identifier(value, param)  # a URL, path or address is one value, not a list
    parts = [p for p in re.split(r"\s*[,;/]\s*", value) if p] or [value]
    return any(_identifier(p, param) and not _written_out(p, sources) for p in parts)


def _names_its_parameter(value: str, param: str) -> bool:
    """A value that only repeats its parameter's name or one of its words (``location='location'``,
    ``releaseDate='releaseDate'``, ``analysis_type='type'``)."""
    words = {_alnum(w) for w in re.split(r"_|(?<=[a-z])(?=[A-Z])", param) if len(w) > 2}
    value = _alnum(value)
    return bool(value) and (value == _alnum(param) or value in words)


@dataclass(frozen=True)
class Rejection:
    """Why one dialogue (or API) was rejected: the reason class and a message naming the place."""

    where: str
    dialogue_id: str
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}: {self.message}"


@dataclass
class CheckReport:
    """The tester's verdict over one or more corpus files."""

    files: list[CorpusFile] = field(default_factory=list)
    accepted: list[CorpusDialogue] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    api_rejections: list[Rejection] = field(default_factory=list)

    @property
    def schemas(self) -> dict[str, ToolSchema]:
        """Every accepted API of every file, by name."""
        out: dict[str, ToolSchema] = {}
        for f in self.files:
            out.update(f.schemas)
        return out

    @property
    def domains(self) -> dict[str, str]:
        """API name -> domain."""
        return {name: f.domain for f in self.files for name in f.schemas}

    @property
    def called(self) -> set[str]:
        """The APIs the accepted dialogues call (searches left out): a corpus covers these, not every API its files
        define, since a domain's API that no accepted dialogue calls teaches nothing."""
        return {t.call.name for d in self.accepted for t in d.api_turns if t.call and t.call.name != SEARCHER}

    @property
    def total(self) -> int:
        """Dialogues judged."""
        return len(self.accepted) + len(self.rejected)

    @property
    def rejection_rate(self) -> float:
        """Share of judged dialogues rejected."""
        return len(self.rejected) / self.total if self.total else 0.0

    def counts(self) -> dict[str, Any]:
        """Files, domains, APIs, dialogues judged/accepted/rejected, by ability and by reason."""
        by_ability = Counter(d.ability for d in self.accepted)
        return {
            "files": len(self.files),
            "domains": len({f.domain for f in self.files}),
            "apis": len(self.schemas),
            "apis_called": len(self.called),
            "apis_rejected": len(self.api_rejections),
            "dialogues": self.total,
            "accepted": len(self.accepted),
            "rejected": len(self.rejected),
            "rejection_rate": round(self.rejection_rate, 4),
            "accepted_by_ability": {a: by_ability.get(a, 0) for a in ABILITIES},
            "rejected_by_reason": {r: n for r, n in sorted(Counter(x.reason for x in self.rejected).items())},
        }

    def table(self) -> Any:
        """Per-reason rejection counts as a DataFrame (reason, rejected, share of judged)."""
        import pandas as pd

        counts = Counter(x.reason for x in self.rejected)
        rows = [{"reason": r, "rejected": counts.get(r, 0), "share": counts.get(r, 0) / self.total if self.total else 0.0} for r in REASONS]
        return pd.DataFrame(rows)


# --- helpers ------------------------------------------------------------------------------------------


def text_words(text: str) -> list[str]:
    """The lower-case words and numbers of a text."""
    return _WORD.findall(text.lower())


def _shingles(text: str, n: int = 3) -> set[tuple[str, ...]]:
    w = text_words(text)
    return {tuple(w[i : i + n]) for i in range(max(1, len(w) - n + 1))}



def _fits(value: Any, type_name: str) -> bool:
    text = str(value).strip()
    if type_name == "int":
        return re.fullmatch(r"[-+]?\d+", text) is not None
    if type_name == "float":
        return re.fullmatch(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?", text) is not None
    if type_name == "bool":
        return text.lower() in {"true", "false"}
    return True


def _scalars(value: Any) -> Iterable[str]:
    """Every scalar inside a result, as text (keys excluded)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _scalars(v)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december")
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")


def date_in_words(value: str, words: set[str], low: str) -> bool:
    """An ISO date (``2023-05-24 ...``) written in words: ``May 24``, ``24 May``, ``May 24th``."""
    m = _ISO_DATE.match(value)
    if not m or not 1 <= int(m.group(2)) <= 12:
        return False
    month, day = _MONTHS[int(m.group(2)) - 1], str(int(m.group(3)))
    return month in words and re.search(rf"\b({month}\s+{day}(st|nd|rd|th)?|{day}(st|nd|rd|th)?\s+(of\s+)?{month})\b", low) is not None


def said_in(value: str, text: str) -> bool:
    """Whether ``text`` says ``value``: as written (case and spacing aside), or an ISO date in words."""
    low = " ".join(text.lower().split())
    v = " ".join(value.lower().split())
    return bool(v) and (v in low or date_in_words(value.strip(), set(text_words(low)), low))


def _grounded(reply: str, outputs: list[Any]) -> bool:
    """Whether the reply repeats a concrete value of the outputs (a number, a code, a name)."""
    low = reply.lower()
    low_words = set(text_words(reply))
    for out in outputs:
        for s in _scalars(out):
            s = s.strip()
            if len(s) < 2 and not s.isdigit():
                continue
            if s.lower() in low or date_in_words(s, low_words, low):
                return True
            if re.fullmatch(r"[-+]?\d+\.0+", s) and s.split(".")[0] in low_words:
                return True  # 157.0 written as 157
            words = [w for w in text_words(s) if len(w) > 3]
            if words and sum(w in low_words for w in words) >= max(1, len(words) // 2):
                return True
    return False


# --- schema checks -----------------------------------------------------------------------------------


def check_schema(schema: ToolSchema, evaluation_names: Iterable[str] = ()) -> str | None:
    """Why an API definition is unusable (None when it is fine)."""
    if not _CAMEL.match(schema.name):
        return f"API name {schema.name!r} is not CamelCase"
    if schema.name == SEARCHER:
        return "ToolSearcher is the shared search API and cannot be redefined"
    for ev in evaluation_names:
        if schema.name.lower() == ev.lower() or SequenceMatcher(None, schema.name.lower(), ev.lower()).ratio() >= 0.9:
            return f"API name {schema.name!r} copies the evaluation API {ev!r}"
    if not schema.description.strip():
        return f"{schema.name} has no description"
    for group in (schema.input_parameters, schema.output_parameters):
        for pname, p in group.items():
            if p.type.split("(")[0] not in _TYPES:
                return f"{schema.name}.{pname} has type {p.type!r}; use one of {sorted(_TYPES)}"
            if pname.lower() in _FORMAT_WORDS:
                return f"{schema.name}.{pname} is named after a word of the API format; name what the value is"
    return None


SHARED_INPUTS = 3
"""From how many APIs of one domain that take the same inputs they count as variations on one call.
Qwen2.5-Coder-1.5B often designs a domain that way (six painting APIs that all take ``description`` and ``image``;
five sailing APIs that take only ``location``), and its dialogues then differ in the API's name alone. In the 60
AI-written domains of our corpus (``data/train/corpus``) at most two APIs share their inputs."""


def shared_inputs(schemas: Iterable[ToolSchema]) -> list[tuple[list[str], tuple[str, ...]]]:
    """The groups of :data:`SHARED_INPUTS` or more APIs that take the same input names: (API names, the sorted
    input names), in the order of each group's first API."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for s in schemas:
        groups.setdefault(tuple(sorted(s.input_parameters)), []).append(s.name)
    return [(names, inputs) for inputs, names in groups.items() if len(names) >= SHARED_INPUTS]


NEAR_EVALUATION = 0.7
"""Cosine similarity, with the evaluation's embedding model, from which a new API counts as an evaluation API under
another name: of their search texts (the split name and the description, what the evaluation's search compares) or
of their split names alone. Measured on 2026-12-04 against the 75 evaluation APIs: the 360 AI-written APIs come at
most to 0.666 either way (search texts: ``CancelVetVisit`` and ``CancelRegistration``; names: ``CancelTimeOffRequest``
and ``CancelTimedSwitch``). Of the model-made ones, ``HotelBooking`` comes to 0.808 (``BookHotel``) by search text,
and to 0.807 by name when a wordier description brings its search text down to 0.661; ``GetWeatherForecast`` 0.718
(``GetWeatherForCoordinates``) by search text; ``UserInformation`` 0.737 (``AccountInfo``) by name."""


def evaluation_schemas() -> list[ToolSchema]:
    """The bundled evaluation benchmark's APIs (both tool sets, less the shared ``ToolSearcher``), by name."""
    from apibank_lib.env.tools.registry import toolset_for_level

    out: dict[str, ToolSchema] = {}
    for level in (1, 3):  # where both tool sets have an API, the level-1 one (AddMeeting, QueryMeeting, Calculator)
        for schema in toolset_for_level(level).schemas():
            if schema.name != SEARCHER:
                out.setdefault(schema.name, schema)
    return [out[n] for n in sorted(out)]


def near_evaluation(
    schemas: Iterable[ToolSchema],
    evaluation: Iterable[ToolSchema],
    *,
    threshold: float = NEAR_EVALUATION,
    embedder: Any = None,
) -> dict[str, tuple[str, float]]:
    """The APIs among ``schemas`` that are an ``evaluation`` API under another name: for each, the evaluation API
    closest to it and their cosine similarity, where that is at least ``threshold`` (:data:`NEAR_EVALUATION`) by
    search text or by name alone (the higher of the two is given).

    Names alone miss a copy renamed (``HotelBooking`` for ``BookHotel``); this compares what the evaluation's search
    compares, with the same embedding model (``embedder``, default the packaged one), and the names on their own, so
    that a long description does not hide a copied name.
    """
    from apibank_lib.retrieval.search import default_searcher, search_text, split_camel

    schemas, evaluation = list(schemas), list(evaluation)
    if not schemas or not evaluation:
        return {}
    by_text = default_searcher(evaluation, embedder)
    # An empty description leaves the split name as the search text.
    by_name = default_searcher([replace(e, description="") for e in evaluation], embedder)
    out: dict[str, tuple[str, float]] = {}
    for s in schemas:
        found = [
            by_text.search(search_text(s), k=1)[0],
            by_name.search(split_camel(s.name), k=1)[0],
        ]
        closest, score = max(found, key=lambda hit: hit[1])
        if score >= threshold:
            out[s.name] = (closest.name, round(score, 3))
    return out


def near_evaluation_message(name: str, closest: str, score: float) -> str:
    """Why :func:`near_evaluation` refuses an API, in the tester's words."""
    return f"{name} is the evaluation API {closest} under another name (similarity {score:.2f} >= {NEAR_EVALUATION})"


# --- dialogue checks ---------------------------------------------------------------------------------


def _check_turns(d: CorpusDialogue) -> str | None:
    if d.problem:
        return d.problem
    for i, t in enumerate(d.turns):
        if t.problem:
            return f"turn {i + 1}: {t.problem}"
    if d.ability != "plan_retrieve_call":
        if d.turns[0].role != "user":
            return "the first turn must be the user's"
        if d.turns[-1].role == "api":
            return "the dialogue ends on an API call; end with the assistant's reply"
    for i, t in enumerate(d.turns):
        if t.role == "ai" and _CALL_TEXT.search(t.text or ""):
            return f"turn {i + 1}: the assistant writes an API call as text; a call is an api turn"
    texts = [d.response or ""] if d.ability == "plan_retrieve_call" else []
    if any(_CALL_TEXT.search(x) for x in texts):
        return "the response writes an API call as text; a call is a step"
    return None


_API_WORD = re.compile(r"\b(call|calling|use|using|invoke|via|through|from)\s+(the\s+)?([\w-]+\s+){0,2}APIs?\b", re.IGNORECASE)
"""A user who dictates the means ("call the booking API"); "the API reference" is a topic and passes."""
_PLACEHOLDER_PERSON = re.compile(r"\b(john|jane)[ _]?doe\b", re.IGNORECASE)
_PLACEHOLDER_THING = re.compile(
    r"\b(?i:project|actor|teacher|student|person|user|customer|client|patient|employee|staff|member|contact|product"
    r"|item|company|location|facility|task|event|course|document|file|sample|boat|garden)\s+[A-H](?![\w'’-]|\.\w)"
    r"|(?i:\bpath/to/|\ba sample [a-z]+\b)"
)
"""A thing that holds a value's place in what the user says: a lettered stand-in (``Project A``, ``Actor B``: the
letter must be a capital, so "a project a day" passes), a documentation path (``path/to/image.jpg``), ``a sample
textile``. Found in the fourth generation's review (2026-12-04); a real ``Hall B`` or ``Terminal C`` is not a
generic noun and passes."""
_WORD_TOKEN = re.compile(r"\w+")


def _check_user_words(d: CorpusDialogue, schemas: dict[str, ToolSchema]) -> str | None:
    """The user asks for what they want in their own words: no user turn (or plan requirement) names an API or
    says "API" (a user who dictates the calls teaches nothing about choosing them), is a placeholder person
    (``John Doe``: a slot, not a user) or gives a placeholder thing (``Project A``, ``path/to/image.jpg``). Found in
    a model-made generation's review (2026-12-04)."""
    said = [(f"turn {i + 1}", t.text or "") for i, t in enumerate(d.turns) if t.role == "user"]
    said += [("the requirement", d.requirement or "")]
    for where, text in said:
        # An API name written as a word; CamelCase only, so that an API named like a plain word can be said.
        words = _WORD_TOKEN.findall(text)
        api = next((w for w in words if (w in schemas or w == SEARCHER) and sum(c.isupper() for c in w) >= 2), None)
        if api or _API_WORD.search(text):
            what = api or "an API"
            return f"{where}: the user names {what}; a user asks for what they want, and the assistant chooses the API"
        person = _PLACEHOLDER_PERSON.search(text)
        if person:
            return f"{where}: the user is a placeholder person ({person.group(0)!r}), not someone real"
        thing = _PLACEHOLDER_THING.search(text)
        if thing:
            return f"{where}: the user gives a placeholder ({thing.group(0)!r}) where a real value belongs"
    return None


def _said(d: CorpusDialogue) -> str:
    """What the user said, lower-cased: the turns of a dialogue, a plan's requirement."""
    said = [t.text or "" for t in d.turns if t.role == "user"] + [d.requirement or ""]
    return " ".join(said).lower()


def _check_calls(d: CorpusDialogue, schemas: dict[str, ToolSchema]) -> tuple[str, str] | None:
    said = _said(d)
    sources = said  # what the user said, then each result as it comes
    earlier: list[tuple[Any, Any]] = []  # the calls so far, with their results
    for i, t in enumerate(d.api_turns):
        call = t.call
        assert call is not None
        if call.name == SEARCHER:
            if set(call.args) != {"keywords"} or not str(call.args.get("keywords", "")).strip():
                return "parameters", f"call {i + 1}: ToolSearcher takes exactly one non-empty keywords argument"
            if t.has_output:
                return "result", f"call {i + 1}: leave ToolSearcher's output out; it is filled in from the retrieved API"
            for name in t.retrieves or ():
                if name not in schemas:
                    return "api", f"call {i + 1}: retrieves the undefined API {name}"
            continue
        schema = schemas.get(call.name)
        if schema is None:
            return "api", f"call {i + 1}: {call.name} is not defined in the corpus"
        unknown = [k for k in call.args if k not in schema.input_parameters]
        if unknown:
            return "parameters", f"call {i + 1}: {call.name} has no parameter {', '.join(unknown)}"
        missing = [k for k, p in schema.input_parameters.items() if p.required and k not in call.args]
        if missing:
            return "parameters", f"call {i + 1}: {call.name} misses the required {', '.join(missing)}"
        for k, v in call.args.items():
            if not _fits(v, schema.input_parameters[k].type):
                return "parameters", f"call {i + 1}: {call.name}.{k}={v!r} is not a {schema.input_parameters[k].type}"
            if "'" in str(v):
                return "format", f"call {i + 1}: {call.name}.{k} holds a single quote, which the call format cannot carry"
            text = str(v).strip()
            if (_PLACEHOLDER.search(text) and not said_in(text, said)) or _names_its_parameter(text, k):
                return "parameters", f"call {i + 1}: {call.name}.{k}={v!r} is a placeholder, not a value the user gave"
            if _invented(text, k, sources):
                return "parameters", f"call {i + 1}: {call.name}.{k}={v!r} is in neither the request nor an earlier result"
        if not t.has_output or t.output is None:
            return "result", f"call {i + 1}: {call.name} has no output"
        if isinstance(t.output, dict) and schema.output_parameters:
            extra = [k for k in t.output if k not in schema.output_parameters]
            if extra:
                return "result", f"call {i + 1}: {call.name}'s output has undeclared fields {', '.join(map(str, extra))}"
        sources += " " + " ".join(_scalars(t.output))
        broken = _chain_broken(call, earlier)
        if broken:
            return "parameters", f"call {i + 1}: {broken}"
        earlier.append((call, t.output))
    return None


def _chain_broken(call: Any, earlier: list[tuple[Any, Any]]) -> str | None:
    """Why ``call`` ignores an earlier call's result: it passes an input the value that input had in an earlier
    call whose result gave that same field a new value (resizing the original image, not the cropped one the
    crop returned). None when it does not."""
    for before, output in earlier:
        if not isinstance(output, dict):
            continue
        for name, value in call.args.items():
            old, new = before.args.get(name), output.get(name)
            if old is None or new is None or isinstance(new, (dict, list, bool)):
                continue
            if str(value).strip() == str(old).strip() and str(new).strip() != str(old).strip():
                return f"{call.name}.{name}={value!r} is what {before.name} took, not the {new!r} it returned"
    return None


def _check_grounding(d: CorpusDialogue) -> str | None:
    if d.ability == "plan_retrieve_call":
        outputs = [t.output for t in d.api_turns if t.call and t.call.name != SEARCHER]
        if not _grounded(d.response or "", outputs):
            return "the response repeats no value of the API results"
        return None
    # Replies in the middle may just acknowledge ("You're signed in."); the
    # reply that closes the dialogue's last API results must use them.
    pending: list[Any] = []
    last: tuple[int, str, list[Any]] | None = None
    for i, t in enumerate(d.turns):
        if t.role == "api":
            if t.call and t.call.name != SEARCHER:
                pending.append(t.output)
        elif t.role == "ai" and pending:
            last = (i, t.text, pending)
            pending = []
    if last is not None and not _grounded(last[1], last[2]):
        return f"turn {last[0] + 1}: the reply after the last API results repeats none of their values"
    return None


def _check_shape(d: CorpusDialogue) -> str | None:
    calls = [t for t in d.api_turns if t.call is not None]
    names = [t.call.name for t in calls]  # type: ignore[union-attr]
    real = [n for n in names if n != SEARCHER]
    if not real:
        return "no API call besides searches"
    if d.ability == "call":
        if SEARCHER in names:
            return "a call dialogue describes its APIs: it must not search"
        return None
    seen: set[str] = set()
    retrieved: set[str] = set()
    for i, t in enumerate(calls):
        assert t.call is not None
        name = t.call.name
        if name == SEARCHER:
            keywords = str(t.call.args.get("keywords", ""))
            following = next((c.call.name for c in calls[i + 1 :] if c.call and c.call.name != SEARCHER), None)
            if following is None:
                return f"search {keywords!r} is not followed by a call"
            found = t.retrieves or [following]
            if following not in found:
                return f"search {keywords!r} retrieves {found} but {following} is called next"
            for n in found:
                if n.lower() in keywords.lower():
                    return f"search keywords {keywords!r} contain the API's name; describe the need instead"
            retrieved.update(found)
        else:
            if name not in seen and name not in retrieved:
                return f"{name} is called before any search retrieves it"
            seen.add(name)
    if d.ability == "plan_retrieve_call" and len(real) < 2:
        return "a plan needs at least two retrieved calls"
    return None


def check_dialogue(d: CorpusDialogue, schemas: dict[str, ToolSchema]) -> tuple[str, str] | None:
    """Judge one dialogue against the format, API, parameter, result, grounding and shape rules.

    Returns ``(reason, message)`` for the first rule broken, or None when accepted.
    Duplicates are judged across dialogues by :func:`check_corpus`.
    """
    problem = _check_turns(d) or _check_user_words(d, schemas)
    if problem:
        return "format", problem
    bad = _check_calls(d, schemas)
    if bad:
        return bad
    problem = _check_grounding(d)
    if problem:
        return "grounding", problem
    problem = _check_shape(d)
    if problem:
        return "shape", problem
    return None


def opening(d: CorpusDialogue) -> str:
    """A dialogue's request: its first user turn (a plan's requirement)."""
    if d.ability == "plan_retrieve_call":
        return d.requirement or ""
    return next((t.text for t in d.turns if t.role == "user"), "")


def evaluation_texts() -> tuple[list[str], list[str]]:
    """The bundled evaluation benchmark's API names and its requests (first user turns, level-3 requirements)."""
    from apibank_lib.core.types import Utterance
    from apibank_lib.data.datasets import load_benchmark
    from apibank_lib.env.tools.registry import toolset_for_level

    names = sorted(set(toolset_for_level(1)) | set(toolset_for_level(3)))
    bench = load_benchmark()
    texts = [next((t.text for t in d.turns if isinstance(t, Utterance) and t.role == "User"), "") for d in bench.level1 + bench.level2]
    texts += [item.requirement for item in bench.level3]
    return names, [t for t in texts if t]


def check_corpus(
    paths: str | Path | Iterable[str | Path],
    *,
    evaluation_names: Iterable[str] | None = None,
    evaluation_requests: Iterable[str] | None = None,
    evaluation: Iterable[ToolSchema] | None = None,
    near_duplicate: float = 0.6,
    embedder: Any = None,
) -> CheckReport:
    """Judge every dialogue of the corpus files at ``paths`` (files or folders).

    Args:
        paths: corpus files or folders of them.
        evaluation_names / evaluation_requests: what the corpus must stay apart
            from; default: the bundled evaluation benchmark's API names and requests.
        evaluation: the evaluation APIs no API may be under another name (:func:`near_evaluation`); default: the
            bundled benchmark's when ``evaluation_names`` is left to its default, else none.
        near_duplicate: word-trigram Jaccard similarity from which two requests
            count as the same.
        embedder: the embedding model of :func:`near_evaluation` (default the packaged one).
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files = [read_corpus_file(p) for root in paths for p in corpus_files(root)]
    default_names = evaluation_names is None
    if evaluation_names is None or evaluation_requests is None:
        names, requests = evaluation_texts()
        evaluation_names = names if evaluation_names is None else evaluation_names
        evaluation_requests = requests if evaluation_requests is None else evaluation_requests
    if evaluation is None:
        evaluation = evaluation_schemas() if default_names else []
    evaluation = list(evaluation)
    eval_names = list(evaluation_names)
    eval_shingles = [_shingles(t) for t in evaluation_requests]
    report = CheckReport(files=files)
    defined: dict[str, tuple[str, ToolSchema]] = {}  # name -> the file that defines it first, and how
    for f in files:
        for name, why in f.api_problems.items():
            report.api_rejections.append(Rejection(f.path, name, "api", why))
        for name in list(f.schemas):
            why = check_schema(f.schemas[name], eval_names)
            # The same definition in two files is one API: generations that share a domain's APIs, judged
            # together. Two different ones would have one file's dialogues judged against the other's.
            if why is None and name in defined and defined[name][1] != f.schemas[name]:
                why = f"{name} is also defined, differently, in {defined[name][0]}"
            if why:
                report.api_rejections.append(Rejection(f.path, name, "api", why))
                del f.schemas[name]
            else:
                defined.setdefault(name, (f.path, f.schemas[name]))
        for name, (closest, score) in near_evaluation(f.schemas.values(), evaluation, embedder=embedder).items():
            report.api_rejections.append(Rejection(f.path, name, "api", near_evaluation_message(name, closest, score)))
            del f.schemas[name]
            if defined[name][0] == f.path:
                del defined[name]
        for names, inputs in shared_inputs(f.schemas.values()):
            why = f"one of {len(names)} APIs of this domain that take the same inputs ({', '.join(inputs) or 'none'}): {', '.join(names)}"
            for name in names:
                report.api_rejections.append(Rejection(f.path, name, "api", why))
                del f.schemas[name]
    all_schemas = report.schemas
    ids: set[str] = set()
    openings: list[tuple[set[tuple[str, ...]], str]] = []
    for f in files:
        for d in f.dialogues:
            verdict = check_dialogue(d, all_schemas)
            if verdict is None:
                verdict = _duplicate(d, ids, openings, eval_shingles, near_duplicate)
            if verdict is not None:
                report.rejected.append(Rejection(d.where, d.id, *verdict))
                continue
            ids.add(d.id)
            openings.append((_shingles(opening(d)), d.id))
            report.accepted.append(d)
    return report


def _jaccard(a: set[Any], b: set[Any]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _duplicate(
    d: CorpusDialogue,
    ids: set[str],
    openings: list[tuple[set[tuple[str, ...]], str]],
    eval_shingles: list[set[tuple[str, ...]]],
    threshold: float,
) -> tuple[str, str] | None:
    if d.id in ids:
        return "duplicate", f"the id {d.id} is used twice"
    sh = _shingles(opening(d))
    for other, oid in openings:
        if _jaccard(sh, other) >= threshold:
            return "duplicate", f"its request nearly repeats {oid}'s"
    for ev in eval_shingles:
        if _jaccard(sh, ev) >= threshold:
            return "duplicate", "its request nearly repeats one of the evaluation benchmark"
    return None


def check_retrieval(report: CheckReport, *, embedder: Any = None) -> Any:
    """Whether each search of the accepted dialogues retrieves its API with the real ToolSearcher.

    The tester itself assumes a search retrieves the API called next; this runs
    the evaluation's embedding search (all-MiniLM-L6-v2 over each API's name and
    description) over every API of the corpus and checks that assumption.

    Returns:
        A DataFrame, one row per search: dialogue id, ability, keywords, the
        intended API, the API ranked first, and whether they agree (``hit``).
    """
    import pandas as pd

    from apibank_lib.retrieval.search import default_searcher

    schemas = report.schemas
    index = default_searcher(list(schemas.values()), embedder)
    rows = []
    for d in report.accepted:
        turns = [t for t in d.api_turns if t.call is not None]
        for i, t in enumerate(turns):
            if t.call.name != SEARCHER:  # type: ignore[union-attr]
                continue
            intended = t.retrieves or [next(c.call.name for c in turns[i + 1 :] if c.call and c.call.name != SEARCHER)]  # type: ignore[union-attr]
            keywords = str(t.call.args.get("keywords", ""))  # type: ignore[union-attr]
            top = index.search(keywords, k=1)[0][0].name
            rows.append({"dialogue": d.id, "ability": d.ability, "keywords": keywords, "intended": intended[0], "retrieved": top, "hit": top in intended})
    return pd.DataFrame(rows)

