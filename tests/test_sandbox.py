"""Sandbox isolation, conversion, errors and fingerprints (with the account tools)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from apibank_lib.core.errors import (
    InvalidParameterError,
    MissingParameterError,
    ParameterTypeError,
    ParseError,
    UnknownToolError,
)
from apibank_lib.core.types import ApiCall, Param
from apibank_lib.env.sandbox import Sandbox, json_copy
from apibank_lib.env.tools.account import (
    CheckToken,
    DeleteAccount,
    ForgotPassword,
    GetUserToken,
    ModifyPassword,
    RegisterUser,
)
from apibank_lib.env.tools.base import Tool
from apibank_lib.env.tools.toolset import ToolSet
from tests.helpers import sandbox_for

ACCOUNT = {
    "ann": {"password": "pw1", "token": "tok-ann", "email": "ann@x.org"},
    "bob": {"password": "pw2", "token": "tok-bob", "email": "bob@x.org"},
}
TOOLS = (GetUserToken, DeleteAccount, ModifyPassword, ForgotPassword, RegisterUser)


def _box(**kw: object) -> Sandbox:
    return sandbox_for(*TOOLS, dbs={"Account": ACCOUNT}, **kw)  # type: ignore[arg-type]


def test_no_state_leaks_between_sandboxes() -> None:
    pristine = copy.deepcopy(ACCOUNT)
    a, b = _box(), _box()
    assert a.execute("[DeleteAccount(token='tok-ann')]").output == {"status": "success"}
    assert a.execute("[GetUserToken(username='ann', password='pw1')]").exception == "The username does not exist."
    assert b.execute("[GetUserToken(username='ann', password='pw1')]").output == {"token": "tok-ann"}
    assert ACCOUNT == pristine
    assert a.fingerprint() != b.fingerprint()


def test_fingerprint_is_order_insensitive_and_tracks_tool_state() -> None:
    reordered = {"bob": ACCOUNT["bob"], "ann": ACCOUNT["ann"]}
    a = _box()
    b = sandbox_for(*TOOLS, dbs={"Account": reordered})
    assert a.fingerprint() == b.fingerprint()
    a.execute("[ForgotPassword(status='Forgot Password', username='bob', email='bob@x.org')]")
    assert a.fingerprint() != b.fingerprint()  # the pending code is instance state


def test_tools_of_one_episode_share_a_database() -> None:
    box = _box()
    box.execute("[ModifyPassword(token='tok-bob', old_password='pw2', new_password='new')]")
    assert box.execute("[GetUserToken(username='bob', password='new')]").output == {"token": "tok-bob"}


def test_results_are_snapshots() -> None:
    class Peek(Tool):
        name = "Peek"
        description = "returns the live record"
        input_parameters = {"username": Param("str", "who")}
        database_name = "Account"
        writes_database = True

        def run(self, username: str) -> object:
            return self.db[username]

    box = sandbox_for(Peek, ModifyPassword, dbs={"Account": ACCOUNT})
    before = box.execute(ApiCall("Peek", {"username": "ann"}))
    box.execute("[ModifyPassword(token='tok-ann', old_password='pw1', new_password='zz')]")
    assert before.output["password"] == "pw1"
    assert box.trace[-1].result is not None and box.trace[0].result is before


def test_call_errors_are_typed_and_traced() -> None:
    box = _box()
    with pytest.raises(UnknownToolError, match="Did you mean 'GetUserToken'"):
        box.execute("[GetUserTokens(username='ann', password='pw1')]")
    with pytest.raises(InvalidParameterError, match="invalid parameter name. parameter: user"):
        box.execute("[GetUserToken(user='ann', password='pw1')]")
    with pytest.raises(MissingParameterError, match=r"^missing required parameter password of GetUserToken$"):
        box.execute("[GetUserToken(username='ann')]")
    with pytest.raises(ParameterTypeError, match="verification_code"):
        box.execute("[ForgotPassword(status='Verification Code', verification_code='abc', new_password='x')]")
    with pytest.raises(ParseError):
        box.execute("[GetUserToken(username=ann)]")
    assert [e.error is not None for e in box.trace] == [True, True, True, True]


def test_execute_safely_turns_errors_into_envelopes() -> None:
    result = _box().execute_safely(ApiCall("GetUserToken", {"username": "ann"}))
    assert result.output is None and result.exception == "missing required parameter password of GetUserToken"


def test_paper_conversion_reproduces_the_original_manager() -> None:
    paper = _box(conversion="paper")
    paper.execute("[ForgotPassword(status='Forgot Password', username='ann', email='ann@x.org')]")
    with pytest.raises(ParameterTypeError, match="invalid parameter type. parameter: -970420"):
        paper.execute("[ForgotPassword(status='Verification Code', verification_code='-970420', new_password='x')]")
    ok = paper.execute("[ForgotPassword(status='Verification Code', verification_code='970420', new_password='x')]")
    assert ok.output == "success" and ok.input["verification_code"] == 970420


def test_random_identifiers_adopt_the_recording_on_replay() -> None:
    box = _box()
    result = box.replay(ApiCall("RegisterUser", {"username": "cy", "password": "p", "email": "c@y.z"}), {"output": {"token": "recorded"}})
    assert result.output["token"] != "recorded"
    assert box.execute("[CheckToken(token='recorded')]").output == {"username": "cy"}


def test_register_user_is_deterministic() -> None:
    a = _box().execute("[RegisterUser(username='cy', password='p', email='c@y.z')]")
    b = _box().execute("[RegisterUser(username='cy', password='p', email='c@y.z')]")
    assert a.output == b.output and len(a.output["token"]) == 18


def test_missing_database_is_a_clear_error() -> None:
    box = Sandbox(ToolSet("t", [CheckToken, GetUserToken]), {})
    with pytest.raises(Exception, match="database 'Account' needed by GetUserToken is not loaded"):
        box.execute("[GetUserToken(username='a', password='b')]")


def test_json_copy_is_deep() -> None:
    src = {"a": [1, {"b": [2]}], "c": (1, 2)}
    dup = json_copy(src)
    dup["a"][1]["b"].append(3)
    assert src == {"a": [1, {"b": [2]}], "c": (1, 2)}


def test_bundled_account_database_is_ours(tmp_path: Path) -> None:
    from apibank_lib.data.datasets import default_data_root

    data = json.loads((default_data_root() / "init_database" / "Account.json").read_text())
    assert "JohnDoe" not in data and len(data) >= 10


def test_numbers_out_of_range_are_type_errors_under_both_conversions() -> None:
    from apibank_lib.env.tools.conversion import ORIGINAL_CONVERSION, TYPED_CONVERSION
    from apibank_lib.env.tools.level3.social import UserPosts

    for conversion in (ORIGINAL_CONVERSION, TYPED_CONVERSION):
        with pytest.raises(ParameterTypeError, match="inf"):
            conversion.convert(UserPosts, {"user_id": float("inf")})
