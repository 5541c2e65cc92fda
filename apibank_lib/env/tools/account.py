"""Account tools: tokens, registration, passwords, deletion.

All of them share the ``Account`` database: username -> ``{password, token, email}``.
A deleted account's token stops working at once for every token tool, because
the sandbox gives all tools of one episode the same database object.
"""

from __future__ import annotations

import hashlib
import random
import string
from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import STR, DictOf, Record
from apibank_lib.env.tools.base import Tool
from apibank_lib.env.tools.common import key_error, original_errors, same_envelope

__all__ = ["CheckToken", "GetUserToken", "RegisterUser", "DeleteAccount", "ModifyPassword", "ForgotPassword"]

_ACCOUNT_SHAPE = DictOf(Record({"password": STR, "token": STR, "email": STR}))
"""Record shape of the ``Account`` database."""


def _is_account(db: dict[str, Any], username: Any) -> bool:
    """Whether ``username`` has an account.

    The original tests membership in the account dict directly, so a username
    that is not hashable (a list or an object) fails with Python's text
    (``unhashable type: 'dict'``).
    """
    with original_errors(TypeError):
        return username in db


class CheckToken(Tool):
    """Resolve a token to its owner. Also the token checker every token tool uses."""

    name = "CheckToken"
    domain = "account"
    description = "Look up which user a login token belongs to."
    input_parameters = {"token": Param("str", "The login token to look up.")}
    output_parameters = {"username": Param("str", "The user who owns the token.")}
    database_name = "Account"
    database_shape = _ACCOUNT_SHAPE
    writes_database = True  # shares the Account copy with the tools that write it
    envelope_has_api_name = False

    def lookup(self, token: Any) -> str:
        """Return the first username whose token equals ``token`` exactly."""
        for username, record in self.db.items():
            if record["token"] == token:
                return username
        raise ToolFailure("The token is invalid.")

    def run(self, token: Any) -> Any:
        return {"username": self.lookup(token)}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_envelope(pred, gold)


class GetUserToken(Tool):
    """Log in with a username and password and receive the user's token."""

    name = "GetUserToken"
    domain = "account"
    description = "Log a user in with username and password and return the user's token, which other APIs need."
    input_parameters = {
        "username": Param("str", "The account's username."),
        "password": Param("str", "The account's password."),
    }
    output_parameters = {"token": Param("str", "The user's login token.")}
    database_name = "Account"
    database_shape = _ACCOUNT_SHAPE
    writes_database = True

    def run(self, username: Any, password: Any) -> Any:
        if not _is_account(self.db, username):
            raise ToolFailure("The username does not exist.")
        if self.db[username]["password"] != password:
            raise ToolFailure("The password is incorrect.")
        return {"token": self.db[username]["token"]}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_envelope(pred, gold)


class RegisterUser(Tool):
    """Create an account; the new user's token is returned."""

    name = "RegisterUser"
    domain = "account"
    description = "Create a new user account from a username, a password and an e-mail address; returns the new token."
    input_parameters = {
        "username": Param("str", "The username to register."),
        "password": Param("str", "The password of the new account."),
        "email": Param("str", "The e-mail address of the new account."),
    }
    output_parameters = {"token": Param("str", "The new account's login token.")}
    database_name = "Account"
    database_shape = _ACCOUNT_SHAPE
    writes_database = True
    envelope_has_api_name = False

    def run(self, username: Any, password: Any, email: Any) -> Any:
        if _is_account(self.db, username):
            raise ToolFailure("The username already exists.")
        # The original draws an unseeded random token; ours is derived from the
        # username so that the same inputs always give byte-identical outputs.
        seed = int.from_bytes(hashlib.sha256(str(username).encode()).digest()[:8], "big")
        rng = random.Random(seed)
        token = "".join(rng.choices(string.ascii_letters + string.digits, k=18)).lower()
        self.db[username] = {"password": password, "token": token, "email": email}
        return {"token": token}

    def adopt_recorded(self, result: Any, recorded: dict[str, Any]) -> None:
        out = recorded.get("output")
        username = (result.input or {}).get("username")
        if result.ok and isinstance(out, dict) and "token" in out and username in self.db:
            self.db[username]["token"] = out["token"]

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        # The token is random, so only its presence is judged.
        if gold["output"] is None and pred["output"] is not None:
            return False
        return pred["input"] == gold["input"] and pred["exception"] == gold["exception"]


