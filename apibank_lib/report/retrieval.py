"""The retrieval benchmark: ToolSearcher queries in sets, retrievers measured on each, and the rule that picks v2's.

Queries come from three places, kept apart as *sets* (:func:`independent_sets`) because they are not equally
independent of the choices they judge:

* ``gold``: every gold ToolSearcher step of a benchmark (ours, or a release the user supplies), levels 2 and 3,
  searched over that level's tool set. The API a search is for is the API the dialogue then calls for that need
  (:func:`apibank_lib.data.datasets.needed_api`, the ``needed_api`` of its API-call sample, as the ``v2`` protocol
  judges searches), and the recorded search output's API only where no call follows the search;
* ``corpus``: every search of our training corpus (``data/train/corpus``, read through the tester as
  ``apibank check-train`` reads it): about 1,100 searches by six writers over the corpus's own 360 APIs, none of
  them a benchmark API, the gold API chosen by the same rule; no retriever setting or phrasing was made with
  them in view;
* ``rewordings``: for our own benchmark, variants of each distinct gold query written by us
  (``data/retrieval/queries.yaml``): a paraphrase, a terse and a noisy wording (and sometimes a question),
  divided into a *tuning* and a *held-out* part by a hash of the distinct gold query they belong to, so that a
  query's variants stay on one side. The enriched retriever's two settings were chosen on the tuning part
  (:func:`tune_enriched`, which also saw the gold keywords of the same half), so the tuning part is reported as
  such and never counts as evidence.

Each query is searched as a protocol runs it (``v2`` by default: CamelCase words split, so an official
release's level-3 keywords such as ``GetOccupationSalary`` read as words, as they do when graded).

Metrics: hit@1, hit@3 and mean reciprocal rank, with 95% bootstrap intervals that resample distinct queries;
latency per query, cold (building the retriever) and warm (new queries once it is built). :func:`set_table`
measures every retriever on every set, with a paired comparison against the paper's recipe and a pooled total;
:func:`choose_default` applies the written rule that names the ``v2`` protocol's retriever.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apibank_lib.core.errors import ConfigError, DataError
from apibank_lib.core.paths import PROJECT_ROOT
from apibank_lib.core.stats import bootstrap_mean, bounds, paired_comparison
from apibank_lib.core.types import ApiCallSample, ApiRecord, ToolSchema
from apibank_lib.core.yamlfile import read_yaml
from apibank_lib.data.datasets import Benchmark
from apibank_lib.env.protocols import V2, GradingProtocol
from apibank_lib.env.tools.registry import domains
from apibank_lib.env.tools.searcher import ToolSearcher, retrieved_names
from apibank_lib.retrieval.retrievers import PAPER_RECIPE, RETRIEVERS, EnrichedRetriever, make_retriever

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "TIMING_COLUMNS",
    "RetrievalQuery",
    "QuerySet",
    "gold_searches",
    "corpus_searches",
    "retrieval_queries",
    "independent_sets",
    "rank_queries",
    "retrieval_table",
    "set_table",
    "choose_default",
    "compare_retrievers",
    "tune_enriched",
    "accuracy_by_retriever",
    "forget_queries",
    "VARIANTS_FILE",
    "RULE_SETS",
    "POOLED",
    "split_of",
    "without_timings",
]

VARIANTS_FILE = PROJECT_ROOT / "data" / "retrieval" / "queries.yaml"
"""Our variants of the bundled benchmark's gold queries."""

RULE_SETS = ("corpus", "gold", "rewordings held-out")
"""The sets the default retriever is chosen on (:func:`choose_default`) and pooled into :data:`POOLED`: all but
the rewordings' tuning part, on which the enriched retriever's settings were chosen."""

POOLED = "pooled"
"""The name of the pooled total over :data:`RULE_SETS` in :func:`set_table`."""


TIMING_COLUMNS = ("warm ms (median)", "cold ms")
"""The columns of :func:`retrieval_table` that time this machine, not the retrievers' quality: shown, but left out
of the tables committed to ``results/`` (:func:`without_timings`), which must not change from one run to the next."""


