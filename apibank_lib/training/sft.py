"""The recipe on TRL: ``SFTTrainer`` (transformers' ``Trainer`` on Accelerate) with a PEFT LoRA adapter.

It trains what :func:`~apibank_lib.training.recipe.train` is asked to, with the loop's choices kept:

* the examples in :func:`~apibank_lib.training.recipe.training_order` (a seeded shuffle, the same as the loop's),
  tokenised by :func:`~apibank_lib.training.recipe.tokenize_example`; the loss on the target only (the prompt's
  labels are -100) and examples longer than ``max_len`` skipped, and counted;
* AdamW, linear warm-up then linear decay, gradients clipped at 1.0, accumulated over ``accumulate`` examples;
* the LM head only at the positions a target token is predicted: TRL's fused LM head projects the positions whose
  label is not -100 and never builds the (tokens x vocabulary) logits, which on a CPU is most of the saving the
  loop's ``logits_to_keep`` made (``benchmarks/training_speed.py`` measures both);
* one example per forward pass on a CPU (``batch`` > 1 pads; padding-free batches need flash attention, on a GPU);
* checkpoints every ``save_every`` optimiser steps in ``<out>/checkpoints``; a run started again in the same folder
  resumes from the last one (optimiser, scheduler, RNG and data position), on the same loss curve; ``max_steps``
  stops early without changing the schedule.

Several devices need no change here: ``accelerate launch`` starts one process per device and ``Trainer`` shards the
batches (DDP), or shards the model under FSDP or DeepSpeed ZeRO when the launch configuration says so
(``docs/training/``). Only the main process writes the adapter, ``loss.csv`` and ``training.json``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Sequence

from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from trl import SFTTrainer

from apibank_lib.core.errors import ConfigError
from apibank_lib.training.base import (
    TrainConfig,
    TrainResult,
    _peak_rss_mb,
    _prepare,
    publish,
    tokenize_example,
    training_order,
    write_record,
)
from apibank_lib.training.export import TrainingExample, fingerprint

__all__ = ["train_sft"]

CHECKPOINTS = "checkpoints"
"""The Trainer's checkpoint folder inside a run's output folder."""


def _rows(config: TrainConfig, examples: Sequence[TrainingExample], tok: Any) -> tuple[dict[str, list[Any]], int]:
    """Tokenised training rows in training order (input ids, labels with the prompt masked), and how many were
    skipped for being longer than ``max_len``."""
    ids_col: list[list[int]] = []
    labels_col: list[list[int]] = []
    skipped = 0
    for i in training_order(config, len(examples)):
        ids, cut = tokenize_example(tok, examples[i])
        if len(ids) > config.max_len:
            skipped += 1
            continue
        ids_col.append(ids)
        labels_col.append([-100] * cut + ids[cut:])
    return {"input_ids": ids_col, "labels": labels_col}, skipped


def _check_data(out: Path, data_fp: str) -> None:
    """Refuse to resume checkpoints that were trained on other examples; record the examples of a fresh run."""
    marker = out / CHECKPOINTS / "data.json"
    if marker.is_file():
        if json.loads(marker.read_text()).get("data") != data_fp:
            raise ConfigError(f"{out} holds a checkpoint trained on other data; choose another folder")
        return
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"data": data_fp}) + "\n")


def train_sft(config: TrainConfig, examples: Sequence[TrainingExample], *, progress: bool = True) -> TrainResult:
    """Fine-tune on ``examples`` into ``config.out`` with TRL's ``SFTTrainer``; resumes from ``<out>/checkpoints``.

    Raises:
        ConfigError: TRL is missing, a bad method, or an output folder trained on other data.
    """
    import torch
    from accelerate import PartialState
    from datasets import Dataset
    from transformers.trainer_utils import get_last_checkpoint

    out = Path(config.out)
    state = PartialState()
    data_fp = fingerprint(examples)
    if state.is_main_process:
        out.mkdir(parents=True, exist_ok=True)
        _check_data(out, data_fp)
    state.wait_for_everyone()
    start = time.perf_counter()
    lm, tok = _prepare(config)
    rows, skipped = _rows(config, examples, tok)
    if not rows["input_ids"]:
        raise ConfigError(f"every example is longer than max_len={config.max_len} tokens")
    trainer = _trainer(config, lm, tok, Dataset.from_dict(rows))
    if progress and state.is_main_process:
        trainer.add_callback(_Bar())
    last = get_last_checkpoint(str(out / CHECKPOINTS)) if (out / CHECKPOINTS).is_dir() else None
    clock = _Clock(out, _elapsed(last))
    trainer.add_callback(clock)
    run_start = time.perf_counter()
    trainer.train(resume_from_checkpoint=last)
    seconds = clock.seconds()
    losses = [(int(h["step"]), round(float(h["loss"]), 5)) for h in trainer.state.log_history if "loss" in h]
    steps = trainer.state.global_step
    seen = min(len(rows["input_ids"]), steps * config.accumulate * max(1, state.num_processes))
    tokens = sum(len(x) for x in rows["input_ids"][:seen])
    target_tokens = sum(sum(1 for t in x if t != -100) for x in rows["labels"][:seen])
    result = TrainResult(
        out, steps, seen, skipped, losses[-1][1] if losses else None, round(seconds, 1), tokens, target_tokens,
        round(_peak_rss_mb(), 1),
    )
    folder = out / "adapter" if config.method == "lora" else out / "model"
    tmp = folder.with_name(folder.name + ".tmp")
    trainer.save_model(str(tmp))  # gathers a sharded (FSDP, ZeRO-3) model; writes on the main process only
    if state.is_main_process:
        if config.method == "full":
            tok.save_pretrained(tmp)
            (tmp / "training_args.bin").unlink(missing_ok=True)
        else:
            # The Trainer saves the tokenizer beside the adapter; the base model has it, so ship the adapter alone.
            for extra in tmp.iterdir():
                if extra.name not in ("adapter_config.json", "adapter_model.safetensors"):
                    extra.unlink()
        publish(tmp, folder, config.method)
        import accelerate
        import transformers
        import trl

        write_record(out, config, data_fp, len(examples), result, losses, {
            "load_s": round(run_start - start, 1),
            "device": "cuda" if torch.cuda.is_available() else "cpu",
            "processes": state.num_processes,
            "versions": {"trl": trl.__version__, "transformers": transformers.__version__, "accelerate": accelerate.__version__},
        })
    state.wait_for_everyone()
    return result


def _trainer(config: TrainConfig, lm: Any, tok: Any, dataset: Any) -> Any:
    """The configured ``SFTTrainer`` over tokenised rows (``input_ids``, ``labels``), checkpointing into
    ``<out>/checkpoints``; its collator pads the rows' own labels (the prompt already masked), so the loss falls on
    the targets only."""
    import torch
    from trl import SFTConfig

    if config.lm_head not in ("targets", "all"):
        raise ConfigError(f"lm_head must be 'targets' or 'all', not {config.lm_head!r}")
    cuda = torch.cuda.is_available()
    args = SFTConfig(
        output_dir=str(Path(config.out) / CHECKPOINTS),
        per_device_train_batch_size=1,
        gradient_accumulation_steps=config.accumulate,
        learning_rate=config.lr,
        lr_scheduler_type="linear",
        warmup_steps=config.warmup,
        weight_decay=0.0,
        max_grad_norm=1.0,
        num_train_epochs=1,  # the epochs are in the training order already
        logging_steps=1,
        save_strategy="steps",
        save_steps=config.save_every,
        save_total_limit=2,
        seed=config.seed,
        data_seed=config.seed,
        report_to=[],
        disable_tqdm=True,  # our bar shows the loss; the Trainer's prints a dict every step
        max_length=None,  # long examples are skipped before, never truncated
        packing=False,
        use_cpu=not cuda,
        bf16=cuda and torch.cuda.is_bf16_supported(),
        gradient_checkpointing=config.activation_checkpointing,  # TRL defaults to True: half the speed on a CPU
        dataloader_num_workers=0,
        remove_unused_columns=False,
    )
    trainer = _OrderedTrainer(
        model=lm, args=args, train_dataset=dataset, processing_class=tok,
        compute_loss_func=_all_positions_loss if config.lm_head == "all" else None,
    )
    # The Trainer's own bar and its print of every log dict (one line a step): _Bar shows the loss instead.
    for quiet in (ProgressCallback, PrinterCallback):
        trainer.remove_callback(quiet)
    trainer.add_callback(_StopAt(config.max_steps))
    return trainer


def _all_positions_loss(outputs: Any, labels: Any, num_items_in_batch: Any = None) -> Any:
    """The causal-LM loss from logits at every position (what ``lm_head="all"`` measures against)."""
    import torch

    logits = outputs.logits[:, :-1, :].float()
    target = labels[:, 1:]
    total = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=-100, reduction="sum")
    n = (target != -100).sum() if num_items_in_batch is None else num_items_in_batch
    return total / torch.as_tensor(n).clamp(min=1)


def _elapsed(checkpoint: str | None) -> float:
    """Training seconds spent before a checkpoint (recorded beside it by earlier runs)."""
    if checkpoint is None:
        return 0.0
    path = Path(checkpoint).parent / "elapsed.json"
    if not path.is_file():
        return 0.0
    return float(json.loads(path.read_text()).get(Path(checkpoint).name, 0.0))


class _OrderedTrainer(SFTTrainer):  # type: ignore[misc]
    """``SFTTrainer`` that keeps the dataset's order: it is the seeded training order already (the same as the
    loop's), and a resumed run skips exactly the batches it has seen. Accelerate still shards it across processes."""

    def _get_train_sampler(self, train_dataset: Any = None) -> Any:
        from torch.utils.data import SequentialSampler

        return SequentialSampler(train_dataset if train_dataset is not None else self.train_dataset)


