"""The ``chat`` prompt mode: what a model is shown, as the chat turns and tool messages it was trained on.

Instruct models are trained on conversations in which a tool call is a structured part of an assistant turn and
its result comes back in a ``tool`` message. :func:`build_chat` renders a :class:`~apibank_lib.core.types.Context` that
way, from the same data the paper's text prompts are made of:

* a short system message (our words; the same for API-call and reply samples, so the samples of one dialogue
  share their prefix and a local model reuses its KV cache);
* User and AI turns as ``user`` and ``assistant`` messages;
* every earlier API record as an assistant message carrying a tool call (name, arguments, an id) followed by a
  ``tool`` message with that id holding the result (its output as JSON, or its exception);
* the APIs the sample may use as ``tools`` (JSON Schema made from each API's parameters). Level 1 lists the
  dialogue's APIs. Levels 2 and 3 list ToolSearcher, plus every API an earlier search of the dialogue returned:
  what a search found becomes callable for the rest of the dialogue, as a model reading the result would
  expect.

The prompt exists in two shapes: :attr:`ChatPrompt.messages` (arguments as dicts, the shape chat templates read,
rendered by :mod:`apibank_lib.prompting.chat_template`) and :meth:`ChatPrompt.openai_messages` (arguments as JSON strings,
the OpenAI wire format an HTTP backend sends).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from apibank_lib.core.types import ApiRecord, Context, Param, ToolSchema
from apibank_lib.env.tools.toolset import ToolSet

__all__ = [
    "ChatPrompt",
    "build_chat",
    "tool_json_schema",
    "searched_apis",
    "tool_result_content",
    "CHAT_SYSTEM",
    "TOOL_CHOICES",
    "RENDERING_VERSION",
]

CHAT_SYSTEM = (
    "You are a helpful assistant with access to the tools listed. When the user's request needs a tool, call it: "
    "use the tool's exact name and parameter names, and take the values from the conversation, written in the "
    "formats the tool's descriptions ask for. After a tool result, answer the user briefly, based on that result. "
    "The current year is 2023."
)
"""The system message of every chat prompt (levels 1-3, both tasks)."""

LEVEL3_SYSTEM_EXTRA = (
    " Only the search tool is known at first: search with a few keywords for the tool you need, call it, and "
    "go on until the request is done."
)

RENDERING_VERSION = hashlib.sha256((CHAT_SYSTEM + LEVEL3_SYSTEM_EXTRA).encode()).hexdigest()[:8]
"""Changes whenever the chat rendering's words change: part of a chat run's identity, so that a run never resumes
with answers to other prompts."""

TOOL_CHOICES = ("required", "auto")
"""How an API-call sample asks for a call in chat mode: ``required`` (a tool call is demanded, as the paper's
"Generate API Request" does: ``tool_choice="required"`` over HTTP, the generation started inside the template's
tool-call syntax locally) or ``auto`` (the model decides)."""

_JSON_TYPES = {
    "str": "string",
    "string": "string",
    "int": "integer",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "bool": "boolean",
    "boolean": "boolean",
    "list": "array",
    "list(str)": "array",
    "dict": "object",
    "json": "object",
}


def tool_json_schema(schema: ToolSchema) -> dict[str, Any]:
    """An API as an OpenAI-style ``tools`` entry: JSON Schema types, descriptions kept, required parameters listed."""
    props: dict[str, Any] = {}
    for name, p in schema.input_parameters.items():
        prop: dict[str, Any] = {"type": _JSON_TYPES.get(p.type.strip().lower(), "string"), "description": p.description}
        if p.type == "list(str)":
            prop["items"] = {"type": "string"}
        props[name] = prop
    required = [n for n, p in schema.input_parameters.items() if p.required]
    return {
        "type": "function",
        "function": {
            "name": schema.name,
            "description": schema.description,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


def _schema_from_output(d: dict[str, Any]) -> ToolSchema | None:
    """A search result's API description as a schema (for an API the tool set does not know)."""
    try:
        inputs = {k: Param(str(v.get("type", "str")), str(v.get("description", ""))) for k, v in d["input_parameters"].items()}
        outputs = {
            k: Param(str(v.get("type", "str")), str(v.get("description", "")))
            for k, v in (d.get("output_parameters") or {}).items()
        }
        return ToolSchema(str(d["name"]), str(d.get("description", "")), inputs, outputs)
    except (KeyError, AttributeError, TypeError):
        return None


