"""JSON Schemas of the synthesis stages' answers, for backends that constrain generation to them.

A small instruct model asked for YAML or JSON often writes something almost right: an unclosed list, a call with
double quotes, a key of its own. A backend that constrains generation (a llama.cpp grammar; an OpenAI-compatible
server's ``response_format``) makes those mistakes impossible, so what reaches the parsers and the tester is
judged on content. The schemas say no more than the parsers check, and the parsers stay as strict as before (a
server may ignore the schema). Each stage's schema is as tight as what it knows allows: the request agent may only
name the domain's APIs, and the dialogue agent's calls may only name the APIs and parameters the request chose.

llama.cpp's converter reads a subset of JSON Schema (``const``, ``enum``, ``pattern`` on strings, ``anyOf``,
``minItems``/``maxItems``, ``maxLength``, ``additionalProperties``); nothing else is used here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from apibank_lib.core.types import ToolSchema
from apibank_lib.data.formats.train_corpus import SEARCHER

__all__ = ["domains_schema", "apis_schema", "request_schema", "dialogue_schema", "example_schema", "JSON_TYPES"]

JSON_TYPES: dict[str, dict[str, Any]] = {
    "str": {"type": "string", "maxLength": 80},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "list": {"type": "array", "maxItems": 4},
    "dict": {"type": "object"},
}
"""A corpus parameter type as the JSON value of a simulated result (strings and lists bounded: a small model
repeats)."""

_TEXT = {"type": "string", "minLength": 2, "maxLength": 400}
_NAME = {"type": "string", "pattern": "^[A-Z][A-Za-z0-9]{2,40}$"}
_PARAM = {
    "type": "object",
    "properties": {
        "type": {"enum": sorted(JSON_TYPES)},
        "description": {"type": "string", "minLength": 3, "maxLength": 120},
        "required": {"type": "boolean"},
    },
    "required": ["type", "description"],
    "additionalProperties": False,
}
_API = {
    "type": "object",
    "properties": {
        "name": _NAME,
        "description": {"type": "string", "minLength": 10, "maxLength": 200},
        "input_parameters": {"type": "object", "additionalProperties": _PARAM},
        "output_parameters": {"type": "object", "additionalProperties": _PARAM},
    },
    "required": ["name", "description", "input_parameters", "output_parameters"],
    "additionalProperties": False,
}
_WORD = "[A-Za-z][A-Za-z&'-]{0,9}[A-Za-z]"
_DOMAIN = {"type": "string", "pattern": f"^[A-Z][A-Za-z&'-]{{0,9}}[A-Za-z]( {_WORD}){{0,2}}$"}
"""A domain name of one to three words of at most 11 letters (the parser takes up to five words in 40 characters;
a longer grammar lets a model run on into a sentence)."""
_VALUE = "'([^'\\n()\\[\\]{}<>][^'\\n]{0,119})?'"
"""A single-quoted value (the corpus's call syntax) without a single quote, and not opening with a bracket: a
grammar lets a small model start a value with the bracket it meant to close (``rate=')4.5'``)."""
_IDENT = "[a-z][a-z0-9_]{0,30}"
_VALUE_TEXT = '[^\'"\\\\\\n()\\[\\]{}<>][^\'"\\\\\\n]{0,59}'
"""A value the request agent gives for an input: what a call can carry between single quotes, and neither a
double quote nor a backslash, which llama.cpp's grammar for a string pattern lets through unescaped
(Qwen2.5-Coder-1.5B wrote several key-value pairs into one value that way)."""
_META = re.compile(r"([.^$*+?()\[\]{}|\\])")
_IN_CLASS = {"[": "\\[", "]": "\\]", "^": "\\x5e", "\\": "\\\\"}
"""The metacharacters that need an escape inside a class too (llama.cpp's grammar parser refuses ``\\^``)."""


def _literal(text: str) -> str:
    """``text`` as a regular expression that matches it alone: each metacharacter as a one-character class
    (``[.]``, ``[\\[]``), since llama.cpp's pattern reader copies some escapes (``\\.``) into its grammar, which
    its grammar parser then refuses; a space stays a space, which the reader takes as written."""
    return _META.sub(lambda m: f"[{_IN_CLASS.get(m.group(1), m.group(1))}]", text)


def _obj(properties: dict[str, Any], required: Sequence[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else list(required),
        "additionalProperties": False,
    }


def domains_schema(n: int) -> dict[str, Any]:
    """``{"domains": [n short names]}``."""
    return _obj({"domains": {"type": "array", "items": _DOMAIN, "minItems": n, "maxItems": n}})


def apis_schema(n: int) -> dict[str, Any]:
    """``{"apis": [1 to n API definitions]}`` in the corpus shape."""
    return _obj({"apis": {"type": "array", "items": _API, "minItems": 1, "maxItems": n}})


def request_schema(ability: str, names: Sequence[str], low: int, high: int, *, values: bool = False) -> dict[str, Any]:
    """``{"ability": <ability>, "apis": [low to high of names], "request": text}``; with ``values``, a
    ``"values"`` mapping (input name -> value) before the request, which the request then says."""
    props: dict[str, Any] = {
        "ability": {"const": ability},
        "apis": {"type": "array", "items": {"enum": list(names)}, "minItems": low, "maxItems": high},
    }
    if values:
        # A number may be written as one: held to a string, Qwen2.5-Coder-1.5B wrote "strconv(3)" for 3.
        text = {"type": "string", "pattern": f"^{_VALUE_TEXT}$"}
        props["values"] = {"type": "object", "additionalProperties": {"anyOf": [text, {"type": "number"}]}}
    props["request"] = {"type": "string", "minLength": 15, "maxLength": 400}
    return _obj(props)


def _value_pattern(value: str | None) -> str:
    """A quoted value: exactly ``value`` where the request gave one the call format can carry, else any value."""
    if value and "'" not in value:
        return f"'{_literal(value)}'"
    return _VALUE


def _call_pattern(schemas: Sequence[ToolSchema], values: Mapping[str, str] | None = None) -> str:
    """A call of one of ``schemas``, written Name(param='value', ...) with the API's own parameter names: its
    required parameters first, in the declared order, then any of its optional ones. A required parameter named
    in ``values`` (what the request gives) takes that value, written exactly."""
    values = values or {}
    alternatives = []
    for s in schemas:
        required = [p for p, spec in s.input_parameters.items() if spec.required]
        optional = "|".join(re.escape(p) for p, spec in s.input_parameters.items() if not spec.required)
        head = ", ".join(f"{re.escape(p)}={_value_pattern(values.get(p))}" for p in required)
        tail = f"(, ({optional})={_VALUE}){{0,4}}" if optional else ""
        if head:
            args = head + tail
        elif optional:
            args = f"(({optional})={_VALUE}{tail})?"
        else:
            args = ""
        alternatives.append(f"{re.escape(s.name)}\\({args}\\)")
    return "^(" + "|".join(alternatives) + ")$"


_ANY_CALL = f"^[A-Z][A-Za-z0-9]{{2,40}}\\(({_IDENT}={_VALUE}(, {_IDENT}={_VALUE}){{0,7}})?\\)$"
_SEARCH = _obj({"api": {"type": "string", "pattern": f"^{SEARCHER}\\(keywords={_VALUE}\\)$"}})
_USER = _obj({"user": _TEXT})
_AI = _obj({"ai": _TEXT})


def _output(schema: ToolSchema) -> dict[str, Any]:
    """A simulated result of one API: every output parameter, each of its type."""
    props = {name: JSON_TYPES.get(p.type, {}) for name, p in schema.output_parameters.items()}
    return _obj(props)


def _call(schema: ToolSchema, values: Mapping[str, str] | None = None) -> dict[str, Any]:
    return _obj({"api": {"type": "string", "pattern": _call_pattern([schema], values)}, "output": _output(schema)})


def _sequence(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """An array of exactly these items, in this order."""
    return {"type": "array", "prefixItems": list(items), "items": False, "minItems": len(items), "maxItems": len(items)}


def dialogue_schema(
    ability: str,
    schemas: Sequence[ToolSchema] | None,
    request: str | None = None,
    *,
    clarify: bool = True,
    values: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A dialogue of ``ability`` over ``schemas``, in their order (None: over APIs not known yet, as the single
    agent writes them).

    Over known APIs the shape is fixed and the model writes the content: ``call``, the user's request, each API
    called once with its result, and the reply (or first a question and the user's answer); ``retrieve_call``
    the same with a ToolSearcher search before each API; ``plan_retrieve_call`` the requirement, search and call
    for each API, and the response. Calls name only their API and its parameters, required ones first; results
    hold the API's output parameters. Over unknown APIs, the turns are free in order and any CamelCase call.
    ``request``, where given, is the user's first turn (the plan's requirement) word for word: the request agent
    wrote it, and a small model otherwise copies the example's. ``clarify=False`` leaves out the question and
    answer before the calls: a small model fills that exchange with the calls written as text. ``values`` (input
    name -> value, the request agent's) fixes those inputs of the calls to the values the request says.
    """
    if schemas is None:
        return _free_dialogue(ability)
    calls: list[dict[str, Any]] = []
    for s in schemas:
        if ability != "call":
            calls.append(_SEARCH)
        calls.append(_call(s, values))
    opening = {"const": request} if request else _TEXT
    if ability == "plan_retrieve_call":
        return _obj({"ability": {"const": ability}, "requirement": opening, "steps": _sequence(calls), "response": _TEXT})
    first = _obj({"user": opening})
    direct = _sequence([first, *calls, _AI])
    if not clarify:
        return _obj({"ability": {"const": ability}, "turns": direct})
    asking = _sequence([first, _AI, _USER, *calls, _AI])
    return _obj({"ability": {"const": ability}, "turns": {"anyOf": [direct, asking]}})


def _free_dialogue(ability: str) -> dict[str, Any]:
    call = _obj({"api": {"type": "string", "pattern": _ANY_CALL}, "output": {"type": "object"}})
    steps = [call, _SEARCH] if ability != "call" else [call]
    if ability == "plan_retrieve_call":
        step_list = {"type": "array", "items": {"anyOf": steps}, "minItems": 2, "maxItems": 8}
        return _obj({"ability": {"const": ability}, "requirement": _TEXT, "steps": step_list, "response": _TEXT})
    turns = {"type": "array", "items": {"anyOf": [_USER, _AI, *steps]}, "minItems": 3, "maxItems": 12}
    return _obj({"ability": {"const": ability}, "turns": turns})


def example_schema(ability: str, max_apis: int) -> dict[str, Any]:
    """The single agent's whole example: ``{"domain", "apis": [1 to max_apis], "dialogue": {...}}``."""
    return _obj(
        {
            "domain": _DOMAIN,
            "apis": {"type": "array", "items": _API, "minItems": 1, "maxItems": max_apis},
            "dialogue": dialogue_schema(ability, None),
        }
    )
