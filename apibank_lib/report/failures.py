"""Where models fail: the error taxonomy's counts and distribution, failure examples, and the step funnel."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import ApiCallSample, ResponseSample
from apibank_lib.data.datasets import Benchmark, load_benchmark
from apibank_lib.data.reported import (
    PAPER_ERROR_DISTRIBUTION,
)
from apibank_lib.grading.taxonomy import NOT_THE_MODELS, PAPER_LABEL, ErrorCategory
from apibank_lib.report.cells import pandas_module
from apibank_lib.report.main_table import ABILITIES
from apibank_lib.runs.scoring import ScoredRun

if TYPE_CHECKING:
    import pandas as pd


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
    pd = pandas_module()
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
    pd = pandas_module()
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
    pd = pandas_module()
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
    pd = pandas_module()
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
