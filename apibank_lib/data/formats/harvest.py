"""Harvesters: databases rebuilt from an official release's own gold results.

What the original fetched from the web, or hard-coded inside its tool classes,
is not part of a release's data files. Rather than copying it, both are
rebuilt from the gold records the release ships, so that replaying the gold
reproduces its recorded results:

* :func:`harvest_recordings`: the ``Dictionary`` and ``Translate`` recordings
  (levels 1-2).
* :func:`harvest_level3_tables`: the 16 level-3 tables.

## Recordings (levels 1-2)

Recordings of the two online services, harvested from an official release's gold results.

Dictionary and Translate called live web services in the original, so their gold
outputs are whatever those services answered on the day. Here both tools answer
from recordings (the ``Dictionary`` and ``Translate`` databases). For an
official release, :func:`harvest_recordings` builds those databases from the
release's own gold API records, so each recorded call is answered exactly as
recorded and everything else fails with a clear "not available offline" message.

## Level-3 tables

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

from apibank_lib.core.calls import parse_literal
from apibank_lib.core.errors import DataError, ParseError
from apibank_lib.core.types import ApiRecord, Dialogue, Level3Item
from apibank_lib.env.databases import validate_database
from apibank_lib.env.tools.base import LEVEL3
from apibank_lib.env.tools.knowledge import normalise_keyword, resolve_language
from apibank_lib.env.tools.registry import tool_classes

__all__ = ["harvest_recordings", "harvest_level3_tables"]


# --- recordings of online services (levels 1-2) ------------------------------------------------------


def _arguments(record: ApiRecord) -> dict[str, Any]:
    """The arguments the tool received (the result's echo), else the written ones."""
    echoed = record.result.get("input")
    return echoed if isinstance(echoed, dict) else dict(record.args)


def _succeeded(record: ApiRecord) -> bool:
    return record.result.get("exception") is None and record.result.get("output") is not None


def _translation_key(args: dict[str, Any]) -> tuple[str, str] | None:
    """(text, resolved target code), or None when the record cannot be keyed."""
    src, target = args.get("src"), args.get("tgt_lang")
    if not isinstance(src, str) or not (target is None or isinstance(target, str)):
        return None
    try:
        return src, resolve_language(target)
    except Exception:  # noqa: BLE001 - an unsupported language has nothing to record
        return None


def harvest_recordings(dialogues: Iterable[Dialogue]) -> dict[str, Any]:
    """Build the ``Dictionary`` and ``Translate`` databases from gold API records.

    Only successful records (no exception, an output) are used. Keys are
    normalised as the tools normalise them (the Dictionary keyword; Translate's
    resolved target language), and when two records share a key the first one,
    in the order given, wins.

    Args:
        dialogues: level-1/2 dialogues, in a stable order (e.g. sorted by id).

    Returns:
        ``{"Dictionary": {keyword: meanings}, "Translate": [{src, tgt, output}]}``,
        keywords sorted, translations sorted by (src, tgt).
    """
    meanings: dict[str, list[Any]] = {}
    translations: dict[tuple[str, str], str] = {}
    for dialogue in dialogues:
        for turn in dialogue.api_turns:
            if not _succeeded(turn):
                continue
            args, output = _arguments(turn), turn.result["output"]
            if turn.api_name == "Dictionary" and isinstance(args.get("keyword"), str) and isinstance(output, list):
                meanings.setdefault(normalise_keyword(args["keyword"]), output)
            elif turn.api_name == "Translate" and isinstance(output, str):
                key = _translation_key(args)
                if key is not None:
                    translations.setdefault(key, output)
    return {
        "Dictionary": {k: meanings[k] for k in sorted(meanings)},
        "Translate": [{"src": s, "tgt": t, "output": translations[(s, t)]} for s, t in sorted(translations)],
    }


# --- level-3 tables ------------------------------------------------------------------------------------

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
        gold says nothing), each valid for the shapes its tools declare.

    Raises:
        DataError: a successful gold step whose output lacks what its API
            returns, naming the item and step.
    """
    names = sorted({cls.database_name for cls in tool_classes(LEVEL3) if cls.database_name is not None})
    tables: Tables = {name: [] if name in _LIST_TABLES else {} for name in names}
    for item in items:
        for index, step in enumerate(item.steps):
            harvester = _HARVESTERS.get(step.api_name)
            envelope = step.result if isinstance(step.result, dict) else {}
            if harvester is None or envelope.get("exception") is not None or envelope.get("output") is None:
                continue
            args = envelope.get("input") if isinstance(envelope.get("input"), dict) else step.args
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
