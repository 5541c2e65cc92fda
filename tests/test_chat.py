"""The chat prompt mode: contexts as chat turns with tool calls and tool messages, and chat templates rendered safely."""

from __future__ import annotations

import json

import pytest

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import ApiRecord, Context, Utterance
from apibank_lib.data.datasets import Benchmark
from apibank_lib.env.tools.registry import toolset_for_level
from apibank_lib.prompting.chat import CHAT_SYSTEM, build_chat, searched_apis, tool_json_schema, tool_result_content
from apibank_lib.prompting.chat_template import ChatTemplate, TemplateError

# A template of our own, in the usual shape (system turn with the tools, turns, tool results, a tool-call syntax),
# to test the rendering machinery without a model file.
OUR_TEMPLATE = """{%- for m in messages -%}
{%- if m.role == 'system' -%}<s>{{ m.content }}{% if tools %} TOOLS:{% for t in tools %} {{ t.function.name }}{% endfor %}{% endif %}</s>
{% elif m.role == 'tool' -%}<result id={{ m.tool_call_id }}>{{ m.content }}</result>
{% elif m.role == 'assistant' -%}<a>{{ m.content }}{% for tc in m.tool_calls or [] %}<call>{{ {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson }}</call>{% endfor %}</a>
{% elif m.role == 'user' -%}<u>{{ m.content }}</u>
{% else %}{{ raise_exception('unknown role ' + m.role) }}{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}<a>{% endif -%}"""


def _context(level: int = 1, task: str = "api") -> Context:
    history = (
        Utterance("User", "Log me in: anna / pw"),
        Utterance("AI", "One moment."),
        ApiRecord("GetUserToken", {"username": "anna", "password": "pw"}, {"api_name": "GetUserToken", "input": {}, "output": {"token": "t1"}, "exception": None}),
        Utterance("AI", "Done."),
        Utterance("User", "Now set an alarm for 7."),
    )
    return Context(level, task, history, ("GetUserToken", "AddAlarm"))


