"""The documentation's Python snippets (the README's "From Python", now in docs/architecture.md) run, and print
what their comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from apibank_lib.cli.commands import main

README = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_snippets_run_and_print_what_they_promise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("APIBANK_RUNS", str(tmp_path / "runs"))  # the snippets name runs/<folder> as the default
    assert main(["run", "--model", "oracle", "--level", "1", "--limit", "20", "--json"]) == 0
    capsys.readouterr()
    blocks = _python_blocks()
    assert len(blocks) >= 2
    for block in blocks:
        for folder in re.findall(r'RunFolder\("([^"]+)"\)', block):
            assert (tmp_path / folder).is_dir(), f"the README names {folder}, which the command it quotes does not write"
        promised = [m.group(1).strip() for line in block.splitlines() if (m := re.match(r"print\(.*\)\s+#\s(.*)$", line))]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, "README.md", "exec"), {})  # our own documentation, not model output
        printed = out.getvalue().splitlines()
        assert printed[: len(promised)] == promised
