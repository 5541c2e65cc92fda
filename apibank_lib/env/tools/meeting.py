"""Meeting tools of levels 1-2: add, delete, modify and query a user's meetings.

All four share the ``Meeting`` database: id -> ``{meeting_topic, start_time,
end_time, location, attendees, username}``. Every tool takes the same six
arguments (``attendees`` is declared ``list(str)``) and authenticates with a
token, checked after the times and the topic (the original order, which
decides which error a call reports first). The level-3 AddMeeting and
QueryMeeting, which take no token, live in ``tools/level3``.

Details kept from the original:

* AddMeeting keys a new meeting with the text of the largest numeric key plus
  one (``"0"`` in an empty database) and stores ``attendees`` as received: under
  the original conversion a list written as text stays text.
* Meetings are found by exact topic **or** exact start time, first match in
  database order; ModifyMeeting never changes ``location`` or ``attendees``.
* The Add/Modify/Query checkers remove ``meeting_topic`` from both inputs they
  are given (harmless: the protocols pass copies).

Checker fix (the corrected rule):

* DeleteMeeting: when both calls succeed, the original checker reads
  ``input['time']``, a key this API does not have, so a correct deletion is
  always judged incorrect. The corrected rule compares what identifies the deleted
  meeting instead: topic word-Jaccard > 0.5 and an equal ``start_time``.
"""

from __future__ import annotations

from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import STR, DictOf, ListOf, Record
from apibank_lib.env.tools.base import CORRECTED, Tool, checker_rule
from apibank_lib.env.tools.common import (
    jaccard,
    next_numeric_key,
    original_errors,
    similar_topic_same_rest,
    strptime_check,
)

__all__ = ["AddMeeting", "DeleteMeeting", "ModifyMeeting", "QueryMeeting"]

_MEETING_SHAPE = DictOf(
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
)
"""Record shape of the ``Meeting`` database."""


def _inputs(purpose: str) -> dict[str, Param]:
    """The six declared inputs every meeting tool shares, worded for ``purpose``."""
    return {
        "token": Param("str", "The user's login token (from GetUserToken)."),
        "meeting_topic": Param("str", f"The meeting's title; {purpose}."),
        "start_time": Param("str", "When the meeting starts, formatted %Y-%m-%d %H:%M:%S."),
        "end_time": Param("str", "When the meeting ends, formatted %Y-%m-%d %H:%M:%S."),
        "location": Param("str", "Where the meeting takes place."),
        "attendees": Param("list(str)", "The names of the people taking part, e.g. ['Ana Lima', 'Tom Becker']."),
    }


_STATUS = {"status": Param("str", "success or failed")}


def _blank_topic(meeting_topic: Any) -> bool:
    """Whether the topic is blank; a topic that is not text fails on .strip() with Python's text, as in the original."""
    with original_errors(AttributeError):
        return meeting_topic.strip() == ""


def _validate_lookup(meeting_topic: Any, start_time: Any, end_time: Any) -> None:
    """Checks made before the token by Delete, Modify and Query: given times parse; topic or start given."""
    if start_time:
        strptime_check(start_time)
    if end_time:
        strptime_check(end_time)
    if _blank_topic(meeting_topic) and not start_time:
        raise ToolFailure("Meeting Topic and start_time should not be null both")


def _find(db: dict[Any, Any], username: str, meeting_topic: Any, start_time: Any) -> Any:
    """Key of the user's first meeting with this exact topic or this exact start time, else None."""
    for key, record in db.items():
        if record["username"] == username and (
            record["meeting_topic"] == meeting_topic or record["start_time"] == start_time
        ):
            return key
    return None


def _not_found(meeting_topic: Any, start_time: Any) -> ToolFailure:
    """The "nothing matched" error: about the topic if one was given (blank counts), else the time."""
    if meeting_topic:
        return ToolFailure(f"You have no meeting about {meeting_topic}")
    return ToolFailure(f"You have no meeting at time : {start_time}")


