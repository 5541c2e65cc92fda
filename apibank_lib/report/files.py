"""Where the report's tables go: the results folder of the data source in use, as CSV and Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apibank_lib.core.paths import results_dir, use_source
from apibank_lib.data.datasets import Benchmark
from apibank_lib.report.cells import pandas_module


def use_data(bench: Benchmark) -> Path:
    """Write this notebook's tables and figures in the folders of ``bench``'s data source (``results/bundled/``,
    ``results/<release folder>/``, and the same under ``figures/``), so that a run on one source never overwrites
    another's; returns the tables' folder."""
    use_source(bench.source)
    return results_dir()


def _whole_numbers_as_integers(frame: Any) -> Any:
    """A copy in which float columns holding only whole numbers (and blanks) are integers: a count with a blank
    row becomes a float column in pandas, and would print as ``967.0``."""
    pd = pandas_module()
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if pd.api.types.is_float_dtype(values) and values.notna().any():
            present = values.dropna()
            if (present == present.round()).all() and present.abs().max() < 2**53:
                out[column] = values.astype("Int64")
    return out


def save_table(frame: Any, name: str, directory: str | Path | None = None) -> dict[str, Path]:
    """Write a DataFrame as ``<name>.csv`` and ``<name>.md`` (a Markdown table) under the results folder.

    Returns:
        ``{"csv": path, "md": path}``.
    """
    folder = Path(directory) if directory is not None else results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"csv": folder / f"{name}.csv", "md": folder / f"{name}.md"}
    frame = _whole_numbers_as_integers(frame)
    frame.to_csv(paths["csv"], index=False)
    shown = frame.astype(object).where(frame.notna(), "")  # an empty cell, not "nan", where a value does not apply
    paths["md"].write_text(shown.to_markdown(index=False, disable_numparse=True) + "\n", encoding="utf-8")
    return paths
