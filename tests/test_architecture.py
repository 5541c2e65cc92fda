"""Properties of the code base itself: import layering, where protocol names live, one registration path."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from apibank_lib.env.protocols import PROTOCOLS
from apibank_lib.env.tools.base import LEVEL3, LEVEL12, Tool
from apibank_lib.env.tools.registry import TOOL_MODULES, tool_classes, tools_defined_in
from apibank_lib.models.registry import BACKENDS, backend_class
from tests.helpers import TOOL_COUNTS

PACKAGE = Path(__file__).resolve().parents[1] / "apibank_lib"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules a module imports, at any depth of its code (function-level imports included)."""

    def resolve(name: str) -> str:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("apibank_lib"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in known else resolve(node.module))
        elif isinstance(node, ast.Import):
            found |= {resolve(a.name) for a in node.names if a.name.startswith("apibank_lib")}
    return found


def test_no_import_cycle_in_the_package() -> None:
    known = _modules()
    graph = {name: _imports(path, known) - {name} for name, path in known.items()}
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for dep in sorted(graph.get(name, ())):
            # A package's __init__ only re-exports; importing it from inside the package is the usual idiom.
            if dep == "apibank_lib" or dep not in graph:
                continue
            assert state.get(dep) != 1, "import cycle: " + " -> ".join([*path, name, dep])
            if dep not in state:
                visit(dep, [*path, name])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings}


def test_protocol_names_are_strings_only_where_protocols_are_defined() -> None:
    for name, path in _modules().items():
        # prompting.modes defines the prompt modes, one of which shares the word "paper" (the paper's text prompt).
        if name in ("apibank_lib.env.protocols", "apibank_lib.prompting.modes"):
            continue
        assert not _string_constants(path) & set(PROTOCOLS), f"{name} names a protocol as a string"


def test_checker_rules_carry_no_protocol_names() -> None:
    for toolset in (LEVEL12, LEVEL3):
        for cls in tool_classes(toolset):
            assert not any(p in rule for rule in cls.checker_rules() for p in PROTOCOLS), cls.name
            assert not any(p in attr for attr in vars(cls) if attr.startswith("check") for p in PROTOCOLS), cls.name


def test_every_tool_comes_from_one_registration_path() -> None:
    listed = {cls for module in TOOL_MODULES for cls in tools_defined_in(module)}
    assert listed == set(tool_classes(LEVEL12)) | set(tool_classes(LEVEL3))
    assert (len(tool_classes(LEVEL12)), len(tool_classes(LEVEL3))) == (TOOL_COUNTS["level-1-2"], TOOL_COUNTS["level-3"])
    assert len({cls.name for cls in listed}) == TOOL_COUNTS["names"]  # four names exist in both tool sets
    assert all(cls.domain for cls in listed), [cls.name for cls in listed if not cls.domain]
    # every Tool subclass the package defines is registered, except the abstract bases
    defined = {cls for cls in _all_subclasses(Tool) if cls.__module__.startswith("apibank_lib.")}
    assert {cls for cls in defined if not cls.abstract} == listed


def _all_subclasses(cls: type) -> set[type]:
    return {sub for direct in cls.__subclasses__() for sub in {direct} | _all_subclasses(direct)}


def test_every_backend_is_one_registry_line() -> None:
    for kind in BACKENDS:
        assert backend_class(kind).kind == kind


def _choices(flag: str) -> list[set[str]]:
    """The choices of ``flag`` in every subcommand that has it."""
    from apibank_lib.cli.commands import build_parser

    parser = build_parser()
    found = []
    for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
        for sub in action.choices.values():
            for option in sub._actions:
                if flag in option.option_strings and option.choices:
                    found.append(set(option.choices))
    return found


def test_every_retriever_and_protocol_is_one_registry_entry() -> None:
    from apibank_lib.env.protocols import PROTOCOLS
    from apibank_lib.grading.toolrl import TOOLRL
    from apibank_lib.retrieval.retrievers import RETRIEVERS

    assert _choices("--retriever") and all(c == set(RETRIEVERS) for c in _choices("--retriever"))
    # ToolRL's protocol judges only ToolRL's own files, through `apibank run` (apibank_lib.grading.toolrl, not a registry entry).
    assert _choices("--protocol") and all(c - {TOOLRL.name} == set(PROTOCOLS) for c in _choices("--protocol"))
    assert sum(TOOLRL.name in c for c in _choices("--protocol")) == 1


def test_every_notebook_is_one_text_file_named_where_it_is_listed() -> None:
    from apibank_lib.core.paths import NOTEBOOKS_DIR, PROJECT_ROOT
    from apibank_lib.report import reproduce

    texts = sorted(p.stem for p in NOTEBOOKS_DIR.glob("[0-9][0-9]_*.py"))
    assert texts and [p.stem for p in reproduce.notebooks()] == texts
    for listing in (PROJECT_ROOT / "README.md", PROJECT_ROOT / "docs" / "notebooks.md", NOTEBOOKS_DIR / "README.md"):
        text = listing.read_text(encoding="utf-8")
        assert [t for t in texts if f"`{t}`" not in text and f"**`{t}`**" not in text] == [], listing.name


STAGES = ["core", "retrieval", "env", "data", "prompting", "grading", "models", "runs", "training", "synthesis", "report", "integrations", "cli"]


def test_the_stage_contracts_hold() -> None:
    """import-linter's contracts of pyproject.toml (each stage imports only the stages below it, function-level
    imports included; training and synthesis do not know each other) hold for the package as it is."""
    from importlinter import configuration
    from importlinter.application.use_cases import lint_imports

    configuration.configure()

    assert lint_imports(config_filename=str(PACKAGE.parent / "pyproject.toml"), cache_dir=None, no_logo=True), "broken import contracts: run `lint-imports` to see them"


def test_the_package_shows_its_stages() -> None:
    """`ls apibank_lib` shows the stages and nothing else beside the package's own two files."""
    entries = sorted(p.name for p in PACKAGE.iterdir() if p.name != "__pycache__")
    assert entries == sorted(["__init__.py", "__main__.py", *STAGES])
    config = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    for stage in STAGES:
        assert re.search(rf"apibank_lib\.{stage}\b", config), f"stage {stage} is in no contract"


def test_the_model_help_names_every_backend_and_named_model() -> None:
    """`--model`'s help is built from the registries: a new backend or shipped adapter needs no edit of the CLI."""
    from apibank_lib.cli.commands import build_parser
    from apibank_lib.models.registry import model_help, named_models

    text = model_help()
    assert all(kind in text for kind in BACKENDS)
    assert all(name in text for names in named_models().values() for name in names)
    run = next(a for a in build_parser()._subparsers._group_actions[0].choices["run"]._actions if "--model" in a.option_strings)
    assert run.help == text


def test_notebook_07_takes_its_retrievers_from_the_registry() -> None:
    source = (PACKAGE.parent / "notebooks" / "07_retrieval.py").read_text(encoding="utf-8")
    assert "RETRIEVERS = None" in source and "REGISTERED_RETRIEVERS" in source
    from apibank_lib.retrieval.retrievers import RETRIEVERS

    assert not any(f'"{name}"' in source.split("# %% tags=[\"parameters\"]")[1].split("# %%")[0] for name in RETRIEVERS)
