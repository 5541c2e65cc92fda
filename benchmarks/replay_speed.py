"""Gold-call replay speed: our sandbox versus rebuilding everything per sample, measured in one run.

Usage: .venv/bin/python benchmarks/replay_speed.py [--data PATH] [--repeat N]

For every level-1 API-call sample, the v2 protocol builds a fresh sandbox,
replays the dialogue's earlier gold calls (state replay), parses the gold call
text, executes it and applies the checker. The baseline does what the original
evaluator does per sample: read every database file from disk again, deep-copy
it, and build a new tool set, then judge the sample the same way (without state
replay, which only makes the baseline cheaper). Target: under 0.5 ms per gold call.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

from apibank_lib.data.datasets import load_benchmark
from apibank_lib.env.databases import load_databases
from apibank_lib.env.protocols import V2
from apibank_lib.env.sandbox import Sandbox
from apibank_lib.env.tools.base import LEVEL12
from apibank_lib.env.tools.registry import tool_classes
from apibank_lib.env.tools.toolset import ToolSet
from apibank_lib.grading.grader import Grader
from apibank_lib.prompting.prompts import target_text

TARGET_MS = 0.5


class RebuildEverySample(Grader):
    """The original's cost model: databases re-read from disk and a new tool manager for each sample."""

    def sandbox_for(self, sample, notes=None):  # noqa: ANN001, ANN201 - mirrors Grader.sandbox_for
        dbs = load_databases(Path(self.bench.root) / "init_database")
        if (Path(self.bench.root) / "recordings").is_dir():
            dbs.update(load_databases(Path(self.bench.root) / "recordings"))
        dbs = copy.deepcopy(dbs)
        return Sandbox(ToolSet(LEVEL12, tool_classes(LEVEL12)), dbs, conversion=V2.conversion)


def time_samples(grader: Grader, samples: list, repeat: int) -> tuple[float, int]:
    texts = [target_text(s) for s in samples]
    best = float("inf")
    correct = 0
    for _ in range(repeat):
        start = time.perf_counter()
        correct = sum(grader.judge_api(s, t).correct for s, t in zip(samples, texts))
        best = min(best, time.perf_counter() - start)
    return best, correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    bench = load_benchmark(args.data)
    samples = [s for s in bench.samples(1, "api")]
    ours = Grader(bench, V2)
    ours_s, ours_ok = time_samples(ours, samples, args.repeat)
    base = RebuildEverySample(bench, V2)
    base_s, _ = time_samples(base, samples[: max(1, len(samples) // 4)], 1)
    base_per = base_s / max(1, len(samples) // 4)
    replayed = sum(1 for s in samples for t in s.history if t.role == "API")
    per_call_ms = 1000 * ours_s / len(samples)
    print(f"data: {bench.root} ({len(samples)} level-1 API-call samples, {replayed} earlier gold calls replayed for state)")
    print(f"ours (v2, fresh sandbox + state replay + judge): {per_call_ms:.3f} ms per gold call, {ours_ok}/{len(samples)} judged correct")
    print(f"rebuild-every-sample baseline:                   {1000 * base_per:.3f} ms per gold call")
    print(f"speed-up: {base_per / (ours_s / len(samples)):.1f}x")
    print(f"target < {TARGET_MS} ms per call: {'met' if per_call_ms < TARGET_MS else 'NOT met'}")
    l3 = bench.samples(3, "api")
    non_search = [s for s in l3 if s.gold.api_name != "ToolSearcher"]
    if non_search:
        l3_s, _ = time_samples(ours, non_search, args.repeat)
        print(f"level 3, non-search steps (state replay of earlier steps): {1000 * l3_s / len(non_search):.3f} ms per step")


if __name__ == "__main__":
    main()
