"""Tests of reading (and writing) the tool calls that chat models emit, in every format of apibank_lib.prompting.toolcalls."""

from __future__ import annotations

import json
import random
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apibank_lib.core.calls import format_call
from apibank_lib.core.types import ApiCall, ApiCallSample
from apibank_lib.data.datasets import load_benchmark
from apibank_lib.prompting.toolcalls import (
    FORMATS,
    ParsedAnswer,
    parse_tool_calls,
    render_tool_call,
    structured_tool_call,
)

TEXT_FORMATS = [f for f in FORMATS if f != "openai"]
WEATHER = ApiCall("QueryWeather", {"city": "Paris", "date": "2023-03-21"})
TODAY = ApiCall("GetToday", {})


def _parse(fmt: str, call: ApiCall) -> ParsedAnswer:
    """Render ``call`` in ``fmt`` and read it back (openai through the structured shape)."""
    if fmt == "openai":
        return parse_tool_calls("", [structured_tool_call(call)])
    return parse_tool_calls(render_tool_call(call, fmt))


def _offset(error: str | None) -> int:
    assert error is not None and " at offset " in error, error
    return int(error.split(" at offset ")[1].split(":")[0].split()[0])


# --- well-formed ---------------------------------------------------------------------------------------------------

WELL_FORMED = [
    (
        "hermes",
        '<tool_call>\n{"name": "QueryWeather", "arguments": {"city": "Paris", "date": "2023-03-21"}}\n</tool_call>',
    ),
    (
        "hermes",
        '<tool_call>{"name": "QueryWeather", "parameters": {"city": "Paris", "date": "2023-03-21"}}</tool_call>',
    ),
    (
        "hermes",
        (
            '<tool_call>\n{"name": "QueryWeather", '
            '"arguments": "{\\"city\\": \\"Paris\\", \\"date\\": \\"2023-03-21\\"}"}\n</tool_call>'
        ),
    ),
    (
        "llama3",
        '<|python_tag|>{"name": "QueryWeather", "parameters": {"city": "Paris", "date": "2023-03-21"}}<|eom_id|>',
    ),
    ("llama3", '{"name": "QueryWeather", "parameters": {"city": "Paris", "date": "2023-03-21"}}'),
    ("mistral", '[TOOL_CALLS][{"name": "QueryWeather", "arguments": {"city": "Paris", "date": "2023-03-21"}}]'),
    ("mistral", '[TOOL_CALLS] {"name": "QueryWeather", "arguments": {"city": "Paris", "date": "2023-03-21"}}'),
    ("mistral", '[TOOL_CALLS]QueryWeather[ARGS]{"city": "Paris", "date": "2023-03-21"}'),
    ("mistral", '[TOOL_CALLS]QueryWeather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris", "date": "2023-03-21"}'),
    ("paper", "[QueryWeather(city='Paris', date='2023-03-21')]"),
    ("paper", "API-Request: [QueryWeather(city='Paris', date='2023-03-21')]"),
    ("json", '{"name": "QueryWeather", "arguments": {"city": "Paris", "date": "2023-03-21"}}'),
    ("json", '[{"name": "QueryWeather", "arguments": {"city": "Paris", "date": "2023-03-21"}}]'),
    ("json", '```json\n{"name": "QueryWeather", "arguments": {"city": "Paris", "date": "2023-03-21"}}\n```'),
    ("json", '{"arguments": {"city": "Paris", "date": "2023-03-21"}, "name": "QueryWeather"}'),
]


@pytest.mark.parametrize(("fmt", "text"), WELL_FORMED)
def test_well_formed_call_is_read(fmt: str, text: str) -> None:
    answer = parse_tool_calls(text)
    assert answer == ParsedAnswer((WEATHER,), fmt, None, text)
    assert answer.first == WEATHER and answer.n_calls == 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_rendered_call_reads_back_in_its_format(fmt: str) -> None:
    for call in (WEATHER, TODAY):
        answer = _parse(fmt, call)
        assert (answer.calls, answer.format, answer.error) == ((call,), fmt, None)


