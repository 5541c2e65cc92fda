"""Level-3 movie tools: preferences, watched movies (bare list), recommendations and list conversion."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.level3.movies import MovieRecommendations, UserMoviePreferences, UserWatchedMovies
from apibank_lib.env.tools.registry import tools_defined_in
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.level3.movies")

LV3 = Path(__file__).resolve().parents[2] / "data" / "eval" / "lv3_database"
DBS = {
    "Lv3MoviePreferences": {"pat": ["Western", "Noir"]},
    "Lv3WatchedMovies": {"pat": ["Mesa Noon"], "kim": []},
    "Lv3MovieGenres": {"Western": ["Dust Road", "Mesa Noon"], "Noir": ["Wet Pavement", "Last Lamp"]},
}


def sandbox(conversion: str = "v2") -> Any:
    return sandbox_for(*TOOLS, dbs=DBS, conversion=conversion)


def call(sb: Any, name: str, **args: Any) -> dict[str, Any]:
    return sb.execute(ApiCall(name, args)).to_dict()


def test_preferences_wrapped_and_unknown_user_key_error() -> None:
    sb = sandbox()
    assert call(sb, "UserMoviePreferences", user_name="pat") == {
        "api_name": "UserMoviePreferences",
        "input": {"user_name": "pat"},
        "output": {"preferences": ["Western", "Noir"]},
        "exception": None,
    }
    assert call(sb, "UserMoviePreferences", user_name="Pat")["exception"] == "'Pat'"


def test_watched_movies_bare_list_and_user_not_found() -> None:
    sb = sandbox()
    assert call(sb, "UserWatchedMovies", user_name="pat") == {
        "api_name": "UserWatchedMovies",
        "input": {"user_name": "pat"},
        "output": ["Mesa Noon"],
        "exception": None,
    }
    assert call(sb, "UserWatchedMovies", user_name="kim")["output"] == []
    missing = call(sb, "UserWatchedMovies", user_name="lee")
    assert (missing["output"], missing["exception"]) == (None, "User not found.")


def test_recommendations_concatenate_in_order_keep_duplicates_and_watched() -> None:
    sb = sandbox()
    result = call(sb, "MovieRecommendations", preferences=["Noir", "Western", "Noir"])
    assert result == {
        "api_name": "MovieRecommendations",
        "input": {"preferences": ["Noir", "Western", "Noir"]},
        "output": {
            "recommended_movies": ["Wet Pavement", "Last Lamp", "Dust Road", "Mesa Noon", "Wet Pavement", "Last Lamp"]
        },
        "exception": None,
    }
    assert call(sb, "MovieRecommendations", preferences=[])["output"] == {"recommended_movies": []}
    assert call(sb, "MovieRecommendations", preferences=["Western", "Horror"])["exception"] == "'Horror'"


def test_recommendations_list_text_paper_versus_v2() -> None:
    text = "['Western', 'Noir']"
    paper = call(sandbox("paper"), "MovieRecommendations", preferences=text)
    assert paper == {
        "api_name": "MovieRecommendations",
        "input": {"preferences": text},
        "output": None,
        "exception": "'['",
    }
    v2 = call(sandbox("v2"), "MovieRecommendations", preferences=text)
    assert v2["input"] == {"preferences": ["Western", "Noir"]}
    assert v2["output"] == {"recommended_movies": ["Dust Road", "Mesa Noon", "Wet Pavement", "Last Lamp"]}


@pytest.mark.parametrize(
    ("cls", "args"),
    [
        (UserMoviePreferences, {"user_name": "pat"}),
        (UserWatchedMovies, {"user_name": "pat"}),
        (MovieRecommendations, {"preferences": ["Noir"]}),
    ],
)
def test_exact_checkers(cls: Any, args: dict[str, Any]) -> None:
    gold = call(sandbox(), cls.name, **args)
    tool = cls()
    assert tool.check(copy.deepcopy(gold), gold)
    assert not tool.check({**gold, "output": ["x"]}, gold)
    assert not tool.check({**gold, "input": {k: "kim" for k in args}}, gold)
    with pytest.raises(AssertionError):
        tool.check({**gold, "api_name": "Other"}, gold)


def test_bundled_recommendations_for_a_user() -> None:
    dbs = load_databases(LV3, ["Lv3MoviePreferences", "Lv3WatchedMovies", "Lv3MovieGenres"])
    sb = sandbox_for(*TOOLS, dbs=dbs, conversion="paper")
    prefs = call(sb, "UserMoviePreferences", user_name="AliceMorgan")["output"]["preferences"]
    recs = call(sb, "MovieRecommendations", preferences=prefs)["output"]["recommended_movies"]
    watched = call(sb, "UserWatchedMovies", user_name="AliceMorgan")["output"]
    assert [m for m in recs if m not in watched] == ["Zodiac", "Shutter Island", "Moonlight", "Manchester by the Sea"]
    genres = {g for gs in dbs["Lv3MoviePreferences"].values() for g in gs}
    assert genres <= set(dbs["Lv3MovieGenres"])
    titles = {t for ts in dbs["Lv3MovieGenres"].values() for t in ts}
    assert {t for ts in dbs["Lv3WatchedMovies"].values() for t in ts} <= titles
