"""What every model backend implements, and the request/completion types.

A backend is a class deriving from :class:`Backend` in its own module, listed
once in :data:`apibank_lib.backends.registry.BACKENDS`. Its constructor's
keyword arguments are its options: the registry checks option names and types
against the signature before a run starts, so ``--option foo=1`` or
``timeout_s=fast`` fail at once with a clear message instead of on every sample.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from apibank_lib.errors import BackendError, ConfigError
from apibank_lib.prompts import Prompt
from apibank_lib.types import ApiCall, Context, Episode, Sample

__all__ = ["Backend", "Request", "Completion", "BackendError", "PROMPT_MODES"]

PROMPT_MODES = ("chat", "tools", "completion", "reference")
"""How a backend reads prompts: chat messages, chat with native tool calling, flattened text, or not at all (reference rows)."""


@dataclass
class Request:
    """What the runner asks of a backend.

    Attributes:
        prompt: the prompt (chat messages and flattened text).
        context: what the prompt shows, as data (reference backends read it instead of the text).
        item: the sample or episode being answered; only the oracle reads its gold, never a model.
        max_tokens: generation budget.
        stop: stop sequences for text generation.
        native_tools: ask for native tool calling (tools as JSON schemas) when the backend supports it.
        step: in the level-3 agent loop, how many calls the episode has made.
    """

    prompt: Prompt
    context: Context
    item: Sample | Episode | None = None
    max_tokens: int = 128
    stop: list[str] | None = None
    native_tools: bool = False
    step: int = 0

    @property
    def kind(self) -> str:
        """``api`` or ``response``."""
        return self.context.task


@dataclass
class Completion:
    """A backend's answer.

    Attributes:
        text: the generated text (may be empty when only tool calls came back).
        tool_calls: calls returned through native tool calling.
        prompt_tokens, completion_tokens: token usage when known.
        latency_s: wall time of the request(s), retries included.
        attempts: how many requests it took.
    """

    text: str
    tool_calls: list[ApiCall] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    attempts: int = 1


class Backend:
    """Base class of model (and reference) backends.

    Class attributes:
        kind: the name before ``:`` in a model spec (``llamacpp``, ``openai`` ...).
        concurrent: whether ``complete`` may be called from several threads at once.
        answer_options: constructor options that change answers (each kept as an
            attribute of the same name); they form the backend's part of a run's
            identity. Other options (server address, timeouts, retries, threads) do not.
        default_target: the target used when a spec has none (``llamacpp`` ->
            ``gemma-3-270m``); None when a target is required or not accepted.

    Instances have ``name``, the model spec they were built from.
    """

    kind: ClassVar[str]
    concurrent: ClassVar[bool] = False
    answer_options: ClassVar[tuple[str, ...]] = ()
    default_target: ClassVar[str | None] = None
    name: str

    @classmethod
    def target_options(cls, target: str) -> dict[str, Any]:
        """Constructor options named by a spec's target (the part after ``kind:``).

        The default: a backend that takes no target; subclasses that do override this.
        """
        if target:
            raise ConfigError(
                f"the {cls.kind} backend takes no target (write just {cls.kind!r}, not {cls.kind}:{target})"
            )
        return {}

    def prompt_mode(self, native_tools: bool) -> str:
        """How this backend reads prompts (one of :data:`PROMPT_MODES`); ``native_tools`` is the run's setting."""
        return "completion"

    def identity(self) -> dict[str, Any]:
        """The backend's part of a run's identity: its kind and every option that changes answers."""
        return {"backend": self.kind, **{k: getattr(self, k) for k in self.answer_options}}

    def complete(self, request: Request) -> Completion:
        """Answer one request. Raise BackendError when the model cannot answer."""
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        """Settings worth recording in a run's config (never secrets)."""
        return {"backend": self.kind}

    def preflight(self) -> None:
        """Check, before a run starts, that the model can be reached (raise BackendError if not)."""
