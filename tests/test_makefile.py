"""The set-up recipe: uv is handed pip's own configuration, so that it installs from the same registries."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_setup_hands_uv_pips_find_links_indexes_and_constraints(tmp_path: Path) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\nfind-links = /wheels/here\nextra-index-url = file:///index/one file:///index/two\n"
        "constraint = /etc/limits.txt\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PIP_CONFIG_FILE": str(conf)}
    plan = subprocess.run(
        ["make", "-n", "setup", f"VENV={tmp_path / 'venv'}", f"WHEEL_CACHE={tmp_path / 'wheels'}"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=60,
    ).stdout
    uv_lines = [line for line in plan.splitlines() if "uv pip install" in line]
    assert len(uv_lines) == 2  # torch first, then the package with its extras
    for line in uv_lines:
        for expected in ("--find-links /wheels/here", "--extra-index-url file:///index/one",
                         "--extra-index-url file:///index/two", "--constraint /etc/limits.txt",
                         "--index-strategy unsafe-best-match"):
            assert expected in line, (expected, line)
        assert "else" in line and "pip install -q" in line.split("else", 1)[1]  # pip where uv is missing or fails
    assert "torch==2.13.0" in uv_lines[0] and "-e '.[all]'" in uv_lines[1]
