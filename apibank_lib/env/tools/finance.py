"""Finance tools: bank balance, opening a bank account, stock prices.

QueryBalance reads the ``Bank`` database (username -> ``{balance, age, city}``)
and authenticates through the sandbox's token checker, rewording any token
failure as ``The token is incorrect.``. OpenBankAccount keeps its accounts in
the tool instance (the original has no database for it), starting from the
original's single built-in account ``test``. QueryStock reads ``Stock``:
ticker -> ``{YYYY-MM-DD: price}``, prices stored as ints or floats and returned
unchanged.

No corrected rule: the original checkers of these tools have no known bug.
"""

from __future__ import annotations

from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import NUM, STR, DictOf, Record
from apibank_lib.env.tools.base import Tool, ToolEnv
from apibank_lib.env.tools.common import D, original_errors, same_envelope, year_pad_normalise

__all__ = ["QueryBalance", "OpenBankAccount", "QueryStock"]

_BANK_SHAPE = DictOf(Record({"balance": NUM, "age": NUM, "city": STR}))
"""Record shape of the ``Bank`` database."""

_STOCK_SHAPE = DictOf(DictOf(NUM))
"""Record shape of the ``Stock`` database."""


class QueryBalance(Tool):
    """The balance of the logged-in user's bank account."""

    name = "QueryBalance"
    domain = "finance"
    description = "Return the balance of the bank account of the user who owns the token."
    input_parameters = {"token": Param("str", "The user's login token.")}
    output_parameters = {"balance": Param("float", "The account balance.")}
    database_name = "Bank"
    database_shape = _BANK_SHAPE
    read_only = True

    def run(self, token: Any) -> Any:
        # The original rewords every failure of these two steps: a token that is not text (its .strip()
        # fails; the stripped value is discarded, the check uses the raw token) and an unknown token.
        try:
            token.strip()
            username = self.username_for(token)
        except (AttributeError, ToolFailure):
            raise ToolFailure("The token is incorrect.") from None
        if username not in self.db:
            raise ToolFailure("The user does not have an account.")
        return self.db[username]["balance"]

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return (
            pred["input"]["token"].strip() == gold["input"]["token"].strip()
            and pred["output"] == gold["output"]
            and pred["exception"] == gold["exception"]
        )


class OpenBankAccount(Tool):
    """Open a bank account; an account identifier already in use gives the output ``failed``."""

    name = "OpenBankAccount"
    domain = "finance"
    description = "Open a new bank account with an account identifier, a password and the holder's name."
    input_parameters = {
        "account": Param("str", "The identifier of the new account."),
        "password": Param("str", "The password of the new account."),
        "name": Param("str", "The account holder's name."),
    }
    output_parameters = {"status": Param("str", "success or failed")}

    def __init__(self, db: Any = None, env: ToolEnv | None = None) -> None:
        super().__init__(db, env)
        # The original's built-in account; its integer keys are kept (new keys are the count plus one).
        self.accounts: dict[int, dict[str, Any]] = {0: {"account": "test", "password": "test", "name": "Demo Holder"}}

    def run(self, account: Any, password: Any, name: Any) -> Any:
        if any(record["account"] == account for record in self.accounts.values()):
            return "failed"  # reported as the output, not as an exception
        self.accounts[len(self.accounts) + 1] = {"account": account, "password": password, "name": name}
        return "success"

    def state(self) -> Any:
        return self.accounts

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_envelope(pred, gold)


def _stock_code(stock_code: Any) -> str | None:
    """Upper-cased, stripped ticker; None for a blank one."""
    return stock_code.upper().strip() or None


class QueryStock(Tool):
    """The price of a stock on a given day."""

    name = "QueryStock"
    domain = "finance"
    description = "Return the price of a stock, given its ticker symbol and a day."
    input_parameters = {
        "stock_code": Param("str", "The ticker symbol of the stock."),
        "date": Param("str", "The day, as YYYY-MM-DD."),
    }
    output_parameters = {"stock_price": Param("float", "The stock's price on that day.")}
    database_name = "Stock"
    database_shape = _STOCK_SHAPE
    read_only = True

    def run(self, stock_code: Any, date: Any) -> Any:
        # A code that is not text fails on .upper() with Python's text, as in the original.
        with original_errors(AttributeError):
            code = _stock_code(stock_code)
        day = year_pad_normalise(date, D)
        if code is None:
            raise ToolFailure("The stock code cannot be empty.")
        if isinstance(day, Exception):
            raise ToolFailure(str(day)) from day  # the original kept the parse error and raises it only now
        if code not in self.db:
            raise ToolFailure("The stock code does not exist.")
        if day not in self.db[code]:
            raise ToolFailure("The stock price of this date is not maintained.")
        return self.db[code][day]

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        p, g = pred["input"], gold["input"]
        return (
            _stock_code(p["stock_code"]) == _stock_code(g["stock_code"])
            and year_pad_normalise(p["date"], D) == year_pad_normalise(g["date"], D)
            and pred["output"] == gold["output"]
            and pred["exception"] == gold["exception"]
        )
