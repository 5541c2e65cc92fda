"""A table cell with its interval: accuracy over judgments or items and mean ROUGE-L, in percent (for every table)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from apibank_lib.core.stats import bootstrap_mean, bounds
from apibank_lib.runs.records import JudgmentRecord
from apibank_lib.runs.scoring import ScoredRun, accuracy, item_lengths, item_results


def pandas_module() -> Any:
    """pandas, imported when a table is first made (importing the report does not load it)."""
    import pandas as pd

    return pd


def percent(x: float | None) -> float | None:
    """A share as a percentage with two decimals, as the paper prints them (None stays None)."""
    return None if x is None else round(100.0 * x, 2)


def dialogue_cluster(j: JudgmentRecord) -> tuple[int, str]:
    """The unit intervals resample: a judgment's dialogue (within its level, as ids repeat across levels)."""
    return (j.level, j.dialogue_id)


def accuracy_cell(js: Sequence[JudgmentRecord], n_boot: int, seed: int) -> tuple[float | None, float | None, float | None, int]:
    """Accuracy (%) over a set of API-call (or episode) judgments (:func:`apibank_lib.runs.scoring.accuracy`), its
    interval (dialogues resampled; none below :data:`~apibank_lib.core.stats.MIN_CLUSTERS` dialogues) and how many
    dialogues it rests on."""
    _, counted, share = accuracy(js)
    if not counted:
        return None, None, None, 0
    iv = bootstrap_mean([1.0 if j.correct else 0.0 for j in js], [dialogue_cluster(j) for j in js], n_boot=n_boot, seed=seed)
    return (percent(share), *bounds(iv, 100), iv.clusters)


def item_accuracy_cell(run: ScoredRun, n_boot: int, seed: int) -> tuple[float | None, float | None, float | None, int]:
    """The paper's level-3 item accuracy (every teacher-forced step of an item right), its interval over items
    (none below :data:`~apibank_lib.core.stats.MIN_CLUSTERS` items) and the number of items."""
    everything = run.judgments + run.excluded
    results = item_results(everything, item_lengths(everything))
    if not results:
        return None, None, None, 0
    iv = bootstrap_mean([float(ok) for _, ok in results], [item for (_, item), _ in results], n_boot=n_boot, seed=seed)
    share = sum(ok for _, ok in results) / len(results)
    return (percent(share), *bounds(iv, 100), len(results))


def rouge_cell(js: Sequence[JudgmentRecord], n_boot: int, seed: int) -> tuple[float | None, ...]:
    """Mean ROUGE-L (the protocol's metric) with its interval over reply judgments."""
    if not js:
        return None, None, None
    values = [j.rouge_l or 0.0 for j in js]
    iv = bootstrap_mean(values, [dialogue_cluster(j) for j in js], n_boot=n_boot, seed=seed)
    return round(iv.estimate, 4), round(iv.low, 4), round(iv.high, 4)
