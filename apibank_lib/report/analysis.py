"""Tables of results: the paper's layouts, with confidence intervals, breakdowns, errors and the step funnel.

Everything a notebook shows comes from here, as pandas DataFrames; notebooks
only call these functions, and :func:`save_table` writes any of them as CSV and
Markdown under the results folder.

Conventions:

* A run is a scored run folder (:class:`ScoredRun`), labelled by its model (as
  the backend names it), prompt mode (chat, tools, completion, reference),
  protocol and data (``bundled`` or the release folder's name).
* Accuracy is in percent, as in the paper; intervals are 95% cluster-bootstrap
  intervals over dialogues (level-3 items), seeded (:mod:`apibank_lib.core.stats`).
* "Total" accuracy is the micro average over every API-call sample of the three
  levels (level-3 steps included); "Total" ROUGE-L the mean over every reply.
  The paper does not say how it aggregated its Total columns.
* Figures from elsewhere carry ``source = "reported"``; ours ``"measured here"``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.paths import figures_dir, results_dir, use_source
from apibank_lib.core.stats import MIN_CLUSTERS, N_BOOT, SEED, bootstrap_mean, bounds, paired_comparison
from apibank_lib.core.types import ApiCallSample, ResponseSample, ToolSchema
from apibank_lib.data.datasets import Benchmark, load_benchmark, statistics
from apibank_lib.data.reported import (
    OFFICIAL_RELEASE_COUNTS,
    ORIGINAL_REPLAY,
    PAPER_CORPUS,
    PAPER_ERROR_DISTRIBUTION,
    PAPER_MAIN_RESULTS,
    PAPER_TOOLALPACA,
)
from apibank_lib.env.protocols import PAPER
from apibank_lib.env.tools.base import LEVEL3, LEVEL12
from apibank_lib.env.tools.registry import domains
from apibank_lib.grading.grader import replay
from apibank_lib.grading.taxonomy import NOT_THE_MODELS, PAPER_LABEL, ErrorCategory
from apibank_lib.runs.config import default_runs_dir
from apibank_lib.runs.costs import RunCost, run_cost
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.records import JudgmentRecord
from apibank_lib.runs.scoring import ScoredRun, accuracy, item_lengths, item_results, scored
from apibank_lib.runs.trials import measures, sample_trials, trial_groups

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ScoredRun",
    "load_runs",
    "results_dir",
    "figures_dir",
    "use_data",
    "save_table",
    "main_table",
    "compact_main_table",
    "COST_COLUMNS",
    "TIMED_COLUMNS",
    "count_column",
    "units_column",
    "ITEMS_COLUMN",
    "EPISODES_COLUMN",
    "REPORTED_COLUMNS",
    "compare_runs",
    "breakdown",
    "paired_table",
    "paired_tables",
    "trials_table",
    "sample_success_rates",
    "select",
    "by_model",
    "on_common_samples",
    "error_counts",
    "error_distribution",
    "failure_examples",
    "funnel",
    "FUNNEL_STAGES",
    "statistics_table",
    "level_statistics_table",
    "calls_by_domain",
    "check_release",
    "toolalpaca_table",
    "corpus_vocabulary",
    "seen_in_training",
    "ABILITIES",
]

ABILITIES = {1: "Call", 2: "Retrieve+Call", 3: "Plan+Retrieve+Call"}
"""The paper's name of each level's ability."""

PAPER_SEVEN = (
    ErrorCategory.NO_API_CALL,
    ErrorCategory.API_HALLUCINATION,
    ErrorCategory.INVALID_INPUT_PARAMETERS,
    ErrorCategory.FALSE_API_CALL_FORMAT,
    ErrorCategory.MISSING_INPUT_PARAMETERS,
    ErrorCategory.HAS_EXCEPTION,
    ErrorCategory.FAILED_API_RETRIEVAL,
)
"""The paper's seven error categories, in its order."""



def use_data(bench: Benchmark) -> Path:
    """Write this notebook's tables and figures in the folders of ``bench``'s data source (``results/bundled/``,
    ``results/<release folder>/``, and the same under ``figures/``), so that a run on one source never overwrites
    another's; returns the tables' folder."""
    use_source(bench.source)
    return results_dir()


def _whole_numbers_as_integers(frame: Any) -> Any:
    """A copy in which float columns holding only whole numbers (and blanks) are integers: a count with a blank
    row becomes a float column in pandas, and would print as ``967.0``."""
    pd = _pandas()
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if pd.api.types.is_float_dtype(values) and values.notna().any():
            present = values.dropna()
            if (present == present.round()).all() and present.abs().max() < 2**53:
                out[column] = values.astype("Int64")
    return out


def save_table(frame: Any, name: str, directory: str | Path | None = None) -> dict[str, Path]:
    """Write a DataFrame as ``<name>.csv`` and ``<name>.md`` (a Markdown table) under the results folder.

    Returns:
        ``{"csv": path, "md": path}``.
    """
    folder = Path(directory) if directory is not None else results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"csv": folder / f"{name}.csv", "md": folder / f"{name}.md"}
    frame = _whole_numbers_as_integers(frame)
    frame.to_csv(paths["csv"], index=False)
    shown = frame.astype(object).where(frame.notna(), "")  # an empty cell, not "nan", where a value does not apply
    paths["md"].write_text(shown.to_markdown(index=False, disable_numparse=True) + "\n", encoding="utf-8")
    return paths


# --- runs ----------------------------------------------------------------------------------------


