"""A scripted backend for unit tests of control flow (never for reported numbers)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from apibank_lib.core.errors import BackendError
from apibank_lib.models.base import Backend, Completion, Request
from apibank_lib.prompting.modes import PAPER_PROMPT

__all__ = ["ScriptedBackend"]


class ScriptedBackend(Backend):
    """Answers from a function of the request (or a fixed text), optionally slowly or failing.

    Args:
        answer: a text, or a function ``Request -> str``.
        delay_s: sleep this long per request (to test concurrency and interruption).
        fail_on: a function ``Request -> bool``; True raises BackendError.
        connection_failure: the failures it raises are "server unreachable" ones.
    """

    kind = "scripted"
    concurrent = True
    supported_prompt_modes = ("completion", PAPER_PROMPT, "chat")

    def __init__(
        self,
        answer: str | Callable[[Request], str] = "",
        delay_s: float = 0.0,
        fail_on: Callable[[Request], bool] | None = None,
        connection_failure: bool = False,
    ) -> None:
        self.name = "scripted"
        self._answer = answer
        self._delay = delay_s
        self._fail_on = fail_on
        self._connection = connection_failure
        self.calls = 0

    def complete(self, request: Request) -> Completion:
        self.calls += 1
        start = time.perf_counter()
        if self._delay:
            time.sleep(self._delay)
        if self._fail_on and self._fail_on(request):
            raise BackendError("scripted failure", connection=self._connection)
        text = self._answer(request) if callable(self._answer) else self._answer
        # Words stand in for tokens, so that an empty answer has zero, as a model's immediate end of turn does.
        return Completion(text, completion_tokens=len(text.split()), latency_s=time.perf_counter() - start, stop_reason="stop")

    def info(self) -> dict[str, Any]:
        return {"backend": self.kind, "delay_s": self._delay}
