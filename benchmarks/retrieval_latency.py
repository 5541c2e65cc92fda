"""Warm retrieval latency of every retriever against the paper's recipe, measured in one run.

Usage: .venv/bin/python benchmarks/retrieval_latency.py [--queries N] [--level 2]

Each retriever is built once over the level's searchable APIs (cold time
printed apart), then answers the same queries (our query variants and the gold
queries of the bundled benchmark), every one new to it: the embedding
retrievers' query caches are emptied before each query, so every search embeds
its keywords. Prints the median and 90th percentile per query and the ratio of
each retriever's median to the paper recipe's. Target: under 5 ms per query.
"""

from __future__ import annotations

import argparse
import statistics
import time

from apibank_lib.datasets import load_benchmark
from apibank_lib.retrieval import retrieval_queries
from apibank_lib.retrievers import RETRIEVERS, make_retriever

TARGET_MS = 5.0


def _clear_caches(retriever: object) -> None:
    for attr in ("index", "paper"):
        index = getattr(retriever, attr, None)
        if index is not None and hasattr(index, "_queries"):
            index._queries.clear()
    dense = getattr(retriever, "dense", None)
    if dense is not None:
        _clear_caches(dense)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--level", type=int, default=2, choices=(2, 3))
    args = ap.parse_args()
    bench = load_benchmark()
    texts = sorted({q.keywords for q in retrieval_queries(bench) if q.level == args.level})[: args.queries]
    candidates = bench.toolset(args.level).searchable()
    medians = {}
    print(f"{len(texts)} distinct queries over the {len(candidates)} searchable level-{args.level} APIs")
    print(f"{'retriever':<11} {'cold ms':>8} {'warm median ms':>15} {'p90 ms':>7} {'vs paper':>9}")
    for name in RETRIEVERS:
        start = time.perf_counter()
        retriever = make_retriever(name, candidates)
        cold = 1000 * (time.perf_counter() - start)
        retriever.search("warm up the code path", k=1)
        times = []
        for text in texts:
            _clear_caches(retriever)
            start = time.perf_counter()
            retriever.search(text, k=1)
            times.append(1000 * (time.perf_counter() - start))
        times.sort()
        medians[name] = statistics.median(times)
        p90 = times[int(0.9 * (len(times) - 1))]
        ratio = medians[name] / medians["embedding"]
        flag = "" if medians[name] < TARGET_MS else "  (over the 5 ms target)"
        print(f"{name:<11} {cold:>8.1f} {medians[name]:>15.3f} {p90:>7.3f} {ratio:>8.2f}x{flag}")


if __name__ == "__main__":
    main()
