"""Retrievers (one protocol, chosen by name), query normalisation, and the retrieval benchmark."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from apibank_lib.core.errors import ConfigError, DataError
from apibank_lib.core.types import ApiCallSample, ApiRecord, Param, ToolSchema
from apibank_lib.data.datasets import Benchmark
from apibank_lib.env.protocols import PAPER, V2
from apibank_lib.report.retrieval import (
    POOLED,
    QuerySet,
    RetrievalQuery,
    choose_default,
    compare_retrievers,
    corpus_searches,
    gold_searches,
    independent_sets,
    rank_queries,
    retrieval_queries,
    retrieval_table,
    set_table,
    split_of,
    tune_enriched,
)
from apibank_lib.retrieval.retrievers import (
    ENRICHED_PENALTY,
    ENRICHED_WEIGHT,
    RETRIEVERS,
    EnrichedRetriever,
    api_action,
    api_words,
    load_phrasings,
    make_retriever,
    normalize_query,
    query_action,
)


def _schema(name: str, description: str, **params: str) -> ToolSchema:
    return ToolSchema(name, description, {k: Param("str", v) for k, v in params.items()}, {})


POOL = [
    _schema("AddAlarm", "Set an alarm clock for a time.", time="When the alarm rings."),
    _schema("QueryStock", "Get the price of a company's stock.", stock_code="The ticker symbol."),
    _schema("BookHotel", "Reserve a hotel room for some nights.", hotel_name="The hotel.", check_in_time="Arrival day."),
]


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("can u plz add an evnt to my agenda for tmrw at 3", "add evnt agenda"),
        ("QueryHealthData", "query health data"),
        ("book a hotel on 2023-04-05 at 10:30 for 2 nights", "book hotel nights"),
        ("please", "please"),  # nothing left: the words are kept
    ],
)
def test_queries_are_normalised(text: str, normalised: str) -> None:
    assert normalize_query(text) == normalised


def test_bm25_indexes_name_description_and_parameter_names() -> None:
    words = api_words(POOL[2])
    assert words[:2] == ["book", "hotel"] and "check" in words and "in" in words and "reserve" in words


@pytest.mark.parametrize("name", list(RETRIEVERS))
def test_every_retriever_has_the_searchers_output_shape(name: str) -> None:
    retriever = make_retriever(name, POOL)
    ranked = retriever.search("current stock price of apple", k=3)
    assert [type(s) for s, _ in ranked] == [ToolSchema] * 3 and isinstance(ranked[0][1], float)
    assert ranked[0][0].name == "QueryStock", name
    assert [s.name for s, _ in retriever.search("wake me up at 7", k=1)] == ["AddAlarm"]


def test_an_unknown_retriever_is_named_in_the_error() -> None:
    with pytest.raises(ConfigError, match="unknown retriever 'bm26'; choose one of embedding"):
        make_retriever("bm26", POOL)


def test_gold_searches_and_variants_of_the_bundled_benchmark(bench: Benchmark) -> None:
    gold = gold_searches(bench)
    assert len(gold) == sum(1 for d in bench.level2 for t in d.turns if getattr(t, "api_name", "") == "ToolSearcher") + sum(
        1 for it in bench.level3 for s in it.steps if s.api_name == "ToolSearcher"
    )
    assert all(q.kind == "gold" and q.api and q.api != "GetUserToken" for q in gold)
    queries = retrieval_queries(bench)
    variants = [q for q in queries if q.kind != "gold"]
    assert len(variants) >= 3 * len({q.group for q in gold})
    splits = {q.group: q.split for q in queries}
    assert all(q.split == splits[q.group] for q in queries)  # a query's variants stay on its side
    assert 0.3 < sum(s == "held-out" for s in splits.values()) / len(splits) < 0.7
    assert split_of("add event to agenda", "AddAgenda") == split_of("add event to agenda", "AddAgenda")


def test_a_broken_variants_file_is_named(bench: Benchmark, tmp_path: Path) -> None:
    bad = tmp_path / "q.yaml"
    bad.write_text("queries:\n  - keywords: x\n")
    with pytest.raises(DataError, match=r"q\.yaml: query #1 needs keywords, api and variants"):
        retrieval_queries(bench, bad)


def test_the_papers_recipe_retrieves_every_gold_api_of_our_benchmark(bench: Benchmark) -> None:
    records = rank_queries(bench, gold_searches(bench), "embedding")
    assert all(r["rank"] == 1 for r in records), [r for r in records if r["rank"] != 1][:3]


def test_the_retrieval_table_has_intervals_per_split(bench: Benchmark) -> None:
    table = retrieval_table(bench, ["bm25"], n_boot=50)
    assert list(table["split"]) == ["held-out", "tuning"]
    row = table.iloc[0]
    assert row["hit@1 low"] <= row["hit@1"] <= row["hit@1 high"] and 0 <= row["MRR"] <= 1 and row["hit@3"] >= row["hit@1"]


def test_the_retriever_enters_only_the_episodes_identity() -> None:
    from apibank_lib.runs.config import RunConfig

    with pytest.raises(ConfigError, match="unknown retriever 'bm26'"):
        RunConfig("oracle", retriever="bm26").validate()
    ident = {"backend": "oracle"}
    # Teacher-forced samples: the retriever only changes grading, so it is not part of the folder's identity.
    base = RunConfig("oracle").identity("fp", ident, "reference")
    for config in (RunConfig("oracle", retriever="bm25"), RunConfig("oracle", level3="loop", retriever="bm25", max_steps=3)):
        assert config.identity("fp", ident, "reference") == base
    assert "retriever" not in base and "max_steps" not in base
    # Level-3 episodes show search results to the model: the retriever and the step limit are the episodes' identity.
    assert RunConfig("oracle", level3="loop", retriever="bm25").episode_identity() == {"max_steps": 12, "retriever": "bm25"}
    assert RunConfig("oracle", level3="both").episode_identity()["retriever"] == V2.retriever
    assert not RunConfig("oracle", levels=(1, 2), level3="both").plans_episodes()
    assert RunConfig("oracle", level3="loop", protocol=PAPER.name).episode_identity()["retriever"] == "embedding"
    assert RunConfig("oracle").effective_retriever() == V2.retriever != PAPER.retriever == "embedding"


def test_a_run_names_its_retriever_and_scores_with_it(bench: Benchmark, tmp_path: Path) -> None:
    from apibank_lib.runs.config import RunConfig
    from apibank_lib.runs.folder import RunFolder
    from apibank_lib.runs.runner import run
    from apibank_lib.runs.scoring import score_run

    results = {}
    for name in (None, "embedding", "bm25"):
        result = run(RunConfig("oracle", levels=(2,), retriever=name, out=str(tmp_path / str(name))), bench=bench, progress=False)
        metrics = score_run(result.path, bench=bench)
        used = name or V2.retriever
        assert metrics.retriever == used and RunFolder(result.path).read_info().retriever == used
        searches = [j for j in RunFolder(result.path).read_judgments() if j.gold_api == "ToolSearcher"]
        assert searches and {j.retriever for j in searches} == {used}
        results[used] = metrics.levels["2"].api_correct
    # The oracle's searches are the gold keywords: both embedding retrievers find every gold API, BM25 misses some.
    assert results[V2.retriever] == results["embedding"] == metrics.levels["2"].api_samples > results["bm25"]
    # Re-grading with another retriever is a scoring option; the metrics say which one graded.
    regraded = score_run(tmp_path / "None", bench=bench, retriever="bm25", write=False)
    assert regraded.retriever == "bm25" and regraded.levels["2"].api_correct == results["bm25"]


def test_episodes_are_graded_only_with_the_retriever_they_searched_with(bench: Benchmark, tmp_path: Path) -> None:
    from apibank_lib.runs.config import RunConfig
    from apibank_lib.runs.runner import run
    from apibank_lib.runs.scoring import score_run

    result = run(
        RunConfig("oracle", levels=(3,), level3="loop", limit=2, retriever="bm25", out=str(tmp_path / "r")),
        bench=bench,
        progress=False,
    )
    assert score_run(result.path, bench=bench, write=False).retriever == "bm25"
    with pytest.raises(ConfigError, match="searched with 'bm25'"):
        score_run(result.path, bench=bench, retriever="embedding", write=False)


def test_a_sandbox_searches_with_a_named_retriever(bench: Benchmark) -> None:
    box = bench.sandbox(2, searcher="bm25")
    assert [s.name for s, _ in box.search_tools("book a hotel room", 1)] == ["BookHotel"]
    assert box.execute("[ToolSearcher(keywords='book a hotel room')]").output["name"] == "BookHotel"


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("add event to agenda", "create"),
        ("Is there an alarm set for 6:30 tomorrow?", "read"),  # a look-up question, though it says "set"
        ("Can you add a dinner to my agenda?", "create"),  # a request: its verb decides
        ("call off the design review", "delete"),
        ("cancelled bookings", "delete"),
        ("Can the sync be moved to Wednesday?", "update"),
        ("rescheduling my dentist", "update"),
        ("what's my balance", "read"),
        ("meeting info", "read"),
        ("weather now", None),
        ("", None),
    ],
)
def test_queries_are_classed_by_the_action_they_ask_for(text: str, action: str | None) -> None:
    assert query_action(text) == action


def test_apis_are_classed_by_their_names_verb_else_their_description() -> None:
    assert api_action(_schema("DeleteMeeting", "Remove a meeting.")) == "delete"
    assert api_action(_schema("ModifyPassword", "Change the password.")) == "update"
    assert api_action(_schema("AppointmentRegistration", "Book a visit with a doctor.")) == "create"
    assert api_action(_schema("Calculator", "Evaluate a formula.")) is None


def test_every_searchable_api_has_example_phrasings(bench: Benchmark) -> None:
    phrasings = load_phrasings()
    for level in (2, 3):
        for schema in bench.toolset(level).searchable():
            assert len(phrasings.get(schema.name, ())) >= 3, schema.name


def test_a_broken_phrasings_file_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("phrasings:\n  AddAlarm: wake me\n")
    with pytest.raises(DataError, match=r"p\.yaml: the phrasings of AddAlarm must be a list of non-empty texts"):
        load_phrasings(bad)
    bad.write_text("- just a list\n")
    with pytest.raises(DataError, match="needs a 'phrasings' mapping"):
        load_phrasings(bad)
    assert load_phrasings(tmp_path / "missing.yaml") == {} and load_phrasings(None) == {}


def test_enriched_scores_phrasings_and_penalises_the_wrong_action() -> None:
    pool = [
        _schema("AddMeeting", "Create a meeting with a topic, time and attendees."),
        _schema("DeleteMeeting", "Remove a meeting with a topic, time and attendees."),
        _schema("QueryStock", "Get the price of a company's stock."),
    ]
    plain = EnrichedRetriever(pool, phrasings={}, weight=0.6, penalty=0.0)
    base = plain.scores("ticker quote")
    with_examples = EnrichedRetriever(pool, phrasings={"QueryStock": ["ticker quote", "share price"]}, weight=0.6, penalty=0.0)
    assert with_examples.scores("ticker quote")[2] == pytest.approx(0.4 * base[2] + 0.6 * 1.0, abs=1e-5)
    assert with_examples.scores("ticker quote")[:2] == pytest.approx(base[:2], abs=1e-6)  # no phrasings: the paper text
    penalised = EnrichedRetriever(pool, phrasings={}, weight=0.6, penalty=0.5)
    diff = plain.scores("cancel the meeting") - penalised.scores("cancel the meeting")
    assert diff == pytest.approx([0.5, 0.0, 0.5], abs=1e-6)  # creating and looking up are the wrong actions
    assert penalised.search("cancel the meeting", k=1)[0][0].name == "DeleteMeeting"


def test_the_enriched_setting_is_the_best_on_the_tuning_part(bench: Benchmark) -> None:
    grid = tune_enriched(bench, weights=(0.0, ENRICHED_WEIGHT, 1.0), penalties=(0.0, ENRICHED_PENALTY, 0.15))
    best = grid.iloc[0]
    assert (best["weight"], best["penalty"]) == (ENRICHED_WEIGHT, ENRICHED_PENALTY)
    assert set(grid["queries"]) == {sum(q.split == "tuning" for q in retrieval_queries(bench))}


def test_the_v2_retriever_beats_the_papers_recipe_on_held_out_queries(bench: Benchmark) -> None:
    cmp = compare_retrievers(bench, V2.retriever, PAPER.retriever, split="held-out", n_boot=500)
    assert cmp["low"] > 0 and cmp["p_value"] < 0.01, cmp  # the whole interval of the difference is above zero
    assert all(r["rank"] == 1 for r in rank_queries(bench, gold_searches(bench), V2.retriever))  # every gold search of our benchmark


# --- the gold API of a search, query sets, and the rule that picks v2's retriever ----------------------------------


def test_a_gold_search_is_for_the_api_the_dialogue_then_calls(release: Benchmark) -> None:
    # The release's level-2 dialogue AddMeeting-level-3-1 searches, the recorded output is QueryMeeting, and the
    # dialogue goes on to call AddMeeting: the benchmark asks for AddMeeting, as v2 grades the search.
    sample = next(
        s
        for s in release.samples(2, "api")
        if s.dialogue_id == "AddMeeting-level-3-1" and not s.duplicate and s.gold.api_name == "ToolSearcher"
    )
    assert [d["name"] for d in sample.gold.output if d["name"] != "GetUserToken"] == ["QueryMeeting"]
    found = [q for q in gold_searches(release) if q.source == "AddMeeting-level-3-1"]
    assert [(q.api, q.written) for q in found] == [("AddMeeting", sample.gold.args["keywords"])]
    assert found[0].group == f"{found[0].written}\x00AddMeeting" and found[0].split == split_of(found[0].written, "AddMeeting")


class _OneSearch:
    """A benchmark stand-in with one level-2 search, its needed API given or not."""

    def __init__(self, needed: str | None) -> None:
        output = [{"name": "GetUserToken"}, {"name": "QueryAlarm"}]
        self.sample = ApiCallSample(
            2, "d", 0, (), ("ToolSearcher",), ApiRecord("ToolSearcher", {"keywords": "my alarms"}, {"output": output}), needed_api=needed
        )

    def samples(self, level: int, kind: str | None = None) -> list[ApiCallSample]:
        return [self.sample] if level == 2 else []


def test_a_gold_search_with_no_call_after_it_is_for_its_recorded_output() -> None:
    assert [q.api for q in gold_searches(_OneSearch("AddAlarm"))] == ["AddAlarm"]  # type: ignore[arg-type]
    assert [q.api for q in gold_searches(_OneSearch(None))] == ["QueryAlarm"]  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def corpus_report():  # type: ignore[no-untyped-def]
    from apibank_lib.data.check_train import check_corpus
    from apibank_lib.data.formats.train_corpus import default_corpus_dir

    return check_corpus(default_corpus_dir())


def test_the_corpus_set_is_every_search_of_the_corpus_for_the_api_called_next(corpus_report, bench: Benchmark) -> None:  # type: ignore[no-untyped-def]
    queries = corpus_searches(corpus_report)
    expected = []  # read from the corpus as written: each search and the first call after it
    for d in corpus_report.accepted:
        calls = [t.call for t in d.api_turns if t.call is not None]
        for i, call in enumerate(calls):
            if call.name == "ToolSearcher":
                expected.append((call.args["keywords"], next(c.name for c in calls[i + 1 :] if c.name != "ToolSearcher")))
    assert [(q.written, q.api) for q in queries] == expected
    assert len(queries) == 1102  # data/train/README.md: 1,102 searches
    apis = set(corpus_report.schemas)
    benchmark_apis = {s.name for level in (2, 3) for s in bench.toolset(level).searchable()}
    assert {q.api for q in queries} <= apis and len(apis) == 360 and not apis & benchmark_apis
    assert {q.kind for q in queries} == {"corpus"} and {q.split for q in queries} == {"independent"}
    assert {q.level for q in queries} == {2, 3}


def test_the_enriched_retriever_falls_back_to_the_papers_text_for_apis_without_phrasings(corpus_report) -> None:  # type: ignore[no-untyped-def]
    schemas = list(corpus_report.schemas.values())
    enriched, plain = make_retriever("enriched", schemas), make_retriever("embedding", schemas)
    assert not any(api in load_phrasings() for api in corpus_report.schemas)
    query = "weather at the campsite"  # no action: no penalty either
    assert query_action(query) is None
    assert enriched.scores(query) == pytest.approx(plain.scores(query), abs=1e-6)  # type: ignore[attr-defined]
    assert [s.name for s, _ in enriched.search(query, k=3)] == [s.name for s, _ in plain.search(query, k=3)]


def test_independent_sets_say_what_they_are_independent_of(bench: Benchmark, tmp_path: Path) -> None:
    from apibank_lib.data.formats.train_corpus import default_corpus_dir

    sets = {qs.name: qs for qs in independent_sets(bench, corpus=default_corpus_dir() / "astronomy.yaml")}
    assert list(sets) == ["corpus", "gold", "rewordings held-out", "rewordings tuning"]
    assert [sets[n].independent for n in sets] == ["yes", "partly", "partly", "no"]
    assert {q.source for q in sets["corpus"].queries} and all(q.domain == "Astronomy" for q in sets["corpus"].queries)
    assert [s.name for s in sets["corpus"].candidates[2]] == [s.name for s in sets["corpus"].candidates[3]]
    assert len(sets["corpus"].candidates[2]) == 6
    assert sets["gold"].queries == tuple(gold_searches(bench))
    assert {q.split for q in sets["rewordings held-out"].queries} == {"held-out"}
    assert {q.split for q in sets["rewordings tuning"].queries} == {"tuning"}
    rewordings = sets["rewordings held-out"].queries + sets["rewordings tuning"].queries
    assert "gold" not in {q.kind for q in rewordings}
    assert len(rewordings) == sum(q.kind != "gold" for q in retrieval_queries(bench))


def _query(keywords: str, api: str, group: str | None = None) -> RetrievalQuery:
    return RetrievalQuery(group or keywords, keywords, api, 2, "gold", "held-out", "")


def test_the_set_table_measures_each_set_and_pools_the_chosen_ones() -> None:
    pool = {2: POOL}
    a = QuerySet("corpus", (_query("wake me up at seven", "AddAlarm"), _query("ticker price", "QueryStock")), pool, "yes", "")
    b = QuerySet("gold", (_query("hotel room for two nights", "BookHotel"), _query("a stay", "BookHotel", "g")), pool, "partly", "")
    tuning = QuerySet("rewordings tuning", (_query("stock", "QueryStock"),), pool, "no", "")
    empty = QuerySet("rewordings held-out", (), pool, "partly", "")
    table = set_table([a, b, tuning, empty], ["bm25"], n_boot=50)
    assert list(table["set"]) == ["corpus", "corpus", "gold", "gold", "rewordings tuning", "rewordings tuning", POOLED, POOLED]
    assert list(table["retriever"][:2]) == ["embedding", "bm25"]  # the reference is measured first, always
    pooled = table[table["set"] == POOLED].set_index("retriever")
    assert list(pooled["queries"]) == [4, 4] and pooled.loc["embedding", "independent"] == "partly"
    for name in ("embedding", "bm25"):
        parts = table[(table["retriever"] == name) & table["set"].isin(["corpus", "gold"])]
        assert pooled.loc[name, "hit@1"] == pytest.approx((parts["hit@1"] * parts["queries"]).sum() / 4, abs=0.01)
    assert table[table["retriever"] == "embedding"]["vs embedding"].isna().all()
    bm25 = table[table["retriever"] == "bm25"].set_index("set")
    for s in bm25.index:
        ref = table[(table["set"] == s) & (table["retriever"] == "embedding")]["hit@1"].item()
        assert bm25.loc[s, "vs embedding"] == pytest.approx(bm25.loc[s, "hit@1"] - ref, abs=0.01)
        # A handful of queries in a few groups: too few for an interval, which is left blank.
        assert bm25.loc[s, "groups"] < 10 and pd.isna(bm25.loc[s, "hit@1 low"]) and pd.isna(bm25.loc[s, "hit@3 high"])


def _rule_table(rows: dict[str, dict[str, float]]):  # type: ignore[no-untyped-def]
    import pandas as pd

    return pd.DataFrame([{"set": s, "retriever": r, "hit@1": v} for r, by_set in rows.items() for s, v in by_set.items()])


RULE_REFERENCE = {"corpus": 95.0, "gold": 100.0, "rewordings held-out": 84.0, "rewordings tuning": 80.0, POOLED: 94.0}


def test_the_rule_picks_the_best_pooled_of_the_retrievers_never_below_the_papers_recipe() -> None:
    table = _rule_table(
        {
            "embedding": RULE_REFERENCE,
            "a": {"corpus": 95.0, "gold": 100.0, "rewordings held-out": 90.0, "rewordings tuning": 60.0, POOLED: 95.0},
            "b": {"corpus": 96.0, "gold": 100.0, "rewordings held-out": 85.0, "rewordings tuning": 99.0, POOLED: 96.0},
            "c": {"corpus": 99.0, "gold": 99.5, "rewordings held-out": 99.0, "rewordings tuning": 99.0, POOLED: 99.0},
        }
    )
    name, why = choose_default(table)
    # c is best pooled but below the reference on gold; a and b qualify (equal counts as not below; the tuning
    # part does not count), and b is the higher pooled.
    assert name == "b", why
    assert "b: corpus 96.00, gold 100.00, rewordings held-out 85.00, pooled 96.00" in why and "(a also qualifies)" in why
    assert "tuning" not in why


def test_the_rule_keeps_the_papers_recipe_when_no_retriever_qualifies() -> None:
    table = _rule_table(
        {
            "embedding": RULE_REFERENCE,
            "tied": {**RULE_REFERENCE, "rewordings tuning": 99.0},  # equal everywhere that counts: not better pooled
            "worse": {**RULE_REFERENCE, "corpus": 94.9, POOLED: 97.0},
        }
    )
    name, why = choose_default(table)
    assert name == "embedding", why
    assert "tied is not above it pooled (94.00)" in why and "worse is below it on corpus" in why
    with pytest.raises(ConfigError, match="needs embedding's rows on the pooled total"):
        choose_default(table[table["set"] != POOLED])


def test_the_v2_retriever_is_the_one_the_rule_chose_on_the_measured_table() -> None:
    import pandas as pd

    measured = Path(__file__).resolve().parent.parent / "results" / "bundled" / "retrieval_sets.csv"
    if not measured.is_file():
        pytest.skip("results/bundled/retrieval_sets.csv is made by apibank retrieval --sets --save retrieval_sets")
    assert choose_default(pd.read_csv(measured))[0] == V2.retriever


def test_the_retrieval_command_prints_the_sets_and_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from apibank_lib.cli.commands import main
    from apibank_lib.data.formats.train_corpus import default_corpus_dir

    corpus = str(default_corpus_dir() / "astronomy.yaml")
    assert main(["retrieval", "--sets", "--corpus", corpus, "--retriever", "bm25", "--n-boot", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["set"] for s in out["sets"]] == ["corpus", "gold", "rewordings held-out", "rewordings tuning"]
    assert {r["retriever"] for r in out["table"]} == {"embedding", "bm25"} and out["table"][-1]["set"] == POOLED
    assert out["default"] == "embedding" and out["why"].startswith("no retriever is not below embedding")
    assert out["v2_retriever"] == V2.retriever


def test_committed_retrieval_tables_leave_this_machines_timings_out() -> None:
    import pandas as pd

    from apibank_lib.report.retrieval import TIMING_COLUMNS, without_timings

    table = pd.DataFrame({"retriever": ["embedding"], "hit@1": [90.0], "warm ms (median)": [3.1], "cold ms": [120.0]})
    assert list(without_timings(table).columns) == ["retriever", "hit@1"]
    assert set(TIMING_COLUMNS) <= set(table.columns)  # the table keeps them for showing
