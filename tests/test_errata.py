"""Grading that holds on a real release: searches judged by the API the dialogue needed, errata checked on the copy
loaded before they apply, and protocol versions in every result (re-scored only when asked).

The release is not in the repository: ``tests/fixtures/official`` (written by us) reproduces each kind of record,
and ``tests/fixtures/official_errata.yaml`` names them.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from apibank_lib.cli.commands import main
from apibank_lib.core.errors import DataError
from apibank_lib.core.types import ApiCall, ApiRecord
from apibank_lib.data.datasets import Benchmark, needed_api
from apibank_lib.data.errata import load_errata, verify
from apibank_lib.env.protocols import PAPER, V2
from apibank_lib.grading.grader import Grader
from apibank_lib.grading.replay import replay
from apibank_lib.prompting.prompts import target_text
from apibank_lib.report import analysis
from apibank_lib.runs.config import RunConfig
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.runner import run
from apibank_lib.runs.scoring import OtherVersion, score_run

ROOT = Path(__file__).resolve().parent / "fixtures" / "official"
FIXTURE_ERRATA = Path(__file__).resolve().parent / "fixtures" / "official_errata.yaml"


def _rec(name: str, **args: str) -> ApiRecord:
    return ApiRecord(name, dict(args), {"api_name": name, "input": dict(args), "output": None, "exception": None})


def test_the_api_a_search_is_for_is_the_next_call_it_serves_skipping_the_token_helper() -> None:
    token = _rec("GetUserToken", username="a", password="b")
    add = _rec("AddAlarm", token="t", time="x")
    assert needed_api([token, add]) == "AddAlarm"  # the token is fetched for the call the search was for
    assert needed_api([add, token]) == "AddAlarm"
    assert needed_api([token]) == "GetUserToken"  # nothing else follows: the token was the need
    assert needed_api([token, _rec("Calculator", formula="1+1")]) == "GetUserToken"  # no later call takes a token
    assert needed_api([_rec("ToolSearcher", keywords="k"), add]) is None  # the next search serves what follows
    assert needed_api([]) is None


def test_samples_carry_the_needed_api_of_their_search(release: Benchmark) -> None:
    searches = {s.dialogue_id: s for s in release.samples(2, "api") if s.gold.api_name == "ToolSearcher" and not s.duplicate}
    assert searches["AddMeeting-level-3-1"].needed_api == "AddMeeting"
    assert searches["DeleteReminder-level-3-1"].needed_api == "DeleteReminder"
    assert all(s.needed_api is None for s in release.samples(1, "api") if s.gold.api_name != "ToolSearcher")


def test_a_search_whose_recorded_output_is_a_sibling_is_judged_by_the_api_needed(release: Benchmark) -> None:
    sample = next(s for s in release.samples(2, "api") if s.dialogue_id == "AddMeeting-level-3-1" and s.sample_id == 0)
    assert sample.gold.output[1]["name"] == "QueryMeeting"  # what an older retriever returned
    v2, paper = Grader(release, V2, errata=FIXTURE_ERRATA), Grader(release, PAPER)
    assert v2.judge_api(sample, target_text(sample)).correct
    judged = paper.judge_api(sample, target_text(sample))
    assert not judged.correct and judged.category.value == "Failed API Retrieval"
    # A search that found the recorded sibling is wrong under v2, and says why.
    sibling = v2.judge_api(sample, "API-Request: [ToolSearcher(keywords='look up my meetings')]")
    assert not sibling.correct and sibling.reason == "the search found QueryMeeting; the dialogue then calls AddMeeting"


def test_with_the_errata_the_v2_replay_of_the_release_is_whole_and_every_correction_is_listed(release: Benchmark) -> None:
    report = replay(release, V2, errata=FIXTURE_ERRATA)
    for level in report["levels"].values():
        assert level["failures"] == [] and level["correct"] == level["gold_calls"]
    assert report["errata"]["errata"] == "official-fixture@3"
    assert sorted(report["errata"]["applied"]) == ["F01", "F02", "F03", "F04"]
    excluded = {(e["dialogue"], e["erratum"]) for lv in report["levels"].values() for e in lv["excluded"]}
    assert excluded == {("TimedSwitch-CancelTimedSwitch-level-2-1", "F01"), ("DeleteReminder-level-3-1", "F04")}
    corrected = {(e["dialogue"], e["erratum"], e["correct"]) for lv in report["levels"].values() for e in lv["corrected"]}
    assert corrected == {("QueryScene-level-1-1", "F02", True), ("AddMeeting-level-3-1", "F03", True)}
    # Under an errata file that names none of them, the same records fail: the errata are what removed them.
    empty = Path(__file__).resolve().parents[1] / "data" / "errata" / "bundled.yaml"
    bare = replay(release, V2, errata=empty)
    failed = {f["dialogue"] for lv in bare["levels"].values() for f in lv["failures"]}
    assert failed == {"TimedSwitch-CancelTimedSwitch-level-2-1", "QueryScene-level-1-1", "DeleteReminder-level-3-1"}


def test_an_entry_is_applied_only_when_its_check_and_content_hash_hold(release: Benchmark) -> None:
    report = Grader(release, V2, errata=FIXTURE_ERRATA).errata
    assert report is not None
    assert report.not_applied["F05"].startswith("the record's content hash differs")
    assert report.not_applied["F06"] == "check gold_call_raises does not hold: the gold call succeeds on this data"
    assert report.not_applied["F07"].startswith("record not found")
    # F05 names a real record with a decision to exclude it, but its hash is another record's: the sample counts.
    sample = next(s for s in release.samples(1, "api") if s.dialogue_id == "AddAlarm-level-1-1" and s.sample_id == 2)
    judged = Grader(release, V2, errata=FIXTURE_ERRATA).judge_api(sample, target_text(sample))
    assert judged.correct and judged.excluded is None and judged.erratum is None
    rows = {r["id"]: r for r in report.rows()}
    assert rows["F02"]["applied"] and rows["F02"]["decision"] == "correct: output_from_database"
    assert not rows["F05"]["applied"] and rows["F05"]["samples"] == 0


def test_paper_applies_no_errata(release: Benchmark) -> None:
    assert Grader(release, PAPER, errata=FIXTURE_ERRATA).errata is None
    assert replay(release, PAPER)["errata"] is None


def test_a_malformed_errata_file_names_the_entry(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nentries:\n  - {id: X1, level: 1, file: f, api: A, defect: typo, decision: exclude, check: {kind: gold_call_raises}, reason: r}\n")
    with pytest.raises(DataError, match=r"entry 1 \(X1\): unknown defect 'typo'"):
        load_errata(bad)
    bad.write_text("version: 1\nentries:\n  - {id: X1, level: 1}\n")
    with pytest.raises(DataError, match="entry 1 has no field 'file'"):
        load_errata(bad)
    bad.write_text("entries: []\n")
    with pytest.raises(DataError, match="'version'"):
        load_errata(bad)


def test_a_scored_run_counts_excluded_samples_apart_and_records_versions(release: Benchmark, tmp_path: Path) -> None:
    config = RunConfig("oracle", levels=(1, 2), tasks=("api",), data=str(ROOT), out=str(tmp_path / "oracle"))
    folder = run(config, bench=release, progress=False).path
    metrics = score_run(folder, bench=release)
    assert metrics.protocol_version == "v2.2" and metrics.errata["errata"] == "api-bank@1"
    assert metrics.levels["2"].excluded_by_errata == 1 and metrics.levels["1"].corrected_by_errata == 1
    assert metrics.levels["2"].api_samples == 13 and metrics.levels["2"].api_accuracy == 1.0
    judgments = RunFolder(folder).read_judgments()
    assert {j.protocol_version for j in judgments} == {"v2.2"}
    assert [j.key for j in judgments if j.excluded] == ["L2/api/DeleteReminder-level-3-1/0"]
    [loaded] = analysis.load_runs([folder], bench=release)
    assert [j.key for j in loaded.excluded] == ["L2/api/DeleteReminder-level-3-1/0"]
    assert all(j.excluded is None for j in loaded.judgments)
    assert loaded.errata == "api-bank@1: 1 excluded, 1 corrected"
    main_row = analysis.main_table([loaded], reported_rows=False, n_boot=10).iloc[0]
    assert main_row["protocol"] == "v2.2" and main_row["errata"] == "api-bank@1: 1 excluded, 1 corrected"
    assert main_row["Retrieve+Call acc"] == 100.0


def _as_if_scored_under_v2_0(folder: Path) -> None:
    """What a folder scored before versions were recorded holds: the protocol's name only."""
    path = folder / "metrics.json"
    metrics = json.loads(path.read_text())
    del metrics["protocol_version"]
    metrics["overall"]["api_accuracy"] = 0.5  # so that a re-score shows
    path.write_text(json.dumps(metrics))