class _StopAt(TrainerCallback):  # type: ignore[misc]
    """Stop after ``max_steps`` optimiser steps without shortening the learning-rate schedule."""

    def __init__(self, max_steps: int | None) -> None:
        self.max_steps = max_steps

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.max_steps is not None and state.global_step >= self.max_steps:
            control.should_training_stop = True
            control.should_save = True  # stopped on purpose: a later run resumes from exactly here
        return control


class _Clock(TrainerCallback):  # type: ignore[misc]
    """Training seconds, counted across resumes: each checkpoint records the total so far beside it."""

    def __init__(self, out: Path, before: float) -> None:
        self.path = out / CHECKPOINTS / "elapsed.json"
        self.before = before
        self.start = time.perf_counter()

    def seconds(self) -> float:
        return self.before + time.perf_counter() - self.start

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        known = json.loads(self.path.read_text()) if self.path.is_file() else {}
        known[f"checkpoint-{state.global_step}"] = round(self.seconds(), 1)
        self.path.write_text(json.dumps(known, sort_keys=True) + "\n")


class _Bar(TrainerCallback):  # type: ignore[misc]
    """A progress bar over optimiser steps with the mean loss of the last ten steps and the learning rate."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.window: list[float] = []

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=state.max_steps, initial=state.global_step, desc="fine-tuning", unit="step")

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.update(state.global_step - self.bar.n)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if self.bar is not None and logs and "loss" in logs:
            self.window = (self.window + [float(logs["loss"])])[-10:]
            postfix = {"loss": f"{sum(self.window) / len(self.window):.3f}"}
            if "learning_rate" in logs:
                postfix["lr"] = f"{float(logs['learning_rate']):.1e}"
            self.bar.set_postfix(postfix)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.close()
