"""Level-1 meeting tools: behaviour, error order, list conversion, the paper checkers and the DeleteMeeting fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.meeting import AddMeeting, DeleteMeeting, ModifyMeeting, QueryMeeting
from apibank_lib.env.tools.registry import tools_defined_in
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.meeting")

ALICE = "idvwtfktangpvyqe6b"
BEN = "emzumlenmwfqtrier2"
ACCOUNT = {
    "AliceMorgan": {"password": "sunflower88", "token": ALICE, "email": "alice.morgan@mailbox.org"},
    "BenCarter": {"password": "Tr0mbone!", "token": BEN, "email": "ben.carter@fastmail.com"},
}


def record(topic: str, start: str, user: str, location: str = "Room 2C") -> dict[str, Any]:
    end = start[:11] + "23:00:00"
    return {
        "meeting_topic": topic,
        "start_time": start,
        "end_time": end,
        "location": location,
        "attendees": ["Nina Patel"],
        "username": user,
    }


MEETING = {
    "3": record("Weekly sync", "2023-04-03 11:00:00", "BenCarter"),
    "12": record("Weekly sync", "2023-04-10 11:00:00", "AliceMorgan"),
    "5": record("Budget review", "2023-04-05 10:00:00", "AliceMorgan"),
    "7": record("Design review", "2023-04-10 11:00:00", "AliceMorgan"),
}
BAD_FORMAT = "time data '{}' does not match format '%Y-%m-%d %H:%M:%S'"
NULL_BOTH = "Meeting Topic and start_time should not be null both"
DATA = Path(__file__).resolve().parents[2] / "data" / "eval" / "init_database"


def sandbox(conversion: str = "v2", meetings: dict[str, Any] | None = None) -> Any:
    dbs = {"Account": ACCOUNT, "Meeting": MEETING if meetings is None else meetings}
    return sandbox_for(*TOOLS, dbs=dbs, conversion=conversion)


def call(sb: Any, name: str, **args: Any) -> dict[str, Any]:
    return sb.execute(ApiCall(name, args)).to_dict()


def args(
    topic: str = "Weekly sync",
    start: str = "2023-04-10 11:00:00",
    end: str = "2023-04-10 11:30:00",
    token: str = ALICE,
    location: str = "Video call",
    attendees: Any = ("Tom Becker", "Ana Lima"),
) -> dict[str, Any]:
    people = list(attendees) if isinstance(attendees, tuple) else attendees
    return {
        "token": token,
        "meeting_topic": topic,
        "start_time": start,
        "end_time": end,
        "location": location,
        "attendees": people,
    }


def envelope(name: str, inp: dict[str, Any], output: Any = "success", exception: str | None = None) -> dict[str, Any]:
    return {"api_name": name, "input": inp, "output": output, "exception": exception}


def test_meeting_tools_share_the_declared_inputs() -> None:
    for tool in TOOLS:
        assert list(tool.input_parameters) == [
            "token",
            "meeting_topic",
            "start_time",
            "end_time",
            "location",
            "attendees",
        ]
        assert tool.input_parameters["attendees"].type == "list(str)"
        assert all(p.required for p in tool.input_parameters.values())


# --- AddMeeting -------------------------------------------------------------------------------------


def test_add_meeting_parses_attendee_text_under_v2_and_keys_by_numeric_max() -> None:
    sb = sandbox()
    raw = args("Launch party", attendees="['Tom Becker', 'Ana Lima']")
    assert call(sb, "AddMeeting", **raw) == envelope("AddMeeting", args("Launch party"))
    assert sb.database("Meeting")["13"] == {
        "username": "AliceMorgan",
        "meeting_topic": "Launch party",
        "start_time": "2023-04-10 11:00:00",
        "end_time": "2023-04-10 11:30:00",
        "location": "Video call",
        "attendees": ["Tom Becker", "Ana Lima"],
    }


def test_add_meeting_under_paper_keeps_attendee_text_and_fails_the_check() -> None:
    sb = sandbox("paper")
    raw = args("Launch party", attendees="['Tom Becker', 'Ana Lima']")
    result = call(sb, "AddMeeting", **raw)
    assert result == envelope("AddMeeting", raw)
    assert sb.database("Meeting")["13"]["attendees"] == "['Tom Becker', 'Ana Lima']"
    assert not AddMeeting().check(result, envelope("AddMeeting", args("Launch party")))


def test_add_meeting_first_key_in_an_empty_database_is_zero() -> None:
    sb = sandbox(meetings={})
    call(sb, "AddMeeting", **args())
    assert list(sb.database("Meeting")) == ["0"]


@pytest.mark.parametrize(
    ("inp", "message"),
    [
        (args(" ", "", "", "nope"), BAD_FORMAT.format("")),  # start always validated, first
        (args(" ", "2023-04-10 11:00:00", "noon", "nope"), BAD_FORMAT.format("noon")),
        (args(" ", token="nope"), "Meeting Topic should not be null"),
        (args(token="nope"), "The token is invalid."),
    ],
)
def test_add_meeting_errors_in_order(inp: dict[str, Any], message: str) -> None:
    sb = sandbox()
    assert call(sb, "AddMeeting", **inp) == envelope("AddMeeting", inp, None, message)
    assert len(sb.database("Meeting")) == 4


# --- DeleteMeeting ----------------------------------------------------------------------------------


def test_delete_meeting_by_topic_or_start_first_match_of_the_user() -> None:
    sb = sandbox()
    assert call(sb, "DeleteMeeting", **args("Weekly sync", "", ""))["output"] == "success"
    assert list(sb.database("Meeting")) == ["3", "5", "7"]
    assert call(sb, "DeleteMeeting", **args("", "2023-04-10 11:00:00", ""))["output"] == "success"
    assert list(sb.database("Meeting")) == ["3", "5"]


@pytest.mark.parametrize(
    ("inp", "message"),
    [
        (args("Standup", "2023-04-11 09:00:00"), "You have no meeting about Standup"),
        (args(" ", "2023-04-11 09:00:00"), "You have no meeting about  "),  # a blank topic is truthy
        (args("", "2023-04-11 09:00:00"), "You have no meeting at time : 2023-04-11 09:00:00"),
        (args(" ", "", "", "nope"), NULL_BOTH),  # empty times are not validated; checked before the token
        (args("Standup", "", "5pm", "nope"), BAD_FORMAT.format("5pm")),
        (args("Standup", "", "", "nope"), "The token is invalid."),
    ],
)
def test_delete_meeting_errors(inp: dict[str, Any], message: str) -> None:
    sb = sandbox()
    assert call(sb, "DeleteMeeting", **inp) == envelope("DeleteMeeting", inp, None, message)
    assert len(sb.database("Meeting")) == 4


# --- ModifyMeeting ----------------------------------------------------------------------------------


def test_modify_meeting_sets_topic_and_times_but_never_location_or_attendees() -> None:
    sb = sandbox()
    inp = args("Budget review", "2023-04-06 10:00:00", "", location="Elsewhere", attendees=["Someone New"])
    assert call(sb, "ModifyMeeting", **inp) == envelope("ModifyMeeting", inp)
    assert sb.database("Meeting")["5"] == {**MEETING["5"], "start_time": "2023-04-06 10:00:00", "end_time": ""}


def test_modify_meeting_without_start_keeps_the_times() -> None:
    sb = sandbox()
    call(sb, "ModifyMeeting", **args("Budget review", "", "2023-04-05 12:00:00"))
    assert sb.database("Meeting")["5"] == MEETING["5"]


def test_modify_meeting_found_by_start_renames_the_first_match() -> None:
    sb = sandbox()
    call(sb, "ModifyMeeting", **args("Team sync", "2023-04-10 11:00:00"))
    assert sb.database("Meeting")["12"]["meeting_topic"] == "Team sync"
    assert sb.database("Meeting")["7"]["meeting_topic"] == "Design review"


@pytest.mark.parametrize(
    ("inp", "message"),
    [
        (args("Standup", "2023-04-11 09:00:00"), "You have no meeting about Standup"),
        (args("", "2023-04-11 09:00:00"), "You have no meeting at time : 2023-04-11 09:00:00"),
        (args("", "", "", "nope"), NULL_BOTH),
        (args("Standup", "9am", "", "nope"), BAD_FORMAT.format("9am")),
        (args(token="nope"), "The token is invalid."),
    ],
)
def test_modify_meeting_errors(inp: dict[str, Any], message: str) -> None:
    assert call(sandbox(), "ModifyMeeting", **inp) == envelope("ModifyMeeting", inp, None, message)


# --- QueryMeeting -----------------------------------------------------------------------------------


def test_query_meeting_returns_the_users_stored_record() -> None:
    inp = args("Design review", "", "")
    assert call(sandbox(), "QueryMeeting", **inp) == envelope("QueryMeeting", inp, MEETING["7"])
    assert call(sandbox(), "QueryMeeting", **args("", "2023-04-03 11:00:00", token=BEN))["output"] == MEETING["3"]


@pytest.mark.parametrize(
    ("inp", "message"),
    [
        (args("Standup", "2023-04-11 09:00:00"), "You have no meeting about Standup"),
        (args("", "2023-04-11 09:00:00"), "You have no meeting at time : 2023-04-11 09:00:00"),
        (args("", "", "x", "nope"), BAD_FORMAT.format("x")),
        (args("", "", "", "nope"), NULL_BOTH),
        (args(token="nope"), "The token is invalid."),
    ],
)
def test_query_meeting_errors(inp: dict[str, Any], message: str) -> None:
    assert call(sandbox(), "QueryMeeting", **inp) == envelope("QueryMeeting", inp, None, message)


def test_query_meeting_on_the_bundled_database_tells_users_apart() -> None:
    dbs = load_databases(DATA, ["Account", "Meeting"])
    sb = sandbox_for(*TOOLS, dbs=dbs)
    token = dbs["Account"]["GeorgeLiu"]["token"]
    out = call(sb, "QueryMeeting", **args("Quarterly budget review", "", "", token, "", []))["output"]
    assert out == {
        "meeting_topic": "Quarterly budget review",
        "start_time": "2023-04-05 10:00:00",
        "end_time": "2023-04-05 11:30:00",
        "location": "Finance Office",
        "attendees": ["Karen Walsh"],
        "username": "GeorgeLiu",
    }


# --- checkers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", [AddMeeting, ModifyMeeting, QueryMeeting])
@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"topic": "Weekly sync meeting"}, True),
        ({"topic": "Weekly sync"}, True),  # 2/3
        ({"topic": "weekly sync meeting"}, False),  # case-sensitive: 2/4
        ({"topic": "Weekly meeting notes"}, False),  # 2/4 is not > 0.5
        ({"token": BEN}, False),  # the rest of the input is exact, token included
        ({"attendees": ["Ana Lima"]}, False),
        ({"location": "Room 1"}, False),
    ],
)
def test_meeting_check_topic_jaccard_and_rest_of_input(tool: type, changes: dict[str, Any], expected: bool) -> None:
    gold = envelope(tool.name, args("Weekly sync meeting"))
    pred = envelope(tool.name, args(**{"topic": "Weekly sync meeting", **changes}))
    assert tool().check(pred, gold) is expected


def test_meeting_check_pops_the_topic_from_both_inputs() -> None:
    pred, gold = envelope("QueryMeeting", args()), envelope("QueryMeeting", args())
    assert QueryMeeting().check(pred, gold)
    assert "meeting_topic" not in pred["input"] and "meeting_topic" not in gold["input"]


def test_meeting_check_compares_output_and_exception() -> None:
    def gold() -> dict[str, Any]:  # a fresh gold per judgment: the check pops its topic
        return envelope("QueryMeeting", args(), MEETING["12"])

    assert QueryMeeting().check(envelope("QueryMeeting", args(), MEETING["12"]), gold())
    assert not QueryMeeting().check(envelope("QueryMeeting", args(), MEETING["7"]), gold())
    assert not QueryMeeting().check(envelope("QueryMeeting", args(), None, "The token is invalid."), gold())


def test_delete_meeting_paper_check_fails_every_successful_pair() -> None:
    with pytest.raises(KeyError, match="time"):
        DeleteMeeting().check(envelope("DeleteMeeting", args()), envelope("DeleteMeeting", args()))
    failed = envelope("DeleteMeeting", args("x"), None, "You have no meeting about x")
    assert DeleteMeeting().check(failed, envelope("DeleteMeeting", args("y"), None, "You have no meeting about x"))
    assert not DeleteMeeting().check(failed, envelope("DeleteMeeting", args()))


def test_delete_meeting_v2_check_compares_topic_and_start() -> None:
    gold = envelope("DeleteMeeting", args("Weekly sync meeting"))
    assert DeleteMeeting().check_corrected(
        envelope("DeleteMeeting", args("Weekly sync", end="", location="x", token=BEN)), gold
    )
    assert not DeleteMeeting().check_corrected(envelope("DeleteMeeting", args("Weekly planning meeting")), gold)
    assert not DeleteMeeting().check_corrected(
        envelope("DeleteMeeting", args("Weekly sync meeting", "2023-04-03 11:00:00")), gold
    )
    failed = envelope("DeleteMeeting", args(), None, NULL_BOTH)
    assert DeleteMeeting().check_corrected(failed, envelope("DeleteMeeting", args("z"), None, NULL_BOTH))
    assert not DeleteMeeting().check_corrected(failed, gold)
