"""Finance tools: bank balance, bank accounts, stock prices."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.finance import OpenBankAccount, QueryBalance, QueryStock
from tests.helpers import sandbox_for

DATA = Path(__file__).resolve().parents[2] / "data" / "eval" / "init_database"
ACCOUNT = {
    "RuthOkoye": {"password": "p1", "token": "tok-ruth-000000001", "email": "ruth@example.org"},
    "PaulKeane": {"password": "p2", "token": "tok-paul-000000002", "email": "paul@example.org"},
}
BANK = {"RuthOkoye": {"balance": 1520.4, "age": 40, "city": "Lagos"}}
STOCK = {"ZEPH": {"2023-03-30": 12.5, "2023-03-31": 13}, "ZEPT": {"2023-03-31": 99.99}}


def run(tool: str, **args: Any) -> dict[str, Any]:
    sb = sandbox_for(QueryBalance, OpenBankAccount, QueryStock, dbs={"Account": ACCOUNT, "Bank": BANK, "Stock": STOCK})
    return sb.execute(ApiCall(tool, args)).to_dict()


def env(api: str, inp: dict[str, Any], output: Any, exception: str | None = None) -> dict[str, Any]:
    return {"api_name": api, "input": inp, "output": output, "exception": exception}


# --- QueryBalance -----------------------------------------------------------------------------------


def test_query_balance() -> None:
    assert run("QueryBalance", token="tok-ruth-000000001") == env(
        "QueryBalance", {"token": "tok-ruth-000000001"}, 1520.4
    )
    assert run("QueryBalance", token="tok-paul-000000002")["exception"] == "The user does not have an account."
    # the token check uses the raw token, and every token failure is reworded
    assert run("QueryBalance", token=" tok-ruth-000000001")["exception"] == "The token is incorrect."
    assert run("QueryBalance", token="nope")["exception"] == "The token is incorrect."


def test_query_balance_check_strips_tokens() -> None:
    gold = env("QueryBalance", {"token": "tok-ruth-000000001"}, 1520.4)
    assert QueryBalance().check(env("QueryBalance", {"token": "tok-ruth-000000001 "}, 1520.4), gold)
    assert not QueryBalance().check(env("QueryBalance", {"token": "tok-ruth-000000001"}, 1520.0), gold)
    assert not QueryBalance().check(env("QueryBalance", {"token": "tok-paul-000000002"}, 1520.4), gold)


# --- OpenBankAccount --------------------------------------------------------------------------------


def test_open_bank_account_keeps_accounts_in_the_tool_instance() -> None:
    sb = sandbox_for(OpenBankAccount)
    before = sb.fingerprint()
    first = sb.execute(
        ApiCall("OpenBankAccount", {"account": "ruth-01", "password": "pw", "name": "Ruth Okoye"})
    ).to_dict()
    assert first == env("OpenBankAccount", {"account": "ruth-01", "password": "pw", "name": "Ruth Okoye"}, "success")
    sb.execute(ApiCall("OpenBankAccount", {"account": "paul-01", "password": "pw", "name": "Paul Keane"}))
    state = sb.tool("OpenBankAccount").state()
    assert list(state) == [0, 2, 3] and state[2] == {"account": "ruth-01", "password": "pw", "name": "Ruth Okoye"}
    assert sb.fingerprint() != before
    again = sb.execute(ApiCall("OpenBankAccount", {"account": "ruth-01", "password": "x", "name": "y"}))
    assert again.output == "failed" and again.exception is None and len(state) == 3


def test_open_bank_account_builtin_account_is_taken_on_a_fresh_instance() -> None:
    assert run("OpenBankAccount", account="test", password="a", name="b")["output"] == "failed"
    assert run("OpenBankAccount", account="Test", password="a", name="b")["output"] == "success"


def test_open_bank_account_check_is_exact() -> None:
    gold = env("OpenBankAccount", {"account": "a", "password": "p", "name": "n"}, "success")
    assert OpenBankAccount().check(
        env("OpenBankAccount", {"name": "n", "account": "a", "password": "p"}, "success"), gold
    )
    assert not OpenBankAccount().check(
        env("OpenBankAccount", {"account": "a", "password": "p ", "name": "n"}, "success"), gold
    )
    assert not OpenBankAccount().check(env("OpenBankAccount", gold["input"], "failed"), gold)


# --- QueryStock -------------------------------------------------------------------------------------


def test_query_stock_returns_the_stored_number_unchanged() -> None:
    assert run("QueryStock", stock_code=" zeph ", date="2023-3-30") == env(
        "QueryStock", {"stock_code": " zeph ", "date": "2023-3-30"}, 12.5
    )
    result = run("QueryStock", stock_code="ZEPH", date="2023-03-31")["output"]
    assert result == 13 and isinstance(result, int)


@pytest.mark.parametrize(
    ("code", "date", "message"),
    [
        ("  ", "garbage", "The stock code cannot be empty."),  # before the date error
        ("ZEPH", " March 31 ", "time data 'March 31' does not match format '%Y-%m-%d'"),
        ("ZEPH", "31-03-2023", "unconverted data remains: 23"),  # year-padded to 0031-03-20 + '23'
        ("ZEPH", "2023-02-29", "day is out of range for month"),
        ("ZEP", "2023-03-31", "The stock code does not exist."),
        ("ZEPT", "2023-03-30", "The stock price of this date is not maintained."),
    ],
)
def test_query_stock_errors(code: str, date: str, message: str) -> None:
    result = run("QueryStock", stock_code=code, date=date)
    assert result["output"] is None and result["exception"] == message


def test_query_stock_check() -> None:
    gold = env("QueryStock", {"stock_code": "ZEPH", "date": "2023-03-30"}, 12.5)
    assert QueryStock().check(env("QueryStock", {"stock_code": "zeph ", "date": "2023-3-30"}, 12.5), gold)
    assert not QueryStock().check(env("QueryStock", {"stock_code": "ZEPT", "date": "2023-03-30"}, 12.5), gold)
    assert not QueryStock().check(env("QueryStock", {"stock_code": "ZEPH", "date": "2023-03-31"}, 12.5), gold)
    bad = {"stock_code": "ZEPH", "date": "soon"}
    assert not QueryStock().check(env("QueryStock", bad, None, "e"), env("QueryStock", bad, None, "e"))


# --- bundled data -----------------------------------------------------------------------------------


def test_bundled_stock_and_bank() -> None:
    dbs = load_databases(DATA, ["Account", "Bank", "Stock"])
    assert all(len(series) == 10 for series in dbs["Stock"].values())
    assert any(isinstance(p, int) for series in dbs["Stock"].values() for p in series.values())
    sb = sandbox_for(QueryBalance, QueryStock, dbs=dbs)
    assert sb.execute("[QueryStock(stock_code='nova', date='2023-03-27')]").output == 47
    assert sb.execute("[QueryStock(stock_code='NOVX', date='2023-03-18')]").exception == (
        "The stock price of this date is not maintained."
    )
    user, record = next(iter(dbs["Account"].items()))
    assert sb.execute(ApiCall("QueryBalance", {"token": record["token"]})).output == dbs["Bank"][user]["balance"]
    assert json.loads((DATA / "Bank.json").read_text())[user]["balance"] == dbs["Bank"][user]["balance"]


def test_open_bank_account_is_not_read_only() -> None:
    assert [t.name for t in (QueryBalance, OpenBankAccount, QueryStock) if not t.read_only] == ["OpenBankAccount"]
