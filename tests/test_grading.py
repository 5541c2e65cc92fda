"""Grader.judge_api and taxonomy.classify, one case per error category, on the bundled benchmark."""

from __future__ import annotations

from dataclasses import replace

import pytest

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import ApiCallSample
from apibank_lib.data.datasets import Benchmark
from apibank_lib.env.protocols import PAPER, V2, StatePolicy, get_protocol
from apibank_lib.env.tools.utility import GetToday
from apibank_lib.grading.grader import Grader
from apibank_lib.grading.taxonomy import NOT_THE_MODELS, PAPER_LABEL, ErrorCategory, Observation, classify
from apibank_lib.prompting.prompts import target_text

Cat = ErrorCategory


def _sample(bench: Benchmark, key: str) -> ApiCallSample:
    level = int(key[1])
    found = next(s for s in bench.samples(level, "api") if s.key == key)
    assert isinstance(found, ApiCallSample)
    return found


TODAY = "L1/api/AddAgenda-GetToday-level-2-1/0"  # gold: [GetToday()]
ALARM = "L1/api/AddAgenda-AddAlarm-AddReminder-level-2-1/4"  # gold: [AddAlarm(token='eaez4jqn3vme7smldp', time='2023-04-05 07:00:00')]
CALC = "L1/api/Calculator-SendEmail-level-2-1/0"  # gold: [Calculator(formula='960+145+60')]
SEARCH = "L2/api/AddAgenda-level-3-1/0"  # gold: [ToolSearcher(keywords='add event to agenda')]


@pytest.mark.parametrize(
    ("key", "prediction", "category"),
    [
        (TODAY, "API-Request: [GetToday()]", None),
        (TODAY, "Today is a fine day.", Cat.NO_API_CALL),
        (TODAY, "API-Request: [GetToday(]", Cat.FALSE_API_CALL_FORMAT),
        (TODAY, "GetToday()", Cat.FALSE_API_CALL_FORMAT),
        (TODAY, "API-Request: [GetTomorrow()]", Cat.API_HALLUCINATION),
        (TODAY, "API-Request: [Calculator(formula='1+1')]", Cat.API_HALLUCINATION),
        (CALC, "API-Request: [Calculator(expression='960+145+60')]", Cat.INVALID_INPUT_PARAMETERS),
        (ALARM, "API-Request: [AddAlarm(token='eaez4jqn3vme7smldp', time=[1, 2])]", Cat.INVALID_INPUT_PARAMETERS),
        (ALARM, "API-Request: [AddAlarm(time='2023-04-05 07:00:00')]", Cat.MISSING_INPUT_PARAMETERS),
        (ALARM, "API-Request: [AddAlarm(token='wrong-token', time='2023-04-05 07:00:00')]", Cat.HAS_EXCEPTION),
        (CALC, "API-Request: [Calculator(formula='960+145+61')]", Cat.WRONG_VALUES),
        (SEARCH, "API-Request: [ToolSearcher(keywords='add event to agenda')]", None),
        (SEARCH, "API-Request: [ToolSearcher(keywords='check the stock price of a company')]", Cat.FAILED_API_RETRIEVAL),
    ],
)
def test_judge_api_assigns_each_category(bench: Benchmark, key: str, prediction: str, category: ErrorCategory | None) -> None:
    judgment = Grader(bench, V2).judge_api(_sample(bench, key), prediction)
    assert judgment.category is category
    assert judgment.correct is (category is None)
    assert (judgment.reason is None) is (category is None)


