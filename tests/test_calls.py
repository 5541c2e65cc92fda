"""Tests of call parsing and formatting (ours and the original evaluator's)."""

from __future__ import annotations

import string
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apibank_lib.core.calls import (
    format_call,
    format_call_paper,
    looks_like_call_attempt,
    parse_call_paper,
    parse_calls,
    parse_first_call,
    parse_literal,
)
from apibank_lib.core.errors import ParseError
from apibank_lib.core.types import ApiCall
from apibank_lib.data.datasets import Benchmark


def test_quotes_inside_values_and_text_around() -> None:
    text = "Sure! [SendEmail(receiver='a@b.co', subject='Hi', content='Don't forget the cake')] Done."
    assert parse_calls(text) == [ApiCall("SendEmail", {"receiver": "a@b.co", "subject": "Hi", "content": "Don't forget the cake"})]


def test_official_list_rendering_parses_to_its_text() -> None:
    call = parse_first_call("API-Request: [AddMeeting(token='t', attendees='['Ann Lee', 'Bo Chen']')]")
    assert call is not None and call.args["attendees"] == "['Ann Lee', 'Bo Chen']"
    assert parse_literal(call.args["attendees"]) == ["Ann Lee", "Bo Chen"]


def test_escaped_quotes_and_double_quotes() -> None:
    call = parse_first_call(r"""[A(x='it\'s', y="say \"hi\"", z="mixed 'q'")]""")
    assert call == ApiCall("A", {"x": "it's", "y": 'say "hi"', "z": "mixed 'q'"})


def test_typed_values() -> None:
    call = parse_first_call("[X(a=-5, b=2.5, c=True, d=None, e=[1, 'x'], f={'k': [1, 2]}, g='', h=1e3, i=false)]")
    assert call is not None
    assert call.args == {"a": -5, "b": 2.5, "c": True, "d": None, "e": [1, "x"], "f": {"k": [1, 2]}, "g": "", "h": 1000.0, "i": False}
    assert type(call.args["a"]) is int and type(call.args["h"]) is float


def test_empty_string_keeps_the_next_argument() -> None:
    assert parse_first_call("[AddAgenda(content='', time='2023-04-01 10:00:00')]") == ApiCall(
        "AddAgenda", {"content": "", "time": "2023-04-01 10:00:00"}
    )


def test_several_calls_in_order() -> None:
    calls = parse_calls("First [GetUserToken(username='a', password='b')] and then\n[QueryBalance(token='t')]")
    assert [c.name for c in calls] == ["GetUserToken", "QueryBalance"]


