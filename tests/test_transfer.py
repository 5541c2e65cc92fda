"""Transfer tables: the same models on two data sources, and the patterns where the data differ."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from apibank_lib.cli.commands import main
from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import ApiCallSample
from apibank_lib.data.datasets import Benchmark
from apibank_lib.report import analysis, workbench
from apibank_lib.report.transfer import (
    PATTERNS,
    compare_results,
    data_profile,
    transfer_errors,
    transfer_funnel,
    transfer_table,
)


def _runs(bench: Benchmark, tmp_path: Path, models: list[str]) -> list:
    settings = workbench.RunSettings(levels=(1, 2), tasks=("api",), level3="steps", runs_dir=tmp_path)
    return workbench.run_models(models, bench, settings, progress=False)[0]


def test_the_profile_counts_each_pattern_per_level_and_shows_no_text(bench: Benchmark, release: Benchmark) -> None:
    profile = data_profile({"bundled": bench, "fixture": release})
    assert set(profile["data"]) == {"bundled", "fixture"}
    assert set(PATTERNS) <= set(profile["feature"])
    level1 = profile[(profile["data"] == "bundled") & (profile["level"] == 1)].set_index("feature")
    samples = [s for s in bench.samples(1, "api") if isinstance(s, ApiCallSample) and not s.duplicate]
    fetches = sum(s.gold.api_name == "GetUserToken" for s in samples)
    assert level1.loc["API-call samples (searches left out)", "count"] == len(samples)
    assert level1.loc[PATTERNS[0], "count"] == fetches and fetches > 0
    assert level1.loc[PATTERNS[0], "share (%)"] == round(100 * fetches / len(samples), 1)
    # Our prompts list APIs in the order of their first call: a dialogue's first call is always described first.
    assert level1.loc[PATTERNS[10], "count"] == level1.loc[PATTERNS[9], "count"] > 0
    text = " ".join(str(v) for v in profile.to_numpy().ravel())
    assert not any(s.history and str(s.history[0]) in text for s in samples[:20])  # counts only, no dialogue text


def test_the_release_prompts_list_apis_in_their_own_order(release: Benchmark) -> None:
    profile = data_profile({"fixture": release}).set_index(["level", "feature"])
    first_calls = profile.loc[(1, PATTERNS[9]), "count"]
    assert profile.loc[(1, PATTERNS[10]), "count"] == first_calls
    assert profile.loc[(1, PATTERNS[11]), "count"] <= first_calls


def test_the_transfer_table_sets_each_model_beside_itself(bench: Benchmark, release: Benchmark, tmp_path: Path) -> None:
    runs = {"bundled": _runs(bench, tmp_path, ["oracle", "heuristic"]), "fixture": _runs(release, tmp_path, ["oracle", "heuristic"])}
    table = transfer_table(runs, n_boot=50)
    oracle = table[table["model"].str.startswith("oracle")].set_index("level")
    assert list(oracle.index) == [1, 2]
    assert (oracle["bundled acc"] == 100.0).all() and (oracle["fixture acc"] > 90.0).all()  # the fixture keeps a defect
    assert (oracle["fixture - bundled"] == (oracle["fixture acc"] - 100.0).round(2)).all()
    assert oracle.loc[1, "bundled n"] == len(bench.samples(1, "api")) and oracle.loc[1, "bundled dialogues"] > 1
    heuristic = table[table["model"].str.startswith("heuristic")].set_index("level")
    delta = heuristic.loc[1, "fixture acc"] - heuristic.loc[1, "bundled acc"]
    assert heuristic.loc[1, "fixture - bundled"] == pytest.approx(delta, abs=0.011)
    errors = transfer_errors(runs)
    assert {"heuristic (reference) on bundled", "heuristic (reference) on fixture"} <= set(errors.columns)
    steps = transfer_funnel(runs, {"bundled": bench, "fixture": release})
    assert {"bundled share (%)", "fixture share (%)"} <= set(steps.columns)
    first = steps[(steps["model"] == "oracle (reference)") & (steps["stage"] == "API-call samples")]
    assert (first["bundled share (%)"] == 100.0).all()
    assert isinstance(table, pd.DataFrame)


def _written(bench: Benchmark, runs: list, folder: Path) -> Path:
    """The tables notebooks 02 and 04 write for ``runs``, in ``folder``."""
    analysis.save_table(analysis.main_table(runs, reported_rows=False, n_boot=50, seed=0), "main_table", folder)
    analysis.save_table(analysis.error_distribution(runs), "error_distribution", folder)
    analysis.save_table(analysis.funnel(analysis.by_model(runs, "heuristic"), bench), "funnel", folder)
    return folder


def test_the_transfer_from_written_tables_agrees_with_the_one_from_runs(
    bench: Benchmark, release: Benchmark, tmp_path: Path
) -> None:
    # `apibank transfer results/bundled results/<release>`: notebook 08's comparison without running a model.
    models = ["oracle", "heuristic"]
    runs = {"bundled": _runs(bench, tmp_path / "r", models), "fixture": _runs(release, tmp_path / "r", models)}
    folders = {
        "bundled": _written(bench, runs["bundled"], tmp_path / "bundled"),
        "fixture": _written(release, runs["fixture"], tmp_path / "fixture"),
    }
    tables = compare_results(folders)
    table = tables["transfer"]
    from_runs = transfer_table(runs, n_boot=50).set_index(["model", "level"])
    for model in models:
        mine = table[(table["model"] == model) & (table["measure"].isin(["Call", "Retrieve+Call"]))].set_index("level")
        assert list(mine.index) == [1, 2]
        for level in (1, 2):
            theirs = from_runs.loc[(f"{model} (reference, v2.2)", level)]
            for source in folders:
                assert mine.loc[level, f"{source} acc"] == pytest.approx(theirs[f"{source} acc"], abs=0.006)
                assert mine.loc[level, f"{source} n"] == theirs[f"{source} n"]
            assert mine.loc[level, "fixture - bundled"] == pytest.approx(theirs["fixture - bundled"], abs=0.011)
    total = table[(table["model"] == "heuristic") & (table["measure"] == "Total")]
    assert len(total) == 1 and total["level"].isna().all()
    errors = tables["transfer_errors"]
    assert {"bundled share (%)", "fixture share (%)"} <= set(errors.columns)
    assert set(errors["model"]) <= set(models) and "heuristic" in set(errors["model"])
    steps = tables["transfer_funnel"]
    first = steps[(steps["model"] == "heuristic") & (steps["stage"] == "API-call samples")]
    assert (first["bundled share (%)"] == 100.0).all() and (first["fixture share (%)"] == 100.0).all()
    # The command writes the three tables where it is told, under the names it is given.
    assert main(["transfer", str(folders["bundled"]), str(folders["fixture"]), "--names", "ours", "theirs",
                 "--save-to", str(tmp_path / "out")]) == 0
    written = pd.read_csv(tmp_path / "out" / "transfer.csv")
    assert {"ours acc", "theirs acc", "theirs - ours"} <= set(written.columns)
    assert {p.name for p in (tmp_path / "out").iterdir()} >= {"transfer_errors.md", "transfer_funnel.csv"}


def test_the_transfer_from_tables_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at least two"):
        compare_results({"bundled": tmp_path})
    with pytest.raises(ConfigError, match=r"main_table\.csv: no such table"):
        compare_results({"a": tmp_path / "a", "b": tmp_path / "b"})
