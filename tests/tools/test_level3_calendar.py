"""Level-3 AddMeeting, QueryMeeting and EmailReminder: validation order, state, list conversion, checkers."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.level3.calendar import AddMeeting, EmailReminder, QueryMeeting
from apibank_lib.env.tools.registry import tools_defined_in
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.level3.calendar")

LV3 = Path(__file__).resolve().parents[2] / "data" / "eval" / "lv3_database"
BAD_DT = "time data '{}' does not match format '%Y-%m-%d %H:%M:%S'"
REVIEW = {
    "meeting_id": 12,
    "meeting_name": "Roadmap review",
    "meeting_time": "2023-04-04 10:00:00",
    "meeting_location": "Room 4",
    "meeting_attendees": ["Chloe Davis", "George Liu"],
}
MEETINGS = {"ChloeDavis": [REVIEW], "GeorgeLiu": [REVIEW, {**REVIEW, "meeting_id": 13, "meeting_name": "Roadmap"}]}


def sandbox(conversion: str = "v2") -> Any:
    return sandbox_for(*TOOLS, dbs={"Lv3Meetings": MEETINGS}, conversion=conversion)


def call(sb: Any, name: str, **args: Any) -> dict[str, Any]:
    return sb.execute(ApiCall(name, args)).to_dict()


def meeting(**overrides: Any) -> dict[str, Any]:
    args = {
        "meeting_topic": "Launch retro",
        "start_time": "2023-04-18 14:00:00",
        "end_time": "2023-04-18 15:00:00",
        "location": "Room 4",
        "attendees": ["Chloe Davis", "Kai Tanaka"],
    }
    return {**args, **overrides}


def test_add_meeting_appends_to_per_instance_state_duplicates_included() -> None:
    sb = sandbox()
    assert call(sb, "AddMeeting", **meeting()) == {
        "api_name": "AddMeeting",
        "input": meeting(),
        "output": "success",
        "exception": None,
    }
    call(sb, "AddMeeting", **meeting())
    assert sb.tool("AddMeeting").state() == [meeting(), meeting()]
    assert sandbox().tool("AddMeeting").state() == []


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"start_time": "2023-04-18"}, BAD_DT.format("2023-04-18")),
        ({"start_time": "2023-04-18 14:00:00 ", "meeting_topic": ""}, "unconverted data remains:  "),
        # end_time is checked even when the start is fine, and before the topic.
        ({"end_time": "", "meeting_topic": " "}, BAD_DT.format("")),
        ({"meeting_topic": "  "}, "Meeting Topic should not be null"),
    ],
)
def test_add_meeting_errors_in_order(overrides: dict[str, Any], message: str) -> None:
    sb = sandbox()
    result = call(sb, "AddMeeting", **meeting(**overrides))
    assert (result["output"], result["exception"]) == (None, message)
    assert sb.tool("AddMeeting").state() == []


def test_add_meeting_attendees_text_stays_text_under_paper_and_is_parsed_under_v2() -> None:
    text = "['Chloe Davis', 'Kai Tanaka']"
    paper = sandbox("paper")
    assert call(paper, "AddMeeting", **meeting(attendees=text))["input"]["attendees"] == text
    assert paper.tool("AddMeeting").state()[0]["attendees"] == text
    v2 = sandbox("v2")
    assert call(v2, "AddMeeting", **meeting(attendees=text))["input"]["attendees"] == ["Chloe Davis", "Kai Tanaka"]


def test_add_meeting_checker_fuzzy_topic_exact_rest_no_name_assert() -> None:
    tool = AddMeeting()
    gold = {"api_name": "AddMeeting", "input": meeting(), "output": "success", "exception": None}

    def judged(pred_input: dict[str, Any], api: str = "AddMeeting") -> bool:
        pred = {"api_name": api, "input": pred_input, "output": "success", "exception": None}
        return tool.check(pred, copy.deepcopy(gold))

    assert judged(meeting(meeting_topic="Launch retro meeting"))  # J = 2/3
    assert not judged(meeting(meeting_topic="launch retro"))  # case-sensitive: J = 0
    assert not judged(meeting(location="Room 5"))
    assert not judged(meeting(attendees=["Chloe Davis"]))
    assert judged(meeting(), api="QueryMeeting")  # no API-name assertion in this checker
    pred = {"api_name": "AddMeeting", "input": meeting(), "output": "success", "exception": None}
    g = copy.deepcopy(gold)
    tool.check(pred, g)
    assert "meeting_topic" not in pred["input"] and "meeting_topic" not in g["input"]  # popped in place
    with pytest.raises(KeyError):
        tool.check({"api_name": "AddMeeting", "input": {}, "output": "success", "exception": None}, copy.deepcopy(gold))


def test_query_meeting_returns_the_whole_list_wrapped() -> None:
    result = call(sandbox(), "QueryMeeting", user_name="GeorgeLiu")
    assert result == {
        "api_name": "QueryMeeting",
        "input": {"user_name": "GeorgeLiu"},
        "output": {"meetings": MEETINGS["GeorgeLiu"]},
        "exception": None,
    }


def test_query_meeting_unknown_user_gives_the_key_error_text() -> None:
    result = call(sandbox(), "QueryMeeting", user_name="georgeliu")
    assert (result["output"], result["exception"]) == (None, "'georgeliu'")


def test_query_meeting_does_not_see_added_meetings() -> None:
    sb = sandbox()
    call(sb, "AddMeeting", **meeting())
    assert call(sb, "QueryMeeting", user_name="ChloeDavis")["output"] == {"meetings": [REVIEW]}


def test_query_meeting_checker() -> None:
    tool = QueryMeeting()
    gold = {
        "api_name": "QueryMeeting",
        "input": {"user_name": "ChloeDavis"},
        "output": {"meetings": [REVIEW]},
        "exception": None,
    }
    assert tool.check(copy.deepcopy(gold), gold)
    assert not tool.check({**gold, "output": {"meetings": []}}, gold)
    with pytest.raises(AssertionError):
        tool.check({**gold, "api_name": "AddMeeting"}, gold)


def reminder(**overrides: Any) -> dict[str, Any]:
    args = {
        "content": "Bring the signed contract",
        "time": "2023-04-18 14:00:00",
        "location": "Room 4",
        "recipient": "kai.tanaka@fastmail.com",
    }
    return {**args, **overrides}


def test_email_reminder_success_and_errors() -> None:
    sb = sandbox()
    assert call(sb, "EmailReminder", **reminder())["output"] == "success"
    bad_time = call(sb, "EmailReminder", **reminder(time="18/04/2023", content=""))
    assert bad_time["exception"] == BAD_DT.format("18/04/2023")
    empty = call(sb, "EmailReminder", **reminder(content=" \n"))
    assert (empty["output"], empty["exception"]) == (None, "Content should not be empty")


def test_email_reminder_checker_ignores_content() -> None:
    tool = EmailReminder()
    gold = {"api_name": "EmailReminder", "input": reminder(), "output": "success", "exception": None}

    def judged(pred_input: dict[str, Any], api: str = "EmailReminder") -> bool:
        pred = {"api_name": api, "input": pred_input, "output": "success", "exception": None}
        return tool.check(pred, copy.deepcopy(gold))

    assert judged(reminder(content="something else entirely"))
    assert not judged(reminder(recipient="eva.rossi@posta.it"))
    assert not judged(reminder(time="2023-04-18 14:30:00"))
    with pytest.raises(AssertionError):
        judged(reminder(), api="AddMeeting")


def test_bundled_meetings_are_shared_between_attendees() -> None:
    dbs = load_databases(LV3, ["Lv3Meetings", "Lv3TravelStatus"])
    sb = sandbox_for(*TOOLS, dbs=dbs)
    alice = call(sb, "QueryMeeting", user_name="AliceMorgan")["output"]["meetings"]
    assert [m["meeting_name"] for m in alice] == [
        "Quarterly budget review",
        "Budget review follow-up",
        "Spring regatta planning",
    ]
    ben = call(sb, "QueryMeeting", user_name="BenCarter")["output"]["meetings"]
    assert ben == alice[:2]
    for meetings in dbs["Lv3Meetings"].values():
        for m in meetings:
            assert set(m["meeting_attendees"]) <= set(dbs["Lv3TravelStatus"])