def test_a_crashing_checker_is_a_checker_error(bench: Benchmark, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(self: GetToday, pred: dict, gold: dict) -> bool:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(GetToday, "check", crash)
    judgment = Grader(bench, PAPER).judge_api(_sample(bench, TODAY), "API-Request: [GetToday()]")
    assert judgment.category is Cat.CHECKER_ERROR and "the checker crashed (ZeroDivisionError: boom)" in str(judgment.reason)


def test_a_bug_in_a_tool_is_a_tool_error_not_the_models_exception(bench: Benchmark, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: GetToday) -> str:
        return {}["missing"]  # type: ignore[no-any-return]

    monkeypatch.setattr(GetToday, "run", broken)
    judgment = Grader(bench, V2).judge_api(_sample(bench, TODAY), "API-Request: [GetToday()]")
    assert judgment.category is Cat.TOOL_ERROR and judgment.category in NOT_THE_MODELS
    assert "tool GetToday broke with an unexpected KeyError" in str(judgment.reason)


def test_paper_and_v2_differ_where_the_protocols_say(bench: Benchmark) -> None:
    # A list argument written as text: v2 parses it, the original conversion leaves it text.
    meeting = next(s for s in bench.samples(1, "api") if isinstance(s, ApiCallSample) and s.gold.api_name == "AddMeeting")
    assert Grader(bench, V2).judge_api(meeting, target_text(meeting)).correct
    assert not Grader(bench, PAPER).judge_api(meeting, target_text(meeting)).correct


def test_a_third_protocol_is_a_new_instance(bench: Benchmark) -> None:
    # v2 without the dialogue state: the calls that need an earlier call of their dialogue now fail.
    fresh = replace(V2, name="v2-fresh", level12_state=StatePolicy.PRISTINE)
    v2, pristine = Grader(bench, V2), Grader(bench, fresh)
    samples = [s for s in bench.samples(1, "api") if isinstance(s, ApiCallSample) and not s.duplicate]
    dependent = [s for s in samples if not pristine.judge_api(s, target_text(s)).correct]
    assert dependent and all(v2.judge_api(s, target_text(s)).correct for s in dependent)
    assert {s.gold.api_name for s in dependent} >= {"QueryAgenda"}
    assert fresh.state_for(1) is StatePolicy.PRISTINE and fresh.state_for(3) is StatePolicy.REPLAY


def test_protocols_are_objects_at_the_library_edge(bench: Benchmark) -> None:
    assert get_protocol("paper") is PAPER and get_protocol(V2) is V2
    with pytest.raises(ConfigError, match="Did you mean 'paper'"):
        get_protocol("papr")
    with pytest.raises(ConfigError, match="takes a GradingProtocol"):
        Grader(bench, "v2")  # type: ignore[arg-type]


# --- classify, one observation per category ---------------------------------------------------------


@pytest.mark.parametrize(
    ("observation", "category"),
    [
        (Observation(found_call=True, name_matches=True, correct=True), None),
        (Observation(found_call=False), Cat.NO_API_CALL),
        (Observation(found_call=False, attempted_call=True), Cat.FALSE_API_CALL_FORMAT),
        (Observation(found_call=False, parse_failed=True), Cat.FALSE_API_CALL_FORMAT),
        (Observation(found_call=True, name_matches=False), Cat.API_HALLUCINATION),
        (Observation(found_call=True, name_matches=True, bad_parameter=True), Cat.INVALID_INPUT_PARAMETERS),
        (Observation(found_call=True, name_matches=True, missing_parameter=True), Cat.MISSING_INPUT_PARAMETERS),
        (Observation(found_call=True, name_matches=True, tool_broke=True), Cat.TOOL_ERROR),
        (Observation(found_call=True, name_matches=True, raised=True), Cat.HAS_EXCEPTION),
        (Observation(found_call=True, name_matches=True, checker_crashed=True), Cat.CHECKER_ERROR),
        (Observation(found_call=True, name_matches=True, gold_is_search=True), Cat.FAILED_API_RETRIEVAL),
        (Observation(found_call=True, name_matches=True), Cat.WRONG_VALUES),
    ],
)
def test_classify_one_case_per_category(observation: Observation, category: ErrorCategory | None) -> None:
    assert classify(observation) is category


def test_every_category_is_reachable_and_mapped_to_the_papers_labels() -> None:
    paper_seven = {
        Cat.NO_API_CALL,
        Cat.API_HALLUCINATION,
        Cat.INVALID_INPUT_PARAMETERS,
        Cat.FALSE_API_CALL_FORMAT,
        Cat.MISSING_INPUT_PARAMETERS,
        Cat.HAS_EXCEPTION,
        Cat.FAILED_API_RETRIEVAL,
    }
    assert {PAPER_LABEL[c] for c in Cat} - NOT_THE_MODELS == paper_seven
    assert PAPER_LABEL[Cat.WRONG_VALUES] is Cat.INVALID_INPUT_PARAMETERS
