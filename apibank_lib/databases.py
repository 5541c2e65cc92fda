"""Load and validate a directory of database JSON files.

The layout is the official ``init_database/`` one: one ``<Name>.json`` file per
database, the file stem being the database name tools refer to. The same loader
reads our bundled databases, an official release's, our recordings of
offline services and our level-3 tables. Known databases are checked against
the record shapes of the spec, so a broken file fails early with a message that
names the file and the offending entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from apibank_lib.errors import DataError

__all__ = ["load_databases", "load_json", "validate_database", "SHAPES", "Shape"]


# --- a tiny shape language ------------------------------------------------------------------------


class Shape:
    """A structural expectation for JSON data; ``problem`` returns the first mismatch or None."""

    def problem(self, value: Any, where: str) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError


class _Scalar(Shape):
    def __init__(self, *types: type, label: str) -> None:
        self.types, self.label = types, label

    def problem(self, value: Any, where: str) -> str | None:
        if isinstance(value, bool) and bool not in self.types:
            return f"{where} should be {self.label}, found a boolean"
        if not isinstance(value, self.types):
            return f"{where} should be {self.label}, found {type(value).__name__}"
        return None


class _Any(Shape):
    def problem(self, value: Any, where: str) -> str | None:
        return None


class DictOf(Shape):
    """An object whose values all have one shape."""

    def __init__(self, value: Shape) -> None:
        self.value = value

    def problem(self, value: Any, where: str) -> str | None:
        if not isinstance(value, dict):
            return f"{where} should be an object, found {type(value).__name__}"
        for k, v in value.items():
            p = self.value.problem(v, f"{where}[{k!r}]")
            if p:
                return p
        return None


class ListOf(Shape):
    """An array whose items all have one shape."""

    def __init__(self, item: Shape) -> None:
        self.item = item

    def problem(self, value: Any, where: str) -> str | None:
        if not isinstance(value, list):
            return f"{where} should be an array, found {type(value).__name__}"
        for i, v in enumerate(value):
            p = self.item.problem(v, f"{where}[{i}]")
            if p:
                return p
        return None


class Record(Shape):
    """An object with required (and optional) named fields; extra fields are allowed."""

    def __init__(self, required: Mapping[str, Shape], optional: Mapping[str, Shape] | None = None) -> None:
        self.required, self.optional = dict(required), dict(optional or {})

    def problem(self, value: Any, where: str) -> str | None:
        if not isinstance(value, dict):
            return f"{where} should be an object, found {type(value).__name__}"
        for k, shape in self.required.items():
            if k not in value:
                return f"{where} lacks the field {k!r}"
            p = shape.problem(value[k], f"{where}[{k!r}]")
            if p:
                return p
        for k, shape in self.optional.items():
            if k in value:
                p = shape.problem(value[k], f"{where}[{k!r}]")
                if p:
                    return p
        return None


STR = _Scalar(str, label="text")
NUM = _Scalar(int, float, label="a number")
INT = _Scalar(int, label="an integer")
BOOL = _Scalar(bool, label="a boolean")
ANY = _Any()

SHAPES: dict[str, Shape] = {
    # level-1/2 databases (official file names)
    "Account": DictOf(Record({"password": STR, "token": STR, "email": STR})),
    "Agenda": DictOf(Record({"content": STR, "time": STR, "location": STR, "username": STR})),
    "Alarm": DictOf(Record({"time": STR, "username": STR})),
    "Meeting": DictOf(
        Record(
            {
                "meeting_topic": STR,
                "start_time": STR,
                "end_time": STR,
                "location": STR,
                "attendees": ListOf(STR),
                "username": STR,
            }
        )
    ),
    "Reminder": DictOf(Record({"content": STR, "time": STR, "username": STR})),
    "Scenes": DictOf(ListOf(Record({"name": STR, "description": STR}))),
    "Appointments": DictOf(Record({"patient_name": STR, "date": STR, "doctor_name": STR})),
    "TimeSwitch": DictOf(ListOf(Record({"time": STR, "on": BOOL}))),
    "Hotel": DictOf(
        Record(
            {
                "hotel_name": STR,
                "check_in_time": STR,
                "check_out_time": STR,
                "room_count": INT,
                "adult_count": INT,
                "child_count": INT,
            }
        )
    ),
    "QuestionAnswering": DictOf(ListOf(Record({"question": STR, "answer": STR}))),
    "Symptom": DictOf(ListOf(Record({"name": STR, "description": STR, "aid": STR}))),
    "ImageCaptioning": ListOf(Record({"url": STR, "caption": STR})),
    "Bank": DictOf(Record({"balance": NUM, "age": NUM, "city": STR})),
    "HealthData": DictOf(ListOf(Record({"time": STR}))),
    "History": DictOf(ListOf(Record({"Title": STR, "Date": STR, "Description": STR}))),
    "SearchEngine": Record(
        {"raw_documents": ListOf(Record({"title": STR, "url": STR, "abstract": STR})), "tokenized_documents": ListOf(ListOf(STR))}
    ),
    "SpeechRecognition": DictOf(STR),
    "Stock": DictOf(DictOf(NUM)),
    "Wiki": DictOf(Record({"url": STR, "summary": STR, "content": STR})),
    # recordings of online services (ours; harvested from gold results for an official release)
    "Dictionary": DictOf(ListOf(Record({"partOfSpeech": STR, "definitions": ListOf(Record({"definition": STR}))}))),
    "Translate": ListOf(Record({"src": STR, "tgt": STR, "output": STR})),
}
"""Record shapes of every known database (level-3 tables are added by the level-3 section below)."""


# --- loading -------------------------------------------------------------------------------------


def load_json(path: str | Path) -> Any:
    """Read one JSON file; a syntax error becomes a DataError naming the file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot read the file: {exc.strerror}", path) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON: {exc.msg} (column {exc.colno})", path, exc.lineno) from exc


