"""Alarm tools: add, delete, modify and query a user's alarm clocks.

All four share the ``Alarm`` database: id -> ``{time, username}``. Every tool
authenticates with a token, checked after the times are validated (as in the
original), and every checker compares the whole envelope exactly.

Quirks kept from the original:

* AddAlarm keys a new alarm with the *int* ``len(db) + 1``, so after an add, a
  deletion and another add, the second add overwrites the first added alarm;
  it does not refuse duplicates.
* ModifyAlarm's "not found" message speaks of an *agenda*.
"""

from __future__ import annotations

from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import STR, DictOf, Record
from apibank_lib.env.tools.base import Tool
from apibank_lib.env.tools.common import same_envelope, strptime_check

__all__ = ["AddAlarm", "DeleteAlarm", "ModifyAlarm", "QueryAlarm"]

_ALARM_SHAPE = DictOf(Record({"time": STR, "username": STR}))
"""Record shape of the ``Alarm`` database."""

_TOKEN = Param("str", "The user's login token (from GetUserToken).")
_TIME = Param("str", "When the alarm rings, formatted %Y-%m-%d %H:%M:%S.")
_STATUS = {"status": Param("str", "success or failed")}


def _find(db: dict[Any, Any], username: str, time: Any) -> Any:
    """Key of the user's first alarm at exactly this time, else None."""
    for key, record in db.items():
        if record["username"] == username and record["time"] == time:
            return key
    return None


class AddAlarm(Tool):
    """Set an alarm for the token's user."""

    name = "AddAlarm"
    domain = "schedule"
    description = "Set a new alarm clock for the user at the given date and time."
    input_parameters = {"token": _TOKEN, "time": _TIME}
    output_parameters = _STATUS
    database_name = "Alarm"
    database_shape = _ALARM_SHAPE
    writes_database = True

    def run(self, token: Any, time: Any) -> Any:
        strptime_check(time)
        # Keyed by count, as an int, like the original: a key freed by a deletion is reused.
        key = len(self.db) + 1
        username = self.username_for(token)
        self.db[key] = {"username": username, "time": time}
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_envelope(pred, gold)


class DeleteAlarm(Tool):
    """Delete the user's first alarm at the given time."""

    name = "DeleteAlarm"
    domain = "schedule"
    description = "Remove the user's alarm clock that rings at the given date and time."
    input_parameters = {"token": _TOKEN, "time": _TIME}
    output_parameters = _STATUS
    database_name = "Alarm"
    database_shape = _ALARM_SHAPE
    writes_database = True

    def run(self, token: Any, time: Any) -> Any:
        strptime_check(time)
        username = self.username_for(token)
        key = _find(self.db, username, time)
        if key is None:
            raise ToolFailure(f"You have no alarm clock at time : {time}")
        del self.db[key]
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_envelope(pred, gold)


class ModifyAlarm(Tool):
    """Move the user's first alarm at one time to another time."""

    name = "ModifyAlarm"
    domain = "schedule"
    description = "Move one of the user's alarm clocks from its current time to a new time."
    input_parameters = {
        "token": _TOKEN,
        "from_time": Param("str", "The alarm's current time, formatted %Y-%m-%d %H:%M:%S."),
        "to_time": Param("str", "The alarm's new time, formatted %Y-%m-%d %H:%M:%S."),
    }
    output_parameters = _STATUS
    database_name = "Alarm"
    database_shape = _ALARM_SHAPE
    writes_database = True

    def run(self, token: Any, from_time: Any, to_time: Any) -> Any:
        strptime_check(from_time)
        strptime_check(to_time)
        username = self.username_for(token)
        key = _find(self.db, username, from_time)
        if key is None:
            raise ToolFailure(f"You have no agenda at time : {from_time}")
        self.db[key] = {"username": username, "time": to_time}
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_envelope(pred, gold)


class QueryAlarm(Tool):
    """Return the user's first alarm at the given time."""

    name = "QueryAlarm"
    domain = "schedule"
    description = "Check whether the user has an alarm clock at the given date and time; returns the alarm."
    input_parameters = {"token": _TOKEN, "time": _TIME}
    output_parameters = {"info": Param("json", "The alarm: its time and username.")}
    database_name = "Alarm"
    database_shape = _ALARM_SHAPE
    read_only = True

    def run(self, token: Any, time: Any) -> Any:
        strptime_check(time)
        username = self.username_for(token)
        key = _find(self.db, username, time)
        if key is None:
            raise ToolFailure(f"You have no alarm clock at time : {time}")
        return self.db[key]

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_envelope(pred, gold)