def without_timings(table: Any) -> pd.DataFrame:
    """A retrieval table without its :data:`TIMING_COLUMNS` (``benchmarks/retrieval_latency.py`` measures latency)."""
    return table.drop(columns=[c for c in TIMING_COLUMNS if c in table.columns])


@dataclass(frozen=True)
class RetrievalQuery:
    """One query of the retrieval benchmark.

    Attributes:
        group: the distinct gold query it belongs to (keywords and API), used for the split and the intervals.
        keywords: the text searched (as the protocol runs it).
        api: the API the search must retrieve.
        level: 2 or 3 (which tool set is searched; for the corpus, the level its dialogue's ability resembles).
        kind: ``gold``, ``paraphrase``, ``terse``, ``noisy``, ``question`` or ``corpus``.
        split: ``tuning`` or ``held-out`` (our benchmark's queries, see :func:`split_of`), or ``independent``
            (the corpus's searches, which no setting was chosen on).
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


@dataclass(frozen=True)
class QuerySet:
    """Queries measured together, and the APIs each level's queries are searched among.

    Attributes:
        name: ``corpus``, ``gold``, ``rewordings held-out`` or ``rewordings tuning``.
        queries: the queries.
        candidates: level -> the APIs searched (a benchmark's tool sets; the corpus's own APIs for both levels).
        independent: ``yes`` (no setting was chosen with these queries in view), ``partly`` or ``no``.
        about: one line on where the queries come from and what they are independent of.
    """

    name: str
    queries: tuple[RetrievalQuery, ...]
    candidates: Mapping[int, Sequence[ToolSchema]] = field(repr=False)
    independent: str
    about: str


def split_of(keywords: str, api: str) -> str:
    """``tuning`` or ``held-out``: half of the distinct gold queries each, by a hash of the query."""
    return "tuning" if int(hashlib.sha256(f"{keywords}\x00{api}".encode()).hexdigest(), 16) % 2 == 0 else "held-out"


def _domain(api: str) -> str:
    return domains().get(api, "level-3" if api else "")


def _searched(keywords: str, level: int, protocol: GradingProtocol) -> str:
    return str(protocol.rewrite_keywords(keywords, level))


def gold_searches(bench: Benchmark, protocol: GradingProtocol = V2) -> list[RetrievalQuery]:
    """Every gold ToolSearcher step of a benchmark (levels 2 and 3), in dataset order, searched as ``protocol`` runs it.

    The steps are read from the benchmark's API-call samples (each record once: duplicate samples left out). The
    API a step must retrieve is its sample's ``needed_api``, the API the dialogue then calls for the need the
    search serves (:func:`apibank_lib.data.datasets.needed_api`, as the ``v2`` protocol judges searches); only where no
    call follows the search is it the recorded search output's API (without the GetUserToken companion entry).
    A step with no keywords, or with neither, is left out.
    """
    out: list[RetrievalQuery] = []
    for level in (2, 3):
        for sample in bench.samples(level, "api"):
            if not isinstance(sample, ApiCallSample) or sample.duplicate or sample.gold.api_name != ToolSearcher.name:
                continue
            keywords = str(sample.gold.args.get("keywords", ""))
            recorded = retrieved_names(sample.gold.output)
            api = sample.needed_api or (recorded[-1] if recorded else "")
            if not api or not keywords:
                continue
            source = sample.dialogue_id if level == 2 else f"level-3 item {sample.dialogue_id}"
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
    return out


def corpus_searches(report: Any, protocol: GradingProtocol = V2) -> list[RetrievalQuery]:
    """Every search of a training corpus's accepted dialogues, in corpus order, searched as ``protocol`` runs it.

    Args:
        report: the tester's verdict on the corpus (:func:`apibank_lib.data.check_train.check_corpus`).
        protocol: whose keyword rewrite the searches go through.

    The API a search must retrieve follows the benchmark's rule (:func:`apibank_lib.data.datasets.needed_api`): the
    first call after it, up to the next search, that is not a helper. The level is the one the dialogue's
    ability resembles (``retrieve_call`` 2, ``plan_retrieve_call`` 3); the domain is the corpus file's.
    """
    from apibank_lib.data.datasets import needed_api
    from apibank_lib.data.formats.train_corpus import ABILITY_LEVEL, to_dialogue, to_level3_item

    schemas = report.schemas
    out: list[RetrievalQuery] = []
    for d in report.accepted:
        if d.ability == "call":
            continue
        level = ABILITY_LEVEL[d.ability]
        turns = to_level3_item(d, schemas).steps if level == 3 else to_dialogue(d, schemas).turns
        records = [t for t in turns if isinstance(t, ApiRecord)]
        for i, record in enumerate(records):
            if record.api_name != ToolSearcher.name:
                continue
            keywords = str(record.args.get("keywords", ""))
            api = needed_api(records[i + 1 :])
            if not api or not keywords:
                continue
            out.append(
                RetrievalQuery(
                    f"{keywords}\x00{api}",
                    _searched(keywords, level, protocol),
                    api,
                    level,
                    "corpus",
                    "independent",
                    d.domain,
                    d.id,
                    keywords,
                )
            )
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


def _pool(bench: Benchmark | None, candidates: Mapping[int, Sequence[ToolSchema]] | None, level: int) -> list[ToolSchema]:
    """The APIs a query of ``level`` is searched among: ``candidates``' when given, else the benchmark's tool set."""
    if candidates is not None:
        if level not in candidates:
            raise ConfigError(f"no candidate APIs given for level {level}")
        return list(candidates[level])
    if bench is None:
        raise ConfigError("rank queries over a benchmark's tool sets or over given candidates")
    return bench.toolset(level).searchable()


def rank_queries(
    bench: Benchmark | None,
    queries: Sequence[RetrievalQuery],
    retriever: str | Any,
    *,
    embedder: Any = None,
    candidates: Mapping[int, Sequence[ToolSchema]] | None = None,
    timed: bool = True,
) -> list[dict[str, Any]]:
    """Rank of the needed API for every query with one retriever, and the time each search took.

    Args:
        bench: the benchmark whose tool sets are searched (None when ``candidates`` are given).
        queries: the queries.
        retriever: a retriever's name, or a factory ``(candidates) -> retriever`` (e.g. a retriever with
            settings of its own).
        embedder: the embedding model of named retrievers (default: the packaged one).
        candidates: level -> the APIs searched, instead of the benchmark's tool sets (e.g. a training corpus's
            APIs); levels with the same APIs share one retriever.
        timed: time every search as a new query (the query-embedding caches emptied before it); False where only
            the ranks are read: a query embedded once is then reused, and ``ms`` is a warm time.

    Returns one record per query: its fields, ``retrieved`` (the top API),
    ``rank`` (1-based; 0 when the API is not a candidate), ``ms`` (the search's
    wall time once the retriever is built, the query new to it), and per record
    the retriever's ``build_ms`` (cold start; a few ms when the embedding model
    and cached API embeddings are already loaded).
    """
    built: dict[tuple[str, ...], tuple[Any, float, int]] = {}
    keys: dict[int, tuple[str, ...]] = {}
    out = []
    label = retriever if isinstance(retriever, str) else None
    for q in queries:
        if q.level not in keys:
            pool = _pool(bench, candidates, q.level)
            keys[q.level] = key = tuple(s.name for s in pool)
            if key not in built:
                start = time.perf_counter()
                r = make_retriever(retriever, pool, embedder) if isinstance(retriever, str) else retriever(pool)
                built[key] = (r, 1000 * (time.perf_counter() - start), len(pool))
                label = label or getattr(r, "name", "custom")
        r, build_ms, size = built[keys[q.level]]
        if timed:
            forget_queries(r)
        start = time.perf_counter()
        ranked = r.search(q.keywords, k=size)
        ms = 1000 * (time.perf_counter() - start)
        names = [s.name for s, _ in ranked]
        rank = names.index(q.api) + 1 if q.api in names else 0
        out.append({**q.__dict__, "retriever": label, "retrieved": names[0], "rank": rank, "ms": ms, "build_ms": build_ms})
    return out


def _quality(ranks: Sequence[int], groups: Sequence[str], *, n_boot: int, seed: int) -> dict[str, Any]:
    """hit@1, hit@3 and MRR of these ranks (percent, percent, 0-1), each with a 95% interval over ``groups``."""
    row: dict[str, Any] = {}
    for column, values, scale, digits in (
        ("hit@1", [float(r == 1) for r in ranks], 100, 2),
        ("hit@3", [float(1 <= r <= 3) for r in ranks], 100, 2),
        ("MRR", [1.0 / r if r else 0.0 for r in ranks], 1, 4),
    ):
        ci = bootstrap_mean(values, list(groups), n_boot=n_boot, seed=seed)
        low, high = bounds(ci, scale, digits)  # blank below MIN_CLUSTERS groups
        row["groups"] = ci.clusters
        row.update(
            {
                column: round(scale * ci.estimate, digits),
                f"{column} low": low,
                f"{column} high": high,
            }
        )
    return row


def _paired(ranks_a: Sequence[int], ranks_b: Sequence[int], groups: Sequence[str], *, n_boot: int, seed: int) -> dict[str, Any]:
    """hit@1 of ``a`` minus ``b`` on the same queries (percent), its 95% interval over ``groups`` and p-value."""
    hits_a = [float(r == 1) for r in ranks_a]
    hits_b = [float(r == 1) for r in ranks_b]
    cmp = paired_comparison(hits_a, hits_b, list(groups), n_boot=n_boot, n_perm=n_boot, seed=seed)
    return {
        "groups": cmp.clusters,
        "hit@1 a": round(100 * sum(hits_a) / len(hits_a), 2),
        "hit@1 b": round(100 * sum(hits_b) / len(hits_b), 2),
        "difference": round(100 * cmp.difference, 2),
        **dict(zip(("low", "high"), bounds(cmp, 100))),
        "p_value": round(cmp.p_value, 4),
    }


def retrieval_table(
    bench: Benchmark,
    retrievers: Sequence[str] | None = None,
    *,
    queries: Sequence[RetrievalQuery] | None = None,
    by: Sequence[str] = ("split",),
    n_boot: int = 2000,
    seed: int = 0,
    embedder: Any = None,
) -> pd.DataFrame:
    """hit@1, hit@3 and MRR (with 95% intervals resampling distinct queries) per retriever and group.

    Args:
        bench: the benchmark searched.
        retrievers: retriever names (default: all of them).
        queries: the queries (default: :func:`retrieval_queries` of the benchmark).
        by: columns to group by besides the retriever (``split``, ``kind``, ``level``, ``domain``).
    Returns:
        A DataFrame: retriever, the group columns, queries, hit@1, hit@3 and MRR each with low/high,
        median warm ms (new queries), cold ms (the retriever's build time).
    """
    import pandas as pd

    queries = list(queries) if queries is not None else retrieval_queries(bench)
    rows = []
    for name in retrievers if retrievers is not None else tuple(RETRIEVERS):
        frame = pd.DataFrame(rank_queries(bench, queries, name, embedder=embedder))
        for key, part in frame.groupby(list(by), sort=True) if by else [((), frame)]:
            key = key if isinstance(key, tuple) else (key,)
            row = {"retriever": name, **dict(zip(by, key)), "queries": len(part)}
            row.update(_quality(part["rank"].tolist(), part["group"].tolist(), n_boot=n_boot, seed=seed))
            row["warm ms (median)"] = round(float(part["ms"].median()), 3)
            row["cold ms"] = round(float(part["build_ms"].max()), 1)
            rows.append(row)
    return pd.DataFrame(rows)


def independent_sets(
    bench: Benchmark,
    *,
    corpus: str | Path | None = None,
    variants: str | Path | None = VARIANTS_FILE,
    protocol: GradingProtocol = V2,
) -> list[QuerySet]:
    """The query sets retrievers are judged on, each with what it is independent of.

    * ``corpus``: :func:`corpus_searches` of our training corpus (read through the tester, as ``apibank
      check-train`` reads it), searched among the corpus's own APIs: written by six writers for other APIs than
      the benchmark's, and seen by no tuning. A retriever with example phrasings has none for these APIs and
      falls back to what it has (the enriched retriever: the paper's text and the action penalty).
    * ``gold``: :func:`gold_searches` of ``bench``, over its tool sets. Partly independent: the gold keywords of
      the tuning half were among the queries :func:`tune_enriched` chose the enriched settings on.
    * ``rewordings held-out`` and ``rewordings tuning``: our variants (:func:`retrieval_queries` less the gold
      keywords), by their split. No setting was chosen on the held-out part, but it is only partly independent:
      the rewordings were written like the enriched retriever's phrasings (an AI-assistant writer, the same
      APIs, the same phrasing habits), and a gain measured on them did not carry over to an official release's
      gold searches. The tuning part is reported and is no evidence. Both are empty for a benchmark whose gold
      queries are not ours.

    Args:
        bench: the benchmark of the ``gold`` and ``rewordings`` sets.
        corpus: the training corpus (a folder or file; default: ``data/train/corpus``).
        variants: the variants file (None: no rewordings).
        protocol: whose keyword rewrite the searches go through.
    """
    from apibank_lib.data.check_train import check_corpus
    from apibank_lib.data.formats.train_corpus import default_corpus_dir

    report = check_corpus(corpus if corpus is not None else default_corpus_dir())
    corpus_apis = list(report.schemas.values())
    levels = {2: bench.toolset(2).searchable(), 3: bench.toolset(3).searchable()}
    variants_only = [q for q in retrieval_queries(bench, variants, protocol) if q.kind != "gold"]
    return [
        QuerySet(
            "corpus",
            tuple(corpus_searches(report, protocol)),
            {2: corpus_apis, 3: corpus_apis},
            "yes",
            f"every search of the training corpus, over its {len(corpus_apis)} APIs",
        ),
        QuerySet(
            "gold",
            tuple(gold_searches(bench, protocol)),
            levels,
            "partly",
            f"{bench.name}'s gold searches (levels 2 and 3); those of our benchmark's tuning half were in the tuning grid",
        ),
        QuerySet(
            "rewordings held-out",
            tuple(q for q in variants_only if q.split == "held-out"),
            levels,
            "partly",
            "our rewordings of the held-out half of the gold queries: no setting was chosen on them, but they were "
            "written like the phrasings (an AI-assistant writer, the same APIs, the same habits)",
        ),
        QuerySet(
            "rewordings tuning",
            tuple(q for q in variants_only if q.split == "tuning"),
            levels,
            "no",
            "our rewordings of the tuning half: the enriched settings were chosen on them",
        ),
    ]


def set_table(
    sets: Sequence[QuerySet],
    retrievers: Sequence[str] | None = None,
    *,
    reference: str = PAPER_RECIPE,
    pooled: Sequence[str] = RULE_SETS,
    n_boot: int = 2000,
    seed: int = 0,
    embedder: Any = None,
) -> pd.DataFrame:
    """Every retriever on every query set, plus the pooled total, each against the paper's recipe.

    Args:
        sets: the query sets (:func:`independent_sets`); empty sets are left out.
        retrievers: retriever names (default: all of them); ``reference`` is always measured.
        reference: the retriever every other is compared with (the paper's recipe).
        pooled: the sets pooled into the :data:`POOLED` rows: their queries together, so each set weighs by its
            number of queries; intervals resample distinct queries (a gold query with its rewordings is one).
        n_boot: bootstrap replicates of every interval and permutations of every p-value.

    Returns:
        A DataFrame, one row per set and retriever (sets in the given order, then ``pooled``): ``set``,
        ``independent``, ``retriever``, ``queries``, ``distinct``, hit@1, hit@3 and MRR with their 95% low/high,
        and the paired difference in hit@1 with ``reference`` (points; ``vs ... low``/``high``, ``p``), empty on
        the reference's own rows.
    """
    import pandas as pd

    names = list(retrievers) if retrievers is not None else list(RETRIEVERS)
    if reference not in names:
        names.insert(0, reference)
    kept = [qs for qs in sets if qs.queries]
    ranks: dict[tuple[str, str], list[int]] = {}
    for qs in kept:
        for name in names:
            ranked = rank_queries(None, qs.queries, name, embedder=embedder, candidates=qs.candidates, timed=False)
            ranks[qs.name, name] = [r["rank"] for r in ranked]
    parts = [(qs.name, qs.independent, list(qs.queries)) for qs in kept]
    pool = [qs for qs in kept if qs.name in pooled]
    if pool:
        parts.append((POOLED, "yes" if all(qs.independent == "yes" for qs in pool) else "partly", [q for qs in pool for q in qs.queries]))
        for name in names:
            ranks[POOLED, name] = [r for qs in pool for r in ranks[qs.name, name]]
    diff = f"vs {reference}"
    rows = []
    for set_name, independent, queries in parts:
        groups = [q.group for q in queries]
        for name in names:
            row: dict[str, Any] = {
                "set": set_name,
                "independent": independent,
                "retriever": name,
                "queries": len(queries),
                "distinct": len(set(groups)),
            }
            row.update(_quality(ranks[set_name, name], groups, n_boot=n_boot, seed=seed))
            if name == reference:
                row.update({diff: None, f"{diff} low": None, f"{diff} high": None, "p": None})
            else:
                cmp = _paired(ranks[set_name, name], ranks[set_name, reference], groups, n_boot=n_boot, seed=seed)
                row.update({diff: cmp["difference"], f"{diff} low": cmp["low"], f"{diff} high": cmp["high"], "p": cmp["p_value"]})
            rows.append(row)
    return pd.DataFrame(rows)


def choose_default(table: Any, *, reference: str = PAPER_RECIPE, sets: Sequence[str] = RULE_SETS) -> tuple[str, str]:
    """The ``v2`` protocol's retriever, by the written rule, from a :func:`set_table`.

    The rule: a retriever qualifies when its hit@1 is not below ``reference``'s on any of ``sets`` present in the
    table (point estimates, ``>=``) and is above it on the pooled total (``>``). The qualifier with the highest
    pooled hit@1 is chosen (ties: the first in the table's order); when none qualifies, ``reference`` is, and
    the others stay options a run may name.

    Args:
        table: rows with ``set``, ``retriever`` and ``hit@1`` (percent), including the :data:`POOLED` rows.
        reference: the paper's recipe.
        sets: the sets the rule looks at (default: :data:`RULE_SETS`; the rewordings' tuning part never counts).

    Returns:
        ``(name, why)``: the retriever and one sentence with the numbers that decided.

    Raises:
        ConfigError: the table lacks the reference's or the pooled rows, or has none of ``sets``.
    """
    hit = {(str(r["set"]), str(r["retriever"])): float(r["hit@1"]) for _, r in table.iterrows()}
    retrievers = list(dict.fromkeys(str(r) for r in table["retriever"]))
    present = [s for s in sets if (s, reference) in hit]
    if (POOLED, reference) not in hit or not present:
        raise ConfigError(f"the table needs {reference}'s rows on the {POOLED} total and on at least one of {', '.join(sets)}")

    def shown(name: str) -> str:
        return ", ".join(f"{s} {hit[s, name]:.2f}" for s in present) + f", {POOLED} {hit[POOLED, name]:.2f}"

    qualified, failed = [], []
    for name in retrievers:
        if name == reference or (POOLED, name) not in hit:
            continue
        worse = [s for s in present if (s, name) not in hit or hit[s, name] < hit[s, reference]]
        if worse:
            failed.append(f"{name} is below it on {', '.join(worse)}")
        elif hit[POOLED, name] <= hit[POOLED, reference]:
            failed.append(f"{name} is not above it pooled ({hit[POOLED, name]:.2f})")
        else:
            qualified.append(name)
    rule = f"not below {reference} on {', '.join(present)} and above it pooled"
    if not qualified:
        return reference, (
            f"no retriever is {rule} ({reference}: {shown(reference)}): " + "; ".join(failed) + f"; {reference} stays"
        )
    best = max(qualified, key=lambda n: (hit[POOLED, n], -qualified.index(n)))
    others = [n for n in qualified if n != best]
    return best, (
        f"{best} is {rule} ({best}: {shown(best)}; {reference}: {shown(reference)})"
        + (f", and highest pooled of those that are ({', '.join(others)} also {'qualifies' if len(others) == 1 else 'qualify'})" if others else "")
    )


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
    ra = rank_queries(bench, chosen, a, embedder=embedder, timed=False)
    rb = rank_queries(bench, chosen, b, embedder=embedder, timed=False)
    cmp = _paired([r["rank"] for r in ra], [r["rank"] for r in rb], [q.group for q in chosen], n_boot=n_boot, seed=seed)
    return {
        "a": ra[0]["retriever"] if ra else str(a),
        "b": rb[0]["retriever"] if rb else str(b),
        "split": split or "all",
        "queries": len(chosen),
        **cmp,
    }


def tune_enriched(
    bench: Benchmark,
    weights: Sequence[float] = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 1.0),
    penalties: Sequence[float] = (0.0, 0.03, 0.05, 0.08, 0.1, 0.15),
    *,
    queries: Sequence[RetrievalQuery] | None = None,
    embedder: Any = None,
) -> pd.DataFrame:
    """hit@1 of :class:`~apibank_lib.retrieval.retrievers.EnrichedRetriever` on the *tuning* queries for a grid of settings.

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
) -> pd.DataFrame:
    """API-call accuracy of runs at levels 2 and 3, their predictions graded again with each retriever.

    Teacher-forced samples only: a model's answer does not depend on the retriever there (the context is the
    gold dialogue), so one run serves every retriever and only the grading of its ToolSearcher calls changes.
    Level-3 agent episodes show search results to the model, so they are left out (run them per retriever with
    ``RunConfig(level3="loop", retriever=...)``). The oracle's run is the replay of the gold keywords.

    Args:
        bench: the benchmark the runs used.
        runs: run folders (paths or :class:`~apibank_lib.runs.folder.RunFolder`, read with
            :func:`~apibank_lib.runs.scoring.scored`) or runs already read (:class:`~apibank_lib.runs.scoring.ScoredRun`, e.g.
            restricted to what some settings planned).
        retrievers: retriever names.
        levels: the levels reported.

    Returns:
        A DataFrame, one row per run, retriever and level: API-call samples, accuracy with its 95% interval
        (dialogues resampled), the ToolSearcher samples among them and their accuracy; percentages.
    """
    import pandas as pd

    from apibank_lib.env.protocols import get_protocol
    from apibank_lib.grading.grader import Grader
    from apibank_lib.runs.records import Predictions
    from apibank_lib.runs.scoring import ScoredRun, accuracy, judge_predictions, scored

    rows = []
    for item in runs:
        run = item if isinstance(item, ScoredRun) else scored(item, bench, stacklevel=3)
        info = run.info
        # Only the samples the run's settings planned (a run read through a plan holds only those judgments).
        kept = Predictions(
            {k: r for k, r in run.predictions.items() if k in run.by_key and r.level in levels and r.kind == "api"}
        )
        model = info.model
        for name in retrievers:
            grader = Grader(bench, get_protocol(info.protocol), searcher=name)
            judgments = judge_predictions(bench, grader, kept, info.prompt_mode)  # chat answers read as tool calls
            for level in levels:
                part = [j for j in judgments if j.level == level and j.excluded is None]  # errata: as scoring
                if not part:
                    continue
                hits = [float(bool(j.correct)) for j in part]
                _, _, share = accuracy(part)
                ci = bootstrap_mean(hits, [j.dialogue_id for j in part], n_boot=n_boot, seed=seed)
                searches = [j for j in part if j.gold_api == ToolSearcher.name]
                rows.append(
                    {
                        "model": model,
                        "retriever": name,
                        "level": level,
                        "API-call samples": len(part),
                        "dialogues": ci.clusters,
                        "accuracy": round(100 * (share or 0.0), 2),
                        **dict(zip(("accuracy low", "accuracy high"), bounds(ci, 100))),
                        "search samples": len(searches),
                        "search accuracy": round(100 * sum(bool(j.correct) for j in searches) / len(searches), 2)
                        if searches
                        else None,
                    }
                )
    return pd.DataFrame(rows)
