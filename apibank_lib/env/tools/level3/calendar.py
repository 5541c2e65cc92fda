"""Level-3 calendar tools: add a meeting, list a user's meetings, send a reminder e-mail.

* AddMeeting (level 3) takes no token. It appends to a list owned by the tool
  instance (exposed by ``state()``), which starts empty and only grows;
  duplicates are kept.
* QueryMeeting (level 3) takes only a user name and returns that user's whole
  stored list from the ``Lv3Meetings`` table (user name -> meetings). It does
  not see meetings added by AddMeeting, as in the original.
* EmailReminder validates and then reports success; nothing is sent or stored.
"""

from __future__ import annotations

import copy
from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import INT, STR, DictOf, ListOf, Record
from apibank_lib.env.tools.base import LEVEL3, Tool
from apibank_lib.env.tools.common import original_errors, similar_topic_same_rest, strptime_check
from apibank_lib.env.tools.level3.checks import require_same_api, same_api_and_envelope

__all__ = ["AddMeeting", "QueryMeeting", "EmailReminder"]

_LV3_MEETINGS_SHAPE = DictOf(
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
)
"""Record shape of the ``Lv3Meetings`` database."""

_STATUS = {"status": Param("str", "success or failed")}


class AddMeeting(Tool):
    """Book a meeting (no login needed at level 3)."""

    name = "AddMeeting"
    domain = "schedule"
    toolset = LEVEL3
    description = (
        "Book a meeting: give its topic, start and end time (%Y-%m-%d %H:%M:%S), location and the list of attendees."
    )
    input_parameters = {
        "meeting_topic": Param("str", "The meeting's title."),
        "start_time": Param("str", "When the meeting starts, formatted %Y-%m-%d %H:%M:%S."),
        "end_time": Param("str", "When the meeting ends, formatted %Y-%m-%d %H:%M:%S."),
        "location": Param("str", "Where the meeting takes place."),
        "attendees": Param("list(str)", "The names of the people taking part, e.g. ['Eva Rossi', 'Kai Tanaka']."),
    }
    output_parameters = _STATUS

    def __init__(self, db: Any = None, env: Any = None) -> None:
        super().__init__(db, env)
        self.meetings: list[dict[str, Any]] = []

    def run(self, meeting_topic: Any, start_time: Any, end_time: Any, location: Any, attendees: Any) -> Any:
        strptime_check(start_time)
        strptime_check(end_time)
        # A topic that is not text fails on .strip() with Python's text, as in the original.
        with original_errors(AttributeError):
            empty_topic = meeting_topic.strip() == ""
        if empty_topic:
            raise ToolFailure("Meeting Topic should not be null")
        self.meetings.append(
            {
                "meeting_topic": meeting_topic,
                "start_time": start_time,
                "end_time": end_time,
                "location": location,
                "attendees": copy.deepcopy(attendees),
            }
        )
        return "success"

    def state(self) -> Any:
        return self.meetings

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        # No API-name assertion here, as in the original (the same rule as the level-1 AddMeeting).
        return similar_topic_same_rest(pred, gold)


class QueryMeeting(Tool):
    """List every meeting stored for a user."""

    name = "QueryMeeting"
    domain = "schedule"
    toolset = LEVEL3
    description = "List all meetings of a user: id, name, time, location and attendees of each."
    input_parameters = {"user_name": Param("str", "The account name of the user whose meetings to list.")}
    output_parameters = {"meetings": Param("list", "The user's meetings.")}
    database_name = "Lv3Meetings"
    database_shape = _LV3_MEETINGS_SHAPE
    read_only = True

    def run(self, user_name: Any) -> Any:
        # The original indexed its dict directly: an unknown user fails with the KeyError text (e.g. 'Bob'),
        # a name that is not hashable with the TypeError text (unhashable type: 'list').
        with original_errors(KeyError, TypeError):
            meetings = self.db[user_name]
        return {"meetings": copy.deepcopy(meetings)}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)


class EmailReminder(Tool):
    """Send a reminder e-mail about an event (simulated: nothing leaves the sandbox)."""

    name = "EmailReminder"
    domain = "schedule"
    toolset = LEVEL3
    description = "Send someone a reminder e-mail about an event, with its time and location."
    input_parameters = {
        "content": Param("str", "The text of the reminder."),
        "time": Param("str", "When the event takes place, formatted %Y-%m-%d %H:%M:%S."),
        "location": Param("str", "Where the event takes place."),
        "recipient": Param("str", "The e-mail address to send the reminder to."),
    }
    output_parameters = _STATUS
    read_only = True

    def run(self, content: Any, time: Any, location: Any, recipient: Any) -> Any:
        strptime_check(time)
        # Content that is not text fails on .strip() with Python's text, as in the original.
        with original_errors(AttributeError):
            empty_content = content.strip() == ""
        if empty_content:
            raise ToolFailure("Content should not be empty")
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        # The content is removed from both inputs (in place) and never judged.
        require_same_api(pred, gold)
        pred["input"].pop("content")
        gold["input"].pop("content")
        return (
            pred["output"] == gold["output"]
            and pred["exception"] == gold["exception"]
            and pred["input"] == gold["input"]
        )
