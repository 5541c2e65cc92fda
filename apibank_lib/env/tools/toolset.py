"""ToolSet: an explicit, ordered collection of tool classes plus their shown metadata."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property

from apibank_lib.core.errors import UnknownToolError
from apibank_lib.core.types import ToolSchema
from apibank_lib.env.tools.base import Tool

__all__ = ["ToolSet"]


class ToolSet:
    """A named set of tools (API-Bank has two: levels 1-2 and level 3).

    The behaviour of each API comes from its class. The metadata shown to models
    and embedded by the searcher (description, parameter descriptions) comes
    from the classes too, unless overridden, e.g. by the descriptions read from
    an official release's sources.

    Args:
        name: a short identifier, e.g. ``"level-1-2"``.
        tools: the tool classes, in a fixed order (the order of the search candidates).
        metadata: optional per-API overrides of the shown metadata.
    """

    def __init__(self, name: str, tools: Sequence[type[Tool]], metadata: Mapping[str, ToolSchema] | None = None) -> None:
        self.name = name
        self.tools: dict[str, type[Tool]] = {}
        for cls in tools:
            if cls.name in self.tools:
                raise ValueError(f"tool set {name!r} lists {cls.name!r} twice")
            self.tools[cls.name] = cls
        self._metadata = dict(metadata or {})

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def __iter__(self) -> Iterable[str]:  # type: ignore[override]
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def __repr__(self) -> str:
        return f"ToolSet({self.name!r}, {len(self.tools)} tools)"

    def current_name(self, original: str) -> str:
        """The name the API called ``original`` answers to in this tool set (another name in a twin's renaming
        view, :mod:`apibank_lib.env.renaming`): for the sandbox's own calls of one tool from another."""
        renaming = getattr(self, "renaming", None)
        return renaming.api(original) if renaming is not None else original

    def get(self, name: str) -> type[Tool]:
        """The tool class called ``name``; raises UnknownToolError with a suggestion."""
        try:
            return self.tools[name]
        except KeyError:
            raise UnknownToolError(name, self.tools) from None

    def schema(self, name: str) -> ToolSchema:
        """The metadata shown for ``name`` (override if present, else the class's own)."""
        if name in self._metadata:
            return self._metadata[name]
        return self.get(name).schema()

    def schemas(self) -> list[ToolSchema]:
        """Metadata of every tool, in tool-set order."""
        return [self.schema(n) for n in self.tools]

    def searchable(self) -> list[ToolSchema]:
        """Metadata of the APIs that ToolSearcher may return, in tool-set order."""
        return [self.schema(n) for n, cls in self.tools.items() if cls.searchable]

    def with_metadata(self, overrides: Mapping[str, ToolSchema]) -> ToolSet:
        """A copy whose shown metadata is replaced for the APIs in ``overrides``."""
        merged = dict(self._metadata)
        merged.update({k: v for k, v in overrides.items() if k in self.tools})
        return ToolSet(self.name, list(self.tools.values()), merged)

    @cached_property
    def database_names(self) -> set[str]:
        """Databases used by at least one tool."""
        return {cls.database_name for cls in self.tools.values() if cls.database_name}

    @cached_property
    def mutable_databases(self) -> set[str]:
        """Databases written by at least one tool: the sandbox copies these per episode."""
        return {cls.database_name for cls in self.tools.values() if cls.database_name and cls.writes_database}
