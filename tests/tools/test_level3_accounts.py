"""Level-3 AccountInfo and PersonalInfoUpdate: bare info output, separate copies, their checkers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.level3.accounts import AccountInfo, PersonalInfoUpdate
from apibank_lib.env.tools.registry import tools_defined_in
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.level3.accounts")

LV3 = Path(__file__).resolve().parents[2] / "data" / "eval" / "lv3_database"


def users() -> list[dict[str, Any]]:
    return [
        {"username": "EvaRossi", "password": "gelato!42", "info": {"email": "eva@posta.it", "phone": "+39 347 0001"}},
        {
            "username": "EvaRossi",
            "password": "old-pass",
            "info": {"email": "eva.old@posta.it", "phone": "+39 347 0002"},
        },
        {
            "username": "KaiTanaka",
            "password": "origami12",
            "info": {"email": "kai@fastmail.com", "phone": "+81 90 0003"},
        },
    ]


def sandbox(conversion: str = "v2") -> Any:
    return sandbox_for(*TOOLS, dbs={"Lv3Accounts": users(), "Lv3PersonalInfo": users()}, conversion=conversion)


def call(sb: Any, name: str, **args: Any) -> dict[str, Any]:
    return sb.execute(ApiCall(name, args)).to_dict()


def test_account_info_returns_the_bare_info_dict_of_the_first_exact_match() -> None:
    sb = sandbox()
    assert call(sb, "AccountInfo", username="EvaRossi", password="old-pass") == {
        "api_name": "AccountInfo",
        "input": {"username": "EvaRossi", "password": "old-pass"},
        "output": {"email": "eva.old@posta.it", "phone": "+39 347 0002"},
        "exception": None,
    }
    assert call(sb, "AccountInfo", username="EvaRossi", password="gelato!42")["output"]["email"] == "eva@posta.it"


@pytest.mark.parametrize(
    ("username", "password"), [("EvaRossi", "GELATO!42"), ("evarossi", "gelato!42"), ("Nobody", "x")]
)
def test_account_info_needs_exact_name_and_password(username: str, password: str) -> None:
    result = call(sandbox(), "AccountInfo", username=username, password=password)
    assert (result["output"], result["exception"]) == (None, "User not found.")


def test_account_info_output_is_not_the_stored_object() -> None:
    db = users()
    tool = AccountInfo(db)
    tool.run(username="KaiTanaka", password="origami12")["phone"] = "changed"
    assert db[2]["info"]["phone"] == "+81 90 0003"


def test_personal_info_update_writes_its_own_copy_only() -> None:
    sb = sandbox()
    result = call(sb, "PersonalInfoUpdate", username="KaiTanaka", password="origami12", address="3-1 Namba, Osaka")
    assert result == {
        "api_name": "PersonalInfoUpdate",
        "input": {"username": "KaiTanaka", "password": "origami12", "address": "3-1 Namba, Osaka"},
        "output": {"status": "success"},
        "exception": None,
    }
    assert sb.database("Lv3PersonalInfo")[2]["info"]["address"] == "3-1 Namba, Osaka"
    # AccountInfo keeps a separate table, as in the original.
    assert "address" not in call(sb, "AccountInfo", username="KaiTanaka", password="origami12")["output"]


def test_personal_info_update_is_isolated_per_sandbox() -> None:
    pristine = users()
    dbs = {"Lv3Accounts": users(), "Lv3PersonalInfo": pristine}
    first = sandbox_for(PersonalInfoUpdate, dbs=dbs)
    before = first.fingerprint()
    call(first, "PersonalInfoUpdate", username="EvaRossi", password="gelato!42", address="Via Roma 5")
    assert first.fingerprint() != before
    assert "address" not in pristine[0]["info"]
    assert "address" not in sandbox_for(PersonalInfoUpdate, dbs=dbs).database("Lv3PersonalInfo")[0]["info"]


def test_personal_info_update_unknown_user() -> None:
    result = call(sandbox(), "PersonalInfoUpdate", username="KaiTanaka", password="wrong", address="x")
    assert (result["output"], result["exception"]) == (None, "User not found.")


def envelope(api: str, inp: dict[str, Any], out: Any, exc: str | None = None) -> dict[str, Any]:
    return {"api_name": api, "input": inp, "output": out, "exception": exc}


def test_account_info_checker_is_exact_and_asserts_the_api_name() -> None:
    tool = AccountInfo()
    inp = {"username": "EvaRossi", "password": "gelato!42"}
    gold = envelope("AccountInfo", inp, {"email": "eva@posta.it"})
    assert tool.check(envelope("AccountInfo", dict(inp), {"email": "eva@posta.it"}), gold)
    assert not tool.check(envelope("AccountInfo", dict(inp), {"email": "other@posta.it"}), gold)
    assert not tool.check(envelope("AccountInfo", {**inp, "password": "x"}, {"email": "eva@posta.it"}), gold)
    with pytest.raises(AssertionError, match="The API name is not correct."):
        tool.check(envelope("PersonalInfoUpdate", dict(inp), {"email": "eva@posta.it"}), gold)


def test_personal_info_update_checker_ignores_the_exception() -> None:
    tool = PersonalInfoUpdate()
    inp = {"username": "EvaRossi", "password": "gelato!42", "address": "Via Roma 5"}
    gold = envelope("PersonalInfoUpdate", inp, {"status": "success"})
    assert tool.check(envelope("PersonalInfoUpdate", dict(inp), {"status": "success"}, "anything"), gold)
    assert not tool.check(envelope("PersonalInfoUpdate", {**inp, "address": "Via Roma 6"}, {"status": "success"}), gold)
    assert not tool.check(envelope("PersonalInfoUpdate", dict(inp), None, "User not found."), gold)
    with pytest.raises(AssertionError):
        tool.check(envelope("AccountInfo", dict(inp), {"status": "success"}), gold)


def test_bundled_tables_know_every_account_user_with_the_same_password() -> None:
    dbs = load_databases(LV3, ["Lv3Accounts", "Lv3PersonalInfo"])
    accounts = load_databases(LV3.parent / "init_database", ["Account"])["Account"]
    assert dbs["Lv3Accounts"] == dbs["Lv3PersonalInfo"]
    assert [(r["username"], r["password"]) for r in dbs["Lv3Accounts"]] == [
        (u, a["password"]) for u, a in accounts.items()
    ]
    sb = sandbox_for(*TOOLS, dbs=dbs)
    result = call(sb, "AccountInfo", username="HannahWeber", password="pretzel55")
    assert result["output"] == {"email": "hannah.weber@postbox.net", "phone": "+49 151 2384 7710"}
