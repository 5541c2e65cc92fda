"""Run folders as typed records, and the runner's stopping, identity and coverage rules (scripted backends)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from apibank_lib.core.errors import BackendError, ConfigError, DataError
from apibank_lib.data.datasets import Benchmark, default_data_root
from apibank_lib.models import load_backend
from apibank_lib.models.baselines import OracleBackend
from tests.scripted import ScriptedBackend
from apibank_lib.runs.config import RunConfig, default_runs_dir, plan
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.records import EpisodeStep, JudgmentRecord, PredictionRecord
from apibank_lib.runs.runner import MAX_CONSECUTIVE_UNREACHABLE, RunStopped, run
from apibank_lib.runs.scoring import score_run


def test_records_round_trip_through_the_folder(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "r")
    records = [
        PredictionRecord("L1/api/d/0", 1, "api", "d", 0, output="[GetToday()]", prompt_sha="ab", latency_s=0.1),
        PredictionRecord("L3/episode/4", 3, "episode", "4", 0, output="done", steps=[EpisodeStep("x", "[GetToday()]", {"output": 1})]),
    ]
    with folder.prediction_writer() as writer:
        for rec in records:
            writer.write(rec)
    got = folder.read_predictions()
    assert list(got.records.values()) == records and got.dropped == []
    assert records[1].executed_calls() == ["[GetToday()]"] and records[0].text() == "[GetToday()]"
    assert PredictionRecord("k", 1, "api", "d", 0, output="x", error="BackendError: down").text() == ""


def test_unreadable_lines_are_left_out_and_reported(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "r")
    good = json.dumps(PredictionRecord("L1/api/d/0", 1, "api", "d", 0, output="a").to_dict())
    folder.path.mkdir()
    folder.predictions_path.write_text(good + "\n{broken\n" + good.replace("/0", "/2")[:-10])
    got = folder.read_predictions()
    assert list(got.records) == ["L1/api/d/0"]
    assert got.dropped[0].startswith("line 2: not a prediction record") and got.dropped[1].startswith("line 3: cut off")
    folder.read_predictions(repair=True)
    assert folder.predictions_path.read_text().count("\n") == 2  # the cut line is gone, the rest kept


def test_a_folder_without_a_run_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a run folder"):
        RunFolder(tmp_path).read_info()
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(DataError, match="not a run config"):
        RunFolder(tmp_path).read_info()
    with pytest.raises(ConfigError, match="has not been scored yet"):
        RunFolder(tmp_path).to_frame()


def test_a_scored_run_gives_data_frames(bench: Benchmark, tmp_path: Path) -> None:
    config = RunConfig("oracle", levels=(1, 3), limit=6, level3="both", out=str(tmp_path / "o"))
    planned = sorted(x.key for x in plan(bench, config))  # whole dialogues: at least 6 samples and 6 episodes a level
    result = run(config, bench=bench, progress=False)
    score_run(result.path, bench=bench)
    judgments = RunFolder(result.path).to_frame()
    assert sorted(judgments["key"]) == planned and list(judgments.columns) == [f for f in JudgmentRecord.__dataclass_fields__]
    assert set(judgments["kind"]) == {"api", "response", "episode"} and judgments["correct"].dropna().all()
    predictions = RunFolder(result.path).to_frame("predictions")
    assert sorted(predictions["key"]) == planned and "latency_s" in predictions.columns


def test_runs_go_to_the_projects_runs_folder_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from apibank_lib.core.paths import PROJECT_ROOT

    monkeypatch.delenv("APIBANK_RUNS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_runs_dir() == PROJECT_ROOT / "runs"  # one default, wherever the command is typed
    monkeypatch.setenv("APIBANK_RUNS", str(tmp_path / "elsewhere"))
    assert default_runs_dir() == tmp_path / "elsewhere"


def test_identity_ignores_operational_settings_and_names_what_differs(bench: Benchmark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APIBANK_RUNS", str(tmp_path))
    monkeypatch.setattr("apibank_lib.models.openai_compat.OpenAIBackend.preflight", lambda self: None)
    a = load_backend("openai:m@http://127.0.0.1:8000/v1", timeout_s=5)
    b = load_backend("openai:m@http://127.0.0.1:9999/v1", timeout_s=60, max_retries=1)
    assert a.identity() == b.identity() == {"backend": "openai", "model": "m", "temperature": 0.0}
    small, large = RunConfig("oracle", levels=(1,), limit=2, concurrency=1), RunConfig("oracle", levels=(1,), limit=10, concurrency=4)
    n_small, n_large = len(plan(bench, small)), len(plan(bench, large))
    assert 2 <= n_small < n_large  # whole dialogues: a larger limit takes more of them
    first = run(small, bench=bench, progress=False)
    again = run(large, bench=bench, progress=False)
    # levels, limit, concurrency: the same run, which keeps what the smaller limit drew and adds the rest
    assert again.path == first.path and (again.skipped, again.answered) == (n_small, n_large - n_small)
    with pytest.raises(ConfigError, match=r"other settings: max_tokens \(128 there, 64 now\)"):
        run(RunConfig("oracle", levels=(1,), limit=2, max_tokens=64, out=str(first.path)), bench=bench, progress=False)


def test_backend_options_are_checked_before_the_run() -> None:
    with pytest.raises(ConfigError, match=r"the oracle backend has no option 'style' \(its options: none\)"):
        load_backend("oracle", style="fast")
    with pytest.raises(ConfigError, match=r"has no option 'timeout'.*Did you mean 'timeout_s'"):
        load_backend("openai:m@http://127.0.0.1:8000/v1", timeout="5")
    with pytest.raises(ConfigError, match=r"timeout_s='fast' of openai must be float"):
        load_backend("openai:m@http://127.0.0.1:8000/v1", timeout_s="fast")
    backend = load_backend("openai:m@http://127.0.0.1:8000/v1", timeout_s="60", max_retries="2", mode="tools")
    assert (backend.timeout_s, backend.max_retries, backend.mode) == (60.0, 2, "chat")  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="do not repeat it"):
        load_backend("openai:m@http://127.0.0.1:8000/v1", model="other")


def test_an_unreachable_model_stops_the_run_after_a_few_samples(bench: Benchmark, tmp_path: Path) -> None:
    dead = ScriptedBackend("x", fail_on=lambda req: True, connection_failure=True)
    config = RunConfig("scripted", levels=(1,), limit=10, out=str(tmp_path / "dead"))
    planned = len(plan(bench, config))
    with pytest.raises(RunStopped, match=r"3 samples in a row could not reach the model; the first said: BackendError: scripted failure") as info:
        run(config, backend=dead, bench=bench, progress=False)
    assert info.value.saved == MAX_CONSECUTIVE_UNREACHABLE == dead.calls and info.value.remaining == planned - 3


def test_other_backend_errors_do_not_stop_the_run(bench: Benchmark, tmp_path: Path) -> None:
    flaky = ScriptedBackend("x", fail_on=lambda req: True)  # the server answers, with errors
    result = run(RunConfig("scripted", levels=(1,), limit=6, out=str(tmp_path / "flaky")), backend=flaky, bench=bench, progress=False)
    assert (result.answered, result.failed) == (0, 6)


class _Interrupting(ScriptedBackend):
    def __init__(self, after: int) -> None:
        super().__init__("[GetToday()]")
        self.after = after

    def complete(self, request):  # noqa: ANN001, ANN201
        if self.calls >= self.after:
            raise KeyboardInterrupt
        return super().complete(request)


def test_ctrl_c_keeps_what_was_answered_and_the_run_resumes(bench: Benchmark, tmp_path: Path) -> None:
    out = tmp_path / "int"
    config = RunConfig("scripted", levels=(1,), limit=10, out=str(out))
    planned = len(plan(bench, config))
    with pytest.raises(RunStopped) as info:
        run(config, backend=_Interrupting(4), bench=bench, progress=False)
    assert isinstance(info.value.__cause__, KeyboardInterrupt) and 4 <= info.value.saved < planned
    metrics = score_run(out, bench=bench)
    assert metrics.partial and metrics.coverage["missing"] == planned - info.value.saved
    again = run(config, backend=ScriptedBackend("[GetToday()]"), bench=bench, progress=False)
    assert again.skipped == info.value.saved and again.answered == planned - info.value.saved
    assert not score_run(out, bench=bench).partial


def test_coverage_of_a_truncated_run(bench: Benchmark, tmp_path: Path) -> None:
    config = RunConfig("oracle", levels=(1,), limit=8, out=str(tmp_path / "t"))
    planned = len(plan(bench, config))
    result = run(config, bench=bench, progress=False)
    path = RunFolder(result.path).predictions_path
    path.write_bytes(path.read_bytes()[:-15])
    metrics = score_run(result.path, bench=bench)
    cov = metrics.coverage
    assert metrics.partial and (cov["expected"], cov["answered"], cov["missing"], cov["lines_dropped"]) == (planned, planned - 1, 1, 1)
    assert json.loads((result.path / "metrics.json").read_text())["partial"] is True


def test_scoring_finds_moved_data_only_when_told(bench: Benchmark, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(default_data_root(), data)
    result = run(RunConfig("oracle", levels=(1,), limit=3, data=str(data), out=str(tmp_path / "m")), backend=OracleBackend(), progress=False)
    moved = tmp_path / "moved"
    data.rename(moved)
    with pytest.raises(ConfigError, match="no longer at .*give its new place with --data"):
        score_run(result.path)
    assert score_run(result.path, data=moved).levels["1"].api_accuracy == 1.0


def test_the_agent_loop_uses_the_runs_protocol(bench: Benchmark, tmp_path: Path) -> None:
    # The original parser cuts a quoted value at its first inner quote; ours reads it whole.
    def agent(req):  # noqa: ANN001, ANN202
        return "API-Request: [ToolSearcher(keywords='what's the Weather')]" if req.step == 0 else "It is sunny."

    calls = {}
    for protocol in ("paper", "v2"):
        config = RunConfig("scripted", levels=(3,), limit=1, level3="loop", protocol=protocol, out=str(tmp_path / protocol))
        result = run(config, backend=ScriptedBackend(agent), bench=bench, progress=False)
        (record,) = RunFolder(result.path).read_predictions().records.values()
        calls[protocol] = record.executed_calls()
        assert record.stopped == "answered" and record.output == "It is sunny."
    assert calls == {"paper": ["[ToolSearcher(keywords='what')]"], "v2": ["[ToolSearcher(keywords='what\\'s the Weather')]"]}


def test_preflight_failure_stops_before_anything_is_written(bench: Benchmark, tmp_path: Path) -> None:
    backend = load_backend("openai:m@http://127.0.0.1:9/v1", timeout_s=2)
    with pytest.raises(BackendError, match="cannot reach http://127.0.0.1:9/v1") as info:
        run(RunConfig("openai:m@http://127.0.0.1:9/v1", levels=(1,), limit=2, out=str(tmp_path / "none")), backend=backend, bench=bench, progress=False)
    assert info.value.connection and not (tmp_path / "none").exists()


def test_coverage_counts_what_every_command_into_a_folder_asked_for(bench: Benchmark, tmp_path: Path) -> None:
    # A second command into the same folder with another task and limit adds to what the folder should hold.
    from apibank_lib.runs.runner import run
    from apibank_lib.runs.scoring import score_run

    out = tmp_path / "two-commands"
    calls = RunConfig("oracle", levels=(1,), tasks=("api",), limit=6, out=str(out))
    answers = RunConfig("oracle", levels=(1,), tasks=("response",), limit=3, out=str(out))
    run(calls, bench=bench, progress=False)
    run(answers, bench=bench, progress=False)
    info = RunFolder(out).read_info()
    assert [p["tasks"] for p in info.plans] == [["api"], ["response"]] and info.config["tasks"] == ["response"]
    assert [(p["limit"], p["draw"], p["subset_seed"]) for p in info.plans] == [(6, "random", 0), (3, "random", 0)]
    cov = score_run(out, bench=bench).coverage
    api, replies = plan(bench, calls), plan(bench, answers)
    assert len(api) >= 6 and len(replies) >= 3 and {s.kind for s in api + replies} == {"api", "response"}
    assert cov["expected"] == len(api) + len(replies) == cov["answered"] and not cov["partial"]
    # The same command again adds no plan.
    run(calls, bench=bench, progress=False)
    assert len(RunFolder(out).read_info().plans) == 2


def test_a_folder_written_before_plans_were_kept_has_the_one_its_config_holds(bench: Benchmark, tmp_path: Path) -> None:
    import json

    from apibank_lib.runs.runner import run

    out = tmp_path / "old"
    run(RunConfig("oracle", levels=(1,), limit=2, out=str(out)), bench=bench, progress=False)
    raw = json.loads((out / "config.json").read_text())
    del raw["plans"], raw["format_version"]  # as written before plans were kept (run layout 1)
    (out / "config.json").write_text(json.dumps(raw))
    info = RunFolder(out).read_info()
    one = {"levels": [1], "limit": 2, "tasks": ["api", "response"], "level3": "steps"}
    assert info.plans == [one | {"draw": "random", "subset_seed": 0}]  # filled in when read
    # Such a folder was written when a limit took the first samples, and its config names no draw: it reads as
    # first-N, so it is complete and resumes without asking anything again (draw="first": what it then answered).
    older = tmp_path / "older"
    run(RunConfig("oracle", levels=(1,), limit=2, draw="first", out=str(older)), bench=bench, progress=False)
    raw = json.loads((older / "config.json").read_text())
    del raw["plans"], raw["format_version"], raw["config"]["draw"], raw["config"]["subset_seed"]
    (older / "config.json").write_text(json.dumps(raw))
    assert RunFolder(older).read_info().plans == [one | {"draw": "first"}]
    first = [s.key for s in bench.samples(1)[:2]]
    assert first != [x.key for x in plan(bench, RunConfig("oracle", levels=(1,), limit=2))]  # so the test can fail
    assert list(RunFolder(older).read_predictions().records) == first
    cov = score_run(older, bench=bench).coverage
    assert (cov["expected"], cov["answered"], cov["partial"]) == (2, 2, False)
    again = run(RunConfig("oracle", levels=(1,), limit=2, draw="first", out=str(older)), bench=bench, progress=False)
    assert (again.skipped, again.answered) == (2, 0)


# --- identity: teacher-forced samples once per folder, episodes in files of their own ---------------------------


def test_the_step_limit_and_retriever_change_only_the_episodes_file(bench: Benchmark, tmp_path: Path) -> None:
    steps_config = RunConfig("oracle", levels=(3,), limit=3, level3="steps", max_steps=4, runs_dir=str(tmp_path))
    both_config = RunConfig("oracle", levels=(3,), limit=3, level3="both", runs_dir=str(tmp_path))
    samples = {x.key for x in plan(bench, steps_config)}
    episodes_3 = {x.key for x in plan(bench, both_config)} - samples  # the same dialogue order: the same samples
    assert len(samples) >= 3 and len(episodes_3) >= 3 and all("/episode/" in k for k in episodes_3)
    steps = run(steps_config, bench=bench, progress=False)
    both = run(both_config, bench=bench, progress=False)
    # the samples were not asked again
    assert both.path == steps.path and (both.skipped, both.answered) == (len(samples), len(episodes_3))
    folder = RunFolder(both.path)
    assert sorted(p.name for p in folder.path.glob("*.jsonl")) == ["episodes-12steps-enriched.jsonl", "predictions.jsonl"]
    assert set(folder.read_predictions().records) == samples | episodes_3  # both files are read
    assert "episode" not in folder.predictions_path.read_text()
    # Episodes with another step limit are another set, in a file of their own; the folder's scores follow the last.
    loop_config = RunConfig("oracle", levels=(3,), limit=2, level3="loop", max_steps=5, retriever="bm25", runs_dir=str(tmp_path))
    episodes_2 = {x.key for x in plan(bench, loop_config)}
    assert len(episodes_2) >= 2 and episodes_2 < episodes_3  # a smaller limit, fewer of the same episodes
    with pytest.warns(UserWarning, match="go to episodes-5steps-bm25.jsonl"):
        other = run(loop_config, bench=bench, progress=False)
    assert other.path == steps.path and other.answered == len(episodes_2)
    info = folder.read_info()
    assert info.episodes == {"max_steps": 5, "retriever": "bm25", "file": "episodes-5steps-bm25.jsonl"}
    episodes = [r.key for r in folder.read_predictions().records.values() if r.kind == "episode"]
    assert set(episodes) == episodes_2 and len(episodes) == len(episodes_2)
    assert (folder.path / "episodes-12steps-enriched.jsonl").read_text().count("\n") == len(episodes_3)
    assert score_run(folder.path, bench=bench).levels["3"].episodes == len(episodes_2)


def _as_older_layout(made: RunFolder, digest: str) -> Path:
    """A folder turned into the layout written before episodes had files of their own: the identity holds the
    step limit (and the retriever), the episodes are with the rest, and the name's hash is another."""
    raw = json.loads(made.config_path.read_text())
    episodes = raw.pop("episodes", None)
    raw.pop("format_version", None)  # that layout had none (apibank_lib.runs.legacy)
    raw["identity"] |= {"max_steps": raw["config"]["max_steps"], "retriever": "enriched"}
    made.config_path.write_text(json.dumps(raw))
    if episodes:
        path = made.path / episodes["file"]
        with made.predictions_path.open("a") as f:
            f.write(path.read_text())
        path.unlink()
    return made.path.rename(made.path.parent / (made.path.name[:-8] + digest))


