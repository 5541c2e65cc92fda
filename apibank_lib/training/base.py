"""What both training engines share: the configuration, the result, tokenising an example, loading the model
with its adapter, the training order, saving an adapter and the run's record (see :mod:`apibank_lib.training.recipe`)."""

from __future__ import annotations

import csv
import json
import math
import random
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from apibank_lib.core.errors import ConfigError
from apibank_lib.training.export import TrainingExample

__all__ = ["TrainConfig", "TrainResult", "publish", "sort_target_modules", "tokenize_example", "training_order", "write_record"]


@dataclass
class TrainConfig:
    """How to fine-tune.

    Attributes:
        out: the output folder (adapter, checkpoint, loss curve, training.json).
        model: ``gemma-3-270m`` (the packaged GGUF), another GGUF or a model directory.
        method: ``lora`` or ``full``.
        rank / alpha / dropout / target_modules: the LoRA adapter.
        lr: peak learning rate; warmup: warm-up steps (optimiser steps).
        epochs: passes over the examples (fractions allowed: 0.5 = half of them).
        accumulate: examples per optimiser step.
        max_len: examples with more tokens (prompt + target) are skipped, and counted.
        seed: everything random (data order, initialisation, dropout).
        save_every: optimiser steps between checkpoints.
        threads: torch CPU threads (None: leave torch's setting).
        max_steps: stop after this many optimiser steps (None: the whole schedule).
        init_adapter: a LoRA adapter folder to continue training from (a second
            stage on new examples) instead of a fresh adapter; recorded, so that
            :func:`~apibank_lib.training.workflow.retrain` can repeat the stages.
        engine: ``trl`` (TRL's ``SFTTrainer`` on transformers' ``Trainer`` and Accelerate: several devices,
            DDP, FSDP, DeepSpeed through ``accelerate launch``) or ``loop`` (the first, single-device loop, kept as
            the reference the engine is measured against in ``benchmarks/training_speed.py``).
        lm_head: ``targets`` (the LM head only where a target token is predicted, the default of both engines) or
            ``all`` (every position, as a plain causal-LM loss does; ``trl`` only, so that
            ``benchmarks/training_speed.py`` can measure what the default saves).
        activation_checkpointing: recompute activations in the backward pass instead of keeping them (``trl``
            only): less memory for long sequences or 7B-class models, about half the speed (TRL's own default is on;
            ours is off, measured on this machine).
        data: where the examples came from (recorded in ``training.json`` so the
            run can be repeated: see :mod:`apibank_lib.training.workflow`).
        command: the command line that started the run (recorded).
    """

    out: str
    model: str = "gemma-3-270m"
    method: str = "lora"
    rank: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    lr: float = 2e-4
    warmup: int = 10
    epochs: float = 1.0
    accumulate: int = 8
    max_len: int = 1024
    seed: int = 0
    save_every: int = 20
    threads: int | None = None
    max_steps: int | None = None
    init_adapter: str | None = None
    engine: str = "trl"
    lm_head: str = "targets"
    activation_checkpointing: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    command: str = field(default_factory=lambda: " ".join(sys.argv))


@dataclass
class TrainResult:
    """What a training run did."""

    out: Path
    steps: int
    examples_seen: int
    skipped_long: int
    final_loss: float | None
    seconds: float
    tokens: int
    target_tokens: int
    peak_rss_mb: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        d = asdict(self)
        d["out"] = str(self.out)
        return d


