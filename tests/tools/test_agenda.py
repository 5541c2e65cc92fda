"""Agenda tools: behaviour, error texts and order, quirks, and the paper checkers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.errors import MissingParameterError
from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.agenda import AddAgenda, DeleteAgenda, ModifyAgenda, QueryAgenda
from apibank_lib.env.tools.registry import tools_defined_in
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.agenda")

ALICE = "idvwtfktangpvyqe6b"
BEN = "emzumlenmwfqtrier2"
ACCOUNT = {
    "AliceMorgan": {"password": "sunflower88", "token": ALICE, "email": "alice.morgan@mailbox.org"},
    "BenCarter": {"password": "Tr0mbone!", "token": BEN, "email": "ben.carter@fastmail.com"},
}
AGENDA = {
    "1": {
        "content": "Dentist appointment",
        "time": "2023-04-03 09:30:00",
        "location": "Elm Street",
        "username": "BenCarter",
    },
    "2": {
        "content": "Dentist appointment",
        "time": "2023-04-03 09:30:00",
        "location": "Bright Smile",
        "username": "AliceMorgan",
    },
    "3": {"content": "Book club", "time": "2023-04-06 19:00:00", "location": "Library", "username": "AliceMorgan"},
    "4": {
        "content": "Yoga class",
        "time": "2023-04-06 19:00:00",
        "location": "Lotus Studio",
        "username": "AliceMorgan",
    },
}
BAD_FORMAT = "time data '2023-04-03' does not match format '%Y-%m-%d %H:%M:%S'"
DATA = Path(__file__).resolve().parents[2] / "data" / "eval" / "init_database"


def sandbox(conversion: str = "v2") -> Any:
    return sandbox_for(*TOOLS, dbs={"Account": ACCOUNT, "Agenda": AGENDA}, conversion=conversion)


def call(sb: Any, name: str, **args: Any) -> dict[str, Any]:
    return sb.execute(ApiCall(name, args)).to_dict()


def item(
    content: str = "Book club", time: str = "2023-04-06 19:00:00", location: str = "Library", token: str = ALICE
) -> dict[str, str]:
    return {"token": token, "content": content, "time": time, "location": location}


def envelope(name: str, inp: dict[str, Any], output: Any = "success", exception: str | None = None) -> dict[str, Any]:
    return {"api_name": name, "input": inp, "output": output, "exception": exception}


# --- AddAgenda --------------------------------------------------------------------------------------


def test_add_agenda_stores_under_int_count_key() -> None:
    sb = sandbox()
    args = item("Lunch with Priya", "2023-04-04 12:30:00", "Cafe Verde")
    assert call(sb, "AddAgenda", **args) == envelope("AddAgenda", args)
    assert sb.database("Agenda")[5] == {
        "username": "AliceMorgan",
        "content": "Lunch with Priya",
        "time": "2023-04-04 12:30:00",
        "location": "Cafe Verde",
    }
    assert "5" not in sb.database("Agenda")


def test_add_agenda_keeps_the_raw_time_and_allows_empty_location() -> None:
    sb = sandbox()
    call(sb, "AddAgenda", **item("Run", "2023-4-3 7:5:0", ""))
    assert sb.database("Agenda")[5]["time"] == "2023-4-3 7:5:0"
    assert sb.database("Agenda")[5]["location"] == ""


def test_add_agenda_overwrites_after_a_deletion() -> None:
    sb = sandbox()
    call(sb, "AddAgenda", **item("First added", "2023-04-10 10:00:00", "A"))
    call(sb, "DeleteAgenda", **item("Yoga class", "", ""))
    call(sb, "AddAgenda", **item("Second added", "2023-04-11 10:00:00", "B"))
    db = sb.database("Agenda")
    assert len(db) == 4
    assert db[5]["content"] == "Second added"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (item(time="2023-04-03"), BAD_FORMAT),
        (item(time="2023-04-03 09:30:00 "), "unconverted data remains:  "),
        (item(time="2023-04-03", content=" ", token="nope"), BAD_FORMAT),  # time first
        (item(content="  ", token="nope"), "Content should not be null"),  # content before token
        (item(token="nope"), "The token is invalid."),
    ],
)
def test_add_agenda_errors_in_order(args: dict[str, str], message: str) -> None:
    sb = sandbox()
    assert call(sb, "AddAgenda", **args) == envelope("AddAgenda", args, None, message)
    assert len(sb.database("Agenda")) == 4


def test_add_agenda_requires_every_argument() -> None:
    args = item()
    del args["location"]
    with pytest.raises(MissingParameterError, match=r"^missing required parameter location of AddAgenda$"):
        sandbox().execute(ApiCall("AddAgenda", args))


# --- DeleteAgenda -----------------------------------------------------------------------------------


def test_delete_agenda_by_content_only_touches_the_users_items() -> None:
    sb = sandbox()
    assert call(sb, "DeleteAgenda", **item("Dentist appointment", "", "")) == envelope(
        "DeleteAgenda", item("Dentist appointment", "", "")
    )
    assert list(sb.database("Agenda")) == ["1", "3", "4"]


def test_delete_agenda_by_time_deletes_the_first_match_only() -> None:
    sb = sandbox()
    assert call(sb, "DeleteAgenda", **item("Nothing like it", "2023-04-06 19:00:00", "x"))["output"] == "success"
    assert list(sb.database("Agenda")) == ["1", "2", "4"]


@pytest.mark.parametrize(
    ("args", "output", "message"),
    [
        (item("Gym", "2023-04-09 08:00:00"), None, "You have no meeting about Gym"),
        (item("", "2023-04-09 08:00:00"), None, "You have no meeting at time : 2023-04-09 08:00:00"),
        (item("", ""), "success", None),  # nothing given: success, nothing deleted
        (item("Gym", "2023-04-03"), None, BAD_FORMAT),
        (item("Gym", "2023-04-03", token="nope"), None, BAD_FORMAT),  # time before token
        (item("Book club", "", token="nope"), None, "The token is invalid."),  # empty time is not validated
    ],
)
def test_delete_agenda_outcomes(args: dict[str, str], output: Any, message: str | None) -> None:
    sb = sandbox()
    assert call(sb, "DeleteAgenda", **args) == envelope("DeleteAgenda", args, output, message)
    assert len(sb.database("Agenda")) == 4


# --- ModifyAgenda -----------------------------------------------------------------------------------


def test_modify_agenda_replaces_the_whole_record_found_by_time() -> None:
    sb = sandbox()
    args = item("Book club: chapter 5", "2023-04-06 19:00:00", "Cafe Verde")
    assert call(sb, "ModifyAgenda", **args) == envelope("ModifyAgenda", args)
    record = sb.database("Agenda")["3"]
    assert record == {
        "username": "AliceMorgan",
        "content": "Book club: chapter 5",
        "time": "2023-04-06 19:00:00",
        "location": "Cafe Verde",
    }
    assert list(record) == ["username", "content", "time", "location"]
    assert sb.database("Agenda")["4"]["content"] == "Yoga class"


def test_modify_agenda_found_by_content_moves_the_time() -> None:
    sb = sandbox()
    call(sb, "ModifyAgenda", **item("Yoga class", "2023-04-07 08:00:00", "Park"))
    assert sb.database("Agenda")["4"]["time"] == "2023-04-07 08:00:00"


@pytest.mark.parametrize(
    ("args", "output", "message"),
    [
        (item("Gym", "2023-04-09 08:00:00"), None, "You have no agenda about Gym"),
        (item("", "2023-04-09 08:00:00"), None, "You have no agenda at time : 2023-04-09 08:00:00"),
        (item("", ""), "Error", None),  # the original's returned Exception('Error'), as text
        (item("Gym", "2023-04-03", token="nope"), None, BAD_FORMAT),
        (item("Book club", token="nope"), None, "The token is invalid."),
    ],
)
def test_modify_agenda_outcomes(args: dict[str, str], output: Any, message: str | None) -> None:
    assert call(sandbox(), "ModifyAgenda", **args) == envelope("ModifyAgenda", args, output, message)


# --- QueryAgenda ------------------------------------------------------------------------------------


def test_query_agenda_returns_the_users_stored_record() -> None:
    args = item("Dentist appointment", "", "anywhere")
    assert call(sandbox(), "QueryAgenda", **args) == envelope("QueryAgenda", args, AGENDA["2"])
    assert call(sandbox(), "QueryAgenda", **item("", "2023-04-03 09:30:00", "", BEN))["output"] == AGENDA["1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (item("Gym", "2023-04-09 08:00:00"), "You have no agenda about Gym"),
        (item("", "2023-04-09 08:00:00"), "You have no agenda at time : 2023-04-09 08:00:00"),
        (item("", ""), "Error"),
        (item("Gym", "2023-04-03", token="nope"), BAD_FORMAT),
        (item("Book club", token="nope"), "The token is invalid."),
    ],
)
def test_query_agenda_errors(args: dict[str, str], message: str) -> None:
    assert call(sandbox(), "QueryAgenda", **args) == envelope("QueryAgenda", args, None, message)


def test_query_agenda_on_the_bundled_database_tells_users_apart() -> None:
    dbs = load_databases(DATA, ["Account", "Agenda"])
    token = dbs["Account"]["BenCartwright"]["token"]
    sb = sandbox_for(*TOOLS, dbs=dbs)
    out = call(sb, "QueryAgenda", **item("Dentist appointment", "", "", token))["output"]
    assert out == {
        "content": "Dentist appointment",
        "time": "2023-04-03 09:30:00",
        "location": "Maple Dental Clinic",
        "username": "BenCartwright",
    }


# --- checkers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pred_content", "expected"),
    [
        ("Dentist appointment follow-up", True),  # 2/3
        ("Lunch with Marco", False),  # 2/4 is not > 0.5
        ("dentist appointment", False),  # case-sensitive
    ],
)
def test_add_agenda_check_content_jaccard(pred_content: str, expected: bool) -> None:
    gold_content = "Lunch with Priya" if pred_content.startswith("Lunch") else "Dentist appointment"
    gold = envelope("AddAgenda", item(gold_content))
    pred = envelope("AddAgenda", item(pred_content, token="other-token"))  # token is not compared
    assert AddAgenda().check(pred, gold) is expected


def test_add_agenda_check_other_fields_and_api_name() -> None:
    gold = envelope("AddAgenda", item())
    assert not AddAgenda().check(envelope("AddAgenda", item(location="Home")), gold)
    assert not AddAgenda().check(envelope("AddAgenda", item(time="2023-04-06 19:00:01")), gold)
    assert not AddAgenda().check(envelope("AddAgenda", item(), None, "The token is invalid."), gold)
    with pytest.raises(AssertionError, match="The API name is not correct."):
        AddAgenda().check(envelope("ModifyAgenda", item()), gold)


@pytest.mark.parametrize("tool", [ModifyAgenda, QueryAgenda])
def test_modify_and_query_check_have_no_api_name_assertion(tool: type) -> None:
    gold = envelope(tool.name, item("Book club"), AGENDA["3"])
    assert tool().check(envelope("Other", item("Book club monthly"), AGENDA["3"]), gold)
    assert not tool().check(envelope(tool.name, item("Book club"), AGENDA["4"]), gold)


def test_delete_agenda_check_compares_only_time_when_both_succeed() -> None:
    gold = envelope("DeleteAgenda", item("Book club"))
    assert DeleteAgenda().check(envelope("DeleteAgenda", item("Something else", location="x")), gold)
    assert not DeleteAgenda().check(envelope("DeleteAgenda", item("Book club", time="")), gold)
    failed = envelope("DeleteAgenda", item("Gym"), None, "You have no meeting about Gym")
    assert DeleteAgenda().check(failed, envelope("DeleteAgenda", item("Other"), None, "You have no meeting about Gym"))
    assert not DeleteAgenda().check(failed, gold)
