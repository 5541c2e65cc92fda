"""What every model backend implements, and the request/completion types.

A backend is a class deriving from :class:`Backend` in its own module, listed
once in :data:`apibank_lib.models.registry.BACKENDS`. Its constructor's
keyword arguments are its options: the registry checks option names and types
against the signature before a run starts, so ``--option foo=1`` or
``timeout_s=fast`` fail at once with a clear message instead of on every sample.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from apibank_lib.core.errors import BackendError, ConfigError
from apibank_lib.core.types import ApiCall, Context, Episode, Sample
from apibank_lib.prompting.chat import RENDERING_VERSION, ChatPrompt
from apibank_lib.prompting.modes import CHAT_PROMPT, COMPLETION_PROMPT, PAPER_PROMPT, PROMPT_MODES, TEMPLATE_MODES
from apibank_lib.prompting.prompts import Prompt

__all__ = [
    "Backend",
    "Request",
    "Completion",
    "BackendError",
    "ToolsIgnored",
    "render_with_template",
]

class ToolsIgnored(BackendError):
    """The model was sent tools but answered as if none had been sent: the run cannot measure tool use.

    The runner stops at once, records the reason in the run folder (``warnings.json``), and refuses to resume
    that folder until the run is started over (``--restart``), since its answers so far measured the server's
    configuration, not the model.
    """


@dataclass
class Request:
    """What the runner asks of a backend.

    Attributes:
        prompt: the prompt (chat messages and flattened text).
        context: what the prompt shows, as data (reference backends read it instead of the text).
        item: the sample or episode being answered; only the oracle reads its gold, never a model.
        max_tokens: generation budget.
        stop: stop sequences for text generation (``paper`` and ``completion`` modes).
        prompt_mode: one of :data:`PROMPT_MODES`: which shape of the prompt to send (None: the backend's default).
        chat: the chat-mode prompt (messages and tools); set when ``prompt_mode`` is ``chat``.
        tool_choice: in chat mode, how an API-call sample asks for a call (:data:`apibank_lib.prompting.chat.TOOL_CHOICES`).
        step: in the level-3 agent loop, how many calls the episode has made.
        response_schema: a JSON Schema the answer must follow (synthesis stages), for a backend whose
            :attr:`Backend.constrains_json` is true: it constrains generation (a llama.cpp grammar; an
            OpenAI-compatible server's ``response_format``). Evaluation never sets it.
        temperature, seed: sampling for this request (synthesis, where greedy decoding repeats itself); None: the
            backend's own decoding (greedy for local models), as in evaluation.
    """

    prompt: Prompt
    context: Context
    item: Sample | Episode | None = None
    max_tokens: int = 128
    stop: list[str] | None = None
    prompt_mode: str | None = None
    chat: ChatPrompt | None = None
    tool_choice: str = "required"
    step: int = 0
    response_schema: Mapping[str, Any] | None = None
    temperature: float | None = None
    seed: int | None = None

    @property
    def kind(self) -> str:
        """``api`` or ``response``."""
        return self.context.task


@dataclass
class Completion:
    """A backend's answer.

    Attributes:
        text: the generated text (may be empty when only tool calls came back); in chat mode with a forced call,
            the opening the generation was started with is part of it (``<tool_call>\n...``).
        tool_calls: calls returned through native tool calling.
        raw_tool_calls: the same as the server returned them (``{"name", "arguments"}``, arguments unparsed), so
            that scoring reads them again, and a malformed one is judged rather than lost.
        prompt_tokens, completion_tokens: token usage when known.
        latency_s: wall time of the request(s), retries included.
        attempts: how many requests it took.
        stop_reason: why the generation ended, when known: ``stop`` (the model ended its turn, or a stop
            sequence came), ``length`` (the token budget ran out), ``tool_calls`` (a server's word for a turn
            that ended with calls), or what else a server said.
    """

    text: str
    tool_calls: list[ApiCall] = field(default_factory=list)
    raw_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    attempts: int = 1
    stop_reason: str | None = None


class Backend:
    """Base class of model (and reference) backends.

    Class attributes:
        kind: the name before ``:`` in a model spec (``llamacpp``, ``openai`` ...).
        concurrent: whether ``complete`` may be called from several threads at once.
        constrains_json: whether ``complete`` honours :attr:`Request.response_schema` (JSON-constrained output).
        answer_options: constructor options that change answers (each kept as an
            attribute of the same name); they form the backend's part of a run's
            identity. Other options (server address, timeouts, retries, threads) do not.
        target_help: what follows ``<kind>:`` in a model spec, for the command line's help (empty: nothing does).
        default_target: the target used when a spec has none (``llamacpp`` ->
            ``gemma-3-270m``); None when a target is required or not accepted.

    Instances have ``name``, the model spec they were built from, and ``throttled``: how many times a server
    answered "too many requests" or "unavailable" (HTTP 429 or 503) so far, which the runner reads to lower its
    concurrency (0 for backends without a server).
    """

    kind: ClassVar[str]
    concurrent: ClassVar[bool] = False
    throttled: int = 0
    constrains_json: ClassVar[bool] = False
    answer_options: ClassVar[tuple[str, ...]] = ()
    default_target: ClassVar[str | None] = None
    target_help: ClassVar[str] = ""
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

    supported_prompt_modes: ClassVar[tuple[str, ...]] = ("completion",)

    def default_prompt_mode(self) -> str:
        """The prompt mode used when a run names none."""
        return self.supported_prompt_modes[0]

    def prompt_mode(self, requested: str | None = None) -> str:
        """How this backend reads prompts (one of :data:`PROMPT_MODES`): ``requested`` (the run's setting) or the
        backend's default.

        Raises:
            ConfigError: the backend cannot read prompts that way.
        """
        if requested is None or self.supported_prompt_modes == ("reference",):
            return self.default_prompt_mode()  # reference rows read no prompt, whatever the run asks
        if requested not in self.supported_prompt_modes:
            raise ConfigError(
                f"{getattr(self, 'name', self.kind)} cannot read prompts in {requested!r} mode; "
                f"it reads {', '.join(self.supported_prompt_modes)}"
            )
        return requested

    template: Any = None
    """A local model's own chat template (:class:`~apibank_lib.prompting.chat_template.ChatTemplate`), where it has one."""

    def mode_identity(self, prompt_mode: str, tool_choice: str) -> dict[str, Any]:
        """What else the prompt mode puts in a run's identity: in chat mode how a call is asked for and the
        rendering's version; in chat and paper modes the hash of the template a local model renders with
        (another template is another prompt)."""
        ident: dict[str, Any] = {"tool_choice": tool_choice, "rendering": RENDERING_VERSION} if prompt_mode == CHAT_PROMPT else {}
        if prompt_mode in TEMPLATE_MODES and self.template is not None:
            ident["template_sha"] = self.template.sha
        return ident

    def template_default_mode(self, base_model: bool) -> str:
        """The default prompt mode of a local model: completion for a base model (and adapters on it), chat when
        its template reads tools, else completion."""
        if base_model:
            return COMPLETION_PROMPT
        return CHAT_PROMPT if self.template is not None and self.template.supports_tools else COMPLETION_PROMPT

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


def render_with_template(template: Any, request: Request, mode: str) -> tuple[str, str]:
    """A request's prompt text for a local model, and the opening its answer is started with.

    ``completion``: the flattened text. ``paper``: the paper's messages through the model's chat template.
    ``chat``: the chat prompt through the template; with ``tool_choice="required"`` an API-call sample ends with
    the template's tool-call opening (:meth:`apibank_lib.prompting.chat_template.ChatTemplate.call_opening`), which is
    returned too so that the answer's text can be given with it.

    Args:
        template: the model's :class:`~apibank_lib.prompting.chat_template.ChatTemplate` (None: completion only).
        request: the request.
        mode: the prompt mode to render.
    """
    if mode == COMPLETION_PROMPT:
        return request.prompt.text, ""
    if template is None:
        raise ConfigError(f"the model has no chat template, so it cannot read {mode!r} prompts")
    if mode == PAPER_PROMPT:
        return template.render(request.prompt.messages), ""
    chat = request.chat
    if chat is None:
        raise ConfigError("a chat-mode request needs its chat prompt")
    text = template.render(chat.messages, chat.tools)
    opening = ""
    if chat.task == "api" and request.tool_choice == "required":
        opening = template.call_opening(chat.messages, chat.tools)
    return text + opening, opening
