"""Agenda tools: add, delete, modify and query a user's agenda items.

All four share the ``Agenda`` database: id -> ``{content, time, location, username}``.
Every tool authenticates with a token; where the token is checked among the
other validations follows the original, because it decides which error a
call reports first.

Quirks kept from the original (the gold data was recorded with them):

* AddAgenda keys a new item with the *int* ``len(db) + 1``. After an add, a
  delete of another item and a second add, the second add reuses that key and
  overwrites the first added item.
* DeleteAgenda's "not found" messages speak of a *meeting*, and a delete with
  empty content and empty time succeeds without deleting anything.
* Items are found by exact content **or** exact time, first match in database
  order; ``location`` never takes part in a match.

One deviation: when ModifyAgenda gets neither content nor time and nothing
matches, the original *returns* an ``Exception('Error')`` object as its output
(with no exception); ours returns the text ``"Error"``, which keeps envelopes
JSON-serialisable and is judged the same (no gold output equals either).
"""

from __future__ import annotations

from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import STR, DictOf, Record
from apibank_lib.env.tools.base import Tool
from apibank_lib.env.tools.common import jaccard, original_errors, require_same_api, strptime_check

__all__ = ["AddAgenda", "DeleteAgenda", "ModifyAgenda", "QueryAgenda"]

_AGENDA_SHAPE = DictOf(Record({"content": STR, "time": STR, "location": STR, "username": STR}))
"""Record shape of the ``Agenda`` database."""

_TOKEN = Param("str", "The user's login token (from GetUserToken).")
_TIME = Param("str", "The item's date and time, formatted %Y-%m-%d %H:%M:%S.")
_STATUS = {"status": Param("str", "success or failed")}


def _find(db: dict[Any, Any], username: str, content: Any, time: Any) -> Any:
    """Key of the user's first item with this exact content or this exact time, else None."""
    for key, record in db.items():
        if record["username"] == username and (record["content"] == content or record["time"] == time):
            return key
    return None


def _check_item(pred: dict[str, Any], gold: dict[str, Any]) -> bool:
    """The agenda rule: content word-Jaccard > 0.5; time, location, output, exception equal."""
    p, g = pred["input"], gold["input"]
    return (
        jaccard(p["content"], g["content"]) > 0.5
        and p["time"] == g["time"]
        and p["location"] == g["location"]
        and pred["output"] == gold["output"]
        and pred["exception"] == gold["exception"]
    )


class AddAgenda(Tool):
    """Add an agenda item for the token's user."""

    name = "AddAgenda"
    domain = "schedule"
    description = "Put a new item on the user's agenda: what it is, when it takes place and where."
    input_parameters = {
        "token": _TOKEN,
        "content": Param("str", "What the agenda item is, e.g. 'Lunch with Priya'."),
        "time": _TIME,
        "location": Param("str", "Where the item takes place."),
    }
    output_parameters = _STATUS
    database_name = "Agenda"
    database_shape = _AGENDA_SHAPE
    writes_database = True

    def run(self, token: Any, content: Any, time: Any, location: Any) -> Any:
        strptime_check(time)
        # Content that is not text fails on .strip() with Python's text, as in the original.
        with original_errors(AttributeError):
            blank = content.strip() == ""
        if blank:
            raise ToolFailure("Content should not be null")
        # The original counts items for the key (an int, never equal to the str
        # keys of the file), so a key freed by a deletion is reused: see the module docstring.
        key = len(self.db) + 1
        username = self.username_for(token)
        self.db[key] = {"username": username, "content": content, "time": time, "location": location}
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        require_same_api(pred, gold)
        return _check_item(pred, gold)


class DeleteAgenda(Tool):
    """Delete the user's first agenda item with the given content or time."""

    name = "DeleteAgenda"
    domain = "schedule"
    description = "Remove an item from the user's agenda, found by its content or by its time."
    input_parameters = {
        "token": _TOKEN,
        "content": Param("str", "The content of the item to remove."),
        "time": _TIME,
        "location": Param("str", "The item's location (not used to find it)."),
    }
    output_parameters = _STATUS
    database_name = "Agenda"
    database_shape = _AGENDA_SHAPE
    writes_database = True

    def run(self, token: Any, content: Any, time: Any, location: Any) -> Any:
        if time:
            strptime_check(time)
        username = self.username_for(token)
        key = _find(self.db, username, content, time)
        if key is not None:
            del self.db[key]
            return "success"
        if content:
            raise ToolFailure(f"You have no meeting about {content}")
        if time:
            raise ToolFailure(f"You have no meeting at time : {time}")
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        # Two successful deletions are told apart by their time alone.
        if pred["output"] == "success" and gold["output"] == "success":
            return pred["input"]["time"] == gold["input"]["time"]
        return pred["output"] == gold["output"] and pred["exception"] == gold["exception"]


class ModifyAgenda(Tool):
    """Replace the user's first agenda item that has the given content or time."""

    name = "ModifyAgenda"
    domain = "schedule"
    description = (
        "Change an item on the user's agenda: the item with this content (or at this time) "
        "gets the given content, time and location."
    )
    input_parameters = {
        "token": _TOKEN,
        "content": Param("str", "The item's content; finds the item and becomes its new content."),
        "time": Param("str", "The item's new date and time, formatted %Y-%m-%d %H:%M:%S; can also find the item."),
        "location": Param("str", "The item's new location."),
    }
    output_parameters = _STATUS
    database_name = "Agenda"
    database_shape = _AGENDA_SHAPE
    writes_database = True

    def run(self, token: Any, content: Any, time: Any, location: Any) -> Any:
        if time:
            strptime_check(time)
        username = self.username_for(token)
        key = _find(self.db, username, content, time)
        if key is not None:
            self.db[key] = {"username": username, "content": content, "time": time, "location": location}
            return "success"
        if content:
            raise ToolFailure(f"You have no agenda about {content}")
        if time:
            raise ToolFailure(f"You have no agenda at time : {time}")
        return "Error"  # the original returns Exception('Error') as the output: see the module docstring

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return _check_item(pred, gold)


class QueryAgenda(Tool):
    """Return the user's first agenda item that has the given content or time."""

    name = "QueryAgenda"
    domain = "schedule"
    description = "Look up an item on the user's agenda by its content or its time; returns the whole item."
    input_parameters = {
        "token": _TOKEN,
        "content": Param("str", "The content of the item to look up."),
        "time": _TIME,
        "location": Param("str", "The item's location (not used for the look-up)."),
    }
    output_parameters = {"info": Param("json", "The agenda item: content, time, location and username.")}
    database_name = "Agenda"
    database_shape = _AGENDA_SHAPE
    read_only = True

    def run(self, token: Any, content: Any, time: Any, location: Any) -> Any:
        if time:
            strptime_check(time)
        username = self.username_for(token)
        key = _find(self.db, username, content, time)
        if key is not None:
            return self.db[key]
        if content:
            raise ToolFailure(f"You have no agenda about {content}")
        if time:
            raise ToolFailure(f"You have no agenda at time : {time}")
        raise ToolFailure("Error")

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return _check_item(pred, gold)
