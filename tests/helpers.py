"""Small builders shared by the tests."""

from __future__ import annotations

from typing import Any

from apibank_lib.protocols import get_protocol
from apibank_lib.sandbox import Sandbox
from apibank_lib.tools.account import CheckToken
from apibank_lib.tools.base import Tool
from apibank_lib.tools.toolset import ToolSet


def sandbox_for(*tools: type[Tool], dbs: dict[str, Any] | None = None, conversion: str = "v2", searcher: Any = None) -> Sandbox:
    """A sandbox over just ``tools`` (plus CheckToken, which token tools need).

    Args:
        conversion: the name of the protocol whose argument conversion to use (``v2`` or ``paper``).
    """
    listed = [CheckToken, *[t for t in tools if t is not CheckToken]]
    return Sandbox(ToolSet("test", listed), dbs or {}, conversion=get_protocol(conversion).conversion, searcher=searcher)
