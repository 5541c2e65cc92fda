"""Sandbox: one isolated episode of tool execution.

A Sandbox holds the state of one evaluation episode. Databases that some tool
of the tool set writes are deep-copied (lazily, the first time a tool needs
them), so nothing leaks between episodes; read-only databases are shared
because nothing changes them, which keeps a fresh sandbox almost free.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apibank_lib.core.calls import parse_calls
from apibank_lib.core.errors import CallError, ParseError, ToolError
from apibank_lib.core.types import ApiCall, ApiResult, ToolSchema
from apibank_lib.env.tools.base import Tool
from apibank_lib.env.tools.conversion import TYPED_CONVERSION, ArgumentConversion
from apibank_lib.env.tools.toolset import ToolSet

__all__ = ["Sandbox", "TraceEntry", "json_copy"]


def _canonical(value: Any) -> Any:
    """A JSON-serialisable, key-order-free form of state; keys of mixed types (1 vs "1") stay distinct."""
    if isinstance(value, dict):
        return sorted(([f"{type(k).__name__}:{k}", _canonical(v)] for k, v in value.items()), key=lambda kv: kv[0])
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return f"{type(value).__name__}:{value}"


def json_copy(value: Any) -> Any:
    """Deep copy of JSON-like data (dict, list, tuple, scalars); about 5x faster than ``copy.deepcopy``."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(json_copy(v) for v in value)
    return value


@dataclass
class TraceEntry:
    """One executed call: the call, and either its result or the error that stopped it.

    Attributes:
        call: the call as given.
        result: its envelope, when the tool ran.
        error: why the call never produced an envelope (unknown tool, bad
            arguments), or the bug that broke the tool.
        tool_error: True when ``error`` is a bug of the tool (a ToolError).
    """

    call: ApiCall
    result: ApiResult | None
    error: str | None = None
    tool_error: bool = False


