"""Non-LLM reference rows: the oracle (upper bound), no-call (lower bound) and a heuristic.

* ``oracle`` answers with the gold call or reply: under ``v2`` it scores 100%
  (the ceiling of the protocol); under ``paper`` it shows the original
  evaluator's ceiling.
* ``no-call`` never calls an API and always replies with the same sentence.
* ``heuristic`` retrieves an API by embedding the user's words and fills its
  arguments from the dialogue with simple rules: tokens from earlier login
  results, dates and times by pattern, values of same-named fields from earlier
  API results, credentials the user typed. It shows how far retrieval plus slot
  filling gets without a language model.
"""

from __future__ import annotations

import re
from typing import Any

from apibank_lib.core.calls import format_call, format_call_paper
from apibank_lib.core.types import ApiCall, ApiRecord, Episode, Param, ToolSchema, Turn
from apibank_lib.models.base import Backend, Completion, Request
from apibank_lib.prompting.prompts import LEADS, target_text

__all__ = ["OracleBackend", "NoCallBackend", "HeuristicBackend"]

NO_CALL_REPLY = "I am sorry, I cannot help with that right now."


class OracleBackend(Backend):
    """Answers with the gold (reads ``request.item``)."""

    kind = "oracle"
    concurrent = True

    def __init__(self) -> None:
        self.name = "oracle"

    supported_prompt_modes = ("reference",)

    def complete(self, request: Request) -> Completion:
        item = request.item
        if item is None:
            raise ValueError("the oracle needs the sample or episode it answers")
        if isinstance(item, Episode):  # agent loop: the next gold step, then the final reply
            if request.step < len(item.item.steps):
                st = item.item.steps[request.step]
                return Completion(f"{LEADS['api']} {format_call_paper(st.api_name, st.args)}")
            return Completion(item.item.response)
        return Completion(target_text(item))


class NoCallBackend(Backend):
    """Never calls an API."""

    kind = "no-call"
    concurrent = True

    def __init__(self) -> None:
        self.name = "no-call"

    supported_prompt_modes = ("reference",)

    def complete(self, request: Request) -> Completion:
        return Completion(NO_CALL_REPLY)

    def info(self) -> dict[str, Any]:
        return {"backend": self.kind, "reply": NO_CALL_REPLY}


_DT_RE = re.compile(r"\b(2023-\d{2}-\d{2})(?:[ T](\d{1,2}:\d{2}(?::\d{2})?))?")
_CREDS_RE = re.compile(r"\b([A-Z][a-z]+[A-Z][A-Za-z]+)\b[\s,/:;-]*(?:(?:and|password|pw|pass)\s*(?:is|:)?\s*)?([^\s,.;'\"]+)")


def _outputs(history: tuple[Turn, ...]) -> list[Any]:
    return [rec.output for rec in history if isinstance(rec, ApiRecord)]


def _user_text(history: tuple[Turn, ...], requirement: str | None) -> str:
    parts = [requirement or ""] + [t.text for t in history if t.role == "User"]  # type: ignore[union-attr]
    return " ".join(p for p in parts if p)


def _find_field(outputs: list[Any], key: str) -> Any:
    """The latest value of ``key`` anywhere in earlier API outputs."""
    for out in reversed(outputs):
        stack = [out]
        while stack:
            cur = stack.pop()
            if isinstance(cur, dict):
                if key in cur and not isinstance(cur[key], (dict, list)):
                    return cur[key]
                stack.extend(cur.values())
            elif isinstance(cur, list):
                stack.extend(cur)
    return None


def _retrieved(outputs: list[Any]) -> list[str]:
    for out in reversed(outputs):
        if isinstance(out, dict) and "input_parameters" in out:
            return [str(out.get("name"))]
        if isinstance(out, list) and out and all(isinstance(d, dict) and "input_parameters" in d for d in out):
            return [str(d.get("name")) for d in out]
    return []


