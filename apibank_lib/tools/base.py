"""The Tool base class, the argument conversion derived from its schema, and ToolEnv.

A tool is a small class with a typed schema (class attributes), a ``run`` method
holding its behaviour, and a correctness rule ``check`` that judges a predicted
result envelope against the gold one, exactly as the original API-Bank checker
did (quirks included). ``check_v2`` is the corrected rule used by the ``v2``
grading protocol; it defaults to ``check``.

Conversion of argument values happens before a tool runs, in one of two modes:

* ``"paper"`` reproduces the original ToolManager: every value is expected as
  text; ``int`` must be all digits, ``float`` digits with at most one dot, ``bool``
  is true only for the text ``True``; list types pass through unchanged.
* ``"v2"`` is typed and tolerant: values may already be typed (our call parser
  yields ints, floats, booleans, lists and dicts); numeric text with a sign or
  exponent converts; list types given as text are parsed as literals (safely,
  never with ``eval``); documented renamed parameters are accepted.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal, Protocol

from apibank_lib.errors import InvalidParameterError, MissingParameterError, ParameterTypeError, ParseError
from apibank_lib.types import ApiResult, Param, ToolSchema

__all__ = ["Tool", "ToolEnv", "Conversion", "convert_arguments", "missing_message"]

Conversion = Literal["paper", "v2"]


class ToolEnv(Protocol):
    """What a tool may ask of the sandbox that runs it."""

    def check_token(self, token: Any) -> str:
        """Return the username owning ``token`` or raise ``Exception('The token is invalid.')``."""
        ...

    def search_tools(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        """Rank the tool set's searchable APIs for ``keywords`` (best first)."""
        ...

    def tool_schema(self, name: str) -> ToolSchema:
        """The metadata shown for API ``name`` in this tool set."""
        ...