def test_render_shapes() -> None:
    call = ApiCall("A", {"x": "Zürich", "n": 2})
    assert (
        render_tool_call(call, "hermes")
        == '<tool_call>\n{"name": "A", "arguments": {"x": "Zürich", "n": 2}}\n</tool_call>'
    )
    assert render_tool_call(call, "llama3") == '<|python_tag|>{"name": "A", "parameters": {"x": "Zürich", "n": 2}}'
    assert render_tool_call(call, "mistral") == '[TOOL_CALLS][{"name": "A", "arguments": {"x": "Zürich", "n": 2}}]'
    assert render_tool_call(call, "json") == '{"name": "A", "arguments": {"x": "Zürich", "n": 2}}'
    assert render_tool_call(call, "paper") == format_call(call) == "[A(x='Zürich', n=2)]"
    assert structured_tool_call(call, "call_7") == {
        "id": "call_7",
        "type": "function",
        "function": {"name": "A", "arguments": '{"x": "Zürich", "n": 2}'},
    }


def test_render_refuses_openai_and_unknown_formats() -> None:
    with pytest.raises(ValueError, match="structured_tool_call"):
        render_tool_call(WEATHER, "openai")
    with pytest.raises(ValueError) as info:
        render_tool_call(WEATHER, "xml")
    assert all(fmt in str(info.value) for fmt in FORMATS)
    with pytest.raises(ValueError, match="JSON"):
        render_tool_call(ApiCall("A", {"x": {1, 2}}), "json")


# --- several calls -------------------------------------------------------------------------------------------------

SEVERAL = [
    (
        "hermes",
        (
            '<tool_call>\n{"name": "QueryWeather", "arguments": {"city": "Paris", "date": "2023-03-21"}}\n'
            '</tool_call>\n<tool_call>\n{"name": "GetToday", "arguments": {}}\n</tool_call>'
        ),
    ),
    (
        "llama3",
        (
            '<|python_tag|>{"name": "QueryWeather", "parameters": {"city": "Paris", "date": "2023-03-21"}}; '
            '{"name": "GetToday", "parameters": {}}'
        ),
    ),
    (
        "llama3",
        (
            '{"name": "QueryWeather", "parameters": {"city": "Paris", "date": "2023-03-21"}}\n'
            '{"name": "GetToday", "parameters": {}}'
        ),
    ),
    (
        "mistral",
        (
            '[TOOL_CALLS][{"name": "QueryWeather", "arguments": {"city": "Paris", "date": "2023-03-21"}}, '
            '{"name": "GetToday", "arguments": {}}]'
        ),
    ),
    ("mistral", '[TOOL_CALLS]QueryWeather[ARGS]{"city": "Paris", "date": "2023-03-21"}[TOOL_CALLS]GetToday[ARGS]{}'),
    ("paper", "[QueryWeather(city='Paris', date='2023-03-21')] then [GetToday()]"),
    (
        "json",
        (
            '[{"name": "QueryWeather", "arguments": {"city": "Paris", "date": "2023-03-21"}}, '
            '{"name": "GetToday", "arguments": {}}]'
        ),
    ),
    (
        "json",
        (
            '{"name": "QueryWeather", "arguments": {"city": "Paris", "date": "2023-03-21"}}\n'
            '{"name": "GetToday", "arguments": {}}'
        ),
    ),
]


@pytest.mark.parametrize(("fmt", "text"), SEVERAL)
def test_several_calls_are_all_kept_in_order(fmt: str, text: str) -> None:
    answer = parse_tool_calls(text)
    assert (answer.calls, answer.format, answer.error) == ((WEATHER, TODAY), fmt, None)
    assert answer.first == WEATHER and answer.n_calls == 2


def test_several_structured_calls() -> None:
    answer = parse_tool_calls(None, [structured_tool_call(WEATHER, "a"), structured_tool_call(TODAY, "b")])
    assert (answer.calls, answer.format, answer.error, answer.text) == ((WEATHER, TODAY), "openai", None, "")


