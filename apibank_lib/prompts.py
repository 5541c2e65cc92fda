"""Prompts for the API-call and response tasks at each level, in our own words.

The structure follows the paper's protocol (see the spec, formats §6): which
APIs are described, how the history and API results are rendered, and the
expected ``[ApiName(key='value', ...)]`` form.

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
flattened text for completion models. With the ``paper`` protocol on an
official release that ships its rendered test data, the release's own
instruction and input strings are used instead (read from the user's copy).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from apibank_lib.calls import format_call_paper
from apibank_lib.datasets import Benchmark
from apibank_lib.tools.toolset import ToolSet
from apibank_lib.types import Level3Step, Sample, ToolSchema, Turn

__all__ = ["Prompt", "build_prompt", "render_history", "describe_apis", "level3_search_description", "API_INSTRUCTION", "RESPONSE_INSTRUCTION", "LEVEL3_INSTRUCTION"]

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


@dataclass
class Prompt:
    """One prompt in both shapes.

    Attributes:
        messages: chat messages (``{"role", "content"}``).
        text: the same content flattened for completion models; ends where the
            model should continue.
        tools: the APIs described (for native tool calling).
        source: ``"ours"`` or ``"official-test-data"``.
    """

    messages: list[dict[str, str]]
    text: str
    tools: list[ToolSchema] = field(default_factory=list)
    source: str = "ours"


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


def render_history(history: list[Any], *, full_result: bool = False) -> list[str]:
    """Render records (Turns or Level3Steps) as prompt lines."""
    lines: list[str] = []
    for rec in history:
        if isinstance(rec, Level3Step):
            lines.append(f"API-Request: {format_call_paper(rec.api_name, rec.input)}->{rec.output}")
        elif isinstance(rec, Turn) and rec.role == "API":
            result = rec.result or {}
            shown = result if full_result else result.get("output")
            lines.append(f"API-Request: {format_call_paper(str(rec.api_name), rec.param_dict or {})}->{shown}")
        elif isinstance(rec, Turn):
            lines.append(f"{rec.role}: {rec.text}")
    return lines


def _official_item(bench: Benchmark, sample: Sample) -> dict[str, Any] | None:
    """The release's rendered test-data item for this sample, when the release ships one."""
    if sample.level == 3:
        stem = "level-3-batch-inf" if sample.kind == "api" else "level-3-batch-inf-response"
        for item in bench.test_data.get(stem, []):
            if str(item.get("sample_id")) == sample.dialogue_id and (sample.kind == "response" or item.get("api_id") == sample.sample_id):
                return item
        return None
    stem = f"level-{sample.level}-{'api' if sample.kind == 'api' else 'response'}"
    for item in bench.test_data.get(stem, []):
        name = str(item.get("file", ""))
        if name.removesuffix(".jsonl") == sample.dialogue_id and item.get("id") == sample.sample_id:
            return item
    return None


def build_prompt(sample: Sample, bench: Benchmark, toolset: ToolSet, *, protocol: str = "v2", shots: int = 0) -> Prompt:
    """The prompt for one sample.

    Args:
        sample: the sample (API-call or response task, any level).
        bench: the benchmark (for an official release's rendered test data).
        toolset: the tool set whose metadata is shown.
        protocol: with ``"paper"`` and an official release carrying rendered test
            data, the release's own strings are sent.
        shots: 0 (the paper's setting) or 1: prepend one worked example, which
            helps small base models keep the format.
    """
    if protocol == "paper" and bench.official:
        item = _official_item(bench, sample)
        if item is not None:
            tools = [toolset.schema(n) for n in sample.api_names if n in toolset]
            return Prompt(
                [{"role": "system", "content": item["instruction"]}, {"role": "user", "content": item["input"]}],
                f"{item['instruction']}\n{item['input']}",
                tools,
                "official-test-data",
            )
    tools = [toolset.schema(n) for n in sample.api_names if n in toolset]
    if sample.level == 3:
        search = toolset.schema("ToolSearcher")
        instruction = LEVEL3_INSTRUCTION if sample.kind == "api" else LEVEL3_RESPONSE_INSTRUCTION
        lines = [level3_search_description(search), f"User: {sample.requirement or ''}"]
        lines += render_history(sample.history)
        lines.append("Generate API Request: " if sample.kind == "api" else "Generate AI Response: ")
        system = instruction
        user = "\n".join(lines) + "\n"
        tools = [search]
    else:
        instruction = API_INSTRUCTION if sample.kind == "api" else RESPONSE_INSTRUCTION
        system = f"{instruction}\nAPI descriptions:\n{describe_apis(tools)}"
        lines = render_history(sample.history)
        lines.append("Generate API Request:" if sample.kind == "api" else "Generate AI Response:")
        user = "\n".join(lines) + "\n"
    if shots:
        user = (_SHOT_API if sample.kind == "api" else _SHOT_RESPONSE) + user
    lead = "API-Request:" if sample.kind == "api" else "AI:"
    text = f"{system}\n\n{user}{lead}"
    return Prompt([{"role": "system", "content": system}, {"role": "user", "content": user}], text, tools)