class Tool:
    """Base class of every API.

    Subclasses set the class attributes and implement :meth:`run` (raise any
    exception to report a failure: its ``str()`` becomes the envelope's
    ``exception``) and :meth:`check`.

    Attributes:
        name: the API name (CamelCase, as in API-Bank).
        description: our own one-line description shown to models.
        input_parameters: declared inputs in declaration order.
        output_parameters: declared outputs.
        database_name: the database (file stem) the tool reads, if any.
        writes_database: True when the tool changes its database; the sandbox
            then gives it a private deep copy per episode.
        envelope_has_api_name: False for the few tools whose original envelope
            lacks the ``api_name`` key.
        aliases: renamed parameters accepted by the ``v2`` conversion
            (old name -> current name).
        searchable: whether ToolSearcher may return this API.
        read_only: the call changes no state at all (neither a database nor the
            instance), so replaying it to rebuild a dialogue's state can be skipped.
        state_is_outcome: whether the instance state counts as an outcome of the
            episode (False for bookkeeping that only reproduces a quirk).
    """

    name: ClassVar[str]
    description: ClassVar[str]
    input_parameters: ClassVar[dict[str, Param]] = {}
    output_parameters: ClassVar[dict[str, Param]] = {}
    database_name: ClassVar[str | None] = None
    writes_database: ClassVar[bool] = False
    envelope_has_api_name: ClassVar[bool] = True
    aliases: ClassVar[dict[str, str]] = {}
    searchable: ClassVar[bool] = True
    read_only: ClassVar[bool] = False
    state_is_outcome: ClassVar[bool] = True

    def __init__(self, db: Any = None, env: ToolEnv | None = None) -> None:
        self.db = db
        self.env = env

    # --- metadata -------------------------------------------------------------------------------

    @classmethod
    def schema(cls) -> ToolSchema:
        """The API's metadata as a :class:`ToolSchema`."""
        return ToolSchema(cls.name, cls.description, dict(cls.input_parameters), dict(cls.output_parameters))

    @classmethod
    def takes_token(cls) -> bool:
        """Whether the API authenticates with a ``token`` argument."""
        return "token" in cls.input_parameters

    # --- execution ------------------------------------------------------------------------------

    def call(self, **kwargs: Any) -> ApiResult:
        """Run the tool on already-converted arguments and wrap the outcome in an envelope."""
        echo = self.echo_input(kwargs)
        try:
            output = self.run(**kwargs)
        except Exception as exc:  # noqa: BLE001 - every tool failure becomes the envelope's exception
            return ApiResult(self.name if self.envelope_has_api_name else None, echo, None, str(exc))
        return ApiResult(self.name if self.envelope_has_api_name else None, echo, output, None)

    def echo_input(self, kwargs: dict[str, Any]) -> Any:
        """The envelope's ``input``: by default the arguments exactly as received."""
        return dict(kwargs)

    def run(self, **kwargs: Any) -> Any:
        """The tool's behaviour. Return the output or raise to report a failure."""
        raise NotImplementedError

    def username_for(self, token: Any) -> str:
        """Resolve a token to its username through the sandbox's token checker."""
        if self.env is None:
            raise Exception("Lack of token checker.")
        return self.env.check_token(token)

    def adopt_recorded(self, result: ApiResult, recorded: dict[str, Any]) -> None:
        """Make this episode's state agree with a recorded result after replaying a gold call.

        Tools that draw random identifiers (AppointmentRegistration, RegisterUser)
        override this so that later gold calls referring to the recorded
        identifier find it. The default does nothing.
        """

    def state(self) -> Any:
        """Per-instance state not held in a database (for the sandbox fingerprint)."""
        return None

    # --- judging --------------------------------------------------------------------------------

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        """The original correctness rule: is the predicted envelope right given the gold one?

        Both arguments are envelope dicts. A KeyError or AssertionError raised here
        counts as "incorrect" (as in the original evaluator).
        """
        raise NotImplementedError

    def check_v2(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        """The corrected rule of the ``v2`` protocol; the original rule unless overridden."""
        return self.check(pred, gold)


# --- argument conversion -------------------------------------------------------------------------

_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def missing_message(tool: str, names: list[str]) -> str:
    """Python's wording for missing positional arguments, as the original surfaced it."""
    quoted = [repr(n) for n in names]
    if len(quoted) == 1:
        listed = quoted[0]
    else:
        listed = ", ".join(quoted[:-1]) + (" and " if len(quoted) == 2 else ", and ") + quoted[-1]
    plural = "argument" if len(names) == 1 else "arguments"
    return f"{tool}.call() missing {len(names)} required positional {plural}: {listed}"


def _convert_paper(value: Any, ptype: str) -> Any:
    """The original ToolManager's conversion (values arrive as text)."""
    if ptype == "int":
        if isinstance(value, str):
            if not value.isdigit():
                raise ParameterTypeError(f"invalid parameter type. parameter: {value}")
        try:
            return int(value)
        except (TypeError, ValueError) as exc:
            raise ParameterTypeError(f"invalid parameter type. parameter: {value}") from exc
    if ptype == "float":
        if isinstance(value, str) and not value.replace(".", "", 1).isdigit():
            raise ParameterTypeError("invalid parameter type.")
        try:
            return float(value)
        except (TypeError, ValueError) as exc:
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


def _convert_v2(key: str, value: Any, ptype: str) -> Any:
    """Typed, tolerant conversion used by the v2 protocol."""
    if ptype == "str":
        if isinstance(value, str):
            return value
        if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
            raise _type_error(key, value, ptype)
        if isinstance(value, (int, float)):
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
            from apibank_lib.calls import parse_literal  # calls.py sits below tools; local import keeps startup light

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


def convert_arguments(tool: type[Tool], args: dict[str, Any], mode: Conversion) -> dict[str, Any]:
    """Validate and convert call arguments against a tool's declared inputs.

    Args:
        tool: the tool class.
        args: argument name -> value, in call order.
        mode: ``"paper"`` (original ToolManager rules) or ``"v2"`` (typed).

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
        if mode == "v2" and key not in params and key in tool.aliases:
            key = tool.aliases[key]
        if key not in params:
            raise InvalidParameterError(f"invalid parameter name. parameter: {key}", tool=tool.name, parameter=key)
        ptype = params[key].type
        if mode == "paper":
            try:
                out[key] = _convert_paper(value, ptype)
            except ParameterTypeError as exc:
                exc.tool, exc.parameter = tool.name, key
                raise
        else:
            out[key] = _convert_v2(key, value, ptype)
    missing = [k for k, p in params.items() if p.required and k not in out]
    if missing:
        raise MissingParameterError(missing_message(tool.name, missing), tool=tool.name, parameter=missing[0])
    return out
