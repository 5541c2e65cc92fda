"""Parse and format API-call text: ``[Name(key='value', ...)]``.

Two parsers live here:

* :func:`parse_calls` is ours: a small recursive-descent parser for Python-style
  keyword arguments whose values are literals (strings with escapes, numbers,
  booleans, None, lists, tuples, dicts). It never uses ``eval``/``exec``, bounds
  nesting depth, runs in linear time, and raises :class:`ParseError` saying why
  a call-looking text cannot be read. One leniency serves real data: at the top
  level of an argument, a quote only closes the string when a call delimiter
  follows (``, key=`` or ``)]``), so ``content='Don't forget'`` and the official
  rendering of list values, ``attendees='['Ann', 'Bo']'``, parse faithfully.
* :func:`parse_call_paper` reproduces the original evaluator's regular
  expressions, weaknesses included, for the ``paper`` grading protocol.

:func:`format_call` is the exact inverse of :func:`parse_calls` for well-formed
calls; :func:`format_call_paper` renders a call the way the original data does.
"""

from __future__ import annotations

import math
import re
from typing import Any

from apibank_lib.core.errors import ParseError
from apibank_lib.core.types import ApiCall

__all__ = [
    "parse_calls",
    "parse_first_call",
    "parse_literal",
    "format_call",
    "format_value",
    "format_call_paper",
    "parse_call_paper",
    "looks_like_call_attempt",
]

MAX_DEPTH = 40
"""Deepest nesting of lists/dicts accepted in a value (deeper input is a ParseError, not a crash)."""

_CALL_START = re.compile(r"\[\s*([A-Za-z_]\w*)\s*\(")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_WS = " \t\r\n"
_CONSTANTS = {"True": True, "False": False, "None": None, "true": True, "false": False, "null": None}
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
_DELIMITERS = set(_WS) | set(",)]}:")


