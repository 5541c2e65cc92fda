"""A local Hugging Face model (a directory, or a GGUF file dequantised) with an optional LoRA adapter.

Prompt modes: ``completion`` (the flattened text; the default for the packaged base model and adapters on it)
and, when the tokenizer carries a chat template, ``chat`` and ``paper``: rendered by that template in our
sandboxed Jinja environment (:mod:`apibank_lib.prompting.chat_template`), as llama.cpp renders a GGUF's template.

``hf:gemma-3-270m`` is the packaged Gemma GGUF (``hf:qwen2.5-coder-0.5b`` and ``hf:qwen2.5-coder-1.5b`` the
packaged instruct models), ``hf:/path/model.gguf`` another
GGUF, ``hf:/path/dir`` a transformers model directory. Loading a GGUF
dequantises it (slow), so the converted model is saved once under the cache
folder and reused. Decoding is greedy. The fine-tuning recipe saves adapters
that ``adapter=<dir>`` loads on top.
"""

from __future__ import annotations

import hashlib
import threading
import time
from functools import cached_property
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.models.base import Backend, Completion, Request, render_with_template
from apibank_lib.prompting.modes import CHAT_PROMPT, PAPER_PROMPT

__all__ = ["TransformersBackend", "load_causal_lm"]


def _converted_dir(gguf: Path) -> Path:
    from apibank_lib.core.paths import cache_dir

    stat = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}:{stat.st_size}:{int(stat.st_mtime)}".encode()).hexdigest()[:16]
    return cache_dir() / "hf-from-gguf" / f"{gguf.stem}-{key}"


def load_causal_lm(model: str) -> tuple[Any, Any, str]:
    """Load (model, tokenizer, source description); GGUF files are converted once and cached."""
    tok = load_tokenizer(model)
    import torch
    from transformers import AutoModelForCausalLM

    from apibank_lib.models.llamacpp import model_path

    path = model_path(model)
    if path.is_file() and path.suffix == ".gguf":
        converted = _converted_dir(path)
        if (converted / "config.json").is_file():
            return AutoModelForCausalLM.from_pretrained(converted, torch_dtype=torch.float32), tok, str(path)
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
    return AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32), tok, str(path)


def load_tokenizer(model: str) -> Any:
    """A model's tokenizer alone (the converted copy's when there is one, else read from the GGUF file).

    Raises:
        ConfigError: transformers is missing, or ``model`` is neither a model directory nor a GGUF file.
    """
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:  # pragma: no cover
        raise ConfigError("the hf backend needs the 'hf' extra: pip install 'apibank_lib[hf]'") from exc
    from apibank_lib.models.llamacpp import model_path

    path = model_path(model)
    if path.is_file() and path.suffix == ".gguf":
        converted = _converted_dir(path)
        if (converted / "tokenizer_config.json").is_file():
            return AutoTokenizer.from_pretrained(converted)
        return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    if path.is_dir():
        return AutoTokenizer.from_pretrained(path)
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
    target_help = "<model folder, file.gguf or embedded model>"
    supported_prompt_modes = ("completion", CHAT_PROMPT, PAPER_PROMPT)

    @classmethod
    def target_options(cls, target: str) -> dict[str, Any]:
        """The target is the model (``gemma-3-270m``, a ``.gguf`` file or a model directory), optionally ``+<adapter>``."""
        from apibank_lib.models.catalog import resolve_model

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
            from apibank_lib.models.catalog import adapter_folder

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
            from apibank_lib.models.catalog import adapter_digest

            ident["adapter_sha"] = adapter_digest(str(self.adapter))
        return ident

    def info(self) -> dict[str, Any]:
        return {"backend": self.kind, "source": Path(self.source).name, "adapter": self.adapter, "device": self.device, "decoding": "greedy"}

    @cached_property
    def template(self) -> Any:
        """The tokenizer's chat template (None when it has none)."""
        from apibank_lib.prompting.chat_template import ChatTemplate

        return ChatTemplate.from_tokenizer(self.tokenizer)

    def default_prompt_mode(self) -> str:
        """An adapter's training rendering (its ``training.json``); else completion for the packaged base model and
        adapters on it, chat for a model whose template reads tools."""
        from apibank_lib.models.llamacpp import PACKAGED

        if self.adapter:
            from apibank_lib.models.catalog import adapter_prompt_mode

            trained = adapter_prompt_mode(self.adapter)
            if trained is not None:
                return trained
        return self.template_default_mode(self.model in PACKAGED or bool(self.adapter))

    def complete(self, request: Request) -> Completion:
        torch = self._torch
        mode = request.prompt_mode or self.default_prompt_mode()
        text, opening = render_with_template(self.template, request, mode)
        # A chat template writes the special tokens itself; the tokenizer must not add a second BOS.
        enc = self.tokenizer(text, return_tensors="pt", add_special_tokens=mode == "completion").to(self.device)
        start = time.perf_counter()
        with self._lock, torch.inference_mode():
            out = self.lm.generate(**enc, max_new_tokens=request.max_tokens, do_sample=False, pad_token_id=self.tokenizer.eos_token_id)
        new = out[0, enc["input_ids"].shape[1] :]
        if mode == CHAT_PROMPT:
            # Tool-call tags may be special tokens: keep them, drop only the end-of-turn and padding tokens.
            ends = {t for t in (self.tokenizer.eos_token_id, self.tokenizer.pad_token_id) if t is not None}
            kept = [int(t) for t in new if int(t) not in ends]
            answer = opening + self.tokenizer.decode(kept, skip_special_tokens=False)
        else:
            answer = self.tokenizer.decode(new, skip_special_tokens=True)
            for stop in request.stop or []:
                cut = answer.find(stop)
                if cut >= 0:
                    answer = answer[:cut]
        return Completion(
            answer,
            prompt_tokens=int(enc["input_ids"].shape[1]),
            completion_tokens=int(new.shape[0]),
            latency_s=time.perf_counter() - start,
            stop_reason="length" if int(new.shape[0]) >= request.max_tokens else "stop",
        )
