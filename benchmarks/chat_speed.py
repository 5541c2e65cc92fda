"""Speed of the embedded models, with and without KV-cache prefix reuse, measured in one run.

Usage: .venv/bin/python benchmarks/chat_speed.py [--samples N] [--models NAME ...] [--threads T]

For each embedded model (Gemma 3 270M base in completion mode; the packaged Qwen2.5-Coder instruct models in chat
mode, where installed) the first N level-1 samples (API calls and replies, in dialogue order, as the runner sends
them) are answered twice by the same loaded model: once evaluating every prompt from scratch, once reusing the KV
cache of the previous prompt's common prefix. Printed per model and setting: seconds per sample, prompt tokens per
sample, prompt tokens per second (prompt tokens over wall time), and the speed-up of reuse; and how many answers
are the same text both ways (greedy decoding; llama.cpp's batched evaluation of a shorter suffix may round
differently).
"""

from __future__ import annotations

import argparse
import time

from apibank_lib.data.datasets import load_benchmark
from apibank_lib.models.base import Request
from apibank_lib.models.llamacpp import LlamaCppBackend
from apibank_lib.models.packaged import model_status
from apibank_lib.prompting.chat import build_chat
from apibank_lib.prompting.prompts import build_prompt
from apibank_lib.runs.runner import STOPS


def _answer_all(backend: LlamaCppBackend, requests: list[Request], reuse: bool) -> tuple[float, int, list[str]]:
    backend.prefix_reuse = reuse
    backend.llm.reset()
    texts, tokens = [], 0
    start = time.perf_counter()
    for req in requests:
        comp = backend.complete(req)
        texts.append(comp.text)
        tokens += comp.prompt_tokens or 0
    return time.perf_counter() - start, tokens, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--models", nargs="+", default=None, help="default: Gemma and every installed packaged model")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    models = args.models or ["gemma-3-270m"] + [m["name"] for m in model_status() if m["installed"]]
    bench = load_benchmark()
    samples = bench.samples(1)[: args.samples]
    toolset = bench.toolset(1)
    print(f"{len(samples)} level-1 samples ({sum(s.kind == 'api' for s in samples)} API calls), dialogue order")
    print(f"{'model':<22} {'mode':<11} {'reuse':<6} {'s/sample':>9} {'prompt tok':>11} {'prompt tok/s':>13}")
    for name in models:
        backend = LlamaCppBackend(name, threads=args.threads)
        mode = backend.default_prompt_mode()
        requests = []
        for s in samples:
            ctx = s.context()
            chat = build_chat(ctx, toolset) if mode == "chat" else None
            requests.append(Request(build_prompt(ctx, toolset), ctx, s, 128, STOPS[s.kind], mode, chat))
        results = {}
        for reuse in (False, True):
            wall, tokens, texts = _answer_all(backend, requests, reuse)
            results[reuse] = (wall, texts)
            n = len(requests)
            print(f"{name:<22} {mode:<11} {'yes' if reuse else 'no':<6} {wall / n:>9.2f} {tokens / n:>11.0f} {tokens / wall:>13.0f}")
        same = sum(a == b for a, b in zip(results[False][1], results[True][1]))
        print(f"{'':<22} reuse speed-up {results[False][0] / results[True][0]:.2f}x; same answers {same}/{len(requests)}")
        del backend


if __name__ == "__main__":
    main()
