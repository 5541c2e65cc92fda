"""Scored runs for the tables: loaded (scored on first read), chosen by label, and cut to shared samples."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from apibank_lib.core.errors import ConfigError
from apibank_lib.data.datasets import Benchmark
from apibank_lib.runs.config import default_runs_dir
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.records import JudgmentRecord
from apibank_lib.runs.scoring import ScoredRun, scored


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
