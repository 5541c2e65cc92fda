"""Figures for the notebooks: each function draws one DataFrame of :mod:`apibank_lib.report.analysis` and saves a PNG.

Every figure has labelled axes and a title that says what was measured (and
what was reported, where the paper's figures are drawn beside ours), and is
written to :func:`apibank_lib.core.paths.figures_dir` as ``<name>.png``. The
functions return the matplotlib Figure, which a notebook displays.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from apibank_lib.core.paths import figures_dir
from apibank_lib.report.failures import FUNNEL_STAGES
from apibank_lib.report.main_table import ABILITIES, ITEMS_COLUMN, count_column

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "accuracy_figure",
    "rouge_figure",
    "errors_figure",
    "funnel_figure",
    "breakdown_figure",
    "pass_k_figure",
    "calls_figure",
    "domains_figure",
    "toolalpaca_figure",
    "training_loss_figure",
    "retrieval_figure",
    "retriever_accuracy_figure",
    "transfer_figure",
    "save",
]

_DPI = 110


def _plt() -> Any:
    import matplotlib

    if not _interactive():
        matplotlib.use("Agg")  # outside a notebook there is no screen: draw to files only
    import matplotlib.pyplot as plt

    return plt


def _interactive() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def save(fig: Any, name: str, directory: str | Path | None = None) -> Path:
    """Save a figure as ``<name>.png`` under the figures folder; returns the path."""
    folder = Path(directory) if directory is not None else figures_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    fig.savefig(path, dpi=_DPI, bbox_inches="tight", metadata={"Software": None})
    return path


def _count(n: Any) -> str:
    """A sample count for a label ("-" where the table has none)."""
    import pandas as pd

    return "-" if n is None or pd.isna(n) else str(int(n))


def accuracy_figure(main: Any, *, name: str = "main_accuracy", directory: str | Path | None = None) -> Figure:
    """API-call accuracy per ability: measured runs as bars with 95% intervals, the paper's models as markers, each
    over the column that measures what it measured (the paper's level-3 figures over item accuracy, never over
    steps or episodes; :data:`apibank_lib.report.main_table.REPORTED_COLUMNS`)."""
    plt = _plt()
    measured = main[main["source"] == "measured here"].reset_index(drop=True)
    reported = main[main["source"] == "reported"].reset_index(drop=True)
    columns = [f"{a} acc" for a in ABILITIES.values()] + [ITEMS_COLUMN, "Total acc"]
    labels = [*list(ABILITIES.values())[:2], "Plan+Retrieve+Call\nsteps", "Plan+Retrieve+Call\nitems", "Total\n(API calls)"]
    fig, ax = plt.subplots(figsize=(10, 4.2))
    width = 0.8 / max(1, len(measured))
    for i, row in measured.iterrows():
        xs = [k + (i - (len(measured) - 1) / 2) * width for k in range(len(columns))]
        values = row.reindex(columns).astype(float).fillna(0.0).to_numpy()
        lows = row.reindex([f"{c} low" for c in columns]).astype(float).to_numpy()
        highs = row.reindex([f"{c} high" for c in columns]).astype(float).to_numpy()
        # No bar for a level the run has no samples of; no whisker where the interval is blank (too few dialogues).
        err = [(values - lows).clip(min=0), (highs - values).clip(min=0)]
        err = [[0.0 if e != e else e for e in side] for side in err]
        counts = "/".join(_count(row.get(count_column(c))) for c in columns)
        ax.bar(xs, values, width=width * 0.95, yerr=err, capsize=2, label=f"{row['model']} (measured; n={counts})")
    markers = "ov^sDP*X"
    for i, row in reported.iterrows():
        ax.scatter(
            range(len(columns)),
            [row.get(c) for c in columns],  # blank where the paper reported nothing of that kind (steps)
            marker=markers[i % len(markers)],
            color="black",
            s=18,
            zorder=3,
            label=f"{row['model']} (reported)",
        )
    ax.set_xticks(range(len(columns)), labels)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    data = ", ".join(dict.fromkeys(str(d) for d in measured.get("data", []))) or "the data"
    markers_said = "; markers: reported by the paper on the whole release" if len(reported) else ""
    ax.set_title(f"Accuracy by ability on {data} (bars: measured, 95% CI{markers_said})", fontsize=9)
    ax.text(
        0.0, -0.18, "n: API-call samples per ability (items for the items column) and in total; "
        "items: every teacher-forced step of an item right, the paper's level-3 metric",
        transform=ax.transAxes, fontsize=7,
    )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save(fig, name, directory)
    return fig


def rouge_figure(compare: Any, *, name: str = "rouge_by_package", directory: str | Path | None = None) -> Figure:
    """ROUGE-L of replies per level by each package (``rouge``, ``rouge-score``), one group per run."""
    plt = _plt()
    cols = [c for c in compare.columns if "ROUGE-L (" in c]
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / max(1, len(cols))
    for k, col in enumerate(cols):
        xs = [i + (k - (len(cols) - 1) / 2) * width for i in range(len(compare))]
        ax.bar(xs, compare[col].fillna(0), width=width * 0.95, label=col)
    ax.set_xticks(range(len(compare)), compare["model"], rotation=15, ha="right")
    ax.set_ylabel("mean ROUGE-L of replies")
    ax.set_ylim(0, 1.05)
    ax.set_title("Reply ROUGE-L per level and package (measured here)")
    ax.legend(fontsize=7, ncol=3)
    save(fig, name, directory)
    return fig


def errors_figure(
    distribution: Any, *, name: str = "error_distribution", directory: str | Path | None = None
) -> Figure:
    """Each model's errors by category (the paper's seven), as stacked horizontal bars; reported columns included."""
    plt = _plt()
    shares = distribution[~distribution["category"].isin(["errors counted", "not the model's"])].set_index("category")
    shares = shares.fillna(0.0)
    shares = shares.loc[:, shares.sum(axis=0) > 0]  # a run without errors has nothing to show
    counted = distribution.set_index("category").loc["errors counted"] if "errors counted" in set(distribution["category"]) else None

    def label(column: str) -> str:  # how many wrong calls each bar is made of (none is given for reported columns)
        n = None if counted is None else counted.get(column)
        return column if n is None or n != n else f"{column} (n={int(n)})"

    bars = [label(c) for c in shares.columns]
    fig, ax = plt.subplots(figsize=(9, 0.55 * max(3, len(shares.columns)) + 1.2))
    left = [0.0] * len(shares.columns)
    for category, row in shares.iterrows():
        ax.barh(bars, row.values, left=left, label=category)
        left = [a + b for a, b in zip(left, row.values)]
    ax.set_xlabel("share of the model's wrong API calls (%)")
    ax.set_xlim(0, 100)
    ax.invert_yaxis()
    ax.set_title("Error categories (measured here, and reported by the paper)")
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    save(fig, name, directory)
    return fig


def funnel_figure(funnel: Any, *, title: str = "", name: str = "funnel", directory: str | Path | None = None) -> Figure:
    """The step funnel: the share of gold calls reaching each stage, one line per level."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 4))
    for level, part in funnel.groupby("level"):
        n = _count(part["samples"].iloc[0]) if "samples" in part else "-"  # the first stage counts every gold call
        ax.plot(range(len(part)), part["share (%)"], marker="o", label=f"level {level} ({ABILITIES[int(level)]}, n={n})")
    ax.set_xticks(range(len(FUNNEL_STAGES)), FUNNEL_STAGES, rotation=25, ha="right")
    return _lines_done(fig, ax, "gold calls reaching the stage (%)", f"Step funnel{': ' + title if title else ''}", name, directory)


