"""Any OpenAI-compatible endpoint: vLLM, llama.cpp's server, hosted APIs.

Spec: ``openai:<model>@<base_url>`` (base URL up to and including ``/v1``); the
API key comes from ``$APIBANK_API_KEY`` or ``$OPENAI_API_KEY`` (never stored).
Modes:

* ``prompt`` (default): chat completions with our messages; the call is read
  from the text.
* ``tools``: native tool calling: the described APIs are sent as JSON-schema
  tools and the returned ``tool_calls`` are mapped back to :class:`ApiCall`.
* ``completion``: the text-completion endpoint with the flattened prompt
  (for base models served without a chat template).

Every request has a client timeout; 429, 5xx, timeouts and refused connections
are retried with exponential backoff. Token usage and latency are recorded.
Before a run, :meth:`OpenAIBackend.preflight` asks the server for its models, so
a wrong address or a dead server stops the run at once with the reason.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import httpx

from apibank_lib.backends.base import Backend, Completion, Request
from apibank_lib.errors import BackendError, ConfigError
from apibank_lib.types import ApiCall, ToolSchema

__all__ = ["OpenAIBackend", "tool_json_schema"]

_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "list": "array", "list(str)": "array"}
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


def tool_json_schema(schema: ToolSchema) -> dict[str, Any]:
    """An API as an OpenAI ``tools`` entry."""
    props: dict[str, Any] = {}
    for name, p in schema.input_parameters.items():
        prop: dict[str, Any] = {"type": _JSON_TYPES.get(p.type, "string"), "description": p.description}
        if p.type == "list(str)":
            prop["items"] = {"type": "string"}
        props[name] = prop
    required = [n for n, p in schema.input_parameters.items() if p.required]
    return {
        "type": "function",
        "function": {"name": schema.name, "description": schema.description, "parameters": {"type": "object", "properties": props, "required": required}},
    }


class OpenAIBackend(Backend):
    """A model behind an OpenAI-compatible HTTP API.

    Args:
        model: the model name sent to the server.
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        mode: ``prompt``, ``tools`` or ``completion``.
        timeout_s: per-request timeout.
        max_retries: retries after the first attempt.
        backoff_s: first backoff; doubles each retry (capped at 30 s).
        temperature: 0 for greedy decoding.
        tool_choice: in ``tools`` mode: ``auto`` (the model decides), ``required``,
            or an API name to force (servers that constrain arguments with a
            grammar can be slow when left to decide).
    """

    kind = "openai"
    concurrent = True
    answer_options = ("model", "mode", "temperature", "tool_choice")

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        mode: str = "prompt",
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        temperature: float = 0.0,
        tool_choice: str = "auto",
    ) -> None:
        if mode not in ("prompt", "tools", "completion"):
            raise ConfigError(f"mode must be prompt, tools or completion, not {mode!r}")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"the base URL must start with http:// or https://, got {base_url!r}")
        self.name = f"openai:{model}@{base_url}"
        self.model, self.base_url, self.mode = model, base_url.rstrip("/"), mode
        self.timeout_s, self.max_retries, self.backoff_s, self.temperature = timeout_s, max_retries, backoff_s, temperature
        self.tool_choice = tool_choice
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

    def prompt_mode(self, native_tools: bool) -> str:
        if self.mode == "completion":
            return "completion"
        return "tools" if native_tools or self.mode == "tools" else "chat"

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
            except (httpx.TimeoutException, httpx.ConnectError, httpx.RemoteProtocolError) as exc:
                retryable, problem = True, f"{type(exc).__name__}: {exc}"
                unreachable = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError))
            else:
                unreachable = False
            if not retryable or attempt > self.max_retries:
                raise BackendError(f"{self.name}: {problem} (after {attempt} attempt(s))", connection=unreachable)
            time.sleep(min(30.0, self.backoff_s * 2 ** (attempt - 1)))

    def complete(self, request: Request) -> Completion:
        start = time.perf_counter()
        if self.mode == "completion":
            body: dict[str, Any] = {"model": self.model, "prompt": request.prompt.text, "max_tokens": request.max_tokens, "temperature": self.temperature}
            if request.stop:
                body["stop"] = request.stop
            data, attempts = self._post("/completions", body)
            text = data["choices"][0].get("text") or ""
            calls: list[ApiCall] = []
        else:
            body = {"model": self.model, "messages": request.prompt.messages, "max_tokens": request.max_tokens, "temperature": self.temperature}
            use_tools = (self.mode == "tools" or request.native_tools) and request.kind != "response" and bool(request.prompt.tools)
            if request.stop and not use_tools:
                body["stop"] = request.stop
            if use_tools:
                body["tools"] = [tool_json_schema(s) for s in request.prompt.tools]
                if self.tool_choice in ("auto", "required", "none"):
                    body["tool_choice"] = self.tool_choice
                else:
                    body["tool_choice"] = {"type": "function", "function": {"name": self.tool_choice}}
            data, attempts = self._post("/chat/completions", body)
            message = data["choices"][0].get("message") or {}
            text = message.get("content") or ""
            calls = []
            for tc in message.get("tool_calls") or []:
                fn = tc.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except json.JSONDecodeError:
                    text += f"\n[unparsable tool-call arguments for {fn.get('name')}: {fn.get('arguments')!r}]"
                    continue
                calls.append(ApiCall(str(fn.get("name")), args if isinstance(args, dict) else {}))
        usage = data.get("usage") or {}
        return Completion(
            text,
            calls,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=time.perf_counter() - start,
            attempts=attempts,
        )
