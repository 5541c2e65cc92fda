"""A run folder from answers given elsewhere (an inspect_ai log, MCP sessions): the runner plays them back.

:func:`run_recorded` plans the samples and episodes an answers file names (:mod:`apibank_lib.models.recorded`), has
the runner answer them with :class:`~apibank_lib.models.recorded.RecordedBackend` in chat mode, and scores the
folder, so the judgments are the grader's, the same as for a model run here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.data.datasets import Benchmark, load_benchmark
from apibank_lib.env.protocols import V2
from apibank_lib.models.recorded import RecordedBackend
from apibank_lib.runs.config import RunConfig, plan
from apibank_lib.runs.runner import RunResult, run
from apibank_lib.runs.scoring import score_run

__all__ = ["recorded_config", "run_recorded"]


def _level_and_kind(key: str) -> tuple[int, str]:
    head, kind, *_ = key.split("/") + ["", ""]
    if not (len(head) == 2 and head[0] == "L" and head[1] in "123") or kind not in ("api", "response", "episode"):
        raise ConfigError(f"answer key {key!r}: expected L<level>/<api|response|episode>/...")
    return int(head[1]), kind


def recorded_config(backend: RecordedBackend, *, protocol: str = V2.name, data: str | None = None, out: str | None = None,
                    runs_dir: str | None = None, retriever: str | None = None) -> RunConfig:
    """The run settings that plan every sample and episode an answers file names (and, with ``only``, no other)."""
    found = [_level_and_kind(k) for k in backend.answers]
    if not found:
        raise ConfigError(f"answers file {backend.path} holds no answer")
    levels = tuple(sorted({lv for lv, _ in found}))
    tasks = tuple(t for t in ("api", "response") if any(k == t for _, k in found)) or ("api",)
    episodes = any(k == "episode" for _, k in found)
    steps_at_3 = any(lv == 3 and k != "episode" for lv, k in found)
    level3 = "both" if episodes and steps_at_3 else "loop" if episodes else "steps"
    longest = max((len(a.get("steps") or []) for a in backend.answers.values() if isinstance(a, dict)), default=0)
    return RunConfig(
        model=f"recorded:{backend.path}", levels=levels, protocol=protocol, data=data, tasks=tasks, level3=level3,
        # An episode is played back whole: as many steps as the recorded agent took (12, `apibank run`'s default, at least).
        max_steps=max(12, longest), prompt_mode="chat", out=out, runs_dir=runs_dir, retriever=retriever,
    )


def run_recorded(
    answers: str | Path,
    *,
    bench: Benchmark | None = None,
    data: str | None = None,
    protocol: str = V2.name,
    out: str | None = None,
    runs_dir: str | None = None,
    retriever: str | None = None,
) -> tuple[RunResult, Any]:
    """Write and score the run folder of an answers file.

    Args:
        answers: the answers file.
        bench: the benchmark the answers are about (else loaded from ``data``).
        data: its root (None: the bundled benchmark).
        protocol: the grading protocol.
        out, runs_dir: where the folder goes (default: ``<runs dir>/recorded-<model>-...``, as any run).
        retriever: what ToolSearcher searched with (episodes are played back with it).

    Returns:
        The runner's result and the folder's :class:`~apibank_lib.runs.records.Metrics`.

    Raises:
        ConfigError: an answers file that cannot be read, or keys that name no sample of the data (listed).
    """
    bench = bench or load_benchmark(data)
    backend = RecordedBackend(str(answers))
    config = recorded_config(backend, protocol=protocol, data=data, out=out, runs_dir=runs_dir, retriever=retriever)
    planned = {x.key for x in plan(bench, config)}
    unknown = sorted(set(backend.answers) - planned)
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise ConfigError(f"{answers}: {len(unknown)} answer(s) name no sample of the {bench.name} data: {shown}")
    result = run(config, backend=backend, bench=bench, progress=False, only=set(backend.answers))
    return result, score_run(result.path, bench=bench)