def test_history_becomes_turns_tool_calls_and_tool_messages() -> None:
    chat = build_chat(_context(), toolset_for_level(1))
    roles = [m["role"] for m in chat.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert chat.messages[0]["content"] == CHAT_SYSTEM
    # The announcement and the call it announces are one assistant turn; the result follows with the call's id.
    assert chat.messages[2]["content"] == "One moment."
    call = chat.messages[2]["tool_calls"][0]
    assert call["function"] == {"name": "GetUserToken", "arguments": {"username": "anna", "password": "pw"}}
    assert chat.messages[3] == {"role": "tool", "tool_call_id": call["id"], "name": "GetUserToken", "content": '{"token": "t1"}'}
    assert [t["function"]["name"] for t in chat.tools] == ["GetUserToken", "AddAlarm"]
    wire = chat.openai_messages()
    assert json.loads(wire[2]["tool_calls"][0]["function"]["arguments"]) == {"username": "anna", "password": "pw"}
    assert isinstance(chat.messages[2]["tool_calls"][0]["function"]["arguments"], dict)  # the original is unchanged


def test_same_speaker_twice_is_one_turn_and_exceptions_are_shown() -> None:
    failed = ApiRecord("AddAlarm", {"token": "x"}, {"api_name": "AddAlarm", "input": {}, "output": None, "exception": "Token is invalid"})
    ctx = Context(1, "response", (Utterance("User", "a"), Utterance("User", "b"), failed), ("AddAlarm",))
    chat = build_chat(ctx, toolset_for_level(1))
    assert chat.messages[1] == {"role": "user", "content": "a\nb"}
    assert json.loads(chat.messages[-1]["content"]) == {"exception": "Token is invalid"}
    assert tool_result_content({"output": ["a", 1], "exception": None}) == '["a", 1]'


def test_level2_lists_toolsearcher_and_what_searches_found(bench: Benchmark) -> None:
    sample = next(s for s in bench.samples(2, "api") if any(getattr(t, "api_name", "") == "ToolSearcher" for t in s.history))
    found = [d["name"] for d in searched_apis(sample.history)]
    chat = build_chat(sample.context(), bench.toolset(2))
    names = [t["function"]["name"] for t in chat.tools]
    assert names[0] == "ToolSearcher" and names[1:] == found
    first = next(s for s in bench.samples(2, "api") if not s.history or s.sample_id == 0)
    assert [t["function"]["name"] for t in build_chat(first.context(), bench.toolset(2)).tools][:1] == ["ToolSearcher"]


def test_level3_starts_with_the_requirement(bench: Benchmark) -> None:
    sample = [s for s in bench.samples(3, "api") if s.sample_id == 2][0]
    chat = build_chat(sample.context(), bench.toolset(3))
    assert chat.messages[1] == {"role": "user", "content": sample.requirement}
    assert [m["role"] for m in chat.messages[2:]] == ["assistant", "tool", "assistant", "tool"]
    assert {t["function"]["name"] for t in chat.tools} >= {"ToolSearcher", sample.history[1].api_name}


def test_tool_schema_types_descriptions_and_required() -> None:
    schema = tool_json_schema(toolset_for_level(1).schema("AddMeeting"))
    params = schema["function"]["parameters"]
    assert params["properties"]["attendees"]["type"] == "array" and params["properties"]["attendees"]["items"] == {"type": "string"}
    assert params["properties"]["token"]["description"]
    assert "token" in params["required"]


def test_api_and_reply_samples_of_a_dialogue_share_their_prefix(bench: Benchmark) -> None:
    samples = [s for s in bench.samples(1) if s.dialogue_id == bench.samples(1)[0].dialogue_id]
    chats = [build_chat(s.context(), bench.toolset(1)) for s in samples]
    assert len({json.dumps(c.messages[0]) + json.dumps(c.tools) for c in chats}) == 1
    # Equal digests exactly where the prompts are the same: the original cutter's duplicate API-call samples.
    assert len({c.digest() for c in chats}) == len({(s.kind, len(s.history)) for s in samples})


# --- templates ---------------------------------------------------------------------------------------


def test_our_template_renders_tools_calls_and_the_call_opening() -> None:
    tpl = ChatTemplate(OUR_TEMPLATE)
    chat = build_chat(_context(), toolset_for_level(1))
    text = tpl.render(chat.messages, chat.tools)
    assert "TOOLS: GetUserToken AddAlarm" in text
    assert '<call>{"name": "GetUserToken", "arguments": {"username": "anna", "password": "pw"}}</call>' in text
    assert text.endswith("<a>") and tpl.supports_tools
    assert tpl.call_opening(chat.messages, chat.tools) == '<call>{"name": "'


def test_template_errors_are_clear_and_the_sandbox_holds() -> None:
    with pytest.raises(TemplateError, match="refused the conversation: unknown role robot"):
        ChatTemplate(OUR_TEMPLATE).render([{"role": "robot", "content": "x"}])
    with pytest.raises(TemplateError, match="does not compile"):
        ChatTemplate("{% for %}").render([])
    with pytest.raises(TemplateError, match="failed"):
        ChatTemplate("{{ messages.__class__.__mro__[1].__subclasses__() }}").render([])
    with pytest.raises(TemplateError):
        ChatTemplate("{% set _ = messages.append(1) %}").render([])  # the data cannot be changed
    assert ChatTemplate("{{ strftime_now('%Y-%m-%d') }} {{ 'é<'|tojson }}").render([]) == '2023-03-31 "é<"'


def test_a_file_without_a_template_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="no chat template"):
        ChatTemplate.from_gguf_metadata({})
    tpl = ChatTemplate.from_gguf_metadata(
        {"tokenizer.chat_template": "{{ bos_token }}x", "tokenizer.ggml.bos_token_id": "7"}, lambda tid: f"<t{tid}>"
    )
    assert tpl.render([]) == "<t7>x" and not tpl.supports_tools
