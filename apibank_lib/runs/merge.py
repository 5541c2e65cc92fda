"""Join the folders of a sharded run (``apibank run --shard I/N``) into one run folder.

:func:`merge_runs` checks that the folders are the N shards of one run (the same identity, the same plans and
episode settings, each shard once, none missing), that each holds its own samples only (no sample in two
shards) and all of them (a shard that stopped early is named, with what it lacks), and writes one folder whose
``config.json`` is the whole run's and whose predictions are in dataset order. Scoring the merged folder gives
what scoring the same run answered in one piece gives, byte for byte (``judgments.jsonl``, ``metrics.json``): a
test shows it. Where the merge came from is in the merged folder's ``summary.json``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.data.datasets import Benchmark, load_benchmark
from apibank_lib.runs.config import planned_trials, trial_key
from apibank_lib.runs.costs import answering_seconds
from apibank_lib.runs.folder import RunFolder, RunInfo
from apibank_lib.runs.records import PredictionRecord
from apibank_lib.runs.shards import parse_shard, shard_label

__all__ = ["MergeResult", "merge_runs", "default_merged_path"]


@dataclass(frozen=True)
class MergeResult:
    """What :func:`merge_runs` wrote.

    Attributes:
        path: the merged run folder.
        shards: how many shard folders it joined.
        samples: predictions written (samples and episodes).
        failed: of them, answers whose backend call failed (kept, as in any run folder).
    """

    path: Path
    shards: int
    samples: int
    failed: int


def _shard_of_folder(folder: RunFolder, info: RunInfo) -> str:
    """The one shard every command that wrote ``folder`` answered."""
    shards = {p.get("shard") for p in info.plans}
    if None in shards:
        raise ConfigError(f"{folder.path} is not a shard (a command without --shard wrote into it)")
    if len(shards) != 1:
        raise ConfigError(f"{folder.path} holds several shards ({', '.join(sorted(map(str, shards)))}); give one shard per folder")
    return str(shards.pop())


def _without_shard(plans: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in plans:
        q = {k: v for k, v in p.items() if k != "shard"}
        if q not in out:
            out.append(q)
    return out


def default_merged_path(first: str | Path) -> Path:
    """Where the merge of a shard folder named ``<run>-shard-IofN`` goes by default: ``<run>`` beside it."""
    path = Path(first)
    name = path.name
    cut = name.rfind("-shard-")
    return path.parent / (name[:cut] if cut > 0 else f"{name}-merged")


def merge_runs(
    folders: Sequence[str | Path], out: str | Path | None = None, *, bench: Benchmark | None = None
) -> MergeResult:
    """Merge the N shard folders of one run into ``out``.

    Args:
        folders: the shard folders, in any order.
        out: the merged folder (it must not hold a run yet); default :func:`default_merged_path` of the first.
        bench: the run's benchmark, already loaded (default: loaded from the first shard's data path).

    Raises:
        ConfigError: a folder is not a shard; the shards differ in identity, plans or episode settings; a shard
            is given twice or is missing; a sample is in two shards or in the wrong one; a shard is unfinished
            (or has a line it could not read); ``out`` already holds a run.
    """
    if not folders:
        raise ConfigError("give the shard folders to merge")
    runs = [RunFolder(f) for f in folders]
    infos = [r.read_info() for r in runs]
    specs = [_shard_of_folder(r, i) for r, i in zip(runs, infos)]
    counts = {parse_shard(s)[1] for s in specs}
    if len(counts) != 1:
        raise ConfigError(f"the folders split the run in different numbers of shards: {', '.join(specs)}")
    n = counts.pop()
    by_index: dict[int, tuple[RunFolder, RunInfo]] = {}
    for run, info, spec in zip(runs, infos, specs):
        index = parse_shard(spec)[0]
        if index in by_index:
            raise ConfigError(f"shard {spec} is given twice: {by_index[index][0].path} and {run.path}")
        by_index[index] = (run, info)
    missing = [f"{i}/{n}" for i in range(1, n + 1) if i not in by_index]
    if missing:
        raise ConfigError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} missing: merge needs all {n}")

    first, head = runs[0], infos[0]
    plans = _without_shard(head.plans)
    for run, info in zip(runs[1:], infos[1:]):
        for what, mine, theirs in (
            ("identity", head.identity, info.identity),
            ("plans (levels, limit, tasks, level-3 mode)", plans, _without_shard(info.plans)),
            ("episode settings", head.episode_set(), info.episode_set()),
        ):
            if mine != theirs:
                raise ConfigError(
                    f"{run.path} is not a shard of the same run as {first.path}: its {what} differ "
                    f"({json.dumps(theirs, sort_keys=True, default=str)} against {json.dumps(mine, sort_keys=True, default=str)})"
                )

    bench = bench or load_benchmark(head.data)
    if bench.fingerprint != head.identity.get("data_fingerprint"):
        raise ConfigError(f"the benchmark given is not the data {first.path} was run on (its fingerprint differs)")
    whole = replace(head.run_config(), shard=None)
    owner: dict[str, Path] = {}
    records: dict[str, PredictionRecord] = {}
    for run, info, spec in zip(runs, infos, specs):
        expected = {trial_key(x.key, t) for x, t in planned_trials(bench, replace(whole, shard=spec), info.plans)}
        predictions = run.read_predictions()
        if predictions.dropped:
            raise ConfigError(f"{run.path} (shard {spec}) has lines that could not be read: {predictions.dropped[0]}")
        for key, rec in predictions.records.items():
            if key in owner:
                raise ConfigError(f"{key} is in two shards: {owner[key]} and {run.path}")
            if key not in expected:
                raise ConfigError(f"{run.path} holds {key}, which is not in shard {spec}")
            owner[key] = run.path
            records[key] = rec
        lacking = expected - set(predictions.records)
        if lacking:
            raise ConfigError(
                f"shard {spec} ({run.path}) is not finished: {len(lacking)} of {len(expected)} samples missing "
                f"(the first: {sorted(lacking)[0]}); run its command again, it resumes"
            )

    target = RunFolder(out if out is not None else default_merged_path(first.path))
    if target.exists() or target.predictions_path.exists():
        raise ConfigError(f"{target.path} already holds a run; give another --out")
    merged_config = {**head.config, "shard": None}
    target.write_info(replace(head, config=merged_config, plans=plans))
    order = [trial_key(x.key, t) for x, t in planned_trials(bench, whole, plans)]
    with target.prediction_writer() as writer:
        for key in order:
            writer.write(records[key])
    failed = sum(1 for r in records.values() if r.failed)
    times = [answering_seconds(r) for r in runs]
    target.write_summary(
        {
            "model": head.model,
            "protocol": head.protocol,
            "samples_in_folder": len(order),
            "failed_in_folder": failed,
            # Machine time: the shards' answering times added up (None where a shard's is not known).
            "answering_s": None if None in times else round(sum(t for t in times if t is not None), 3),
            "merged_from": [
                {
                    "shard": f"{i}/{n}",
                    "folder": str(by_index[i][0].path),
                    "samples": sum(1 for p in owner.values() if p == by_index[i][0].path),
                    "code_version": by_index[i][1].code_version,
                }
                for i in range(1, n + 1)
            ],
        }
    )
    for run, spec in zip(runs, specs):
        for w in run.read_warnings():
            target.add_warning(w.get("kind", "warning"), f"{shard_label(spec)}: {w.get('message', '')}")
    return MergeResult(target.path, n, len(order), failed)
