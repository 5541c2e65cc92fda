"""ToolRL's API-Bank protocol: how ToolRL reads an answer and judges it against the gold call, and its accuracies.

ToolRL (Qian et al., arXiv 2504.13958) and the small-model papers that follow it report API-Bank on ToolRL's
processed files (:mod:`apibank_lib.data.formats.toolrl`) with their own rules, which differ from the paper's evaluator
and from ours: nothing is executed, and a call is right only when its name and its parameter dict equal the gold's
exactly. :data:`TOOLRL` names this way of judging with a version, recorded like the other protocols' so that a
figure says how it was made.

* :func:`parse_answer`: the text after the last ``<tool_call>`` and before the next ``</tool_call>`` (the whole
  answer when a tag is missing), one JSON object per line; lines that are not JSON objects are dropped, as
  ToolRL's script drops what it cannot parse.
* :func:`judge`: right when any parsed call has the gold name and exactly the gold parameters (``3`` is not
  ``"3"``); a parsed object without both ``name`` and ``parameters`` is read as the parameters of a call to the
  gold API, as ToolRL's script reads it.
* :func:`accuracies`: per level and overall, right / entries, in %, rounded to 2 decimals as ToolRL reports them.

Left out on purpose: ToolRL's generation script skips an entry an earlier run already answered right, so running a
model twice keeps its best answer per entry. Here every run answers every entry once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apibank_lib.data.formats.toolrl import ToolRLEntry

__all__ = ["TOOLRL", "ToolRLProtocol", "ToolRLVerdict", "accuracies", "gold_answer", "judge", "parse_answer"]

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"


@dataclass(frozen=True)
class ToolRLProtocol:
    """ToolRL's way of judging API-Bank answers, named and versioned (what a run and its tables record).

    Attributes:
        name: ``toolrl``.
        version: changes whenever a verdict could change (``toolrl-1``).
        summary: one line for tables and ``--help``.
    """

    name: str
    version: str
    summary: str


TOOLRL = ToolRLProtocol(
    name="toolrl",
    version="toolrl-1",
    summary="ToolRL's processed files and exact match of name and parameters, nothing executed",
)


def _segment(text: str) -> str:
    start = text.rfind(_OPEN)
    if start < 0:
        return text
    rest = text[start + len(_OPEN) :]
    end = rest.find(_CLOSE)
    return rest if end < 0 else rest[:end]


def parse_answer(text: str) -> list[dict[str, Any]]:
    """The calls an answer holds, read as ToolRL reads them (module docstring); possibly none."""
    calls = []
    for line in _segment(text).splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            calls.append(value)
    return calls


@dataclass(frozen=True)
class ToolRLVerdict:
    """One entry judged.

    Attributes:
        correct: some parsed call has the gold name and parameters.
        calls: the calls read from the answer.
        reason: why it is wrong, in words ("" when right).
    """

    correct: bool
    calls: tuple[dict[str, Any], ...]
    reason: str


def _as_call(obj: Mapping[str, Any], gold_name: str) -> tuple[Any, Any]:
    if "name" in obj and "parameters" in obj:
        return obj["name"], obj["parameters"]
    return gold_name, dict(obj)


def judge(entry: ToolRLEntry, answer: str) -> ToolRLVerdict:
    """Judge one answer against an entry's gold call by ToolRL's exact match (nothing is executed)."""
    calls = parse_answer(answer)
    read = [_as_call(call, entry.gold_name) for call in calls]
    if (entry.gold_name, entry.gold_parameters) in read:
        return ToolRLVerdict(True, tuple(calls), "")
    names = {str(name) for name, _ in read}
    if not calls:
        reason = "no call could be read from the answer"
    elif entry.gold_name not in names:
        reason = f"called {', '.join(sorted(names))}, expected {entry.gold_name}"
    else:
        reason = f"{entry.gold_name} called with other parameters than the gold's (exact match: values as written)"
    return ToolRLVerdict(False, tuple(calls), reason)


def accuracies(verdicts: Iterable[tuple[int, bool]], entries: Mapping[int, Sequence[Any]] | None = None) -> dict[str, Any]:
    """Per-level and overall accuracy (%) as ToolRL reports them: right / entries, rounded to 2 decimals.

    Args:
        verdicts: ``(level, correct)`` per judged entry.
        entries: the entries per level; when given, an entry without a verdict counts as wrong (the
            denominator is the file's length, as in ToolRL's tables).

    Returns:
        ``{"levels": {"1": {"right", "entries", "accuracy"}, ...}, "overall": {...}}``.
    """
    right: dict[int, int] = {}
    judged: dict[int, int] = {}
    for level, correct in verdicts:
        judged[level] = judged.get(level, 0) + 1
        right[level] = right.get(level, 0) + int(bool(correct))
    counts = {lv: len(es) for lv, es in entries.items()} if entries is not None else judged
    levels = {
        str(lv): {"right": right.get(lv, 0), "entries": n, "accuracy": round(100 * right.get(lv, 0) / n, 2) if n else None}
        for lv, n in sorted(counts.items())
    }
    total_right, total = sum(right.get(lv, 0) for lv in counts), sum(counts.values())
    overall = {"right": total_right, "entries": total, "accuracy": round(100 * total_right / total, 2) if total else None}
    return {"levels": levels, "overall": overall}


def gold_answer(entry: ToolRLEntry) -> str:
    """The gold call written as ToolRL asks a model to write its answer (what the oracle answers)."""
    return f"{_OPEN}\n{json.dumps(entry.gold(), ensure_ascii=False)}\n{_CLOSE}"

