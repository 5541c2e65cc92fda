"""The retrieval benchmark: every ToolSearcher step of a benchmark, our query variants, and retrievers measured on them.

Queries come from two places:

* every gold ToolSearcher step of a benchmark (ours, or a release the user
  supplies): its keywords and the API the dialogue needed next (the search's
  gold result, without the GetUserToken companion entry);
* for our own benchmark, variants of each distinct gold query written by us
  (``data/retrieval/queries.yaml``): a paraphrase, a terse and a noisy wording
  (and sometimes a question).

Each query is searched as a protocol runs it (``v2`` by default: CamelCase words
split, so an official release's level-3 keywords such as ``GetOccupationSalary``
read as words, as they do when graded).

Queries are split into a *tuning* and a *held-out* part by a hash of the
distinct gold query they belong to, so a query's variants stay on one side.
Metrics: hit@1, hit@3 and mean reciprocal rank, with 95% bootstrap intervals
that resample distinct queries; latency per query, cold (building the
retriever) and warm (new queries once it is built).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apibank_lib.datasets import Benchmark
from apibank_lib.errors import DataError
from apibank_lib.formats.yamlfile import read_yaml
from apibank_lib.protocols import V2, GradingProtocol
from apibank_lib.retrievers import RETRIEVERS, EnrichedRetriever, make_retriever
from apibank_lib.stats import bootstrap_mean, paired_comparison
from apibank_lib.tools.registry import domains
from apibank_lib.tools.searcher import ToolSearcher, retrieved_names
from apibank_lib.types import ApiRecord

__all__ = [
    "RetrievalQuery",
    "gold_searches",
    "retrieval_queries",
    "rank_queries",
    "retrieval_table",
    "compare_retrievers",
    "tune_enriched",
    "accuracy_by_retriever",
    "forget_queries",
    "VARIANTS_FILE",
    "split_of",
]

VARIANTS_FILE = Path(__file__).resolve().parent.parent / "data" / "retrieval" / "queries.yaml"
"""Our variants of the bundled benchmark's gold queries."""


@dataclass(frozen=True)
class RetrievalQuery:
    """One query of the retrieval benchmark.

    Attributes:
        group: the distinct gold query it belongs to (keywords and API), used for the split and the intervals.
        keywords: the text searched (as the protocol runs it).
        api: the API the search must retrieve.
        level: 2 or 3 (which tool set is searched).
        kind: ``gold``, ``paraphrase``, ``terse``, ``noisy`` or ``question``.
        split: ``tuning`` or ``held-out``.
        domain: the API's domain.
        source: the dialogue (or level-3 item) of the gold step; empty for variants.
        written: the keywords as written, before the protocol's rewrite.
    """

    group: str
    keywords: str
    api: str
    level: int
    kind: str
    split: str
    domain: str
    source: str = ""
    written: str = ""


def split_of(keywords: str, api: str) -> str:
    """``tuning`` or ``held-out``: half of the distinct gold queries each, by a hash of the query."""
    return "tuning" if int(hashlib.sha256(f"{keywords}\x00{api}".encode()).hexdigest(), 16) % 2 == 0 else "held-out"


def _domain(api: str) -> str:
    return domains().get(api, "level-3" if api else "")


def _searched(keywords: str, level: int, protocol: GradingProtocol) -> str:
    return str(protocol.rewrite_keywords(keywords, level))


def gold_searches(bench: Benchmark, protocol: GradingProtocol = V2) -> list[RetrievalQuery]:
    """Every gold ToolSearcher step of a benchmark, in dataset order, searched as ``protocol`` runs it."""
    out: list[RetrievalQuery] = []

    def add(record: ApiRecord, level: int, source: str) -> None:
        names = retrieved_names(record.output)
        keywords = str(record.args.get("keywords", ""))
        if not names or not keywords:
            return
        api = names[-1]
        out.append(
            RetrievalQuery(
                f"{keywords}\x00{api}",
                _searched(keywords, level, protocol),
                api,
                level,
                "gold",
                split_of(keywords, api),
                _domain(api),
                source,
                keywords,
            )
        )

    for d in bench.level2:
        for t in d.turns:
            if isinstance(t, ApiRecord) and t.api_name == "ToolSearcher":
                add(t, 2, d.id)
    for n, item in enumerate(bench.level3):
        for step in item.steps:
            if step.api_name == "ToolSearcher":
                add(step, 3, f"level-3 item {n}")
    return out