# --- malformed -----------------------------------------------------------------------------------------------------

MALFORMED = [
    # (format, text, offset of the problem)
    ("hermes", '<tool_call>\n{{"name": "QueryWeather", "arguments": {"city": "Paris"}}}\n</tool_call>', 13),
    ("hermes", '<tool_call>\n{"name": "QueryWeather", "arguments": {"city": "Paris"}\n</tool_call>', 68),
    ("hermes", '<tool_call>\n{"name": "QueryWeather" "arguments": {}}\n</tool_call>', 36),
    ("hermes", '<tool_call>\n{"name": "QueryWeather", "arguments": {}}}\n</tool_call>', 53),  # an extra brace
    ("hermes", "<tool_call>\n</tool_call>", 12),
    (
        "hermes",
        '<tool_call>\n{"name": "QueryWeather", "arguments": {"city": "Par',
        59,
    ),  # cut off inside the JSON: the open string
    ("llama3", '<|python_tag|>{"name": "QueryWeather", "parameters": {"city": "Paris"}', 70),
    ("llama3", '<|python_tag|>{{"name": "QueryWeather", "parameters": {}}}', 15),
    ("llama3", '<|python_tag|>brave_search.call(query="weather")', 14),
    ("mistral", '[TOOL_CALLS][{"name": "QueryWeather", "arguments": {"city": "Paris"}', 68),
    ("mistral", '[TOOL_CALLS][{{"name": "QueryWeather", "arguments": {}}}]', 14),
    ("mistral", "[TOOL_CALLS] QueryWeather(city='Paris')", 13),
    ("mistral", "[TOOL_CALLS][]", 13),
    ("paper", "[QueryWeather(city='Paris', date='2023-03-21')", 46),
    ("paper", "API-Request: [QueryWeather(city=Paris)]", 32),
    ("json", '{{"name": "QueryWeather", "arguments": {"city": "Paris"}}}', 1),
    ("json", 'Here you go: {"name": "QueryWeather", "arguments": {"city": "Paris"}', 68),
    ("json", '```json\n{"name": "QueryWeather", "arguments": {"city": "Paris",}}\n```', 63),
]


@pytest.mark.parametrize(("fmt", "text", "offset"), MALFORMED)
def test_malformed_call_gives_an_error_naming_format_and_place(fmt: str, text: str, offset: int) -> None:
    answer = parse_tool_calls(text)
    assert answer.calls == () and answer.first is None and answer.n_calls == 0
    assert answer.format == fmt and answer.text == text
    assert answer.error is not None and answer.error.startswith(f"{fmt} tool call 1: ")
    assert _offset(answer.error) == offset


def test_error_message_shape() -> None:
    text = '<tool_call>\n{"name": "QueryWeather" "arguments": {}}\n</tool_call>'
    assert parse_tool_calls(text).error == "hermes tool call 1: invalid JSON at offset 36: Expecting ',' delimiter"


LATER_MALFORMED = [
    (
        "hermes",
        (
            '<tool_call>\n{"name": "GetToday", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "B", '
            '"arguments": {</tool_call>\n<tool_call>\n{"name": "C", "arguments": {}}\n</tool_call>'
        ),
    ),
    (
        "llama3",
        (
            '<|python_tag|>{"name": "GetToday", "parameters": {}}; {"name": "B", "parameters": [1]}; '
            '{"name": "C", "parameters": {}}'
        ),
    ),
    ("mistral", '[TOOL_CALLS][{"name": "GetToday", "arguments": {}}, {"name": "B", "arguments": {]'),
    ("paper", "[GetToday()] and then [B(x='1'"),
    ("json", '{"name": "GetToday", "arguments": {}}\n{"name": 2, "arguments": {}}\n{"name": "C", "arguments": {}}'),
]


