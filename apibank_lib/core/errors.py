"""One exception hierarchy for the whole library.

Two kinds of failure are kept apart:

* A tool that fails *on purpose* (a wrong password, an unknown date) raises
  :class:`ToolFailure` inside its body; the sandbox turns it into the result
  envelope's ``exception`` text, which the model sees and the checkers compare.
  It is an outcome, not an error of the library, so it is not an
  :class:`ApibankError`.
* Everything under :class:`ApibankError` is a problem the caller must handle:
  text that is not a call, a call that cannot reach a tool, a tool that broke in
  a way it did not mean to (:class:`ToolError`, a bug, never blamed on the
  model), broken data files, bad configuration, a model backend that failed.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "ApibankError",
    "ParseError",
    "CallError",
    "UnknownToolError",
    "InvalidParameterError",
    "ParameterTypeError",
    "MissingParameterError",
    "DataError",
    "ConfigError",
    "BackendError",
    "ToolError",
    "ToolFailure",
    "did_you_mean",
]


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return a " Did you mean 'X'?" suffix for the closest choice, or ''."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


class ApibankError(Exception):
    """Base class of every error raised on purpose by apibank_lib."""


class ParseError(ApibankError, ValueError):
    """Text that looks like an API call but cannot be parsed faithfully.

    Attributes:
        reason: what is wrong, in words.
        position: character offset in the text where the problem was found.
        text: the text that was being parsed.
    """

    def __init__(self, reason: str, position: int = 0, text: str = "") -> None:
        self.reason = reason
        self.position = position
        self.text = text
        snippet = text[max(0, position - 20) : position + 20].replace("\n", "\\n")
        where = f" at character {position} (near {snippet!r})" if text else ""
        super().__init__(f"{reason}{where}")


class CallError(ApibankError):
    """A call that never reached the tool's body (unknown tool, bad arguments).

    The message follows the original ToolManager's wording where it had one, so
    that the error taxonomy and the model-facing text stay comparable.
    """

    def __init__(self, message: str, *, tool: str | None = None, parameter: str | None = None) -> None:
        self.tool = tool
        self.parameter = parameter
        super().__init__(message)


class UnknownToolError(CallError):
    """The API name is not part of the tool set."""

    def __init__(self, name: str, known: Iterable[str] = ()) -> None:
        super().__init__(f"invalid tool name. {name!r} is not an API of this tool set.{did_you_mean(name, known)}", tool=name)


class InvalidParameterError(CallError):
    """An argument name that the API does not declare."""


class ParameterTypeError(CallError):
    """An argument value that cannot be converted to the declared type."""


class MissingParameterError(CallError):
    """A required argument is absent."""


class DataError(ApibankError):
    """A data file (dialogue, database, release file) is malformed.

    The message always names the file and, where it applies, the line.
    """

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None) -> None:
        self.path = None if path is None else Path(path)
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}" + (f", line {line}" if line is not None else "") + ": "
        super().__init__(f"{where}{message}")


class ConfigError(ApibankError):
    """An invalid option, parameter or combination of them."""


class BackendError(ApibankError):
    """A model call failed (after any retries); the runner records it with the sample.

    Attributes:
        connection: True when the server could not be reached at all (refused,
            unknown host, timeout while connecting), as opposed to a request the
            server answered with an error.
    """

    def __init__(self, message: str, *, connection: bool = False) -> None:
        self.connection = connection
        super().__init__(message)


class ToolFailure(Exception):
    """A deliberate failure of a tool: its text becomes the result envelope's ``exception``.

    Tools raise it with the original API's error text (``The token is invalid.``),
    including the texts of Python errors that the original surfaced verbatim
    (``time data 'x' does not match format '%Y-%m-%d'``, ``'NoneType' object is
    not subscriptable``). Anything else escaping a tool is a bug and becomes a
    :class:`ToolError`.
    """


class ToolError(ApibankError):
    """A tool raised an exception it did not mean to: a bug in the tool, not the model's fault.

    Attributes:
        tool: the API name.
        cause: the original exception.
    """

    def __init__(self, tool: str, cause: BaseException) -> None:
        self.tool = tool
        self.cause = cause
        super().__init__(f"tool {tool} broke with an unexpected {type(cause).__name__}: {cause}")