def retrieval_queries(
    bench: Benchmark, variants: str | Path | None = VARIANTS_FILE, protocol: GradingProtocol = V2
) -> list[RetrievalQuery]:
    """The gold searches plus, where the variants file has them, our variants of each distinct gold query.

    Args:
        bench: the benchmark.
        variants: the variants file (None: gold searches only). Variants of queries
            the benchmark does not have are ignored, so an official release gets
            only its gold searches unless its queries coincide with ours.
        protocol: whose keyword rewrite the searches go through.
    """
    gold = gold_searches(bench, protocol)
    if variants is None or not Path(variants).is_file():
        return gold
    data = read_yaml(variants)
    entries = data.get("queries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise DataError("not a retrieval-variants file: it needs a 'queries' list", variants)
    levels: dict[str, int] = {}
    for q in gold:
        levels.setdefault(q.group, q.level)
    out = list(gold)
    for i, entry in enumerate(entries):
        try:
            keywords, api, texts = str(entry["keywords"]), str(entry["api"]), dict(entry["variants"])
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"query #{i + 1} needs keywords, api and variants", variants) from exc
        group = f"{keywords}\x00{api}"
        if group not in levels:
            continue
        for kind in sorted(texts):
            text, level = str(texts[kind]), levels[group]
            out.append(
                RetrievalQuery(
                    group, _searched(text, level, protocol), api, level, kind, split_of(keywords, api), _domain(api), "", text
                )
            )
    return out


def forget_queries(retriever: Any) -> None:
    """Empty the query-embedding caches a retriever searches through, so that its next search is timed as new."""
    for attr in ("index", "dense"):
        part = getattr(retriever, attr, None)
        if part is None:
            continue
        if hasattr(part, "forget_queries"):
            part.forget_queries()
        else:
            forget_queries(part)


def rank_queries(
    bench: Benchmark, queries: Sequence[RetrievalQuery], retriever: str | Any, *, embedder: Any = None
) -> list[dict[str, Any]]:
    """Rank of the needed API for every query with one retriever, and the time each search took.

    Args:
        bench: the benchmark whose tool sets are searched.
        queries: the queries.
        retriever: a retriever's name, or a factory ``(candidates) -> retriever`` (e.g. a retriever with
            settings of its own).
        embedder: the embedding model of named retrievers (default: the packaged one).

    Returns one record per query: its fields, ``retrieved`` (the top API),
    ``rank`` (1-based; 0 when the API is not a candidate), ``ms`` (the search's
    wall time once the retriever is built, the query new to it), and per record
    the retriever's ``build_ms`` (cold start; a few ms when the embedding model
    and cached API embeddings are already loaded).
    """
    built: dict[int, Any] = {}
    build_ms: dict[int, float] = {}
    size: dict[int, int] = {}
    out = []
    label = retriever if isinstance(retriever, str) else None
    for q in queries:
        if q.level not in built:
            start = time.perf_counter()
            candidates = bench.toolset(q.level).searchable()
            if isinstance(retriever, str):
                built[q.level] = make_retriever(retriever, candidates, embedder)
            else:
                built[q.level] = retriever(candidates)
            label = label or getattr(built[q.level], "name", "custom")
            build_ms[q.level] = 1000 * (time.perf_counter() - start)
            size[q.level] = len(candidates)
        r = built[q.level]
        forget_queries(r)
        start = time.perf_counter()
        ranked = r.search(q.keywords, k=size[q.level])
        ms = 1000 * (time.perf_counter() - start)
        names = [s.name for s, _ in ranked]
        rank = names.index(q.api) + 1 if q.api in names else 0
        out.append({**q.__dict__, "retriever": label, "retrieved": names[0], "rank": rank, "ms": ms, "build_ms": build_ms[q.level]})
    return out


