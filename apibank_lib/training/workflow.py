"""The training workflow end to end: data source -> examples -> the recipe, recorded so that it can be repeated.

A run's data source is a small dict (``format``, ``paths``, ``examples``,
``mix``, ``seed``) kept in the model folder's ``training.json`` beside the
recipe's settings; :func:`retrain` rebuilds the same examples from it and trains
again. ``apibank train`` is a thin shell over :func:`train_model`.

This module sits above the synthesis tester (a corpus is judged before it is
trained on), beside the workbench.
"""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import fields
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.paths import PROJECT_ROOT
from apibank_lib.training.export import (
    TrainingExample,
    examples_from_corpus,
    examples_from_toolalpaca,
    fingerprint,
    mix,
    parse_api_order,
    parse_shares,
)
from apibank_lib.training.recipe import TrainConfig, TrainResult, train

__all__ = ["DEFAULT_MIX", "build_examples", "train_model", "retrain"]

DEFAULT_MIX = "L1/api=0.5,L2/api=0.2,L3/api=0.1,L1/response=0.1,L2/response=0.05,L3/response=0.05"
"""The default draw: mostly API calls, most of them in the Call layout (what the paper's Call accuracy measures)."""


def _project_path(path: str | Path) -> Path:
    """A recorded path as given, or, when it is relative and not found here, relative to the project root."""
    p = Path(path)
    if p.exists() or p.is_absolute():
        return p
    root = PROJECT_ROOT
    return root / p if (root / p).exists() else p


def build_examples(data: dict[str, Any], template: Any = None) -> tuple[list[TrainingExample], str]:
    """The training examples a data source describes, and a one-line note of what was read.

    Args:
        data: ``format`` (``corpus``, ``toolalpaca``, or ``hf``: datasets in the messages layout), ``paths``, ``examples``
            (how many to draw; None for all), ``mix`` (group shares, as
            :func:`~apibank_lib.training.export.parse_shares` reads them), ``seed``, and ``modes``: the renderings
            through the model's chat template and their shares (``chat=0.7,paper=0.3``, as
            :func:`~apibank_lib.training.chat_examples.parse_modes` reads them; absent: completion examples), and
            ``sources``: groups of paths to draw equal shares of ``examples`` from (in place of ``paths``), and
            ``api_order``: the order prompts describe their APIs in (:data:`~apibank_lib.training.export.API_ORDERS`;
            absent: ``appearance``).
        template: the model's :class:`~apibank_lib.prompting.chat_template.ChatTemplate`, needed when ``modes`` is set.

    Raises:
        ConfigError: an unknown format, no example, or ``modes`` without a template.
    """
    if data.get("sources"):
        return _balanced(data, template)
    paths = [str(_project_path(p)) for p in data["paths"]]
    order = parse_api_order(data.get("api_order") or "appearance")  # absent in folders trained before the order was a choice
    per_mode = order if isinstance(order, dict) else None
    if per_mode is not None and not data.get("modes"):
        raise ConfigError("an API order per mode (MODE=ORDER) needs --prompt-modes")
    order = "appearance" if per_mode is not None else order  # per mode, the renderer orders each sample
    render = None
    if data.get("modes"):
        from apibank_lib.prompting.modes import parse_modes
        from apibank_lib.training.chat_examples import mode_renderer

        if template is None:
            raise ConfigError("training in chat form (modes) needs the model's chat template")
        render = mode_renderer(template, parse_modes(data["modes"]), data.get("seed", 0), orders=per_mode)
    if data.get("format", "corpus") == "toolalpaca":
        from apibank_lib.data.formats.toolalpaca import convert, read_toolalpaca

        pool = [
            e for path in paths
            for e in examples_from_toolalpaca(convert(read_toolalpaca(path)), render=render, api_order=order, seed=data.get("seed", 0))
        ]
        note = f"{len(pool)} examples converted from ToolAlpaca format"
    elif data.get("format", "corpus") == "corpus":
        from apibank_lib.data.check_train import check_corpus

        report = check_corpus(paths)
        pool = examples_from_corpus(report, render=render, api_order=order, seed=data.get("seed", 0))
        note = f"{len(report.accepted)} dialogues accepted ({len(report.rejected)} rejected); {len(pool)} examples"
    elif data.get("format", "corpus") == "hf":
        if render is None:
            raise ConfigError("datasets in the messages layout are chat conversations: train them with --prompt-modes chat")
        from apibank_lib.training.chat_examples import message_examples

        # The rows are rendered conversations already: the modes' shares and API orders do not apply to them.
        pool = [e for path in paths for e in message_examples(_hf_rows(path), template)]
        note = f"{len(pool)} examples from datasets in the messages layout"
    else:
        raise ConfigError(f"unknown training data format {data.get('format')!r}; use corpus, toolalpaca or hf")
    if not pool:
        raise ConfigError(f"no training example in {' '.join(paths)}")
    chosen = mix(pool, data.get("examples") or len(pool), parse_shares(data.get("mix") or DEFAULT_MIX), seed=data.get("seed", 0))
    return chosen, f"{note}, training on {len(chosen)}"


