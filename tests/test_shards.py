"""Sharded runs (``apibank run --shard I/N``) and their merge (``apibank merge``): the merged folder scores
byte for byte as the same run answered in one piece."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest

from apibank_lib.cli.commands import main
from apibank_lib.core.errors import ConfigError
from apibank_lib.data.datasets import Benchmark
from apibank_lib.models.base import Request
from apibank_lib.models.baselines import OracleBackend
from tests.scripted import ScriptedBackend
from apibank_lib.runs.config import RunConfig, plan
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.merge import default_merged_path, merge_runs
from apibank_lib.runs.runner import run
from apibank_lib.runs.scoring import score_run
from apibank_lib.runs.shards import parse_shard, shard_of

SETTINGS = dict(levels=(1, 2, 3), limit=15, level3="both")


def _scores(folder: Path) -> tuple[bytes, bytes]:
    return (folder / "judgments.jsonl").read_bytes(), (folder / "metrics.json").read_bytes()


def _answer(request: Request) -> str:
    # The gold for two requests in three, a wrong call or no call for the others (by the prompt's length), so that
    # the judgments differ from sample to sample and step to step.
    n = len(request.prompt.text)
    if n % 3:
        return OracleBackend().complete(request).text
    return "API-Request: [GetToday()]" if n % 2 else "I cannot help."


@pytest.mark.parametrize("model", ["oracle", "scripted"])
def test_merged_shards_score_as_the_run_in_one_piece(bench: Benchmark, tmp_path: Path, model: str) -> None:
    def backend() -> ScriptedBackend | None:
        return ScriptedBackend(_answer) if model == "scripted" else None

    whole = run(RunConfig(model, out=str(tmp_path / "whole"), **SETTINGS), backend=backend(), bench=bench, progress=False)
    score_run(whole.path, bench=bench)
    shards = []
    for i in (3, 1, 2):  # the order they run in does not matter
        config = RunConfig(model, shard=f"{i}/3", concurrency=2, runs_dir=str(tmp_path / "runs"), **SETTINGS)
        shards.append(run(config, backend=backend(), bench=bench, progress=False).path)
    assert sorted(p.name[-10:] for p in shards) == ["shard-1of3", "shard-2of3", "shard-3of3"]
    assert sum(len(RunFolder(p).read_predictions().records) for p in shards) == whole.total
    merged = merge_runs(shards, bench=bench)
    assert merged.path == default_merged_path(shards[0]) and not merged.path.name.endswith("of3")
    assert (merged.shards, merged.samples) == (3, whole.total)
    score_run(merged.path, bench=bench)
    assert _scores(merged.path) == _scores(whole.path)
    summary = json.loads((merged.path / "summary.json").read_text())
    assert [s["shard"] for s in summary["merged_from"]] == ["1/3", "2/3", "3/3"]
    assert sum(s["samples"] for s in summary["merged_from"]) == whole.total


def test_shards_split_the_plan_by_whole_dialogues(bench: Benchmark) -> None:
    config = RunConfig("oracle", levels=(1, 2, 3), level3="both")
    everything = [x.key for x in plan(bench, config)]
    parts = [[x.key for x in plan(bench, RunConfig("oracle", levels=(1, 2, 3), level3="both", shard=f"{i}/4"))] for i in range(1, 5)]
    assert sorted(k for p in parts for k in p) == sorted(everything)  # each sample once
    assert all(p for p in parts)
    shard_by_dialogue: dict[tuple[int, str], set[int]] = defaultdict(set)
    for x in plan(bench, config):
        shard_by_dialogue[(x.level, x.dialogue_id)].add(shard_of(x, 4))
    assert all(len(s) == 1 for s in shard_by_dialogue.values())  # a dialogue (a level-3 item's steps and episode) stays whole
    # A shard keeps its samples when more is planned: the limit cuts the whole run first.
    small = {x.key for x in plan(bench, RunConfig("oracle", levels=(1,), limit=40, shard="2/4"))}
    assert small <= set(parts[1]) and small == {k for k in parts[1] if k in {x.key for x in plan(bench, RunConfig("oracle", levels=(1,), limit=40))}}


@pytest.mark.parametrize("spec", ["0/3", "4/3", "2", "a/b", "1/0"])
def test_a_wrong_shard_is_refused(spec: str) -> None:
    with pytest.raises(ConfigError, match="shard"):
        parse_shard(spec)
    with pytest.raises(ConfigError):
        RunConfig("oracle", shard=spec).validate()


def _shards(bench: Benchmark, root: Path, n: int = 3, **changes: object) -> list[Path]:
    settings = {**SETTINGS, "levels": (1,), **changes}
    return [
        run(RunConfig("oracle", shard=f"{i}/{n}", runs_dir=str(root), **settings), bench=bench, progress=False).path  # type: ignore[arg-type]
        for i in range(1, n + 1)
    ]


def test_merge_refuses_what_is_not_the_shards_of_one_run(bench: Benchmark, tmp_path: Path) -> None:
    shards = _shards(bench, tmp_path / "a")
    with pytest.raises(ConfigError, match="shard 2/3 missing"):
        merge_runs([shards[0], shards[2]], tmp_path / "m", bench=bench)
    with pytest.raises(ConfigError, match="shard 1/3 is given twice"):
        merge_runs([shards[0], *shards], tmp_path / "m", bench=bench)
    other = _shards(bench, tmp_path / "b", max_tokens=64)
    with pytest.raises(ConfigError, match="its identity differ"):
        merge_runs([shards[0], shards[1], other[2]], tmp_path / "m", bench=bench)
    limited = _shards(bench, tmp_path / "c", limit=5)
    with pytest.raises(ConfigError, match="its plans"):
        merge_runs([shards[0], shards[1], limited[2]], tmp_path / "m", bench=bench)
    four = _shards(bench, tmp_path / "d", n=4)
    with pytest.raises(ConfigError, match="different numbers of shards"):
        merge_runs([shards[0], shards[1], four[2]], tmp_path / "m", bench=bench)
    whole = run(RunConfig("oracle", out=str(tmp_path / "whole"), **{**SETTINGS, "levels": (1,)}), bench=bench, progress=False)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="is not a shard"):
        merge_runs([whole.path, *shards[1:]], tmp_path / "m", bench=bench)
    assert not (tmp_path / "m").exists()  # nothing written by a refused merge


def test_merge_names_an_unfinished_shard_and_a_sample_out_of_place(bench: Benchmark, tmp_path: Path) -> None:
    shards = _shards(bench, tmp_path / "a")
    lines = (shards[1] / "predictions.jsonl").read_text().splitlines(keepends=True)
    (shards[1] / "predictions.jsonl").write_text("".join(lines[:-1]))
    with pytest.raises(ConfigError, match=r"shard 2/3 .* is not finished: 1 of \d+ samples missing .* run its command again"):
        merge_runs(shards, tmp_path / "m", bench=bench)
    # The missing line put into shard 1 instead: a sample of another shard.
    (shards[0] / "predictions.jsonl").write_text((shards[0] / "predictions.jsonl").read_text() + lines[-1])
    with pytest.raises(ConfigError, match="which is not in shard 1/3"):
        merge_runs(shards, tmp_path / "m", bench=bench)
    (shards[0] / "predictions.jsonl").write_text((shards[0] / "predictions.jsonl").read_text().replace(lines[-1], ""))
    (shards[1] / "predictions.jsonl").write_text("".join(lines))
    merged = merge_runs(shards, tmp_path / "m", bench=bench)
    with pytest.raises(ConfigError, match="already holds a run"):
        merge_runs(shards, merged.path, bench=bench)


def test_the_cli_runs_shards_and_merges_them(
    bench: Benchmark, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APIBANK_RUNS", str(tmp_path / "runs"))
    whole = RunConfig("oracle", levels=(1,), limit=12, tasks=("api",))  # what --limit 12 draws: whole dialogues
    halves = [len(plan(bench, replace(whole, shard=f"{i}/2"))) for i in (1, 2)]
    assert sum(halves) == len(plan(bench, whole)) >= 12 and min(halves) > 0  # each shard has a share to answer
    folders = []
    for i in (1, 2):
        assert main(["run", "--model", "oracle", "--level", "1", "--limit", "12", "--task", "api", "--shard", f"{i}/2", "--json"]) == 0
        folders.append(json.loads(capsys.readouterr().out)["run"])
    assert main(["merge", *folders, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["samples"] == sum(halves) and out["metrics"]["levels"]["1"]["api_accuracy"] == 1.0
    assert out["metrics"]["coverage"]["missing"] == 0
