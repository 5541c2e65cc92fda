"""Any OpenAI-compatible endpoint: vLLM, llama.cpp's server, hosted APIs.

Spec: ``openai:<model>@<base_url>`` (base URL up to and including ``/v1``); the
API key comes from ``$APIBANK_API_KEY`` or ``$OPENAI_API_KEY`` (never stored).
Prompt modes (the run's ``--prompt-mode``; the backend's ``mode`` option is its default):

* ``chat`` (default): chat completions with the dialogue as chat turns, earlier
  calls as assistant ``tool_calls`` and their results as ``tool`` messages, the
  APIs as JSON-schema ``tools`` (:mod:`apibank_lib.prompting.chat`); an API-call sample
  sends ``tool_choice="required"`` (or ``auto``, as the run says). The answer's
  ``tool_calls`` are kept as the server returned them, and scoring reads them
  (or, when a server returns none, the calls written in the text).
* ``paper``: chat completions with the paper's text prompt (a system and a user message); the call is read from
  the text.
* ``completion``: the text-completion endpoint with the flattened prompt
  (for base models served without a chat template).

Every request has a client timeout; 429, 5xx, timeouts and refused connections
are retried with exponential backoff. Token usage and latency are recorded.
Before a run, :meth:`OpenAIBackend.preflight` asks the server for its models, so
a wrong address or a dead server stops the run at once with the reason.

A server may drop the tools silently (llama-cpp-python's server with a plain chat format does). In chat mode the
first API-call answers are checked: when :data:`TOOLS_CHECK` of them in a row come back without a tool call, the
same messages are counted again without tools; equal prompt token counts mean the tools never reached the model,
and :class:`ToolsIgnored` stops the run (the runner records it in the run folder).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import httpx

from apibank_lib.core.errors import BackendError, ConfigError
from apibank_lib.core.types import ApiCall
from apibank_lib.models.base import Backend, Completion, Request, ToolsIgnored
from apibank_lib.prompting.chat import tool_json_schema
from apibank_lib.prompting.modes import PAPER_PROMPT

__all__ = ["OpenAIBackend", "tool_json_schema", "ToolsIgnored", "TOOLS_CHECK"]

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
THROTTLE_STATUS = {429, 503}
"""The answers that say the server has too much to do (counted in :attr:`Backend.throttled`)."""
TOOLS_CHECK = 3
"""How many API-call answers without a tool call, with tools unseen by the model, prove a server ignores tools."""
_LEGACY_MODES = {"prompt": PAPER_PROMPT, "tools": "chat"}


class OpenAIBackend(Backend):
    """A model behind an OpenAI-compatible HTTP API.

    Args:
        model: the model name sent to the server.
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        mode: the default prompt mode: ``chat``, ``paper`` or ``completion`` (``prompt`` and ``tools``, the
            older names, mean ``paper`` and ``chat``).
        timeout_s: per-request timeout.
        max_retries: retries after the first attempt.
        backoff_s: first backoff; doubles each retry (capped at 30 s).
        temperature: 0 for greedy decoding.
        tool_choice: overrides the run's tool choice in chat mode: ``auto``, ``required``, ``none``, or an API
            name to force (servers that constrain arguments with a grammar can be slow when left to decide).
        check_tools: in chat mode, check that the server does not ignore the tools (see the module docstring).
    """

    kind = "openai"
    target_help = "<model>@<base_url>"
    concurrent = True
    constrains_json = True  # sent as response_format (json_schema)
    answer_options = ("model", "temperature", "tool_choice")
    supported_prompt_modes = ("chat", PAPER_PROMPT, "completion")

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        mode: str = "chat",
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        temperature: float = 0.0,
        tool_choice: str | None = None,
        check_tools: bool = True,
    ) -> None:
        mode = _LEGACY_MODES.get(mode, mode)
        if mode not in self.supported_prompt_modes:
            raise ConfigError(f"mode must be chat, paper or completion, not {mode!r}")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"the base URL must start with http:// or https://, got {base_url!r}")
        self.name = f"openai:{model}@{base_url}"
        self.model, self.base_url, self.mode = model, base_url.rstrip("/"), mode
        self.timeout_s, self.max_retries, self.backoff_s, self.temperature = timeout_s, max_retries, backoff_s, temperature
        self.tool_choice = tool_choice
        self.check_tools = check_tools
        self._without_calls: list[tuple[int | None, int | None]] = []  # (prompt tokens with tools, without)
        self._tools_seen = False
        self._check_lock = threading.Lock()
        self.throttled = 0
        self._throttle_lock = threading.Lock()
        key = os.environ.get("APIBANK_API_KEY") or os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers)

    @classmethod
    def target_options(cls, target: str) -> dict[str, Any]:
        """``<model>@<base_url>`` -> model and base URL."""
        model, sep, base_url = target.rpartition("@")
        if not sep or not model or not base_url:
            raise ConfigError(f"write an OpenAI-compatible model as openai:<model>@<base_url>, not 'openai:{target}'")
        return {"model": model, "base_url": base_url}

    def default_prompt_mode(self) -> str:
        return self.mode

    def identity(self) -> dict[str, Any]:
        ident = super().identity()
        if ident.get("tool_choice") is None:
            ident.pop("tool_choice", None)
        return ident

    def preflight(self) -> None:
        """Ask the server for its models (``GET <base_url>/models``): fail fast when it cannot be reached."""
        try:
            resp = self._client.get(self.base_url + "/models", timeout=min(10.0, self.timeout_s))
        except httpx.HTTPError as exc:
            raise BackendError(f"cannot reach {self.base_url} ({type(exc).__name__}: {exc}); is the server running at that address?", connection=True) from exc
        if resp.status_code in (401, 403):
            raise BackendError(f"{self.base_url} refused the credentials (HTTP {resp.status_code}); set APIBANK_API_KEY")
        if resp.status_code == 404:
            raise BackendError(f"{self.base_url}/models does not exist (HTTP 404); the base URL usually ends in /v1")

    def info(self) -> dict[str, Any]:
        return {
            "backend": "openai",
            "model": self.model,
            "base_url": self.base_url,
            "mode": self.mode,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "temperature": self.temperature,
            "tool_choice": self.tool_choice,
            "check_tools": self.check_tools,
        }

    def _post(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        attempt = 0
        while True:
            attempt += 1
            try:
                resp = self._client.post(self.base_url + path, json=body)
                if resp.status_code < 400:
                    return resp.json(), attempt
                retryable = resp.status_code in RETRY_STATUS
                problem = f"HTTP {resp.status_code}: {resp.text[:300]}"
                if resp.status_code in THROTTLE_STATUS:
                    with self._throttle_lock:  # the runner reads it to lower its concurrency
                        self.throttled += 1
            except (httpx.TimeoutException, httpx.ConnectError, httpx.RemoteProtocolError) as exc:
                retryable, problem = True, f"{type(exc).__name__}: {exc}"
                unreachable = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError))
            else:
                unreachable = False
            if not retryable or attempt > self.max_retries:
                raise BackendError(f"{self.name}: {problem} (after {attempt} attempt(s))", connection=unreachable)
            time.sleep(min(30.0, self.backoff_s * 2 ** (attempt - 1)))

    def _choice(self, request: Request) -> Any:
        wanted = self.tool_choice or (request.tool_choice if request.kind == "api" else "none")
        if wanted in ("auto", "required", "none"):
            return wanted
        return {"type": "function", "function": {"name": wanted}}

    def _chat_body(self, request: Request, mode: str) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "max_tokens": request.max_tokens, "temperature": self.temperature}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.seed is not None:
            body["seed"] = request.seed
        if request.response_schema is not None:
            # OpenAI's structured outputs; llama.cpp's server and vLLM read the same field.
            body["response_format"] = {
                "type": "json_schema", "json_schema": {"name": "answer", "schema": dict(request.response_schema)},
            }
        if mode == PAPER_PROMPT:
            body["messages"] = request.prompt.messages
            if request.stop:
                body["stop"] = request.stop
            return body
        if request.chat is None:
            raise ConfigError("a chat-mode request needs its chat prompt")
        body["messages"] = request.chat.openai_messages()
        if request.chat.tools:
            body["tools"] = request.chat.tools
            body["tool_choice"] = self._choice(request)
        return body

    def _check_tools_used(self, body: dict[str, Any], calls: list[dict[str, Any]], prompt_tokens: int | None) -> None:
        """Raise ToolsIgnored when the first API-call answers show the server dropping the tools."""
        with self._check_lock:
            if self._tools_seen or "tools" not in body or len(self._without_calls) >= TOOLS_CHECK:
                return
            if calls:
                self._tools_seen = True
                return
        bare = {k: v for k, v in body.items() if k not in ("tools", "tool_choice")} | {"max_tokens": 1}
        data, _ = self._post("/chat/completions", bare)
        without = (data.get("usage") or {}).get("prompt_tokens")
        with self._check_lock:
            self._without_calls.append((prompt_tokens, without))
            seen = list(self._without_calls)
        if len(seen) >= TOOLS_CHECK and all(a is not None and a == b for a, b in seen):
            raise ToolsIgnored(
                f"{self.base_url} ignores the tools it is sent: {len(seen)} API-call answers came back without a tool "
                f"call, and their prompts count the same tokens with and without tools ({seen[0][0]}). The model never "
                "saw the APIs. Restart the server with tool support (llama.cpp's llama-server: --jinja; "
                "llama-cpp-python: --chat_format chatml-function-calling, or no --chat_format so that the model's "
                "own template is used), then run again with --restart."
            )

    def complete(self, request: Request) -> Completion:
        start = time.perf_counter()
        mode = request.prompt_mode or self.mode
        raw: list[dict[str, Any]] = []
        calls: list[ApiCall] = []
        if mode == "completion":
            body: dict[str, Any] = {"model": self.model, "prompt": request.prompt.text, "max_tokens": request.max_tokens, "temperature": self.temperature}
            if request.stop:
                body["stop"] = request.stop
            body.update({k: v for k, v in (("temperature", request.temperature), ("seed", request.seed)) if v is not None})
            data, attempts = self._post("/completions", body)
            text = data["choices"][0].get("text") or ""
        else:
            body = self._chat_body(request, mode)
            data, attempts = self._post("/chat/completions", body)
            message = data["choices"][0].get("message") or {}
            text = message.get("content") or ""
            for tc in message.get("tool_calls") or []:
                fn = tc.get("function") or tc
                raw.append({"name": fn.get("name"), "arguments": fn.get("arguments")})
                args = fn.get("arguments")
                try:
                    args = json.loads(args) if isinstance(args, str) else args
                except json.JSONDecodeError:
                    continue  # kept raw; scoring judges it a False API Call Format
                if isinstance(args, dict) and isinstance(fn.get("name"), str):
                    calls.append(ApiCall(fn["name"], args))
            if mode == "chat" and request.kind == "api" and self.check_tools:
                self._check_tools_used(body, raw, (data.get("usage") or {}).get("prompt_tokens"))
        usage = data.get("usage") or {}
        return Completion(
            text,
            calls,
            raw,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=time.perf_counter() - start,
            attempts=attempts,
            stop_reason=data["choices"][0].get("finish_reason"),
        )
