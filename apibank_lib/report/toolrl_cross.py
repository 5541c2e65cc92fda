"""The same answers judged two ways: ToolRL's exact match against execution under ``v2`` on the release.

A ToolRL entry says where in the release it comes from (its ``other`` field): at level 1 the dialogue file and
the sample's index (the original cutter's ``2k``), at level 2 the file and the position of the call among the
dialogue's calls other than ToolSearcher, at level 3 the item and the step. :func:`release_sample` finds that
API-call sample in a loaded copy of the release; :func:`cross_judge` executes each answer of a ToolRL run folder
there, as a ``v2`` run would execute a model's call, and sets the verdict beside ToolRL's.

The cross-table (:func:`cross_table`) counts per level the four cells (both right, exact match only, execution
only, both wrong): how far an exact-match figure under-counts calls that do the right thing, and where it
over-counts. :func:`disagreement_kind` names why a pair disagrees (a number written as a string, spaces in a
formula, a date written otherwise, ...), so a reader sees examples of each kind.

Entries the ``v2`` errata leave out of scoring are kept in the rows (``excluded``) and left out of the table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from apibank_lib.core.errors import DataError
from apibank_lib.core.types import ApiCall, ApiCallSample, ApiRecord
from apibank_lib.data.datasets import Benchmark
from apibank_lib.data.formats.toolrl import ToolRLEntry, load_toolrl
from apibank_lib.env.protocols import V2
from apibank_lib.grading.grader import Grader
from apibank_lib.grading.toolrl import parse_answer
from apibank_lib.runs.toolrl import is_toolrl_run, read_records

__all__ = [
    "CELLS",
    "DISAGREEMENT_KINDS",
    "cross_judge",
    "cross_table",
    "disagreement_counts",
    "disagreement_kind",
    "first_difference",
    "release_sample",
]

SEARCH_API = "ToolSearcher"

CELLS = ("both right", "exact match only", "execution only", "both wrong")
"""The cross-table's cells: right under both judges, under ToolRL's exact match only, under execution only, neither."""

DISAGREEMENT_KINDS = (
    "list or object written as text, or text as one",
    "number written as text or text as number",
    "spacing or case",
    "date or time written otherwise",
    "value the API does not check",
    "parameter the API does not need",
    "right call, state or result differs",
    "other",
)
"""Why exact match and execution disagree on one answer (:func:`disagreement_kind`)."""


def release_sample(bench: Benchmark, entry: ToolRLEntry, _index: dict[Any, ApiCallSample] | None = None) -> ApiCallSample | None:
    """The release's API-call sample an entry was made from (None when the copy does not hold it, or its gold
    call is another API than the entry's: then the two files are not of the same release)."""
    index = _index if _index is not None else _sample_index(bench, entry.level)
    if entry.level == 1:
        sample = index.get((entry.dialogue_id, entry.source.get("id")))
    elif entry.level == 2:
        sample = index.get((entry.dialogue_id, "call", entry.source.get("id")))
    else:
        sample = index.get((entry.dialogue_id, entry.source.get("api_id")))
    return sample if sample is not None and sample.gold.api_name == entry.gold_name else None


def _sample_index(bench: Benchmark, level: int) -> dict[Any, ApiCallSample]:
    samples = [s for s in bench.samples(level, "api") if isinstance(s, ApiCallSample)]
    # Duplicates too: the release's level-1 file lists the extra sample of two adjacent calls (an odd index).
    index: dict[Any, ApiCallSample] = {(s.dialogue_id, s.sample_id): s for s in samples}
    if level == 2:
        # Level 2 counts a dialogue's calls other than ToolSearcher; the sample of each is the one whose gold it is.
        by_gold = {(s.dialogue_id, id(s.gold)): s for s in samples if not s.duplicate}
        for dialogue in bench.dialogues(2):
            calls = [t for t in dialogue.turns if isinstance(t, ApiRecord) and t.api_name != SEARCH_API]
            for k, record in enumerate(calls):
                found = by_gold.get((dialogue.id, id(record)))
                if found is not None:
                    index[(dialogue.id, "call", k)] = found
    return index


