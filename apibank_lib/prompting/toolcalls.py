"""Read the tool calls that real chat models write into :class:`~apibank_lib.core.types.ApiCall` values.

Chat models call tools in a handful of house styles. :func:`parse_tool_calls` reads all of them:

* ``openai``: the structured tool calls a chat-completions server returns next to the message text
  (``{"function": {"name": ..., "arguments": "<JSON text>"}}``); when given, they win over the text.
* ``hermes`` (Qwen 2.5, Hermes): ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks.
* ``llama3``: ``{"name": ..., "parameters": {...}}`` objects, with or without ``<|python_tag|>`` before them.
* ``mistral``: ``[TOOL_CALLS]`` before a JSON list of calls, one object, or ``name[ARGS]{...}``.
* ``paper``: API-Bank's own ``[ApiName(key='value')]`` syntax, read by :func:`apibank_lib.core.calls.parse_calls`.
* ``json``: bare JSON call objects a model improvised: alone, in a list, one after another, in a Markdown
  fence, after prose.

Detection goes from the least ambiguous evidence to the most: the three markers (``[TOOL_CALLS]``,
``<tool_call>``, ``<|python_tag|>``), then JSON objects that carry a name and arguments, then the paper syntax.
Untagged JSON is labelled ``llama3`` when it looks exactly like Llama 3's JSON tool calling (nothing but the
objects, ``;`` or whitespace between them, ``"parameters"`` as the key) and ``json`` otherwise.

Reading is strict and never raises: calls are read in order and reading stops at the first attempt that
cannot be read. Its problem goes into :attr:`ParsedAnswer.error` (the format, the call's number, what is
wrong and the character offset in the text), and the calls read before it are kept. A grader that grades the
first call should therefore look at ``error`` only when ``calls`` is empty: a readable first call is graded
even if a later one is broken.

JSON is decoded with :meth:`json.JSONDecoder.raw_decode` at each place a call can start, and the text after a
decoded object is never decoded again, so the cost stays linear in the length of the answer.
"""

from __future__ import annotations

import json
import re
import reprlib
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apibank_lib.core.calls import format_call, parse_calls
from apibank_lib.core.errors import ParseError
from apibank_lib.core.types import ApiCall
from apibank_lib.env.protocols import PAPER

__all__ = ["FORMATS", "ParsedAnswer", "parse_tool_calls", "render_tool_call", "structured_tool_call"]

# The paper's call syntax shares its name with the grading protocol that reproduces the paper. Protocol names
# are string constants only in apibank_lib.env.protocols (tests/test_architecture.py checks it), so the format's
# name is taken from the protocol rather than spelled out a second time.
_PAPER = PAPER.name

FORMATS: tuple[str, ...] = ("openai", "hermes", "llama3", "mistral", _PAPER, "json")
"""The formats :func:`parse_tool_calls` reads, as :attr:`ParsedAnswer.format` names them."""

_HERMES_OPEN = "<tool_call>"
_HERMES_CLOSE = "</tool_call>"
_PYTHON_TAG = "<|python_tag|>"
_MISTRAL_TAG = "[TOOL_CALLS]"
_WS = " \t\r\n"
_EXCERPT_CHARS = 60

_DECODER = json.JSONDecoder()
_EXCERPT = reprlib.Repr()
_EXCERPT.maxstring = _EXCERPT.maxother = _EXCERPT_CHARS

# Where an untagged JSON call can start: an object whose first key is one a call object carries. Other JSON
# (a list of numbers, {"answer": ...}) is never decoded, which keeps prose with braces cheap to scan.
_JSON_CALL_START = re.compile(r'\{\s*"(?:name|arguments|parameters)"\s*:')

# Mistral's newer form: [TOOL_CALLS]name[ARGS]{...}, some versions with [CALL_ID]id before [ARGS].
_MISTRAL_NAMED = re.compile(r"\s*([^\s\[\]{}\"]+)\s*(?:\[CALL_ID\][^\[]*)?\[ARGS\]")


