"""The Tool base class, its correctness rules, and ToolEnv (what a tool may ask of its sandbox).

A tool is a small class with a typed schema (class attributes), a ``run`` method
holding its behaviour, and one or more *checker rules* that judge a predicted
result envelope against the gold one.

Checker rules are named. Every tool has the ``original`` rule, :meth:`Tool.check`,
which reproduces the original API-Bank checker exactly, quirks included. A tool
whose original checker has a bug also declares a ``corrected`` rule, a method
marked with :func:`checker_rule`. A grading protocol names the rules it prefers,
in order (``("corrected", "original")``), and each tool is judged by the first
rule it declares; a new protocol may introduce a new rule name on the few tools
it changes, without touching the others.

Failures: ``run`` raises :class:`~apibank_lib.core.errors.ToolFailure` with the
original's error text to fail on purpose; that text becomes the envelope's
``exception``. Any other exception escaping ``run`` is a bug in the tool and is
raised as :class:`~apibank_lib.core.errors.ToolError`, so that it is never graded as
the model's fault.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol, TypeVar

from apibank_lib.core.errors import ApibankError, ConfigError, ToolError, ToolFailure
from apibank_lib.core.types import ApiResult, Param, ToolSchema
from apibank_lib.env.shapes import Shape

__all__ = ["Tool", "ToolEnv", "Checker", "checker_rule", "ORIGINAL", "CORRECTED", "LEVEL12", "LEVEL3"]

ORIGINAL = "original"
"""The rule of the original checker, declared by every tool (:meth:`Tool.check`)."""

CORRECTED = "corrected"
"""The rule with a documented bug of the original checker fixed."""

LEVEL12 = "level-1-2"
"""The tool set of levels 1 and 2."""

LEVEL3 = "level-3"
"""The tool set of level 3."""

Checker = Callable[[dict[str, Any], dict[str, Any]], bool]
"""A correctness rule: ``(predicted envelope, gold envelope) -> correct``."""

_F = TypeVar("_F", bound=Callable[..., Any])


def checker_rule(name: str) -> Callable[[_F], _F]:
    """Mark a method of a Tool subclass as its correctness rule called ``name``."""

    def mark(method: _F) -> _F:
        method.__checker_rule__ = name  # type: ignore[attr-defined]
        return method

    return mark


class ToolEnv(Protocol):
    """What a tool may ask of the sandbox that runs it."""

    def check_token(self, token: Any) -> str:
        """Return the username owning ``token`` or raise ``ToolFailure('The token is invalid.')``."""
        ...

    def search_tools(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        """Rank the tool set's searchable APIs for ``keywords`` (best first)."""
        ...

    def tool_schema(self, name: str) -> ToolSchema:
        """The metadata shown for API ``name`` in this tool set."""
        ...


class Tool:
    """Base class of every API.

    A concrete tool sets the class attributes below, implements :meth:`run`
    and :meth:`check`, and is registered by being defined in one of the modules
    that :mod:`apibank_lib.env.tools.registry` lists (nothing else to edit).

    Attributes:
        name: the API name (CamelCase, as in API-Bank).
        description: our own one-line description shown to models.
        input_parameters: declared inputs in declaration order.
        output_parameters: declared outputs.
        domain: the API's domain (``schedule``, ``smart home``, ...), for statistics.
        toolset: ``LEVEL12`` or ``LEVEL3``.
        database_name: the database (file stem) the tool reads, if any.
        database_shape: the record shape of that database, checked when it is loaded
            (tools sharing a database share the shape object).
        writes_database: True when the tool changes its database; the sandbox
            then gives it a private deep copy per episode.
        envelope_has_api_name: False for the few tools whose original envelope
            lacks the ``api_name`` key.
        aliases: renamed parameters that a conversion accepting them maps to the
            current name (old name -> current name).
        searchable: whether ToolSearcher may return this API.
        read_only: the call changes no state at all (neither a database nor the
            instance), so replaying it to rebuild a dialogue's state can be skipped.
        state_is_outcome: whether the instance state counts as an outcome of the
            episode (False for bookkeeping that only reproduces a quirk).
        abstract: True on shared base classes that are not APIs themselves.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    input_parameters: ClassVar[dict[str, Param]] = {}
    output_parameters: ClassVar[dict[str, Param]] = {}
    domain: ClassVar[str] = ""
    toolset: ClassVar[str] = LEVEL12
    database_name: ClassVar[str | None] = None
    database_shape: ClassVar[Shape | None] = None
    writes_database: ClassVar[bool] = False
    envelope_has_api_name: ClassVar[bool] = True
    aliases: ClassVar[dict[str, str]] = {}
    searchable: ClassVar[bool] = True
    read_only: ClassVar[bool] = False
    state_is_outcome: ClassVar[bool] = True
    abstract: ClassVar[bool] = True

    _rules: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "abstract" not in cls.__dict__:
            cls.abstract = False
        rules: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                rule = getattr(value, "__checker_rule__", None)
                if rule is not None:
                    rules[rule] = attr
        cls._rules = rules

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

    @classmethod
    def checker_rules(cls) -> tuple[str, ...]:
        """The names of the correctness rules this tool declares."""
        return tuple(cls._rules)

    # --- execution ------------------------------------------------------------------------------

    def call(self, **kwargs: Any) -> ApiResult:
        """Run the tool on already-converted arguments and wrap the outcome in an envelope.

        Raises:
            ToolError: ``run`` raised something other than ToolFailure (a bug).
        """
        echo = self.echo_input(kwargs)
        api_name = self.name if self.envelope_has_api_name else None
        try:
            output = self.run(**kwargs)
        except ToolFailure as exc:
            return ApiResult(api_name, echo, None, str(exc))
        except ApibankError:
            raise
        except Exception as exc:  # noqa: BLE001 - anything else is a bug of ours, surfaced as such
            raise ToolError(self.name, exc) from exc
        return ApiResult(api_name, echo, output, None)

    def echo_input(self, kwargs: dict[str, Any]) -> Any:
        """The envelope's ``input``: by default the arguments exactly as received."""
        return dict(kwargs)

    def run(self, **kwargs: Any) -> Any:
        """The tool's behaviour. Return the output or raise ToolFailure to report a failure."""
        raise NotImplementedError

    def username_for(self, token: Any) -> str:
        """Resolve a token to its username through the sandbox's token checker."""
        if self.env is None:
            raise ToolFailure("Lack of token checker.")
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

    @checker_rule(ORIGINAL)
    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        """The original correctness rule: is the predicted envelope right given the gold one?

        Both arguments are envelope dicts, which a rule may change (the grader
        passes copies). A KeyError or AssertionError raised here counts as
        "incorrect", as in the original evaluator.
        """
        raise NotImplementedError

    def checker(self, preference: Sequence[str]) -> Checker:
        """The first rule in ``preference`` that this tool declares.

        Raises:
            ConfigError: the tool declares none of them.
        """
        for rule in preference:
            method = self._rules.get(rule)
            if method is not None:
                return getattr(self, method)  # type: ignore[no-any-return]
        raise ConfigError(
            f"{self.name} declares none of the checker rules {list(preference)} (it has {list(self._rules)})"
        )