def _lines_done(fig: Figure, ax: Any, ylabel: str, title: str, name: str, directory: str | Path | None) -> Figure:
    """A line figure of shares finished: the axis from 0 to 105%, its label, the title (measured here), the
    legend; saved."""
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 105)
    ax.set_title(f"{title} (measured here)")
    ax.legend(fontsize=8)
    save(fig, name, directory)
    return fig


def pass_k_figure(table: Any, *, title: str = "", name: str = "pass_k", directory: str | Path | None = None) -> Figure:
    """pass^k and pass@k against k, with 95% intervals, one pair of lines per level (an
    :func:`apibank_lib.report.comparisons.trials_table`)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    shown = table[table["measure"].isin(["pass^k", "pass@k"])]
    if len(set(shown["level"]) - {"all"}) == 1:  # one level: "all" would draw the same lines again
        shown = shown[shown["level"] != "all"]
    for (level, measure), part in shown.groupby(["level", "measure"], sort=False):
        # No whisker where the interval is blank (fewer than 10 dialogues).
        value, low, high = (part[c].astype(float) for c in ("value (%)", "low", "high"))
        err = [(value - low).fillna(0), (high - value).fillna(0)]
        style = "-" if measure == "pass^k" else ":"
        ax.errorbar(part["k"], part["value (%)"], yerr=err, capsize=3, marker="o", linestyle=style,
                    label=f"{'all levels' if level == 'all' else f'level {level}'}: {measure} (n={_count(part['samples'].iloc[0])})")
    ks = sorted(set(table["k"]))
    ax.set_xticks(ks)
    ax.set_xlabel("k (trials drawn)")
    heading = f"pass^k (all k right) and pass@k (one right){': ' + title if title else ''}"
    return _lines_done(fig, ax, "samples (%), 95% CI", heading, name, directory)


def breakdown_figure(
    breakdown: Any, by: str, *, title: str = "", name: str = "accuracy_by_domain", directory: str | Path | None = None
) -> Figure:
    """Accuracy per group (domain, API, call count) and level, with 95% intervals."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(breakdown) + 1.2))
    counts = breakdown["samples"] if "samples" in breakdown else [None] * len(breakdown)
    labels = [f"L{lv} {g} (n={_count(n)})" for lv, g, n in zip(breakdown["level"], breakdown[by], counts)]
    acc = breakdown["acc"].astype(float)
    err = [(acc - breakdown["acc low"].astype(float)).fillna(0), (breakdown["acc high"].astype(float) - acc).fillna(0)]
    ax.barh(labels, acc.fillna(0), xerr=err, capsize=2, color="tab:blue")
    # 0% is a bar of no length; a group with no API-call sample says so, so that the two never look alike.
    for i, value in enumerate(acc):
        if value != value:
            ax.text(1, i, "no API-call sample", va="center", fontsize=7, color="grey")
        elif value == 0:
            ax.text(1, i, "0%", va="center", fontsize=7)
    ax.set_xlabel("API-call accuracy (%), 95% CI")
    ax.set_xlim(0, 105)
    ax.invert_yaxis()
    ax.set_title(f"Accuracy by {by}{': ' + title if title else ''} (measured here)")
    save(fig, name, directory)
    return fig


