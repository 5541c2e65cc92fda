"""Fine-tuned models shipped with the project, and model targets with an adapter (``base+adapter``).

A model spec's target may name an adapter after a ``+``:
``llamacpp:gemma-3-270m+models/lynx-270m/adapter``. A shipped model has a short
name: ``llamacpp:lynx-270m`` is the same as the embedded Gemma 3 270M with the
adapter in ``models/lynx-270m/adapter``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apibank_lib.core.paths import PROJECT_ROOT

__all__ = ["SHIPPED", "models_dir", "resolve_model", "adapter_folder", "adapter_digest", "adapter_prompt_mode"]


def models_dir() -> Path:
    """``models/`` beside the package (the repository's shipped adapters)."""
    return PROJECT_ROOT / "models"


SHIPPED: dict[str, tuple[str, str]] = {
    "lynx-270m": ("gemma-3-270m", "lynx-270m/adapter"),
    "ours-equal-270m": ("gemma-3-270m", "ours-equal/adapter"),
    "toolalpaca-equal-270m": ("gemma-3-270m", "toolalpaca-equal/adapter"),
    "lynx-0.5b": ("qwen2.5-coder-0.5b", "lynx-0.5b/adapter"),
    "lynx-0.5b-s2c": ("qwen2.5-coder-0.5b", "lynx-0.5b-s2c/adapter"),
    "lynx-0.5b-s2d": ("qwen2.5-coder-0.5b", "lynx-0.5b-s2d/adapter"),
    "ours-equal-0.5b": ("qwen2.5-coder-0.5b", "ours-equal-0.5b/adapter"),
    "toolalpaca-equal-0.5b": ("qwen2.5-coder-0.5b", "toolalpaca-equal-0.5b/adapter"),
    "synth-hand-0.5b": ("qwen2.5-coder-0.5b", "synth-hand-0.5b/adapter"),
    "synth-made-0.5b": ("qwen2.5-coder-0.5b", "synth-made-0.5b/adapter"),
    "synth-both-0.5b": ("qwen2.5-coder-0.5b", "synth-both-0.5b/adapter"),
}
"""Short name -> (base model, adapter folder relative to :func:`models_dir`): the small Lynx (trained
on a draw from our corpus; ``lynx-0.5b`` on the embedded Qwen2.5-Coder-0.5B-Instruct in chat form; ``lynx-0.5b-s2c``
and ``lynx-0.5b-s2d`` its second stages, trained with the paper's layout in a shuffled API order,
``docs/transfer.md``), and the two
adapters of notebook 05 trained on equal-sized draws of our corpus and of our
ToolAlpaca-format set (``*-0.5b`` on the same instruct base as ``lynx-0.5b``; ``*-270m`` on Gemma); and the three
of notebook 06 trained on equal-sized draws of our AI-written corpus (written by AI assistants following our brief;
``synth-hand-0.5b``, a historical name), the model-made one (``synth-made-0.5b``) and both, half and half
(``synth-both-0.5b``), with one mix over all three levels."""


def resolve_model(target: str) -> dict[str, Any]:
    """Backend options (``model``, and ``adapter`` where one is named) for a model target."""
    if target in SHIPPED:
        # The adapter stays a name here, so a run's identity does not depend on where the project lies.
        return {"model": SHIPPED[target][0], "adapter": target}
    model, plus, adapter = target.partition("+")
    return {"model": model, "adapter": adapter} if plus and adapter else {"model": target}


def adapter_folder(adapter: str) -> Path:
    """The folder of an adapter given as a shipped model's name or as a path."""
    if adapter in SHIPPED:
        return models_dir() / SHIPPED[adapter][1]
    return Path(adapter)


def adapter_digest(adapter: str) -> str:
    """A short hash of an adapter's weights and configuration (part of a run's identity)."""
    import hashlib

    folder = adapter_folder(adapter)
    h = hashlib.sha256()
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        path = folder / name
        h.update(path.read_bytes() if path.is_file() else b"")
    return h.hexdigest()[:16]


def adapter_prompt_mode(adapter: str) -> str | None:
    """The prompt mode an adapter was trained in, read from the ``training.json`` beside its folder.

    ``chat`` when its examples were rendered in chat form (``paper`` when only in the paper's layout),
    ``completion`` when they were plain text; None when no ``training.json`` says (an adapter from elsewhere).
    A model is evaluated by default in the rendering it was trained on.
    """
    import json

    info = adapter_folder(adapter).parent / "training.json"
    if not info.is_file():
        return None
    try:
        data = json.loads(info.read_text()).get("config", {}).get("data", {})
    except (json.JSONDecodeError, AttributeError):
        return None
    from apibank_lib.prompting.modes import CHAT_PROMPT, COMPLETION_PROMPT, PAPER_PROMPT

    modes = str(data.get("modes") or "")
    if not modes:
        return COMPLETION_PROMPT
    from apibank_lib.prompting.modes import parse_modes

    shares = parse_modes(modes)
    return CHAT_PROMPT if shares.get(CHAT_PROMPT, 0) > 0 else PAPER_PROMPT
