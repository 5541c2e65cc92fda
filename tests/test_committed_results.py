"""The committed tables that no model's speed or build can change match what the code produces now: a drift check.

``results/bundled/`` is written by ``apibank reproduce`` (the README's first command). Its tables of the data and of
the reference backends (oracle, no-call, heuristic) are deterministic, so they are made again here and compared cell
by cell with the committed files: a change of the data, the grading or a table's code that is not followed by
regenerating the results fails here. (Rows of embedded models depend on answers that take minutes to make; they are
checked by regenerating, ``apibank reproduce``.)
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from apibank_lib.core.paths import PROJECT_ROOT
from apibank_lib.data.datasets import Benchmark
from apibank_lib.report import analysis, workbench
from apibank_lib.report.reproduce import PROFILES

COMMITTED = PROJECT_ROOT / "results" / "bundled"
REFERENCE = ["oracle", "no-call", "heuristic"]


def _same(fresh: pd.DataFrame, name: str, tmp_path: Path) -> None:
    """``fresh`` written as the notebooks write it, read back, equals the committed ``<name>.csv``."""
    analysis.save_table(fresh, name, tmp_path)
    made = pd.read_csv(tmp_path / f"{name}.csv")
    committed = pd.read_csv(COMMITTED / f"{name}.csv")
    pd.testing.assert_frame_equal(made, committed, check_dtype=False, obj=f"results/bundled/{name}.csv")


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("statistics", analysis.statistics_table),
        ("statistics_by_level", analysis.level_statistics_table),
        ("calls_by_domain", analysis.calls_by_domain),
    ],
)
def test_the_data_tables_are_what_the_code_makes(bench: Benchmark, tmp_path: Path, name: str, make: object) -> None:
    _same(make(bench), name, tmp_path)  # type: ignore[operator]


def test_the_reference_rows_of_the_main_table_are_what_the_code_makes(bench: Benchmark, tmp_path: Path) -> None:
    standard = PROFILES["standard"]  # the committed results are the standard profile's
    settings = workbench.RunSettings(limit=standard["LIMIT"], max_steps=standard["MAX_STEPS"], runs_dir=tmp_path / "runs")
    runs, _ = workbench.run_models(REFERENCE, bench, settings, progress=False)
    fresh = analysis.main_table(runs, reported_rows=False, dated=False, n_boot=standard["N_BOOT"], seed=0)
    analysis.save_table(fresh, "main_table", tmp_path)
    timed = list(analysis.TIMED_COLUMNS)  # seconds differ from run to run; the reference backends count no tokens
    made = pd.read_csv(tmp_path / "main_table.csv").drop(columns=timed)
    committed = pd.read_csv(COMMITTED / "main_table.csv").drop(columns=["date", *timed])
    committed = committed[committed["model"].isin(REFERENCE)].reset_index(drop=True)
    pd.testing.assert_frame_equal(made, committed, check_dtype=False, obj="results/bundled/main_table.csv")
