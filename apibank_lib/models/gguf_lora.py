"""A PEFT LoRA adapter written as a llama.cpp LoRA adapter (GGUF), so the fast backend can evaluate it.

llama.cpp applies an adapter to the quantised base model at load time
(``llamacpp:gemma-3-270m`` with ``--option adapter=<dir>``): evaluation then
runs at llama.cpp's speed instead of transformers'. Tensor names follow
``gguf``'s own name map for the architecture; ``lora_a`` keeps PEFT's
``(rank, in)`` shape and ``lora_b`` its ``(out, rank)`` shape, which is the
layout llama.cpp reads, and the scale is ``alpha / rank`` as in PEFT.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from apibank_lib.core.errors import ConfigError

__all__ = ["adapter_to_gguf", "gguf_adapter_path", "gguf_architecture"]

_PREFIX = "base_model.model."


def gguf_architecture(model_file: str | Path) -> str:
    """The ``general.architecture`` of a GGUF model file (``gemma3``, ``qwen2``, ...): an adapter's tensor names follow it."""
    import gguf

    reader = gguf.GGUFReader(str(model_file))
    field = reader.fields.get("general.architecture")
    if field is None:
        raise ConfigError(f"{model_file}: a GGUF file without general.architecture")
    return bytes(field.parts[field.data[0]]).decode()


def gguf_adapter_path(adapter_dir: str | Path, arch: str = "gemma3") -> Path:
    """Where the GGUF form of an adapter is cached (keyed by the adapter's bytes and the architecture)."""
    from apibank_lib.core.paths import cache_dir

    adapter_dir = Path(adapter_dir)
    weights = adapter_dir / "adapter_model.safetensors"
    if not weights.is_file():
        raise ConfigError(f"not a LoRA adapter folder (no adapter_model.safetensors): {adapter_dir}")
    h = hashlib.sha256(weights.read_bytes())
    h.update((adapter_dir / "adapter_config.json").read_bytes())
    if arch != "gemma3":  # the first adapters were all Gemma's: their cache names stay
        h.update(arch.encode())
    return cache_dir() / "gguf-adapters" / f"{h.hexdigest()[:16]}.gguf"


def adapter_to_gguf(adapter_dir: str | Path, out: str | Path | None = None, *, arch: str = "gemma3") -> Path:
    """Convert a PEFT LoRA adapter folder to a llama.cpp GGUF adapter (cached; returns its path)."""
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    adapter_dir = Path(adapter_dir)
    target = Path(out) if out is not None else gguf_adapter_path(adapter_dir, arch)
    if target.is_file():
        return target
    cfg = json.loads((adapter_dir / "adapter_config.json").read_text())
    if cfg.get("peft_type", "LORA") != "LORA":
        raise ConfigError(f"{adapter_dir}: only LoRA adapters convert, not {cfg.get('peft_type')}")
    tensors = load_file(str(adapter_dir / "adapter_model.safetensors"))
    layers = 1 + max(int(k.split(".layers.")[1].split(".")[0]) for k in tensors if ".layers." in k)
    arch_enum = next(a for a, name in gguf.MODEL_ARCH_NAMES.items() if name == arch)
    names = gguf.get_tensor_name_map(arch_enum, layers)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    writer = gguf.GGUFWriter(str(tmp), arch)
    writer.add_string("general.type", "adapter")
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(cfg["lora_alpha"]))
    for key in sorted(tensors):
        if ".lora_A." not in key:
            continue
        base = key[len(_PREFIX) :] if key.startswith(_PREFIX) else key
        base = base.split(".lora_A.")[0]
        mapped = names.get_name(base)
        if mapped is None:
            raise ConfigError(f"{adapter_dir}: no llama.cpp tensor for {base}")
        a = tensors[key].astype(np.float32)
        b = tensors[key.replace(".lora_A.", ".lora_B.")].astype(np.float32)
        writer.add_tensor(f"{mapped}.weight.lora_a", a)
        writer.add_tensor(f"{mapped}.weight.lora_b", b)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.rename(target)
    return target
