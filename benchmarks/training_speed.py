"""Fine-tuning throughput and peak memory on this machine: LoRA against full fine-tuning, measured in one run.

Usage: .venv/bin/python benchmarks/training_speed.py [--steps N] [--accumulate N] [--threads N] [--corpus PATH]

Each method trains for the same few optimiser steps on the same examples (the
first API-call examples of the bundled training corpus, in the recipe's seeded
order), in its own process so that its peak resident memory is its own. It
prints examples per second, training tokens per second, seconds per example
and peak memory for both, and the ratio LoRA / full. Model loading (the GGUF
dequantised, or its cached conversion) is timed apart and not counted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
from apibank_lib.synthesis.tester import check_corpus
from apibank_lib.training.export import examples_from_corpus, select
from apibank_lib.training.recipe import TrainConfig, train
method, steps, acc, threads, corpus, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
examples = select([e for e in examples_from_corpus(check_corpus(corpus)) if e.task == "api"], steps * acc)
result = train(TrainConfig(out=out, method=method, accumulate=acc, threads=threads, save_every=10**6, lr=1e-4), examples, progress=False)
info = json.loads((__import__("pathlib").Path(out) / "training.json").read_text())
print(json.dumps({"method": method, "result": result.to_dict(), "load_s": info["load_s"]}))
"""


def measure(method: str, steps: int, accumulate: int, threads: int, corpus: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, method, str(steps), str(accumulate), str(threads), corpus, tmp],
            capture_output=True, text=True, cwd=ROOT, check=True,
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--accumulate", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--corpus", default=str(ROOT / "data" / "train" / "corpus"))
    args = ap.parse_args()
    rows = {}
    for method in ("lora", "full"):
        m = measure(method, args.steps, args.accumulate, args.threads, args.corpus)
        r = m["result"]
        rows[method] = {
            "examples/s": r["examples_seen"] / r["seconds"],
            "tokens/s": r["tokens"] / r["seconds"],
            "s/example": r["seconds"] / r["examples_seen"],
            "peak MB": r["peak_rss_mb"],
            "load s": m["load_s"],
            "examples": r["examples_seen"],
            "mean tokens": r["tokens"] / r["examples_seen"],
        }
    print(f"{args.steps} optimiser steps x {args.accumulate} examples, {args.threads} threads")
    print(f"{'method':<6} {'examples/s':>10} {'tokens/s':>9} {'s/example':>9} {'peak MB':>8} {'load s':>6} {'mean tokens':>11}")
    for method, r in rows.items():
        print(f"{method:<6} {r['examples/s']:>10.3f} {r['tokens/s']:>9.1f} {r['s/example']:>9.2f} {r['peak MB']:>8.0f} {r['load s']:>6.1f} {r['mean tokens']:>11.0f}")
    lora, full = rows["lora"], rows["full"]
    print(f"ratio LoRA/full: throughput {lora['tokens/s'] / full['tokens/s']:.2f}x, peak memory {lora['peak MB'] / full['peak MB']:.2f}x")


if __name__ == "__main__":
    main()
