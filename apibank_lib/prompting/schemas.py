"""API descriptions without implementations, for prompts over data that is not executed (training corpora, ToolAlpaca)."""

from __future__ import annotations

from apibank_lib.core.types import ToolSchema
from apibank_lib.data.formats.train_corpus import SEARCHER

__all__ = ["SchemaCatalog"]


class SchemaCatalog:
    """The API descriptions a prompt may show: corpus APIs plus the shared ToolSearcher.

    Stands in for a :class:`~apibank_lib.env.tools.toolset.ToolSet` where the APIs
    have metadata but no implementation (training dialogues are not executed).
    """

    def __init__(self, schemas: dict[str, ToolSchema]) -> None:
        from apibank_lib.env.tools.registry import toolset_for_level

        self._schemas = dict(schemas)
        self._schemas.setdefault(SEARCHER, toolset_for_level(1).schema(SEARCHER))

    def __contains__(self, name: object) -> bool:
        return name in self._schemas

    def schema(self, name: str) -> ToolSchema:
        """The description of ``name``."""
        return self._schemas[name]