def _call_to_execute(entry: ToolRLEntry, calls: list[dict[str, Any]]) -> ApiCall | None:
    """The call execution judges: the first that names the gold API, else the first (read as ToolRL reads it)."""
    read = []
    for obj in calls:
        if "name" in obj and "parameters" in obj:
            name, params = obj["name"], obj["parameters"]
        else:
            name, params = entry.gold_name, obj
        if isinstance(name, str) and isinstance(params, dict):
            read.append(ApiCall(name, {str(k): v for k, v in params.items()}))
    for call in read:
        if call.name == entry.gold_name:
            return call
    return read[0] if read else None


def _as_time(value: Any) -> datetime | None:
    text = str(value).strip()
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d", "%Y/%m/%d", "%Y-%m-%dT%H:%M:%S", "%H:%M:%S", "%H:%M"):
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def disagreement_kind(gold: Mapping[str, Any], predicted: Mapping[str, Any] | None, exact_right: bool, executed_right: bool) -> str | None:
    """Why exact match and execution disagree on one answer (one of :data:`DISAGREEMENT_KINDS`; None when they
    agree). Read from the first parameter whose value differs from the gold's."""
    if exact_right == executed_right:
        return None
    if exact_right:
        return "right call, state or result differs"
    predicted = predicted or {}
    extra = set(predicted) - set(gold)
    for key, want in gold.items():
        got = predicted.get(key)
        if got == want:
            continue
        if got is None:
            return "value the API does not check"
        if isinstance(got, (list, dict)) or isinstance(want, (list, dict)):
            if str(got) == str(want) or _literal_equal(got, want):
                return "list or object written as text, or text as one"
        if str(got) == str(want) or _number(got) == _number(want) is not None:
            return "number written as text or text as number"
        if re.sub(r"\s+", "", str(got)).lower() == re.sub(r"\s+", "", str(want)).lower():
            return "spacing or case"
        if _as_time(got) is not None and _as_time(got) == _as_time(want):
            return "date or time written otherwise"
        return "value the API does not check"
    return "parameter the API does not need" if extra else "other"


def first_difference(gold: Mapping[str, Any], predicted: Mapping[str, Any] | None) -> tuple[str, Any, Any] | None:
    """The first parameter whose value differs between the gold call and the answer's: ``(name, gold, answer)``
    (a parameter only the answer has comes last; None when they are equal)."""
    predicted = predicted or {}
    for key, want in gold.items():
        if predicted.get(key) != want:
            return key, want, predicted.get(key)
    extra = sorted(set(predicted) - set(gold))
    return (extra[0], None, predicted[extra[0]]) if extra else None


def _literal_equal(a: Any, b: Any) -> bool:
    """Whether a structured value and a text hold the same list or object (the text read as JSON; never evaluated)."""
    def read(v: Any) -> Any:
        if not isinstance(v, str):
            return v
        try:
            return json.loads(v.replace("'", '"'))
        except json.JSONDecodeError:
            return None
    left, right = read(a), read(b)
    return left is not None and left == right


