"""The level-3 tool set as a whole: the 21 classes, their declared parameters, the bundled tables, a chained task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apibank_lib.databases import load_databases
from apibank_lib.tools import calculator as level1_calculator
from apibank_lib.tools.base import LEVEL3, Tool
from apibank_lib.tools.level3 import Calculator
from apibank_lib.tools.registry import database_shapes, tool_classes
from apibank_lib.types import ApiCall
from tests.helpers import sandbox_for

LEVEL3_TOOLS_WITHOUT_SEARCH = [cls for cls in tool_classes(LEVEL3) if cls.name != "ToolSearcher"]
LEVEL3_DATABASE_NAMES = sorted({cls.database_name for cls in LEVEL3_TOOLS_WITHOUT_SEARCH if cls.database_name})

LV3 = Path(__file__).resolve().parents[2] / "data" / "eval" / "lv3_database"

# The declared level-3 parameters of the original (ToolSearcher excluded).
DECLARED = {
    "AccountInfo": ("username:str password:str", "status account_info"),
    "AddMeeting": ("meeting_topic:str start_time:str end_time:str location:str attendees:list(str)", "status"),
    "Calculator": ("formula:str", "result"),
    "ClothingRecommendation": ("temperature:float humidity:float weather_conditions:str", "clothing_options"),
    "EmailReminder": ("content:str time:str location:str recipient:str", "status"),
    "FlightSearch": ("source:str destination:str travel_dates:str", "flights"),
    "Geocoding": ("address:str", "latitude longitude"),
    "GetOccupationSalary": ("occupation:str", "salary"),
    "GetWeatherForCoordinates": ("latitude:float longitude:float", "temperature humidity description"),
    "HotelAvailability": ("destination:str check_in_date:str check_out_date:str", "hotels"),
    "LikeCount": ("post_id:int", "like_count"),
    "MovieRecommendations": ("preferences:list", "recommended_movies"),
    "NearbyRestaurants": ("latitude:float longitude:float distance:int", "restaurants"),
    "OrganizationMembers": ("organization:str", "members"),
    "QueryMeeting": ("user_name:str", "meetings"),
    "TaxCalculator": ("salary:float", "salary_after_tax"),
    "TravelStatus": ("member_name:str", "status"),
    "PersonalInfoUpdate": ("username:str password:str address:str", "status"),
    "UserPosts": ("user_id:int", "post_ids"),
    "UserWatchedMovies": ("user_name:str", "watched_movies"),
    "UserMoviePreferences": ("user_name:str", "preferences"),
}


def test_the_21_tools_ordered_by_name() -> None:
    assert [cls.name for cls in LEVEL3_TOOLS_WITHOUT_SEARCH] == sorted(DECLARED)


@pytest.mark.parametrize("cls", LEVEL3_TOOLS_WITHOUT_SEARCH, ids=lambda c: c.name)
def test_declared_parameters(cls: Any) -> None:
    inputs, outputs = DECLARED[cls.name]
    assert " ".join(f"{k}:{p.type}" for k, p in cls.input_parameters.items()) == inputs
    assert " ".join(cls.output_parameters) == outputs
    assert all(p.required and p.description for p in cls.input_parameters.values())
    assert cls.description and cls.searchable and cls.envelope_has_api_name
    assert not cls.takes_token()


def test_descriptions_are_distinct() -> None:
    descriptions = [cls.description for cls in LEVEL3_TOOLS_WITHOUT_SEARCH]
    assert len(set(descriptions)) == len(descriptions)


def test_level3_calculator_is_the_level1_behaviour_with_its_own_description() -> None:
    assert issubclass(Calculator, level1_calculator.Calculator) and Calculator.name == "Calculator"
    assert Calculator.description != level1_calculator.Calculator.description
    sb = sandbox_for(Calculator)
    assert sb.execute(ApiCall("Calculator", {"formula": "2+3*4-6/2"})).output == 11.0
    assert sb.execute(ApiCall("Calculator", {"formula": "1/0"})).exception == "float division by zero"


def test_stateful_tools_are_marked() -> None:
    writers = {cls.name for cls in LEVEL3_TOOLS_WITHOUT_SEARCH if cls.writes_database}
    assert writers == {"PersonalInfoUpdate"}
    stateful = {cls.name for cls in LEVEL3_TOOLS_WITHOUT_SEARCH if cls.state is not Tool.state}
    assert stateful == {"AddMeeting", "FlightSearch", "HotelAvailability"}
    # Every other tool changes nothing, so replaying it to rebuild state may be skipped.
    read_only = {cls.name for cls in LEVEL3_TOOLS_WITHOUT_SEARCH if cls.read_only}
    assert read_only == set(DECLARED) - writers - stateful


def test_one_bundled_table_per_database_all_valid_and_sized() -> None:
    assert len(LEVEL3_DATABASE_NAMES) == 16
    assert sorted(p.stem for p in LV3.glob("*.json")) == sorted(LEVEL3_DATABASE_NAMES)
    assert set(LEVEL3_DATABASE_NAMES) <= set(database_shapes())
    dbs = load_databases(LV3)
    sizes = {name: len(table) for name, table in dbs.items()}
    assert all(8 <= n <= 12 for n in sizes.values()), sizes


def test_bundled_files_are_pretty_printed() -> None:
    import json

    for path in LV3.glob("*.json"):
        text = path.read_text(encoding="utf-8")
        assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n", path.name


def test_a_chained_task_on_the_bundled_world() -> None:
    sb = sandbox_for(*LEVEL3_TOOLS_WITHOUT_SEARCH, dbs=load_databases(LV3), conversion="paper")

    def run(name: str, **args: str) -> Any:
        result = sb.execute(ApiCall(name, args))
        assert result.exception is None, (name, result.exception)
        return result.output

    # Who in Kestrel Analytics is in the office, and what should they wear in Seoul today?
    members = run("OrganizationMembers", organization="Kestrel Analytics")["members"]
    in_office = [m for m in members if run("TravelStatus", member_name=m) == "In the office"]
    assert in_office == ["Chloe Davis", "Kai Tanaka"]
    place = run("Geocoding", address="Seoul")
    weather = run("GetWeatherForCoordinates", latitude=str(place["latitude"]), longitude=str(place["longitude"]))
    clothes = run(
        "ClothingRecommendation",
        temperature=str(weather["temperature"]),
        humidity=str(weather["humidity"]),
        weather_conditions=weather["description"],
    )
    assert clothes == {"clothing_options": ["Light jacket", "Long-sleeved shirt"]}
    assert (
        run(
            "AddMeeting",
            meeting_topic="Seoul site visit",
            start_time="2023-06-05 09:00:00",
            end_time="2023-06-05 11:00:00",
            location="Seoul office",
            attendees=in_office,
        )
        == "success"
    )
    assert (
        run(
            "EmailReminder",
            content="Seoul site visit",
            time="2023-06-05 09:00:00",
            location="Seoul office",
            recipient="kai.tanaka@fastmail.com",
        )
        == "success"
    )
    assert (
        run("FlightSearch", source="Singapore", destination="Seoul", travel_dates="2023-06-02")["flights"][0][
            "arrival_date"
        ]
        == "2023-06-02 15:50:00"
    )
