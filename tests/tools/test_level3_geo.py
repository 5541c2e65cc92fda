"""Level-3 Geocoding, GetWeatherForCoordinates, NearbyRestaurants, ClothingRecommendation."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.errors import ParameterTypeError
from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.level3.geo import (
    ClothingRecommendation,
    Geocoding,
    GetWeatherForCoordinates,
    NearbyRestaurants,
    recommend_clothing,
)
from apibank_lib.env.tools.registry import tools_defined_in
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.level3.geo")

LV3 = Path(__file__).resolve().parents[2] / "data" / "eval" / "lv3_database"
PLACES = {
    "Lisbon Harbour": {"latitude": 38.7, "longitude": 9.14},
    "Kyoto": {"latitude": 35.0116, "longitude": 135.7681},
}
WEATHER = [
    {"latitude": 35.0116, "longitude": 135.7681, "temperature": 17, "humidity": 72, "description": "Drizzle"},
    {"latitude": 35.0116, "longitude": 135.7681, "temperature": 99, "humidity": 0, "description": "shadowed"},
]
RESTAURANTS = [
    {"coordinates": [35.01, 135.77], "name": "Nishiki Ramen"},
    {"coordinates": [38.71, 9.13], "name": "Tasca Azul"},
]


def sandbox(conversion: str = "v2") -> Any:
    dbs = {"Lv3Geocoding": PLACES, "Lv3Weather": WEATHER, "Lv3Restaurants": RESTAURANTS}
    return sandbox_for(*TOOLS, dbs=dbs, conversion=conversion)


def call(sb: Any, name: str, **args: Any) -> dict[str, Any]:
    return sb.execute(ApiCall(name, args)).to_dict()


def test_geocoding_exact_address() -> None:
    sb = sandbox()
    assert call(sb, "Geocoding", address="Kyoto") == {
        "api_name": "Geocoding",
        "input": {"address": "Kyoto"},
        "output": {"latitude": 35.0116, "longitude": 135.7681},
        "exception": None,
    }
    assert call(sb, "Geocoding", address="Lisbon")["exception"] == "'Lisbon'"
    assert call(sb, "Geocoding", address="kyoto")["exception"] == "'kyoto'"


def test_weather_first_exact_coordinates_from_text_or_numbers() -> None:
    expected = {"temperature": 17, "humidity": 72, "description": "Drizzle"}
    assert call(sandbox("paper"), "GetWeatherForCoordinates", latitude="35.0116", longitude="135.7681") == {
        "api_name": "GetWeatherForCoordinates",
        "input": {"latitude": 35.0116, "longitude": 135.7681},
        "output": expected,
        "exception": None,
    }
    assert call(sandbox(), "GetWeatherForCoordinates", latitude=35.0116, longitude=135.7681)["output"] == expected


def test_weather_unknown_coordinates_are_reported_in_the_envelope() -> None:
    result = call(sandbox(), "GetWeatherForCoordinates", latitude=35.01, longitude=135.7681)
    assert result == {
        "api_name": "GetWeatherForCoordinates",
        "input": {"latitude": 35.01, "longitude": 135.7681},
        "output": None,
        "exception": "'NoneType' object is not subscriptable",
    }


def test_negative_coordinates_are_rejected_by_paper_conversion_only() -> None:
    with pytest.raises(ParameterTypeError, match="invalid parameter type."):
        sandbox("paper").execute(ApiCall("GetWeatherForCoordinates", {"latitude": "35.0116", "longitude": "-9.14"}))
    result = call(sandbox("v2"), "GetWeatherForCoordinates", latitude="35.0116", longitude="-9.14")
    assert result["exception"] == "'NoneType' object is not subscriptable"


def test_weather_checker_has_no_name_assertion() -> None:
    tool = GetWeatherForCoordinates()
    gold = call(sandbox(), "GetWeatherForCoordinates", latitude=35.0116, longitude=135.7681)
    assert tool.check({**copy.deepcopy(gold), "api_name": "Geocoding"}, gold)
    assert tool.check({**gold, "input": {"latitude": 35.0116, "longitude": 135.7681}}, gold)
    assert not tool.check({**gold, "input": {"latitude": 35.0, "longitude": 135.7681}}, gold)
    assert not tool.check({**gold, "output": None, "exception": "x"}, gold)


def test_nearby_restaurants_ignore_their_inputs() -> None:
    sb = sandbox("paper")
    first = call(sb, "NearbyRestaurants", latitude="38.7", longitude="9.14", distance="300")
    assert first == {
        "api_name": "NearbyRestaurants",
        "input": {"latitude": 38.7, "longitude": 9.14, "distance": 300},
        "output": {"restaurants": RESTAURANTS},
        "exception": None,
    }
    assert call(sb, "NearbyRestaurants", latitude="0", longitude="0", distance="1")["output"] == first["output"]


def test_nearby_restaurants_checker_compares_input_only() -> None:
    tool = NearbyRestaurants()
    gold = {
        "api_name": "NearbyRestaurants",
        "input": {"latitude": 38.7, "longitude": 9.14, "distance": 300},
        "output": {"restaurants": RESTAURANTS},
        "exception": None,
    }
    assert tool.check({**copy.deepcopy(gold), "output": None, "exception": "boom"}, gold)
    assert not tool.check({**gold, "input": {"latitude": 38.7, "longitude": 9.14, "distance": 500}}, gold)
    with pytest.raises(AssertionError):
        tool.check({**gold, "api_name": "Geocoding"}, gold)


@pytest.mark.parametrize(
    ("temperature", "humidity", "conditions", "expected"),
    [
        (9.9, 70, "Clear", ["Warm coat", "Hat", "Gloves"]),
        (10, 70.1, "Sunny", ["Light jacket", "Long-sleeved shirt", "Umbrella", "Waterproof shoes"]),
        (19.99, 50, "Light RAIN", ["Light jacket", "Long-sleeved shirt", "Raincoat"]),
        (20, 0, "Brainstorm weather", ["T-shirt", "Shorts", "Raincoat"]),  # substring match, as in the original
        (
            30,
            90,
            "Heavy Rain",
            ["Sun hat", "Sunglasses", "Loose-fitting clothes", "Umbrella", "Waterproof shoes", "Raincoat"],
        ),
        (0, 0.9, "", ["Warm coat", "Hat", "Gloves"]),  # the original's fractional humidity never fires
    ],
)
def test_clothing_rules(temperature: float, humidity: float, conditions: str, expected: list[str]) -> None:
    assert recommend_clothing(temperature, humidity, conditions) == expected


def test_clothing_recommendation_envelope_and_checker() -> None:
    sb = sandbox("paper")
    result = call(sb, "ClothingRecommendation", temperature="10", humidity="55", weather_conditions="Windy")
    assert result == {
        "api_name": "ClothingRecommendation",
        "input": {"temperature": 10.0, "humidity": 55.0, "weather_conditions": "Windy"},
        "output": {"clothing_options": ["Light jacket", "Long-sleeved shirt"]},
        "exception": None,
    }
    tool = ClothingRecommendation()
    gold = copy.deepcopy(result)
    assert tool.check({**result, "input": {"temperature": 10, "humidity": 55, "weather_conditions": "Windy"}}, gold)
    assert not tool.check({**result, "input": {**result["input"], "weather_conditions": "windy"}}, gold)
    with pytest.raises(AssertionError):
        tool.check({**result, "api_name": "GetWeatherForCoordinates"}, gold)
    assert Geocoding().check(
        copy.deepcopy(call(sb, "Geocoding", address="Kyoto")), call(sb, "Geocoding", address="Kyoto")
    )


def test_bundled_chain_from_city_to_clothing() -> None:
    dbs = load_databases(LV3, ["Lv3Geocoding", "Lv3Weather", "Lv3Restaurants"])
    sb = sandbox_for(*TOOLS, dbs=dbs, conversion="paper")
    place = call(sb, "Geocoding", address="Berlin")["output"]
    weather = call(sb, "GetWeatherForCoordinates", latitude=str(place["latitude"]), longitude=str(place["longitude"]))
    assert weather["output"] == {"temperature": 8, "humidity": 76, "description": "Light rain"}
    w = weather["output"]
    clothes = call(
        sb,
        "ClothingRecommendation",
        temperature=str(w["temperature"]),
        humidity=str(w["humidity"]),
        weather_conditions=w["description"],
    )
    assert clothes["output"]["clothing_options"] == [
        "Warm coat",
        "Hat",
        "Gloves",
        "Umbrella",
        "Waterproof shoes",
        "Raincoat",
    ]


def test_bundled_places_all_have_weather_with_non_negative_numbers() -> None:
    dbs = load_databases(LV3, ["Lv3Geocoding", "Lv3Weather", "Lv3Restaurants"])
    sb = sandbox_for(*TOOLS, dbs=dbs, conversion="paper")
    assert 8 <= len(dbs["Lv3Geocoding"]) <= 12
    for address, place in dbs["Lv3Geocoding"].items():
        result = call(
            sb, "GetWeatherForCoordinates", latitude=str(place["latitude"]), longitude=str(place["longitude"])
        )
        assert result["exception"] is None, address
    for w in dbs["Lv3Weather"]:
        assert min(w["latitude"], w["longitude"], w["temperature"], w["humidity"]) >= 0
    for r in dbs["Lv3Restaurants"]:
        assert min(r["coordinates"]) >= 0