def load_runs(
    runs: Iterable[str | Path | RunFolder] | None = None, *, bench: Benchmark | None = None, rescore: bool = False
) -> list[ScoredRun]:
    """Scored runs (:func:`apibank_lib.runs.scoring.scored` of each), scoring those that are not scored yet (or all,
    with ``rescore``).

    Reading never changes a run's scores: a run scored under another version of its protocol is loaded as it is,
    with a warning that names both versions, and its rows say which version they are.

    Args:
        runs: run folders (or runs already read, kept as they are); default: every run folder under the runs
            folder (sorted by name).
        bench: the benchmark of the runs made on it (the others load their own data).
        rescore: score every run again under today's protocol (e.g. after a grading change), replacing its
            ``metrics.json`` and ``judgments.jsonl``.
    """
    if runs is None:
        root = default_runs_dir()
        runs = sorted(p for p in root.iterdir() if (p / "config.json").is_file()) if root.is_dir() else []
    out = []
    for item in runs:
        if isinstance(item, ScoredRun) and not rescore:
            out.append(item)
            continue
        folder = item.folder if isinstance(item, ScoredRun) else item if isinstance(item, RunFolder) else RunFolder(item)
        fingerprint = folder.read_info().identity["data_fingerprint"]
        usable = bench if bench is not None and bench.fingerprint == fingerprint else None
        run = scored(folder, usable, rescore=rescore, stacklevel=3)
        out.append(run.restricted(item.by_key) if isinstance(item, ScoredRun) else run)
    return out


def select(runs: Sequence[ScoredRun], **labels: str) -> list[ScoredRun]:
    """The runs whose labels have the given values, e.g. ``select(runs, prompt_mode="reference")``.

    Label names are those of :meth:`ScoredRun.labels` with underscores for spaces
    (``model``, ``prompt_mode``, ``protocol``, ``data``); ``protocol`` matches a name (``v2``) or a version (``v2.2``).
    """

    def matches(run: ScoredRun, key: str, value: str) -> bool:
        if key == "protocol" and value == run.protocol:
            return True
        return run.labels()[key.replace("_", " ")] == value

    return [r for r in runs if all(matches(r, k, v) for k, v in labels.items())]


def by_model(runs: Sequence[ScoredRun], model: str) -> ScoredRun:
    """The run of a model (its spec as given, or as its backend names it).

    Raises:
        ConfigError: no run, or several runs, of that model.
    """
    found = [r for r in runs if model in (r.model, r.info.model)]
    if len(found) != 1:
        raise ConfigError(f"{len(found)} runs of {model!r} among {[r.label for r in runs]}")
    return found[0]


def on_common_samples(runs: Sequence[ScoredRun], *, level: int | None = None, kind: str | None = None) -> list[ScoredRun]:
    """The runs with only the judgments every one of them has (of one level and kind, when given), in each run's
    order, so that tables over them (errors, funnels, breakdowns) compare the same samples. The folders are not
    touched."""
    def wanted(j: JudgmentRecord) -> bool:
        return (level is None or j.level == level) and (kind is None or j.kind == kind)

    keys = [{j.key for j in r.judgments if wanted(j)} for r in runs]
    shared = set.intersection(*keys) if keys else set()
    return [replace(r, judgments=[j for j in r.judgments if j.key in shared]) for r in runs]


def _pandas() -> Any:
    import pandas as pd

    return pd


def _pct(x: float | None) -> float | None:
    return None if x is None else round(100.0 * x, 2)


def _cluster(j: JudgmentRecord) -> tuple[int, str]:
    return (j.level, j.dialogue_id)


def _accuracy(js: Sequence[JudgmentRecord], n_boot: int, seed: int) -> tuple[float | None, float | None, float | None, int]:
    """Accuracy (%) over a set of API-call (or episode) judgments (:func:`apibank_lib.runs.scoring.accuracy`), its
    interval (dialogues resampled; none below :data:`~apibank_lib.core.stats.MIN_CLUSTERS` dialogues) and how many
    dialogues it rests on."""
    _, counted, share = accuracy(js)
    if not counted:
        return None, None, None, 0
    iv = bootstrap_mean([1.0 if j.correct else 0.0 for j in js], [_cluster(j) for j in js], n_boot=n_boot, seed=seed)
    return (_pct(share), *bounds(iv, 100), iv.clusters)


def _item_accuracy(run: ScoredRun, n_boot: int, seed: int) -> tuple[float | None, float | None, float | None, int]:
    """The paper's level-3 item accuracy (every teacher-forced step of an item right), its interval over items
    (none below :data:`~apibank_lib.core.stats.MIN_CLUSTERS` items) and the number of items."""
    everything = run.judgments + run.excluded
    results = item_results(everything, item_lengths(everything))
    if not results:
        return None, None, None, 0
    iv = bootstrap_mean([float(ok) for _, ok in results], [item for (_, item), _ in results], n_boot=n_boot, seed=seed)
    share = sum(ok for _, ok in results) / len(results)
    return (_pct(share), *bounds(iv, 100), len(results))


def _rouge(js: Sequence[JudgmentRecord], n_boot: int, seed: int) -> tuple[float | None, ...]:
    """Mean ROUGE-L (the protocol's metric) with its interval over reply judgments."""
    if not js:
        return None, None, None
    values = [j.rouge_l or 0.0 for j in js]
    iv = bootstrap_mean(values, [_cluster(j) for j in js], n_boot=n_boot, seed=seed)
    return round(iv.estimate, 4), round(iv.low, 4), round(iv.high, 4)


