"""ToolSearcher (both versions) over the real tool sets, with the real packaged embedding model."""

from __future__ import annotations

import pytest

from apibank_lib.env.sandbox import Sandbox
from apibank_lib.env.tools.registry import toolset_for_level
from apibank_lib.env.tools.searcher import retrieved_names
from apibank_lib.retrieval.search import search_text


@pytest.fixture(scope="module")
def box12() -> Sandbox:
    return Sandbox(toolset_for_level(1), {})


def test_token_api_comes_with_the_login_api(box12: Sandbox) -> None:
    out = box12.execute("[ToolSearcher(keywords='set an alarm clock')]").output
    assert isinstance(out, list) and [d["name"] for d in out] == ["GetUserToken", "AddAlarm"]
    token_api = toolset_for_level(1).schema("GetUserToken")
    assert out[0] == {**token_api.to_dict(), "desc_for_search": search_text(token_api)}
    assert set(out[1]) == {"name", "description", "input_parameters", "output_parameters"}
    assert retrieved_names(out) == ["AddAlarm"]


def test_api_without_token_is_returned_alone(box12: Sandbox) -> None:
    out = box12.execute("[ToolSearcher(keywords='book a hotel room')]").output
    assert isinstance(out, dict) and out["name"] == "BookHotel"
    assert out == toolset_for_level(1).schema("BookHotel").to_dict()


def test_searcher_never_returns_itself(box12: Sandbox) -> None:
    out = box12.execute("[ToolSearcher(keywords='search for tools and APIs by keywords')]").output
    assert "ToolSearcher" not in retrieved_names(out)


def test_level3_version_returns_one_dict() -> None:
    box = Sandbox(toolset_for_level(3), {})
    out = box.execute("[ToolSearcher(keywords='coordinates of a city address')]").output
    assert isinstance(out, dict) and out["name"] == "Geocoding"
    assert len(toolset_for_level(3).searchable()) == 21


def test_checkers(box12: Sandbox) -> None:
    tool = box12.tool("ToolSearcher")
    gold = box12.execute("[ToolSearcher(keywords='set an alarm clock')]").to_dict()
    reworded = {**gold, "output": [gold["output"][0], {**gold["output"][1], "description": "older wording"}]}
    assert tool.check(gold, gold) and not tool.check(reworded, gold)
    assert tool.check_corrected(reworded, gold)  # v2 judges the API retrieved, not the description text
    other = box12.execute("[ToolSearcher(keywords='book a hotel room')]").to_dict()
    assert not tool.check_corrected(other, gold)


def test_empty_keywords_are_an_exception(box12: Sandbox) -> None:
    assert box12.execute("[ToolSearcher(keywords='  ')]").exception == "The keywords cannot be empty."
