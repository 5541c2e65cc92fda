"""Execute the numbered notebooks in order with papermill: every table and figure, regenerated.

The committed notebooks (``notebooks/00_*.ipynb`` ... ``07_*.ipynb``) keep small
default parameters, so that the test command can execute them quickly (nbval).
:func:`reproduce` runs them with the parameters of a profile instead (``quick``,
the default, the reference backends and the small instruct model within about 20 minutes on a 2-core machine;
``standard``, every default model, the committed results; ``full``, every sample for every model), writes the executed copies under ``<results>/notebooks/`` (never over
the committed ones), and returns where the tables and figures are.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.paths import (
    NOTEBOOKS_DIR,
    PROJECT_ROOT,
    figures_dir,
    restored_environment,
    results_dir,
    results_root,
    runs_dir,
)
from apibank_lib.data.datasets import data_source

__all__ = [
    "DEFAULT_MODELS", "INSTRUCT_MODELS", "MODEL_PAIRS", "NOTEBOOKS_DIR", "PROFILES", "QUICK_MODELS", "Reproduction", "compare_tables", "notebooks", "output_root", "parse_param", "reproduce",
]

INSTRUCT_MODELS = (
    "llamacpp:qwen2.5-coder-0.5b", "llamacpp:qwen2.5-coder-1.5b", "llamacpp:lynx-0.5b", "llamacpp:lynx-0.5b-s2d",
)
"""The embedded instruct models (the ``instruct`` extra), the small Lynx v2 (our adapter on the 0.5B) and its second
stage (``lynx-0.5b-s2d``, trained further on chat and the paper's layout), evaluated in ``chat`` prompt mode."""

DEFAULT_MODELS = ("oracle", "no-call", "heuristic", "llamacpp:gemma-3-270m", "llamacpp:lynx-270m", *INSTRUCT_MODELS)
"""The models the notebooks run by default: three reference backends, the embedded base model and its fine-tuned
small Lynx, the two embedded instruct models, and the small Lynx v2 on the smaller one with its second stage."""

QUICK_MODELS = ("oracle", "no-call", "heuristic", "llamacpp:qwen2.5-coder-0.5b")
"""The quick profile's models: the reference backends and the smaller embedded instruct model."""

NOTEBOOK_COMPARISONS: dict[str, Any] = {
    # notebook 05: the base model, the small Lynx v2 and its second stage, and the equal-size arms of our corpus and of
    # ToolAlpaca's format
    "COMPARED": {
        "Qwen2.5-Coder-0.5B base": "llamacpp:qwen2.5-coder-0.5b",
        "small Lynx v2: ours, 260": "llamacpp:lynx-0.5b",
        "small Lynx v2, second stage": "llamacpp:lynx-0.5b-s2d",
        "ours, equal size": "llamacpp:ours-equal-0.5b",
        "ToolAlpaca format, equal size": "llamacpp:toolalpaca-equal-0.5b",
    },
    "COMPARED_PAIRS": [
        ["ours, equal size", "ToolAlpaca format, equal size"],
        ["small Lynx v2: ours, 260", "Qwen2.5-Coder-0.5B base"],
        ["small Lynx v2, second stage", "small Lynx v2: ours, 260"],
        ["ours, equal size", "Qwen2.5-Coder-0.5B base"],
    ],
    "GAIN": ["Qwen2.5-Coder-0.5B base", "small Lynx v2: ours, 260"],
    # notebook 06: the base model and the three equal-size adapters of AI-written, model-made and mixed data
    "WORTH": {
        "Qwen2.5-Coder-0.5B base": "llamacpp:qwen2.5-coder-0.5b",
        "AI-written (ours)": "llamacpp:synth-hand-0.5b",
        "model-made": "llamacpp:synth-made-0.5b",
        "both, half and half": "llamacpp:synth-both-0.5b",
    },
    "WORTH_PAIRS": [
        ["model-made", "AI-written (ours)"],
        ["both, half and half", "AI-written (ours)"],
        ["both, half and half", "model-made"],
        ["model-made", "Qwen2.5-Coder-0.5B base"],
        ["AI-written (ours)", "Qwen2.5-Coder-0.5B base"],
    ],
    "WORTH_LEVELS": [1, 2, 3],  # notebook 06's arms answer every level
    "TRIALS": 4,  # notebook 02's sampled model answers each trial sample four times (pass^1..pass^4)
    "APIS_PER_DOMAIN": 3,  # notebook 06's API agent writes three APIs for its domain
}
"""What notebooks 02, 05 and 06 do under every profile beyond their own defaults: the models 05 and 06 compare, 06's
arms at every level and its agents on three APIs, 02's four trials. The notebooks' own defaults are a quick look at
less (two or three adapters, level 1 and one API in 06, two trials: what their notebook tests run)."""

MODEL_PAIRS: list[list[str]] = [
    ["llamacpp:lynx-0.5b", "llamacpp:qwen2.5-coder-0.5b"],  # what the small Lynx v2's training buys
    ["llamacpp:lynx-0.5b-s2d", "llamacpp:lynx-0.5b"],  # and its second stage over it
    ["llamacpp:qwen2.5-coder-1.5b", "llamacpp:qwen2.5-coder-0.5b"],  # the larger base model
    ["llamacpp:lynx-270m", "llamacpp:gemma-3-270m"],  # the first small Lynx over its base model
    ["heuristic", "no-call"],
]
"""Notebook 03's paired comparisons under the standard and full profiles (each on the samples both models answered:
the same random draw for models with the same limit). A pair is dropped where one of its models is not run (e.g.
``--models`` names fewer), so that the profile never asks for a run that is not there."""

PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        # `make reproduce` from a fresh clone in 11 minutes on 2 cores, compiling llama.cpp included (docs/results.md)
        # (it checks that everything runs end to end; the committed figures come from `standard`): the reference
        # backends on every sample (they cost nothing), the 0.5B instruct model on 15 API-call samples of each level
        # (about 4 s each; its intervals are blank where they rest on fewer than 10 dialogues), 2 replies per level and
        # 1 agent episode; notebooks 05 and 06 answer 2 and 1 samples per adapter (06 at level 1). Every limit draws
        # whole dialogues at random (seed SUBSET_SEED, stratified by first API; apibank_lib.runs.subsets), the same for
        # every model, never the first samples of the files.
        "MODELS": list(QUICK_MODELS),
        "LIMIT": None,
        "KIND_LIMITS": {"response": 2, "episodes": 1},
        "MODEL_LIMITS": {"llamacpp:qwen2.5-coder-0.5b": 15},
        "MAX_STEPS": 12,
        "N_BOOT": 2000,
        "CALL_LIMIT": 2,
        "REPLY_LIMIT": 1,
        "WORTH_LIMIT": 1,
        "TRIALS_LIMIT": 1,  # 2 trials of the 0.5B at temperature 0.7 on the level-1 API-call samples of 1 dialogue
        "SUBSET_SEED": 0,
        **NOTEBOOK_COMPARISONS,
        "WORTH_LEVELS": [1],  # notebook 06's four arms on level 1 only (about 90 s less than every level)
        "TRIALS": 2,
        "APIS_PER_DOMAIN": 1,  # and its synthesis agents on one API (the API stage is most of their time)
    },
    "standard": {
        # The committed results (results/bundled/, and results/<release>/ with --data): every default model, sized
        # for 2 cores (about 2.5 hours of model time on either data, and 3 hours more for notebook 05's three
        # adapters on all level-1 API-call samples). A limit draws whole dialogues at random (seed SUBSET_SEED,
        # stratified by first API), the same dialogues for every model, so rows pair. 112 samples per level
        # (API calls and replies together) hold at least 60 API-call samples at every level (110 held 59 at level 1
        # and 58 at level 2 on the bundled data; tests/test_reproduce.py checks the bar); the 1.5B answers about
        # twice as slowly and gets 40. Notebook 06's adapters answer every API-call sample (about 40 minutes each).
        "LIMIT": None,
        "KIND_LIMITS": {},
        "MODEL_LIMITS": {
            "llamacpp:gemma-3-270m": 40,
            "llamacpp:lynx-270m": 40,  # the same samples as its base model's
            "llamacpp:qwen2.5-coder-0.5b": 112,
            "llamacpp:qwen2.5-coder-1.5b": 40,
            "llamacpp:lynx-0.5b": 112,  # the same samples as its base model's, for paired tests
            "llamacpp:lynx-0.5b-s2d": 112,  # and its second stage's
        },
        "MAX_STEPS": 12,
        "N_BOOT": 2000,
        "CALL_LIMIT": None,
        "REPLY_LIMIT": 100,
        "WORTH_LIMIT": None,
        "TRIALS_LIMIT": 60,  # pass^1..pass^4 of the 0.5B at temperature 0.7 on about 60 level-1 API-call samples
        "SUBSET_SEED": 0,
        "PAIRS": MODEL_PAIRS,
        **NOTEBOOK_COMPARISONS,
    },
    "full": {
        "LIMIT": None, "KIND_LIMITS": {}, "MODEL_LIMITS": {}, "MAX_STEPS": 12, "N_BOOT": 2000, "CALL_LIMIT": None,
        "REPLY_LIMIT": None, "WORTH_LIMIT": None, "TRIALS_LIMIT": None, "SUBSET_SEED": 0, "PAIRS": MODEL_PAIRS,
        **NOTEBOOK_COMPARISONS,
    },
}
"""Parameters each profile gives every notebook (a notebook ignores those it does not declare); ``MODELS``, where a
profile names them, replaces :data:`DEFAULT_MODELS`.

Twelve agent steps (``apibank run``'s default, so that a profile's runs and the command's share their folders)
let every level-3 item of the bundled data finish (at most 8 gold steps, then the answer)."""


