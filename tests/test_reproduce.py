"""The notebooks' profiles and default models (what ``apibank reproduce`` runs), without executing a notebook."""

from __future__ import annotations

from typing import Any

import pytest

from apibank_lib import load_benchmark
from apibank_lib.models import packaged as packaged_models
from apibank_lib.report import reproduce
from apibank_lib.report.reproduce import DEFAULT_MODELS, INSTRUCT_MODELS, PROFILES


def test_every_limited_model_is_a_default_model() -> None:
    for profile in PROFILES.values():
        assert set(profile["MODEL_LIMITS"]) <= set(DEFAULT_MODELS)
        assert set(profile.get("MODELS", DEFAULT_MODELS)) <= set(DEFAULT_MODELS)


@pytest.mark.parametrize(("name", "bar"), [("quick", 15), ("standard", 60)])
def test_each_profile_gives_the_small_instruct_model_enough_api_samples_per_level(name: str, bar: int) -> None:
    # The committed standard profile: an interval over at least 60 API-call samples at each level; the quick one,
    # sized for a quick `make reproduce` (docs/results.md), at least 15. In the profile's draw (whole dialogues at random,
    # seed SUBSET_SEED: a limit on samples of both kinds holds however many calls they have).
    from apibank_lib.report import workbench
    from apibank_lib.runs.config import plan

    bench = load_benchmark()
    profile = PROFILES[name]
    model = "llamacpp:qwen2.5-coder-0.5b"
    assert model in profile.get("MODELS", DEFAULT_MODELS)
    settings = workbench.RunSettings(
        limit=profile["LIMIT"], kind_limits=profile["KIND_LIMITS"], model_limits=profile["MODEL_LIMITS"],
        subset_seed=profile["SUBSET_SEED"],
    )
    configs = settings.configs(model, bench)
    assert all(c.draw == "random" and c.subset_seed == profile["SUBSET_SEED"] for c in configs)
    items = {item.key: item for config in configs for item in plan(bench, config)}.values()
    for level in (1, 2, 3):
        assert sum(item.level == level and item.kind == "api" for item in items) >= bar, level


def test_the_profiles_share_the_commands_step_limit() -> None:
    # Same step limit as `apibank run`, so a profile's runs land in the folders the command made.
    from apibank_lib.runs.config import RunConfig

    default = RunConfig("oracle").max_steps
    assert {p["MAX_STEPS"] for p in PROFILES.values()} == {default}


def _status(installed: bool) -> list[dict[str, Any]]:
    return [{"name": name, "installed": installed, "assembled": False} for name in packaged_models.PACKAGED_MODELS]


def test_instruct_models_without_their_packages_are_skipped_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packaged_models, "model_status", lambda: _status(False))
    lines: list[str] = []
    chosen = reproduce._available_defaults(lines.append)
    assert chosen == [m for m in DEFAULT_MODELS if m not in INSTRUCT_MODELS]
    assert len(lines) == len(INSTRUCT_MODELS)
    assert all("pip install 'apibank_lib[qwen-" in line for line in lines)


def test_installed_instruct_models_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packaged_models, "model_status", lambda: _status(True))
    lines: list[str] = []
    assert reproduce._available_defaults(lines.append) == list(DEFAULT_MODELS)
    assert lines == []


def test_a_param_is_read_as_a_literal_never_run() -> None:
    from apibank_lib.core.errors import ConfigError
    from apibank_lib.report.reproduce import parse_param

    assert parse_param("CALL_LIMIT=None") == ("CALL_LIMIT", None)
    assert parse_param("REPLY_LIMIT = 100") == ("REPLY_LIMIT", 100)
    assert parse_param("PAIRS=[['a', 'b']]") == ("PAIRS", [["a", "b"]])
    assert parse_param("PROTOCOL=v2") == ("PROTOCOL", "v2")  # not a literal: kept as text
    assert parse_param("X=__import__('os').getcwd()") == ("X", "__import__('os').getcwd()")
    for bad in ("CALL_LIMIT", "=3", "2x=1"):
        with pytest.raises(ConfigError, match="NAME=VALUE"):
            parse_param(bad)


