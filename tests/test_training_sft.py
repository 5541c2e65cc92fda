"""The recipe on TRL's SFTTrainer: resume on the same loss curve, the same first loss as the loop, chat-form
examples, and two processes under ``accelerate launch`` on the CPU.

A tiny randomly initialised Qwen2 (2 layers, width 32) with the embedded Qwen2.5 tokenizer stands in for a real
model: the engine's control flow and arithmetic are what is under test, and a step takes milliseconds.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from apibank_lib.core.errors import ConfigError
from apibank_lib.training.export import examples_from_corpus, fingerprint
from apibank_lib.training.recipe import TrainConfig, train
from tests.test_training import CORPUS, _report

pytest.importorskip("trl")
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "kite_repair.yaml"
    path.write_text(CORPUS)
    return path


def _settings(model: Path, **extra: object) -> dict[str, object]:
    return {**dict(model=str(model), accumulate=2, threads=2, save_every=1, rank=4, alpha=8, lr=1e-2, warmup=1), **extra}


def test_a_stopped_run_resumes_on_the_same_loss_curve(tiny_model: Path, corpus: Path, tmp_path: Path) -> None:
    examples = examples_from_corpus(_report(corpus))[:8]
    whole = train(TrainConfig(out=str(tmp_path / "whole"), **_settings(tiny_model)), examples, progress=False)
    assert whole.steps == 4 and whole.examples_seen == 8 and whole.skipped_long == 0
    assert (tmp_path / "whole" / "adapter" / "adapter_model.safetensors").is_file()
    info = json.loads((tmp_path / "whole" / "training.json").read_text())
    assert info["config"]["engine"] == "trl" and info["data_fingerprint"] == fingerprint(examples)
    assert info["processes"] == 1 and info["versions"]["trl"]
    # Stopped after two of four steps (as a kill after the second checkpoint leaves it), then started again:
    half = train(TrainConfig(out=str(tmp_path / "split"), max_steps=2, **_settings(tiny_model)), examples, progress=False)
    assert half.steps == 2
    resumed = train(TrainConfig(out=str(tmp_path / "split"), **_settings(tiny_model)), examples, progress=False)
    assert resumed.steps == 4
    curve = lambda name: (tmp_path / name / "loss.csv").read_text()  # noqa: E731
    assert curve("split") == curve("whole")
    rows = curve("whole").splitlines()
    assert rows[0] == "step,loss" and len(rows) == 5
    losses = [float(r.split(",")[1]) for r in rows[1:]]
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]  # lr 1e-2 on 8 examples: it learns
    with pytest.raises(ConfigError, match="other data"):
        train(TrainConfig(out=str(tmp_path / "whole"), **_settings(tiny_model)), examples[:4], progress=False)


def test_the_engine_starts_from_the_loops_loss_and_skips_long_examples(tiny_model: Path, corpus: Path, tmp_path: Path) -> None:
    examples = [e for e in examples_from_corpus(_report(corpus)) if e.task == "api"][:3]
    first = {}
    for engine in ("loop", "trl"):
        cfg = TrainConfig(out=str(tmp_path / engine), engine=engine, max_steps=1, **_settings(tiny_model, accumulate=1))
        result = train(cfg, examples, progress=False)
        first[engine] = result.final_loss
    # Step 1 sees the same example with a zero-initialised LoRA B: the same model, the same target tokens.
    assert first["loop"] == pytest.approx(first["trl"], abs=1e-3)
    short = TrainConfig(out=str(tmp_path / "short"), max_len=10, **_settings(tiny_model))
    with pytest.raises(ConfigError, match="longer than max_len=10"):
        train(short, examples, progress=False)


def test_chat_form_examples_train_on_the_template_answer_only(tiny_model: Path, corpus: Path, tmp_path: Path) -> None:
    from apibank_lib.training.workflow import train_model

    source = {"format": "corpus", "paths": [str(corpus)], "examples": 4, "mix": "L1/api=1", "seed": 0, "modes": "chat=0.5,paper=0.5"}
    result = train_model(TrainConfig(out=str(tmp_path / "chat"), data=source, **_settings(tiny_model)), progress=False)
    assert result.steps == 2
    info = json.loads((tmp_path / "chat" / "training.json").read_text())
    assert info["config"]["data"]["modes"] == "chat=0.5,paper=0.5"
    # Each target is the template's answer turn: a handful of tokens beside prompts of hundreds.
    assert 0 < result.target_tokens < result.tokens / 5
    from apibank_lib.models.catalog import adapter_prompt_mode

    assert adapter_prompt_mode(str(tmp_path / "chat" / "adapter")) == "chat"


def test_the_trainers_batches_supervise_the_target_tokens_only(tiny_model: Path, corpus: Path, tmp_path: Path) -> None:
    # What the Trainer's collator hands the model, not what we built: TRL rebuilds labels from the input ids when a
    # dataset has none, and then the loss would fall on the prompts too.
    from datasets import Dataset

    from apibank_lib.training.base import _prepare, tokenize_example
    from apibank_lib.training.chat_examples import mode_renderer, template_of
    from apibank_lib.training.sft import _rows, _trainer

    config = TrainConfig(out=str(tmp_path / "batches"), **_settings(tiny_model, accumulate=1))
    lm, tok = _prepare(config)
    render = mode_renderer(template_of(tok), {"chat": 0.5, "paper": 0.5})
    examples = examples_from_corpus(_report(corpus), tasks=("api", "response"), levels=(1,), render=render)[:6]
    assert {e.mode for e in examples} == {"chat", "paper"}
    rows, skipped = _rows(config, examples, tok)
    assert skipped == 0
    batches = list(_trainer(config, lm, tok, Dataset.from_dict(rows)).get_train_dataloader())
    assert len(batches) == len(examples)
    by_ids = {tuple(tokenize_example(tok, e)[0]): e for e in examples}
    for batch in batches:
        ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
        example = by_ids[tuple(ids)]
        supervised = [t for t in labels if t != -100]
        assert tok.decode(supervised) == example.target  # the answer turn, its end-of-turn token included
        start = labels.index(supervised[0])
        assert labels[start:] == ids[start:] and set(labels[:start]) == {-100}


@pytest.mark.slow
def test_two_processes_under_accelerate_launch_train_one_adapter(tiny_model: Path, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "ddp"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    launcher = Path(sys.executable).with_name("accelerate")
    cmd = [
        str(launcher), "launch", "--config_file", str(ROOT / "docs" / "training" / "cpu-2proc.yaml"),
        "-m", "apibank_lib.cli.commands", "train", str(corpus), "--model", str(tiny_model), "--out", str(out),
        "--examples", "8", "--mix", "L1/api=1", "--accumulate", "2", "--rank", "4", "--alpha", "8", "--lr", "1e-2",
        "--threads", "1", "--save-every", "1", "--json",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-4000:]
    info = json.loads((out / "training.json").read_text())
    assert info["processes"] == 2
    # Eight examples, two per process per step, two processes: two optimiser steps.
    assert info["result"]["steps"] == 2 and info["result"]["examples_seen"] == 8
    losses = [float(r.split(",")[1]) for r in (out / "loss.csv").read_text().splitlines()[1:]]
    assert len(losses) == 2 and all(math.isfinite(x) and x > 0 for x in losses)
    from safetensors.torch import load_file

    weights = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    assert weights and any(float(v.abs().sum()) > 0 for k, v in weights.items() if "lora_B" in k)  # it was trained