@pytest.mark.parametrize(("fmt", "text"), LATER_MALFORMED)
def test_later_malformed_call_keeps_the_calls_before_it(fmt: str, text: str) -> None:
    answer = parse_tool_calls(text)
    assert (answer.calls, answer.format) == ((TODAY,), fmt)
    assert answer.error is not None and answer.error.startswith(f"{fmt} tool call 2")
    assert _offset(answer.error) > text.index("GetToday")


def test_first_structured_call_unreadable_drops_the_rest() -> None:
    bad = {"id": "a", "type": "function", "function": {"name": "B", "arguments": "{"}}
    answer = parse_tool_calls("", [bad, structured_tool_call(TODAY)])
    assert answer.calls == () and answer.format == "openai"
    assert answer.error is not None and answer.error.startswith("openai tool call 1 ('B'): bad arguments")


# --- wrong types ---------------------------------------------------------------------------------------------------

WRONG_OBJECTS = {
    "arguments a list": ({"name": "QueryWeather", "arguments": ["Paris"]}, "bad arguments"),
    "arguments a string that is not JSON": ({"name": "QueryWeather", "arguments": "city=Paris"}, "bad arguments"),
    "arguments a string holding a list": ({"name": "QueryWeather", "arguments": '["Paris"]'}, "bad arguments"),
    "arguments a number": ({"name": "QueryWeather", "arguments": 3}, "bad arguments"),
    "name a number": ({"name": 42, "arguments": {"city": "Paris"}}, "bad name"),
    "name empty": ({"name": "  ", "arguments": {}}, "bad name"),
    "name null": ({"name": None, "arguments": {}}, "bad name"),
}


def _write_object(fmt: str, obj: dict[str, Any]) -> str:
    body = json.dumps(obj)
    if fmt == "llama3" and "arguments" in obj:
        body = json.dumps({"name": obj["name"], "parameters": obj["arguments"]})
    return {
        "hermes": f"<tool_call>\n{body}\n</tool_call>",
        "llama3": f"<|python_tag|>{body}",
        "mistral": f"[TOOL_CALLS][{body}]",
        "json": f"Calling it now. {body}",
    }[fmt]


@pytest.mark.parametrize("case", sorted(WRONG_OBJECTS))
@pytest.mark.parametrize("fmt", ["hermes", "llama3", "mistral", "json"])
def test_wrong_types_in_text_formats(fmt: str, case: str) -> None:
    obj, what = WRONG_OBJECTS[case]
    text = _write_object(fmt, obj)
    answer = parse_tool_calls(text)
    assert (answer.calls, answer.format) == ((), fmt)
    assert answer.error is not None and answer.error.startswith(f"{fmt} tool call 1")
    assert f": {what} at offset {text.index('{')}" in answer.error


@pytest.mark.parametrize("case", sorted(WRONG_OBJECTS))
def test_wrong_types_in_structured_calls(case: str) -> None:
    obj, what = WRONG_OBJECTS[case]
    answer = parse_tool_calls("some text", [{"id": "c", "type": "function", "function": obj}])
    assert (answer.calls, answer.format, answer.text) == ((), "openai", "some text")
    assert answer.error is not None and answer.error.startswith("openai tool call 1") and f": {what}: " in answer.error


def test_not_an_object_inside_a_block() -> None:
    answer = parse_tool_calls('<tool_call>\n["QueryWeather", {"city": "Paris"}]\n</tool_call>')
    assert answer.calls == () and answer.error == (
        "hermes tool call 1: not a call object at offset 12: expected a JSON object, got a list"
    )


def test_unknown_keys_without_arguments_are_refused_not_emptied() -> None:
    answer = parse_tool_calls('<tool_call>\n{"name": "QueryWeather", "args": {"city": "Paris"}}\n</tool_call>')
    assert answer.calls == () and 'no "arguments" or "parameters"' in (answer.error or "")
    bare_name = parse_tool_calls('<tool_call>\n{"name": "GetToday"}\n</tool_call>')
    assert (bare_name.calls, bare_name.error) == ((TODAY,), None)