def tokenize_example(tokenizer: Any, ex: TrainingExample) -> tuple[list[int], int]:
    """Token ids of prompt + target, and where the target starts.

    The prompt is tokenised alone, as at inference, and the target's tokens follow. A completion example gets the
    tokenizer's BOS and an end-of-sequence token after its target. A chat-template example (``chat`` or
    ``paper`` mode) already holds its special tokens as text, BOS and end of turn included, so none is added
    (the template's end of turn is where a chat model's generation stops; its EOS may be another token): its text
    is tokenised as the local backends tokenise a rendered prompt.
    """
    templated = ex.mode != "completion"
    prompt_ids = tokenizer(ex.prompt, add_special_tokens=not templated)["input_ids"]
    target_ids = tokenizer(ex.target, add_special_tokens=False)["input_ids"]
    eos = tokenizer.eos_token_id
    if eos is not None and not templated:
        target_ids = target_ids + [eos]
    return prompt_ids + target_ids, len(prompt_ids)


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _prepare(config: TrainConfig) -> tuple[Any, Any]:
    import torch

    from apibank_lib.models.transformers_backend import load_causal_lm

    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    lm, tok, _ = load_causal_lm(config.model)
    if config.method == "lora":
        try:
            from peft import LoraConfig, get_peft_model
        except ImportError as exc:  # pragma: no cover
            raise ConfigError("LoRA needs peft: pip install 'apibank_lib[hf]'") from exc
        if config.init_adapter:
            from peft import PeftModel

            from apibank_lib.models.catalog import adapter_folder

            return PeftModel.from_pretrained(lm, str(adapter_folder(config.init_adapter)), is_trainable=True), tok
        lora = LoraConfig(
            r=config.rank,
            lora_alpha=config.alpha,
            lora_dropout=config.dropout,
            target_modules=list(config.target_modules),
            bias="none",
            task_type="CAUSAL_LM",
        )
        lm = get_peft_model(lm, lora)
    elif config.method != "full":
        raise ConfigError(f"method must be 'lora' or 'full', not {config.method!r}")
    return lm, tok


def _schedule(total_steps: int, warmup: int):  # noqa: ANN202 - a LambdaLR factor
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    return factor


def _save(lm: Any, tok: Any, folder: Path, method: str) -> None:
    tmp = folder.with_name(folder.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    lm.save_pretrained(tmp)
    if method == "full":
        tok.save_pretrained(tmp)
    publish(tmp, folder, method)


def publish(tmp: Path, folder: Path, method: str) -> None:
    """Move a freshly saved model or adapter from ``tmp`` to ``folder``; an adapter is shipped in float16.

    ``folder`` is replaced only once ``tmp`` is complete, so a kill mid-save keeps the previous one.
    """
    if method == "lora":
        # PEFT writes a generic model-card template; models/README.md describes our adapters instead.
        (tmp / "README.md").unlink(missing_ok=True)
        sort_target_modules(tmp / "adapter_config.json")
        # Ship the adapter in float16: half the bytes, and loaders cast it back to the model's dtype.
        from safetensors.torch import load_file, save_file

        weights = tmp / "adapter_model.safetensors"
        save_file({k: v.half().contiguous() for k, v in load_file(str(weights)).items()}, str(weights), metadata={"format": "pt"})
    if folder.exists():
        shutil.rmtree(folder)
    tmp.rename(folder)


def sort_target_modules(config_file: Path) -> None:
    """Write an adapter configuration's ``target_modules`` in sorted order.

    PEFT keeps them as a set and writes it in the order of that run's string hashes, so two trainings on the same
    data and seed would write different bytes, and an adapter's digest (part of a run folder's identity) would
    differ with them.
    """
    cfg = json.loads(config_file.read_text())
    if isinstance(cfg.get("target_modules"), list):
        cfg["target_modules"] = sorted(cfg["target_modules"])
        config_file.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def training_order(config: TrainConfig, n: int) -> list[int]:
    """The indices of ``n`` examples in the order they are trained on: a seeded shuffle, repeated for
    ``config.epochs`` > 1 and cut for fractional epochs (both engines use it, so they see the same examples)."""
    order = list(range(n))
    random.Random(config.seed).shuffle(order)
    n_examples = max(1, int(round(len(order) * config.epochs)))
    return (order * math.ceil(config.epochs))[:n_examples] if config.epochs > 1 else order[:n_examples]


def write_record(out: Path, config: TrainConfig, data_fp: str, n_examples: int, result: TrainResult,
                 losses: Sequence[tuple[int, float]], extra: dict[str, Any]) -> None:
    """``loss.csv`` and ``training.json`` of a finished run: settings, data fingerprint, sizes, timings, versions."""
    import torch

    with (out / "loss.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "loss"])
        w.writerows(losses)
    info = {
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()},
        "data_fingerprint": data_fp,
        "examples": n_examples,
        "result": result.to_dict(),
        "torch": torch.__version__,
        **extra,
    }
    info["result"]["out"] = str(out)
    (out / "training.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")


