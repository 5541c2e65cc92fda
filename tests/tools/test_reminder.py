"""Reminder tools: behaviour, error texts and order, keys, and the paper checkers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.registry import tools_defined_in
from apibank_lib.env.tools.reminder import AddReminder, DeleteReminder, ModifyReminder, QueryReminder
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.reminder")

ALICE = "idvwtfktangpvyqe6b"
BEN = "emzumlenmwfqtrier2"
ACCOUNT = {
    "AliceMorgan": {"password": "sunflower88", "token": ALICE, "email": "alice.morgan@mailbox.org"},
    "BenCarter": {"password": "Tr0mbone!", "token": BEN, "email": "ben.carter@fastmail.com"},
}
REMINDER = {
    "2": {"content": "Pay electricity bill", "time": "2023-04-10 09:00:00", "username": "BenCarter"},
    "10": {"content": "Pay electricity bill", "time": "2023-04-10 09:00:00", "username": "AliceMorgan"},
    "9": {"content": "Pay water bill", "time": "2023-04-10 09:00:00", "username": "AliceMorgan"},
    "4": {"content": "Call grandma", "time": "2023-04-02 18:00:00", "username": "AliceMorgan"},
}
T = "2023-04-10 09:00:00"
BAD_FORMAT = "time data 'tomorrow' does not match format '%Y-%m-%d %H:%M:%S'"
DATA = Path(__file__).resolve().parents[2] / "data" / "eval" / "init_database"


def sandbox(reminders: dict[str, Any] | None = None) -> Any:
    return sandbox_for(*TOOLS, dbs={"Account": ACCOUNT, "Reminder": REMINDER if reminders is None else reminders})


def call(sb: Any, name: str, **args: Any) -> dict[str, Any]:
    return sb.execute(ApiCall(name, args)).to_dict()


def args(content: str = "Call grandma", time: str = "2023-04-02 18:00:00", token: str = ALICE) -> dict[str, str]:
    return {"token": token, "content": content, "time": time}


def envelope(name: str, inp: dict[str, Any], output: Any = "success", exception: str | None = None) -> dict[str, Any]:
    return {"api_name": name, "input": inp, "output": output, "exception": exception}


def error_cases(not_found: bool = True) -> list[tuple[dict[str, str], str]]:
    """Failures every reminder tool shares, in check order: time, content, token (then not found)."""
    cases = [
        (args(" ", "tomorrow", "nope"), BAD_FORMAT),
        (args(" ", T, "nope"), "Content should not be null"),
        (args("Call grandma", T, "nope"), "The token is invalid."),
    ]
    if not_found:
        cases.append(
            (
                args("Buy milk", "2023-04-11 09:00:00"),
                "You have no reminder about Buy milk or at time : 2023-04-11 09:00:00",
            )
        )
    return cases


def test_add_reminder_key_is_numeric_max_plus_one_as_text() -> None:
    sb = sandbox()
    inp = args("Buy milk", "2023-04-11 09:00:00")
    assert call(sb, "AddReminder", **inp) == envelope("AddReminder", inp)
    assert sb.database("Reminder")["11"] == {
        "username": "AliceMorgan",
        "content": "Buy milk",
        "time": "2023-04-11 09:00:00",
    }


def test_add_reminder_first_key_in_an_empty_database_is_zero() -> None:
    sb = sandbox({})
    call(sb, "AddReminder", **args())
    assert list(sb.database("Reminder")) == ["0"]


@pytest.mark.parametrize(("inp", "message"), error_cases(not_found=False))
def test_add_reminder_errors(inp: dict[str, str], message: str) -> None:
    assert call(sandbox(), "AddReminder", **inp) == envelope("AddReminder", inp, None, message)


def test_delete_reminder_matches_content_or_time_first_in_order() -> None:
    sb = sandbox()
    assert call(sb, "DeleteReminder", **args("Something else", T))["output"] == "success"
    assert list(sb.database("Reminder")) == ["2", "9", "4"]
    call(sb, "DeleteReminder", **args("Call grandma", "2023-01-01 00:00:00"))
    assert list(sb.database("Reminder")) == ["2", "9"]


@pytest.mark.parametrize(("inp", "message"), error_cases())
def test_delete_reminder_errors(inp: dict[str, str], message: str) -> None:
    sb = sandbox()
    assert call(sb, "DeleteReminder", **inp) == envelope("DeleteReminder", inp, None, message)
    assert len(sb.database("Reminder")) == 4


def test_modify_reminder_updates_content_and_time_in_place() -> None:
    sb = sandbox()
    inp = args("Call grandma and grandpa", "2023-04-02 18:00:00")
    assert call(sb, "ModifyReminder", **inp) == envelope("ModifyReminder", inp)
    record = sb.database("Reminder")["4"]
    assert record == {"content": "Call grandma and grandpa", "time": "2023-04-02 18:00:00", "username": "AliceMorgan"}
    assert list(record) == ["content", "time", "username"]


@pytest.mark.parametrize(("inp", "message"), error_cases())
def test_modify_reminder_errors(inp: dict[str, str], message: str) -> None:
    assert call(sandbox(), "ModifyReminder", **inp) == envelope("ModifyReminder", inp, None, message)


def test_query_reminder_returns_the_users_stored_record() -> None:
    inp = args("Pay water bill", "2023-01-01 00:00:00")
    assert call(sandbox(), "QueryReminder", **inp) == envelope("QueryReminder", inp, REMINDER["9"])
    assert call(sandbox(), "QueryReminder", **args("x", T, BEN))["output"] == REMINDER["2"]


@pytest.mark.parametrize(("inp", "message"), error_cases())
def test_query_reminder_errors(inp: dict[str, str], message: str) -> None:
    assert call(sandbox(), "QueryReminder", **inp) == envelope("QueryReminder", inp, None, message)


def test_query_reminder_on_the_bundled_database() -> None:
    dbs = load_databases(DATA, ["Account", "Reminder"])
    sb = sandbox_for(*TOOLS, dbs=dbs)
    token = dbs["Account"]["EvaRossi"]["token"]
    # The time points at the near-miss "... about the heating", but the exact content matches an earlier record.
    out = call(sb, "QueryReminder", **args("Call the landlord", "2023-04-12 18:30:00", token))
    assert out["output"] == {"content": "Call the landlord", "time": "2023-04-11 18:30:00", "username": "EvaRossi"}


# --- checkers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", [AddReminder, ModifyReminder, QueryReminder])
@pytest.mark.parametrize(
    ("pred_content", "expected"),
    [
        ("call GRANDMA today", True),  # lower-cased: 2/3
        ("Call grandpa", False),  # 1/3
    ],
)
def test_reminder_check_lowercased_jaccard(tool: type, pred_content: str, expected: bool) -> None:
    gold = envelope(tool.name, args("Call grandma"))
    assert tool().check(envelope(tool.name, args(pred_content, token=BEN)), gold) is expected


@pytest.mark.parametrize("tool", [AddReminder, ModifyReminder, QueryReminder])
def test_reminder_check_time_output_exception(tool: type) -> None:
    gold = envelope(tool.name, args())
    assert not tool().check(envelope(tool.name, args(time=T)), gold)
    assert not tool().check(envelope(tool.name, args(), None, "The token is invalid."), gold)


@pytest.mark.parametrize(("tool", "asserts"), [(AddReminder, True), (ModifyReminder, True), (QueryReminder, False)])
def test_reminder_check_api_name_assertion(tool: type, asserts: bool) -> None:
    gold = envelope(tool.name, args())
    pred = envelope("SomethingElse", args())
    if asserts:
        with pytest.raises(AssertionError, match="The API name is not correct."):
            tool().check(pred, gold)
    else:
        assert tool().check(pred, gold)


def test_delete_reminder_check_compares_only_time_when_both_succeed() -> None:
    gold = envelope("DeleteReminder", args("Call grandma"))
    assert DeleteReminder().check(envelope("DeleteReminder", args("Unrelated words", token=BEN)), gold)
    assert not DeleteReminder().check(envelope("DeleteReminder", args("Call grandma", T)), gold)
    failed = envelope("DeleteReminder", args("x"), None, "Content should not be null")
    assert DeleteReminder().check(failed, envelope("DeleteReminder", args("y"), None, "Content should not be null"))
    assert not DeleteReminder().check(failed, gold)
