"""What a run cost (tokens, seconds per answer, answers per second, a price), read from its answers and summary."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from apibank_lib.cli.commands import main
from apibank_lib.core.errors import ConfigError
from apibank_lib.data.datasets import Benchmark
from tests.scripted import ScriptedBackend
from apibank_lib.report.analysis import COST_COLUMNS, compact_main_table, compare_runs, load_runs, main_table
from apibank_lib.runs.config import RunConfig
from apibank_lib.runs.costs import cost_of, parse_price, run_cost
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.merge import merge_runs
from apibank_lib.runs.records import PredictionRecord
from apibank_lib.runs.runner import run


def _record(key: str, tokens: tuple[int | None, int | None], latency: float | None, reused: bool = False) -> PredictionRecord:
    return PredictionRecord(key, 1, "api", "d", 0, prompt_tokens=tokens[0], completion_tokens=tokens[1], latency_s=latency, reused=reused)


def test_cost_of_counts_what_was_paid_for() -> None:
    records = [
        _record("a", (100, 10), 1.0),
        _record("b", (200, 20), 2.0),
        _record("c", (300, 30), 3.0),
        _record("d", (400, 40), 10.0),
        _record("e", (100, 10), 1.0, reused=True),  # a duplicate's reused answer cost nothing
        _record("f", (None, None), 4.0),  # a backend that does not count tokens
    ]
    cost = cost_of(records, answering_s=20.0, price_per_mtok=(1.0, 4.0))
    assert (cost.answers, cost.counted, cost.prompt_tokens, cost.completion_tokens) == (5, 4, 1000, 100)
    assert cost.median_s == 3.0 and cost.p90_s == pytest.approx(7.6)  # 1, 2, 3, 4, 10: linear interpolation
    assert cost.per_s == 0.25 and cost.price == pytest.approx((1000 * 1.0 + 100 * 4.0) / 1e6)
    assert cost_of([], None).median_s is None and cost_of([], None).per_s is None


@pytest.mark.parametrize("text", ["0.15", "a,b", "1,-2", "1,2,3"])
def test_a_wrong_price_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="IN,OUT per million tokens"):
        parse_price(text)
    assert parse_price("0.15, 0.60") == (0.15, 0.60)


def test_answering_time_adds_up_over_invocations_and_shards(bench: Benchmark, tmp_path: Path) -> None:
    def go(limit: int, **changes: object) -> Path:
        config = RunConfig("scripted", levels=(1,), limit=limit, tasks=("api",), **changes)  # type: ignore[arg-type]
        return run(config, backend=ScriptedBackend("[GetToday()]", delay_s=0.01), bench=bench, progress=False).path

    out = str(tmp_path / "r")
    first = json.loads((Path(go(4, out=out)) / "summary.json").read_text())["answering_s"]
    folder = RunFolder(go(8, out=out))
    total = json.loads(folder.summary_path.read_text())["answering_s"]
    this = json.loads(folder.summary_path.read_text())["this_invocation"]["elapsed_s"]
    assert first > 0 and total == pytest.approx(first + this, abs=0.002)
    cost = run_cost(folder)
    assert cost.answers == len(folder.read_predictions().records) - sum(r.reused for r in folder.read_predictions().records.values())
    assert cost.per_s == pytest.approx(cost.answers / total, rel=1e-3) and cost.median_s >= 0.01
    shards = [go(8, shard=f"{i}/2", runs_dir=str(tmp_path / "s")) for i in (1, 2)]
    merged = merge_runs(shards, tmp_path / "m", bench=bench)
    times = [json.loads((s / "summary.json").read_text())["answering_s"] for s in shards]
    assert json.loads((merged.path / "summary.json").read_text())["answering_s"] == pytest.approx(sum(times), abs=0.002)


def test_compare_shows_the_cost_and_a_price(bench: Benchmark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = run(
        RunConfig("scripted", levels=(1,), limit=5, out=str(tmp_path / "c")),
        backend=ScriptedBackend("[GetToday()] now"), bench=bench, progress=False,
    ).path
    table = compare_runs(load_runs([path]), price_per_mtok=(0.0, 1e6))
    assert table["tokens out"][0] == run_cost(RunFolder(path)).completion_tokens > 0  # the scripted backend counts words
    assert table["price"][0] == table["tokens out"][0]  # a unit price per output token
    assert main(["compare", str(path), "--price-per-mtok", "0,1000000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["price"] == table["price"][0]
    assert main(["compare", str(path), "--price-per-mtok", "free"]) != 0


def test_a_cost_over_some_samples_counts_only_their_answers(bench: Benchmark, tmp_path: Path) -> None:
    path = run(
        RunConfig("scripted", levels=(1,), limit=8, tasks=("api",), out=str(tmp_path / "k")),
        backend=ScriptedBackend("[GetToday()] now", delay_s=0.01), bench=bench, progress=False,
    ).path
    folder = RunFolder(path)
    records = [r for r in folder.read_predictions().records.values() if not r.reused]
    whole, some = run_cost(folder), run_cost(folder, keys={r.key for r in records[:3]})
    assert some.answers == 3 and some.completion_tokens == sum(r.completion_tokens or 0 for r in records[:3]) < whole.completion_tokens
    assert whole.per_s is not None and some.per_s is None  # the folder's time covers answers left out
    assert run_cost(folder, keys={r.key for r in records}).per_s == whole.per_s


def test_the_main_table_shows_what_each_run_cost(bench: Benchmark, tmp_path: Path) -> None:
    paths = [
        run(
            RunConfig(name, levels=(1,), limit=6, tasks=("api",), out=str(tmp_path / name)),
            backend=backend, bench=bench, progress=False,
        ).path
        for name, backend in (("scripted", ScriptedBackend("[GetToday()] now", delay_s=0.01)), ("oracle", None))
    ]
    runs = load_runs(paths)
    # reported_rows=True: the paper's rows (left out beside bundled data by default) are checked to have no costs.
    table = main_table(runs, reported_rows=True, n_boot=20, dated=False, price_per_mtok=(0.0, 1e6)).set_index("model")
    cost = run_cost(RunFolder(paths[0]))
    assert table.loc["scripted", "tokens in"] == cost.prompt_tokens and table.loc["scripted", "tokens out"] == cost.completion_tokens
    assert table.loc["scripted", "s/answer (median)"] == cost.median_s >= 0.01 and table.loc["scripted", "price"] == cost.completion_tokens
    assert pd.isna(table.loc["oracle", "tokens in"]) and pd.isna(table.loc["oracle", "price"])  # counts no tokens
    assert table.loc["GPT-4", COST_COLUMNS].isna().all()  # the paper gives no costs
    compact = compact_main_table(table.reset_index()).set_index("model")
    assert compact.loc["scripted", "tokens in / out"].endswith(f" / {cost.completion_tokens}")
    assert compact.loc["scripted", "s/answer"] == f"{cost.median_s:.2f} (p90 {cost.p90_s:.2f})"
    assert compact.loc["oracle", "tokens in / out"] == "" and compact.loc["GPT-4", "s/answer"] == ""
    restricted = runs[0].restricted(list(runs[0].by_key)[:2])
    small = main_table([restricted], reported_rows=False, n_boot=20, dated=False).iloc[0]
    assert small["answers/s"] is None or pd.isna(small["answers/s"])
    assert small["tokens out"] < cost.completion_tokens


def test_token_counts_read_short() -> None:
    from apibank_lib.report.main_table import _short_count

    assert [_short_count(n) for n in (812, 45_300, 1_523_000)] == ["812", "45.3k", "1.52M"]


def test_an_episode_of_a_backend_that_counts_no_tokens_has_no_counts(bench: Benchmark, tmp_path: Path) -> None:
    path = run(
        RunConfig("oracle", levels=(3,), limit=2, level3="loop", out=str(tmp_path / "e")), bench=bench, progress=False
    ).path
    episodes = [r for r in RunFolder(path).read_predictions().records.values() if r.kind == "episode"]
    assert episodes and all(r.prompt_tokens is None and r.completion_tokens is None for r in episodes)
    assert run_cost(RunFolder(path)).counted == 0
