"""How errors compound at level 3: steps, the items they make up, and free-running episodes, on the same items.

A level-3 item is a plan of several API calls. The paper scores it teacher-forced: every step is asked with the
gold history before it, and the item is right only when every step is (:func:`apibank_lib.runs.scoring.item_figures`).
Our agent episodes run free: the model sees only its own earlier calls and results. :func:`compounding_table` sets,
per model, on the items both were measured on:

* step accuracy (every teacher-forced step a sample),
* item accuracy (teacher-forced; the paper's metric),
* the item accuracy that independent steps would give (each item's steps right with the step accuracy's
  probability, independently: the mean over items of ``p ** steps``),
* episode success (free-running, where the run has episodes),

each with a 95% interval that resamples items (one bootstrap draw of items serves every column, so the columns of
a row are comparable; over fewer than :data:`MIN_ITEMS` items the interval is left blank and the row's note says
why). Item accuracy above the independent figure means a model's wrong steps cluster in a few items (hard items);
below it, they are spread over more items than chance would put them. Episodes below item accuracy mean that the
model's own mistakes, fed back, cost more than the gold history lets a teacher-forced score show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from apibank_lib.core.stats import MIN_CLUSTERS, N_BOOT, SEED, percentiles
from apibank_lib.runs.scoring import ScoredRun

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MIN_ITEMS", "ItemOutcome", "compounding_table", "item_outcomes", "summary"]

LEVEL = 0.95
MIN_ITEMS = MIN_CLUSTERS
"""Below this many items an interval says nothing trustworthy (a resample of 3 items has few distinct values):
the table leaves it blank and says why."""


@dataclass(frozen=True)
class ItemOutcome:
    """One level-3 item of one run: its teacher-forced steps and, where the run has one, its episode.

    Attributes:
        item: the item's id (its dialogue id).
        steps: teacher-forced steps judged (those an erratum excludes left out).
        steps_right: how many of them are right.
        episode: whether its episode succeeded (None without an episode).
    """

    item: str
    steps: int
    steps_right: int
    episode: bool | None

    @property
    def right(self) -> bool:
        """The item is right teacher-forced: every step is."""
        return self.steps_right == self.steps


def item_outcomes(run: ScoredRun) -> list[ItemOutcome]:
    """The run's level-3 items (first trial) with at least one judged step, in item order; where the run has
    episodes, only the items that have both (so that every column of a row is about the same items)."""
    steps: dict[str, list[bool]] = {}
    episodes: dict[str, bool] = {}
    for j in run.judgments:  # excluded judgments are kept apart in ScoredRun.excluded
        if j.level != 3 or j.trial != 1:
            continue
        if j.kind == "api":
            steps.setdefault(j.dialogue_id, []).append(bool(j.correct))
        elif j.kind == "episode":
            episodes[j.dialogue_id] = bool(j.correct)
    items = sorted(steps, key=_item_order)
    if episodes:
        items = [i for i in items if i in episodes]
    return [ItemOutcome(i, len(steps[i]), sum(steps[i]), episodes.get(i)) for i in items]


def _item_order(item: str) -> tuple[int, str]:
    return (int(item), item) if item.isdigit() else (1 << 30, item)


def _figures(outcomes: Sequence[ItemOutcome], draws: np.ndarray) -> dict[str, tuple[float, float, float] | None]:
    """Each column's estimate and interval (in %), over the same item draws."""
    n = np.array([o.steps for o in outcomes], dtype=float)
    k = np.array([o.steps_right for o in outcomes], dtype=float)
    right = np.array([o.right for o in outcomes], dtype=float)

    def independent(idx: np.ndarray) -> np.ndarray:
        p = k[idx].sum(axis=-1) / n[idx].sum(axis=-1)
        return (p[..., None] ** n[idx]).mean(axis=-1)

    everything = np.arange(len(outcomes))
    columns: dict[str, Any] = {
        "step": lambda idx: k[idx].sum(axis=-1) / n[idx].sum(axis=-1),
        "item": lambda idx: right[idx].mean(axis=-1),
        "independent": independent,
    }
    if all(o.episode is not None for o in outcomes):
        episode = np.array([bool(o.episode) for o in outcomes], dtype=float)
        columns["episode"] = lambda idx: episode[idx].mean(axis=-1)
    out: dict[str, tuple[float, float, float] | None] = {"episode": None}
    for name, figure in columns.items():
        low, high = percentiles(figure(draws), LEVEL)
        out[name] = (100.0 * float(figure(everything)), 100.0 * low, 100.0 * high)
    return out


def compounding_table(runs: Sequence[ScoredRun], *, n_boot: int = N_BOOT, seed: int = SEED) -> pd.DataFrame:
    """Per run with level-3 steps: step accuracy, item accuracy, the item accuracy independent steps would give, and
    episode success, on the same items, each with a 95% interval over items (module docstring).

    Args:
        runs: scored runs; those without level-3 steps are left out.
        n_boot: bootstrap replicates (items resampled).
        seed: the resampling's seed (one draw of items per run serves all its columns).

    Returns:
        One row per run: its labels and subset, items and steps, then for each figure its value, low and high (%),
        and a note. Episode columns are empty for a run without episodes; intervals over fewer than
        :data:`MIN_ITEMS` items are empty, and the note says so.
    """
    import pandas as pd

    rows = []
    for run in runs:
        outcomes = item_outcomes(run)
        if not outcomes:
            continue
        draws = np.random.default_rng(seed).integers(0, len(outcomes), size=(n_boot, len(outcomes)))
        figures = _figures(outcomes, draws)
        row: dict[str, Any] = {**run.labels(), "subset": run.subset, "items": len(outcomes)}
        row["steps"] = sum(o.steps for o in outcomes)
        for name, label in (
            ("step", "step acc"),
            ("item", "item acc"),
            ("independent", "item acc if steps were independent"),
            ("episode", "episode success"),
        ):
            got = figures[name]
            row[label], row[f"{label} low"], row[f"{label} high"] = (
                (round(got[0], 2), round(got[1], 2), round(got[2], 2)) if got is not None else (None, None, None)
            )
            if len(outcomes) < MIN_ITEMS:
                row[f"{label} low"] = row[f"{label} high"] = None
        row["note"] = (
            f"intervals left out: {len(outcomes)} items, fewer than {MIN_ITEMS}" if len(outcomes) < MIN_ITEMS else ""
        )
        rows.append(row)
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame) -> str:
    """What a compounding table says, in one sentence (for under the table): how many runs' items come out below
    what independent steps would give, and how many runs' episodes below their teacher-forced items."""
    measured = table[table["step acc"].between(0.0, 100.0, inclusive="neither")] if len(table) else table
    if not len(measured):
        return "No run here has level-3 step accuracy strictly between 0 and 100%, so there is nothing to compound."
    independent = measured["item acc if steps were independent"]
    spread = int((measured["item acc"] < independent).sum())
    clustered = int((measured["item acc"] > independent).sum())
    with_episodes = measured[measured["episode success"].notna()]
    below = int((with_episodes["episode success"] < with_episodes["item acc"]).sum())
    return (
        f"Of {len(measured)} run(s) with some but not all level-3 steps right, {clustered} solve more items than "
        f"independent steps would (their wrong steps cluster in a few items) and {spread} fewer (spread over more "
        f"items than chance); {below} of the {len(with_episodes)} with episodes succeed less often running free "
        "than teacher-forced."
    )
