"""How call arguments are checked and converted before a tool runs.

Two conversions exist; a grading protocol picks one.

* :data:`ORIGINAL_CONVERSION` reproduces the original ToolManager: every value is
  expected as text; ``int`` must be all digits (no sign), ``float`` digits with at
  most one dot, ``bool`` is true only for the text ``True``; list types pass
  through unchanged (so a list written as text stays text).
* :data:`TYPED_CONVERSION` is typed and tolerant: values may already be typed
  (our call parser yields ints, floats, booleans, lists and dicts); numeric text
  with a sign or an exponent converts; list types given as text are parsed as
  literals (safely, never with ``eval``); renamed parameters a tool declares in
  ``aliases`` are accepted under their old name.

Both reject undeclared argument names and report missing required arguments;
the error classes (not their texts) drive the error taxonomy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from apibank_lib.core.calls import parse_literal
from apibank_lib.core.errors import InvalidParameterError, MissingParameterError, ParameterTypeError, ParseError
from apibank_lib.env.tools.base import Tool

__all__ = ["ArgumentConversion", "ORIGINAL_CONVERSION", "TYPED_CONVERSION", "missing_message"]

_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def missing_message(tool: str, names: list[str]) -> str:
    """The message for required arguments that a call leaves out."""
    plural = "s" if len(names) > 1 else ""
    return f"missing required parameter{plural} {', '.join(names)} of {tool}"


def _convert_text(value: Any, ptype: str) -> Any:
    """The original ToolManager's conversion (values arrive as text)."""
    if ptype == "int":
        if isinstance(value, str):
            if not value.isdigit():
                raise ParameterTypeError(f"invalid parameter type. parameter: {value}")
        try:
            return int(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ParameterTypeError(f"invalid parameter type. parameter: {value}") from exc
    if ptype == "float":
        if isinstance(value, str) and not value.replace(".", "", 1).isdigit():
            raise ParameterTypeError("invalid parameter type.")
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ParameterTypeError("invalid parameter type.") from exc
    if ptype in ("str", "list", "list(str)"):
        return value
    if ptype == "bool":
        return value == "True"
    raise ParameterTypeError("invalid parameter type.")


def _type_error(key: str, value: Any, ptype: str) -> ParameterTypeError:
    return ParameterTypeError(
        f"invalid parameter type. parameter: {key}={value!r} is not a valid {ptype}", parameter=key
    )


def _convert_typed(key: str, value: Any, ptype: str) -> Any:
    """Typed, tolerant conversion of one value (a number too large for its type is a type error too)."""
    try:
        return _convert_typed_value(key, value, ptype)
    except (OverflowError, ValueError) as exc:
        raise _type_error(key, value, ptype) from exc


def _convert_typed_value(key: str, value: Any, ptype: str) -> Any:
    if ptype == "str":
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise _type_error(key, value, ptype)
    if ptype == "int":
        if isinstance(value, bool):
            raise _type_error(key, value, ptype)
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and _INT_RE.fullmatch(value.strip()):
            return int(value.strip())
        raise _type_error(key, value, ptype)
    if ptype == "float":
        if isinstance(value, bool):
            raise _type_error(key, value, ptype)
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str) and _FLOAT_RE.fullmatch(value.strip()):
            return float(value.strip())
        raise _type_error(key, value, ptype)
    if ptype == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise _type_error(key, value, ptype)
    if ptype in ("list", "list(str)"):
        if isinstance(value, tuple):
            value = list(value)
        if isinstance(value, str):
            try:
                value = parse_literal(value)
            except ParseError as exc:
                raise _type_error(key, value, ptype) from exc
            if isinstance(value, tuple):
                value = list(value)
        if not isinstance(value, list):
            raise _type_error(key, value, ptype)
        if ptype == "list(str)" and not all(isinstance(v, str) for v in value):
            raise _type_error(key, value, ptype)
        return value
    return value


@dataclass(frozen=True)
class ArgumentConversion:
    """A rule set for checking and converting call arguments against a tool's declared inputs.

    Attributes:
        name: ``original`` or ``typed`` (recorded with results).
        typed: convert typed values tolerantly (else: the original's text rules).
        accepts_aliases: accept renamed parameters under their old names. The
            grader then also renames them in gold inputs before checking, so
            both sides speak the current names.
    """

    name: str
    typed: bool
    accepts_aliases: bool

    def convert(self, tool: type[Tool], args: dict[str, Any]) -> dict[str, Any]:
        """Validate and convert call arguments.

        Args:
            tool: the tool class.
            args: argument name -> value, in call order.

        Returns:
            The converted arguments, in call order.

        Raises:
            InvalidParameterError: an argument name the API does not declare.
            ParameterTypeError: a value that does not convert to the declared type.
            MissingParameterError: a required argument is absent.
        """
        params = tool.input_parameters
        out: dict[str, Any] = {}
        for key, value in args.items():
            key = self.current_name(tool, key)
            if key not in params:
                raise InvalidParameterError(f"invalid parameter name. parameter: {key}", tool=tool.name, parameter=key)
            ptype = params[key].type
            if self.typed:
                out[key] = _convert_typed(key, value, ptype)
                continue
            try:
                out[key] = _convert_text(value, ptype)
            except ParameterTypeError as exc:
                exc.tool, exc.parameter = tool.name, key
                raise
        missing = [k for k, p in params.items() if p.required and k not in out]
        if missing:
            raise MissingParameterError(missing_message(tool.name, missing), tool=tool.name, parameter=missing[0])
        return out

    def current_name(self, tool: type[Tool], key: str) -> str:
        """The parameter name ``key`` stands for (its renamed form when aliases are accepted)."""
        if self.accepts_aliases and key not in tool.input_parameters:
            return tool.aliases.get(key, key)
        return key


ORIGINAL_CONVERSION = ArgumentConversion("original", typed=False, accepts_aliases=False)
"""The original ToolManager's rules: values as text, lists left as text, no renamed parameters."""

TYPED_CONVERSION = ArgumentConversion("typed", typed=True, accepts_aliases=True)
"""Typed, tolerant conversion with documented renamed parameters accepted."""
