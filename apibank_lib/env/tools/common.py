"""Helpers shared by tools and their correctness rules.

These reproduce small pieces of the original behaviour that many tools share:
date validation with Python's own error texts, the year-padding date
normaliser, the word-set Jaccard used by the fuzzy checkers, and the two ways
a tool states that a Python error is the original API's own failure
(:func:`original_errors`, :func:`key_error`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from apibank_lib.core.errors import ToolFailure

__all__ = [
    "DT",
    "D",
    "API_NAME_MESSAGE",
    "original_errors",
    "key_error",
    "strptime_check",
    "year_pad_normalise",
    "jaccard",
    "similar_topic_same_rest",
    "same_envelope",
    "envelope_equal_on",
    "require_same_api",
    "next_numeric_key",
]

DT = "%Y-%m-%d %H:%M:%S"
"""Date-time format used by most tools."""

D = "%Y-%m-%d"
"""Date format used by hospital, hotel, stock and level-3 tools."""

API_NAME_MESSAGE = "The API name is not correct."
"""The original checkers' assertion message for an API-name mismatch."""


@contextmanager
def original_errors(*types: type[Exception]) -> Iterator[None]:
    """Inside this block, the listed Python errors are the original API's own failures.

    The original tools let Python errors in their bodies become the result's
    exception text (``'int' object has no attribute 'lower'`` when a number is
    given for a text). Where ours reproduce such a failure on purpose, the
    statements are wrapped in this block: the error leaves as a
    :class:`~apibank_lib.core.errors.ToolFailure` with the same text. Anything
    raised elsewhere in a tool is a bug and surfaces as a ToolError.
    """
    try:
        yield
    except types as exc:
        raise ToolFailure(str(exc)) from exc


def key_error(key: Any) -> ToolFailure:
    """The failure the original reports when a lookup misses: the text of ``KeyError(key)`` (the key's repr)."""
    return ToolFailure(str(KeyError(key)))


def strptime_check(value: Any, fmt: str = DT) -> datetime:
    """Parse ``value`` with ``fmt``; on failure Python's own error text is the tool's failure.

    The message texts (``time data 'x' does not match format ...``,
    ``unconverted data remains: ...``, ``strptime() argument 1 must be str, not int``)
    are part of the tools' contract, which is why this calls ``strptime`` directly.
    """
    with original_errors(TypeError, ValueError):
        return datetime.strptime(value, fmt)


def year_pad_normalise(value: Any, fmt: str = D, *, as_datetime: bool = False) -> Any:
    """Normalise a date string the way several original tools and checkers do.

    Steps: strip; split on ``-``; if there are exactly three pieces and the first
    is not four characters long, left-pad it with zeros to width four; parse with
    ``fmt``. Returns the re-formatted canonical string (or the datetime when
    ``as_datetime``), or the *exception object* when parsing fails: two failed
    values never compare equal, which the checkers rely on.
    """
    try:
        parts = value.strip().split("-")
        if len(parts) == 3 and len(parts[0]) != 4:
            parts[0] = parts[0].zfill(4)
        parsed = datetime.strptime("-".join(parts), fmt)
    except Exception as exc:  # noqa: BLE001 - the exception object is the value
        return exc
    return parsed if as_datetime else parsed.strftime(fmt)


def jaccard(a: str, b: str) -> float:
    """Word-set Jaccard of two strings split on single spaces (as the original)."""
    sa, sb = set(a.split(" ")), set(b.split(" "))
    union = sa | sb
    return len(sa & sb) / len(union) if union else 1.0


def similar_topic_same_rest(pred: dict[str, Any], gold: dict[str, Any]) -> bool:
    """The meeting checkers' rule: topic word-Jaccard > 0.5; the rest of the input, output and exception equal.

    Like the original, the topic is popped from both inputs (in place) before the rest is compared.
    """
    similar = jaccard(pred["input"]["meeting_topic"], gold["input"]["meeting_topic"]) > 0.5
    pred["input"].pop("meeting_topic")
    gold["input"].pop("meeting_topic")
    return similar and same_envelope(pred, gold)


def same_envelope(pred: dict[str, Any], gold: dict[str, Any]) -> bool:
    """The "exact" checker family: input, output and exception all equal."""
    return (
        pred["input"] == gold["input"] and pred["output"] == gold["output"] and pred["exception"] == gold["exception"]
    )


def envelope_equal_on(pred: dict[str, Any], gold: dict[str, Any], keys: tuple[str, ...]) -> bool:
    """True when the listed top-level envelope fields are equal."""
    return all(pred[k] == gold[k] for k in keys)


def require_same_api(pred: dict[str, Any], gold: dict[str, Any]) -> None:
    """The original checkers' API-name assertion (the protocols count the AssertionError as "incorrect")."""
    if pred["api_name"] != gold["api_name"]:
        raise AssertionError(API_NAME_MESSAGE)


def next_numeric_key(db: dict[Any, Any]) -> str:
    """The original's id for a new record: the largest numeric key plus one, as text ("0" when empty)."""
    return str(max(int(k) for k in db) + 1) if db else "0"