# --- the main table ----------------------------------------------------------------------------------


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
    pd = _pandas()
    rows = []
    for r in runs:
        row: dict[str, Any] = {**r.labels(), "subset": r.subset, "source": "measured here", "errata": r.errata}
        if dated:
            row["date"] = r.date
        for level, ability in ABILITIES.items():
            api = [j for j in r.judgments if j.level == level and j.kind == "api"]
            acc, low, high, dialogues = _accuracy(api, n_boot, seed)
            rouge, _, _ = _rouge([j for j in r.judgments if j.level == level and j.kind == "response"], n_boot, seed)
            row.update({f"{ability} acc": acc, f"{ability} acc low": low, f"{ability} acc high": high})
            row[f"{ability} n"] = len(api)
            row[f"{ability} dialogues"] = dialogues
            row[f"{ability} ROUGE-L"] = rouge
        items, low, high, counted = _item_accuracy(r, n_boot, seed)
        row.update({ITEMS_COLUMN: items, f"{ITEMS_COLUMN} low": low, f"{ITEMS_COLUMN} high": high})
        row[f"{ITEMS_COLUMN} n"] = counted
        row[f"{ITEMS_COLUMN} dialogues"] = counted
        episode_judgments = [j for j in r.judgments if j.kind == "episode"]
        episodes, low, high, dialogues = _accuracy(episode_judgments, n_boot, seed)
        row.update({EPISODES_COLUMN: episodes, f"{EPISODES_COLUMN} low": low, f"{EPISODES_COLUMN} high": high})
        row[f"{EPISODES_COLUMN} n"] = len(episode_judgments)
        row[f"{EPISODES_COLUMN} dialogues"] = dialogues
        api_judgments = [j for j in r.judgments if j.kind == "api"]
        total, low, high, dialogues = _accuracy(api_judgments, n_boot, seed)
        row.update({"Total acc": total, "Total acc low": low, "Total acc high": high, "Total n": len(api_judgments)})
        row["Total dialogues"] = dialogues
        row["Total ROUGE-L"] = _rouge([j for j in r.judgments if j.kind == "response"], n_boot, seed)[0]
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
    pd = _pandas()

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
    """Many runs side by side: labels, accuracy and ROUGE-L (both packages) per level, coverage, empty answers, and
    what each cost (:mod:`apibank_lib.runs.costs`: tokens in and out, seconds per answer, answers per second of answering
    time, and with ``price_per_mtok`` (in, out per million tokens) the price).

    The columns say which ROUGE-L package each number is from; the protocol's
    own is the one :func:`main_table` reports.
    """
    pd = _pandas()
    rows = []
    for r in runs:
        row: dict[str, Any] = {**r.labels()}
        for lv, m in r.metrics.levels.items():
            row[f"L{lv} acc"] = _pct(m.api_accuracy)
            row[f"L{lv} samples"] = m.api_samples
            for name, value in m.rouge_l_by_metric.items():
                row[f"L{lv} ROUGE-L ({name})"] = value
            if m.items is not None:
                row["L3 items right"] = _pct(m.item_accuracy)  # the paper's level-3 metric
                row["L3 items"] = m.items
            if m.episodes is not None:
                row["L3 episodes solved"] = _pct(m.episode_success_rate)
        row["total acc"] = _pct(r.metrics.overall.api_accuracy)
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


# --- breakdowns and paired comparisons ------------------------------------------------------------------


def _calls_per_dialogue(bench: Benchmark) -> dict[tuple[int, str], int]:
    counts: dict[tuple[int, str], int] = {}
    for level in (1, 2):
        for d in bench.dialogues(level):
            counts[(level, d.id)] = len(d.api_turns)
    for item in bench.level3:
        counts[(3, str(item.id))] = len(item.steps)
    return counts


def breakdown(
    run: ScoredRun, by: str, *, bench: Benchmark | None = None, n_boot: int = N_BOOT, seed: int = SEED
) -> pd.DataFrame:
    """API-call accuracy of one run broken down by ``api``, ``domain`` or ``calls`` (single- vs multi-call dialogues).

    Returns:
        One row per group: level, group, samples, accuracy (%) with its 95% interval.
    """
    pd = _pandas()
    if by not in ("api", "domain", "calls"):
        raise ConfigError(f"break down by 'api', 'domain' or 'calls', not {by!r}")
    domain_of = {**domains(LEVEL3), **domains(LEVEL12)}
    calls = _calls_per_dialogue(bench or load_benchmark(run.info.data)) if by == "calls" else {}
    groups: dict[tuple[int, str], list[JudgmentRecord]] = defaultdict(list)
    for j in run.judgments:
        if j.kind != "api":
            continue
        if by == "api":
            group = str(j.gold_api)
        elif by == "domain":
            group = domain_of.get(str(j.gold_api), "?")
        else:
            group = "single-call" if calls.get(_cluster(j), 0) == 1 else "multi-call"
        groups[(j.level, group)].append(j)
    rows = []
    for (level, group), js in sorted(groups.items()):
        acc, low, high, dialogues = _accuracy(js, n_boot, seed)
        rows.append(
            {"level": level, by: group, "samples": len(js), "dialogues": dialogues, "acc": acc, "acc low": low, "acc high": high}
        )
    return pd.DataFrame(rows)