def test_params_replace_the_profiles_in_the_notebooks_that_declare_them(tmp_path: Any) -> None:
    import nbformat

    for name, source in (("01_a.ipynb", "CALL_LIMIT = 10\nN_BOOT = 5"), ("02_b.ipynb", "N_BOOT = 5")):
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = ["parameters"]
        nb.cells = [cell, nbformat.v4.new_code_cell("print(repr(globals().get('CALL_LIMIT', 'absent')), N_BOOT)")]
        nbformat.write(nb, tmp_path / name)
    done = reproduce.reproduce(
        notebooks_dir=tmp_path, output_dir=tmp_path / "out", models=["oracle"], params={"CALL_LIMIT": None, "N_BOOT": 7}
    )
    printed = [nbformat.read(p, as_version=4).cells[-1].outputs[0]["text"].strip() for p in done.executed]
    assert printed == ["None 7", "'absent' 7"]


def test_the_profiles_pairs_keep_only_models_that_run(tmp_path: Any) -> None:
    """The standard profile compares the fine-tuned models with their bases in notebook 03; with fewer models
    (--models) the pairs of models not run are dropped rather than failing the notebook."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    cell = nbformat.v4.new_code_cell("PAIRS = []")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell("print(PAIRS)")]
    nbformat.write(nb, tmp_path / "03_a.ipynb")
    assert ["llamacpp:lynx-0.5b", "llamacpp:qwen2.5-coder-0.5b"] in reproduce.PROFILES["standard"]["PAIRS"]
    assert "PAIRS" not in reproduce.PROFILES["quick"]  # the quick profile runs no fine-tuned model
    for models, expected in (
        (["heuristic", "no-call"], "[['heuristic', 'no-call']]"),
        (["oracle"], "[]"),
        (["heuristic", "no-call", "llamacpp:qwen2.5-coder-0.5b", "llamacpp:lynx-0.5b"],
         "[['llamacpp:lynx-0.5b', 'llamacpp:qwen2.5-coder-0.5b'], ['heuristic', 'no-call']]"),
    ):
        done = reproduce.reproduce(profile="standard", notebooks_dir=tmp_path, output_dir=tmp_path / "out", models=models)
        assert nbformat.read(done.executed[0], as_version=4).cells[-1].outputs[0]["text"].strip() == expected


def test_the_main_job_writes_into_its_own_folder_and_compares_with_the_committed_tables(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """By default the tables go to out/ (here $APIBANK_OUT), never over the committed results, and the summary says
    which committed tables they match; --committed writes where the committed ones are."""
    import nbformat

    from apibank_lib.core.paths import PROJECT_ROOT

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    committed = sorted(p.name for p in (PROJECT_ROOT / "results" / "bundled").glob("*.csv"))
    assert committed
    same, changed = committed[0], committed[1]
    nb.cells = [
        nbformat.v4.new_code_cell("N_BOOT = 5"),
        nbformat.v4.new_code_cell(
            "import shutil\n"
            "from apibank_lib.core.paths import PROJECT_ROOT, results_dir\n"
            "results_dir().mkdir(parents=True, exist_ok=True)\n"
            f"shutil.copy(PROJECT_ROOT / 'results' / 'bundled' / {same!r}, results_dir() / {same!r})\n"
            f"(results_dir() / {changed!r}).write_text('changed\\n')\n"
            "(results_dir() / 'brand_new.csv').write_text('new\\n')\n"
            "print(results_dir())"
        ),
    ]
    nb.cells[0].metadata["tags"] = ["parameters"]
    nbformat.write(nb, tmp_path / "01_a.ipynb")
    monkeypatch.setenv("APIBANK_OUT", str(tmp_path / "mine"))
    monkeypatch.delenv("APIBANK_RESULTS", raising=False)
    monkeypatch.delenv("APIBANK_FIGURES", raising=False)
    before = (PROJECT_ROOT / "results" / "bundled" / changed).read_bytes()
    done = reproduce.reproduce(notebooks_dir=tmp_path, models=["oracle"])
    assert done.results == tmp_path / "mine" / "results" / "bundled"
    assert nbformat.read(done.executed[0], as_version=4).cells[-1].outputs[0]["text"].strip() == str(done.results)
    assert done.against_committed == {"same": [same], "different": [changed], "not committed": ["brand_new.csv"]}
    assert (PROJECT_ROOT / "results" / "bundled" / changed).read_bytes() == before
    assert "APIBANK_RESULTS" not in __import__("os").environ  # the environment is restored


# --- a profile's run folders: each teacher-forced sample answered once per model ---------------------------

SETTINGS_NAMES = ("settings",)
"""The names the notebooks give the run settings they pass to ``workbench.run_models`` or ``saved_runs``."""


def _parameters(source: str) -> dict[str, Any]:
    """The literal values a notebook's parameters cell assigns (read, never run)."""
    import ast

    cell = source.split('# %% tags=["parameters"]', 1)[1].split("# %%", 1)[0]
    return {
        t.id: ast.literal_eval(node.value)
        for node in ast.parse(cell).body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }


def _notebook_settings(name: str, given: dict[str, Any]) -> list[tuple[list[str], list[Any]]]:
    """(models, run settings) for each ``run_models``/``saved_runs`` call of a notebook under ``given`` parameters.

    The settings expressions are taken from the notebook's own text file and evaluated over its parameters (our
    own notebooks, not model output), so that the test follows what the notebooks do."""
    import ast

    from apibank_lib.env.protocols import V2
    from apibank_lib.report import workbench

    source = (reproduce.NOTEBOOKS_DIR / f"{name}.py").read_text(encoding="utf-8")
    params = {**_parameters(source), **{k: v for k, v in given.items() if k in _parameters(source)}}
    scope: dict[str, Any] = {**params, "workbench": workbench, "V2": V2}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in SETTINGS_NAMES for t in node.targets):
            value = eval(compile(ast.Expression(node.value), name, "eval"), scope)  # our notebook's own expression
            settings = value if isinstance(value, list) else [value]
            compared = next((params[k] for k in ("COMPARED", "WORTH") if k in params), None)  # display name -> spec
            models = list(compared.values()) if compared is not None else list(params["MODELS"])
            found.append((models, settings))
    return found


@pytest.mark.parametrize("profile", ["quick", "standard"])
def test_a_profile_answers_each_teacher_forced_sample_once_per_model(tmp_path: Any, profile: str) -> None:
    from apibank_lib.core.errors import ApibankError
    from apibank_lib.models import load_backend
    from apibank_lib.runs.config import plan
    from apibank_lib.runs.runner import locate_run

    bench = load_benchmark()
    given = {"MODELS": list(DEFAULT_MODELS), **PROFILES[profile], "RUNS_DIR": str(tmp_path)}
    folders: dict[tuple[str, str], set[str]] = {}  # (model, teacher-forced sample) -> the folders that plan it
    notebooks_of: dict[str, set[str]] = {}
    backends: dict[str, Any] = {}
    for name in ("02_run_models", "03_score", "04_error_taxonomy", "05_toolalpaca_comparison", "06_data_synthesis", "07_retrieval"):
        for models, settings in _notebook_settings(name, given):
            for model in models:
                for config in (c for one in settings for c in one.configs(model, bench)):
                    if model not in backends:
                        try:
                            backends[model] = load_backend(config.model, **config.backend_options)
                        except ApibankError:  # a model whose packages are not installed here
                            backends[model] = None
                    if backends[model] is None:
                        continue
                    folder, _ = locate_run(config, bench, backends[model])
                    for item in plan(bench, config):
                        if item.kind != "episode":
                            folders.setdefault((model, item.key), set()).add(folder.path.name)
                    notebooks_of.setdefault(model, set()).add(name[:2])
    assert folders, "no settings found in the notebooks"
    twice = {k: v for k, v in folders.items() if len(v) > 1}
    assert not twice, f"{len(twice)} teacher-forced samples planned in two folders, e.g. {next(iter(twice.items()))}"
    # The check means something: reference models are planned by 02, 03 and 07 alike (one folder between them).
    assert {"02", "03", "07"} <= notebooks_of["oracle"]