class Sandbox:
    """Fresh, isolated tool state for one episode.

    Args:
        toolset: the tools this episode may call.
        databases: database name -> initial data; never modified.
        conversion: the argument conversion (typed by default; a grading
            protocol passes its own).
        searcher: what ToolSearcher uses: an object with
            ``search(keywords, k) -> list[(ToolSchema, score)]``, a zero-argument
            factory returning one (called on first use), a retriever's name
            (:mod:`apibank_lib.retrieval.retrievers`, built over the tool set's searchable
            APIs), or None for the default embedding searcher over them.
    """

    def __init__(
        self,
        toolset: ToolSet,
        databases: Mapping[str, Any],
        *,
        conversion: ArgumentConversion = TYPED_CONVERSION,
        searcher: Any = None,
    ) -> None:
        self.toolset = toolset
        self.conversion = conversion
        self._pristine = databases
        self._copies: dict[str, Any] = {}
        self._tools: dict[str, Tool] = {}
        self._searcher = searcher
        self.trace: list[TraceEntry] = []

    def __repr__(self) -> str:
        return f"Sandbox({self.toolset.name!r}, {len(self.trace)} calls made, conversion={self.conversion.name!r})"

    # --- state ----------------------------------------------------------------------------------

    def database(self, name: str) -> Any:
        """The episode's view of database ``name`` (a private copy if any tool writes it)."""
        if name in self._copies:
            return self._copies[name]
        if name not in self._pristine:
            return None
        if name in self.toolset.mutable_databases:
            self._copies[name] = json_copy(self._pristine[name])
            return self._copies[name]
        return self._pristine[name]

    def tool(self, name: str) -> Tool:
        """The episode's instance of tool ``name`` (built on first use)."""
        inst = self._tools.get(name)
        if inst is None:
            cls = self.toolset.get(name)
            db = self.database(cls.database_name) if cls.database_name else None
            if cls.database_name and db is None:
                raise CallError(f"the database {cls.database_name!r} needed by {name} is not loaded", tool=name)
            inst = cls(db, self)
            self._tools[name] = inst
        return inst

    def fingerprint(self, outcome_only: bool = False) -> str:
        """An order-insensitive hash of the episode state (databases and tool-instance state).

        Args:
            outcome_only: leave out instance state that tools mark as bookkeeping
                rather than outcome (used to compare an agent's end state with the gold's).
        """
        state = {
            "databases": {n: self.database(n) for n in sorted(self.toolset.mutable_databases) if n in self._pristine},
            "tools": {
                n: t.state()
                for n, t in sorted(self._tools.items())
                if t.state() is not None and (t.state_is_outcome or not outcome_only)
            },
        }
        blob = json.dumps(_canonical(state), ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    # --- ToolEnv --------------------------------------------------------------------------------

    def check_token(self, token: Any) -> str:
        """Resolve a token through the episode's CheckToken instance (shared Account data)."""
        checker = self.tool(self.toolset.current_name("CheckToken"))
        return checker.lookup(token)  # type: ignore[attr-defined]

    def search_tools(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        """Rank the searchable APIs of this tool set for ``keywords``."""
        if self._searcher is None:
            from apibank_lib.retrieval.search import default_searcher

            self._searcher = default_searcher(self.toolset.searchable())
        elif isinstance(self._searcher, str):
            from apibank_lib.retrieval.retrievers import shared_retriever

            self._searcher = shared_retriever(self._searcher, self.toolset.searchable())
        elif callable(self._searcher) and not hasattr(self._searcher, "search"):
            self._searcher = self._searcher()
        return self._searcher.search(keywords, k)

    def tool_schema(self, name: str) -> ToolSchema:
        """The metadata shown for API ``name`` in this episode's tool set."""
        return self.toolset.schema(name)

    # --- execution ------------------------------------------------------------------------------

    def execute(self, call: ApiCall | str) -> ApiResult:
        """Execute one call and return its result envelope.

        Args:
            call: an :class:`ApiCall`, or call text such as ``"[GetToday()]"``.

        Raises:
            ParseError: call text that cannot be parsed.
            CallError: unknown tool, unknown parameter, bad type or missing argument
                (the call never reaches the tool; the trace records it).
            ToolError: the tool broke in a way it did not mean to (a bug; the
                trace records it).
        """
        if isinstance(call, str):
            calls = parse_calls(call)
            if len(calls) != 1:
                raise ParseError(f"expected exactly one call, found {len(calls)}", 0, call)
            call = calls[0]
        try:
            cls = self.toolset.get(call.name)
            args = self.conversion.convert(cls, call.args)
            tool = self.tool(call.name)
        except CallError as exc:
            self.trace.append(TraceEntry(call, None, str(exc)))
            raise
        try:
            raw = tool.call(**args)
        except ToolError as exc:
            self.trace.append(TraceEntry(call, None, str(exc), tool_error=True))
            raise
        # Snapshot the envelope: outputs may be live database objects that later calls change.
        result = ApiResult(raw.api_name, json_copy(raw.input), json_copy(raw.output), raw.exception)
        self.trace.append(TraceEntry(call, result))
        return result

    def execute_safely(self, call: ApiCall | str) -> ApiResult:
        """Like :meth:`execute`, but a parse, call or tool error becomes the envelope's exception.

        This is what a model sees in an interactive loop: the error text, never a
        crash. A tool's bug stays visible in :attr:`trace` (``tool_error``).
        """
        try:
            return self.execute(call)
        except (CallError, ParseError, ToolError) as exc:
            name = call.name if isinstance(call, ApiCall) else None
            args = dict(call.args) if isinstance(call, ApiCall) else None
            return ApiResult(name, args, None, str(exc))

    def replay(self, call: ApiCall, recorded: Mapping[str, Any] | None = None) -> ApiResult:
        """Execute a gold call and align random state with its recorded result.

        Used to rebuild a dialogue's state before judging a later sample: tools
        that draw random identifiers adopt the recorded ones.
        """
        result = self.execute(call)
        if recorded is not None:
            self.tool(call.name).adopt_recorded(result, dict(recorded))
        return result