def paired_tables(
    runs: Sequence[ScoredRun], pairs: Sequence[Sequence[str]], *, n_boot: int = N_BOOT, seed: int = SEED
) -> pd.DataFrame:
    """:func:`paired_table` for each ``(model A, model B)`` pair, in one DataFrame with the models named."""
    pd = _pandas()
    frames = []
    for a, b in pairs:
        table = paired_table(by_model(runs, a), by_model(runs, b), n_boot=n_boot, seed=seed)
        table.insert(0, "B model", b)
        table.insert(0, "A model", a)
        frames.append(table)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _per_sample(judgments: Sequence[JudgmentRecord]) -> dict[str, tuple[JudgmentRecord, float]]:
    """Sample key -> (its first judgment, its value): 100 or 0 for an API call (ROUGE-L for a reply), averaged over
    the sample's trials."""
    found: dict[str, list[JudgmentRecord]] = {}
    for j in judgments:
        if j.kind in ("api", "response"):
            found.setdefault(j.key, []).append(j)

    def value(j: JudgmentRecord) -> float:
        return (100.0 if j.correct else 0.0) if j.kind == "api" else (j.rouge_l or 0.0)

    return {key: (js[0], sum(map(value, js)) / len(js)) for key, js in found.items()}


def paired_table(a: ScoredRun, b: ScoredRun, *, n_boot: int = N_BOOT, seed: int = SEED) -> pd.DataFrame:
    """Run A against run B on the API-call samples (and replies) both answered: per level and overall.

    A run with several trials (:attr:`~apibank_lib.runs.config.RunConfig.trials`) enters with each sample's success rate
    (or mean ROUGE-L) over its trials.

    Returns:
        One row per level and ``all``: the metric, paired samples, A, B, A - B with
        its 95% interval, and the p-value of a cluster sign-flip permutation test.
    """
    pd = _pandas()
    if a.data != b.data or a.info.identity["data_fingerprint"] != b.info.identity["data_fingerprint"]:
        raise ConfigError("paired comparisons need two runs on the same data")
    mean_a, mean_b = _per_sample(a.judgments), _per_sample(b.judgments)
    rows = []
    for metric, kind in (("accuracy (%)", "api"), ("ROUGE-L", "response")):
        for level in (1, 2, 3, None):
            pairs = [
                (j, va, mean_b[key][1])
                for key, (j, va) in mean_a.items()
                if j.kind == kind and key in mean_b and level in (None, j.level)
            ]
            if not pairs:
                continue
            va, vb = [x for _, x, _ in pairs], [y for _, _, y in pairs]
            cmp = paired_comparison(va, vb, [_cluster(j) for j, _, _ in pairs], n_boot=n_boot, n_perm=n_boot, seed=seed)
            digits = 2 if kind == "api" else 4
            rows.append(
                {
                    "metric": metric,
                    "level": "all" if level is None else level,
                    "samples": cmp.samples,
                    "dialogues": cmp.clusters,
                    "A": round(sum(va) / len(va), digits),
                    "B": round(sum(vb) / len(vb), digits),
                    "A - B": round(cmp.difference, digits),
                    **dict(zip(("low", "high"), bounds(cmp, 1.0, digits))),  # blank below MIN_CLUSTERS dialogues
                    "p": round(cmp.p_value, 4),
                }
            )
    return pd.DataFrame(rows)


# --- trials ------------------------------------------------------------------------------------------------


def sample_success_rates(run: ScoredRun) -> pd.DataFrame:
    """One row per API-call sample and episode of a run with several trials: its trials, how many were right, and
    its success rate (%), in dataset order."""
    pd = _pandas()
    return pd.DataFrame(
        [
            {"key": s.key, "level": s.level, "kind": s.kind, "trials": s.trials, "right": s.correct,
             "success rate (%)": round(100 * s.rate, 2)}
            for s in sample_trials(run.judgments)
        ]
    )


def trials_table(run: ScoredRun, *, n_boot: int = N_BOOT, seed: int = SEED) -> pd.DataFrame:
    """pass^k and pass@k for k = 1..K, each trial's accuracy, and the share of samples whose trials disagree, per
    level (API-call samples; level-3 episodes apart, ``3/episodes``) and over all API-call samples, each with a 95% interval
    (dialogues resampled) (:mod:`apibank_lib.runs.trials`). Only samples with all K trials count.

    Raises:
        ConfigError: the run has one trial per sample.
    """
    pd = _pandas()
    samples = sample_trials(run.judgments)
    k_max = max((s.trials for s in samples), default=0)
    if k_max < 2:
        raise ConfigError(f"{run.folder.path} has one answer per sample: run it with --trials K (K > 1) and a --temperature")
    full = [s for s in samples if s.trials == k_max]
    rows = []
    for name, mine in trial_groups(full):
        for measure, k, values in measures(mine, k_max):
            iv = bootstrap_mean([100 * v for v in values], [s.cluster for s in mine], n_boot=n_boot, seed=seed)
            low, high = bounds(iv)
            rows.append(
                {"level": name, "measure": measure, "k": k, "samples": len(mine), "dialogues": iv.clusters,
                 "value (%)": round(iv.estimate, 2), "low": low, "high": high}
            )
    return pd.DataFrame(rows)


# --- errors ------------------------------------------------------------------------------------------------


