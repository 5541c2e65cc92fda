"""Reminder tools: add, delete, modify and query a user's reminders.

All four share the ``Reminder`` database: id -> ``{content, time, username}``.
Every tool validates the time, then refuses blank content, then checks the
token (the original order, which decides which error a call reports first).

Details kept from the original:

* AddReminder keys a new reminder with the text of the largest numeric key
  plus one (``"0"`` in an empty database).
* Reminders are found by exact content **or** exact time, first match in
  database order.
* The content-based checkers compare lower-cased word sets; AddReminder and
  ModifyReminder also require equal API names (an AssertionError otherwise),
  QueryReminder does not.
"""

from __future__ import annotations

from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import STR, DictOf, Record
from apibank_lib.env.tools.base import Tool
from apibank_lib.env.tools.common import jaccard, next_numeric_key, original_errors, require_same_api, strptime_check

__all__ = ["AddReminder", "DeleteReminder", "ModifyReminder", "QueryReminder"]

_REMINDER_SHAPE = DictOf(Record({"content": STR, "time": STR, "username": STR}))
"""Record shape of the ``Reminder`` database."""

_TOKEN = Param("str", "The user's login token (from GetUserToken).")
_STATUS = {"status": Param("str", "success or failed")}


def _validate(content: Any, time: Any) -> None:
    """The checks every reminder tool makes before the token: a valid time, then non-blank content."""
    strptime_check(time)
    # Content that is not text fails on .strip() with Python's text, as in the original.
    with original_errors(AttributeError):
        blank = content.strip() == ""
    if blank:
        raise ToolFailure("Content should not be null")


def _find(db: dict[Any, Any], username: str, content: Any, time: Any) -> Any:
    """Key of the user's first reminder with this exact content or this exact time, else None."""
    for key, record in db.items():
        if record["username"] == username and (record["content"] == content or record["time"] == time):
            return key
    return None


def _not_found(content: Any, time: Any) -> ToolFailure:
    """The "nothing matched" error shared by Delete, Modify and Query."""
    return ToolFailure(f"You have no reminder about {content} or at time : {time}")


def _check_reminder(pred: dict[str, Any], gold: dict[str, Any]) -> bool:
    """Lower-cased content word-Jaccard > 0.5; time, output and exception equal (token ignored)."""
    p, g = pred["input"], gold["input"]
    return (
        jaccard(p["content"].lower(), g["content"].lower()) > 0.5
        and p["time"] == g["time"]
        and pred["output"] == gold["output"]
        and pred["exception"] == gold["exception"]
    )


class AddReminder(Tool):
    """Add a reminder for the token's user."""

    name = "AddReminder"
    domain = "schedule"
    description = "Create a reminder for the user: what to be reminded of and when."
    input_parameters = {
        "token": _TOKEN,
        "content": Param("str", "What the user wants to be reminded of."),
        "time": Param("str", "When to remind, formatted %Y-%m-%d %H:%M:%S."),
    }
    output_parameters = _STATUS
    database_name = "Reminder"
    database_shape = _REMINDER_SHAPE
    writes_database = True

    def run(self, token: Any, content: Any, time: Any) -> Any:
        _validate(content, time)
        key = next_numeric_key(self.db)
        username = self.username_for(token)
        self.db[key] = {"username": username, "content": content, "time": time}
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        require_same_api(pred, gold)
        return _check_reminder(pred, gold)


class DeleteReminder(Tool):
    """Delete the user's first reminder with the given content or time."""

    name = "DeleteReminder"
    domain = "schedule"
    description = "Remove one of the user's reminders, found by its content or by its time."
    input_parameters = {
        "token": _TOKEN,
        "content": Param("str", "The content of the reminder to remove."),
        "time": Param("str", "The time of the reminder to remove, formatted %Y-%m-%d %H:%M:%S."),
    }
    output_parameters = _STATUS
    database_name = "Reminder"
    database_shape = _REMINDER_SHAPE
    writes_database = True

    def run(self, token: Any, content: Any, time: Any) -> Any:
        _validate(content, time)
        username = self.username_for(token)
        key = _find(self.db, username, content, time)
        if key is None:
            raise _not_found(content, time)
        del self.db[key]
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        # Two successful deletions are told apart by their time alone.
        if pred["output"] == "success" and gold["output"] == "success":
            return pred["input"]["time"] == gold["input"]["time"]
        return pred["output"] == gold["output"] and pred["exception"] == gold["exception"]


class ModifyReminder(Tool):
    """Update the user's first reminder that has the given content or time."""

    name = "ModifyReminder"
    domain = "schedule"
    description = (
        "Change one of the user's reminders: the reminder with this content (or at this time) "
        "gets the given content and time."
    )
    input_parameters = {
        "token": _TOKEN,
        "content": Param("str", "The reminder's content; finds the reminder and becomes its new content."),
        "time": Param("str", "The reminder's new time, formatted %Y-%m-%d %H:%M:%S; can also find the reminder."),
    }
    output_parameters = _STATUS
    database_name = "Reminder"
    database_shape = _REMINDER_SHAPE
    writes_database = True

    def run(self, token: Any, content: Any, time: Any) -> Any:
        _validate(content, time)
        username = self.username_for(token)
        key = _find(self.db, username, content, time)
        if key is None:
            raise _not_found(content, time)
        self.db[key]["content"] = content
        self.db[key]["time"] = time
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        require_same_api(pred, gold)
        return _check_reminder(pred, gold)


class QueryReminder(Tool):
    """Return the user's first reminder that has the given content or time."""

    name = "QueryReminder"
    domain = "schedule"
    description = "Look up one of the user's reminders by its content or its time; returns the whole reminder."
    input_parameters = {
        "token": _TOKEN,
        "content": Param("str", "The content of the reminder to look up."),
        "time": Param("str", "The time of the reminder to look up, formatted %Y-%m-%d %H:%M:%S."),
    }
    output_parameters = {"info": Param("json", "The reminder: content, time and username.")}
    database_name = "Reminder"
    database_shape = _REMINDER_SHAPE
    read_only = True

    def run(self, token: Any, content: Any, time: Any) -> Any:
        _validate(content, time)
        username = self.username_for(token)
        key = _find(self.db, username, content, time)
        if key is None:
            raise _not_found(content, time)
        return self.db[key]

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return _check_reminder(pred, gold)