def validate_database(name: str, data: Any, path: str | Path | None = None) -> None:
    """Check ``data`` against the known shape of database ``name`` (unknown names pass)."""
    shape = SHAPES.get(name)
    if shape is None:
        return
    problem = shape.problem(data, name)
    if problem:
        raise DataError(f"database {name!r} is malformed: {problem}", path)


def load_databases(directory: str | Path, names: Iterable[str] | None = None) -> dict[str, Any]:
    """Load every ``*.json`` in ``directory`` (or just ``names``) as databases, validated.

    Args:
        directory: a folder in the ``init_database/`` layout.
        names: database names to load; all files when None. A requested name
            without a file is an error.

    Returns:
        Database name -> data, in sorted name order.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError("database directory not found", directory)
    if names is None:
        paths = sorted(directory.glob("*.json"))
    else:
        paths = [directory / f"{n}.json" for n in sorted(set(names))]
        for p in paths:
            if not p.is_file():
                raise DataError(f"database file {p.name} is missing", directory)
    out: dict[str, Any] = {}
    for p in paths:
        data = load_json(p)
        validate_database(p.stem, data, p)
        out[p.stem] = data
    return out


# --- level-3 tables -------------------------------------------------------------------------------
# (shapes of the databases behind the level-3 tool set; see apibank_lib/tools/level3/)


class IntKeyed(DictOf):
    """An object keyed by integer ids written as canonical decimal text (``"204"``, not ``"0204"``)."""

    def problem(self, value: Any, where: str) -> str | None:
        if isinstance(value, dict):
            for k in value:
                if not (isinstance(k, str) and k.isdigit() and str(int(k)) == k):
                    return f"{where} has the key {k!r}, which is not a non-negative integer in decimal"
        return super().problem(value, where)


_LV3_ACCOUNTS = ListOf(Record({"username": STR, "password": STR, "info": DictOf(ANY)}))

SHAPES.update(
    {
        "Lv3Accounts": _LV3_ACCOUNTS,
        "Lv3PersonalInfo": _LV3_ACCOUNTS,
        "Lv3Flights": ListOf(Record({"source": STR, "destination": STR, "departure_date": STR, "arrival_date": STR})),
        "Lv3Geocoding": DictOf(Record({"latitude": NUM, "longitude": NUM})),
        "Lv3Salaries": DictOf(NUM),
        "Lv3Weather": ListOf(
            Record({"latitude": NUM, "longitude": NUM, "temperature": NUM, "humidity": NUM, "description": STR})
        ),
        "Lv3Hotels": DictOf(Record({"destination": STR, "check_in_date": STR, "check_out_date": STR})),
        "Lv3Likes": IntKeyed(INT),
        "Lv3MovieGenres": DictOf(ListOf(STR)),
        "Lv3Restaurants": ListOf(Record({"coordinates": ListOf(NUM), "name": STR})),
        "Lv3Organizations": DictOf(ListOf(STR)),
        "Lv3Meetings": DictOf(
            ListOf(
                Record(
                    {
                        "meeting_id": INT,
                        "meeting_name": STR,
                        "meeting_time": STR,
                        "meeting_location": STR,
                        "meeting_attendees": ListOf(STR),
                    }
                )
            )
        ),
        "Lv3TravelStatus": DictOf(STR),
        "Lv3UserPosts": IntKeyed(ListOf(INT)),
        "Lv3WatchedMovies": DictOf(ListOf(STR)),
        "Lv3MoviePreferences": DictOf(ListOf(STR)),
    }
)