def error_distribution(
    runs: Sequence[ScoredRun], *, mapped: bool = True, reported_columns: bool = True
) -> pd.DataFrame:
    """The share (%) of each run's wrong API calls per error category, one column per run.

    Args:
        runs: scored runs.
        mapped: the paper's seven categories, ours mapped onto them (Wrong Values
            counts as Invalid Input Parameters); else our categories as they are.
            Checker and tool errors blame our code, not the model: they are left
            out of the shares, and counted in a last row.
        reported_columns: add the paper's reported columns (mapped tables only).
    """
    pd = _pandas()
    categories = list(PAPER_SEVEN) if mapped else [c for c in ErrorCategory if c not in NOT_THE_MODELS]
    table: dict[str, list[Any]] = {"category": [c.value for c in categories] + ["errors counted", "not the model's"]}
    for r in runs:
        wrong = [ErrorCategory(j.category) for j in r.judgments if j.kind == "api" and j.category]
        blamed = [PAPER_LABEL[c] if mapped else c for c in wrong if c not in NOT_THE_MODELS]
        counts = {c: blamed.count(c) for c in categories}
        shares = [round(100.0 * counts[c] / len(blamed), 2) if blamed else None for c in categories]
        table[r.label] = shares + [len(blamed), len(wrong) - len(blamed)]
    if mapped and reported_columns:
        for model in ("Alpaca-7B", "Lynx-7B", "GPT-4"):
            column = [PAPER_ERROR_DISTRIBUTION[c.value][model] for c in categories]
            table[f"{model} (reported)"] = column + [None, None]
    return pd.DataFrame(table)


def error_counts(runs: Sequence[ScoredRun], *, mapped: bool = True) -> pd.DataFrame:
    """Each run's wrong API calls per error category, as counts and shares (%), one row per run and category.

    Categories as in :func:`error_distribution` (the paper's seven, or ours with ``mapped=False``); the errors that
    blame our code, not the model (a checker or tool failure), are a row of their own, with no share.
    """
    pd = _pandas()
    categories = list(PAPER_SEVEN) if mapped else [c for c in ErrorCategory if c not in NOT_THE_MODELS]
    rows = []
    for r in runs:
        wrong = [ErrorCategory(j.category) for j in r.judgments if j.kind == "api" and j.category]
        blamed = [PAPER_LABEL[c] if mapped else c for c in wrong if c not in NOT_THE_MODELS]
        for c in categories:
            n = blamed.count(c)
            share = round(100.0 * n / len(blamed), 2) if blamed else None
            rows.append({"run": r.label, "category": c.value, "errors": n, "share (%)": share})
        rows.append({"run": r.label, "category": "not the model's", "errors": len(wrong) - len(blamed), "share (%)": None})
    return pd.DataFrame(rows)


def failure_examples(run: ScoredRun, *, per_category: int = 2) -> pd.DataFrame:
    """The first few wrong API calls of each error category: the gold API, the call made, why it is wrong.

    A run on an official release gets a one-line note instead: a call repeats the release's values (names,
    tokens, dates), and a release's text stays out of the tables this project commits.
    """
    pd = _pandas()
    if run.info.official_release:
        return pd.DataFrame({"note": ["examples are not shown for a release: its dialogues' values stay out of saved tables"]})
    taken: dict[str, int] = defaultdict(int)
    rows = []
    for j in run.judgments:
        if j.kind != "api" or not j.category or taken[j.category] >= per_category:
            continue
        taken[j.category] += 1
        rows.append({"category": j.category, "sample": j.key, "gold API": j.gold_api, "call": j.call, "why": j.reason})
    return (
        pd.DataFrame(rows).sort_values("category", kind="stable").reset_index(drop=True) if rows else pd.DataFrame(rows)
    )


# --- the step funnel -------------------------------------------------------------------------------------------

FUNNEL_STAGES = (
    "API-call samples",
    "retrieved the right API",
    "right API name",
    "right argument names",
    "right values",
    "executed without exception",
    "result accepted",
    "good reply",
)
"""The funnel's stages, each a subset of the one before."""

REPLY_THRESHOLD = 0.5
"""ROUGE-L from which a reply counts as good in the funnel."""


def _search_keys(bench: Benchmark) -> dict[str, str | None]:
    """For each non-search API-call sample: the key of the ToolSearcher sample that found its API (None: no search)."""
    out: dict[str, str | None] = {}
    for level in (1, 2, 3):
        last_search: dict[str, str | None] = defaultdict(lambda: None)
        for s in bench.samples(level, "api"):
            if not isinstance(s, ApiCallSample) or s.duplicate:
                continue
            if s.gold.api_name == "ToolSearcher":
                last_search[s.dialogue_id] = s.key
            else:
                out[s.key] = last_search[s.dialogue_id] if level > 1 else None
    return out


def _next_replies(bench: Benchmark) -> dict[str, str]:
    """For each API-call sample directly followed by a reply in its dialogue: that reply's sample key."""
    out: dict[str, str] = {}
    for level in (1, 2, 3):
        samples = bench.samples(level)
        for s in samples:
            if isinstance(s, ResponseSample):
                if level == 3:  # the item's final reply follows its last step
                    out[f"L3/api/{s.dialogue_id}/{s.sample_id}"] = s.key
                else:
                    out[f"L{level}/api/{s.dialogue_id}/{s.sample_id - 1}"] = s.key
    return out