def retrieval_table(
    bench: Benchmark,
    retrievers: Sequence[str] | None = None,
    *,
    queries: Sequence[RetrievalQuery] | None = None,
    by: Sequence[str] = ("split",),
    n_boot: int = 2000,
    seed: int = 0,
    embedder: Any = None,
) -> Any:
    """hit@1, hit@3 and MRR (with 95% intervals resampling distinct queries) per retriever and group.

    Args:
        bench: the benchmark searched.
        retrievers: retriever names (default: all of them).
        queries: the queries (default: :func:`retrieval_queries` of the benchmark).
        by: columns to group by besides the retriever (``split``, ``kind``, ``level``, ``domain``).
    Returns:
        A DataFrame: retriever, the group columns, queries, hit@1 with low/high,
        hit@3, MRR with low/high, median warm ms (new queries), cold ms (the retriever's build time).
    """
    import pandas as pd

    queries = list(queries) if queries is not None else retrieval_queries(bench)
    rows = []
    for name in retrievers if retrievers is not None else tuple(RETRIEVERS):
        frame = pd.DataFrame(rank_queries(bench, queries, name, embedder=embedder))
        for key, part in frame.groupby(list(by), sort=True) if by else [((), frame)]:
            key = key if isinstance(key, tuple) else (key,)
            hit1 = bootstrap_mean((part["rank"] == 1).astype(float).tolist(), part["group"].tolist(), n_boot=n_boot, seed=seed)
            rr = [1.0 / r if r else 0.0 for r in part["rank"]]
            mrr = bootstrap_mean(rr, part["group"].tolist(), n_boot=n_boot, seed=seed)
            row = {"retriever": name, **dict(zip(by, key)), "queries": len(part)}
            row.update(
                {
                    "hit@1": round(100 * hit1.estimate, 2),
                    "hit@1 low": round(100 * hit1.low, 2),
                    "hit@1 high": round(100 * hit1.high, 2),
                    "hit@3": round(100 * float(((part["rank"] >= 1) & (part["rank"] <= 3)).mean()), 2),
                    "MRR": round(mrr.estimate, 4),
                    "MRR low": round(mrr.low, 4),
                    "MRR high": round(mrr.high, 4),
                    "warm ms (median)": round(float(part["ms"].median()), 3),
                    "cold ms": round(float(part["build_ms"].max()), 1),
                }
            )
            rows.append(row)
    return pd.DataFrame(rows)


def compare_retrievers(
    bench: Benchmark,
    a: str | Any,
    b: str | Any,
    *,
    split: str | None = "held-out",
    kinds: Sequence[str] | None = None,
    queries: Sequence[RetrievalQuery] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    embedder: Any = None,
) -> dict[str, Any]:
    """Retriever ``a`` minus retriever ``b`` in hit@1 on the same queries, with a paired interval and p-value.

    Clusters are distinct gold queries (a query and its variants), as in :func:`retrieval_table`.

    Args:
        bench: the benchmark.
        a, b: retriever names or factories (see :func:`rank_queries`).
        split: ``held-out`` (default), ``tuning``, or None for both.
        kinds: only these kinds of query (``gold``, ``paraphrase`` ...); None for all.
        queries: the queries (default: :func:`retrieval_queries`).

    Returns:
        ``{"a", "b", "split", "queries", "groups", "hit@1 a", "hit@1 b", "difference", "low", "high", "p_value"}``,
        rates and the difference in percent.
    """
    chosen = [
        q
        for q in (queries if queries is not None else retrieval_queries(bench))
        if (split is None or q.split == split) and (kinds is None or q.kind in kinds)
    ]
    ra = rank_queries(bench, chosen, a, embedder=embedder)
    rb = rank_queries(bench, chosen, b, embedder=embedder)
    hits_a = [float(r["rank"] == 1) for r in ra]
    hits_b = [float(r["rank"] == 1) for r in rb]
    cmp = paired_comparison(hits_a, hits_b, [q.group for q in chosen], n_boot=n_boot, n_perm=n_boot, seed=seed)
    return {
        "a": ra[0]["retriever"] if ra else str(a),
        "b": rb[0]["retriever"] if rb else str(b),
        "split": split or "all",
        "queries": len(chosen),
        "groups": cmp.clusters,
        "hit@1 a": round(100 * sum(hits_a) / len(hits_a), 2),
        "hit@1 b": round(100 * sum(hits_b) / len(hits_b), 2),
        "difference": round(100 * cmp.difference, 2),
        "low": round(100 * cmp.low, 2),
        "high": round(100 * cmp.high, 2),
        "p_value": round(cmp.p_value, 4),
    }