class HeuristicBackend(Backend):
    """Retrieval by embedding plus rule-based slot filling.

    Args:
        searcher_factory: ``schemas -> index`` with ``search(text, k)``; default:
            the library's embedding search.
    """

    kind = "heuristic"
    concurrent = False

    def __init__(self, searcher_factory: Any = None) -> None:
        self.name = "heuristic"
        self._factory = searcher_factory
        self._indexes: dict[tuple[str, ...], Any] = {}

    supported_prompt_modes = ("reference",)

    def _index(self, schemas: list[ToolSchema]) -> Any:
        key = tuple(s.name for s in schemas)
        if key not in self._indexes:
            if self._factory is not None:
                self._indexes[key] = self._factory(schemas)
            else:
                from apibank_lib.retrieval.search import default_searcher

                self._indexes[key] = default_searcher(schemas)
        return self._indexes[key]

    def complete(self, request: Request) -> Completion:
        context = request.context  # in the agent loop, the episode's steps so far
        outputs = _outputs(context.history)
        if request.kind == "response":
            last = outputs[-1] if outputs else ""
            return Completion(f"Here is what I found: {last}")
        words = _user_text(context.history, context.requirement)
        shown = [s for s in request.prompt.tools]
        if [s.name for s in shown] == ["ToolSearcher"]:
            found = _retrieved(outputs)
            if not found:
                return Completion("API-Request: " + format_call(ApiCall("ToolSearcher", {"keywords": _keywords(words)})))
            target_name = found[-1]
            needs_login = len(found) > 1 and found[0] == "GetUserToken"
            schema = _schema_from_outputs(outputs, target_name)
            if schema is None:
                return Completion("")
            if needs_login and _find_field(outputs, "token") is None:
                login = _schema_from_outputs(outputs, "GetUserToken")
                if login is not None:
                    return Completion("API-Request: " + format_call(_fill(login, words, outputs)))
            return Completion("API-Request: " + format_call(_fill(schema, words, outputs)))
        candidates = [s for s in shown if s.name != "GetUserToken"] or shown
        best = self._index(candidates).search(words or "help", 1)[0][0]
        by_name = {s.name: s for s in shown}
        if "token" in best.input_parameters and _find_field(outputs, "token") is None and "GetUserToken" in by_name:
            best = by_name["GetUserToken"]
        return Completion("API-Request: " + format_call(_fill(best, words, outputs)))


def _keywords(words: str) -> str:
    tokens = re.findall(r"[A-Za-z]+", words.lower())
    stop = {"i", "me", "my", "the", "a", "an", "to", "for", "of", "and", "please", "can", "you", "could", "would", "is", "it", "on", "in", "at", "what", "with"}
    return " ".join(t for t in tokens if t not in stop)[:80] or "help"


def _schema_from_outputs(outputs: list[Any], name: str) -> ToolSchema | None:
    for out in reversed(outputs):
        for d in out if isinstance(out, list) else [out]:
            if isinstance(d, dict) and d.get("name") == name and "input_parameters" in d:
                params = {k: Param(str(v.get("type", "str")), str(v.get("description", ""))) for k, v in d["input_parameters"].items()}
                return ToolSchema(name, str(d.get("description", "")), params, {})
    return None


def _fill(schema: ToolSchema, words: str, outputs: list[Any]) -> ApiCall:
    args: dict[str, Any] = {}
    dates = _DT_RE.findall(words)
    creds = _CREDS_RE.search(words)
    for name, param in schema.input_parameters.items():
        value = _find_field(outputs, name)
        if value is None and name == "username" and creds:
            value = creds.group(1)
        if value is None and name == "password" and creds:
            value = creds.group(2)
        if value is None and ("time" in name or "date" in name) and dates:
            day, clock = dates[0]
            value = f"{day} {clock if clock.count(':') == 2 else clock + ':00'}" if clock and param.type == "str" and name.endswith("time") else day
        if value is not None:
            args[name] = value if isinstance(value, (str, int, float, bool)) else str(value)
    return ApiCall(schema.name, args)
