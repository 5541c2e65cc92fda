"""Answers given elsewhere, played back: how an inspect_ai log or an MCP session becomes one of our run folders.

A model evaluated outside the workbench (by inspect_ai, or an agent speaking MCP to our sandbox) has answered
samples already. Written to an *answers file*, those answers run through the ordinary runner with this backend,
so the folder, its scores and every table read them exactly as they read a model run here; nothing is judged a
second way.

The answers file is one JSON object::

    {"model": "<the model's name>", "source": "<where the answers come from>",
     "answers": {"<sample key>": {"output": "<text>", "tool_calls": [{"name": ..., "arguments": {...}}]},
                 "L3/episode/<item>": {"steps": [<answer>, <answer>, ...]}}}

A sample's answer is its text and its structured tool calls (arguments as an object or as JSON text); an
episode's is the list of answers it gave, one per agent step (each call, then the final reply).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar

from apibank_lib.core.errors import BackendError, ConfigError
from apibank_lib.core.types import ApiCall, Episode
from apibank_lib.models.base import Backend, Completion, Request
from apibank_lib.prompting.modes import CHAT_PROMPT

__all__ = ["RecordedBackend", "read_answers", "write_answers"]


def write_answers(path: str | Path, model: str, source: str, answers: dict[str, Any]) -> Path:
    """Write an answers file (keys sorted, so the same answers give the same bytes)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = {"model": model, "source": source, "answers": answers}
    path.write_text(json.dumps(blob, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_answers(path: str | Path) -> dict[str, Any]:
    """Read and check an answers file.

    Raises:
        ConfigError: missing, not JSON, or without ``model`` and ``answers`` (the file is named).
    """
    path = Path(path)
    try:
        blob = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"answers file {path} does not exist") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"answers file {path}: not JSON ({exc})") from exc
    if not isinstance(blob, dict) or not isinstance(blob.get("answers"), dict) or not isinstance(blob.get("model"), str):
        raise ConfigError(f"answers file {path}: expected an object with 'model' and 'answers'")
    return blob


def _completion(answer: Any, where: str) -> Completion:
    if not isinstance(answer, dict):
        raise BackendError(f"{where}: a recorded answer must be an object with output and tool_calls")
    raw = []
    for call in answer.get("tool_calls") or []:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise BackendError(f"{where}: a recorded tool call needs a name")
        raw.append({"name": call["name"], "arguments": call.get("arguments", {})})
    calls = [ApiCall(c["name"], c["arguments"]) for c in raw if isinstance(c["arguments"], dict)]
    return Completion(str(answer.get("output") or ""), calls, raw)


class RecordedBackend(Backend):
    """Gives back the answers an answers file records, by sample key (``recorded:<answers file>``)."""

    kind = "recorded"
    concurrent = True
    supported_prompt_modes: ClassVar[tuple[str, ...]] = (CHAT_PROMPT,)
    target_help = "<answers file> (answers given elsewhere: apibank import-inspect, apibank mcp)"

    def __init__(self, path: str) -> None:
        blob = read_answers(path)
        self.path = str(path)
        self.model = blob["model"]
        self.source = str(blob.get("source", ""))
        self.answers: dict[str, Any] = blob["answers"]
        # The answers are what the run's folder is about: another file is another run.
        self.answers_sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
        self.name = f"recorded:{self.model}"

    @classmethod
    def target_options(cls, target: str) -> dict[str, Any]:
        if not target:
            raise ConfigError("the recorded backend needs an answers file: recorded:<path>")
        return {"path": target}

    def identity(self) -> dict[str, Any]:
        return {"backend": self.kind, "model": self.model, "answers_sha": self.answers_sha}

    def info(self) -> dict[str, Any]:
        return {"backend": self.kind, "model": self.model, "source": self.source, "answers": self.path}

    def complete(self, request: Request) -> Completion:
        item = request.item
        if item is None:
            raise BackendError("a recorded answer is looked up by its sample; the request names none")
        answer = self.answers.get(item.key)
        if answer is None:
            raise BackendError(f"no recorded answer for {item.key} in {self.path}")
        if isinstance(item, Episode):
            steps = answer.get("steps") if isinstance(answer, dict) else None
            if not isinstance(steps, list):
                raise BackendError(f"{item.key}: an episode's recorded answer needs its steps")
            if request.step >= len(steps):  # the recorded agent stopped here: it said nothing more
                return Completion("")
            return _completion(steps[request.step], f"{item.key} step {request.step + 1}")
        return _completion(answer, item.key)
