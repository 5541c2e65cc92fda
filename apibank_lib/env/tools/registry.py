"""The two tool sets of API-Bank, collected from an explicit list of tool modules.

A tool is registered by being defined in one of :data:`TOOL_MODULES`: every
non-abstract :class:`~apibank_lib.env.tools.base.Tool` subclass a listed module
defines (not merely imports) joins the tool set its ``toolset`` attribute names.
So adding an API means writing its class (with its ``domain`` and database
shape) in a listed module and its database file; adding a module means one
line here. Nothing is scanned from the file system and importing a tool module
registers nothing by itself.

Some names exist in both tool sets with different behaviour (AddMeeting,
Calculator, QueryMeeting, ToolSearcher), so the distinct names are fewer than
the classes; ``apibank stats`` and ``apibank apis`` print the counts (a test in
``tests/test_architecture.py`` pins them). Within a tool set tools are ordered
by name, which is also the order of the search candidates.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from apibank_lib.core.errors import ConfigError
from apibank_lib.env.shapes import Shape
from apibank_lib.env.tools.base import LEVEL3, LEVEL12, Tool
from apibank_lib.env.tools.toolset import ToolSet

__all__ = ["TOOL_MODULES", "TOOLSETS", "tool_classes", "toolset", "toolset_for_level", "domains", "database_shapes"]

TOOL_MODULES: tuple[str, ...] = (
    "apibank_lib.env.tools.account",
    "apibank_lib.env.tools.agenda",
    "apibank_lib.env.tools.alarm",
    "apibank_lib.env.tools.calculator",
    "apibank_lib.env.tools.finance",
    "apibank_lib.env.tools.health",
    "apibank_lib.env.tools.hospital",
    "apibank_lib.env.tools.hotel",
    "apibank_lib.env.tools.knowledge",
    "apibank_lib.env.tools.meeting",
    "apibank_lib.env.tools.reminder",
    "apibank_lib.env.tools.scene",
    "apibank_lib.env.tools.searcher",
    "apibank_lib.env.tools.utility",
    "apibank_lib.env.tools.level3.accounts",
    "apibank_lib.env.tools.level3.arithmetic",
    "apibank_lib.env.tools.level3.calendar",
    "apibank_lib.env.tools.level3.finance",
    "apibank_lib.env.tools.level3.geo",
    "apibank_lib.env.tools.level3.movies",
    "apibank_lib.env.tools.level3.social",
    "apibank_lib.env.tools.level3.travel",
)
"""Every module that defines tools."""

TOOLSETS: tuple[str, ...] = (LEVEL12, LEVEL3)


def tools_defined_in(module_name: str) -> list[type[Tool]]:
    """The concrete tool classes a module defines (classes it only imports are left out)."""
    module = importlib.import_module(module_name)
    return [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type) and issubclass(obj, Tool) and obj.__module__ == module_name and not obj.abstract
    ]


@lru_cache(maxsize=None)
def tool_classes(name: str) -> tuple[type[Tool], ...]:
    """The tool classes of tool set ``name`` (``level-1-2`` or ``level-3``), ordered by API name."""
    if name not in TOOLSETS:
        raise ConfigError(f"unknown tool set {name!r}; choose one of {', '.join(TOOLSETS)}")
    found = [cls for module in TOOL_MODULES for cls in tools_defined_in(module) if cls.toolset == name]
    return tuple(sorted(found, key=lambda cls: cls.name))


@lru_cache(maxsize=None)
def toolset(name: str) -> ToolSet:
    """The tool set ``name`` with the tools' own descriptions."""
    return ToolSet(name, tool_classes(name))


def toolset_for_level(level: int) -> ToolSet:
    """The tool set a level uses (levels 1 and 2 share one)."""
    if level not in (1, 2, 3):
        raise ConfigError(f"levels are 1, 2 and 3, not {level!r}")
    return toolset(LEVEL3 if level == 3 else LEVEL12)


def domains(name: str = LEVEL12) -> dict[str, str]:
    """API name -> domain for one tool set (levels 1-2: the paper's eight evaluation domains)."""
    return {cls.name: cls.domain for cls in tool_classes(name)}


@lru_cache(maxsize=None)
def database_shapes() -> dict[str, Shape]:
    """Database name -> record shape, from the tools that read each database.

    Raises:
        ConfigError: two tools give one database different shapes.
    """
    shapes: dict[str, Shape] = {}
    for name in TOOLSETS:
        for cls in tool_classes(name):
            if cls.database_name is None or cls.database_shape is None:
                continue
            known = shapes.setdefault(cls.database_name, cls.database_shape)
            if known is not cls.database_shape:
                raise ConfigError(f"{cls.name} declares another shape for the database {cls.database_name!r}")
    return shapes
