"""Twin benchmarks: the same tasks under new API and parameter names and new values, served by a renaming view of
the tools over rewritten data, with the gold checked by execution and every sample that does not carry over listed."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from apibank_lib.core.errors import ConfigError, UnknownToolError
from apibank_lib.core.types import ApiCall, ApiCallSample
from apibank_lib.data.datasets import Benchmark, level_statistics, load_benchmark
from apibank_lib.data.twin_values import collect_values
from apibank_lib.data.twins import TWIN_FILE, make_renaming, twin_key
from apibank_lib.env.renaming import KEPT_APIS, Renaming, renamed_toolset
from apibank_lib.env.values import ValueMap, date_mentions
from apibank_lib.grading.grader import Grader
from apibank_lib.grading.replay import replay
from apibank_lib.grading.twins import make_twin
from apibank_lib.prompting.chat import build_chat
from apibank_lib.prompting.prompts import target_text
from tests.conftest import OFFICIAL_FIXTURE

CHANGE_SETS = [("names",), ("parameters",), ("values",), ("names", "parameters", "values")]


@pytest.fixture(scope="module", params=CHANGE_SETS, ids=lambda c: "+".join(c))
def twin(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Benchmark, Benchmark, dict]:
    """(source, twin, report): each change alone on the official-layout fixture, all of them on the bundled data."""
    out = tmp_path_factory.mktemp("twin")
    src = None if len(request.param) > 1 else OFFICIAL_FIXTURE
    report = make_twin(src, out, seed=0, change=request.param)
    return load_benchmark(src), load_benchmark(out), report.to_dict()


def test_a_renamed_tool_runs_as_the_original_under_its_new_names(bench: Benchmark) -> None:
    renaming = Renaming({"AddAlarm": "CreateWakeUpCall"}, {"time": "moment"})
    box = bench.sandbox(1)
    box.toolset = renamed_toolset(bench.toolset(1), renaming)
    token = box.execute(ApiCall("GetUserToken", {"username": "EvaRossi", "password": "gelato!42"})).output["token"]
    result = box.execute(ApiCall("CreateWakeUpCall", {"token": token, "moment": "2023-04-01 05:30:00"}))
    assert result.api_name == "CreateWakeUpCall" and result.input == {"token": token, "moment": "2023-04-01 05:30:00"}
    assert result.output == "success"
    with pytest.raises(UnknownToolError):  # the old name is gone
        box.execute(ApiCall("AddAlarm", {"token": token, "time": "2023-04-01 05:30:00"}))
    schema = box.toolset.schema("CreateWakeUpCall")
    assert list(schema.input_parameters) == ["token", "moment"] and schema.description == bench.toolset(1).schema("AddAlarm").description
    with pytest.raises(ValueError, match="mechanism"):
        Renaming({"ToolSearcher": "Finder"})
    with pytest.raises(ValueError, match="same new name"):
        Renaming({"AddAlarm": "X", "AddAgenda": "X"})


def test_the_renaming_keeps_meaning_and_the_mechanism(tmp_path: Path) -> None:
    r = make_renaming(0, ["names", "parameters"])
    assert r.api("AddAlarm") != "AddAlarm" and all(r.api(n) == n for n in KEPT_APIS)
    assert r.parameter("token") == "token" and r.parameter("keywords") == "keywords"
    assert all(n.isidentifier() for n in [*r.apis.values(), *r.parameters.values()])
    assert make_renaming(0, ["names"]).parameters == {} and make_renaming(0, ["parameters"]).apis == {}
    assert make_renaming(1, ["names"]).apis != make_renaming(0, ["names"]).apis  # the seed chooses among synonyms
    with pytest.raises(ConfigError, match="colours"):
        make_renaming(0, ["colours"])
    with pytest.raises(ConfigError, match="no new name"):
        make_renaming(0, ["names"], synonyms={"api_words": {}})


def test_the_twin_replays_after_its_listed_exclusions_and_has_the_sources_statistics(twin: tuple) -> None:
    bench, tb, report = twin
    assert (tb.root / TWIN_FILE).is_file() and tb.renaming is not None and tb.name == tb.root.name
    checked = replay(tb)
    for level, figures in checked["levels"].items():
        assert figures["samples_correct"] == figures["samples"] > 0, level
    listed = {e["key"] for e in report["excluded"]}
    assert {f"L{lv}/api/{e['dialogue']}/{e['sample_id']}" for lv, f in checked["levels"].items() for e in f["excluded"]} <= listed
    total = sum(len(bench.samples(level, "api")) for level in (1, 2, 3))
    if "values" in report["change"] and not bench.official:  # history is looked up by the day of the year, which stays
        assert any("does not move with the dates" in e["reason"] for e in report["excluded"])
    assert all(e["reason"] for e in report["excluded"]) and len(listed) < 0.05 * total  # the bundled data: 34 of 1,023
    for level in (1, 2, 3):
        assert len(tb.samples(level)) == len(bench.samples(level))
        source, mine = level_statistics(bench, level), level_statistics(tb, level)
        assert {k: v for k, v in mine.items() if "api" not in k.lower()} == {k: v for k, v in source.items() if "api" not in k.lower()}


def test_the_prompts_show_only_the_new_names_and_values(twin: tuple) -> None:
    _, tb, _ = twin
    renaming = tb.renaming
    old_values = set(renaming.values.exact) | set(renaming.values.words)
    old_apis = set(renaming.apis) - set(renaming.apis.values())
    old_params = set(renaming.parameters) - set(renaming.parameters.values())
    for level in (1, 2):
        for sample in tb.samples(level, "api")[:40]:
            chat = build_chat(sample.context(), tb.toolset(level))
            names = {t["function"]["name"] for t in chat.tools}
            params = {p for t in chat.tools for p in t["function"]["parameters"]["properties"]}
            calls = {c["function"]["name"] for m in chat.messages for c in m.get("tool_calls", [])}
            assert not (names | calls) & old_apis and not params & old_params, sample.key
            said = json.dumps(chat.messages, ensure_ascii=False)
            assert not [v for v in old_values if re.search(rf"(?<![A-Za-z0-9]){re.escape(v)}(?![A-Za-z0-9])", said)], sample.key


def test_the_grader_judges_the_oracle_and_no_call_alike_on_source_and_twin(twin: tuple) -> None:
    bench, tb, report = twin
    excluded = {e["key"] for e in report["excluded"]}
    source_grader, twin_grader = Grader(bench), Grader(tb)
    in_twin = {s.key: s for s in tb.samples(1, "api")}
    pairs = [(src, in_twin[twin_key(src.key, tb.renaming)]) for src in bench.samples(1, "api")[:120]]
    pairs = [(src, tw) for src, tw in pairs if tw.key not in excluded]
    assert len(pairs) >= 20
    for src, tw in pairs:
        assert isinstance(src, ApiCallSample) and isinstance(tw, ApiCallSample)
        assert tw.gold.api_name == tb.renaming.api(src.gold.api_name)
        for answer in (target_text, lambda s: "I cannot help with that."):
            a, b = source_grader.judge_api(src, answer(src)), twin_grader.judge_api(tw, answer(tw))
            assert (a.correct, a.category) == (b.correct, b.category), (src.key, tw.key)


def test_a_twin_is_byte_identical_when_made_again_and_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    for name in ("a", "b"):
        make_twin(OFFICIAL_FIXTURE, tmp_path / name, seed=3, change=["names", "parameters", "values"])
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    assert json.loads((tmp_path / "a" / TWIN_FILE).read_text())["seed"] == 3
    assert json.loads((tmp_path / "a" / TWIN_FILE).read_text())["renaming"]["values"]["date_shift_days"] % 7 == 0
    with pytest.raises(ConfigError, match="not empty"):
        make_twin(None, tmp_path / "a", seed=3)
    with pytest.raises(ConfigError, match="twin already"):
        make_twin(tmp_path / "a", tmp_path / "c")


def test_the_gap_table_pairs_samples_across_source_and_twin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from apibank_lib.cli import main
    from apibank_lib.report.twin_gap import twin_gap_table
    from apibank_lib.runs.config import RunConfig
    from apibank_lib.runs.runner import run
    from apibank_lib.runs.scoring import scored

    twin_root = tmp_path / "twin"
    make_twin(None, twin_root, seed=0, change=["names", "parameters"])
    runs = {}
    for model in ("oracle", "heuristic"):
        for data in (None, str(twin_root)):
            runs[model, data] = run(RunConfig(model=model, levels=(1, 2), tasks=("api",), data=data, runs_dir=str(tmp_path / "runs")), progress=False).path
    oracle = twin_gap_table(scored(runs["oracle", None]), scored(runs["oracle", str(twin_root)]))
    assert list(oracle["level"]) == [1, 2, "all"] and set(oracle["data"]) == {"bundled"} and (oracle["source - twin"] == 0).all() and (oracle["twin %"] == 100).all()
    assert oracle.loc[oracle["level"] == 1, "samples"].item() == 565  # every level-1 sample pairs (none excluded there)
    heuristic = twin_gap_table(scored(runs["heuristic", None]), scored(runs["heuristic", str(twin_root)]))
    # The heuristic fills arguments by parameter names it knows: renamed parameters cost it, as they should.
    assert (heuristic["source - twin"] > 0).all() and heuristic["low"].notna().all()
    assert main(["twin-gap", str(runs["oracle", None]), str(runs["oracle", str(twin_root)]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["twin %"] == 100
    with pytest.raises(ConfigError, match="not a twin"):
        twin_gap_table(scored(runs["oracle", str(twin_root)]), scored(runs["oracle", None]))


def test_a_twin_of_a_release_copy_keeps_its_layout_and_replays(release: Benchmark, tmp_path: Path) -> None:
    report = make_twin(OFFICIAL_FIXTURE, tmp_path / "twin", seed=0, change=["names", "parameters"]).to_dict()
    tb = load_benchmark(tmp_path / "twin")
    assert tb.official and tb.renaming is not None and tb.name == "twin"
    manifest = json.loads((tmp_path / "twin" / TWIN_FILE).read_text())
    assert "test-data/level-1-api.json" in manifest["left_out"]  # rendered prompts hold the old names in their text
    assert tb.databases["Dictionary"] == release.databases["Dictionary"]  # recordings harvested under the tools' names
    for level, figures in replay(tb)["levels"].items():
        assert figures["samples_correct"] == figures["samples"], level
    reasons = " ".join(e["reason"] for e in report["excluded"])
    assert "erratum" in reasons  # what the source's errata cover is left out, named
    excluded = {e["key"] for e in report["excluded"]}
    in_twin = {s.key: s for s in tb.samples(1, "api")}
    source_grader, twin_grader = Grader(release), Grader(tb)
    for src in release.samples(1, "api"):
        tw = in_twin[twin_key(src.key, tb.renaming)]
        if tw.key in excluded:
            continue
        a, b = source_grader.judge_api(src, target_text(src)), twin_grader.judge_api(tw, target_text(tw))
        assert (a.correct, a.category) == (b.correct, b.category) and b.correct, tw.key


def test_a_value_map_rewrites_each_form_once_and_keeps_weekdays() -> None:
    values = ValueMap({"AliceMorgan": "NoraFischer", "pass123": "kqz804", "alice.morgan@mail.org": "nora.fischer@mail.org"},
                      {"Alice": "Nora", "Morgan": "Fischer"}, 14)
    text = ("On April 3rd, 2023 Alice Morgan (AliceMorgan, pass123, alice.morgan@mail.org) met Dr. Morgan; "
            "then 2023-04-03 10:00:00, 30 March, Dec. 25, the 3rd of May 2023, in 1794-03-14 and 3/4/2023.")
    assert values.text(text) == (
        "On April 17th, 2023 Nora Fischer (NoraFischer, kqz804, nora.fischer@mail.org) met Dr. Fischer; "
        "then 2023-04-17 10:00:00, 13 April, Jan. 8, the 17th of May 2023, in 1794-03-14 and 3/4/2023.")
    assert values.json({"AliceMorgan": ["2023-04-03", 3, None]}) == {"NoraFischer": ["2023-04-17", 3, None]}
    assert values.text("pass1234 Alicea") == "pass1234 Alicea"  # whole values and words only
    assert ValueMap.from_dict(values.to_dict()) == values
    with pytest.raises(ValueError, match="weekdays"):
        ValueMap(date_shift_days=10)
    with pytest.raises(ValueError, match="one-to-one"):
        ValueMap({"a1234": "b1234", "b1234": "c1234"})
    assert date_mentions(dt.date(2023, 4, 17), "see you on 17 Apr") and not date_mentions(dt.date(2023, 4, 17), "the 17th")


def test_the_value_map_of_a_benchmark_keeps_people_and_formats(tmp_path: Path) -> None:
    values = collect_values(OFFICIAL_FIXTURE, 0)
    assert values.date_shift_days in range(35, 85, 7) and collect_values(OFFICIAL_FIXTURE, 1) != values
    for old, new in values.exact.items():
        assert len(old) == len(new) or "@" in old or any(w in old for w in values.words), (old, new)
        if "@" in old:
            assert old.split("@")[1] == new.split("@")[1]  # the domain stays
        elif not any(w in old for w in values.words):  # same format: letters for letters of the same case, digits
            assert [c.isdigit() or (c.isupper(), c.islower()) for c in old] == [c.isdigit() or (c.isupper(), c.islower()) for c in new]
    assert all(new[0].isupper() and new.isalpha() for new in values.words.values())
    assert not set(values.words.values()) & set(re.findall(r"[A-Za-z]+", (OFFICIAL_FIXTURE / "init_database" / "Account.json").read_text()))


def test_the_clock_moves_with_the_dates_and_a_date_stated_by_its_day_alone_is_excluded(release: Benchmark, tmp_path: Path) -> None:
    make_twin(OFFICIAL_FIXTURE, tmp_path / "twin", seed=0, change=["values"])
    tb = load_benchmark(tmp_path / "twin")
    shift = tb.renaming.values.date_shift_days
    today = tb.sandbox(1).execute(ApiCall("GetToday", {})).output
    assert dt.date.fromisoformat(today) - dt.date.fromisoformat(release.sandbox(1).execute(ApiCall("GetToday", {})).output) == dt.timedelta(shift)
    from apibank_lib.grading.twins import _unstated
    assert _unstated("date", "2023-05-02", "2023-06-27", "book it for May 2nd", "book it for June 27th") is None
    assert "form the twin does not rewrite" in _unstated("date", "2023-05-02", "2023-06-27", "on 2023-05-02", "on 2023-05-02")
    assert "nor worked out" in _unstated("date", "2023-05-02", "2023-06-27", "on the 2nd at noon", "on the 2nd at noon")
    assert _unstated("date", "2023-04-01", "2023-05-27", "tomorrow morning", "tomorrow morning") is None
    assert "another year" in _unstated("date", "2023-10-12", "2024-01-04", "on October 12, 2023", "on January 4, 2024")
    assert "form the twin does not rewrite" in _unstated("patient_name", "Nora Quinn", "Edith Quinn", "for Nora Quinn", "for nora Quinn")


def test_a_limited_run_draws_the_same_dialogues_on_source_and_twin(twin: tuple) -> None:
    from apibank_lib.runs.config import RunConfig, plan

    bench, tb, _ = twin
    config = RunConfig(model="oracle", levels=(1, 2, 3), limit=8, tasks=("api",), level3="both")
    source = {twin_key(item.key, tb.renaming) for item in plan(bench, config)}
    assert source == {item.key for item in plan(tb, config)} and len(source) >= 24  # a twin's files sort otherwise
    assert source != {twin_key(item.key, tb.renaming) for item in plan(bench, replace(config, subset_seed=1))}


def test_the_heuristic_reads_the_new_values_as_it_read_the_old(tmp_path: Path) -> None:
    """It fills arguments from the dialogue's words: a values twin changes what it reads, not whether it finds it."""
    from apibank_lib.runs.config import RunConfig
    from apibank_lib.runs.runner import run
    from apibank_lib.runs.scoring import scored

    make_twin(OFFICIAL_FIXTURE, tmp_path / "twin", seed=0, change=["values"])
    tb = load_benchmark(tmp_path / "twin")
    source, twin = (
        scored(run(RunConfig(model="heuristic", levels=(1, 2), tasks=("api",), data=str(data), runs_dir=str(tmp_path / "runs")), progress=False).path)
        for data in (OFFICIAL_FIXTURE, tmp_path / "twin")
    )
    theirs = {j.key: j for j in twin.judgments if j.kind == "api" and j.excluded is None}
    pairs = [(j, theirs[twin_key(j.key, tb.renaming)]) for j in source.judgments
             if j.kind == "api" and j.excluded is None and twin_key(j.key, tb.renaming) in theirs]
    assert len(pairs) >= 30 and any(a.correct for a, _ in pairs)
    # Right and wrong alike at level 1; a wrong answer's category may change, and a level-2 search may rank otherwise,
    # since its guess of the API embeds every word of the user's message, the names and passwords included.
    level1 = [(a, b) for a, b in pairs if a.level == 1]
    assert len(level1) >= 20 and [a.correct for a, _ in level1] == [b.correct for _, b in level1]
    assert sum(a.correct == b.correct for a, b in pairs) >= 0.9 * len(pairs)


