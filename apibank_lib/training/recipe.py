"""The fine-tuning recipe: LoRA (or full) supervised fine-tuning on (prompt, target) pairs, loss on the target only.

Defaults are sized for the embedded Gemma 3 270M on a 2-core CPU, and the same
code runs unchanged on a GPU at larger scale (it uses CUDA when present; see
the README for an ``accelerate launch`` line):

* the model is the packaged Gemma GGUF, dequantised once by
  :func:`~apibank_lib.models.transformers_backend.load_causal_lm`;
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

import json
import math
import shutil
import time
from pathlib import Path
from typing import Any, Sequence

from apibank_lib.core.errors import ConfigError
from apibank_lib.training.base import (
    TrainConfig,
    TrainResult,
    _peak_rss_mb,
    _prepare,
    _save,
    _schedule,
    publish,
    tokenize_example,
    training_order,
    write_record,
)
from apibank_lib.training.export import TrainingExample, fingerprint

__all__ = ["TrainConfig", "TrainResult", "publish", "tokenize_example", "train", "training_order", "write_record"]


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
