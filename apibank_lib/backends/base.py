"""The one protocol every model backend implements, and the request/completion types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from apibank_lib.prompts import Prompt
from apibank_lib.types import ApiCall, Sample

__all__ = ["Backend", "Request", "Completion", "BackendError"]


class BackendError(Exception):
    """A model call failed (after any retries); the runner records it with the sample."""


@dataclass
class Request:
    """What the runner asks of a backend.

    Attributes:
        prompt: the prompt (chat messages and flattened text).
        kind: ``"api"`` or ``"response"``.
        sample: the sample being answered; only baselines look at it (the oracle
            reads the gold), never an LLM backend.
        max_tokens: generation budget.
        stop: stop sequences for text generation.
        native_tools: ask for native tool calling (tools as JSON schemas) when the
            backend supports it.
        step: for the level-3 agent loop, how many calls the episode has made.
    """

    prompt: Prompt
    kind: str = "api"
    sample: Sample | None = None
    max_tokens: int = 128
    stop: list[str] | None = None
    native_tools: bool = False
    step: int = 0


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


class Backend(Protocol):
    """A model (or baseline) that answers prompts.

    Attributes:
        name: the spec it was loaded from, e.g. ``llamacpp:gemma-3-270m``.
        concurrent: whether ``complete`` may be called from several threads at once.
    """

    name: str
    concurrent: bool

    def complete(self, request: Request) -> Completion:
        """Answer one request."""
        ...

    def info(self) -> dict[str, Any]:
        """Settings worth recording in a run's config (never secrets)."""
        ...
