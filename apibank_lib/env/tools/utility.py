"""Utility tools: today's date, sending e-mail, playing music.

None of them has a database or keeps state. "Today" is fixed at 2023-03-31, as
in the original, so that dialogues recorded on that day replay identically.
(Calculator lives in :mod:`apibank_lib.env.tools.calculator`.)
"""

from __future__ import annotations

import re
from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.tools.base import Tool
from apibank_lib.env.tools.common import original_errors

__all__ = ["GetToday", "SendEmail", "PlayMusic", "TODAY"]

TODAY = "2023-03-31"
"""The benchmark world's fixed current date."""

# Case-sensitive and narrow on purpose (the original's rule): a 2+ character local
# part with at most one . or _ inside, one domain label and a 2-3 character TLD.
_RECEIVER = re.compile(r"^[a-z0-9]+[._]?[a-z0-9]+@\w+[.]\w{2,3}$")


class GetToday(Tool):
    """Today's date (always 2023-03-31)."""

    name = "GetToday"
    domain = "utility"
    description = "Tell today's date."
    input_parameters = {}  # takes no arguments
    output_parameters = {"date": Param("str", "Today's date as YYYY-MM-DD.")}

    def echo_input(self, kwargs: dict[str, Any]) -> Any:
        return None  # the original envelope records no input at all

    def run(self) -> Any:
        return TODAY

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        # The gold is not consulted: any successful argument-less call is right.
        return pred["output"] is not None and pred["exception"] is None and pred["input"] is None


class SendEmail(Tool):
    """Send an e-mail (validated, then reported as sent; nothing is stored)."""

    name = "SendEmail"
    domain = "utility"
    description = "Send an e-mail with a subject and a message to one receiver address."
    input_parameters = {
        "receiver": Param("str", "The receiver's e-mail address."),
        "subject": Param("str", "The subject line."),
        "content": Param("str", "The message body."),
    }
    output_parameters = {"status": Param("str", "success or failed")}

    def run(self, receiver: Any, subject: Any, content: Any) -> Any:
        # A value that is not text fails on .strip() with Python's text, as in the original.
        with original_errors(AttributeError):
            receiver, subject, content = receiver.strip(), subject.strip(), content.strip()
        if not _RECEIVER.match(receiver):
            raise ToolFailure("Email address of the receiver is invalid.")
        if not subject:
            raise ToolFailure("Subject cannot be empty.")
        if not content:
            raise ToolFailure("Content cannot be empty.")
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        p, g = pred["input"], gold["input"]
        return (
            p["receiver"].strip().lower() == g["receiver"].strip().lower()
            and p["subject"].strip() == g["subject"].strip()
            and p["content"].strip() == g["content"].strip()
            and pred["output"] == gold["output"]
            and pred["exception"] == gold["exception"]
        )


class PlayMusic(Tool):
    """Start playing a song by name."""

    name = "PlayMusic"
    domain = "smart home"
    description = "Play a piece of music, given its title."
    input_parameters = {"music_name": Param("str", "The title of the song or piece to play.")}
    output_parameters = {"music_url": Param("str", "The address of the music now playing.")}

    def run(self, music_name: Any) -> Any:
        # A name that is not text fails on .lower() with Python's text, as in the original.
        with original_errors(AttributeError):
            music = music_name.lower().strip()
        if not music:
            raise ToolFailure("The music name cannot be empty.")
        return "music://" + music

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return pred["output"] == gold["output"]  # only the result is judged