@dataclass
class Reproduction:
    """What :func:`reproduce` did.

    Attributes:
        executed: the executed notebooks.
        results: the tables' folder (the data source's: ``results/bundled/`` for the bundled data).
        figures: the figures' folder (the same under ``figures/``).
        seconds: wall time per notebook.
    """

    executed: list[Path] = field(default_factory=list)
    results: Path = field(default_factory=results_dir)
    figures: Path = field(default_factory=figures_dir)
    seconds: dict[str, float] = field(default_factory=dict)
    against_committed: dict[str, list[str]] = field(default_factory=dict)


def compare_tables(written: Path, committed: Path) -> dict[str, list[str]]:
    """The CSV tables of ``written`` against those of the same name in ``committed``: ``same`` (byte for byte),
    ``different`` and ``not committed`` (names, sorted); empty when ``written`` is ``committed``.

    A quick run's tables differ from the committed standard-profile ones wherever a model answered fewer samples;
    the reference rows and the data tables should not."""
    if written.resolve() == committed.resolve() or not written.is_dir():
        return {}
    out: dict[str, list[str]] = {"same": [], "different": [], "not committed": []}
    for table in sorted(written.glob("*.csv")):
        mine = committed / table.name
        key = "not committed" if not mine.is_file() else "same" if mine.read_bytes() == table.read_bytes() else "different"
        out[key].append(table.name)
    return out


