"""Tests for the utility tools (apibank_lib/env/tools/utility.py)."""

from __future__ import annotations

from typing import Any

import pytest

from apibank_lib.core.errors import InvalidParameterError
from apibank_lib.core.types import ApiCall
from apibank_lib.env.tools.registry import tools_defined_in
from apibank_lib.env.tools.utility import GetToday, PlayMusic, SendEmail
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.utility")


def run(name: str, conversion: str = "v2", **args: Any) -> dict[str, Any]:
    """Execute one call in a fresh sandbox and return the envelope dict."""
    return sandbox_for(*TOOLS, conversion=conversion).execute(ApiCall(name, args)).to_dict()


def env(api: str, input: Any, output: Any, exception: str | None = None) -> dict[str, Any]:
    return {"api_name": api, "input": input, "output": output, "exception": exception}


# --- GetToday -------------------------------------------------------------------------------------


@pytest.mark.parametrize("conversion", ["paper", "v2"])
def test_get_today(conversion: str) -> None:
    assert run("GetToday", conversion=conversion) == env("GetToday", None, "2023-03-31")


@pytest.mark.parametrize("conversion", ["paper", "v2"])
def test_get_today_takes_no_arguments(conversion: str) -> None:
    with pytest.raises(InvalidParameterError, match="invalid parameter name. parameter: date"):
        run("GetToday", conversion=conversion, date="2023-01-01")


def test_get_today_check_ignores_gold() -> None:
    g = GetToday()
    gold = env("GetToday", None, "2023-03-31")
    assert g.check(env("GetToday", None, "1999-12-31"), gold)
    assert g.check(env("GetToday", None, "2023-03-31"), env("GetToday", None, None, "anything"))
    assert not g.check(env("GetToday", None, None), gold)
    assert not g.check(env("GetToday", None, "2023-03-31", "boom"), gold)
    assert not g.check(env("GetToday", {}, "2023-03-31"), gold)


# --- SendEmail ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "receiver", ["ab@mail.com", " chloe.davis@inboxly.com ", "b_cartwright@postbox.net", "a1@x.io"]
)
def test_send_email_accepts(receiver: str) -> None:
    r = run("SendEmail", receiver=receiver, subject=" Hi ", content=" See you soon. ")
    assert r == env("SendEmail", {"receiver": receiver, "subject": " Hi ", "content": " See you soon. "}, "success")


@pytest.mark.parametrize(
    "receiver",
    [
        "Chloe.davis@inboxly.com",  # upper case
        "a@x.com",  # one-character local part
        "a.b_c@x.co",  # two separators
        "eva.rossi@mail.posta.it",  # two domain labels
        "ab@x.info",  # four-letter TLD
        "ab.x.com",
    ],
)
def test_send_email_rejects_receiver(receiver: str) -> None:
    # The receiver is checked before the (here empty) subject.
    assert run("SendEmail", receiver=receiver, subject="", content="")["exception"] == (
        "Email address of the receiver is invalid."
    )


def test_send_email_empty_subject_then_content() -> None:
    assert run("SendEmail", receiver="ab@x.com", subject="  ", content="")["exception"] == "Subject cannot be empty."
    assert run("SendEmail", receiver="ab@x.com", subject="Hi", content=" \n")["exception"] == "Content cannot be empty."


def test_send_email_check() -> None:
    s = SendEmail()
    gold = env("SendEmail", {"receiver": "ab@x.com", "subject": "Hi", "content": "Don"}, "success")
    assert s.check(env("SendEmail", {"receiver": " AB@x.com", "subject": "Hi ", "content": " Don"}, "success"), gold)
    assert not s.check(env("SendEmail", {"receiver": "ab@x.com", "subject": "hi", "content": "Don"}, "success"), gold)
    assert not s.check(env("SendEmail", {"receiver": "ab@x.com", "subject": "Hi", "content": "Don't"}, "success"), gold)
    assert not s.check(env("SendEmail", {"receiver": "ac@x.com", "subject": "Hi", "content": "Don"}, "success"), gold)
    failed = env(
        "SendEmail", {"receiver": "ab@x.com", "subject": "Hi", "content": "Don"}, None, "Content cannot be empty."
    )
    assert not s.check(failed, gold)


# --- PlayMusic ------------------------------------------------------------------------------------


def test_play_music() -> None:
    assert run("PlayMusic", music_name=" Shape Of You ") == env(
        "PlayMusic", {"music_name": " Shape Of You "}, "music://shape of you"
    )


def test_play_music_empty() -> None:
    assert run("PlayMusic", music_name="   ")["exception"] == "The music name cannot be empty."


def test_play_music_conversion_modes() -> None:
    assert run("PlayMusic", music_name=5)["output"] == "music://5"
    assert run("PlayMusic", conversion="paper", music_name=5)["exception"] == "'int' object has no attribute 'lower'"


def test_play_music_check_compares_output_only() -> None:
    p = PlayMusic()
    gold = env("PlayMusic", {"music_name": "Yesterday"}, "music://yesterday")
    assert p.check(env("PlayMusic", {"music_name": " YESTERDAY"}, "music://yesterday", "ignored"), gold)
    assert not p.check(env("PlayMusic", {"music_name": "Yesterday"}, "music://yesterday once more"), gold)