def test_a_run_scored_under_an_older_version_is_read_as_it_is_and_rescored_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = run(RunConfig("oracle", levels=(1,), limit=4, out=str(tmp_path / "old")), progress=False).path
    score_run(folder)
    _as_if_scored_under_v2_0(folder)
    with pytest.warns(UserWarning, match=r"scored under v2\.0; the protocol is now v2\.2"):
        [loaded] = analysis.load_runs([folder])
    assert loaded.protocol_version == "v2.0" and loaded.metrics.overall.api_accuracy == 0.5
    assert analysis.select([loaded], protocol="v2") == [loaded]  # a name still selects it
    assert "protocol_version" not in json.loads((folder / "metrics.json").read_text())  # reading changed nothing
    with pytest.raises(OtherVersion, match=r"--rescore"):
        score_run(folder)
    assert main(["score", str(folder)]) == 2
    assert "scored under v2.0" in capsys.readouterr().err
    assert main(["score", str(folder), "--rescore", "--json"]) == 0
    rescored = json.loads(capsys.readouterr().out)
    assert rescored["protocol_version"] == "v2.2" and rescored["overall"]["api_accuracy"] == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        [again] = analysis.load_runs([folder])
    assert again.protocol_version == "v2.2"


# --- every entry of the release's errata, reproduced on records we make -----------------------------------------