def notebooks(directory: str | Path | None = None) -> list[Path]:
    """The numbered notebooks, in order (``00_...`` to ``07_...``; the explorer is not numbered)."""
    folder = Path(directory) if directory is not None else NOTEBOOKS_DIR
    return sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb"))


def _declared(path: Path) -> set[str]:
    """The names a notebook's ``parameters`` cell assigns."""
    import ast

    import nbformat

    nb = nbformat.read(path, as_version=4)
    names: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.Assign):
                    names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _available_defaults(progress: Callable[[str], None] | None, candidates: Sequence[str] = DEFAULT_MODELS) -> list[str]:
    """``candidates`` less the instruct models whose optional packages are not installed (said, not failed)."""
    from apibank_lib.models.packaged import PACKAGED_MODELS, model_status

    usable = {row["name"] for row in model_status() if row["installed"] or row["assembled"]}
    chosen = []
    from apibank_lib.models.catalog import SHIPPED

    for spec in candidates:
        name = spec.split(":", 1)[1] if spec in INSTRUCT_MODELS else None
        name = SHIPPED[name][0] if name in SHIPPED else name  # an adapter needs its base model's packages
        if name is not None and name not in usable:
            if progress is not None:
                progress(f"skipping {spec}: its packages are not installed ({PACKAGED_MODELS[name].pip_command()})")
            continue
        chosen.append(spec)
    return chosen