def calls_figure(
    stats: dict[str, Any], *, name: str = "calls_per_dialogue", directory: str | Path | None = None
) -> Figure:
    """How many gold API calls each dialogue (level-3 item) has, per level."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 3.8))
    for level, values in stats["levels"].items():
        hist = {int(k): v for k, v in values["calls_per_dialogue"].items()}
        ax.plot(
            sorted(hist), [hist[k] for k in sorted(hist)], marker="o", label=f"level {level} ({ABILITIES[int(level)]})"
        )
    ax.set_xlabel("gold API calls in the dialogue")
    ax.set_ylabel("dialogues")
    ax.set_title("Gold API calls per dialogue (measured on the data)")
    ax.legend(fontsize=8)
    save(fig, name, directory)
    return fig


def domains_figure(table: Any, *, name: str = "calls_by_domain", directory: str | Path | None = None) -> Figure:
    """Gold API calls per domain, stacked by level (from :func:`apibank_lib.report.data_tables.calls_by_domain`)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 3.8))
    bottom = [0] * len(table)
    for col in [c for c in table.columns if c.endswith("gold calls")]:
        ax.bar(table["domain"], table[col], bottom=bottom, label=col.replace(" gold calls", ""))
        bottom = [a + b for a, b in zip(bottom, table[col])]
    ax.set_ylabel("gold API calls")
    ax.set_xlabel("domain")
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")  # long domain names overlapped when centred
    fig.tight_layout()
    ax.set_title("Gold API calls per domain and level (measured on the data)")
    ax.legend(fontsize=8)
    save(fig, name, directory)
    return fig


