"""Build the level-3 databases from the gold steps of an official API-Bank release.

The original level-3 tools hard-code their data; an official release ships it
only inside the classes. We never copy those sources: instead every table is
rebuilt from the gold results in ``test-data/level-3.json`` (each step's
``output`` is the full recorded envelope), so that replaying the gold steps
in order reproduces their recorded outputs.

What each gold step teaches (from the envelope's ``input``, which holds the
converted arguments, falling back to the step's own ``input``):

* AccountInfo: (username, password) -> the info dict.
* PersonalInfoUpdate: that (username, password) exists. Its table is a copy of
  the AccountInfo records plus these users (with an empty ``info`` when
  AccountInfo was never asked about them).
* FlightSearch / HotelAvailability: every flight / hotel listed in an output,
  with its recorded dates (hotels get invented ids ``hotel_1``, ...).
* Geocoding, GetOccupationSalary, LikeCount, OrganizationMembers,
  QueryMeeting, TravelStatus, UserPosts, UserWatchedMovies,
  UserMoviePreferences: argument -> recorded output.
* GetWeatherForCoordinates: (latitude, longitude) -> the recorded weather.
* MovieRecommendations: each output is cut into as many equal chunks as genres
  were requested; chunk *i* is the list of genre *i*.
* NearbyRestaurants: the first recorded list (the tool ignores its inputs).

What cannot be harvested, and what the tools then do:

* Anything the gold never asks about: the tools answer it as unknown, with
  their usual failure (KeyError text, ``User not found.``, ``The occupation is
  not in the database.``, ``Post with ID n does not exist.``, ``'NoneType'
  object is not subscriptable``); NearbyRestaurants returns an empty list when
  no step recorded one; FlightSearch and HotelAvailability return empty lists.
* The contact details of users seen only through PersonalInfoUpdate (AccountInfo
  reports ``User not found.`` for them).
* Failed gold steps (an exception or no output) teach nothing and are skipped;
  so is a MovieRecommendations output whose length is not a multiple of the
  number of genres, or whose preferences are neither a list nor a list
  written as text.
* When two steps disagree about the same key, the first one wins (the
  original data is fixed, so this only happens with hand-edited gold).

AddMeeting, Calculator, ClothingRecommendation, EmailReminder, TaxCalculator
and ToolSearcher have no table (their behaviour is code).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from apibank_lib.calls import parse_literal
from apibank_lib.databases import validate_database
from apibank_lib.errors import DataError, ParseError
from apibank_lib.tools.level3.catalog import LEVEL3_DATABASE_NAMES
from apibank_lib.types import Level3Item

__all__ = ["harvest_level3_tables"]

Tables = dict[str, Any]
Harvester = Callable[[Tables, dict[str, Any], Any], None]


def _id_text(value: Any) -> str:
    """An integer id as the decimal text our tables use as key."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not an integer id")
    return str(int(value))


def _keyed(table_name: str, arg: str, field: str | None, *, id_key: bool = False) -> Harvester:
    """A harvester storing ``output[field]`` (or the bare output) under the argument's value; first wins."""

    def harvest(tables: Tables, args: dict[str, Any], output: Any) -> None:
        key = _id_text(args[arg]) if id_key else args[arg]
        value = output if field is None else output[field]
        tables[table_name].setdefault(key, copy.deepcopy(value))

    return harvest


def _account(tables: Tables, args: dict[str, Any], output: Any) -> None:
    records = tables["Lv3Accounts"]
    if not any(r["username"] == args["username"] and r["password"] == args["password"] for r in records):
        records.append({"username": args["username"], "password": args["password"], "info": copy.deepcopy(output)})


def _personal_info(tables: Tables, args: dict[str, Any], output: Any) -> None:
    # Nothing but the pair is observable; merged with the AccountInfo records once every step is read.
    record = {"username": args["username"], "password": args["password"], "info": {}}
    if record not in tables["Lv3PersonalInfo"]:
        tables["Lv3PersonalInfo"].append(record)


def _flights(tables: Tables, args: dict[str, Any], output: Any) -> None:
    for flight in output["flights"]:
        record = {k: flight[k] for k in ("source", "destination", "departure_date", "arrival_date")}
        if record not in tables["Lv3Flights"]:
            tables["Lv3Flights"].append(record)


def _hotels(tables: Tables, args: dict[str, Any], output: Any) -> None:
    hotels = tables["Lv3Hotels"]
    for hotel in output["hotels"]:
        record = {k: hotel[k] for k in ("destination", "check_in_date", "check_out_date")}
        if record not in hotels.values():
            hotels[f"hotel_{len(hotels) + 1}"] = record


