"""Health tools: symptom look-ups and personal health records.

EmergencyKnowledge and SymptomSearch read the ``Symptom`` database: lower-case
symptom -> list of possible conditions ``{name, description, aid}``.
QueryHealthData and RecordHealthData share ``HealthData``: upper-case user id
-> list of records ``{time, <metric>: value, ...}`` (values are numbers or
lists, e.g. ``blood_pressure: [120, 80]``); user ids are matched ignoring case.

Fixes made by the corrected rule:

* RecordHealthData: the original (HEAD) checker does not compare
  ``health_data`` at all, so a prediction recording wrong values is judged
  correct. Ours also compares it the way the checker of the era when the gold
  was recorded did: each item reduced to ``{name: str(name), value: str(value)}``,
  the list sorted by its text form. An item that is not an object is judged
  incorrect instead of making the checker raise.
* EmergencyKnowledge, SymptomSearch: the original checkers raise (rather than
  judge) when either symptom is blank; ours judges that incorrect.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import STR, DictOf, ListOf, Record
from apibank_lib.env.tools.base import CORRECTED, Tool, checker_rule
from apibank_lib.env.tools.common import DT, original_errors, strptime_check, year_pad_normalise

__all__ = ["EmergencyKnowledge", "SymptomSearch", "QueryHealthData", "RecordHealthData"]

_SYMPTOM_SHAPE = DictOf(ListOf(Record({"name": STR, "description": STR, "aid": STR})))
"""Record shape of the ``Symptom`` database."""

_HEALTH_DATA_SHAPE = DictOf(ListOf(Record({"time": STR})))
"""Record shape of the ``HealthData`` database."""


def _is_blank(symptom: Any) -> bool:
    """A symptom the original checkers would raise on."""
    return symptom.strip() == ""


def _symptom_key(symptom: Any) -> str:
    """SymptomSearch's normalisation (tool and checker): strip, lower-case, refuse a blank symptom."""
    key = symptom.strip().lower()
    if key == "":
        raise ToolFailure("The symptom cannot be empty.")
    return key


def _same_symptom_result(pred: dict[str, Any], gold: dict[str, Any], key: Callable[[Any], str]) -> bool:
    """Normalised symptoms equal; output and exception equal."""
    return (
        key(pred["input"]["symptom"]) == key(gold["input"]["symptom"])
        and pred["output"] == gold["output"]
        and pred["exception"] == gold["exception"]
    )