def funnel(run: ScoredRun, bench: Benchmark | None = None, *, reply_threshold: float = REPLY_THRESHOLD) -> pd.DataFrame:
    """How far each gold call gets, stage by stage, per level (the :data:`FUNNEL_STAGES`).

    The unit is an API-call sample whose gold call is not a search (duplicate
    samples left out). A sample reaches a stage when it passes it and every
    stage before:

    1. retrieved the right API: at level 1 the APIs are given; at levels 2-3 the
       ToolSearcher sample that found this API in the gold dialogue is judged
       correct (a call with no search before it passes);
    2. right API name;
    3. right argument names (renamed parameters mapped as the protocol maps them);
    4. right values: equal to the gold's once both are converted, or accepted
       by the API's rule (which may be fuzzy, e.g. meeting topics);
    5. executed without exception;
    6. result accepted by the API's rule;
    7. good reply: where the dialogue's next turn is a reply, it scores ROUGE-L
       of at least ``reply_threshold``; a call followed by another call passes.

    Returns:
        One row per level and stage: the model, the samples reaching it, and their share (%) of the level's samples.
    """
    pd = _pandas()
    bench = bench or load_benchmark(run.info.data)
    judged = {j.key: j for j in run.judgments}
    if any(j.kind == "api" and j.call is not None and j.right_api is None for j in run.judgments):
        raise ConfigError(
            f"{run.folder.path.name} was scored ({run.protocol_version}) before grading recorded how far each call "
            f"matches the gold call; score it again: apibank score {run.folder.path} --rescore"
        )
    search_of, reply_of = _search_keys(bench), _next_replies(bench)
    reached: dict[int, list[int]] = {level: [0] * len(FUNNEL_STAGES) for level in (1, 2, 3)}
    for level in (1, 2, 3):
        for s in bench.samples(level, "api"):
            j = judged.get(s.key)
            if j is None or not isinstance(s, ApiCallSample) or s.duplicate or s.gold.api_name == "ToolSearcher":
                continue
            search = judged.get(search_of.get(s.key) or "")
            reply = judged.get(reply_of.get(s.key, ""))
            passed = [
                True,
                search is None or bool(search.correct),
                bool(j.right_api),
                bool(j.right_argument_names),
                bool(j.right_values) or bool(j.correct),
                j.result is not None and j.result.get("exception") is None,
                bool(j.correct),
                reply is None or (reply.rouge_l or 0.0) >= reply_threshold,
            ]
            for stage, ok in enumerate(passed):
                if not ok:
                    break
                reached[level][stage] += 1
    rows = []
    for level, counts in reached.items():
        if not counts[0]:
            continue
        for stage, n in zip(FUNNEL_STAGES, counts):
            rows.append(
                {
                    "model": run.model,
                    "level": level,
                    "ability": ABILITIES[level],
                    "stage": stage,
                    "samples": n,
                    "share (%)": round(100.0 * n / counts[0], 2),
                }
            )
    return pd.DataFrame(rows)


# --- statistics and reported figures ----------------------------------------------------------------------------


def statistics_table(bench: Benchmark) -> pd.DataFrame:
    """The corpus statistics beside the paper's (reported) evaluation figures.

    Columns: quantity, measured here (on this data), reported (the paper).
    """
    pd = _pandas()
    counted = statistics(bench)
    t, levels = counted["total"], counted["levels"]
    p = PAPER_CORPUS["evaluation"]
    rows = [
        ("domains (level-1/2 tool set)", t["domains"], p["domains"]),
        ("distinct APIs called", t["distinct_apis"], p["apis"]),
        ("dialogues", t["dialogues"], p["dialogues"]),
        ("Call / Retrieve+Call / Plan+Retrieve+Call dialogues", " / ".join(str(levels[k]["dialogues"]) for k in ("1", "2", "3")),
         f"{p['call_dialogues']} / {p['retrieve_call_dialogues']} / {p['plan_retrieve_call_dialogues']}"),
        ("turns (user utterances)", t["turns"], p["turns"]),
        ("average turns per dialogue", t["avg_turns_per_dialogue"], p["avg_turns_per_dialogue"]),
        ("gold API calls", t["gold_calls"], p["api_calls"]),
        ("single-call dialogues", t["single_call_dialogues"], p["single_call_instances"]),
        ("multi-call dialogues", t["multi_call_dialogues"], p["multi_call_instances"]),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["quantity", f"measured here ({bench.name} data)", "reported (paper)"])


def level_statistics_table(bench: Benchmark) -> pd.DataFrame:
    """Per-level counts of the data (measured here) beside the official release's (counted with the original cutter).

    Columns: quantity, then for each level the count measured here and the official release's.
    """
    pd = _pandas()
    levels = statistics(bench)["levels"]
    keys = (
        "dialogues",
        "gold_calls",
        "toolsearcher_calls",
        "api_call_samples",
        "duplicate_api_samples",
        "response_samples",
        "user_turns",
        "distinct_apis",
    )
    rows = []
    for key in keys:
        row: dict[str, Any] = {"quantity": key.replace("_", " ")}
        for lv in ("1", "2", "3"):
            row[f"L{lv} measured here"] = levels[lv].get(key)
            row[f"L{lv} official release"] = OFFICIAL_RELEASE_COUNTS[lv].get(key)
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.astype({c: "Int64" for c in frame.columns if c != "quantity"})


def calls_by_domain(bench: Benchmark) -> pd.DataFrame:
    """Gold API calls per domain and level (ToolSearcher counted under "utility")."""
    pd = _pandas()
    domain_of = {3: domains(LEVEL3), 1: domains(LEVEL12), 2: domains(LEVEL12)}
    counts: dict[tuple[str, int], int] = defaultdict(int)
    for level in (1, 2):
        for d in bench.dialogues(level):
            for t in d.api_turns:
                counts[(domain_of[level].get(t.api_name, "?"), level)] += 1
    for item in bench.level3:
        for st in item.steps:
            counts[(domain_of[3].get(st.api_name, "?"), 3)] += 1
    frame = pd.DataFrame([{"domain": d, "level": lv, "gold calls": n} for (d, lv), n in counts.items()])
    table = frame.pivot_table(index="domain", columns="level", values="gold calls", fill_value=0, aggfunc="sum")
    table.columns = [f"L{c} gold calls" for c in table.columns]
    return table.reset_index().sort_values("domain", kind="stable").reset_index(drop=True)