@dataclass(frozen=True)
class ParsedAnswer:
    """What a model's answer holds in tool calls.

    Attributes:
        calls: every call read, in order of appearance (those before an unreadable one, when there is one).
        format: the format the calls (or the unreadable attempt) were written in, one of :data:`FORMATS`;
            None when the answer holds no call attempt.
        error: why a call attempt could not be read, naming the format, the call's number and the character
            offset; None when every attempt was read or there was none. Graders grade ``first`` when there is
            one, so ``error`` matters only when ``calls`` is empty.
        text: the text that was parsed (for structured calls, the message content).
    """

    calls: tuple[ApiCall, ...]
    format: str | None
    error: str | None
    text: str

    @property
    def first(self) -> ApiCall | None:
        """The call that is graded (the paper grades one call per sample), or None."""
        return self.calls[0] if self.calls else None

    @property
    def n_calls(self) -> int:
        """How many calls were read."""
        return len(self.calls)

    @property
    def failure(self) -> str | None:
        """Why there is no call to grade: the error when no call could be read (a later unreadable call does not
        stop the first from being graded)."""
        return None if self.calls else self.error


class _Unreadable(Exception):
    """One call attempt that cannot be read: what is wrong, where (a character offset), and details."""

    def __init__(self, what: str, pos: int | None = None, detail: str | None = None, name: str | None = None):
        super().__init__(what)
        self.what = what
        self.pos = pos
        self.detail = detail
        self.name = name


# --- small helpers ----------------------------------------------------------------------------------------------


def _message(fmt: str, number: int, problem: _Unreadable) -> str:
    """The error text: ``"hermes tool call 1: invalid JSON at offset 17: Expecting ',' delimiter"``."""
    who = f"{fmt} tool call {number}" + (f" ({problem.name!r})" if problem.name else "")
    where = "" if problem.pos is None else f" at offset {problem.pos}"
    detail = f": {problem.detail}" if problem.detail else ""
    return f"{who}: {problem.what}{where}{detail}"


def _excerpt(value: Any) -> str:
    """A short, printable piece of a value for error messages (never the whole of a huge answer)."""
    if isinstance(value, str):
        return repr(value[:_EXCERPT_CHARS] + ("..." if len(value) > _EXCERPT_CHARS else ""))
    return _EXCERPT.repr(value)


