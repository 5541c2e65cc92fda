"""Level-3 place and weather tools: geocoding, weather, nearby restaurants, what to wear.

Tables:

* ``Lv3Geocoding``: address (exact text) -> ``{latitude, longitude}``;
* ``Lv3Weather``: a list of ``{latitude, longitude, temperature, humidity,
  description}``, looked up by exact coordinates (the pairs Geocoding gives);
* ``Lv3Restaurants``: the list of ``{coordinates, name}`` NearbyRestaurants
  always returns: as in the original, its arguments are ignored.

ClothingRecommendation has no table: its rules are code, as in the original.

All coordinates are non-negative (places north of the equator and east of
Greenwich), because the original float conversion rejects a minus sign.

GetWeatherForCoordinates deviates on purpose in one way: for unknown
coordinates the original's TypeError escaped the tool (and the evaluator
counted the step wrong); here the same text, ``'NoneType' object is not
subscriptable``, is reported in the envelope's exception.
"""

from __future__ import annotations

import copy
from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import NUM, STR, DictOf, ListOf, Record
from apibank_lib.env.tools.base import LEVEL3, Tool
from apibank_lib.env.tools.common import original_errors, same_envelope
from apibank_lib.env.tools.level3.checks import require_same_api, same_api_and_envelope

__all__ = ["Geocoding", "GetWeatherForCoordinates", "NearbyRestaurants", "ClothingRecommendation", "recommend_clothing"]

_LV3_GEOCODING_SHAPE = DictOf(Record({"latitude": NUM, "longitude": NUM}))
"""Record shape of the ``Lv3Geocoding`` database."""

_LV3_WEATHER_SHAPE = ListOf(
    Record({"latitude": NUM, "longitude": NUM, "temperature": NUM, "humidity": NUM, "description": STR})
)
"""Record shape of the ``Lv3Weather`` database."""

_LV3_RESTAURANTS_SHAPE = ListOf(Record({"coordinates": ListOf(NUM), "name": STR}))
"""Record shape of the ``Lv3Restaurants`` database."""

_LATITUDE = Param("float", "Latitude in degrees (north of the equator).")
_LONGITUDE = Param("float", "Longitude in degrees (east of Greenwich).")


class Geocoding(Tool):
    """Turn a place name into coordinates."""

    name = "Geocoding"
    domain = "travel"
    toolset = LEVEL3
    description = "Find the latitude and longitude of a place, given its name or address."
    input_parameters = {"address": Param("str", "The place name or address, e.g. a city name.")}
    output_parameters = {
        "latitude": Param("float", "Latitude in degrees."),
        "longitude": Param("float", "Longitude in degrees."),
    }
    database_name = "Lv3Geocoding"
    database_shape = _LV3_GEOCODING_SHAPE
    read_only = True

    def run(self, address: Any) -> Any:
        # The original indexed its dict directly: an unknown address fails with the KeyError text
        # (e.g. 'Atlantis'), an address that is not hashable with the TypeError text.
        with original_errors(KeyError, TypeError):
            place = self.db[address]
        return {"latitude": place["latitude"], "longitude": place["longitude"]}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)


class GetWeatherForCoordinates(Tool):
    """Report the current weather at exact coordinates."""

    name = "GetWeatherForCoordinates"
    domain = "travel"
    toolset = LEVEL3
    description = "Get the current temperature, humidity and weather description at a latitude and longitude."
    input_parameters = {"latitude": _LATITUDE, "longitude": _LONGITUDE}
    output_parameters = {
        "temperature": Param("float", "Air temperature in degrees Celsius."),
        "humidity": Param("float", "Relative humidity in percent."),
        "description": Param("str", "A short description of the weather."),
    }
    database_name = "Lv3Weather"
    database_shape = _LV3_WEATHER_SHAPE
    read_only = True

    def run(self, latitude: Any, longitude: Any) -> Any:
        for entry in self.db:
            if (entry["latitude"], entry["longitude"]) == (latitude, longitude):
                return {
                    "temperature": entry["temperature"],
                    "humidity": entry["humidity"],
                    "description": entry["description"],
                }
        # The original subscripted the missing entry (None); the text is kept, the crash is not.
        raise ToolFailure("'NoneType' object is not subscriptable")

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        # No API-name assertion in the original.
        return same_envelope(pred, gold)


class NearbyRestaurants(Tool):
    """List restaurants near a point (the recorded list, whatever the point)."""

    name = "NearbyRestaurants"
    domain = "travel"
    toolset = LEVEL3
    description = "List restaurants within a distance (in metres) of a latitude and longitude."
    input_parameters = {
        "latitude": _LATITUDE,
        "longitude": _LONGITUDE,
        "distance": Param("int", "The search radius in metres."),
    }
    output_parameters = {"restaurants": Param("list", "Restaurants with their coordinates and names.")}
    database_name = "Lv3Restaurants"
    database_shape = _LV3_RESTAURANTS_SHAPE
    read_only = True

    def run(self, latitude: Any, longitude: Any, distance: Any) -> Any:
        # The original ignores its arguments and always returns the same list.
        return {"restaurants": copy.deepcopy(self.db)}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        # Only the input is judged (the output never varies).
        require_same_api(pred, gold)
        return pred["input"] == gold["input"]


def recommend_clothing(temperature: float, humidity: float, weather_conditions: str) -> list[str]:
    """The original's clothing rules: one band of items per temperature range, then humidity and rain extras."""
    options: list[str] = []
    if temperature < 10:
        options += ["Warm coat", "Hat", "Gloves"]
    elif temperature < 20:
        options += ["Light jacket", "Long-sleeved shirt"]
    elif temperature < 30:
        options += ["T-shirt", "Shorts"]
    elif temperature >= 30:
        options += ["Sun hat", "Sunglasses", "Loose-fitting clothes"]
    if humidity > 70:
        options += ["Umbrella", "Waterproof shoes"]
    # Conditions that are not text fail on .lower() with Python's text, as in the original.
    with original_errors(AttributeError):
        rainy = "rain" in weather_conditions.lower()
    if rainy:
        options.append("Raincoat")
    return options


class ClothingRecommendation(Tool):
    """Suggest clothing for a temperature, humidity and weather description."""

    name = "ClothingRecommendation"
    domain = "travel"
    toolset = LEVEL3
    description = "Suggest what to wear for a given temperature, humidity and weather condition."
    input_parameters = {
        "temperature": Param("float", "Air temperature in degrees Celsius."),
        "humidity": Param("float", "Relative humidity in percent."),
        "weather_conditions": Param("str", "A short description of the weather, e.g. light rain."),
    }
    output_parameters = {"clothing_options": Param("list", "Suggested items of clothing.")}
    read_only = True

    def run(self, temperature: Any, humidity: Any, weather_conditions: Any) -> Any:
        return {"clothing_options": recommend_clothing(temperature, humidity, weather_conditions)}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)
