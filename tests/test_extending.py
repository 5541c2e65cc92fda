"""The "How to add ..." recipes of docs/architecture.md, followed in a temporary copy of the package.

Each recipe's stated cost is the files a developer writes or edits; the test makes exactly those edits in a copy
and checks that the command line and the registries offer the new part at once, with nothing else changed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from apibank_lib.core.paths import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "apibank_lib"

TOY_BACKEND = '''"""A toy backend: always the same call."""

from __future__ import annotations

from typing import Any

from apibank_lib.models.base import Backend, Completion, Request


class ToyBackend(Backend):
    """Answers every sample with one fixed calculator call."""

    kind = "toy"
    concurrent = True
    supported_prompt_modes = ("reference",)

    def __init__(self, answer: str = "API-Request: [Calculator(formula='1+1')]") -> None:
        self.name = "toy"
        self.answer = answer

    def complete(self, request: Request) -> Completion:
        return Completion(self.answer)

    def info(self) -> dict[str, Any]:
        return {"backend": self.kind}
'''

TOY_RETRIEVER = '''

class FirstRetriever:
    """A toy retriever: the candidates in their own order."""

    name = "first"

    def __init__(self, schemas: Sequence[ToolSchema], embedder: Any = None) -> None:
        self.schemas = list(schemas)

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        return [(s, 1.0) for s in self.schemas[:k]]
'''


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path.name}: the recipe's anchor {old!r} is not there once"
    path.write_text(text.replace(old, new), encoding="utf-8")


def _python(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Python with ``args``, importing the copy's package instead of the project's."""
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=300)


