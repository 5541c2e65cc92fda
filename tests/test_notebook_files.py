"""The notebooks are paired text files (jupytext): every pair in sync, and an edit on one side is caught."""

from __future__ import annotations

import shutil
from pathlib import Path

import jupytext
import pytest

from apibank_lib.core.paths import NOTEBOOKS_DIR
from apibank_lib.report.notebook_files import main, out_of_sync, pairs
from apibank_lib.report.reproduce import notebooks


def test_every_notebook_has_its_text_file_and_the_pairs_agree() -> None:
    found = pairs()
    assert len(found) == len(notebooks()) + 1  # the numbered notebooks and the explorer
    assert all(py.is_file() for _, py in found)
    assert out_of_sync() == [], "\n".join(map(str, out_of_sync()))


def test_no_generator_writes_the_notebooks_any_more() -> None:
    assert not (NOTEBOOKS_DIR / "make_notebooks.py").exists()


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    for nb, py in pairs():
        if nb.name.startswith(("03", "explorer")):
            shutil.copy(nb, tmp_path)
            shutil.copy(py, tmp_path)
    return tmp_path


def test_an_edit_to_the_text_file_alone_is_reported(copy: Path) -> None:
    py = copy / "03_score.py"
    py.write_text(py.read_text(encoding="utf-8").replace("load_benchmark", "load_benchmark  # edited", 1), encoding="utf-8")
    found = out_of_sync(copy)
    assert [m.notebook.name for m in found] == ["03_score.ipynb"]
    assert "cell" in found[0].reason


def test_a_cell_added_in_the_notebook_alone_is_reported(copy: Path) -> None:
    path = copy / "explorer.ipynb"
    nb = jupytext.read(path)
    nb.cells.append(jupytext.reads("# %%\nprint('new')\n", fmt="py:percent").cells[0])
    jupytext.write(nb, path)
    found = out_of_sync(copy)
    assert [m.notebook.name for m in found] == ["explorer.ipynb"]


def test_a_notebook_without_its_text_file_is_reported(copy: Path) -> None:
    (copy / "03_score.py").unlink()
    assert [m.reason for m in out_of_sync(copy)] == ["no paired text file 03_score.py"]


def test_the_check_command_exits_nonzero_when_a_pair_differs(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert main([]) == 0
    monkeypatch.setattr("apibank_lib.report.notebook_files.NOTEBOOKS_DIR", copy)
    (copy / "03_score.py").unlink()
    assert main([]) == 1


def test_normalise_makes_the_file_depend_on_cells_only(copy: Path) -> None:
    from apibank_lib.report.notebook_files import normalise

    path = copy / "03_score.ipynb"
    nb = jupytext.read(path)
    nb.cells[0]["id"] = "random01"
    nb.cells[1].metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
    normalise(nb)
    first = jupytext.writes(nb, fmt="ipynb")
    again = jupytext.reads(first, fmt="ipynb")
    normalise(again)
    assert jupytext.writes(again, fmt="ipynb") == first
    assert nb.cells[0]["id"] != "random01" and "execution" not in nb.cells[1].metadata