def toolalpaca_figure(
    table: Any, *, name: str = "toolalpaca_comparison", directory: str | Path | None = None
) -> Figure:
    """Call accuracy per model (measured here with 95% intervals; the paper's rows hatched as reported)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(table) + 1.2))
    reported = table["source"] == "reported"

    def count(n: Any) -> int | None:
        return None if n is None or n != n else int(n)  # NaN (a blank cell) is not equal to itself

    labels = []
    for m, trained, measured, r in zip(table["model"], table["training samples"], table["API-call samples"], reported):
        t = count(trained)
        parts = ["not fine-tuned" if t is None else f"trained on {t:,}"]
        if not r:
            parts.append(f"n={count(measured)} API-call samples")
        labels.append(f"{m} ({'; '.join(parts)})")
    low = (table["Call acc"].astype(float) - table["Call acc low"].astype(float)).fillna(0)
    high = (table["Call acc high"].astype(float) - table["Call acc"].astype(float)).fillna(0)
    colors = ["lightgray" if r else "tab:blue" for r in reported]
    bars = ax.barh(labels, table["Call acc"].fillna(0), xerr=[low, high], capsize=2, color=colors)
    for bar, r in zip(bars, reported):
        if r:
            bar.set_hatch("//")
    ax.set_xlabel("Call accuracy (%), 95% CI where measured here")
    ax.set_xlim(0, 100)
    ax.invert_yaxis()
    ax.set_title("Fine-tuning data compared on the Call ability (gray: reported by the paper, 7B models)")
    save(fig, name, directory)
    return fig


def training_loss_figure(
    curves: dict[str, Any], *, name: str = "training_loss", directory: str | Path | None = None
) -> Figure:
    """Training loss per optimiser step, one line per run (``{label: DataFrame with step, loss}``), smoothed over 10 steps."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 3.8))
    for label, curve in curves.items():
        ax.plot(curve["step"], curve["loss"].rolling(10, min_periods=1).mean(), label=label)
    ax.set_xlabel("optimiser step")
    ax.set_ylabel("loss on target tokens (10-step mean)")
    ax.set_title("Fine-tuning loss (measured here)")
    ax.legend(fontsize=8)
    save(fig, name, directory)
    return fig


def retrieval_figure(
    table: Any, *, by: str = "split", metric: str = "hit@1", name: str = "retrieval", directory: str | Path | None = None
) -> Figure:
    """A retrieval metric per retriever (bars with 95% intervals), one group per value of ``by``.

    ``table`` is :func:`apibank_lib.report.retrieval.retrieval_table`'s (``hit@1`` or ``MRR`` with low/high columns).
    """
    plt = _plt()
    retrievers = list(dict.fromkeys(table["retriever"]))
    groups = list(dict.fromkeys(table[by]))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(retrievers) * len(groups) / 2 + 3), 3.8))
    width = 0.8 / max(1, len(groups))
    for g, group in enumerate(groups):
        part = table[table[by] == group].set_index("retriever").reindex(retrievers)
        xs = [i + (g - (len(groups) - 1) / 2) * width for i in range(len(retrievers))]
        values = part[metric].astype(float)
        lows, highs = part[f"{metric} low"].astype(float), part[f"{metric} high"].astype(float)  # NaN: no interval
        err = [(values - lows).clip(lower=0).fillna(0), (highs - values).clip(lower=0).fillna(0)]
        n = _count(part["queries"].max()) if "queries" in part else "-"  # every retriever answers the same queries
        ax.bar(xs, values.fillna(0), width=width * 0.95, yerr=err, capsize=2, label=f"{by}: {group} (n={n})")
    ax.set_xticks(range(len(retrievers)), retrievers)
    ax.set_ylabel(f"{metric} (%)" if metric != "MRR" else "mean reciprocal rank")
    ax.set_ylim(0, 105 if metric != "MRR" else 1.05)
    ax.set_title(f"ToolSearcher retrieval by {by}, {metric} per retriever (measured here, 95% CI over distinct queries)")
    # Below the axes: inside, the legend covered the bars of the last retrievers.
    ax.legend(fontsize=8, ncol=min(len(groups), 5), loc="upper center", bbox_to_anchor=(0.5, -0.12))
    save(fig, name, directory)
    return fig


