"""Warm retrieval latency of every retriever against the paper's recipe, measured in one run.

Usage: .venv/bin/python benchmarks/retrieval_latency.py [--queries N] [--level 2]

Each retriever is built once over the level's searchable APIs (cold time
printed apart: the embedding model is loaded before the first one), then
answers the same queries (our query variants and the gold queries of the bundled
benchmark), every one new to it: its query caches are emptied before each
search, so every search embeds its keywords. Prints the median and 90th
percentile per query and the ratio of each retriever's median to the paper
recipe's. Target: under 5 ms per query for every retriever.

The embedding model runs in the engine the library picks by default (ONNX
Runtime when installed; ``APIBANK_EMBEDDER=numpy`` for the numpy one); the
paper's recipe is also timed with the numpy engine, for comparison.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from apibank_lib.datasets import load_benchmark
from apibank_lib.retrieval import forget_queries, retrieval_queries
from apibank_lib.retrievers import PAPER_RECIPE, RETRIEVERS, EmbeddingRetriever, make_retriever
from apibank_lib.search import MiniLMEmbedder, default_embedder

TARGET_MS = 5.0


def _time(retriever: Any, texts: list[str]) -> list[float]:
    retriever.search("warm up the code path", k=1)
    times = []
    for text in texts:
        forget_queries(retriever)
        start = time.perf_counter()
        retriever.search(text, k=1)
        times.append(1000 * (time.perf_counter() - start))
    return sorted(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--level", type=int, default=2, choices=(2, 3))
    args = ap.parse_args()
    bench = load_benchmark()
    texts = sorted({q.keywords for q in retrieval_queries(bench) if q.level == args.level})[: args.queries]
    candidates = bench.toolset(args.level).searchable()
    start = time.perf_counter()
    engine = type(default_embedder()).__name__
    print(f"embedding model loaded in {1000 * (time.perf_counter() - start):.0f} ms ({engine})")
    print(f"{len(texts)} distinct queries over the {len(candidates)} searchable level-{args.level} APIs")
    print(f"{'retriever':<15} {'cold ms':>8} {'warm median ms':>15} {'p90 ms':>7} {'vs paper':>9}")
    medians: dict[str, float] = {}
    rows: list[tuple[str, float, list[float]]] = []
    for name in RETRIEVERS:
        start = time.perf_counter()
        retriever = make_retriever(name, candidates)
        rows.append((name, 1000 * (time.perf_counter() - start), _time(retriever, texts)))
    start = time.perf_counter()
    numpy_recipe = EmbeddingRetriever(candidates, MiniLMEmbedder())
    rows.append((f"{PAPER_RECIPE} (numpy)", 1000 * (time.perf_counter() - start), _time(numpy_recipe, texts)))
    for name, cold, times in rows:
        medians[name] = statistics.median(times)
        p90 = times[int(0.9 * (len(times) - 1))]
        ratio = medians[name] / medians[PAPER_RECIPE]
        flag = "" if medians[name] < TARGET_MS else "  (over the 5 ms target)"
        print(f"{name:<15} {cold:>8.1f} {medians[name]:>15.3f} {p90:>7.3f} {ratio:>8.2f}x{flag}")


if __name__ == "__main__":
    main()
