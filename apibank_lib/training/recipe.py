"""The fine-tuning recipe: LoRA (or full) supervised fine-tuning on (prompt, target) pairs, loss on the target only.

Defaults are sized for the embedded Gemma 3 270M on a 2-core CPU, and the same
code runs unchanged on a GPU at larger scale (it uses CUDA when present; see
the README for an ``accelerate launch`` line):

* the model is the packaged Gemma GGUF, dequantised once by
  :func:`~apibank_lib.backends.transformers_backend.load_causal_lm`;
* one example per forward pass (no padding), gradients accumulated over
  ``accumulate`` examples; AdamW, linear warm-up then linear decay;
* logits are computed for the target positions only (``logits_to_keep``):
  the 262k-word output layer would otherwise dominate the cost on a CPU;
* a checkpoint (adapter, optimiser, scheduler, position in the data) is written
  every ``save_every`` optimiser steps; :func:`train` resumes from it after a kill;
* everything is seeded; the data order is a seeded shuffle.

The output folder holds the adapter (``adapter/adapter_model.safetensors`` in
float16, ``adapter/adapter_config.json``), ``training.json`` (the configuration, data
fingerprint, sizes, timings, the command) and ``loss.csv`` (the loss curve).
"""

from __future__ import annotations

import csv
import json
import math
import random
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from apibank_lib.errors import ConfigError
from apibank_lib.training.export import TrainingExample, fingerprint

__all__ = ["TrainConfig", "TrainResult", "publish", "tokenize_example", "train", "training_order", "write_record"]


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

    from apibank_lib.backends.transformers_backend import load_causal_lm

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

            from apibank_lib.training.shipped import adapter_folder

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
        # Ship the adapter in float16: half the bytes, and loaders cast it back to the model's dtype.
        from safetensors.torch import load_file, save_file

        weights = tmp / "adapter_model.safetensors"
        save_file({k: v.half().contiguous() for k, v in load_file(str(weights)).items()}, str(weights), metadata={"format": "pt"})
    if folder.exists():
        shutil.rmtree(folder)
    tmp.rename(folder)


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


def train(config: TrainConfig, examples: Sequence[TrainingExample], *, progress: bool = True) -> TrainResult:
    """Fine-tune on ``examples`` into ``config.out`` with ``config.engine``; resumes from a checkpoint there.

    Raises:
        ConfigError: a bad method or engine, or an output folder trained on other data.
    """
    if config.engine == "trl":
        try:
            from apibank_lib.training.sft import train_sft
        except ImportError as exc:  # pragma: no cover - the extra is part of `all`
            raise ConfigError(f"the TRL engine needs the 'train' extra: pip install 'apibank_lib[train]' (or --engine loop): {exc}") from exc

        return train_sft(config, examples, progress=progress)
    if config.engine != "loop":
        raise ConfigError(f"engine must be 'trl' or 'loop', not {config.engine!r}")
    return _train_loop(config, examples, progress=progress)


