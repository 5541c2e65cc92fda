"""The main table in the paper's layout, per run: accuracy per level with intervals, ROUGE-L, counts and costs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from apibank_lib.core.stats import MIN_CLUSTERS, N_BOOT, SEED
from apibank_lib.data.reported import (
    PAPER_MAIN_RESULTS,
)
from apibank_lib.report.cells import accuracy_cell, item_accuracy_cell, pandas_module, percent, rouge_cell
from apibank_lib.runs.costs import RunCost, run_cost
from apibank_lib.runs.scoring import ScoredRun

if TYPE_CHECKING:
    import pandas as pd


ABILITIES = {1: "Call", 2: "Retrieve+Call", 3: "Plan+Retrieve+Call"}
"""The paper's name of each level's ability."""


COST_COLUMNS = ("tokens in", "tokens out", "s/answer (median)", "s/answer (p90)", "answers/s", "price")
"""The main table's cost columns (:mod:`apibank_lib.runs.costs`); ``price`` only with a price per million tokens."""

TIMED_COLUMNS = ("s/answer (median)", "s/answer (p90)", "answers/s")
"""The cost columns measured in seconds: they differ between two runs of the same answers (the machine's speed), so
a comparison of tables across runs leaves them out."""


def _cost(run: ScoredRun, price_per_mtok: tuple[float, float] | None) -> RunCost:
    """What a run cost, over the answers of the samples it is restricted to (read once, with the run)."""
    return run_cost(run.folder, price_per_mtok, keys=run.by_key.keys(), records=run.predictions.values())


def _cost_cells(run: ScoredRun, price_per_mtok: tuple[float, float] | None) -> dict[str, Any]:
    """A run's cost columns, over the answers of the samples it is restricted to."""
    cost = _cost(run, price_per_mtok)
    counted = cost.counted > 0  # a backend that counts no tokens (the reference ones) leaves the columns blank
    cells: dict[str, Any] = {
        "tokens in": cost.prompt_tokens if counted else None,
        "tokens out": cost.completion_tokens if counted else None,
        "s/answer (median)": cost.median_s,
        "s/answer (p90)": cost.p90_s,
        "answers/s": cost.per_s,
    }
    if price_per_mtok is not None:
        cells["price"] = cost.price if counted else None
    return cells


ITEMS_COLUMN = "Plan+Retrieve+Call items"
"""The paper's level-3 metric: items whose every teacher-forced step is right, over items."""

EPISODES_COLUMN = "Plan+Retrieve+Call episodes"
"""Our free-running agent episodes that reach the gold end state (no reported figure measures this)."""

REPORTED_COLUMNS = {"l1_acc": "Call acc", "l2_acc": "Retrieve+Call acc", "l3_acc": ITEMS_COLUMN}
"""Where each of the paper's accuracies goes in the main table: under the column that measures what it measured.
The paper's level-3 figure (e.g. GPT-4's 70.00 = 35 of 50) is the original evaluator's item accuracy."""