def tune_enriched(
    bench: Benchmark,
    weights: Sequence[float] = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 1.0),
    penalties: Sequence[float] = (0.0, 0.03, 0.05, 0.08, 0.1, 0.15),
    *,
    queries: Sequence[RetrievalQuery] | None = None,
    embedder: Any = None,
) -> Any:
    """hit@1 of :class:`~apibank_lib.retrievers.EnrichedRetriever` on the *tuning* queries for a grid of settings.

    The shipped setting (``ENRICHED_WEIGHT``, ``ENRICHED_PENALTY``) is the grid's best on the tuning part, the
    smaller weight and penalty winning ties; held-out queries are never looked at here.

    Returns:
        A DataFrame with ``weight``, ``penalty``, ``queries`` and ``hit@1`` (percent), best first.
    """
    import pandas as pd

    tuning = [q for q in (queries if queries is not None else retrieval_queries(bench)) if q.split == "tuning"]
    built = {
        level: EnrichedRetriever(bench.toolset(level).searchable(), embedder) for level in sorted({q.level for q in tuning})
    }
    rows = []
    for w in weights:
        for p in penalties:
            hits = 0
            for q in tuning:
                r = built[q.level]
                r.weight, r.penalty = w, p
                hits += r.search(q.keywords, k=1)[0][0].name == q.api
            rows.append({"weight": w, "penalty": p, "queries": len(tuning), "hit@1": round(100 * hits / len(tuning), 2)})
    table = pd.DataFrame(rows)
    return table.sort_values(["hit@1", "weight", "penalty"], ascending=[False, True, True], kind="stable").reset_index(drop=True)


def accuracy_by_retriever(
    bench: Benchmark,
    runs: Sequence[Any],
    retrievers: Sequence[str] = tuple(RETRIEVERS),
    *,
    levels: Sequence[int] = (2, 3),
    n_boot: int = 2000,
    seed: int = 0,
) -> Any:
    """API-call accuracy of runs at levels 2 and 3, their predictions graded again with each retriever.

    Teacher-forced samples only: a model's answer does not depend on the retriever there (the context is the
    gold dialogue), so one run serves every retriever and only the grading of its ToolSearcher calls changes.
    Level-3 agent episodes show search results to the model, so they are left out (run them per retriever with
    ``RunConfig(level3="loop", retriever=...)``). The oracle's run is the replay of the gold keywords.

    Args:
        bench: the benchmark the runs used.
        runs: run folders (paths, :class:`~apibank_lib.runs.RunFolder` or scored runs with a ``folder``).
        retrievers: retriever names.
        levels: the levels reported.

    Returns:
        A DataFrame, one row per run, retriever and level: API-call samples, accuracy with its 95% interval
        (dialogues resampled), the ToolSearcher samples among them and their accuracy; percentages.
    """
    import pandas as pd

    from apibank_lib.grading import Grader
    from apibank_lib.protocols import get_protocol
    from apibank_lib.runs import Predictions, RunFolder
    from apibank_lib.scoring import judge_predictions

    rows = []
    for item in runs:
        folder = getattr(item, "folder", item)
        folder = folder if isinstance(folder, RunFolder) else RunFolder(folder)
        info = folder.read_info()
        if info.identity["data_fingerprint"] != bench.fingerprint:
            raise DataError(f"run {folder.path} used other data (fingerprint {info.identity['data_fingerprint']})", bench.root)
        read = folder.read_predictions()
        kept = Predictions({k: r for k, r in read.records.items() if r.level in levels and r.kind == "api"})
        model = getattr(item, "model", None) or info.model
        for name in retrievers:
            grader = Grader(bench, get_protocol(info.protocol), searcher=name)
            judgments = judge_predictions(bench, grader, kept, info.prompt_mode)  # chat answers read as tool calls
            for level in levels:
                part = [j for j in judgments if j.level == level and j.excluded is None]  # errata: as scoring
                if not part:
                    continue
                hits = [float(bool(j.correct)) for j in part]
                ci = bootstrap_mean(hits, [j.dialogue_id for j in part], n_boot=n_boot, seed=seed)
                searches = [j for j in part if j.gold_api == ToolSearcher.name]
                rows.append(
                    {
                        "model": model,
                        "retriever": name,
                        "level": level,
                        "API-call samples": len(part),
                        "accuracy": round(100 * ci.estimate, 2),
                        "accuracy low": round(100 * ci.low, 2),
                        "accuracy high": round(100 * ci.high, 2),
                        "search samples": len(searches),
                        "search accuracy": round(100 * sum(bool(j.correct) for j in searches) / len(searches), 2)
                        if searches
                        else None,
                    }
                )
    return pd.DataFrame(rows)
