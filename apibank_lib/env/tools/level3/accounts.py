"""Level-3 account tools: read a user's contact details, update a user's address.

Each tool keeps its own table of ``{username, password, info}`` records (a
list; the first record matching both name and password wins), as in the
original, where the two classes held separate copies of the same users. An
address set through PersonalInfoUpdate is therefore never visible to
AccountInfo.
"""

from __future__ import annotations

import copy
from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import ANY, STR, DictOf, ListOf, Record
from apibank_lib.env.tools.base import LEVEL3, Tool
from apibank_lib.env.tools.level3.checks import require_same_api, same_api_and_envelope

__all__ = ["AccountInfo", "PersonalInfoUpdate"]

_LV3_ACCOUNTS_SHAPE = ListOf(Record({"username": STR, "password": STR, "info": DictOf(ANY)}))
"""Record shape of the ``Lv3Accounts`` database."""

_LV3_PERSONAL_INFO_SHAPE = ListOf(Record({"username": STR, "password": STR, "info": DictOf(ANY)}))
"""Record shape of the ``Lv3PersonalInfo`` database."""

_USERNAME = Param("str", "The user's account name.")
_PASSWORD = Param("str", "The user's password.")


def _find_info(records: list[dict[str, Any]], username: Any, password: Any) -> dict[str, Any]:
    """The ``info`` dict of the first record with this exact name and password."""
    for record in records:
        if record["username"] == username and record["password"] == password:
            return record["info"]
    raise ToolFailure("User not found.")


class AccountInfo(Tool):
    """Return a user's stored contact details after checking the password."""

    name = "AccountInfo"
    domain = "account"
    toolset = LEVEL3
    description = "Look up a user's account details, such as e-mail and phone, given the username and password."
    input_parameters = {"username": _USERNAME, "password": _PASSWORD}
    # Declared as in the original, although the output is the bare info dict (see run).
    output_parameters = {
        "status": Param("str", "success or failed"),
        "account_info": Param("dict", "The account details (e-mail, phone, ...)."),
    }
    database_name = "Lv3Accounts"
    database_shape = _LV3_ACCOUNTS_SHAPE
    read_only = True

    def run(self, username: Any, password: Any) -> Any:
        # The original returns the info dict itself, not wrapped in {status, account_info}.
        return copy.deepcopy(_find_info(self.db, username, password))

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)


class PersonalInfoUpdate(Tool):
    """Set a user's address after checking the password."""

    name = "PersonalInfoUpdate"
    domain = "account"
    toolset = LEVEL3
    description = "Update the postal address stored for a user, given the username and password."
    input_parameters = {
        "username": _USERNAME,
        "password": _PASSWORD,
        "address": Param("str", "The new address to store."),
    }
    output_parameters = {"status": Param("str", "success or failed")}
    database_name = "Lv3PersonalInfo"
    database_shape = _LV3_PERSONAL_INFO_SHAPE
    writes_database = True

    def run(self, username: Any, password: Any, address: Any) -> Any:
        _find_info(self.db, username, password)["address"] = address
        return {"status": "success"}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        # The original compares input and output only; the exception is not judged.
        require_same_api(pred, gold)
        return pred["input"] == gold["input"] and pred["output"] == gold["output"]
