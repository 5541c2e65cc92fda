"""Twin benchmarks: the same tasks under new API and parameter names, served by a renaming view of the tools,
with the gold checked by execution and every sample that does not carry over listed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apibank_lib.core.errors import ConfigError, UnknownToolError
from apibank_lib.core.types import ApiCall, ApiCallSample
from apibank_lib.data.datasets import Benchmark, level_statistics, load_benchmark
from apibank_lib.data.twins import TWIN_FILE, make_renaming, twin_key
from apibank_lib.env.renaming import KEPT_APIS, Renaming, renamed_toolset
from apibank_lib.grading.grader import Grader
from apibank_lib.grading.replay import replay
from apibank_lib.grading.twins import make_twin
from apibank_lib.prompting.chat import build_chat
from apibank_lib.prompting.prompts import target_text
from tests.conftest import OFFICIAL_FIXTURE


@pytest.fixture(scope="module", params=[("names",), ("parameters",), ("names", "parameters")], ids=lambda c: "+".join(c))
def twin(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Benchmark, dict]:
    out = tmp_path_factory.mktemp("twin")
    report = make_twin(None, out, seed=0, change=request.param)
    return load_benchmark(out), report.to_dict()


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
    with pytest.raises(ConfigError, match="values"):
        make_renaming(0, ["values"])
    with pytest.raises(ConfigError, match="no new name"):
        make_renaming(0, ["names"], synonyms={"api_words": {}})


def test_the_twin_replays_after_its_listed_exclusions_and_has_the_sources_statistics(bench: Benchmark, twin: tuple) -> None:
    tb, report = twin
    assert (tb.root / TWIN_FILE).is_file() and tb.renaming is not None and tb.name == tb.root.name
    checked = replay(tb)
    for level, figures in checked["levels"].items():
        assert figures["samples_correct"] == figures["samples"] > 0, level
    listed = {e["key"] for e in report["excluded"]}
    assert {f"L{lv}/api/{e['dialogue']}/{e['sample_id']}" for lv, f in checked["levels"].items() for e in f["excluded"]} <= listed
    assert all(e["reason"] for e in report["excluded"]) and len(listed) < 20
    for level in (1, 2, 3):
        assert len(tb.samples(level)) == len(bench.samples(level))
        source, mine = level_statistics(bench, level), level_statistics(tb, level)
        assert {k: v for k, v in mine.items() if "api" not in k.lower()} == {k: v for k, v in source.items() if "api" not in k.lower()}


def test_the_prompts_show_only_the_new_names(twin: tuple) -> None:
    tb, _ = twin
    renaming = tb.renaming
    old_apis = set(renaming.apis) - set(renaming.apis.values())
    old_params = set(renaming.parameters) - set(renaming.parameters.values())
    for level in (1, 2):
        for sample in tb.samples(level, "api")[:40]:
            chat = build_chat(sample.context(), tb.toolset(level))
            names = {t["function"]["name"] for t in chat.tools}
            params = {p for t in chat.tools for p in t["function"]["parameters"]["properties"]}
            calls = {c["function"]["name"] for m in chat.messages for c in m.get("tool_calls", [])}
            assert not (names | calls) & old_apis and not params & old_params, sample.key


def test_the_grader_judges_the_oracle_and_no_call_alike_on_source_and_twin(bench: Benchmark, twin: tuple) -> None:
    tb, report = twin
    excluded = {e["key"] for e in report["excluded"]}
    source_grader, twin_grader = Grader(bench), Grader(tb)
    in_twin = {s.key: s for s in tb.samples(1, "api")}
    pairs = [(src, in_twin[twin_key(src.key, tb.renaming)]) for src in bench.samples(1, "api")[:120]]
    for src, tw in pairs:
        assert isinstance(src, ApiCallSample) and isinstance(tw, ApiCallSample) and tw.key not in excluded
        assert tw.gold.api_name == tb.renaming.api(src.gold.api_name)
        for answer in (target_text, lambda s: "I cannot help with that."):
            a, b = source_grader.judge_api(src, answer(src)), twin_grader.judge_api(tw, answer(tw))
            assert (a.correct, a.category) == (b.correct, b.category), (src.key, tw.key)


def test_a_twin_is_byte_identical_when_made_again_and_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    for name in ("a", "b"):
        make_twin(None, tmp_path / name, seed=3, change=["names"])
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    assert json.loads((tmp_path / "a" / TWIN_FILE).read_text())["seed"] == 3
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