def _kind(value: Any) -> str:
    """A value's JSON kind in words, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def _decode_at(text: str, pos: int) -> tuple[Any, int]:
    """Decode the JSON value that starts at ``pos``; return it and the offset just after it."""
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise _Unreadable("invalid JSON", exc.pos, exc.msg) from None
    except RecursionError:
        raise _Unreadable("invalid JSON", pos, "nested too deeply") from None
    except ValueError as exc:  # Python refuses integers of more than 4300 digits
        raise _Unreadable("invalid JSON", pos, str(exc).split(":")[0]) from None


def _arguments(value: Any) -> dict[str, Any]:
    """A call's arguments as a dict, from an object, a JSON text holding one, or nothing (null or "").

    Servers and models both send arguments as JSON text at times, so a string is decoded once; what it
    holds must be an object.
    """
    if value is None:
        return {}
    if isinstance(value, str):
        start = _skip_ws(value, 0)
        if start == len(value):
            return {}
        try:
            decoded, end = _decode_at(value, start)
        except _Unreadable as problem:
            raise _Unreadable(
                "bad arguments",
                None,
                f"{problem.what} at offset {problem.pos}: {problem.detail}; got {_excerpt(value)}",
            ) from None
        if _skip_ws(value, end) != len(value):
            raise _Unreadable("bad arguments", None, f"text after the JSON at offset {end}; got {_excerpt(value)}")
        if not isinstance(decoded, Mapping):
            raise _Unreadable(
                "bad arguments", None, f"expected an object, got {_kind(decoded)} in a string: {_excerpt(value)}"
            )
        return dict(decoded)
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise _Unreadable("bad arguments", None, f"argument names must be strings; got {_excerpt(value)}")
        return dict(value)
    raise _Unreadable("bad arguments", None, f"expected an object, got {_kind(value)}: {_excerpt(value)}")


def _call_from_object(obj: Any, pos: int | None) -> ApiCall:
    """Turn one decoded call object into a call; problems are reported at ``pos`` (where the object starts).

    ``"parameters"`` (Llama 3) is read like ``"arguments"``. An object with a name and nothing else is a call
    without arguments; one with other keys but neither of those is refused rather than silently emptied.
    """
    if not isinstance(obj, Mapping):
        raise _Unreadable("not a call object", pos, f"expected a JSON object, got {_kind(obj)}")
    if "name" not in obj:
        raise _Unreadable("bad name", pos, f'the object has no "name"; got {_excerpt(obj)}')
    name = obj["name"]
    if not isinstance(name, str) or not name.strip():
        raise _Unreadable("bad name", pos, f"expected a non-empty string, got {_kind(name)}: {_excerpt(name)}")
    name = name.strip()
    key = "arguments" if "arguments" in obj else "parameters"
    if key not in obj and len(obj) > 1:
        keys = ", ".join(repr(k) for k in list(obj)[:6])
        raise _Unreadable("bad arguments", pos, f'no "arguments" or "parameters" (keys: {keys})', name)
    try:
        return ApiCall(name, _arguments(obj.get(key)))
    except _Unreadable as problem:
        raise _Unreadable(problem.what, pos, problem.detail, name) from None


def _is_call_attempt(obj: Any) -> bool:
    """Untagged JSON counts as a call attempt only when it has both a name and arguments."""
    return isinstance(obj, dict) and "name" in obj and ("arguments" in obj or "parameters" in obj)


def _next_at_or_after(positions: list[int], pos: int) -> int | None:
    i = bisect_left(positions, pos)
    return positions[i] if i < len(positions) else None


# --- one reader per format ----------------------------------------------------------------------------------------

_Read = tuple[list[ApiCall], str | None]
"""What a reader returns: the calls read, and the error of the attempt that stopped it (or None)."""


def _read_structured(structured: Any) -> _Read:
    """Read the tool calls a chat-completions server returned (``message.tool_calls``)."""
    if isinstance(structured, Mapping):  # one call given on its own rather than in a list
        structured = [structured]
    if isinstance(structured, (str, bytes)) or not isinstance(structured, Sequence):
        return [], _message("openai", 1, _Unreadable("expected a list of tool calls", None, _excerpt(structured)))
    calls: list[ApiCall] = []
    for number, item in enumerate(structured, 1):
        try:
            calls.append(_structured_call(item))
        except _Unreadable as problem:
            return calls, _message("openai", number, problem)
    return calls, None


def _structured_call(item: Any) -> ApiCall:
    if not isinstance(item, Mapping):
        raise _Unreadable("not a call object", None, f"expected an object, got {_kind(item)}: {_excerpt(item)}")
    function = item.get("function")
    fields = function if isinstance(function, Mapping) else item  # chat-completions nest the call under "function"
    name = fields.get("name")
    if not isinstance(name, str) or not name.strip():
        what = "missing" if name is None else f"expected a non-empty string, got {_kind(name)}: {_excerpt(name)}"
        raise _Unreadable("bad name", None, f"{what}; got {_excerpt(dict(item))}")
    raw = fields["arguments"] if "arguments" in fields else fields.get("parameters")
    try:
        return ApiCall(name.strip(), _arguments(raw))
    except _Unreadable as problem:
        problem.name = name.strip()
        raise


def _read_hermes(text: str) -> _Read:
    """Read ``<tool_call>`` blocks; a block never closed is still read when its JSON object is complete."""
    opens = [m.start() for m in re.finditer(re.escape(_HERMES_OPEN), text)]
    closes = [m.start() for m in re.finditer(re.escape(_HERMES_CLOSE), text)]
    calls: list[ApiCall] = []
    pos = 0
    for start in opens:
        if start < pos:  # an opening tag inside a block already read (in one of its string values)
            continue
        try:
            call, pos = _read_hermes_block(text, start + len(_HERMES_OPEN), opens, closes)
        except _Unreadable as problem:
            return calls, _message("hermes", len(calls) + 1, problem)
        calls.append(call)
    return calls, None


def _read_hermes_block(text: str, pos: int, opens: list[int], closes: list[int]) -> tuple[ApiCall, int]:
    body = _skip_ws(text, pos)
    if body == len(text) or text.startswith(_HERMES_CLOSE, body) or text.startswith(_HERMES_OPEN, body):
        raise _Unreadable("empty block", body)
    # The JSON is decoded in the whole text, not in the text up to "</tool_call>": a value may contain the tag.
    obj, end = _decode_at(text, body)
    call = _call_from_object(obj, body)
    after = _skip_ws(text, end)
    if text.startswith(_HERMES_CLOSE, after):
        return call, after + len(_HERMES_CLOSE)
    # Not closed right after the object. A block whose closing tag never comes (the generation hit its token
    # limit or ended the turn) is fine; text between the object and its closing tag (an extra "}") means the
    # object is not all that was written, so it is refused.
    close = _next_at_or_after(closes, after)
    following = _next_at_or_after(opens, after)
    if close is not None and (following is None or close < following):
        raise _Unreadable("unexpected text after the JSON object", after, _excerpt(text[after:close]))
    return call, end


def _read_llama3(text: str) -> _Read:
    """Read the JSON objects after ``<|python_tag|>``, separated by ``;`` or whitespace."""
    pos = text.find(_PYTHON_TAG) + len(_PYTHON_TAG)
    calls: list[ApiCall] = []
    while True:
        pos = _skip_separators(text, pos)
        if pos >= len(text) or text[pos] != "{":
            break  # the end, an end-of-message token, or prose after the calls
        try:
            obj, end = _decode_at(text, pos)
            calls.append(_call_from_object(obj, pos))
        except _Unreadable as problem:
            return calls, _message("llama3", len(calls) + 1, problem)
        pos = end
    if not calls:
        problem = _Unreadable(f"expected a JSON object after {_PYTHON_TAG}", pos, _excerpt(text[pos:]))
        return [], _message("llama3", 1, problem)
    return calls, None


def _skip_separators(text: str, pos: int) -> int:
    while True:
        while pos < len(text) and (text[pos] in _WS or text[pos] == ";"):
            pos += 1
        if not text.startswith(_PYTHON_TAG, pos):
            return pos
        pos += len(_PYTHON_TAG)


def _read_mistral(text: str) -> _Read:
    """Read what follows each ``[TOOL_CALLS]``: a JSON list of calls, one object, or ``name[ARGS]{...}``."""
    calls: list[ApiCall] = []
    pos = 0
    for tag in re.finditer(re.escape(_MISTRAL_TAG), text):
        if tag.start() < pos:  # inside calls already read
            continue
        try:
            pos = _read_mistral_calls(text, tag.end(), calls)
        except _Unreadable as problem:
            return calls, _message("mistral", len(calls) + 1, problem)
    return calls, None


def _read_mistral_calls(text: str, pos: int, calls: list[ApiCall]) -> int:
    """Append the calls after one ``[TOOL_CALLS]`` to ``calls``; return where they end."""
    pos = _skip_ws(text, pos)
    if text.startswith("[", pos):
        return _read_mistral_list(text, pos + 1, calls)
    if text.startswith("{", pos):
        obj, end = _decode_at(text, pos)
        calls.append(_call_from_object(obj, pos))
        return end
    named = _MISTRAL_NAMED.match(text, pos)
    if named:
        body = _skip_ws(text, named.end())
        args, end = _decode_at(text, body)
        calls.append(_call_from_object({"name": named.group(1), "arguments": args}, body))
        return end
    raise _Unreadable(f"expected a JSON list, an object or name[ARGS] after {_MISTRAL_TAG}", pos, _excerpt(text[pos:]))


def _read_mistral_list(text: str, pos: int, calls: list[ApiCall]) -> int:
    """Read the elements of a JSON list one by one, so that each call gets its own number in errors."""
    count = 0
    while True:
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == "]" and count:
            return pos + 1
        if pos >= len(text) and count:
            return pos  # the list was cut off after a complete call (token limit): keep what was read
        if count:
            if text[pos] != ",":
                raise _Unreadable("expected ',' or ']' between the calls", pos, _excerpt(text[pos:]))
            pos = _skip_ws(text, pos + 1)
        elif pos >= len(text) or text[pos] == "]":
            raise _Unreadable("empty list", pos)
        obj, end = _decode_at(text, pos)
        calls.append(_call_from_object(obj, pos))
        count += 1
        pos = end


@dataclass
class _JsonScan:
    """The untagged JSON calls of a text, where they lie, and what stopped the scan."""

    calls: list[ApiCall]
    spans: list[tuple[int, int]]
    problem: _Unreadable | None = None
    first_says_parameters: bool = False


def _scan_json(text: str) -> _JsonScan:
    """Find the untagged JSON call objects of a text, in order."""
    scan = _JsonScan([], [])
    pos = 0
    while (m := _JSON_CALL_START.search(text, pos)) is not None:
        # A doubled "{{" (a prompt template's escaping copied into the answer) is decoded from its first brace,
        # so that it fails as written instead of passing as the object inside it.
        back = m.start()
        while back > pos and text[back - 1] in "{" + _WS:
            back -= 1
        start = text.index("{", back)
        try:
            obj, end = _decode_at(text, start)
            if not _is_call_attempt(obj):
                pos = end  # some other JSON; what is inside it is not looked at again
                continue
            scan.calls.append(_call_from_object(obj, start))
        except _Unreadable as problem:
            # A broken object that starts like a call is an attempt; nothing after it is read, which also keeps
            # an adversarial text from being decoded again and again.
            scan.problem = problem
            return scan
        if len(scan.calls) == 1:
            scan.first_says_parameters = "arguments" not in obj
        scan.spans.append((start, end))
        pos = end
    return scan


def _bare_json_format(text: str, scan: _JsonScan) -> str:
    """Llama 3's JSON tool calling writes the objects and nothing else, with "parameters"; the rest is "json"."""
    if not scan.spans or not scan.first_says_parameters:
        return "json"
    edges = [0] + [p for span in scan.spans for p in span] + [len(text)]
    gaps = (text[edges[i] : edges[i + 1]] for i in range(0, len(edges), 2))
    return "llama3" if all(not gap.strip(_WS + ";") for gap in gaps) else "json"