def check_release(bench: Benchmark) -> pd.DataFrame:
    """Reported against measured, where both exist: an official release's counts and the original's gold replay.

    On our bundled data nothing is comparable, and every row says so.

    Returns:
        One row per check: quantity, reported, measured, tolerance, outcome
        (``agrees``, ``differs`` or ``not comparable ...``).
    """
    pd = _pandas()
    rows: list[dict[str, Any]] = []
    levels = statistics(bench)["levels"]
    for lv, counts in OFFICIAL_RELEASE_COUNTS.items():
        for key, value in counts.items():
            rows.append(
                {
                    "quantity": f"level {lv} {key.replace('_', ' ')}",
                    "reported": value,
                    "measured": levels[lv].get(key),
                    "tolerance": 0,
                }
            )
    replayed = replay(bench, PAPER, levels=(1, 2)) if bench.official else None
    for row in ORIGINAL_REPLAY["rows"]:
        lv = str(row["level"])
        measured = None
        if replayed is not None:
            r = replayed["levels"][lv]
            measured = round(100.0 * r["correct"] / r["gold_calls"], 2) if r["gold_calls"] else None
        rows.append(
            {
                "quantity": f"level {lv} gold calls the original evaluator accepts (%)",
                "reported": row["gold_calls_judged_correct"],
                "measured": measured,
                "tolerance": ORIGINAL_REPLAY["tolerance_points"],
            }
        )
    for row in rows:
        if not bench.official:
            row["outcome"] = "not comparable (not the official release)"
        elif row["measured"] is None:
            row["outcome"] = "not measured"
        else:
            row["outcome"] = (
                "agrees" if abs(float(row["measured"]) - float(row["reported"])) <= row["tolerance"] else "differs"
            )
    return pd.DataFrame(rows)


