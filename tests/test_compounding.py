"""The compounding table: steps, items, independent steps and episodes on the same level-3 items."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from apibank_lib.data.datasets import Benchmark
from apibank_lib.report.compounding import compounding_table, item_outcomes, summary
from apibank_lib.runs.config import RunConfig
from apibank_lib.runs.records import JudgmentRecord
from apibank_lib.runs.runner import run
from apibank_lib.runs.scoring import ScoredRun, scored


@pytest.fixture(scope="module")
def oracle(bench: Benchmark, tmp_path_factory: pytest.TempPathFactory) -> ScoredRun:
    out = tmp_path_factory.mktemp("compounding") / "oracle"
    result = run(RunConfig("oracle", levels=(3,), level3="both", limit=60, out=str(out)), bench=bench, progress=False)
    return scored(result.path, bench=bench)


def test_the_oracle_is_right_everywhere(oracle: ScoredRun) -> None:
    table = compounding_table([oracle], n_boot=200)
    row = table.iloc[0]
    assert row["items"] == len(item_outcomes(oracle)) > 0
    for col in ("step acc", "item acc", "item acc if steps were independent", "episode success"):
        assert row[col] == 100.0 and row[f"{col} low"] == 100.0


def test_wrong_steps_compound_into_items(oracle: ScoredRun) -> None:
    items = item_outcomes(oracle)
    first, second = items[0].item, items[1].item
    # Two wrong steps in one item, one in another, and one item's episode failed.
    def wrong(j: JudgmentRecord) -> bool:
        if j.kind == "episode":
            return j.dialogue_id == second
        return j.level == 3 and ((j.dialogue_id == first and j.sample_id < 2) or (j.dialogue_id == second and j.sample_id == 0))

    flipped = [replace(j, correct=False) if wrong(j) else j for j in oracle.judgments]
    broken = replace(oracle, judgments=flipped)
    row = compounding_table([broken], n_boot=500).iloc[0]
    n_items = len(items)
    steps = [o.steps for o in items]
    p = (sum(steps) - 3) / sum(steps)
    assert row["step acc"] == round(100 * p, 2)
    assert row["item acc"] == round(100 * (n_items - 2) / n_items, 2)
    assert row["item acc if steps were independent"] == round(100 * sum(p**k for k in steps) / n_items, 2)
    assert row["episode success"] == round(100 * (n_items - 1) / n_items, 2)
    assert row["item acc low"] < row["item acc"] <= row["item acc high"]
    assert row["step acc low"] < row["step acc"] <= row["step acc high"]
    # The sentence counts what the row shows: items against independent steps, episodes against items.
    said = summary(compounding_table([broken], n_boot=100))
    more = row["item acc"] > row["item acc if steps were independent"]
    below = row["episode success"] < row["item acc"]
    assert said.startswith("Of 1 run(s)") and f"{int(more)} solve more items" in said
    assert f"{int(below)} of the 1 with episodes succeed less often" in said
    assert "nothing to compound" in summary(compounding_table([oracle], n_boot=100))


def test_a_run_without_level_3_steps_is_left_out(bench: Benchmark, tmp_path: Path) -> None:
    result = run(RunConfig("oracle", levels=(1,), limit=10, out=str(tmp_path / "l1")), bench=bench, progress=False)
    assert compounding_table([scored(result.path, bench=bench)]).empty


def test_intervals_over_fewer_than_ten_items_are_left_blank(oracle: ScoredRun) -> None:
    kept = {o.item for o in item_outcomes(oracle)[:3]}
    few = replace(oracle, judgments=[j for j in oracle.judgments if j.level != 3 or j.dialogue_id in kept])
    row = compounding_table([few], n_boot=100).iloc[0]
    assert row["items"] == 3 and row["item acc"] == 100.0
    assert row["item acc low"] is None and "fewer than 10" in row["note"]
    assert compounding_table([oracle], n_boot=100).iloc[0]["note"] == ""