def test_no_call_is_an_empty_list() -> None:
    assert parse_calls("I cannot help with that.") == []
    assert parse_first_call("plain text [not a call]") is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[A(time=2023-01-01)]", "after the number"),
        ("[A('positional')]", "expected key=value"),
        ("[A(x='1'", "not closed"),
        ("[A(x=unquoted)]", "unquoted value"),
        ("[A(x='1', x='2')]", "given twice"),
        ("[A(x=[1, 2)]", "expected ','"),
        ("[A(x=1) trailing", "must end with ')]'"),
        ("[A(x=" + "[" * 100 + "]" * 100 + ")]", "nested deeper"),
        ("[A(x=" + "9" * 5000 + ")]", "is too long"),
        ("[[Calculator(formula='1+2')]", "an extra '[' before [Calculator("),
        ("API-Request: [ [GetToday()]", "an extra '['"),
    ],
)
def test_malformed_calls_raise_parse_error_saying_why(text: str, reason: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_calls(text)
    assert reason in str(info.value)


def test_format_is_the_inverse_of_parse_on_a_fixed_call() -> None:
    call = ApiCall("X", {"s": "it's a \\ test\n", "l": [1, 2.5, None], "d": {"a": True}, "e": ""})
    text = format_call(call)
    assert text == r"[X(s='it\'s a \\ test\n', l=[1, 2.5, None], d={'a': True}, e='')]"
    assert parse_calls(text) == [call]


def test_format_rejects_what_cannot_round_trip() -> None:
    with pytest.raises(ValueError):
        format_call(ApiCall("X", {"x": float("nan")}))
    with pytest.raises(ValueError):
        format_call(ApiCall("Bad Name", {}))


# --- the original evaluator's parser (paper protocol) -----------------------------------------------


def test_paper_parser_cuts_values_at_inner_quotes() -> None:
    assert parse_call_paper("[AddMeeting(token='t', attendees='['Ann', 'Bo']')]") == ApiCall("AddMeeting", {"token": "t", "attendees": "["})
    assert parse_call_paper("[SendEmail(content='Don't forget')]") == ApiCall("SendEmail", {"content": "Don"})


def test_paper_parser_quirks() -> None:
    # an empty string swallows the next argument
    assert parse_call_paper("[A(content='', time='x')]") == ApiCall("A", {"content": "', time="})
    # every value is text; unquoted values stop at the first non-word character
    assert parse_call_paper("[A(n=2, d=2023-01-01)]") == ApiCall("A", {"n": "2", "d": "2023"})
    # two calls on one line are merged into the first name
    assert parse_call_paper("[A(x='1')] then [B(y='2')]") == ApiCall("A", {"x": "1", "y": "2"})
    # a call split over lines is not found
    assert parse_call_paper("[A(x='1',\n y='2')]") is None


def test_format_call_paper_matches_the_official_rendering() -> None:
    assert format_call_paper("BookHotel", {"hotel_name": "Mar", "room_count": "1"}) == "[BookHotel(hotel_name='Mar', room_count='1')]"


def test_loose_attempt_detection() -> None:
    assert looks_like_call_attempt("ToolSearcher(keywords='x')")
    assert looks_like_call_attempt("[Tool Searcher(keywords='x')]")
    assert looks_like_call_attempt('{"name": "AddAlarm", "arguments": {}}')
    assert not looks_like_call_attempt("The alarm is set for 7 am.")


# --- properties ---------------------------------------------------------------------------------------

identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(lambda s: s not in {"True", "False", "None"})
scalars = st.one_of(
    st.text(max_size=30),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
calls = st.builds(ApiCall, identifiers, st.dictionaries(identifiers, values, max_size=5))


def _typed(v: object) -> object:
    """A type-aware form, since 1 == 1.0 == True in Python."""
    if isinstance(v, dict):
        return ("dict", [(_typed(k), _typed(x)) for k, x in v.items()])
    if isinstance(v, list):
        return ("list", [_typed(x) for x in v])
    return (type(v).__name__, repr(v))


@settings(max_examples=300, deadline=None)
@given(calls)
def test_parse_inverts_format(call: ApiCall) -> None:
    parsed = parse_calls("model says: " + format_call(call) + " ok")
    assert len(parsed) == 1
    assert parsed[0].name == call.name
    assert _typed(parsed[0].args) == _typed(call.args)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.printable + "éß中", max_size=200))
def test_fuzz_only_parse_errors(text: str) -> None:
    try:
        parse_calls(text)
    except ParseError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["[", "A(", "x=", "'", '"', ",", ")", "]", "\\", " ", "1", "y=[", "{", "}", ":", "-"]), max_size=60))
def test_fuzz_call_like_fragments(parts: list[str]) -> None:
    text = "".join(parts)
    try:
        parse_calls(text)
    except ParseError:
        pass


def test_adversarial_long_inputs_stay_fast() -> None:
    texts = [
        "[A(x='" + "a' " * 20000 + ")]",
        "[" * 20000,
        "[A(" + "x=1, " * 5000,
        "[A(x='" + " " * 50000 + "'",
        "[A(" + "x" * 50000,
    ]
    for text in texts:
        start = time.perf_counter()
        try:
            parse_calls(text)
        except ParseError:
            pass
        assert time.perf_counter() - start < 2.0


def test_a_doubled_bracket_is_a_format_error_under_v2(bench: Benchmark) -> None:
    from apibank_lib import V2, Grader
    from apibank_lib.core.types import ApiCallSample
    from apibank_lib.grading.taxonomy import ErrorCategory

    sample = next(s for s in bench.samples(1, "api") if isinstance(s, ApiCallSample))
    gold = format_call(sample.gold.call)
    grader = Grader(bench, V2)
    assert grader.judge_api(sample, gold).correct
    doubled = grader.judge_api(sample, "[" + gold)
    assert not doubled.correct and doubled.category is ErrorCategory.FALSE_API_CALL_FORMAT
    assert parse_calls("[note] then [GetToday()]") and parse_calls("see [1] [GetToday()]")  # text brackets stay text