def toolalpaca_table(
    runs: Sequence[ScoredRun] = (),
    *,
    names: Mapping[str, str] | None = None,
    training_samples: Mapping[str, int | None] | None = None,
    common: bool = True,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> pd.DataFrame:
    """The paper's ToolAlpaca comparison layout (Call ability only): reported rows, then the runs measured here.

    Args:
        runs: scored runs (their level-1 samples are used).
        names: a display name per run model (``ScoredRun.model``), e.g. "fine-tuned on ours (300)".
        training_samples: training examples per run model (None: not fine-tuned).
        common: use only the level-1 samples every run answered, so that the rows compare the same samples
            (a run folder may hold more samples than this comparison asked for).
    Columns: model, training samples, Call acc with its 95% interval (dialogue
    bootstrap), Call ROUGE-L (%), API-call samples, source.
    """
    pd = _pandas()
    rows = [
        {
            "model": m,
            "training samples": v["training_samples"],
            "Call acc": v["accuracy"],
            "Call acc low": None,
            "Call acc high": None,
            "Call ROUGE-L (%)": v["rouge_l"],
            "API-call samples": None,
            "dialogues": None,
            "source": "reported",
        }
        for m, v in PAPER_TOOLALPACA.items()
    ]
    shared: set[str] | None = None
    if common and runs:
        shared = set.intersection(*({j.key for j in r.judgments if j.level == 1} for r in runs))
    for r in runs:
        level1 = [j for j in r.judgments if j.level == 1 and (shared is None or j.key in shared)]
        api = [j for j in level1 if j.kind == "api"]
        acc, low, high, dialogues = _accuracy(api, n_boot, seed)
        rouge = _rouge([j for j in level1 if j.kind == "response"], n_boot, seed)[0]
        rows.append(
            {
                "model": (names or {}).get(r.model, r.model),
                "training samples": (training_samples or {}).get(r.model),
                "Call acc": acc,
                "Call acc low": low,
                "Call acc high": high,
                "Call ROUGE-L (%)": None if rouge is None else round(100 * rouge, 2),
                "API-call samples": len(api),
                "dialogues": dialogues,
                "source": f"measured here ({r.model}, {r.protocol}, {r.data})",
            }
        )
    return pd.DataFrame(rows)


def training_data_table(
    runs: Sequence[ScoredRun],
    *,
    names: Mapping[str, str] | None = None,
    training_samples: Mapping[str, int | None] | None = None,
    common: bool = True,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> pd.DataFrame:
    """Models trained on different data, side by side: API-call accuracy per ability and in total, each with its
    95% interval (dialogues resampled) and the samples it is over.

    Args:
        runs: scored runs (their API-call samples are used; level 3's are the teacher-forced steps).
        names: a display name per run model (``ScoredRun.model``), e.g. "model-made, 96".
        training_samples: training examples per run model (None: not fine-tuned).
        common: use only the API-call samples every run answered, so that each column compares the same samples.
    """
    pd = _pandas()
    shared: set[str] | None = None
    if common and runs:
        shared = set.intersection(*({j.key for j in r.judgments if j.kind == "api"} for r in runs))
    rows = []
    for r in runs:
        api = [j for j in r.judgments if j.kind == "api" and (shared is None or j.key in shared)]
        row: dict[str, Any] = {"model": (names or {}).get(r.model, r.model), "training samples": (training_samples or {}).get(r.model)}
        for label, js in [*((ABILITIES[lv], [j for j in api if j.level == lv]) for lv in sorted(ABILITIES)), ("Total", api)]:
            if not js:
                continue
            acc, low, high, dialogues = _accuracy(js, n_boot, seed)
            row.update({f"{label} acc": acc, f"{label} acc low": low, f"{label} acc high": high, f"{label} n": len(js)})
            row[f"{label} dialogues"] = dialogues
        row["source"] = f"measured here ({r.model}, {r.protocol}, {r.data})"
        rows.append(row)
    table = pd.DataFrame(rows)
    counts = [c for c in table.columns if c.endswith((" n", " dialogues"))]
    return table.astype({c: "Int64" for c in counts + ["training samples"] if c in table.columns})


def adapter_training_samples(model: str) -> int | None:
    """Training examples behind a ``...+<adapter>`` run model (from the adapter folder's ``training.json``), else None."""
    from apibank_lib.models.catalog import adapter_folder

    _, plus, adapter = model.partition("+")
    if not plus:
        return None
    info = adapter_folder(adapter).parent / "training.json"
    if not info.is_file():
        return None
    return int(json.loads(info.read_text())["result"]["examples_seen"])


def training_statistics_table(
    report: Any, examples: Sequence[Any] | None = None, *, corpus: str = "our training corpus"
) -> pd.DataFrame:
    """A training corpus (a tester report's accepted dialogues) beside the paper's training statistics.

    Counted with the evaluation's definitions: turns are user utterances (a
    plan's requirement is one), calls exclude ToolSearcher, single-/multi-call
    dialogues count calls other than searches; samples are cut as evaluation
    samples are (duplicates left out).

    Args:
        report: a :class:`~apibank_lib.data.check_train.CheckReport`.
        examples: the training examples, if already made (else they are made here).
        corpus: what the measured column is called.
    """
    from apibank_lib.training.export import examples_from_corpus

    pd = _pandas()
    accepted = report.accepted
    by = {a: sum(1 for d in accepted if d.ability == a) for a in ("call", "retrieve_call", "plan_retrieve_call")}
    turns = sum(1 if d.ability == "plan_retrieve_call" else sum(t.role == "user" for t in d.turns) for d in accepted)
    calls = [sum(1 for t in d.api_turns if t.call and t.call.name != "ToolSearcher") for d in accepted]
    used = report.called
    examples = examples if examples is not None else examples_from_corpus(report)
    p = PAPER_CORPUS["training"]
    rows = [
        ("domains", len({f.domain for f in report.files}), p["domains"]),
        ("APIs (defined / called)", f"{len(report.schemas)} / {len(used)}", p["apis"]),
        ("dialogues", len(accepted), p["dialogues"]),
        ("Call / Retrieve+Call / Plan+Retrieve+Call dialogues", f"{by['call']} / {by['retrieve_call']} / {by['plan_retrieve_call']}",
         f"{p['call_dialogues']} / {p['retrieve_call_dialogues']} / {p['plan_retrieve_call_dialogues']}"),
        ("turns (user utterances)", turns, p["turns"]),
        ("average turns per dialogue", round(turns / len(accepted), 2) if accepted else 0.0, p["avg_turns_per_dialogue"]),
        ("API calls (searches excluded)", sum(calls), None),
        ("single-call dialogues", sum(1 for n in calls if n == 1), p["single_call_instances"]),
        ("multi-call dialogues", sum(1 for n in calls if n > 1), p["multi_call_instances"]),
        ("training samples (API-call / response)", f"{sum(e.task == 'api' for e in examples)} / {sum(e.task == 'response' for e in examples)}", None),
        ("tester rejections", f"{len(report.rejected)} of {report.total}", None),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["quantity", f"measured here ({corpus})", "reported (paper, training)"])


def corpus_vocabulary(schemas: Mapping[str, ToolSchema]) -> tuple[set[str], set[str]]:
    """The API names and input-parameter names a training corpus's APIs use (a tester report's ``schemas``)."""
    names = set(schemas)
    params = {p for s in schemas.values() for p in s.input_parameters}
    return names, params


def seen_in_training(
    run: ScoredRun, bench: Benchmark, schemas: Mapping[str, ToolSchema], *, level: int = 1
) -> pd.DataFrame:
    """Call accuracy split by how much of each gold API the training corpus has seen.

    Each API-call sample at ``level`` (duplicates left out) falls in one group by its gold API: ``name seen`` (the
    corpus has an API of that name), else ``all parameters seen`` / ``some parameters seen`` / ``no parameter
    seen`` by how many of the API's input-parameter names occur among the corpus APIs' parameters (an API without
    parameters counts as all seen). A fine-tuned model that only copies what it was trained on gains on the first
    groups and not on the last.

    Returns:
        One row per group: samples, correct, Call accuracy (%), and the group's distinct APIs.
    """
    pd = _pandas()
    names, params = corpus_vocabulary(schemas)
    toolset = bench.toolset(level)
    rows: dict[str, dict[str, Any]] = {}
    order = ("name seen", "all parameters seen", "some parameters seen", "no parameter seen")
    for j in run.judgments:
        if j.kind != "api" or j.level != level or j.duplicate or j.gold_api is None:
            continue
        if j.gold_api in names:
            group = "name seen"
        else:
            wanted = set(toolset.schema(j.gold_api).input_parameters) if j.gold_api in toolset else set()
            known = len(wanted & params)
            group = "all parameters seen" if known == len(wanted) else ("some parameters seen" if known else "no parameter seen")
        row = rows.setdefault(group, {"samples": 0, "correct": 0, "apis": set()})
        row["samples"] += 1
        row["correct"] += bool(j.correct)
        row["apis"].add(j.gold_api)
    table = [
        {"model": run.model, "group": g, "samples": rows[g]["samples"], "correct": rows[g]["correct"],
         "Call accuracy (%)": round(100 * rows[g]["correct"] / rows[g]["samples"], 2), "APIs": len(rows[g]["apis"])}
        for g in order if g in rows
    ]
    return pd.DataFrame(table, columns=["model", "group", "samples", "correct", "Call accuracy (%)", "APIs"])