def _hf_rows(path: str) -> list[dict[str, Any]]:
    """The rows of a dataset saved with ``save_to_disk`` (``apibank export --format hf``): its ``train`` split, or
    every split of a dataset without one, or a Parquet file's rows.

    Raises:
        ConfigError: nothing there that ``datasets`` can read.
    """
    from datasets import Dataset, DatasetDict, load_dataset, load_from_disk

    try:
        if path.endswith(".parquet"):
            loaded: Any = load_dataset("parquet", data_files=path, split="train")
        else:
            loaded = load_from_disk(path)
    except (FileNotFoundError, ValueError) as exc:
        raise ConfigError(f"{path}: not a dataset saved by datasets ({exc})") from exc
    if isinstance(loaded, DatasetDict):
        parts = [loaded["train"]] if "train" in loaded else [loaded[s] for s in sorted(loaded)]
    else:
        parts = [loaded] if isinstance(loaded, Dataset) else []
    return [row for part in parts for row in part]


def _balanced(data: dict[str, Any], template: Any) -> tuple[list[TrainingExample], str]:
    """Equal draws from each of ``data["sources"]`` (lists of paths), each by the mix, shuffled together.

    Two corpora pooled into one draw would be drawn from in proportion to their sizes; a comparison of "both
    together" at an equal size wants each to give half."""
    import random

    sources = [list(group) for group in data["sources"]]
    total = data.get("examples")
    if not total:
        raise ConfigError("a draw from several sources needs a number of examples")
    if total < len(sources):
        raise ConfigError(f"{total} examples cannot be split over {len(sources)} sources")
    chosen: list[TrainingExample] = []
    notes = []
    for i, group in enumerate(sources):
        share = total // len(sources) + (1 if i < total % len(sources) else 0)
        part, note = build_examples({**data, "sources": None, "paths": group, "examples": share}, template)
        if len(part) < share:
            raise ConfigError(f"source {i + 1} ({' '.join(group)}) has {len(part)} examples, fewer than its {share}")
        chosen += part
        notes.append(f"source {i + 1}: {note}")
    random.Random(data.get("seed", 0)).shuffle(chosen)
    return chosen, "; ".join(notes)


def train_model(
    config: TrainConfig, *, progress: bool = True, note: Any = None, expected_fingerprint: str | None = None
) -> TrainResult:
    """Build the examples ``config.data`` describes and fine-tune on them (resuming a checkpoint in ``config.out``).

    Examples in chat form (``config.data["modes"]``) are rendered with the chat template of ``config.model``'s
    tokenizer: the template its GGUF file carries, the one the llama.cpp backend evaluates it with.
    ``expected_fingerprint`` (what :func:`retrain` passes) warns when the examples built are not those.
    """
    template = None
    if config.data.get("modes"):
        from apibank_lib.models.transformers_backend import load_tokenizer
        from apibank_lib.training.chat_examples import template_of

        template = template_of(load_tokenizer(config.model))
    examples, text = build_examples(config.data, template)
    if note is not None:
        note(text)
    built = fingerprint(examples) if expected_fingerprint is not None else None
    if built != expected_fingerprint:
        # The corpus, the tester that judges it, or the renderer changed since the folder was trained.
        warnings.warn(
            f"{config.out}: the recorded data source now gives other examples (fingerprint {built}, "
            f"recorded {expected_fingerprint}); the model trained again will differ from the one it replaces",
            stacklevel=2,
        )
    return train(config, examples, progress=progress)


def retrain(folder: str | Path, *, progress: bool = True) -> TrainResult:
    """Train a model folder again from scratch with the settings and data source its ``training.json`` records.

    The folder is replaced; it takes as long as the original run did (``training.json`` says how long). A warning
    says so when the data source no longer gives the examples it was trained on (a corpus that grew, a tester
    rule that now refuses some of its dialogues).
    """
    folder = Path(folder)
    info = folder / "training.json"
    if not info.is_file():
        raise ConfigError(f"no training.json in {folder}: not a folder written by apibank train")
    record = json.loads(info.read_text())
    recorded = record["config"]
    known = {f.name for f in fields(TrainConfig)}
    settings = {k: (tuple(v) if k == "target_modules" else v) for k, v in recorded.items() if k in known}
    settings["out"] = str(folder)
    settings.setdefault("engine", "loop")  # folders from before the TRL engine were trained by the loop
    if not settings.get("data"):
        raise ConfigError(f"{info} does not record its data source; train it again with apibank train")
    shutil.rmtree(folder)
    return train_model(TrainConfig(**settings), progress=progress, expected_fingerprint=record.get("data_fingerprint"))