def test_json_types_are_kept() -> None:
    args = {
        "i": 3,
        "f": 2.5,
        "neg": -1,
        "t": True,
        "f2": False,
        "none": None,
        "list": [1, "a", [2]],
        "d": {"k": {"v": 1}},
    }
    call = ApiCall("Typed", args)
    for fmt in FORMATS:
        answer = _parse(fmt, call)
        assert answer.calls == (call,), fmt
        got = answer.calls[0].args
        assert [type(v) for v in got.values()] == [type(v) for v in args.values()], fmt


# --- unicode and size ----------------------------------------------------------------------------------------------

UNICODE = ApiCall(
    "SendEmail", {"receiver": "zoë@example.com", "subject": "Zürich 東京 🎉", "content": "Ça va? \u00e9\u0301 🇨🇭\n"}
)


@pytest.mark.parametrize("fmt", FORMATS)
def test_unicode_values_are_kept(fmt: str) -> None:
    answer = _parse(fmt, UNICODE)
    assert (answer.calls, answer.error) == ((UNICODE,), None)


def test_escaped_unicode_in_json_is_decoded() -> None:
    answer = parse_tool_calls(
        '<tool_call>{"name": "Translate", "arguments": {"src": "\\u6771\\u4eac \\ud83c\\udf89"}}</tool_call>'
    )
    assert answer.calls == (ApiCall("Translate", {"src": "東京 🎉"}),)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_100_kb_value_is_read(fmt: str) -> None:
    call = ApiCall("Write", {"content": "lorem ipsum 'dolor' \"sit\" {amet} " * 3100, "n": 1})
    assert len(call.args["content"]) > 100_000
    start = time.perf_counter()
    answer = _parse(fmt, call)
    assert time.perf_counter() - start < 2
    assert (answer.calls, answer.error) == ((call,), None)