def _number(value: Any) -> float | None:
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def cross_judge(run: str | Path, release: Benchmark, *, errata: str | Path | None = None) -> pd.DataFrame:
    """Every answer of a ToolRL run folder judged by exact match (as the run was) and by execution under ``v2``.

    Args:
        run: a run folder written by :func:`apibank_lib.runs.toolrl.run_toolrl`.
        release: the release copy the ToolRL files were made from (``load_benchmark(path)``).
        errata: the errata ``v2`` applies (default: the release's own, ``data/errata/api-bank.yaml``).

    Returns:
        One row per answered entry: ``key``, ``level``, ``dialogue``, ``exact`` (ToolRL's verdict), ``executed``
        (``v2``'s), ``cell``, ``kind`` (:func:`disagreement_kind`), ``reason`` (``v2``'s when wrong) and
        ``excluded`` (why ``v2``'s errata leave it out; empty otherwise), ``mapped`` (whether the entry's release
        sample was found; rows without one are left out of the table), ``difference`` (where the verdicts disagree,
        the first parameter that differs from the gold, ``name: gold -> answer``: text of the release, to be read,
        never saved with a release's aggregates).

    Raises:
        DataError: the folder is not a ToolRL run, or not yet scored.
    """
    root = Path(run)
    if not is_toolrl_run(root) or not (root / "judgments.jsonl").is_file():
        raise DataError("not a scored ToolRL run folder (config.json of format toolrl-run-1 and judgments.jsonl)", root)
    config = json.loads((root / "config.json").read_text(encoding="utf-8"))
    entries = load_toolrl(config["data_path"], tuple(config["identity"]["levels"]))
    by_key = {e.key: e for es in entries.values() for e in es}
    grader = Grader(release, V2, errata=errata)
    indexes = {level: _sample_index(release, level) for level in entries}
    rows = []
    for j in read_records(root / "judgments.jsonl"):
        entry = by_key[j["key"]]
        sample = release_sample(release, entry, indexes[entry.level])
        row = {"key": entry.key, "level": entry.level, "dialogue": entry.dialogue_id, "exact": bool(j["correct"]), "mapped": sample is not None}
        if sample is None:
            rows.append({**row, "executed": None, "cell": None, "kind": None, "reason": "no release sample", "excluded": ""})
            continue
        call = _call_to_execute(entry, j.get("calls") or parse_answer(""))
        judgment = grader.judge_call(sample, call, attempted=call is not None)
        executed = bool(judgment.correct)
        cell = CELLS[0] if row["exact"] and executed else CELLS[1] if row["exact"] else CELLS[2] if executed else CELLS[3]
        args = call.args if call is not None else None
        kind = disagreement_kind(entry.gold_parameters, args, row["exact"], executed)
        diff = first_difference(entry.gold_parameters, args) if kind is not None else None
        rows.append(
            {
                **row, "executed": executed, "cell": cell, "kind": kind, "reason": judgment.reason or "",
                "excluded": judgment.excluded or "", "difference": "" if diff is None else f"{diff[0]}: {diff[1]!r} -> {diff[2]!r}",
            }
        )
    columns = ["key", "level", "dialogue", "exact", "mapped", "executed", "cell", "kind", "reason", "excluded", "difference"]
    return pd.DataFrame(rows, columns=columns)


def cross_table(rows: pd.DataFrame, model: str = "") -> pd.DataFrame:
    """Per level and overall: the four cells' counts, both accuracies on the same answers (%), and how many
    entries were left out (no release sample, or excluded by the errata)."""
    out = []
    kept = rows[rows["mapped"] & (rows["excluded"] == "")]
    for level, part in [*((str(lv), kept[kept["level"] == lv]) for lv in sorted(kept["level"].unique())), ("all", kept)]:
        n = len(part)
        counts = {cell: int((part["cell"] == cell).sum()) for cell in CELLS}
        left_out = int(len(rows if level == "all" else rows[rows["level"] == int(level)]) - n)
        out.append(
            {
                "model": model,
                "level": level,
                **counts,
                "n": n,
                "left out": left_out,
                "exact match %": round(100 * part["exact"].mean(), 2) if n else None,
                "execution %": round(100 * part["executed"].astype(bool).mean(), 2) if n else None,
            }
        )
    return pd.DataFrame(out)


def disagreement_counts(rows: pd.DataFrame, model: str = "") -> pd.DataFrame:
    """How many answers of each disagreement kind, per cell and level (counts only: no entry named, so the table
    can be kept with a release's aggregates)."""
    kept = rows[rows["mapped"] & (rows["excluded"] == "") & rows["kind"].notna()]
    counts = kept.groupby(["level", "cell", "kind"]).size().reset_index(name="answers")
    counts.insert(0, "model", model)
    return counts.sort_values(["level", "cell", "answers", "kind"], ascending=[True, True, False, True]).reset_index(drop=True)