def _geocoding(tables: Tables, args: dict[str, Any], output: Any) -> None:
    tables["Lv3Geocoding"].setdefault(
        args["address"], {"latitude": output["latitude"], "longitude": output["longitude"]}
    )


def _weather(tables: Tables, args: dict[str, Any], output: Any) -> None:
    # float(): the step's own input (used when the envelope has none) holds the numbers as text.
    point = (float(args["latitude"]), float(args["longitude"]))
    if not any((w["latitude"], w["longitude"]) == point for w in tables["Lv3Weather"]):
        tables["Lv3Weather"].append(
            {
                "latitude": point[0],
                "longitude": point[1],
                "temperature": output["temperature"],
                "humidity": output["humidity"],
                "description": output["description"],
            }
        )


def _recommendations(tables: Tables, args: dict[str, Any], output: Any) -> None:
    genres, movies = args["preferences"], output["recommended_movies"]
    if isinstance(genres, str):
        # The step's own input writes the list as text, e.g. "['Action', 'Drama']".
        try:
            genres = parse_literal(genres)
        except ParseError:
            return
    if not isinstance(genres, list) or not genres or len(movies) % len(genres):
        return
    size = len(movies) // len(genres)
    for i, genre in enumerate(genres):
        tables["Lv3MovieGenres"].setdefault(genre, list(movies[i * size : (i + 1) * size]))


def _restaurants(tables: Tables, args: dict[str, Any], output: Any) -> None:
    if not tables["Lv3Restaurants"]:
        tables["Lv3Restaurants"] = [
            {**copy.deepcopy(r), "coordinates": list(r["coordinates"])} for r in output["restaurants"]
        ]


_HARVESTERS: dict[str, Harvester] = {
    "AccountInfo": _account,
    "PersonalInfoUpdate": _personal_info,
    "FlightSearch": _flights,
    "HotelAvailability": _hotels,
    "Geocoding": _geocoding,
    "GetOccupationSalary": _keyed("Lv3Salaries", "occupation", "salary"),
    "GetWeatherForCoordinates": _weather,
    "LikeCount": _keyed("Lv3Likes", "post_id", "like_count", id_key=True),
    "MovieRecommendations": _recommendations,
    "NearbyRestaurants": _restaurants,
    "OrganizationMembers": _keyed("Lv3Organizations", "organization", "members"),
    "QueryMeeting": _keyed("Lv3Meetings", "user_name", "meetings"),
    "TravelStatus": _keyed("Lv3TravelStatus", "member_name", None),
    "UserPosts": _keyed("Lv3UserPosts", "user_id", "post_ids", id_key=True),
    "UserWatchedMovies": _keyed("Lv3WatchedMovies", "user_name", None),
    "UserMoviePreferences": _keyed("Lv3MoviePreferences", "user_name", "preferences"),
}

_LIST_TABLES = {"Lv3Accounts", "Lv3PersonalInfo", "Lv3Flights", "Lv3Weather", "Lv3Restaurants"}


def _merge_personal_info(tables: Tables) -> None:
    """PersonalInfoUpdate's own copy: AccountInfo's users first, then the users only it has seen."""
    records = copy.deepcopy(tables["Lv3Accounts"])
    known = {(r["username"], r["password"]) for r in records}
    records += [r for r in tables["Lv3PersonalInfo"] if (r["username"], r["password"]) not in known]
    tables["Lv3PersonalInfo"] = records


def harvest_level3_tables(items: Iterable[Level3Item]) -> dict[str, Any]:
    """Build every level-3 database from the gold steps of an official release.

    Args:
        items: the level-3 items (``test-data/level-3.json``); each step's
            ``output`` is its full recorded envelope.

    Returns:
        Database name -> table, for all 16 level-3 databases (empty where the
        gold says nothing), each valid for ``apibank_lib.databases``.

    Raises:
        DataError: a successful gold step whose output lacks what its API
            returns, naming the item and step.
    """
    tables: Tables = {name: [] if name in _LIST_TABLES else {} for name in LEVEL3_DATABASE_NAMES}
    for item in items:
        for index, step in enumerate(item.steps):
            harvester = _HARVESTERS.get(step.api_name)
            envelope = step.output if isinstance(step.output, dict) else {}
            if harvester is None or envelope.get("exception") is not None or envelope.get("output") is None:
                continue
            args = envelope.get("input") if isinstance(envelope.get("input"), dict) else step.input
            try:
                harvester(tables, args, envelope["output"])
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise DataError(
                    f"level-3 item {item.id}, step {index} ({step.api_name}): cannot harvest its result ({exc!r})"
                ) from exc
    _merge_personal_info(tables)
    for name, table in tables.items():
        validate_database(name, table)
    return tables