def test_a_training_corpus_has_a_twin_the_tester_accepts_as_the_source(tmp_path: Path) -> None:
    from apibank_lib.data.check_train import check_corpus
    from apibank_lib.data.formats.train_corpus import default_corpus_dir, read_corpus_file
    from apibank_lib.data.twin_corpus import is_corpus, write_corpus_twin
    from apibank_lib.training.export import examples_from_corpus

    source = tmp_path / "corpus"  # six domains of ours (the whole corpus: 30 s of checking)
    source.mkdir()
    for path in sorted(default_corpus_dir().glob("*.yaml"))[:6]:
        shutil.copy(path, source / path.name)
    assert is_corpus(source) and not is_corpus(OFFICIAL_FIXTURE)
    manifest = write_corpus_twin(source, tmp_path / "a", seed=0)
    write_corpus_twin(source, tmp_path / "b", seed=0)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == manifest["files"] + 1 and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    renaming = Renaming.from_dict(manifest["renaming"])
    assert len(renaming.apis) >= 30 and len(renaming.parameters) >= 40 and "ToolSearcher" not in renaming.apis
    before, after = check_corpus(source), check_corpus(tmp_path / "a")
    assert before.counts() == after.counts() and len(examples_from_corpus(after)) == len(examples_from_corpus(before))
    called = {t.call.name for p in sorted((tmp_path / "a").glob("*.yaml")) for d in read_corpus_file(p).dialogues for t in d.turns if t.call}
    assert not called & set(renaming.apis) and called & set(renaming.apis.values())
    # The benchmark's twins keep their renaming: the corpus words only fill what the benchmark's tables lack.
    assert make_renaming(0, ["names"]).api("AddAlarm") == "CreateWakeUpCall"
    with pytest.raises(ConfigError, match="corpus"):
        write_corpus_twin(source, tmp_path / "c", change=["values"])
    from apibank_lib.cli import main

    assert main(["twin", "--data", str(source), "--out", str(tmp_path / "d"), "--json"]) == 0  # the command finds a corpus
    assert (tmp_path / "d" / "twin.json").read_bytes() == (tmp_path / "a" / "twin.json").read_bytes()
