"""Notebook tests (nbval): the kernels write runs, tables and figures under a temporary folder, not the project.

nbval starts each notebook's kernel from this process, so the environment set
here reaches the library's defaults (:func:`apibank_lib.core.paths.runs_dir`,
:func:`apibank_lib.core.paths.results_root`, :func:`apibank_lib.core.paths.figures_root`).
"""

from __future__ import annotations

import os
import tempfile

import pytest


def pytest_configure(config: pytest.Config) -> None:
    base = tempfile.mkdtemp(prefix="apibank-notebooks-")
    for var in ("APIBANK_RUNS", "APIBANK_RESULTS", "APIBANK_FIGURES"):
        os.environ[var] = os.path.join(base, var.lower())


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every notebook cell counts as slow: the notebooks start models (``make test`` runs them after the fast tests,
    one at a time; ``-m "not slow"`` leaves them out)."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)