RELEASE_ERRATA = Path(__file__).resolve().parents[1] / "data" / "errata" / "api-bank.yaml"


def _search_output(api: str, bench: Benchmark) -> list[dict[str, object]] | dict[str, object]:
    """A search output as the search tool writes it: the API, after GetUserToken when the API takes a token."""
    schema = bench.toolset(2).get(api).schema().to_dict()
    if "token" in schema["input_parameters"]:
        return [bench.toolset(2).get("GetUserToken").schema().to_dict(), schema]
    return schema


def _release_like(bench: Benchmark) -> list:
    """Samples shaped like the release's records each entry names (our databases, our texts)."""
    from apibank_lib.core.types import Dialogue, Utterance
    from apibank_lib.data.datasets import cut_samples

    box = bench.sandbox(1)
    samples = []
    for k in range(1, 6):
        cancel = _rec("CancelTimedSwitch", device_id="10000025", time="2023-03-19 08:00:00")
        cancel.result["output"] = "success"  # recorded as a success, for a device the database does not hold
        scene = box.execute(ApiCall("QueryScene", {"name": "good morning"})).to_dict()
        titled = [{**dev, "name": dev["name"].title()} for dev in scene["output"]]
        query = ApiRecord("QueryScene", {"name": "good morning"}, {**scene, "output": titled})
        for name, record in ((f"CancelTimedSwitch-level-1-{k}", cancel), (f"QueryScene-level-1-{k}", query)):
            samples += cut_samples(Dialogue(name, 1, [Utterance("User", "please"), record]))
    searches = {  # file -> (keywords, recorded output, the API the dialogue calls)
        "AddAgenda-level-3-2": ("agenda meeting scheduler", "AddAgenda", "AddAgenda"),
        "AddAlarm-level-3-1": ("alarm", "AddAlarm", "AddAlarm"),
        "AddMeeting-level-3-1": ("book meeting", "BookHotel", "AddMeeting"),
        "AddMeeting-level-3-2": ("schedule meeting", "QueryAgenda", "AddMeeting"),
        "DeleteMeeting-level-3-2": ("meeting cancellation", "ModifyMeeting", "DeleteMeeting"),
        "DeleteReminder-level-3-1": ("reminder", "AddReminder", "DeleteReminder"),
        "QueryAlarm-level-3-1": ("alarm clock", "QueryAlarm", "QueryAlarm"),
        "QueryMeeting-level-3-1": ("meeting reservation query", "AddMeeting", "QueryMeeting"),
    }
    for name, (keywords, output, called) in searches.items():
        search = _rec("ToolSearcher", keywords=keywords)
        search.result["output"] = _search_output(output, bench)
        turns = [Utterance("User", "please"), search, _rec("GetUserToken", username="u", password="p"), _rec(called, token="t")]
        samples += cut_samples(Dialogue(name, 2, turns))
    return samples


def test_every_entry_of_the_release_errata_applies_where_its_record_looks_as_described(bench: Benchmark) -> None:
    errata = load_errata(RELEASE_ERRATA)
    assert errata.label == "api-bank@1" and len(errata.entries) == 18
    grader = Grader(bench, V2)
    report = verify(errata, _release_like(bench), grader.sandbox_for)
    assert report.not_applied == {}
    assert sorted(report.applied) == [f"E{i:02d}" for i in range(1, 19)]
    decisions = {i: a.erratum.decision for i, a in report.applied.items()}
    assert [i for i, d in sorted(decisions.items()) if d == "exclude"] == ["E01", "E02", "E03", "E04", "E05", "E11", "E12", "E16", "E17"]
    corrected = report.applied["E06"].corrected_result
    assert corrected is not None and corrected["output"][0]["name"] == "bedroom blinds"  # the database's own case


def test_an_entry_whose_record_looks_otherwise_is_not_applied(bench: Benchmark) -> None:
    samples = [s for s in _release_like(bench) if s.dialogue_id in ("QueryScene-level-1-1", "AddMeeting-level-3-1")]
    for s in samples:
        if s.dialogue_id == "QueryScene-level-1-1":
            s.gold.result["output"] = [{"name": "a lamp", "description": "not in the scene"}]  # differs by more than case
    errata = load_errata(RELEASE_ERRATA)
    report = verify(errata, samples, Grader(bench, V2).sandbox_for)
    assert "E06" not in report.applied and "more than letter case" in report.not_applied["E06"]
    assert "E13" in report.applied