def _garbage() -> dict[str, str]:
    size = 200_000
    rng = random.Random(7)
    return {
        "random braces and quotes": "".join(rng.choice("{}[]\"':,\\ ") for _ in range(size)),
        "random with names": "".join(
            rng.choice(["{", "}", '"name": ', '"arguments": ', '"', "[", "]", ",", " ", "\\"]) for _ in range(size // 3)
        ),
        "nested name objects": '{"name": ' * (size // 9),
        "nested lists in a block": "<tool_call>" + "[" * size,
        "nested objects after the tag": "<|python_tag|>" + '{"a": ' * (size // 6),
        "nested lists after TOOL_CALLS": "[TOOL_CALLS]" + "[" * size,
        "many TOOL_CALLS": "[TOOL_CALLS]" * (size // 12),
        "many open blocks": "<tool_call>" * (size // 11),
        "many unclosed calls": "[A(x='" * (size // 6),
        "nested paper values": "[A(x=" + "[" * size,
        "only braces": "{" * size,
        "only quotes": '"' * size,
        "doubled braces": '{{"name": "a", "arguments": {}}}' * (size // 32),
        "unterminated string": '{"name": "' + "x" * size,
        "huge number": '{"name": "a", "arguments": {"x": ' + "9" * size + "}}",
        "non-call JSON objects": '{"name": "a"} ' * (size // 14),
    }


@pytest.mark.parametrize("name", sorted(_garbage()))
def test_200_kb_of_garbage_finishes_fast(name: str) -> None:
    text = _garbage()[name]
    assert len(text) >= 190_000
    start = time.perf_counter()
    answer = parse_tool_calls(text)
    assert time.perf_counter() - start < 2
    assert answer.text == text and (answer.calls == () or answer.error is None or answer.n_calls > 0)
    if answer.calls == () and answer.format is not None:
        assert answer.error is not None


def test_many_valid_calls_are_linear() -> None:
    text = render_tool_call(WEATHER, "hermes") * 3000
    start = time.perf_counter()
    answer = parse_tool_calls(text)
    assert time.perf_counter() - start < 2
    assert answer.n_calls == 3000 and answer.error is None


CALL_PIECES = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "<|python_tag|>",
        "[TOOL_CALLS]",
        "[ARGS]",
        '{"name": ',
        '"arguments": ',
        '"parameters": ',
        "{",
        "}",
        "[",
        "]",
        '"',
        "'",
        ",",
        ":",
        ";",
        "\\",
        "\n",
        " ",
        "A",
        "x=",
        "(",
        ")",
        "1",
        "null",
        "API-Request:",
        "```",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(CALL_PIECES, max_size=40).map("".join))
def test_never_raises(text: str) -> None:
    answer = parse_tool_calls(text)
    assert answer.text == text
    assert answer.format in (None, *FORMATS)
    assert (answer.format is None) == (not answer.calls and answer.error is None)


# --- text around, no call ------------------------------------------------------------------------------------------

PROSE_BEFORE = "Sure! I will look up the weather in Paris for you.\n\n"
PROSE_AFTER = "\n\nLet me know if you need anything else."


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_prose_around_the_call(fmt: str) -> None:
    text = PROSE_BEFORE + render_tool_call(WEATHER, fmt) + PROSE_AFTER
    answer = parse_tool_calls(text)
    assert (answer.calls, answer.error) == ((WEATHER,), None)
    # Llama 3 without its tag is recognised only when the objects are all there is; with prose it is plain JSON.
    assert answer.format == fmt


def test_untagged_json_labels() -> None:
    llama = '{"name": "GetToday", "parameters": {}}'
    assert parse_tool_calls(llama).format == "llama3"
    assert parse_tool_calls(f"  {llama} ;\n{llama}\n").format == "llama3"
    assert parse_tool_calls(f"Calling: {llama}").format == "json"
    assert parse_tool_calls(f"```json\n{llama}\n```").format == "json"
    assert parse_tool_calls('{"name": "GetToday", "arguments": {}}').format == "json"


NO_CALL = [
    "",
    "The weather in Paris is sunny today.",
    "I cannot help with that {request}.",
    'The user\'s profile is {"name": "Alice", "age": 30}.',
    '```json\n{"city": "Paris", "temperature": 21}\n```',
    "[1, 2, 3] and [x] and (y)",
    "AI: Your meeting is booked for [tomorrow] (10am).",
]


@pytest.mark.parametrize("text", NO_CALL)
def test_no_call_attempt_gives_nothing(text: str) -> None:
    assert parse_tool_calls(text) == ParsedAnswer((), None, None, text)


def test_content_none_and_non_text() -> None:
    assert parse_tool_calls(None) == ParsedAnswer((), None, None, "")  # type: ignore[arg-type]
    answer = parse_tool_calls(b"[A()]")  # type: ignore[arg-type]
    assert answer.calls == () and answer.error is not None


def test_markers_win_over_other_syntax() -> None:
    text = "[GetToday()]\n" + render_tool_call(WEATHER, "hermes")
    assert parse_tool_calls(text).calls == (WEATHER,)
    text = render_tool_call(TODAY, "json") + "\n" + render_tool_call(WEATHER, "paper")
    assert parse_tool_calls(text).calls == (TODAY,)


def test_a_closing_tag_inside_a_value_does_not_end_the_block() -> None:
    call = ApiCall("SendEmail", {"content": "literally </tool_call> and <tool_call> here"})
    assert parse_tool_calls(render_tool_call(call, "hermes")).calls == (call,)


def test_unclosed_hermes_block_is_read_when_its_json_is_complete() -> None:
    for tail in ("", "\n", "<|im_end|>", "\nI will wait for the result."):
        text = '<tool_call>\n{"name": "QueryWeather", "arguments": {"city": "Paris", "date": "2023-03-21"}}' + tail
        assert parse_tool_calls(text).calls == (WEATHER,), tail
    two = '<tool_call>\n{"name": "GetToday", "arguments": {}}\n<tool_call>\n{"name": "GetToday", "arguments": {}}'
    assert parse_tool_calls(two).calls == (TODAY, TODAY)


def test_truncated_mistral_list_keeps_complete_calls() -> None:
    answer = parse_tool_calls('[TOOL_CALLS][{"name": "GetToday", "arguments": {}}')
    assert (answer.calls, answer.error) == ((TODAY,), None)


# --- openai structured ---------------------------------------------------------------------------------------------


def test_structured_arguments_as_json_text() -> None:
    tool_call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "QueryWeather", "arguments": '{"city": "Paris", "date": "2023-03-21"}'},
    }
    assert parse_tool_calls("", [tool_call]) == ParsedAnswer((WEATHER,), "openai", None, "")


def test_structured_arguments_as_a_dict_and_flat_shape() -> None:
    nested = {"id": "call_1", "type": "function", "function": {"name": "QueryWeather", "arguments": dict(WEATHER.args)}}
    flat = {"name": "QueryWeather", "arguments": dict(WEATHER.args)}
    flat_text = {"name": " QueryWeather ", "arguments": json.dumps(WEATHER.args)}
    for tool_call in (nested, flat, flat_text):
        assert parse_tool_calls("", [tool_call]).calls == (WEATHER,)
    for empty in ("", "{}", None):
        assert parse_tool_calls("", [{"name": "GetToday", "arguments": empty}]).calls == (TODAY,)


def test_structured_invalid_json_arguments() -> None:
    tool_call = {"id": "c", "type": "function", "function": {"name": "QueryWeather", "arguments": '{"city": "Paris",'}}
    answer = parse_tool_calls("", [tool_call])
    assert (answer.calls, answer.format) == ((), "openai")
    assert answer.error == (
        "openai tool call 1 ('QueryWeather'): bad arguments: invalid JSON at offset 17: "
        'Expecting property name enclosed in double quotes; got \'{"city": "Paris",\''
    )
    trailing = parse_tool_calls("", [{"name": "A", "arguments": '{"x": 1} {"y": 2}'}])
    assert trailing.calls == () and "text after the JSON at offset 8" in (trailing.error or "")


def test_structured_without_a_name_or_not_an_object() -> None:
    answer = parse_tool_calls("", [{"id": "c", "type": "function", "function": {"arguments": "{}"}}])
    assert answer.calls == () and (answer.error or "").startswith("openai tool call 1: bad name: missing")
    answer = parse_tool_calls("", ["QueryWeather"])  # type: ignore[list-item]
    assert answer.calls == () and (answer.error or "").startswith("openai tool call 1: not a call object")


def test_structured_calls_win_over_the_text() -> None:
    text = render_tool_call(TODAY, "hermes") + " " + render_tool_call(TODAY, "paper")
    answer = parse_tool_calls(text, [structured_tool_call(WEATHER)])
    assert answer == ParsedAnswer((WEATHER,), "openai", None, text)
    assert parse_tool_calls(text, []).calls == (TODAY,)  # no structured calls: the text is read


# --- round trip over the bundled benchmark -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gold_calls() -> list[ApiCall]:
    """The gold call of every API-call sample of the bundled benchmark, all levels."""
    bench = load_benchmark()
    calls = []
    for level in (1, 2, 3):
        for sample in bench.samples(level, "api"):
            assert isinstance(sample, ApiCallSample)
            calls.append(sample.gold.call)
    return calls


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_gold_call_round_trips(gold_calls: list[ApiCall], fmt: str) -> None:
    assert len(gold_calls) > 900
    skipped = 0
    for call in gold_calls:
        if fmt == "openai":
            answer = parse_tool_calls("", [structured_tool_call(call)])
        else:
            try:
                text = render_tool_call(call, fmt)
            except ValueError:
                if fmt != "paper":  # only the paper syntax has values it cannot write
                    raise
                skipped += 1
                continue
            answer = parse_tool_calls(text)
        assert (answer.calls, answer.format, answer.error) == ((call,), fmt, None), call
        got = answer.calls[0].args
        assert list(got) == list(call.args) and [type(v) for v in got.values()] == [type(v) for v in call.args.values()]
    print(f"{fmt}: {len(gold_calls) - skipped} gold calls round-tripped, {skipped} skipped")
    assert skipped <= len(gold_calls) // 100
