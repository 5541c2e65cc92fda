"""The ``values`` change of a twin benchmark: the same world with other people, secrets and dates.

A twin (:mod:`apibank_lib.data.twins`) that changes values rewrites every text and JSON value of the benchmark
(dialogues, gold calls and results, databases, recordings, level-3 items) through one :class:`ValueMap`, so that the
same value always becomes the same replacement:

* ``exact``: whole values (user names, e-mail addresses, passwords, tokens, appointment ids) -> replacements of the
  same kind and format;
* ``words``: the words of person names (``Alice`` -> ``Nora``, ``Morgan`` -> ``Fischer``), so that "Alice Morgan",
  "Dr. Morgan" and "Alice" change together;
* ``date_shift_days``: every date of the benchmark's world (years 2000-2039: a historical date stays) moves by a
  whole number of weeks, so weekdays and "next Friday" stay true; ISO dates (``2023-04-03``, with or without a time)
  and written ones ("April 3rd", "3 April 2023", "Apr. 3", "june 22") are recognised and rewritten in their own form.

The tools run unchanged on the rewritten data; the one date that lives in code, GetToday's, is moved by the
renaming view (:func:`apibank_lib.env.renaming.renamed_class`), which passes the outputs of tools without a
database through :meth:`ValueMap.json`. Text the map does not recognise (a date written "10/10/2023", a name in
lower case) keeps its form: :func:`apibank_lib.grading.twins.make_twin` finds the samples where that leaves the
gold unstated and lists them as excluded.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

__all__ = ["MONTHS", "ValueMap", "date_mentions"]

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
"""Month names, in order (abbreviations are their first three letters, and ``Sept``)."""

_ABBREV = {m[:3]: i + 1 for i, m in enumerate(MONTHS)} | {"Sept": 9}
_FULL = {m: i + 1 for i, m in enumerate(MONTHS)}
# Written in lower case too ("june 22": people type so), but for "may", which is a verb as often as a month.
_MONTH = "|".join([*MONTHS, "Sept", *(m[:3] for m in MONTHS), *(m.lower() for m in MONTHS if m != "May"), "sept",
                   *(m[:3].lower() for m in MONTHS if m != "May")])
_YEAR = r"20[0-3]\d"  # the benchmark's world: a date in 1794 is history and stays
_ISO = rf"(?P<iy>{_YEAR})-(?P<im>\d\d)-(?P<id>\d\d)(?!\d)"
_MDY = rf"\b(?P<am>{_MONTH})(?P<adot>\.?) (?P<ad>\d{{1,2}})(?P<asuf>st|nd|rd|th)?(?!\d)(?:(?P<acomma>,? )(?P<ay>{_YEAR})(?!\d))?"
_DMY = rf"\b(?P<bd>\d{{1,2}})(?P<bsuf>st|nd|rd|th)? (?P<bof>of )?(?P<bm>{_MONTH})(?P<bdot>\.?)(?![a-z])(?:(?P<bcomma>,? )(?P<by>{_YEAR})(?!\d))?"
_DATES = re.compile("|".join(f"(?:{p})" for p in (_ISO, _MDY, _DMY)))
_BASE_YEAR = 2023  # a written date without its year is read in the benchmark's year (GetToday's)


def _date_parts(g: Mapping[str, str | None], year: int) -> tuple[int, int, int]:
    """(year, month, day) of a date the patterns matched (its group dict); ``year`` where the text gives none."""
    if g.get("iy") is not None:
        return int(g["iy"]), int(g["im"]), int(g["id"])  # type: ignore[arg-type]
    if g.get("am") is not None:
        return int(g["ay"] or year), _month_number(g["am"]), int(g["ad"])  # type: ignore[arg-type]
    return int(g["by"] or year), _month_number(g["bm"]), int(g["bd"])  # type: ignore[arg-type]


def _suffix(day: int) -> str:
    return "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def _month_number(name: str) -> int:
    title = name[:1].upper() + name[1:]
    return _FULL.get(title) or _ABBREV[title]


def _month_name(number: int, like: str) -> str:
    """Month ``number`` written as ``like`` is (full or abbreviated, capitalised or not)."""
    full = MONTHS[number - 1]
    title = like[:1].upper() + like[1:]
    name = full if title in _FULL else "Sept" if title == "Sept" and number == 9 else full[:3]
    return name if like[:1].isupper() else name.lower()


@dataclass(frozen=True)
class ValueMap:
    """How a twin's values differ from its source's (see the module's docstring).

    Attributes:
        exact: whole value -> replacement.
        words: person-name word -> replacement.
        date_shift_days: days every date of the world moves by (a multiple of 7; 0: dates stay).
    """

    exact: Mapping[str, str] = field(default_factory=dict)
    words: Mapping[str, str] = field(default_factory=dict)
    date_shift_days: int = 0

    def __post_init__(self) -> None:
        if self.date_shift_days % 7:
            raise ValueError(f"a date shift of {self.date_shift_days} days would change weekdays: use whole weeks")
        olds = set(self.exact) | set(self.words)
        clash = sorted(olds & (set(self.exact.values()) | set(self.words.values())))
        if clash:
            raise ValueError(f"replacements {clash[:3]} are also values being replaced: the map would not be one-to-one")

    @property
    def empty(self) -> bool:
        """True when the map changes nothing."""
        return not self.exact and not self.words and not self.date_shift_days

    @cached_property
    def _pattern(self) -> re.Pattern[str]:
        # One pass over the text, the longest exact value first: a replacement is never read again, so a value
        # that a replacement happens to contain is not changed twice.
        parts = []
        if self.exact:
            alt = "|".join(re.escape(v) for v in sorted(self.exact, key=lambda v: (-len(v), v)))
            parts.append(rf"(?<![A-Za-z0-9])(?P<exact>{alt})(?![A-Za-z0-9])")
        if self.date_shift_days:
            parts.append(_DATES.pattern)
        if self.words:
            alt = "|".join(re.escape(v) for v in sorted(self.words, key=lambda v: (-len(v), v)))
            parts.append(rf"\b(?P<word>{alt})\b")
        return re.compile("|".join(f"(?:{p})" for p in parts)) if parts else re.compile(r"(?!x)x")

    def _shift(self, year: int, month: int, day: int) -> dt.date | None:
        try:
            return dt.date(year, month, day) + dt.timedelta(days=self.date_shift_days)
        except ValueError:  # not a date ("February 30th"): left as it is
            return None

    def _replace(self, m: re.Match[str]) -> str:
        g = m.groupdict()
        if g.get("exact") is not None:
            return self.exact[g["exact"]]
        if g.get("word") is not None:
            return self.words[g["word"]]
        new = self._shift(*_date_parts(g, _BASE_YEAR))
        if new is None:
            return m.group(0)
        if g.get("iy") is not None:
            return new.isoformat()
        if g.get("am") is not None:
            text = f"{_month_name(new.month, g['am'])}{g['adot']} {new.day}{_suffix(new.day) if g['asuf'] else ''}"
            return text + (f"{g['acomma']}{new.year}" if g["ay"] else "")
        text = f"{new.day}{_suffix(new.day) if g['bsuf'] else ''} {g['bof'] or ''}{_month_name(new.month, g['bm'])}{g['bdot']}"
        return text + (f"{g['bcomma']}{new.year}" if g["by"] else "")

    def text(self, s: str) -> str:
        """A text with its values replaced."""
        return s if self.empty else self._pattern.sub(self._replace, s)

    def json(self, value: Any) -> Any:
        """A JSON value with every string replaced, keys included (a database keyed by user or date)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.json(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.json(v) for k, v in value.items()}
        return value

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (sorted)."""
        return {"exact": dict(sorted(self.exact.items())), "words": dict(sorted(self.words.items())),
                "date_shift_days": self.date_shift_days}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> ValueMap:
        """The inverse of :meth:`to_dict` (None: the empty map)."""
        d = d or {}
        return cls(dict(d.get("exact", {})), dict(d.get("words", {})), int(d.get("date_shift_days", 0)))


def date_mentions(date: dt.date, text: str) -> bool:
    """Whether ``text`` states ``date`` in a form a :class:`ValueMap` rewrites (ISO, or written with the month's
    name, with or without its year)."""
    wanted = (date.year, date.month, date.day)
    return any(_date_parts(m.groupdict(), date.year) == wanted for m in _DATES.finditer(text))
