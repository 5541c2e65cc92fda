"""Breakdowns, paired comparisons between two runs on their common samples, and the trials table (pass^k)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.stats import N_BOOT, SEED, bootstrap_mean, bounds, paired_comparison
from apibank_lib.data.datasets import Benchmark, load_benchmark
from apibank_lib.env.tools.base import LEVEL3, LEVEL12
from apibank_lib.env.tools.registry import domains
from apibank_lib.report.cells import accuracy_cell, dialogue_cluster, pandas_module
from apibank_lib.report.loading import by_model
from apibank_lib.runs.records import JudgmentRecord
from apibank_lib.runs.scoring import ScoredRun
from apibank_lib.runs.trials import measures, sample_trials, trial_groups

if TYPE_CHECKING:
    import pandas as pd


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
    pd = pandas_module()
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
            group = "single-call" if calls.get(dialogue_cluster(j), 0) == 1 else "multi-call"
        groups[(j.level, group)].append(j)
    rows = []
    for (level, group), js in sorted(groups.items()):
        acc, low, high, dialogues = accuracy_cell(js, n_boot, seed)
        rows.append(
            {"level": level, by: group, "samples": len(js), "dialogues": dialogues, "acc": acc, "acc low": low, "acc high": high}
        )
    return pd.DataFrame(rows)


def paired_tables(
    runs: Sequence[ScoredRun], pairs: Sequence[Sequence[str]], *, n_boot: int = N_BOOT, seed: int = SEED
) -> pd.DataFrame:
    """:func:`paired_table` for each ``(model A, model B)`` pair, in one DataFrame with the models named."""
    pd = pandas_module()
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
    pd = pandas_module()
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
            cmp = paired_comparison(va, vb, [dialogue_cluster(j) for j, _, _ in pairs], n_boot=n_boot, n_perm=n_boot, seed=seed)
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
    pd = pandas_module()
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
    pd = pandas_module()
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