def test_of_two_older_folders_the_one_holding_what_is_planned_is_used(bench: Benchmark, tmp_path: Path) -> None:
    calls = RunConfig("oracle", levels=(1,), limit=6, tasks=("api",), runs_dir=str(tmp_path))
    holds_calls = _as_older_layout(RunFolder(run(calls, bench=bench, progress=False).path), "aaaaaaaa")
    episodes = RunConfig("oracle", levels=(3,), limit=4, level3="loop", max_steps=9, runs_dir=str(tmp_path))
    made = run(replace(episodes, out=str(tmp_path / "oracle-v2-cccccccc")), bench=bench, progress=False)
    bigger = _as_older_layout(RunFolder(made.path), "bbbbbbbb")
    assert bigger.joinpath("predictions.jsonl").stat().st_size > holds_calls.joinpath("predictions.jsonl").stat().st_size
    again = run(calls, bench=bench, progress=False)
    assert again.path == holds_calls and again.answered == 0
    # Episodes of the folder's own settings come first.
    assert run(episodes, bench=bench, progress=False).path == bigger


def test_a_folder_written_before_episodes_had_files_of_their_own_still_loads_and_resumes(
    bench: Benchmark, tmp_path: Path
) -> None:
    from apibank_lib.runs import runner

    config = RunConfig("oracle", levels=(3,), limit=2, level3="both", max_steps=10, runs_dir=str(tmp_path))
    planned = plan(bench, config)
    n_episodes = sum(x.kind == "episode" for x in planned)
    assert n_episodes >= 2 and len(planned) > n_episodes  # episodes and teacher-forced samples
    older = _as_older_layout(RunFolder(run(config, bench=bench, progress=False).path), "0ld0ld00")
    info = RunFolder(older).read_info()
    assert info.episode_set() == {"max_steps": 10, "retriever": "enriched", "file": "predictions.jsonl"}
    assert set(RunFolder(older).read_predictions().records) == {x.key for x in planned}
    # The same settings find it (no folder of today's name exists) and ask nothing again.
    again = run(config, bench=bench, progress=False)
    assert again.path == older and again.answered == 0 and again.skipped == len(planned)
    # Other teacher-forced settings are another folder; other episode settings add their own file to the old one.
    assert runner.locate_run(RunConfig("oracle", max_tokens=64, runs_dir=str(tmp_path)), bench, OracleBackend())[0].path != older
    with pytest.warns(UserWarning, match="ran with 10 steps"):
        more = run(RunConfig("oracle", levels=(3,), limit=2, level3="loop", runs_dir=str(tmp_path)), bench=bench, progress=False)
    assert more.path == older and more.answered == n_episodes
    kinds = [r.kind for r in RunFolder(older).read_predictions().records.values()]
    assert kinds.count("episode") == n_episodes and len(kinds) == len(planned)
    assert score_run(older, bench=bench).coverage["missing"] == 0
