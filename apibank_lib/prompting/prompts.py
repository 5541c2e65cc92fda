"""Prompts for the API-call and response tasks at each level, in our own words.

The structure follows the paper's protocol: which APIs are described, how the
history and API results are rendered, and the expected
``[ApiName(key='value', ...)]`` form.

* Levels 1-2: an instruction, the API descriptions (one JSON line each, in
  order of first appearance in the dialogue; level-2 API-call samples show only
  ToolSearcher), then the dialogue so far with API records shown as
  ``API-Request: [Name(k='v')]->output``, ending with ``Generate API Request:``
  or ``Generate AI Response:``.
* Level 3: an instruction, the ToolSearcher description in the level-3 schema
  (``apiCode``/``description``/``parameters``/``response``), the requirement,
  and the earlier steps with their whole result envelopes.

Every prompt exists as chat messages (a system message with the instruction
and API descriptions, a user message with the rendered input) and as one
flattened text for completion models, which ends with the *lead* (``API-Request:``
or ``AI:``) the answer continues. A release's own rendered instruction and input
strings can be sent instead (the ``paper`` protocol does so where an official
release ships them).

:func:`target_text` is the other half: the gold answer of a sample as a model
should write it, used by the oracle, the gold replay and training-data export.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from apibank_lib.core.calls import format_call_paper
from apibank_lib.core.types import ApiCallSample, ApiRecord, Context, Sample, ToolSchema, Turn
from apibank_lib.env.tools.toolset import ToolSet

__all__ = [
    "Prompt",
    "build_prompt",
    "target_text",
    "render_history",
    "describe_apis",
    "level3_search_description",
    "API_INSTRUCTION",
    "RESPONSE_INSTRUCTION",
    "LEVEL3_INSTRUCTION",
    "LEADS",
]

API_INSTRUCTION = """You are an assistant that can use APIs. Read the API descriptions and the conversation below, then write the one API request the assistant should send next.
Write the request as [ApiName(key1='value1', key2='value2', ...)], using the API's exact name and parameter names.
Reply with the request only: it starts with [ and ends with ]. Do not explain it, do not add an API result, do not repeat these instructions.
The current year is 2023.
Conversation format:
User: what the user said
AI: what the assistant said
API-Request: [ApiName(key='value')]->what the API returned
Expected reply:
API-Request: [ApiName(key1='value1', key2='value2', ...)]"""

RESPONSE_INSTRUCTION = """You are an assistant that can use APIs. Read the API descriptions and the conversation below, in which the assistant has just received an API result, then write the assistant's next reply to the user.
Base the reply on the API result; be brief and natural. Reply with the message only.
The current year is 2023.
Conversation format:
User: what the user said
AI: what the assistant said
API-Request: [ApiName(key='value')]->what the API returned
Expected reply:
AI: the assistant's reply"""

LEVEL3_INSTRUCTION = """You are an assistant that can use APIs to complete the user's request in several steps. Only the search API below is known at first: use it with a few keywords to find the API you need, then call that API, and continue until the request is done.
Write the next API request as [ApiName(key1='value1', key2='value2', ...)] and nothing else.
Request format:
User: the user's request
API-Request: [ApiName(key='value')]->the result
Expected reply:
API-Request: [ApiName(key1='value1', key2='value2', ...)]"""

LEVEL3_RESPONSE_INSTRUCTION = """You are an assistant that has used APIs to complete the user's request. Read the request and the API results below, then write the final reply to the user, stating the results."""

_SHOT_API = (
    "API descriptions:\n"
    '{"name": "GetToday", "description": "Return the current date.", "input_parameters": {}, "output_parameters": {"date": {"type": "str", "description": "Today, %Y-%m-%d."}}}\n'
    "User: What is the date today?\n"
    "Generate API Request:\n"
    "API-Request: [GetToday()]\n\n"
)
_SHOT_RESPONSE = (
    "User: What is the date today?\n"
    "API-Request: [GetToday()]->2023-03-31\n"
    "Generate AI Response:\n"
    "AI: Today is March 31st, 2023.\n\n"
)


LEADS = {"api": "API-Request:", "response": "AI:"}
"""What the answer of each task starts with (the flattened prompt ends with it)."""


