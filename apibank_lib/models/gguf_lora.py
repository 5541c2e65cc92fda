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
import os
from pathlib import Path

from apibank_lib.core.errors import ConfigError

__all__ = ["adapter_to_gguf", "gguf_adapter_path", "gguf_architecture"]

_PREFIX = "base_model.model."


# GGUF metadata value types (the format's numbering) and the byte size of each fixed-size one.
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_GGUF_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def gguf_architecture(model_file: str | Path) -> str:
    """The ``general.architecture`` of a GGUF model file (``gemma3``, ``qwen2``, ...): an adapter's tensor names follow it.

    Reads the metadata header up to that key only. ``gguf.GGUFReader`` parses every field first (a 150,000-entry
    vocabulary takes it about ten seconds), and every load of an adapter asks this.
    """
    import struct

    with open(model_file, "rb") as f:

        def read(fmt: str) -> int:
            size = struct.calcsize(fmt)
            data = f.read(size)
            if len(data) != size:
                raise ConfigError(f"{model_file}: the GGUF header ends early")
            return struct.unpack(fmt, data)[0]

        def read_string() -> bytes:
            size = read("<Q")
            data = f.read(size)
            if len(data) != size:
                raise ConfigError(f"{model_file}: the GGUF header ends early")
            return data

        def skip(kind: int) -> None:
            if kind in _GGUF_FIXED:
                f.seek(_GGUF_FIXED[kind], 1)
            elif kind == _GGUF_STRING:
                f.seek(read("<Q"), 1)
            elif kind == _GGUF_ARRAY:
                item, count = read("<I"), read("<Q")
                if item in _GGUF_FIXED:
                    f.seek(_GGUF_FIXED[item] * count, 1)
                else:
                    for _ in range(count):
                        skip(item)
            else:
                raise ConfigError(f"{model_file}: unknown GGUF value type {kind}")

        if f.read(4) != b"GGUF":
            raise ConfigError(f"{model_file}: not a GGUF file")
        version = read("<I")
        if version < 2:
            raise ConfigError(f"{model_file}: GGUF version {version} is not read (2 or later)")
        read("<Q")  # tensor count
        for _ in range(read("<Q")):
            key, kind = read_string(), read("<I")
            if key == b"general.architecture" and kind == _GGUF_STRING:
                return read_string().decode()
            skip(kind)
    raise ConfigError(f"{model_file}: a GGUF file without general.architecture")


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
    # A name of this process's own: two processes converting the same adapter at once (test workers, shards)
    # each write their file and the last rename wins, with the same bytes.
    tmp = target.with_name(f"{target.stem}.{os.getpid()}.tmp")
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
    os.replace(tmp, target)
    return target