def retriever_accuracy_figure(
    table: Any, *, name: str = "accuracy_by_retriever", directory: str | Path | None = None
) -> Figure:
    """API-call accuracy per model and level, one bar per retriever, from :func:`apibank_lib.report.retrieval.accuracy_by_retriever`."""
    plt = _plt()
    # every retriever grades the same samples of a model and level, so one count per panel
    table = table.assign(
        panel=[f"{m}, level {lv} (n={_count(n)})" for m, lv, n in zip(table["model"], table["level"], table["API-call samples"])]
    )
    panels = list(dict.fromkeys(table["panel"]))
    retrievers = list(dict.fromkeys(table["retriever"]))
    fig, ax = plt.subplots(figsize=(max(7.0, 1.2 * len(panels) + 3), 4.0))
    width = 0.8 / max(1, len(retrievers))
    for r, retriever in enumerate(retrievers):
        part = table[table["retriever"] == retriever].set_index("panel").reindex(panels)
        xs = [i + (r - (len(retrievers) - 1) / 2) * width for i in range(len(panels))]
        values = part["accuracy"].astype(float)
        lows, highs = part["accuracy low"].astype(float), part["accuracy high"].astype(float)  # NaN: no interval
        err = [(values - lows).clip(lower=0).fillna(0), (highs - values).clip(lower=0).fillna(0)]
        ax.bar(xs, values.fillna(0), width=width * 0.95, yerr=err, capsize=2, label=retriever)
    ax.set_xticks(range(len(panels)), panels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("API-call accuracy (%), teacher-forced")
    ax.set_ylim(0, 105)
    ax.set_title("Levels 2 and 3 graded with each retriever (measured here, 95% CI over dialogues)")
    ax.legend(fontsize=8, title="retriever", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save(fig, name, directory)
    return fig


def transfer_figure(
    table: Any, sources: list[str], *, name: str = "transfer", directory: str | Path | None = None
) -> Figure:
    """Each model's API-call accuracy per level on each data source (a :func:`apibank_lib.report.transfer.transfer_table`),
    with 95% intervals: one panel per level, one bar per model and source."""
    plt = _plt()
    levels = sorted(int(v) for v in table["level"].unique()) if len(table) else []
    fig, axes = plt.subplots(1, max(1, len(levels)), figsize=(4.2 * max(1, len(levels)), 4.2), squeeze=False)
    for ax, level in zip(axes[0], levels):
        part = table[table["level"] == level].reset_index(drop=True)
        width = 0.8 / max(1, len(sources))
        for k, source in enumerate(sources):
            values = part[f"{source} acc"].astype(float)
            bounds = part[f"{source} interval"].fillna("").str.strip("[]").str.split(", ")
            lows = [float(b[0]) if len(b) == 2 else float("nan") for b in bounds]
            highs = [float(b[1]) if len(b) == 2 else float("nan") for b in bounds]
            err = [
                [max(0.0, v - lo) if v == v and lo == lo else 0.0 for v, lo in zip(values, lows)],
                [max(0.0, hi - v) if v == v and hi == hi else 0.0 for v, hi in zip(values, highs)],
            ]
            xs = [i + (k - (len(sources) - 1) / 2) * width for i in range(len(part))]
            ax.barh(xs, values.fillna(0.0), height=width * 0.95, xerr=err, capsize=2, label=source)
        ax.set_yticks(range(len(part)), [str(m) for m in part["model"]], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, 105)
        ax.set_xlabel("API-call accuracy (%)")
        ax.set_title(f"Level {level}: {ABILITIES[level]}", fontsize=9)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle("The same models on each data source (95% CI, dialogues resampled)", fontsize=10)
    fig.tight_layout()
    save(fig, name, directory)
    return fig
