"""Level-3 item accuracy, the paper's Plan+Retrieve+Call metric: an item is right only when all its steps are."""

from __future__ import annotations

import json
from pathlib import Path

from apibank_lib.data.datasets import Benchmark
from apibank_lib.runs.config import RunConfig
from apibank_lib.runs.records import JudgmentRecord
from apibank_lib.runs.runner import run
from apibank_lib.runs.scoring import aggregate, item_figures, item_steps, score_run, scored


def _step(item: str, step: int, correct: bool, *, trial: int = 1, excluded: str | None = None) -> JudgmentRecord:
    j = JudgmentRecord(f"L3/api/{item}/{step}", 3, "api", item, step, False, trial, correct=correct)
    j.excluded = excluded
    return j


def test_an_item_is_right_only_when_every_step_is() -> None:
    judgments = [_step("0", 0, True), _step("0", 1, True), _step("1", 0, True), _step("1", 1, False)]
    assert item_figures(judgments) == (1, 2, 0.5)


def test_a_missing_step_makes_its_item_wrong_when_the_length_is_known() -> None:
    judgments = [_step("0", 0, True), _step("0", 1, True)]
    assert item_figures(judgments, {"0": 3}) == (0, 1, 0.0)
    assert item_figures(judgments, {"0": 2}) == (1, 1, 1.0)
    assert item_figures(judgments) == (1, 1, 1.0)  # judged on what it holds


def test_excluded_steps_leave_their_item_and_trials_count_apart() -> None:
    judgments = [
        _step("0", 0, True),
        _step("0", 1, False, excluded="E11"),  # an erratum's step: out of the item, not a wrong step
        _step("1", 0, False, excluded="E12"),  # every step excluded: the item is not counted
        _step("2", 0, True, trial=1),
        _step("2", 0, False, trial=2),
    ]
    assert item_figures(judgments, {"0": 2, "1": 1, "2": 1}) == (2, 3, 0.6667)


def test_items_are_level_3_figures_only() -> None:
    levels, overall = aggregate([_step("0", 0, True), JudgmentRecord("L1/api/d/0", 1, "api", "d", 0, False, 1, correct=True)])
    assert levels["3"].items == 1 and levels["3"].item_accuracy == 1.0
    assert levels["1"].items is None and overall.items is None
    assert "items" not in levels["1"].to_dict() and "items" in levels["3"].to_dict()


def test_the_oracle_gets_every_item_and_old_metrics_gain_the_figure(bench: Benchmark, tmp_path: Path) -> None:
    result = run(RunConfig("oracle", levels=(3,), level3="steps", out=str(tmp_path / "oracle")), bench=bench, progress=False)
    level3 = score_run(result.path, bench=bench).levels["3"]
    assert (level3.items_correct, level3.items) == (len(bench.level3), len(bench.level3))
    assert sum(item_steps(bench).values()) == len(bench.samples(3, "api"))
    # A metrics.json written before item figures existed: reading the run adds them from its judgments.
    path = result.path / "metrics.json"
    old = json.loads(path.read_text())
    for key in ("items", "items_correct", "item_accuracy"):
        del old["levels"]["3"][key]
    path.write_text(json.dumps(old))
    again = scored(result.path, bench=bench).metrics.levels["3"]
    assert (again.items_correct, again.items, again.item_accuracy) == (len(bench.level3), len(bench.level3), 1.0)