class DeleteAccount(Tool):
    """Delete the account that owns the token."""

    name = "DeleteAccount"
    domain = "account"
    description = "Permanently delete the account that the given token belongs to."
    input_parameters = {"token": Param("str", "The login token of the account to delete.")}
    output_parameters = {"status": Param("str", "success or failed")}
    database_name = "Account"
    database_shape = _ACCOUNT_SHAPE
    writes_database = True
    envelope_has_api_name = False

    def run(self, token: Any) -> Any:
        username = self.username_for(token)
        if username not in self.db:
            raise ToolFailure("No such user.")
        del self.db[username]
        return {"status": "success"}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_envelope(pred, gold)


class ModifyPassword(Tool):
    """Change a password; the token stays valid."""

    name = "ModifyPassword"
    domain = "account"
    description = "Change the password of the logged-in user, given the current password."
    input_parameters = {
        "token": Param("str", "The user's login token."),
        "old_password": Param("str", "The current password."),
        "new_password": Param("str", "The password to set."),
    }
    output_parameters = {"status": Param("str", "success or failed")}
    database_name = "Account"
    database_shape = _ACCOUNT_SHAPE
    writes_database = True

    def run(self, token: Any, old_password: Any, new_password: Any) -> Any:
        username = self.username_for(token)
        if self.db[username]["password"] != old_password:
            raise ToolFailure("The old password is incorrect.")
        self.db[username]["password"] = new_password
        return {"status": "success"}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_envelope(pred, gold)


class ForgotPassword(Tool):
    """Two-step password reset: request a code, then set a new password with it."""

    name = "ForgotPassword"
    domain = "account"
    description = (
        "Reset a forgotten password in two calls: first with status 'Forgot Password', username and email "
        "to receive a verification code, then with status 'Verification Code', the code and the new password."
    )
    input_parameters = {
        "status": Param("str", "'Forgot Password' for the first call, 'Verification Code' for the second."),
        "username": Param("str", "The username (first call).", required=False),
        "email": Param("str", "The account's e-mail address (first call).", required=False),
        "verification_code": Param("int", "The code received from the first call (second call).", required=False),
        "new_password": Param("str", "The password to set (second call).", required=False),
    }
    output_parameters = {"status": Param("str", "success or failed")}
    database_name = "Account"
    database_shape = _ACCOUNT_SHAPE
    writes_database = True
    envelope_has_api_name = False

    # The original hands out this fixed code; keeping it lets recorded dialogues replay.
    CODE = 970420

    def __init__(self, db: Any = None, env: Any = None) -> None:
        super().__init__(db, env)
        self.pending_code: int | None = None
        self.pending_user: str | None = None

    def run(self, status: Any, **kwargs: Any) -> Any:
        if status == "Forgot Password":
            if "username" not in kwargs or "email" not in kwargs:
                raise ToolFailure("The username and email are required for the first call.")
            username = kwargs["username"]
            if not _is_account(self.db, username):
                raise ToolFailure("The username does not exist.")
            if self.db[username]["email"] != kwargs["email"]:
                raise ToolFailure("The email is incorrect.")
            self.pending_code, self.pending_user = self.CODE, username
            return self.CODE
        if status == "Verification Code":
            if not self.pending_code:
                raise ToolFailure("You need to call the API with status 'Forgot Password' at first.")
            if "new_password" not in kwargs or "verification_code" not in kwargs:
                raise ToolFailure("The new password and verification code are required for the second call.")
            if kwargs["verification_code"] != self.pending_code:
                raise ToolFailure("The verification code is incorrect.")
            if self.pending_user not in self.db:
                # The account was deleted after the first call: the original's lookup of the
                # remembered username fails with the KeyError text (the quoted username).
                raise key_error(self.pending_user)
            self.db[self.pending_user]["password"] = kwargs["new_password"]
            return "success"
        raise ToolFailure("The status is only 'Forgot Password' or 'Verification Code'.")

    def state(self) -> Any:
        return {"pending_code": self.pending_code, "pending_user": self.pending_user}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_envelope(pred, gold)
