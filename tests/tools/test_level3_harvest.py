"""harvest_level3_tables: rebuilding the level-3 tables from official-format gold so the gold replays."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.errors import DataError
from apibank_lib.core.types import ApiCall, ApiRecord, Level3Item
from apibank_lib.data.formats.harvest import harvest_level3_tables
from apibank_lib.env.tools.base import LEVEL3
from apibank_lib.env.tools.registry import tool_classes
from tests.helpers import sandbox_for

LEVEL3_TOOLS_WITHOUT_SEARCH = [cls for cls in tool_classes(LEVEL3) if cls.name != "ToolSearcher"]
LEVEL3_DATABASE_NAMES = sorted({cls.database_name for cls in LEVEL3_TOOLS_WITHOUT_SEARCH if cls.database_name})
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "level3_gold_sample.json"


def load_items() -> list[Level3Item]:
    raw = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return [
        Level3Item(
            i,
            it["requirement"],
            it["response"],
            [ApiRecord(s["api_name"], s["input"], s["output"]) for s in it["apis"]],
        )
        for i, it in enumerate(raw)
    ]


def step(api: str, inp: dict[str, Any], out: Any, exc: str | None = None, envelope_input: Any = "same") -> ApiRecord:
    env_in = inp if envelope_input == "same" else envelope_input
    return ApiRecord(api, inp, {"api_name": api, "input": env_in, "output": out, "exception": exc})


def item(*steps: ApiRecord) -> Level3Item:
    return Level3Item(0, "requirement", "response", list(steps))


def test_replaying_the_gold_in_order_reproduces_every_recorded_result() -> None:
    items = load_items()
    tables = harvest_level3_tables(items)
    sb = sandbox_for(*LEVEL3_TOOLS_WITHOUT_SEARCH, dbs=tables)
    replayed = 0
    for it in items:
        for s in it.steps:
            if s.api_name == "ToolSearcher":
                continue
            result = sb.execute(ApiCall(s.api_name, dict(s.args))).to_dict()
            assert result == s.result, s.api_name
            assert sb.tool(s.api_name).check(copy.deepcopy(result), copy.deepcopy(s.result)), s.api_name
            replayed += 1
    assert replayed == 25


def test_harvested_tables() -> None:
    tables = harvest_level3_tables(load_items())
    assert list(tables) == list(LEVEL3_DATABASE_NAMES)
    assert tables["Lv3MovieGenres"] == {"Western": ["Dust Road", "Mesa Noon"], "Noir": ["Wet Pavement", "Last Lamp"]}
    assert tables["Lv3Weather"] == [
        {"latitude": 12.5, "longitude": 30.25, "temperature": 24, "humidity": 40, "description": "Breezy"}
    ]
    assert tables["Lv3Likes"] == {"31": 12, "32": 0} and tables["Lv3UserPosts"] == {"3": [31, 32]}
    assert tables["Lv3Hotels"] == {
        "hotel_1": {"destination": "Hillford", "check_in_date": "2023-05-01", "check_out_date": "2023-05-05"}
    }
    pat = {"username": "pat", "password": "w1ndmill", "info": {"email": "pat@lakeview.example", "phone": "5550101"}}
    assert tables["Lv3Accounts"] == [pat]
    # quin was only ever updated: known to PersonalInfoUpdate, with nothing else known about her.
    assert tables["Lv3PersonalInfo"] == [pat, {"username": "quin", "password": "otter42", "info": {}}]
    assert tables["Lv3TravelStatus"] == {"Mara Quinn": "Traveling", "Olu Ade": "At home"}
    assert tables["Lv3Restaurants"][1] == {"coordinates": [12.49, 30.24], "name": "Pier Tacos"}


def test_unharvested_keys_fail_the_usual_way() -> None:
    sb = sandbox_for(*LEVEL3_TOOLS_WITHOUT_SEARCH, dbs=harvest_level3_tables(load_items()))
    assert (
        sb.execute(ApiCall("AccountInfo", {"username": "quin", "password": "otter42"})).exception == "User not found."
    )
    assert sb.execute(ApiCall("Geocoding", {"address": "Hillford"})).exception == "'Hillford'"
    assert sb.execute(ApiCall("LikeCount", {"post_id": 33})).exception == "Post with ID 33 does not exist."


def test_empty_gold_gives_empty_valid_tables() -> None:
    tables = harvest_level3_tables([])
    assert all(len(t) == 0 for t in tables.values())
    sb = sandbox_for(*LEVEL3_TOOLS_WITHOUT_SEARCH, dbs=tables)
    assert sb.execute(ApiCall("NearbyRestaurants", {"latitude": 1.0, "longitude": 2.0, "distance": 5})).output == {
        "restaurants": []
    }
    assert sb.execute(
        ApiCall("FlightSearch", {"source": "A", "destination": "B", "travel_dates": "2023-05-02"})
    ).output == {"flights": []}


def test_failures_and_unsplittable_recommendations_are_skipped() -> None:
    tables = harvest_level3_tables(
        [
            item(
                step("Geocoding", {"address": "Atlantis"}, None, "'Atlantis'"),
                step("MovieRecommendations", {"preferences": ["A", "B"]}, {"recommended_movies": ["x", "y", "z"]}),
                step("MovieRecommendations", {"preferences": "['A'"}, {"recommended_movies": ["x"]}),
                step("MovieRecommendations", {"preferences": "'A'"}, {"recommended_movies": ["x"]}),
                step("MovieRecommendations", {"preferences": []}, {"recommended_movies": []}),
                step("ToolSearcher", {"keywords": "Geocoding"}, {"name": "Geocoding"}),
            )
        ]
    )
    assert tables["Lv3Geocoding"] == {} and tables["Lv3MovieGenres"] == {}


def test_first_recording_wins_and_envelope_input_is_preferred() -> None:
    tables = harvest_level3_tables(
        [
            item(
                step("TravelStatus", {"member_name": "Olu Ade"}, "At home"),
                step("TravelStatus", {"member_name": "Olu Ade"}, "Traveling"),
                step("UserPosts", {"user_id": "5"}, {"post_ids": [1]}, envelope_input={"user_id": 5}),
                step("GetOccupationSalary", {"occupation": "Potter"}, {"salary": 30000}, envelope_input=None),
                step("MovieRecommendations", {"preferences": "['Noir']"}, {"recommended_movies": ["x"]}, None, None),
                step(
                    "GetWeatherForCoordinates",
                    {"latitude": "1.5", "longitude": "2"},
                    {"temperature": 9, "humidity": 50, "description": "Fog"},
                    None,
                    None,
                ),
            )
        ]
    )
    assert tables["Lv3TravelStatus"] == {"Olu Ade": "At home"}
    assert tables["Lv3UserPosts"] == {"5": [1]}
    # Without an envelope input, the step's own (textual) input is used.
    assert tables["Lv3Salaries"] == {"Potter": 30000}
    assert tables["Lv3MovieGenres"] == {"Noir": ["x"]}
    assert tables["Lv3Weather"] == [
        {"latitude": 1.5, "longitude": 2.0, "temperature": 9, "humidity": 50, "description": "Fog"}
    ]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (step("Geocoding", {"address": "X"}, {"lat": 1}), "item 0, step 0 (Geocoding)"),
        (step("LikeCount", {"post_id": "many"}, {"like_count": 3}), "(LikeCount)"),
        (
            step(
                "FlightSearch",
                {"source": "A"},
                {"flights": [{"source": "A", "destination": "B", "departure_date": 1, "arrival_date": "x"}]},
            ),
            "Lv3Flights",
        ),
    ],
)
def test_malformed_gold_is_a_data_error(bad: ApiRecord, message: str) -> None:
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        harvest_level3_tables([item(bad)])
