"""Run folders of every past layout still load (tests/fixtures/run_layouts/, each written by the code of its time:
layout 1 by commit ef271c5, layout 2 by fc1ab84, layout 3 by 3dcd26b, with `apibank run --model oracle --level 3
--limit 1 --level3 both`; only the data path and the output folder in their config.json were blanked), and today's
folders say their format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from apibank_lib.core.errors import DataError
from apibank_lib.data.datasets import Benchmark
from apibank_lib.runs.config import RunConfig
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.legacy import FORMAT_VERSION, LAYOUTS, layout_of, prompt_mode_of, upgrade
from apibank_lib.runs.runner import run

LAYOUT_DIR = Path(__file__).parent / "fixtures" / "run_layouts"


def _copy(layout: int, tmp_path: Path) -> RunFolder:
    target = tmp_path / f"layout-{layout}"
    shutil.copytree(LAYOUT_DIR / f"layout-{layout}", target)
    return RunFolder(target)


def test_there_is_a_fixture_of_every_past_layout() -> None:
    assert sorted(int(p.name.split("-")[1]) for p in LAYOUT_DIR.iterdir() if p.is_dir()) == list(range(1, FORMAT_VERSION))
    assert sorted(LAYOUTS) == list(range(1, FORMAT_VERSION + 1))
    for layout in range(1, FORMAT_VERSION):
        raw = json.loads((LAYOUT_DIR / f"layout-{layout}" / "config.json").read_text(encoding="utf-8"))
        assert "format_version" not in raw and layout_of(raw) == layout


@pytest.mark.parametrize("layout", [1, 2, 3])
def test_a_folder_of_each_past_layout_reads_as_todays(layout: int, tmp_path: Path) -> None:
    folder = _copy(layout, tmp_path)
    info = folder.read_info()
    assert info.format_version == FORMAT_VERSION
    assert info.prompt_mode == "reference" and info.protocol == "v2"
    # Its plan: the one command that wrote it (layout 1 kept none; it is read from the settings).
    assert len(info.plans) == 1 and info.plans[0]["levels"] == [3] and info.plans[0]["level3"] == "both"
    episodes = info.episode_set()
    assert episodes is not None and episodes["max_steps"] == 12 and episodes["retriever"] == "enriched"
    assert episodes["file"] == ("predictions.jsonl" if layout < 3 else "episodes-12steps-enriched.jsonl")
    predictions = folder.read_predictions()
    assert not predictions.dropped
    kinds = sorted(r.kind for r in predictions.records.values())
    assert kinds.count("episode") == 1 and "api" in kinds
    metrics = folder.read_metrics()
    assert metrics.overall.api_samples > 0 and metrics.overall.api_accuracy == 1.0 and folder.read_judgments()


@pytest.mark.parametrize("layout", [1, 2, 3])
def test_an_old_folder_written_again_says_todays_format_and_keeps_its_identity(layout: int, tmp_path: Path) -> None:
    folder = _copy(layout, tmp_path)
    before = folder.read_info()
    folder.write_info(before)
    raw = json.loads(folder.config_path.read_text(encoding="utf-8"))
    assert raw["format_version"] == FORMAT_VERSION and raw["identity"] == before.identity
    again = folder.read_info()
    assert again == before and again.episode_set() == before.episode_set()
    assert len(folder.read_predictions().records) == len(_copy(layout, tmp_path / "fresh").read_predictions().records)


def test_a_new_run_writes_the_format_version(bench: Benchmark, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(RunConfig("oracle", levels=(1,), limit=2, out=str(out)), bench=bench, progress=False)
    raw = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert raw["format_version"] == FORMAT_VERSION and layout_of(raw) == FORMAT_VERSION


def test_a_folder_of_a_newer_format_is_refused_naming_it(tmp_path: Path) -> None:
    folder = _copy(3, tmp_path)
    raw = json.loads(folder.config_path.read_text(encoding="utf-8"))
    folder.config_path.write_text(json.dumps({**raw, "format_version": FORMAT_VERSION + 1}), encoding="utf-8")
    with pytest.raises(DataError, match=f"run format {FORMAT_VERSION + 1} was written by a newer"):
        folder.read_info()
    with pytest.raises(DataError, match="not a whole number"):
        upgrade({**raw, "format_version": "four"})
    with pytest.raises(DataError, match="not a run config"):
        upgrade({"identity": {}})


@pytest.mark.parametrize(
    ("identity", "mode"),
    [
        ({}, "completion"),  # the oldest folders: a completion prompt, no prompt mode recorded
        ({"prompt_mode": "tools"}, "chat"),  # chat's first name
        ({"prompt_mode": "chat"}, "paper"),  # before chat rendering: the paper's text sent as messages
        ({"prompt_mode": "chat", "prompt": {"template_sha": "x"}}, "chat"),
        ({"prompt_mode": "reference"}, "reference"),
    ],
)
def test_the_prompt_mode_names_of_older_folders(identity: dict[str, object], mode: str) -> None:
    assert prompt_mode_of(identity) == mode
