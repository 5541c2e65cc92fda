"""ToolSearcher, in its two versions: level 1-2 and level 3.

Both find the API whose metadata is closest to the keywords (see
:mod:`apibank_lib.retrieval.search`) and return its description dict ``{name,
description, input_parameters, output_parameters}``. The level-1-2 version
returns ``[GetUserToken entry, best]`` when the best API takes a token, the
GetUserToken entry carrying its search text under ``desc_for_search`` as the
original's did. The level-3 version always returns the single best dict.
"""

from __future__ import annotations

from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param, ToolSchema
from apibank_lib.env.tools.base import CORRECTED, LEVEL3, Tool, checker_rule
from apibank_lib.retrieval.search import search_text

__all__ = ["ToolSearcher", "Level3ToolSearcher", "retrieved_names"]


def retrieved_names(output: Any) -> list[str]:
    """Names of the APIs in a ToolSearcher output, without the GetUserToken companion entry.

    ``[GetUserToken, X]`` -> ``["X"]``; ``X`` -> ``["X"]``; anything else -> ``[]``.
    """
    if isinstance(output, dict):
        return [str(output.get("name"))]
    if isinstance(output, list):
        names = [str(d.get("name")) for d in output if isinstance(d, dict)]
        if len(names) > 1 and names[0] == "GetUserToken":
            names = names[1:]
        return names
    return []


class ToolSearcher(Tool):
    """Search the API pool by keywords (levels 1 and 2)."""

    name = "ToolSearcher"
    domain = "utility"
    description = "Search the available APIs by keywords and return the description of the best match."
    input_parameters = {"keywords": Param("str", "A few words describing the API you need.")}
    output_parameters = {"best_matchs": Param("Union[List[dict], dict]", "The best matching API's description.")}
    searchable = False
    read_only = True

    def run(self, keywords: Any) -> Any:
        best = self.best_match(keywords)
        if "token" in best.input_parameters and best.name != "GetUserToken":
            token_api = self.env.tool_schema("GetUserToken")  # type: ignore[union-attr]
            companion = {**token_api.to_dict(), "desc_for_search": search_text(token_api)}
            return [companion, best.to_dict()]
        return best.to_dict()

    def best_match(self, keywords: Any) -> ToolSchema:
        """The best API for ``keywords``; fails on empty keywords or when nothing matches."""
        if not isinstance(keywords, str) or not keywords.strip():
            raise ToolFailure("The keywords cannot be empty.")
        ranked = self.env.search_tools(keywords, 1) if self.env else []
        if not ranked or ranked[0][1] <= 0:
            raise ToolFailure("No API matches the keywords.")
        return ranked[0][0]

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return pred["output"] == gold["output"] and pred["exception"] == gold["exception"]

    @checker_rule(CORRECTED)
    def check_corrected(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        # Judge the retrieval, not the description text (which changes between releases).
        return (
            retrieved_names(pred["output"]) == retrieved_names(gold["output"])
            and pred["exception"] == gold["exception"]
        )


class Level3ToolSearcher(ToolSearcher):
    """Search the level-3 API pool by keywords; always returns one description dict."""

    toolset = LEVEL3
    description = "Look up, by keywords, which available API can do a task, and return that API's description."

    def run(self, keywords: Any) -> Any:
        return self.best_match(keywords).to_dict()