_PAPER_START = re.compile(r"\[\s*[A-Za-z_]\w*\s*\(")
"""An opening of the paper syntax, as :func:`apibank_lib.core.calls.parse_calls` finds them."""


def _read_paper(text: str) -> _Read:
    """Read ``[ApiName(key='value')]`` calls with the project's parser."""
    try:
        return parse_calls(text), None
    except ParseError as exc:
        kept = _paper_calls_before(text, exc.position)
        return kept, f"{_PAPER} tool call {len(kept) + 1}: {exc.reason} at offset {exc.position}"


def _paper_calls_before(text: str, position: int) -> list[ApiCall]:
    """The calls before the one that failed at ``position``.

    The parser does not say where the failing call starts, so the text is cut at the last few call openings
    before the failure; the first cut that parses holds exactly the earlier calls (a cut inside the failing
    call leaves it open and fails). A few tries at most keep this linear.
    """
    starts = [m.start() for m in _PAPER_START.finditer(text, 0, position + 1)]
    for start in reversed(starts[-3:]):
        try:
            return parse_calls(text[:start])
        except ParseError:
            continue
    return []


# --- public API ---------------------------------------------------------------------------------------------------


def parse_tool_calls(text: str, structured: Sequence[Mapping[str, Any]] | None = None) -> ParsedAnswer:
    """Read the tool calls of a model's answer, in whichever of :data:`FORMATS` it wrote them.

    Args:
        text: the answer's text (the message content). None is read as "" (servers send a null content next
            to structured tool calls).
        structured: the tool calls a chat-completions server returned, each ``{"id", "type", "function":
            {"name", "arguments"}}`` or ``{"name", "arguments"}``, arguments as JSON text or an object. When
            non-empty they are read instead of the text.

    Returns:
        The calls in order of appearance, the format, and the reason the first unreadable attempt could not be
        read (calls before it are kept; reading stops there). Text without any call attempt gives no calls, no
        format and no error. Never raises.
    """
    if text is None:
        text = ""
    if not isinstance(text, str):
        return ParsedAnswer((), None, f"expected text, got {type(text).__name__}", "")
    if structured:
        return _answer(text, "openai", _read_structured(structured))
    # The markers first: they cannot be mistaken for anything else.
    if _MISTRAL_TAG in text:
        return _answer(text, "mistral", _read_mistral(text))
    if _HERMES_OPEN in text:
        return _answer(text, "hermes", _read_hermes(text))
    if _PYTHON_TAG in text:
        return _answer(text, "llama3", _read_llama3(text))
    scan = _scan_json(text)
    if scan.calls or scan.problem is not None:
        error = None if scan.problem is None else _message("json", len(scan.calls) + 1, scan.problem)
        return _answer(text, _bare_json_format(text, scan), (scan.calls, error))
    return _answer(text, _PAPER, _read_paper(text))