def searched_apis(history: tuple[Any, ...] | list[Any]) -> list[dict[str, Any]]:
    """The API descriptions earlier ToolSearcher calls of a history returned, in order, each once.

    A level-2 search returns a list (GetUserToken and the best match), a level-3 search one description.
    """
    found: dict[str, dict[str, Any]] = {}
    for rec in history:
        if not isinstance(rec, ApiRecord) or rec.api_name != "ToolSearcher":
            continue
        output = rec.result.get("output")
        for d in output if isinstance(output, list) else [output]:
            if isinstance(d, dict) and isinstance(d.get("name"), str):
                found.setdefault(d["name"], d)
    return list(found.values())


def _tool_schemas(context: Context, toolset: ToolSet) -> list[ToolSchema]:
    if context.level == 1:
        return [toolset.schema(n) for n in context.api_names if n in toolset]
    schemas = [toolset.schema("ToolSearcher")] if "ToolSearcher" in toolset else []
    for d in searched_apis(context.history):
        schema = toolset.schema(d["name"]) if d["name"] in toolset else _schema_from_output(d)
        if schema is not None and all(s.name != schema.name for s in schemas):
            schemas.append(schema)
    return schemas


def tool_result_content(result: dict[str, Any]) -> str:
    """A recorded result as a tool message's content: its output as JSON, or its exception."""
    if result.get("exception") is not None:
        return json.dumps({"exception": result["exception"]}, ensure_ascii=False)
    return json.dumps(result.get("output"), ensure_ascii=False, default=str)


@dataclass
class ChatPrompt:
    """A prompt as chat messages and tools.

    Attributes:
        messages: ``system``/``user``/``assistant``/``tool`` messages; an assistant tool call is
            ``{"id", "type": "function", "function": {"name", "arguments": dict}}`` (the shape chat templates read).
        tools: OpenAI-style tool entries (:func:`tool_json_schema`).
        task: ``api`` or ``response``: what the answer should be.
        schemas: the APIs the tools describe.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    task: str
    schemas: list[ToolSchema] = field(default_factory=list)

    def openai_messages(self) -> list[dict[str, Any]]:
        """The messages in the OpenAI wire format: tool-call arguments as JSON strings."""
        out: list[dict[str, Any]] = []
        for m in self.messages:
            if "tool_calls" not in m:
                out.append(dict(m))
                continue
            calls = [
                {**tc, "function": {**tc["function"], "arguments": json.dumps(tc["function"]["arguments"], ensure_ascii=False)}}
                for tc in m["tool_calls"]
            ]
            out.append({**m, "tool_calls": calls})
        return out

    def digest(self) -> str:
        """A short hash of task, messages and tools (identical prompts get the same answer; an API-call sample and
        the reply sample after the same history are different prompts)."""
        blob = json.dumps({"task": self.task, "messages": self.messages, "tools": self.tools}, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _add(messages: list[dict[str, Any]], role: str, text: str) -> None:
    """Append a text turn; a second turn of the same speaker in a row joins the first (templates that insist on
    alternating roles would refuse two)."""
    last = messages[-1] if messages else None
    if last is not None and last["role"] == role and "tool_calls" not in last and role in ("user", "assistant"):
        last["content"] = f"{last['content']}\n{text}"
    else:
        messages.append({"role": role, "content": text})


def build_chat(context: Context, toolset: ToolSet) -> ChatPrompt:
    """The chat prompt for one prediction (see the module's docstring for the rendering rules).

    Args:
        context: what the model is shown (``sample.context()``, or an agent step's).
        toolset: the tool set whose metadata is shown.
    """
    system = CHAT_SYSTEM + (LEVEL3_SYSTEM_EXTRA if context.level == 3 else "")
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    if context.level == 3:
        messages.append({"role": "user", "content": context.requirement or ""})
    n_calls = 0
    for rec in context.history:
        if isinstance(rec, ApiRecord):
            call = {
                "id": f"call_{n_calls}",
                "type": "function",
                "function": {"name": rec.api_name, "arguments": dict(rec.args)},
            }
            last = messages[-1]
            if last["role"] == "assistant" and "tool_calls" not in last:
                # "Let me look that up." and the call it announces are one assistant turn.
                last["tool_calls"] = [call]
            else:
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "name": rec.api_name, "content": tool_result_content(rec.result)}
            )
            n_calls += 1
        else:
            _add(messages, "user" if rec.role == "User" else "assistant", rec.text)
    schemas = _tool_schemas(context, toolset)
    return ChatPrompt(messages, [tool_json_schema(s) for s in schemas], context.task, schemas)