@dataclass
class Prompt:
    """One prompt in both shapes.

    Attributes:
        messages: chat messages (``{"role", "content"}``).
        text: the same content flattened for completion models; ends with ``lead``,
            where the model should continue.
        tools: the APIs described (for native tool calling).
        source: ``"ours"`` or ``"official-test-data"`` (an evaluation prompt), or ``"synthesis:<stage>"`` (a
            synthesis agent's).
        lead: the text the answer starts with (``API-Request:`` or ``AI:``).
    """

    messages: list[dict[str, str]]
    text: str
    tools: list[ToolSchema] = field(default_factory=list)
    source: str = "ours"
    lead: str = ""


def describe_apis(schemas: list[ToolSchema]) -> str:
    """One JSON line per API (Python-style ``json.dumps`` defaults, as in the original)."""
    return "\n".join(json.dumps(s.to_dict()) for s in schemas)


def level3_search_description(schema: ToolSchema) -> str:
    """The ToolSearcher description in the level-3 prompt schema."""
    return json.dumps(
        {
            "apiCode": schema.name,
            "description": schema.description,
            "parameters": {k: p.to_dict() for k, p in schema.input_parameters.items()},
            "response": {k: p.to_dict() for k, p in schema.output_parameters.items()},
        }
    )


def render_history(history: tuple[Turn, ...] | list[Turn], *, level: int = 1) -> list[str]:
    """Render turns as prompt lines.

    API records show their output at levels 1-2 and their whole result envelope
    at level 3, as the original prompts did.
    """
    lines: list[str] = []
    for rec in history:
        if isinstance(rec, ApiRecord):
            shown = rec.result if level == 3 else rec.result.get("output")
            lines.append(f"API-Request: {format_call_paper(rec.api_name, rec.args)}->{shown}")
        else:
            lines.append(f"{rec.role}: {rec.text}")
    return lines


def build_prompt(context: Context, toolset: ToolSet, *, shots: int = 0, release_item: dict[str, Any] | None = None) -> Prompt:
    """The prompt for one prediction.

    Args:
        context: what the model is shown (``sample.context()``, or an agent step's).
        toolset: the tool set whose metadata is shown.
        shots: 0 (the paper's setting) or 1: prepend one worked example, which
            helps small base models keep the format.
        release_item: an official release's rendered test-data item for this
            sample; when given, its instruction and input strings are sent as they are.
    """
    lead = LEADS[context.task]
    tools = [toolset.schema(n) for n in context.api_names if n in toolset]
    if release_item is not None:
        return Prompt(
            [{"role": "system", "content": release_item["instruction"]}, {"role": "user", "content": release_item["input"]}],
            f"{release_item['instruction']}\n{release_item['input']}",
            tools,
            "official-test-data",
            lead,
        )
    if context.level == 3:
        search = toolset.schema("ToolSearcher")
        system = LEVEL3_INSTRUCTION if context.task == "api" else LEVEL3_RESPONSE_INSTRUCTION
        lines = [level3_search_description(search), f"User: {context.requirement or ''}"]
        lines += render_history(context.history, level=3)
        lines.append("Generate API Request: " if context.task == "api" else "Generate AI Response: ")
        tools = [search]
    else:
        instruction = API_INSTRUCTION if context.task == "api" else RESPONSE_INSTRUCTION
        system = f"{instruction}\nAPI descriptions:\n{describe_apis(tools)}"
        lines = render_history(context.history, level=context.level)
        lines.append("Generate API Request:" if context.task == "api" else "Generate AI Response:")
    user = "\n".join(lines) + "\n"
    if shots:
        user = (_SHOT_API if context.task == "api" else _SHOT_RESPONSE) + user
    text = f"{system}\n\n{user}{lead}"
    return Prompt([{"role": "system", "content": system}, {"role": "user", "content": user}], text, tools, "ours", lead)


def target_text(sample: Sample) -> str:
    """The gold answer of a sample as a model should write it.

    An API-call sample's answer is its gold call as the official test data
    renders it, ``API-Request: [Name(key='value', ...)]``; a response sample's is
    the reference reply. Completion models continue a prompt that already ends
    with the lead (``API-Request:``), so their target is this text after the lead.
    """
    if isinstance(sample, ApiCallSample):
        return f"{LEADS['api']} {format_call_paper(sample.gold.api_name, sample.gold.args)}"
    return sample.gold