def _answer(text: str, fmt: str, read: _Read) -> ParsedAnswer:
    calls, error = read
    if not calls and error is None:
        return ParsedAnswer((), None, None, text)
    return ParsedAnswer(tuple(calls), fmt, error, text)


def render_tool_call(call: ApiCall, fmt: str) -> str:
    """Write one call the way a model does in a text format (the inverse of :func:`parse_tool_calls`).

    Args:
        call: the call.
        fmt: one of :data:`FORMATS` other than ``"openai"``.

    Returns:
        The call's text, JSON written with ``ensure_ascii=False``.

    Raises:
        ValueError: ``fmt`` is ``"openai"`` (use :func:`structured_tool_call`) or unknown, or a value cannot be
            written in the format.
    """
    if fmt == "openai":
        raise ValueError("openai tool calls are structured, not text: use structured_tool_call()")
    if fmt == _PAPER:
        return format_call(call)
    if fmt == "hermes":
        return f"{_HERMES_OPEN}\n{_dumps({'name': call.name, 'arguments': call.args})}\n{_HERMES_CLOSE}"
    if fmt == "llama3":
        return _PYTHON_TAG + _dumps({"name": call.name, "parameters": call.args})
    if fmt == "mistral":
        return _MISTRAL_TAG + _dumps([{"name": call.name, "arguments": call.args}])
    if fmt == "json":
        return _dumps({"name": call.name, "arguments": call.args})
    raise ValueError(f"unknown tool-call format {fmt!r}; expected one of: {', '.join(FORMATS)}")


def structured_tool_call(call: ApiCall, call_id: str = "call_0") -> dict[str, Any]:
    """One call in the shape a chat-completions server returns it, arguments as JSON text.

    Args:
        call: the call.
        call_id: the tool call's id.

    Returns:
        ``{"id": call_id, "type": "function", "function": {"name": ..., "arguments": "<JSON>"}}``.

    Raises:
        ValueError: an argument value cannot be written as JSON.
    """
    return {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": _dumps(call.args)}}


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cannot write the call as JSON: {exc}") from exc