class EmergencyKnowledge(Tool):
    """First-aid advice for the conditions that may cause a symptom."""

    name = "EmergencyKnowledge"
    domain = "health"
    description = "Given a symptom, list the conditions that may cause it together with first-aid advice for each."
    input_parameters = {"symptom": Param("str", "The symptom, e.g. fever or chest pain.")}
    output_parameters = {"results": Param("list", "Possible conditions, each with a name and first-aid advice (aid).")}
    database_name = "Symptom"
    database_shape = _SYMPTOM_SHAPE
    read_only = True

    def run(self, symptom: Any) -> Any:
        # A symptom that is not text fails on .strip() with Python's text, as in the original.
        with original_errors(AttributeError):
            key = symptom.strip()
        if key == "":
            # The original means to refuse a blank symptom but then lower-cases its own error object;
            # the resulting AttributeError text is what the caller sees.
            raise ToolFailure("'Exception' object has no attribute 'lower'")
        key = key.lower()
        if key not in self.db:
            raise ToolFailure("The symptom does not exist.")
        return [{"name": c["name"], "aid": c["aid"]} for c in self.db[key]]

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return _same_symptom_result(pred, gold, self._checker_key)

    @checker_rule(CORRECTED)
    def check_corrected(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        if _is_blank(pred["input"]["symptom"]) or _is_blank(gold["input"]["symptom"]):
            return False
        return self.check(pred, gold)

    @staticmethod
    def _checker_key(symptom: Any) -> str:
        key = symptom.strip()
        if key == "":
            # The original checker fails the same way as the tool, and the error escapes the evaluator.
            raise AttributeError("'Exception' object has no attribute 'lower'")
        return key.lower()


class SymptomSearch(Tool):
    """Conditions that may cause a symptom, with short descriptions."""

    name = "SymptomSearch"
    domain = "health"
    description = "Given a symptom, list the conditions that may cause it, each with a short description."
    input_parameters = {"symptom": Param("str", "The symptom to look up, e.g. headache.")}
    output_parameters = {"results": Param("list", "Possible conditions, each with a name and a description.")}
    database_name = "Symptom"
    database_shape = _SYMPTOM_SHAPE
    read_only = True

    def run(self, symptom: Any) -> Any:
        # A symptom that is not text fails on .strip() with Python's text, as in the original.
        with original_errors(AttributeError):
            key = _symptom_key(symptom)
        if key not in self.db:
            raise ToolFailure("The symptom does not exist.")
        return [{"name": c["name"], "description": c["description"]} for c in self.db[key]]

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        # A blank symptom on either side makes this raise, as the original's checker did.
        return _same_symptom_result(pred, gold, _symptom_key)

    @checker_rule(CORRECTED)
    def check_corrected(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        if _is_blank(pred["input"]["symptom"]) or _is_blank(gold["input"]["symptom"]):
            return False
        return self.check(pred, gold)


def _user_key(user_id: Any) -> str | None:
    """Upper-cased, stripped user id; None for a blank one."""
    return user_id.upper().strip() or None


def _moment(value: Any) -> datetime | Exception:
    """A time as a datetime, or the exception object when it does not parse (which equals nothing)."""
    return year_pad_normalise(value, DT, as_datetime=True)


class QueryHealthData(Tool):
    """A user's health records within a time span."""

    name = "QueryHealthData"
    domain = "health"
    description = "Retrieve a user's recorded health data (heart rate, blood pressure ...) between two times."
    input_parameters = {
        "user_id": Param("str", "The user's id, e.g. U20341."),
        "start_time": Param("str", "Start of the span, as YYYY-MM-DD HH:MM:SS."),
        "end_time": Param("str", "End of the span, as YYYY-MM-DD HH:MM:SS."),
    }
    output_parameters = {"health_data": Param("list", "The records in the span, each with its time and measurements.")}
    database_name = "HealthData"
    database_shape = _HEALTH_DATA_SHAPE
    read_only = True

    def run(self, user_id: Any, start_time: Any, end_time: Any) -> Any:
        # An id that is not text fails on .upper() with Python's text, as in the original.
        with original_errors(AttributeError):
            uid = _user_key(user_id)
        if uid is None:
            raise ToolFailure("The user id cannot be empty.")
        # The original keeps a time's parse error as a value and raises it (or both, joined) only now.
        start, end = _moment(start_time), _moment(end_time)
        if isinstance(start, Exception) and isinstance(end, Exception):
            raise ToolFailure(f"{start}; {end}")
        if isinstance(start, Exception):
            raise ToolFailure(str(start)) from start
        if isinstance(end, Exception):
            raise ToolFailure(str(end)) from end
        if start > end:
            raise ToolFailure("The start time cannot be later than the end time.")
        if uid not in self.db:
            raise ToolFailure("The user id does not exist.")
        found = [record for record in self.db[uid] if start <= strptime_check(record["time"], DT) <= end]
        if not found:
            raise ToolFailure("There is no health data in the given time span.")
        return found

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        p, g = pred["input"], gold["input"]
        return (
            _user_key(p["user_id"]) == _user_key(g["user_id"])
            and _moment(p["start_time"]) == _moment(g["start_time"])
            and _moment(p["end_time"]) == _moment(g["end_time"])
            and pred["output"] == gold["output"]
            and pred["exception"] == gold["exception"]
        )


def _comparable_items(health_data: Any) -> list[dict[str, str]] | None:
    """The gold-era checker's view of health_data: items as text, sorted by their text form."""
    if health_data is None:
        return None
    return sorted(({"name": str(i["name"]), "value": str(i["value"])} for i in health_data), key=str)


class RecordHealthData(Tool):
    """Record a user's measurements at a given time."""

    name = "RecordHealthData"
    domain = "health"
    description = "Record a user's health measurements (e.g. heart rate, blood pressure) taken at a given time."
    input_parameters = {
        "user_id": Param("str", "The user's id, e.g. U20341."),
        "time": Param("str", "When the measurements were taken, as YYYY-MM-DD HH:MM:SS."),
        "health_data": Param(
            "list",
            "The measurements, a list of objects with a 'name' and a 'value', "
            "e.g. [{'name': 'heart_rate', 'value': 72}].",
            required=False,
        ),
    }
    output_parameters = {"status": Param("str", "success or failed")}
    database_name = "HealthData"
    database_shape = _HEALTH_DATA_SHAPE
    writes_database = True

    def echo_input(self, kwargs: dict[str, Any]) -> Any:
        # The original's envelope always lists all three parameters.
        return {name: kwargs.get(name) for name in self.input_parameters}

    def run(self, user_id: Any, time: Any, health_data: Any = None) -> Any:
        # An id that is not text fails on .upper() with Python's text, as in the original.
        with original_errors(AttributeError):
            uid = user_id.upper().strip()
        if uid == "":
            raise ToolFailure("The user id cannot be empty.")
        when = year_pad_normalise(time, DT)
        if isinstance(when, Exception):
            raise ToolFailure(str(when)) from when
        if not health_data:
            raise ToolFailure("The health data cannot be empty.")
        names: list[Any] = []
        # The original walks the data as given, so data of the wrong shape fails with Python's text:
        # ``'bool' object is not iterable``; on an item that is not an object, the membership test is
        # ``argument of type 'int' is not iterable`` or, on text (an unparsed list), a substring test
        # after which ``string indices must be integers, not 'str'``.
        with original_errors(TypeError):
            for item in health_data:
                if "name" not in item:
                    raise ToolFailure("The health data has invalid format.")
                if item["name"] in names:
                    raise ToolFailure("The health data cannot contain duplicate items.")
                names.append(item["name"])
        records = self.db.setdefault(uid, [])
        same_time = [record for record in records if record["time"] == when]
        if same_time:
            target = same_time[-1]  # the original keeps the last match
        else:
            target = {"time": when}
        # Items are written one by one, as in the original: an item without a value fails here with the
        # KeyError text 'value' (earlier items of the same call stay written), a name that is not
        # hashable with ``unhashable type: 'list'``.
        with original_errors(KeyError, TypeError):
            for item in health_data:
                target[item["name"]] = item["value"]
        if not same_time:
            records.append(target)
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        p, g = pred["input"], gold["input"]
        return (
            str(p["user_id"]).upper().strip() == g["user_id"].upper().strip()
            and year_pad_normalise(p["time"], DT) == year_pad_normalise(g["time"], DT)
            and pred["output"] == gold["output"]
            and pred["exception"] == gold["exception"]
        )

    @checker_rule(CORRECTED)
    def check_corrected(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        try:
            same_data = _comparable_items(pred["input"]["health_data"]) == _comparable_items(
                gold["input"]["health_data"]
            )
        except TypeError:  # an item that is not an object (or data that is not a list)
            return False
        return same_data and self.check(pred, gold)
