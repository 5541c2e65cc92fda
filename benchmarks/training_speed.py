"""Fine-tuning throughput and peak memory: the TRL engine against our first training loop (`--engine loop`), measured in one run.

Usage: .venv/bin/python benchmarks/training_speed.py [--model M] [--steps N] [--accumulate N] [--threads N]
       [--modes chat=0.7,paper=0.3] [--full]

Every setting trains a LoRA adapter for the same optimiser steps on the same examples (API-call examples of the
bundled training corpus rendered through the model's chat template, in the recipe's seeded order), each in its own
process so that its peak resident memory is its own:

* ``loop``: the first recipe, one example per forward pass, logits at the target positions only;
* ``trl``: TRL's SFTTrainer, whose fused LM head projects the target positions only;
* ``trl, all logits``: the same with the LM head at every position (a plain causal-LM loss), to show what computing
  the target positions only still saves;
* with ``--full``, full fine-tuning under the TRL engine as well.

Printed per setting: training tokens per second, seconds per example, peak memory, and the first step's loss (the
same examples with a zero-initialised adapter: the engines must agree); then the ratios trl / loop and
targets-only / all-logits. Model loading (the GGUF dequantised, or its cached conversion) is timed apart and not
counted.
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
import json, sys
from pathlib import Path
from apibank_lib.models.transformers_backend import load_tokenizer
from apibank_lib.training.chat_examples import template_of
from apibank_lib.training.recipe import TrainConfig, train
from apibank_lib.training.workflow import build_examples
engine, method, lm_head, model, steps, acc, threads, corpus, modes, out = sys.argv[1:11]
steps, acc = int(steps), int(acc)
source = {"format": "corpus", "paths": [corpus], "examples": steps * acc, "mix": "L1/api=0.6,L2/api=0.4", "seed": 0}
template = None
if modes != "-":
    source["modes"] = modes
    template = template_of(load_tokenizer(model))
examples, _ = build_examples(source, template)
config = TrainConfig(out=out, model=model, engine=engine, method=method, lm_head=lm_head, accumulate=acc,
                     threads=int(threads), save_every=10**6, lr=1e-4, max_len=4096)
result = train(config, examples, progress=False)
info = json.loads((Path(out) / "training.json").read_text())
first = next(iter(l for l in (Path(out) / "loss.csv").read_text().splitlines()[1:2]), ",nan").split(",")[1]
print(json.dumps({"result": result.to_dict(), "load_s": info["load_s"], "first_loss": float(first)}))
"""


def measure(engine: str, method: str, lm_head: str, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, engine, method, lm_head, args.model, str(args.steps), str(args.accumulate),
             str(args.threads), args.corpus, args.modes or "-", tmp],
            capture_output=True, text=True, cwd=ROOT,
        )
    if proc.returncode != 0:
        raise SystemExit(f"{engine}/{method}/{lm_head} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--accumulate", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--modes", default="chat=0.7,paper=0.3", help="chat-template renderings ('' for completion examples)")
    ap.add_argument("--corpus", default=str(ROOT / "data" / "train" / "corpus"))
    ap.add_argument("--full", action="store_true", help="also full fine-tuning (TRL engine)")
    args = ap.parse_args()
    settings = [("loop", "lora", "targets"), ("trl", "lora", "targets"), ("trl", "lora", "all")]
    if args.full:
        settings.append(("trl", "full", "targets"))
    rows = {}
    for engine, method, lm_head in settings:
        m = measure(engine, method, lm_head, args)
        r = m["result"]
        name = f"{engine} {method}" + (", all logits" if lm_head == "all" else "")
        rows[name] = {
            "tokens/s": r["tokens"] / r["seconds"],
            "s/example": r["seconds"] / r["examples_seen"],
            "peak MB": r["peak_rss_mb"],
            "load s": m["load_s"],
            "examples": r["examples_seen"],
            "mean tokens": r["tokens"] / r["examples_seen"],
            "first loss": m["first_loss"],
        }
    print(f"{args.model}: {args.steps} optimiser steps x {args.accumulate} examples, {args.threads} threads, examples: {args.modes or 'completion'}")
    print(f"{'setting':<22} {'tokens/s':>9} {'s/example':>9} {'peak MB':>8} {'load s':>6} {'mean tokens':>11} {'first loss':>10}")
    for name, r in rows.items():
        print(f"{name:<22} {r['tokens/s']:>9.1f} {r['s/example']:>9.2f} {r['peak MB']:>8.0f} {r['load s']:>6.1f} {r['mean tokens']:>11.0f} {r['first loss']:>10.4f}")
    loop, trl, every = rows["loop lora"], rows["trl lora"], rows["trl lora, all logits"]
    print(f"ratio trl/loop: throughput {trl['tokens/s'] / loop['tokens/s']:.2f}x, peak memory {trl['peak MB'] / loop['peak MB']:.2f}x")
    print(f"ratio targets-only/all-logits (trl): throughput {trl['tokens/s'] / every['tokens/s']:.2f}x, peak memory {trl['peak MB'] / every['peak MB']:.2f}x")


if __name__ == "__main__":
    main()
