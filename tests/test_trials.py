"""Repeated trials (``apibank run --trials K --temperature T``): records per trial, pass^k and pass@k, paired tests
on per-sample success rates, and a one-trial run's files unchanged."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from apibank_lib.cli.commands import main
from apibank_lib.core.errors import ConfigError
from apibank_lib.data.datasets import Benchmark
from apibank_lib.models.base import Request
from apibank_lib.models.baselines import OracleBackend
from tests.scripted import ScriptedBackend
from apibank_lib.report import plots
from apibank_lib.report.analysis import paired_table, sample_success_rates, trials_table
from apibank_lib.runs.config import RunConfig, plan
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.merge import merge_runs
from apibank_lib.runs.runner import run
from apibank_lib.runs.scoring import score_run, scored
from apibank_lib.runs.subsets import FIRST
from apibank_lib.runs.trials import pass_at, pass_hat


def test_pass_hat_and_pass_at_follow_their_definitions() -> None:
    # 2 right of 4: one trial is right half the time; two drawn are both right in 1 of C(4,2) = 6 draws, and at
    # least one right in 5 of 6; three are never all right; four always hold a right one.
    assert [pass_hat(4, 2, k) for k in (1, 2, 3, 4)] == [0.5, 1 / 6, 0.0, 0.0]
    assert [pass_at(4, 2, k) for k in (1, 2, 3, 4)] == [0.5, 5 / 6, 1.0, 1.0]
    assert pass_hat(4, 4, 4) == 1.0 and pass_at(4, 0, 4) == 0.0
    with pytest.raises(ValueError):
        pass_hat(3, 1, 4)


def test_greedy_trials_are_refused() -> None:
    with pytest.raises(ConfigError, match="greedy decoding would give the same answer 4 times"):
        RunConfig("oracle", trials=4).validate()
    with pytest.raises(ConfigError, match="trials must be at least 1"):
        RunConfig("oracle", trials=0, temperature=0.7).validate()
    RunConfig("oracle", trials=4, temperature=0.7).validate()


class Sampler:
    """A stand-in for a sampled model: the gold or a wrong call, by a hash of the prompt and the request's seed
    (so trials of one sample can disagree); it records the seeds and temperatures it was given."""

    def __init__(self) -> None:
        self.seen: list[tuple[float | None, int | None]] = []

    def __call__(self, request: Request) -> str:
        self.seen.append((request.temperature, request.seed))
        digest = hashlib.sha256(f"{request.prompt.text}|{request.seed}".encode()).digest()
        if digest[0] % 3:
            return OracleBackend().complete(request).text
        return "API-Request: [GetToday()]"


def _trial_run(bench: Benchmark, out: Path, trials: int = 3, **changes: object) -> tuple[Path, Sampler]:
    sampler = Sampler()
    # Exactly 30 samples (the first 30: a random draw takes whole dialogues and may take a few more), so the counts
    # below are the trial logic's, not the draw's.
    settings = {"levels": (1,), "limit": 30, "draw": FIRST, "tasks": ("api",), "temperature": 0.7, "seed": 5, **changes}
    result = run(RunConfig("scripted", trials=trials, out=str(out), **settings), backend=ScriptedBackend(sampler), bench=bench, progress=False)  # type: ignore[arg-type]
    score_run(result.path, bench=bench, rescore=True)
    return result.path, sampler


def test_each_trial_is_seeded_recorded_and_judged(bench: Benchmark, tmp_path: Path) -> None:
    path, sampler = _trial_run(bench, tmp_path / "t")
    assert {t for t, _ in sampler.seen} == {0.7} and {s for _, s in sampler.seen} == {5, 6, 7}
    keys = [json.loads(line)["key"] for line in (path / "predictions.jsonl").read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 90
    assert sum(k.endswith("#t2") for k in keys) == sum(k.endswith("#t3") for k in keys) == 30
    judgments = RunFolder(path).read_judgments()
    assert len(judgments) == 90 and {j.trial for j in judgments} == {1, 2, 3}
    assert len({j.key for j in judgments}) == 30  # a judgment carries its sample's own key
    metrics = RunFolder(path).read_metrics()
    assert metrics.coverage["expected"] == 90 and not metrics.partial
    figures = metrics.trials["1"]
    assert figures["samples"] == 30 and figures["trials"] == 3
    # pass^1 is the mean success rate, which is the accuracy over all answers; pass^k falls and pass@k rises with k.
    assert figures["pass_hat"]["1"] == figures["success_rate"] == metrics.levels["1"].api_accuracy
    hats, ats = [figures["pass_hat"][k] for k in "123"], [figures["pass_at"][k] for k in "123"]
    assert hats[0] > hats[1] > hats[2] and ats[0] < ats[1] < ats[2]
    assert 0 < figures["inconsistent"] < 1  # the stand-in disagrees with itself on some samples
    assert sorted(figures["per_trial"]) == ["1", "2", "3"]


def test_more_trials_resume_the_folder_and_a_one_trial_run_is_unchanged(bench: Benchmark, tmp_path: Path) -> None:
    path, first = _trial_run(bench, tmp_path / "t", trials=2)
    assert {s for _, s in first.seen} == {5, 6}  # (a duplicate sample reuses its trial's answer: fewer calls than 60)
    path, sampler = _trial_run(bench, tmp_path / "t", trials=3)
    assert {s for _, s in sampler.seen} == {7} and len(sampler.seen) == len(first.seen) // 2  # only the third trial
    assert len(RunFolder(path).read_predictions().records) == 90
    one, _ = _trial_run(bench, tmp_path / "one", trials=1)
    lines = (one / "predictions.jsonl").read_text() + (one / "judgments.jsonl").read_text()
    assert '"trial"' not in lines and "#t" not in lines
    assert "trials" not in json.loads((one / "metrics.json").read_text())
    # The first trial of a three-trial run is a one-trial run with the same settings.
    first = [json.loads(x) for x in (path / "judgments.jsonl").read_text().splitlines()][:30]
    assert [j.get("trial", 1) for j in first] == [1] * 30
    assert [(j["key"], j["correct"]) for j in first] == [
        (j["key"], j["correct"]) for j in map(json.loads, (one / "judgments.jsonl").read_text().splitlines())
    ]


def test_trials_tables_and_paired_tests_use_per_sample_rates(bench: Benchmark, tmp_path: Path) -> None:
    a, _ = _trial_run(bench, tmp_path / "a", trials=4)
    b, _ = _trial_run(bench, tmp_path / "b", trials=1, temperature=None)
    run_a, run_b = scored(a, bench=bench), scored(b, bench=bench)
    rates = sample_success_rates(run_a)
    assert len(rates) == 30 and set(rates["trials"]) == {4}
    table = trials_table(run_a, n_boot=200)
    row = table[(table["level"] == "1") & (table["measure"] == "pass^k") & (table["k"] == 1)].iloc[0]
    assert row["value (%)"] == pytest.approx(rates["success rate (%)"].mean(), abs=0.01)
    assert row["low"] <= row["value (%)"] <= row["high"]
    assert list(table[(table["level"] == "1") & (table["measure"] == "pass^k")]["k"]) == [1, 2, 3, 4]
    fig = plots.pass_k_figure(table, directory=tmp_path)
    assert (tmp_path / "pass_k.png").is_file()
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["level 1: pass^k (n=30)", "level 1: pass@k (n=30)"]
    paired = paired_table(run_a, run_b, n_boot=200)
    first = paired[(paired["metric"] == "accuracy (%)") & (paired["level"] == 1)].iloc[0]
    assert first["samples"] == 30  # samples, not answers
    assert first["A"] == pytest.approx(rates["success rate (%)"].mean(), abs=0.01)
    with pytest.raises(ConfigError, match="one answer per sample"):
        trials_table(run_b)


def test_paper_protocol_trials_are_each_judged_from_the_start_state(bench: Benchmark, tmp_path: Path) -> None:
    # Under the paper's protocol level 3 shares one state across its samples: the same gold answers score the same in
    # every trial only if each trial starts from the start state (the second trial's calls would otherwise run after
    # the first's), and as in a one-trial run.
    config = RunConfig("oracle", protocol="paper", levels=(3,), tasks=("api",), trials=2, temperature=0.7, out=str(tmp_path / "o"))
    metrics = score_run(run(config, bench=bench, progress=False).path, bench=bench)
    once = RunConfig("oracle", protocol="paper", levels=(3,), tasks=("api",), out=str(tmp_path / "once"))
    ceiling = score_run(run(once, bench=bench, progress=False).path, bench=bench).levels["3"].api_accuracy
    assert metrics.trials["3"]["per_trial"] == {"1": ceiling, "2": ceiling}


def test_sharded_trials_merge_to_the_run_in_one_piece(bench: Benchmark, tmp_path: Path) -> None:
    whole, _ = _trial_run(bench, tmp_path / "whole", trials=2)
    shards = [_trial_run(bench, tmp_path / f"s{i}", trials=2, shard=f"{i}/2")[0] for i in (1, 2)]
    merged = merge_runs(shards, tmp_path / "m", bench=bench)
    score_run(merged.path, bench=bench)
    for name in ("judgments.jsonl", "metrics.json"):
        assert (merged.path / name).read_bytes() == (whole / name).read_bytes()


def test_the_cli_takes_trials_and_a_temperature(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "cli")
    assert main(["run", "--model", "oracle", "--level", "1", "--limit", "4", "--task", "api", "--trials", "2", "--temperature", "0.7", "--out", out, "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)["metrics"]
    assert metrics["trials"]["1"]["pass_hat"] == {"1": 1.0, "2": 1.0}
    assert main(["run", "--model", "oracle", "--level", "1", "--limit", "4", "--trials", "2", "--out", str(tmp_path / "g"), "--json"]) != 0


def test_episodes_have_trials_too(bench: Benchmark, tmp_path: Path) -> None:
    config = RunConfig("oracle", levels=(3,), level3="loop", limit=3, trials=2, temperature=0.7, out=str(tmp_path / "ep"))
    episodes = [x.key for x in plan(bench, config)]
    assert len(episodes) >= 3 and all("/episode/" in k for k in episodes)
    result = run(config, bench=bench, progress=False)
    records = RunFolder(result.path).read_predictions().records
    assert sorted(records) == sorted(k + t for k in episodes for t in ("", "#t2"))  # each episode, twice
    metrics = score_run(result.path, bench=bench)
    assert metrics.trials["3/episodes"]["per_trial"] == {"1": 1.0, "2": 1.0} and metrics.coverage["missing"] == 0