def _apibank(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _python(copy, "-m", "apibank_lib", *args)


def _copy_package(root: Path) -> Path:
    """The package copied under ``root``, with the data and models it reads linked beside it; returns ``root``."""
    shutil.copytree(PACKAGE, root / "apibank_lib", ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("data", "models"):
        (root / folder).symlink_to(PROJECT_ROOT / folder)
    return root


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package (and the data it reads) with a toy protocol, backend and retriever added by their
    recipes: the files each recipe names, and no others."""
    root = _copy_package(tmp_path_factory.mktemp("extended"))
    package = root / "apibank_lib"
    # A grading protocol: one definition added to PROTOCOLS (1 file).
    _edit(
        package / "env" / "protocols.py",
        "PROTOCOLS: dict[str, GradingProtocol] = {p.name: p for p in (V2, PAPER)}",
        'import dataclasses\n\nTOY = dataclasses.replace(V2, name="toy", version="1")\n'
        "PROTOCOLS: dict[str, GradingProtocol] = {p.name: p for p in (V2, PAPER, TOY)}",
    )
    # A model backend: its module and one BACKENDS line (2 files).
    (package / "models" / "toy.py").write_text(TOY_BACKEND, encoding="utf-8")
    _edit(
        package / "models" / "registry.py",
        '    "heuristic": "apibank_lib.models.baselines:HeuristicBackend",\n',
        '    "heuristic": "apibank_lib.models.baselines:HeuristicBackend",\n    "toy": "apibank_lib.models.toy:ToyBackend",\n',
    )
    # A retriever: a class and one RETRIEVERS line (1 file).
    retrievers = package / "retrieval" / "retrievers.py"
    _edit(
        retrievers,
        "\n\nRETRIEVERS: dict[str, Callable[..., Retriever]] = {",
        TOY_RETRIEVER + "\n\nRETRIEVERS: dict[str, Callable[..., Retriever]] = {",
    )
    _edit(
        retrievers,
        '    "enriched": EnrichedRetriever,\n',
        '    "enriched": EnrichedRetriever,\n    "first": FirstRetriever,\n',
    )
    return root


def test_the_recipes_touch_only_the_files_they_name(copy: Path) -> None:
    changed = []
    for path in sorted((copy / "apibank_lib").rglob("*.py")):
        original = PACKAGE / path.relative_to(copy / "apibank_lib")
        if not original.is_file() or original.read_bytes() != path.read_bytes():
            changed.append(str(path.relative_to(copy)))
    # protocol 1 file, backend 2, retriever 1 (docs/architecture.md, "How to add ...")
    assert changed == [
        "apibank_lib/env/protocols.py",
        "apibank_lib/models/registry.py",
        "apibank_lib/models/toy.py",
        "apibank_lib/retrieval/retrievers.py",
    ]


def test_a_new_protocol_is_offered_and_grades_at_once(copy: Path) -> None:
    assert "toy" in _apibank(copy, "replay", "--help").stdout
    out = _apibank(copy, "replay", "--protocol", "toy", "--level", "1", "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    replayed = json.loads(out.stdout)
    assert replayed["protocol"] == "toy" and replayed["levels"]["1"]["samples"] > 0


def test_a_new_backend_is_named_in_the_help_and_runs(copy: Path, tmp_path: Path) -> None:
    assert "toy" in _apibank(copy, "run", "--help").stdout  # the --model help is built from BACKENDS
    out = _apibank(
        copy, "run", "--model", "toy", "--level", "1", "--limit", "3", "--out", str(tmp_path / "run"), "--json"
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads((tmp_path / "run" / "config.json").read_text())["backend"]["backend"] == "toy"
    assert (tmp_path / "run" / "metrics.json").is_file()


def test_a_new_retriever_is_offered_and_searches(copy: Path) -> None:
    assert "first" in _apibank(copy, "search", "--help").stdout
    out = _apibank(copy, "search", "--retriever", "first", "-k", "2", "--json", "set an alarm")
    assert out.returncode == 0, out.stderr[-2000:]
    assert len(json.loads(out.stdout)) == 2


def test_a_new_notebook_is_found_by_its_name(tmp_path: Path) -> None:
    """A notebook is one text file (plus its listing lines, checked by test_architecture): the paired .ipynb is
    written from it, and apibank reproduce finds it by its number."""
    import jupytext

    from apibank_lib.report import notebook_files, reproduce

    folder = tmp_path / "notebooks"
    folder.mkdir()
    text = '# %% [markdown]\n# # 09 · Toy\n\n# %%\nimport apibank_lib\n\n# %% tags=["parameters"]\nN = 1\n\n# %%\n# NBVAL_CHECK_OUTPUT\nN + 1\n'
    (folder / "09_toy.py").write_text(text, encoding="utf-8")
    jupytext.write(jupytext.read(folder / "09_toy.py"), folder / "09_toy.ipynb")
    assert [p.name for p in reproduce.notebooks(folder)] == ["09_toy.ipynb"]
    assert notebook_files.out_of_sync(folder) == []


TOY_TOOL = '''

class Echo(Tool):
    """A toy tool: says its text back."""

    name = "Echo"
    domain = "utility"
    description = "Say a text back."
    input_parameters = {"text": Param("str", "The text to say back.")}
    output_parameters = {"text": Param("str", "The same text.")}

    def run(self, text: Any) -> Any:
        if not isinstance(text, str):
            raise ToolFailure("text must be a string")
        return text
'''


def test_a_new_tool_is_registered_by_its_class_and_the_checks_ask_for_the_rest(tmp_path: Path) -> None:
    """The tool recipe's first file registers the tool (no registration line); the validator then asks for its
    dialogues, and the pinned counts no longer match: the other files of the recipe are demanded, not optional."""
    from apibank_lib.env.tools.base import LEVEL12
    from apibank_lib.env.tools.registry import tool_classes
    from tests.helpers import TOOL_COUNTS

    root = _copy_package(tmp_path / "extended")
    module = root / "apibank_lib" / "env" / "tools" / "calculator.py"
    module.write_text(module.read_text(encoding="utf-8") + TOY_TOOL, encoding="utf-8")
    called = _apibank(root, "call", "[Echo(text='hello')]")
    assert called.returncode == 0, called.stderr[-2000:]
    assert json.loads(called.stdout)["output"] == "hello"
    count = _python(
        root, "-c", "from apibank_lib.env.tools.registry import tool_classes; print(len(tool_classes('level-1-2')))"
    )
    assert int(count.stdout) == len(tool_classes(LEVEL12)) + 1 == TOOL_COUNTS["level-1-2"] + 1
    validated = _apibank(root, "validate")
    assert validated.returncode != 0
    assert "Echo is used 0 time(s) at levels 1-2 (at least 2 wanted)" in validated.stdout + validated.stderr
