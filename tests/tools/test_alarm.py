"""Alarm tools: behaviour, error texts and order, quirks, and the exact checkers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.alarm import AddAlarm, DeleteAlarm, ModifyAlarm, QueryAlarm
from apibank_lib.env.tools.base import LEVEL12
from apibank_lib.env.tools.registry import tool_classes, tools_defined_in
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.alarm")

ALICE = "idvwtfktangpvyqe6b"
BEN = "emzumlenmwfqtrier2"
ACCOUNT = {
    "AliceMorgan": {"password": "sunflower88", "token": ALICE, "email": "alice.morgan@mailbox.org"},
    "BenCarter": {"password": "Tr0mbone!", "token": BEN, "email": "ben.carter@fastmail.com"},
}
ALARM = {
    "1": {"time": "2023-04-03 07:00:00", "username": "BenCarter"},
    "2": {"time": "2023-04-03 07:00:00", "username": "AliceMorgan"},
    "3": {"time": "2023-04-04 07:00:00", "username": "AliceMorgan"},
}
T = "2023-04-03 07:00:00"
DATA = Path(__file__).resolve().parents[2] / "data" / "eval" / "init_database"


def sandbox(conversion: str = "v2") -> Any:
    return sandbox_for(*TOOLS, dbs={"Account": ACCOUNT, "Alarm": ALARM}, conversion=conversion)


def call(sb: Any, name: str, **args: Any) -> dict[str, Any]:
    return sb.execute(ApiCall(name, args)).to_dict()


def envelope(name: str, inp: dict[str, Any], output: Any = "success", exception: str | None = None) -> dict[str, Any]:
    return {"api_name": name, "input": inp, "output": output, "exception": exception}


def bad_format(value: str) -> str:
    return f"time data '{value}' does not match format '%Y-%m-%d %H:%M:%S'"


def test_add_alarm_stores_under_int_count_key_without_duplicate_check() -> None:
    sb = sandbox()
    args = {"token": ALICE, "time": T}
    assert call(sb, "AddAlarm", **args) == envelope("AddAlarm", args)
    assert sb.database("Alarm")[4] == {"username": "AliceMorgan", "time": T}


def test_add_alarm_overwrites_after_a_deletion() -> None:
    sb = sandbox()
    call(sb, "AddAlarm", token=ALICE, time="2023-04-10 06:00:00")
    call(sb, "DeleteAlarm", token=ALICE, time="2023-04-04 07:00:00")
    call(sb, "AddAlarm", token=BEN, time="2023-04-11 06:00:00")
    assert sb.database("Alarm")[4] == {"username": "BenCarter", "time": "2023-04-11 06:00:00"}
    assert len(sb.database("Alarm")) == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"token": ALICE, "time": "7am"}, bad_format("7am")),
        ({"token": "nope", "time": "7am"}, bad_format("7am")),  # time before token
        ({"token": "nope", "time": T}, "The token is invalid."),
    ],
)
def test_add_alarm_errors(args: dict[str, str], message: str) -> None:
    assert call(sandbox(), "AddAlarm", **args) == envelope("AddAlarm", args, None, message)


def test_delete_alarm_deletes_the_users_alarm_only() -> None:
    sb = sandbox()
    assert call(sb, "DeleteAlarm", token=ALICE, time=T) == envelope("DeleteAlarm", {"token": ALICE, "time": T})
    assert list(sb.database("Alarm")) == ["1", "3"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"token": ALICE, "time": "2023-04-05 07:00:00"}, "You have no alarm clock at time : 2023-04-05 07:00:00"),
        ({"token": ALICE, "time": ""}, bad_format("")),  # validated even when empty
        ({"token": "nope", "time": ""}, bad_format("")),
        ({"token": "nope", "time": T}, "The token is invalid."),
    ],
)
def test_delete_alarm_errors(args: dict[str, str], message: str) -> None:
    sb = sandbox()
    assert call(sb, "DeleteAlarm", **args) == envelope("DeleteAlarm", args, None, message)
    assert len(sb.database("Alarm")) == 3


def test_modify_alarm_replaces_the_record() -> None:
    sb = sandbox()
    args = {"token": ALICE, "from_time": T, "to_time": "2023-04-03 06:30:00"}
    assert call(sb, "ModifyAlarm", **args) == envelope("ModifyAlarm", args)
    assert sb.database("Alarm")["2"] == {"username": "AliceMorgan", "time": "2023-04-03 06:30:00"}
    assert sb.database("Alarm")["1"]["time"] == T


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"token": ALICE, "from_time": "2023-04-05 07:00:00", "to_time": T},
            "You have no agenda at time : 2023-04-05 07:00:00",
        ),
        ({"token": "nope", "from_time": T, "to_time": ""}, bad_format("")),  # both times before the token
        ({"token": "nope", "from_time": "x", "to_time": T}, bad_format("x")),
        ({"token": "nope", "from_time": T, "to_time": T}, "The token is invalid."),
    ],
)
def test_modify_alarm_errors(args: dict[str, str], message: str) -> None:
    assert call(sandbox(), "ModifyAlarm", **args) == envelope("ModifyAlarm", args, None, message)


def test_query_alarm_returns_the_stored_record() -> None:
    args = {"token": ALICE, "time": T}
    assert call(sandbox(), "QueryAlarm", **args) == envelope("QueryAlarm", args, ALARM["2"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"token": BEN, "time": "2023-04-04 07:00:00"}, "You have no alarm clock at time : 2023-04-04 07:00:00"),
        ({"token": "nope", "time": "2023-04-04"}, bad_format("2023-04-04")),
        ({"token": "nope", "time": T}, "The token is invalid."),
    ],
)
def test_query_alarm_errors(args: dict[str, str], message: str) -> None:
    assert call(sandbox(), "QueryAlarm", **args) == envelope("QueryAlarm", args, None, message)


def test_query_alarm_on_the_bundled_database() -> None:
    dbs = load_databases(DATA, ["Account", "Alarm"])
    sb = sandbox_for(*TOOLS, dbs=dbs)
    token = dbs["Account"]["ChloeDavis"]["token"]
    assert call(sb, "QueryAlarm", token=token, time="2023-04-04 07:00:00")["output"] == {
        "time": "2023-04-04 07:00:00",
        "username": "ChloeDavis",
    }
    out = call(sb, "QueryAlarm", token=token, time="2023-04-03 07:00:00")
    assert out["exception"] == "You have no alarm clock at time : 2023-04-03 07:00:00"


@pytest.mark.parametrize("tool", TOOLS)
def test_alarm_checks_compare_the_whole_envelope(tool: type) -> None:
    inp = {"token": ALICE, "from_time": T, "to_time": T} if tool is ModifyAlarm else {"token": ALICE, "time": T}
    gold = envelope(tool.name, inp)
    assert tool().check(envelope(tool.name, dict(inp)), gold)
    assert not tool().check(envelope(tool.name, {**inp, "token": BEN}), gold)
    assert not tool().check(envelope(tool.name, inp, "failed"), gold)
    assert not tool().check(envelope(tool.name, inp, None, "The token is invalid."), gold)


def test_alarm_tools_are_listed_in_order() -> None:
    # tools_defined_in keeps the module's definition order; tool sets sort by name, which here is the same.
    assert TOOLS == [AddAlarm, DeleteAlarm, ModifyAlarm, QueryAlarm]
    assert [t for t in tool_classes(LEVEL12) if t in TOOLS] == TOOLS
    assert list(ModifyAlarm.input_parameters) == ["token", "from_time", "to_time"]
