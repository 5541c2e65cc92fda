"""Small builders shared by the tests."""

from __future__ import annotations

from typing import Any

from apibank_lib.sandbox import Sandbox
from apibank_lib.tools.account import CheckToken
from apibank_lib.tools.base import Tool
from apibank_lib.tools.toolset import ToolSet


def sandbox_for(*tools: type[Tool], dbs: dict[str, Any] | None = None, conversion: str = "v2", searcher: Any = None) -> Sandbox:
    """A sandbox over just ``tools`` (plus CheckToken, which token tools need)."""
    listed = [CheckToken, *[t for t in tools if t is not CheckToken]]
    return Sandbox(ToolSet("test", listed), dbs or {}, conversion=conversion, searcher=searcher)  # type: ignore[arg-type]