def _train_loop(config: TrainConfig, examples: Sequence[TrainingExample], *, progress: bool) -> TrainResult:
    """The single-device loop: one example per forward pass, logits at the target positions only."""
    import torch

    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    data_fp = fingerprint(examples)
    ckpt = out / "checkpoint"
    state_path = ckpt / "state.json"
    start = time.perf_counter()
    lm, tok = _prepare(config)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    lm.to(device)

    order = training_order(config, len(examples))
    total_steps = math.ceil(len(order) / config.accumulate)
    # max_steps stops early without changing the schedule, so a stopped run resumes onto the same curve.
    stop_at = total_steps if config.max_steps is None else min(total_steps, config.max_steps)

    params = [p for p in lm.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _schedule(total_steps, config.warmup))
    step, position, skipped, tokens, target_tokens, elapsed = 0, 0, 0, 0, 0, 0.0
    losses: list[tuple[int, float]] = []
    if state_path.is_file():
        state = json.loads(state_path.read_text())
        if state.get("data") != data_fp:
            raise ConfigError(f"{out} holds a checkpoint trained on other data; choose another folder")
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        if config.method == "lora":
            set_peft_model_state_dict(lm, load_file(str(ckpt / "adapter" / "adapter_model.safetensors")))
        else:
            lm.load_state_dict(torch.load(ckpt / "model.pt", weights_only=True))
        opt.load_state_dict(torch.load(ckpt / "optimizer.pt", weights_only=True))
        sched.load_state_dict(torch.load(ckpt / "scheduler.pt", weights_only=True))
        step, position, skipped = state["step"], state["position"], state["skipped"]
        tokens, target_tokens, elapsed = state["tokens"], state["target_tokens"], state["seconds"]
        losses = [tuple(x) for x in state["losses"]]  # type: ignore[misc]
        torch.set_rng_state(torch.tensor(state["torch_rng"], dtype=torch.uint8))
    lm.train()

    from tqdm.auto import tqdm

    bar = tqdm(total=stop_at, initial=step, desc="fine-tuning", unit="step", disable=not progress)
    run_start = time.perf_counter()
    window: list[float] = []
    while step < stop_at and position < len(order):
        opt.zero_grad(set_to_none=True)
        acc_loss, acc_n = 0.0, 0
        while acc_n < config.accumulate and position < len(order):
            ex = examples[order[position]]
            position += 1
            ids, cut = tokenize_example(tok, ex)
            if len(ids) > config.max_len:
                skipped += 1
                continue
            input_ids = torch.tensor([ids], device=device)
            # Logits only where a target token is predicted: positions cut-1 .. len-2.
            keep = torch.arange(cut - 1, len(ids) - 1, device=device)
            logits = lm(input_ids=input_ids, logits_to_keep=keep).logits[0].float()
            labels = input_ids[0, cut:]
            loss = torch.nn.functional.cross_entropy(logits, labels)
            (loss / config.accumulate).backward()
            acc_loss += float(loss.detach())
            acc_n += 1
            tokens += len(ids)
            target_tokens += len(ids) - cut
        if acc_n == 0:
            break
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        mean = acc_loss / acc_n
        losses.append((step, round(mean, 5)))
        window = (window + [mean])[-10:]
        bar.update(1)
        bar.set_postfix(loss=f"{sum(window) / len(window):.3f}", lr=f"{sched.get_last_lr()[0]:.1e}")
        if step % config.save_every == 0 or step == stop_at:
            seconds = elapsed + time.perf_counter() - run_start
            _checkpoint(lm, opt, sched, ckpt, config, data_fp, step, position, skipped, tokens, target_tokens, seconds, losses)
    bar.close()
    seconds = elapsed + time.perf_counter() - run_start
    _save(lm, tok, out / "adapter" if config.method == "lora" else out / "model", config.method)
    result = TrainResult(
        out, step, position - skipped, skipped, losses[-1][1] if losses else None, round(seconds, 1), tokens, target_tokens,
        round(_peak_rss_mb(), 1),
    )
    write_record(out, config, data_fp, len(examples), result, losses, {"load_s": round(run_start - start, 1), "device": device})
    return result


def _checkpoint(lm: Any, opt: Any, sched: Any, ckpt: Path, config: TrainConfig, data_fp: str, step: int, position: int,
                skipped: int, tokens: int, target_tokens: int, seconds: float, losses: list[tuple[int, float]]) -> None:
    import torch

    tmp = ckpt.with_name("checkpoint.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    if config.method == "lora":
        lm.save_pretrained(tmp / "adapter")
    else:
        torch.save(lm.state_dict(), tmp / "model.pt")
    torch.save(opt.state_dict(), tmp / "optimizer.pt")
    torch.save(sched.state_dict(), tmp / "scheduler.pt")
    state = {
        "data": data_fp, "step": step, "position": position, "skipped": skipped, "tokens": tokens,
        "target_tokens": target_tokens, "seconds": seconds, "losses": losses,
        "torch_rng": torch.get_rng_state().tolist(),
    }
    (tmp / "state.json").write_text(json.dumps(state))
    # Replace the old checkpoint only once the new one is complete: a kill mid-write keeps the old one.
    old = ckpt.with_name("checkpoint.old")
    if ckpt.exists():
        if old.exists():
            shutil.rmtree(old)
        ckpt.rename(old)
    tmp.rename(ckpt)
    if old.exists():
        shutil.rmtree(old)
