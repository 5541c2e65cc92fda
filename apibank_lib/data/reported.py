"""Figures reported elsewhere, beside which ours are shown, and the checks where both are measurable.

The figures live in a data file with their sources, ``data/reported/api_bank_paper.json``:
the API-Bank paper's tables (main results, error distribution, ToolAlpaca
comparison, corpus statistics) and two sets of numbers measured on the official
release with the original code (its counts under the original sample cutter,
and how much of its own gold the original evaluator accepts). Every table that
shows one of them labels it "reported"; ours are "measured here".

Where the same quantity can be measured here (the statistics of an official
release the user supplies, the ``paper`` protocol's replay of its gold),
:func:`check_release` compares the two within a tolerance and says whether they agree.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from apibank_lib.core.paths import PROJECT_ROOT

__all__ = [
    "REPORTED_FILE",
    "reported",
    "SOURCE",
    "PAPER_CORPUS",
    "PAPER_MAIN_RESULTS",
    "PAPER_ERROR_DISTRIBUTION",
    "PAPER_TOOLALPACA",
    "OFFICIAL_RELEASE_COUNTS",
    "ORIGINAL_REPLAY",
    "TOOLRL_FILE",
    "toolrl_reported",
]

REPORTED_FILE = PROJECT_ROOT / "data" / "reported" / "api_bank_paper.json"
"""The data file of reported figures."""

TOOLRL_FILE = PROJECT_ROOT / "data" / "reported" / "toolrl.json"
"""API-Bank figures published under ToolRL's protocol (:mod:`apibank_lib.grading.toolrl`), with their source."""


@lru_cache(maxsize=1)
def reported() -> dict[str, Any]:
    """The whole data file of reported figures (read once)."""
    return json.loads(REPORTED_FILE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _rows(table: str, key: str) -> dict[Any, dict[str, Any]]:
    return {row[key]: {k: v for k, v in row.items() if k != key} for row in reported()[table]["rows"]}


SOURCE: str = reported()["source"]
"""The paper, as every "reported" label cites it."""

PAPER_CORPUS: dict[str, dict[str, Any]] = _rows("corpus_statistics", "split")
"""The paper's corpus statistics, by split (``evaluation``, ``training``)."""

PAPER_MAIN_RESULTS: dict[str, dict[str, float]] = _rows("main_results", "model")
"""The paper's main table, by model: ``l1_acc`` ... ``total_rouge`` (accuracy in %)."""

PAPER_ERROR_DISTRIBUTION: dict[str, dict[str, float | None]] = _rows("error_distribution", "category")
"""Share (%) of each model's errors per category; None = not listed by the paper."""

PAPER_TOOLALPACA: dict[str, dict[str, float | int]] = _rows("toolalpaca", "model")
"""The paper's ToolAlpaca comparison (Call ability only)."""

OFFICIAL_RELEASE_COUNTS: dict[str, dict[str, int]] = {
    str(k): v for k, v in _rows("official_release_counts", "level").items()
}
"""Counts of the official release under the original cutter, by level ("1", "2", "3")."""

ORIGINAL_REPLAY: dict[str, Any] = reported()["original_replay"]
"""How much of its own gold the original evaluator accepts on the official release (levels 1-2, %)."""


@lru_cache(maxsize=1)
def toolrl_reported() -> dict[str, Any]:
    """API-Bank figures published under ToolRL's protocol: ``source``, ``note`` (how they were read), ``protocol``
    (the version a run must have been judged under to sit beside them), ``entries`` per level and ``rows`` (model,
    training, overall, l1, l2, l3 in %)."""
    return json.loads(TOOLRL_FILE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]