def parse_param(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` from the command line: the value read as a Python literal (``None``, ``40``, ``"v2"``,
    ``[1, 2]``), or kept as text when it is not one. Never evaluated as code.

    Raises:
        ConfigError: no ``=``, or a name that is not an identifier.
    """
    import ast

    name, eq, value = text.partition("=")
    name = name.strip()
    if not eq or not name.isidentifier():
        raise ConfigError(f"--param {text!r}: expected NAME=VALUE (e.g. CALL_LIMIT=None)")
    try:
        return name, ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        return name, value.strip()


def reproduce(
    *,
    profile: str = "quick",
    data: str | None = None,
    protocol: str | None = None,
    models: Sequence[str] | None = None,
    only: Sequence[str] = (),
    params: dict[str, Any] | None = None,
    notebooks_dir: str | Path | None = None,
    output_dir: str | Path | None = None,
    committed: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Reproduction:
    """Execute the numbered notebooks in order with papermill.

    Args:
        profile: ``quick``, ``standard`` or ``full`` (see :data:`PROFILES`).
        data: a benchmark root (an official release) instead of the bundled data.
        protocol: ``v2`` or ``paper`` (the notebooks' default otherwise).
        models: the models to run (default: the profile's, else :data:`DEFAULT_MODELS`, less the instruct models
            whose optional packages are not installed).
        only: run only the notebooks whose names start with these prefixes (e.g. ``["00", "03"]``).
        params: parameters that replace the profile's (or add to them), given to each notebook that declares them
            (e.g. ``{"CALL_LIMIT": None}``: notebooks 04 and 05 on every level-1 API-call sample, the rest quick).
        notebooks_dir: where the notebooks are (default: the project's).
        output_dir: where the executed copies go (default: ``notebooks/`` beside the tables' root).
        committed: write the tables and figures over the committed ones (``results/``, ``figures/``: what a
            maintainer does to refresh them with the standard profile); by default they go to ``out/results/`` and
            ``out/figures/`` (ignored by git, or ``$APIBANK_OUT``), so the clone stays clean, and
            :attr:`Reproduction.against_committed` says how they compare with the committed ones.
        progress: called with a line of text before and after each notebook.

    Raises:
        ConfigError: an unknown profile, or no notebook matched ``only``.
    """

    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    given_params: dict[str, Any] = dict(PROFILES[profile])
    given_params["MODELS"] = list(models) if models else _available_defaults(progress, given_params.get("MODELS", DEFAULT_MODELS))
    if "PAIRS" in given_params:  # only pairs of models that run (a pair the user gives with --param stays as given)
        given_params["PAIRS"] = [p for p in given_params["PAIRS"] if all(m in given_params["MODELS"] for m in p)]
    if data is not None:
        given_params["DATA"] = str(Path(data).resolve())
    if protocol is not None:
        given_params["PROTOCOL"] = protocol
    given_params.update(params or {})
    chosen = [p for p in notebooks(notebooks_dir) if not only or any(p.name.startswith(o) for o in only)]
    if not chosen:
        raise ConfigError(f"no numbered notebook matches {list(only)}")
    with restored_environment("APIBANK_RESULTS", "APIBANK_FIGURES", "APIBANK_RUNS"):
        if not committed:  # the kernels inherit this process's environment; a folder the user named stays theirs
            os.environ.setdefault("APIBANK_RESULTS", str(output_root() / "results"))
            os.environ.setdefault("APIBANK_FIGURES", str(output_root() / "figures"))
        os.environ.setdefault("APIBANK_RUNS", str(runs_dir()))  # the kernels run in notebooks/: one runs folder for all
        done = _execute(chosen, given_params, data, output_dir, progress)
    if not committed:
        done.against_committed = compare_tables(done.results, PROJECT_ROOT / "results" / data_source(data))
    return done


def output_root() -> Path:
    """Where ``apibank reproduce`` writes unless told to refresh the committed results: ``$APIBANK_OUT``, else
    ``out/`` in the project (ignored by git)."""
    return Path(os.environ.get("APIBANK_OUT") or PROJECT_ROOT / "out")


def _execute(
    chosen: Sequence[Path], given_params: dict[str, Any], data: str | None, output_dir: str | Path | None,
    progress: Callable[[str], None] | None,
) -> Reproduction:
    """Execute the notebooks in order into the folders the environment names."""
    import papermill

    out = Path(output_dir) if output_dir is not None else results_root() / "notebooks"
    out.mkdir(parents=True, exist_ok=True)
    source = data_source(data)
    done = Reproduction(results=results_dir(source), figures=figures_dir(source))
    for i, path in enumerate(chosen, start=1):
        if progress is not None:
            progress(f"[{i}/{len(chosen)}] {path.name} ...")
        start = time.perf_counter()
        given = {k: v for k, v in given_params.items() if k in _declared(path)}
        papermill.execute_notebook(
            str(path),
            str(out / path.name),
            parameters=given,
            cwd=str(path.parent),
            progress_bar=progress is not None,  # a bar over the notebook's cells: minutes of model runs are not silent
            kernel_name="python3",
        )
        done.seconds[path.name] = round(time.perf_counter() - start, 1)
        done.executed.append(out / path.name)
        if progress is not None:
            progress(f"[{i}/{len(chosen)}] {path.name} done in {done.seconds[path.name]:.0f} s")
    return done