class _Parser:
    """Recursive-descent reader over one text; positions are absolute offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)

    def error(self, reason: str, pos: int) -> ParseError:
        return ParseError(reason, pos, self.text)

    def skip_ws(self, pos: int) -> int:
        while pos < self.n and self.text[pos] in _WS:
            pos += 1
        return pos

    # --- call structure -------------------------------------------------------------------------

    def parse_arguments(self, pos: int, name: str) -> tuple[dict[str, Any], int]:
        """Read ``key=value, ...)]`` starting after the opening parenthesis."""
        args: dict[str, Any] = {}
        pos = self.skip_ws(pos)
        while True:
            if pos >= self.n:
                raise self.error(f"call {name}( is not closed with ')]'", pos)
            if self.text[pos] == ")":
                end = self.skip_ws(pos + 1)
                if end < self.n and self.text[end] == "]":
                    return args, end + 1
                raise self.error(f"call {name}(...) must end with ')]'", end)
            m = _IDENT.match(self.text, pos)
            after = self.skip_ws(m.end()) if m else pos
            if not m or after >= self.n or self.text[after] != "=" or self.text.startswith("==", after):
                raise self.error(f"expected key=value in the arguments of {name}", pos)
            key = m.group(0)
            if key in args:
                raise self.error(f"argument {key!r} is given twice", pos)
            value, pos = self.parse_value(self.skip_ws(after + 1), depth=0, top=True)
            args[key] = value
            pos = self.skip_ws(pos)
            if pos < self.n and self.text[pos] == ",":
                pos = self.skip_ws(pos + 1)
            elif pos < self.n and self.text[pos] != ")":
                raise self.error(f"expected ',' or ')' after the value of {key!r}", pos)

    # --- values ---------------------------------------------------------------------------------

    def parse_value(self, pos: int, depth: int, top: bool = False) -> tuple[Any, int]:
        if depth > MAX_DEPTH:
            raise self.error(f"values nested deeper than {MAX_DEPTH} levels", pos)
        if pos >= self.n:
            raise self.error("expected a value, found the end of the text", pos)
        c = self.text[pos]
        if c in "'\"":
            return self.parse_string(pos, top)
        if c == "[":
            items, pos = self.parse_sequence(pos + 1, "]", depth)
            return items, pos
        if c == "(":
            items, pos = self.parse_sequence(pos + 1, ")", depth)
            return items, pos
        if c == "{":
            return self.parse_dict(pos + 1, depth)
        m = _NUMBER.match(self.text, pos)
        if m:
            end = m.end()
            if end < self.n and self.text[end] not in _DELIMITERS:
                raise self.error(f"unexpected {self.text[end]!r} after the number {m.group(0)!r} (quote text values)", end)
            lit = m.group(0)
            try:
                return (float(lit) if any(ch in lit for ch in ".eE") else int(lit)), end
            except ValueError as exc:  # Python refuses integers of more than 4300 digits
                raise self.error(f"the number {lit[:20]}... is too long", pos) from exc
        m = _IDENT.match(self.text, pos)
        if m and m.group(0) in _CONSTANTS:
            end = m.end()
            if end < self.n and self.text[end] not in _DELIMITERS:
                raise self.error(f"unquoted value starting {m.group(0)!r}", pos)
            return _CONSTANTS[m.group(0)], end
        if m:
            raise self.error(f"unquoted value {m.group(0)!r} (text values must be quoted)", pos)
        raise self.error(f"unexpected character {c!r} where a value should start", pos)

    def parse_sequence(self, pos: int, close: str, depth: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        pos = self.skip_ws(pos)
        while True:
            if pos >= self.n:
                raise self.error(f"list is not closed with {close!r}", pos)
            if self.text[pos] == close:
                return items, pos + 1
            value, pos = self.parse_value(pos, depth + 1)
            items.append(value)
            pos = self.skip_ws(pos)
            if pos < self.n and self.text[pos] == ",":
                pos = self.skip_ws(pos + 1)
            elif pos < self.n and self.text[pos] != close:
                raise self.error(f"expected ',' or {close!r} in a list", pos)

    def parse_dict(self, pos: int, depth: int) -> tuple[dict[Any, Any], int]:
        out: dict[Any, Any] = {}
        pos = self.skip_ws(pos)
        while True:
            if pos >= self.n:
                raise self.error("dict is not closed with '}'", pos)
            if self.text[pos] == "}":
                return out, pos + 1
            key, pos = self.parse_value(pos, depth + 1)
            if isinstance(key, (list, dict)):
                raise self.error("dict keys must be text or numbers", pos)
            pos = self.skip_ws(pos)
            if pos >= self.n or self.text[pos] != ":":
                raise self.error("expected ':' after a dict key", pos)
            value, pos = self.parse_value(self.skip_ws(pos + 1), depth + 1)
            out[key] = value
            pos = self.skip_ws(pos)
            if pos < self.n and self.text[pos] == ",":
                pos = self.skip_ws(pos + 1)
            elif pos < self.n and self.text[pos] != "}":
                raise self.error("expected ',' or '}' in a dict", pos)

    def parse_string(self, pos: int, top: bool) -> tuple[str, int]:
        """Read a quoted string. At the top level of an argument a quote closes
        the string only when a call delimiter follows (see the module docstring)."""
        if top:
            found = self._scan_string(pos, lenient=True)
            if found is not None:
                return found
        found = self._scan_string(pos, lenient=False)
        if found is None:
            raise self.error("unterminated string", pos)
        return found

    def _scan_string(self, pos: int, lenient: bool) -> tuple[str, int] | None:
        quote = self.text[pos]
        chars: list[str] = []
        i = pos + 1
        text, n = self.text, self.n
        while i < n:
            c = text[i]
            if c == "\\" and i + 1 < n:
                nxt = text[i + 1]
                if nxt in _ESCAPES:
                    chars.append(_ESCAPES[nxt])
                    i += 2
                    continue
                chars.append(c)
                i += 1
                continue
            if c == quote and (not lenient or self._closes_top_level(i + 1)):
                return "".join(chars), i + 1
            chars.append(c)
            i += 1
        return None

    def _closes_top_level(self, pos: int) -> bool:
        """Does the text at ``pos`` continue like the end of a keyword argument?"""
        pos = self.skip_ws(pos)
        if pos >= self.n:
            return False
        c = self.text[pos]
        if c == ")":
            pos = self.skip_ws(pos + 1)
            return pos < self.n and self.text[pos] == "]"
        if c == ",":
            pos = self.skip_ws(pos + 1)
            if pos < self.n and self.text[pos] == ")":
                return self._closes_top_level(pos)
            m = _IDENT.match(self.text, pos)
            if not m:
                return False
            after = self.skip_ws(m.end())
            return after < self.n and self.text[after] == "=" and not self.text.startswith("==", after)
        return False


def parse_calls(text: str) -> list[ApiCall]:
    """Find every ``[Name(key=value, ...)]`` call in a model's output.

    Args:
        text: free text that may contain calls anywhere, with text around them.

    Returns:
        The calls in order of appearance (empty when the text holds none).

    Raises:
        ParseError: a ``[Name(`` opening exists but what follows is not a
            well-formed call, or a second ``[`` comes right before it (``[[Name(``);
            the message says why and where.
    """
    if not isinstance(text, str):
        raise ParseError(f"expected text, got {type(text).__name__}")
    parser = _Parser(text)
    calls: list[ApiCall] = []
    pos = 0
    while True:
        m = _CALL_START.search(text, pos)
        if not m:
            return calls
        if text[: m.start()].rstrip(_WS).endswith("["):
            # ``[[Name(...)]``: the bracket pairs no longer match; reading past the stray one would guess (v2.2).
            raise parser.error(f"an extra '[' before [{m.group(1)}(: a call opens with one bracket", m.start())
        args, pos = parser.parse_arguments(m.end(), m.group(1))
        calls.append(ApiCall(m.group(1), args))


def parse_first_call(text: str) -> ApiCall | None:
    """The first call of ``text``, or None when there is none (ParseError if malformed)."""
    calls = parse_calls(text)
    return calls[0] if calls else None


def parse_literal(text: str) -> Any:
    """Parse one literal value (string, number, list, dict, ...) from text, safely.

    Used to convert list-typed arguments given as text, e.g. ``"['Ann', 'Bo']"``.
    JSON and Python literal syntax are both accepted.
    """
    parser = _Parser(text)
    pos = parser.skip_ws(0)
    value, pos = parser.parse_value(pos, depth=0)
    pos = parser.skip_ws(pos)
    if pos != parser.n:
        raise parser.error("unexpected text after the value", pos)
    return value


# --- formatting ----------------------------------------------------------------------------------

_FORMAT_ESCAPES = str.maketrans({"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"})


def format_value(value: Any) -> str:
    """Render one value in the call syntax that :func:`parse_calls` reads back."""
    if isinstance(value, str):
        return "'" + value.translate(_FORMAT_ESCAPES) + "'"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "None"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot format the non-finite number {value!r} as a call argument")
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{format_value(k)}: {format_value(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"cannot format a {type(value).__name__} as a call argument")


def format_call(call: ApiCall) -> str:
    """Render a call as ``[Name(key=value, ...)]``; the exact inverse of :func:`parse_calls`."""
    if not _IDENT.fullmatch(call.name):
        raise ValueError(f"{call.name!r} is not a valid API name")
    for key in call.args:
        if not _IDENT.fullmatch(key):
            raise ValueError(f"{key!r} is not a valid argument name")
    inner = ", ".join(f"{k}={format_value(v)}" for k, v in call.args.items())
    return f"[{call.name}({inner})]"


def format_call_paper(name: str, param_dict: dict[str, Any]) -> str:
    """Render a call the way the official data does: every value inside single quotes, unescaped."""
    inner = ", ".join(f"{k}='{v}'" for k, v in param_dict.items())
    return f"[{name}({inner})]"


# --- the original evaluator's parsing (paper protocol) ------------------------------------------

_PAPER_CALL = re.compile(r"\[(\w+)\((.*)\)\]")
_PAPER_ARG = re.compile(r"""(\w+)\s*=\s*(?:['"](.+?)['"]|(\[.*\])|(\w+))""")


def parse_call_paper(text: str) -> ApiCall | None:
    """Parse like the original evaluator: first matching line, greedy, every value a string.

    Returns None when no ``[Name(...)]`` is found on any line. Known weaknesses
    are kept on purpose (values cut at the first inner quote, empty strings
    swallowing the next argument, unquoted values cut at the first non-word
    character, two calls on one line merged).
    """
    m = _PAPER_CALL.search(text)
    if not m:
        return None
    args: dict[str, Any] = {}
    for am in _PAPER_ARG.finditer(m.group(2)):
        key = am.group(1)
        value = next(g for g in am.groups()[1:] if g is not None)
        args[key] = value
    return ApiCall(m.group(1), args)


_LOOSE_ATTEMPT = re.compile(
    r"""\[\s*[A-Za-z_][\w ]*\s*\(|(?<![\w.])[A-Z][A-Za-z0-9]+\s*\(|"(?:api_name|name|tool|function)"\s*:|API-Request:""",
)


def looks_like_call_attempt(text: str) -> bool:
    """Whether ``text`` tries to call an API in some form, well-formed or not.

    Used by the error taxonomy to tell "No API Call" from "False API Call Format":
    a bare ``Name(...)``, a bracketed name with spaces, JSON with a name field,
    or an ``API-Request:`` prefix all count as attempts.
    """
    return bool(_LOOSE_ATTEMPT.search(text))