def main_table(
    runs: Sequence[ScoredRun],
    *,
    reported_rows: bool | None = None,
    dated: bool = True,
    n_boot: int = N_BOOT,
    seed: int = SEED,
    price_per_mtok: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """The paper's main table: accuracy and ROUGE-L per ability and in total, one row per run.

    Columns: the run's labels (model, prompt mode, protocol, data), ``subset`` (which samples: ``all``, or a
    limit's size, draw and seed), ``source`` ("measured here" or "reported"), ``date``,
    then per ability ``<Ability> acc`` with ``... low``/``... high`` (95% interval), ``<Ability> n`` (the
    API-call samples it is over), ``<Ability> dialogues`` (the dialogues, at level 3 items, its interval resamples)
    and ``<Ability> ROUGE-L``. Level 3 has three accuracies that measure different things: ``Plan+Retrieve+Call
    acc`` counts teacher-forced steps; ``Plan+Retrieve+Call items`` (:data:`ITEMS_COLUMN`) counts items whose every
    step is right, the paper's metric, where its three level-3 figures go; ``Plan+Retrieve+Call episodes``
    (:data:`EPISODES_COLUMN`) counts our free-running agent episodes that end in the gold state, which nobody
    reported. ``Total acc``/``Total ROUGE-L`` as described in the module docstring. An interval over fewer than
    :data:`~apibank_lib.core.stats.MIN_CLUSTERS` dialogues (items) is left blank: its count says why.
    The paper's rows follow, labelled "reported", when ``reported_rows`` is True or, by default, when every run is
    on an official release (the data the paper measured on; beside our bundled benchmark its figures would read as
    comparable). ``dated=False`` leaves the date out (for outputs compared across days).

    What each run cost closes the row (:data:`COST_COLUMNS`, over the answers of the samples the row is about):
    tokens in and out (blank for a backend that counts none), seconds per answer (median and p90), answers per
    second of answering time (blank when the folder holds answers the row leaves out, since its time covers them
    too), and with ``price_per_mtok`` (in, out per million tokens) the price.
    """
    pd = pandas_module()
    rows = []
    for r in runs:
        row: dict[str, Any] = {**r.labels(), "subset": r.subset, "source": "measured here", "errata": r.errata}
        if dated:
            row["date"] = r.date
        for level, ability in ABILITIES.items():
            api = [j for j in r.judgments if j.level == level and j.kind == "api"]
            acc, low, high, dialogues = accuracy_cell(api, n_boot, seed)
            rouge, _, _ = rouge_cell([j for j in r.judgments if j.level == level and j.kind == "response"], n_boot, seed)
            row.update({f"{ability} acc": acc, f"{ability} acc low": low, f"{ability} acc high": high})
            row[f"{ability} n"] = len(api)
            row[f"{ability} dialogues"] = dialogues
            row[f"{ability} ROUGE-L"] = rouge
        items, low, high, counted = item_accuracy_cell(r, n_boot, seed)
        row.update({ITEMS_COLUMN: items, f"{ITEMS_COLUMN} low": low, f"{ITEMS_COLUMN} high": high})
        row[f"{ITEMS_COLUMN} n"] = counted
        row[f"{ITEMS_COLUMN} dialogues"] = counted
        episode_judgments = [j for j in r.judgments if j.kind == "episode"]
        episodes, low, high, dialogues = accuracy_cell(episode_judgments, n_boot, seed)
        row.update({EPISODES_COLUMN: episodes, f"{EPISODES_COLUMN} low": low, f"{EPISODES_COLUMN} high": high})
        row[f"{EPISODES_COLUMN} n"] = len(episode_judgments)
        row[f"{EPISODES_COLUMN} dialogues"] = dialogues
        api_judgments = [j for j in r.judgments if j.kind == "api"]
        total, low, high, dialogues = accuracy_cell(api_judgments, n_boot, seed)
        row.update({"Total acc": total, "Total acc low": low, "Total acc high": high, "Total n": len(api_judgments)})
        row["Total dialogues"] = dialogues
        row["Total ROUGE-L"] = rouge_cell([j for j in r.judgments if j.kind == "response"], n_boot, seed)[0]
        row.update(_cost_cells(r, price_per_mtok))
        rows.append(row)
    if reported_rows is None:
        # The paper's figures were measured on the official release: beside runs on other data (our bundled
        # benchmark) they would read as comparable, and they are not.
        reported_rows = bool(runs) and all(r.info.official_release for r in runs)
    if reported_rows:
        for model, v in PAPER_MAIN_RESULTS.items():
            row = {"model": model, "prompt mode": "", "protocol": "", "data": "API-Bank (paper)", "subset": "", "source": "reported"}
            for level, ability in ABILITIES.items():
                # The paper's level-3 accuracy counts items whose every teacher-forced step is right
                # (REPORTED_COLUMNS): not steps, and not free-running episodes.
                row[REPORTED_COLUMNS[f"l{level}_acc"]] = v[f"l{level}_acc"]
                row[f"{ability} ROUGE-L"] = v[f"l{level}_rouge"]
            row.update({"Total acc": v["total_acc"], "Total ROUGE-L": v["total_rouge"]})
            rows.append(row)
    table = pd.DataFrame(rows)
    counts = [c for c in table.columns if c.endswith((" n", " dialogues")) or c.startswith("tokens ")]
    return table.astype({c: "Int64" for c in counts})  # counts stay whole numbers beside the reported rows' blanks


def count_column(accuracy_column: str) -> str:
    """The main table's column counting the samples an accuracy column is over (``Call acc`` -> ``Call n``,
    ``Plan+Retrieve+Call episodes`` -> ``Plan+Retrieve+Call episodes n``)."""
    stem = accuracy_column.removesuffix(" acc")
    return f"{stem} n"


def units_column(accuracy_column: str) -> str:
    """The main table's column counting what an accuracy column's interval resamples (dialogues; level-3 items):
    ``Call acc`` -> ``Call dialogues``."""
    return f"{accuracy_column.removesuffix(' acc')} dialogues"


def compact_main_table(main: Any) -> pd.DataFrame:
    """The main table for reading: one column per ability, accuracy as ``value [low, high] (n=...)`` with ROUGE-L
    beside; then what the run cost: tokens in / out, seconds per answer (median, with the p90), answers per second
    and, where the main table has it, the price.

    Args:
        main: a table from :func:`main_table`.
    """
    pd = pandas_module()

    def acc(row: Any, column: str) -> str:
        value = row.get(column)
        if value is None or value != value:
            return ""
        low, high = row.get(f"{column} low"), row.get(f"{column} high")
        has_interval = low is not None and low == low
        shown = f"{value:.2f} [{low:.2f}, {high:.2f}]" if has_interval else f"{value:.2f}"
        n, units = row.get(count_column(column)), row.get(units_column(column))
        if n is None or pd.isna(n):
            return shown  # a reported figure: no count to show
        # Every measured accuracy shows its count and what its interval resamples (level-3 items, or dialogues).
        unit = "items" if column.startswith(ABILITIES[3]) else "dialogues"
        if column == ITEMS_COLUMN:
            count = f"{int(n)} items"
        else:
            count = f"n={int(n)}" if units is None or pd.isna(units) else f"n={int(n)}, {int(units)} {unit}"
        if not has_interval and units is not None and not pd.isna(units) and int(units) < MIN_CLUSTERS:
            return f"{shown} ({count}: too few for an interval)"
        return f"{shown} ({count})"

    def rouge(row: Any, column: str) -> str:
        value = row.get(column)
        return "" if value is None or value != value else f"{value:.4f}"

    def given(value: Any) -> bool:
        return value is not None and not pd.isna(value)

    def tokens(row: Any) -> str:
        t_in, t_out = row.get("tokens in"), row.get("tokens out")
        return f"{_short_count(t_in)} / {_short_count(t_out)}" if given(t_in) and given(t_out) else ""

    def seconds(row: Any) -> str:
        median, p90 = row.get("s/answer (median)"), row.get("s/answer (p90)")
        return f"{median:.2f} (p90 {p90:.2f})" if given(median) and given(p90) else ""

    rows = []
    for _, row in main.iterrows():
        errata = row.get("errata", "")
        out = {
            "model": row["model"], "data": row.get("data", ""), "subset": row.get("subset", ""), "source": row["source"],
            "protocol": row.get("protocol", ""),
            "errata": "" if errata != errata else errata,  # NaN on the reported rows
        }
        for ability in ABILITIES.values():
            out[f"{ability} acc"] = acc(row, f"{ability} acc")
            out[f"{ability} ROUGE-L"] = rouge(row, f"{ability} ROUGE-L")
        out[ITEMS_COLUMN] = acc(row, ITEMS_COLUMN)
        out[EPISODES_COLUMN] = acc(row, EPISODES_COLUMN)
        out["Total acc"] = acc(row, "Total acc")
        out["Total ROUGE-L"] = rouge(row, "Total ROUGE-L")
        if "s/answer (median)" in main.columns:
            out["tokens in / out"] = tokens(row)
            out["s/answer"] = seconds(row)
            per_s = row.get("answers/s")
            out["answers/s"] = f"{per_s:.3f}" if given(per_s) else ""
        if "price" in main.columns:
            price = row.get("price")
            out["price"] = f"{price:.4f}" if given(price) else ""
        rows.append(out)
    return pd.DataFrame(rows)


def _short_count(n: Any) -> str:
    """A token count for reading: ``812``, ``45.3k``, ``1.52M``."""
    n = int(n)
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


def compare_runs(runs: Sequence[ScoredRun], *, price_per_mtok: tuple[float, float] | None = None) -> pd.DataFrame:
    """Many runs side by side: labels, the subset each folder holds, accuracy and ROUGE-L (both packages) per level,
    coverage, empty answers, and what each cost (:mod:`apibank_lib.runs.costs`: tokens in and out, seconds per
    answer, answers per second of answering time, and with ``price_per_mtok`` (in, out per million tokens) the price).

    The columns say which ROUGE-L package each number is from; the protocol's
    own is the one :func:`main_table` reports.
    """
    pd = pandas_module()
    rows = []
    for r in runs:
        row: dict[str, Any] = {**r.labels(), "subset": r.subset}
        for lv, m in r.metrics.levels.items():
            row[f"L{lv} acc"] = percent(m.api_accuracy)
            row[f"L{lv} samples"] = m.api_samples
            for name, value in m.rouge_l_by_metric.items():
                row[f"L{lv} ROUGE-L ({name})"] = value
            if m.items is not None:
                row["L3 items right"] = percent(m.item_accuracy)  # the paper's level-3 metric
                row["L3 items"] = m.items
            if m.episodes is not None:
                row["L3 episodes solved"] = percent(m.episode_success_rate)
        row["total acc"] = percent(r.metrics.overall.api_accuracy)
        cov = r.metrics.coverage
        row.update({"answered": cov["answered"], "failed": cov["failed"], "expected": cov["expected"]})
        # Answers of zero tokens (scored before this count existed: unknown until scored again).
        row["empty answers"] = r.metrics.overall.empty_answers
        row["errata"] = r.errata
        row["partial"] = r.metrics.partial
        cost = _cost(r, price_per_mtok)
        row.update(
            {
                "tokens in": cost.prompt_tokens, "tokens out": cost.completion_tokens,
                "s/answer (median)": cost.median_s, "s/answer (p90)": cost.p90_s, "answers/s": cost.per_s,
            }
        )
        if price_per_mtok is not None:
            row["price"] = cost.price
        rows.append(row)
    return pd.DataFrame(rows)