class AddMeeting(Tool):
    """Book a meeting for the token's user."""

    name = "AddMeeting"
    domain = "schedule"
    description = "Book a meeting for the user: its topic, start and end times, place and attendees."
    input_parameters = _inputs("must not be blank")
    output_parameters = _STATUS
    database_name = "Meeting"
    database_shape = _MEETING_SHAPE
    writes_database = True

    def run(self, token: Any, meeting_topic: Any, start_time: Any, end_time: Any, location: Any, attendees: Any) -> Any:
        strptime_check(start_time)
        strptime_check(end_time)
        if _blank_topic(meeting_topic):
            raise ToolFailure("Meeting Topic should not be null")
        key = next_numeric_key(self.db)
        username = self.username_for(token)
        self.db[key] = {
            "username": username,
            "meeting_topic": meeting_topic,
            "start_time": start_time,
            "end_time": end_time,
            "location": location,
            "attendees": attendees,
        }
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return similar_topic_same_rest(pred, gold)


class DeleteMeeting(Tool):
    """Cancel the user's first meeting with the given topic or start time."""

    name = "DeleteMeeting"
    domain = "schedule"
    description = "Cancel one of the user's meetings, found by its topic or by its start time."
    input_parameters = _inputs("finds the meeting to cancel")
    output_parameters = _STATUS
    database_name = "Meeting"
    database_shape = _MEETING_SHAPE
    writes_database = True

    def run(self, token: Any, meeting_topic: Any, start_time: Any, end_time: Any, location: Any, attendees: Any) -> Any:
        _validate_lookup(meeting_topic, start_time, end_time)
        username = self.username_for(token)
        key = _find(self.db, username, meeting_topic, start_time)
        if key is None:
            raise _not_found(meeting_topic, start_time)
        del self.db[key]
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        if pred["output"] == "success" and gold["output"] == "success":
            # The original reads a key this API does not have: KeyError, judged incorrect.
            return pred["input"]["time"] == gold["input"]["time"]
        return pred["output"] == gold["output"] and pred["exception"] == gold["exception"]

    @checker_rule(CORRECTED)
    def check_corrected(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        if pred["output"] == "success" and gold["output"] == "success":
            p, g = pred["input"], gold["input"]
            return jaccard(p["meeting_topic"], g["meeting_topic"]) > 0.5 and p["start_time"] == g["start_time"]
        return pred["output"] == gold["output"] and pred["exception"] == gold["exception"]


class ModifyMeeting(Tool):
    """Change the topic and times of the user's first meeting with the given topic or start time."""

    name = "ModifyMeeting"
    domain = "schedule"
    description = (
        "Change one of the user's meetings, found by its topic or start time: a given topic replaces the "
        "title, a given start time replaces both start and end times."
    )
    input_parameters = _inputs("finds the meeting and becomes its new title")
    output_parameters = _STATUS
    database_name = "Meeting"
    database_shape = _MEETING_SHAPE
    writes_database = True

    def run(self, token: Any, meeting_topic: Any, start_time: Any, end_time: Any, location: Any, attendees: Any) -> Any:
        _validate_lookup(meeting_topic, start_time, end_time)
        username = self.username_for(token)
        key = _find(self.db, username, meeting_topic, start_time)
        if key is None:
            raise _not_found(meeting_topic, start_time)
        record = self.db[key]
        if meeting_topic:
            record["meeting_topic"] = meeting_topic
        if start_time:
            record["start_time"] = start_time
            record["end_time"] = end_time
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return similar_topic_same_rest(pred, gold)


class QueryMeeting(Tool):
    """Return the user's first meeting with the given topic or start time."""

    name = "QueryMeeting"
    domain = "schedule"
    description = "Look up one of the user's meetings by its topic or its start time; returns the whole meeting."
    input_parameters = _inputs("finds the meeting")
    output_parameters = {
        "info": Param("json", "The meeting: topic, start and end times, location, attendees and username.")
    }
    database_name = "Meeting"
    database_shape = _MEETING_SHAPE
    read_only = True

    def run(self, token: Any, meeting_topic: Any, start_time: Any, end_time: Any, location: Any, attendees: Any) -> Any:
        _validate_lookup(meeting_topic, start_time, end_time)
        username = self.username_for(token)
        key = _find(self.db, username, meeting_topic, start_time)
        if key is None:
            raise _not_found(meeting_topic, start_time)
        return self.db[key]

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return similar_topic_same_rest(pred, gold)
