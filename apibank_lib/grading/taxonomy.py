"""Error categories of API-call predictions, and the pure function that assigns them.

The paper's seven categories (No API Call, API Hallucination, Invalid Input
Parameters, False API Call Format, Missing Input Parameters, Has Exception,
Failed API Retrieval) plus three of ours:

* "Wrong Values": a call that ran cleanly but disagrees with the gold; the paper
  folds it into Invalid Input Parameters (:data:`PAPER_LABEL` does the same).
* "Checker Error": the correctness rule itself crashed on the prediction.
* "Tool Error": the tool broke in a way it did not mean to (a bug of ours).

The last two are reported separately and never blamed on the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["ErrorCategory", "Observation", "classify", "PAPER_LABEL", "NOT_THE_MODELS"]


class ErrorCategory(str, Enum):
    """Why an API-call prediction is wrong (first matching rule wins)."""

    NO_API_CALL = "No API Call"
    FALSE_API_CALL_FORMAT = "False API Call Format"
    API_HALLUCINATION = "API Hallucination"
    INVALID_INPUT_PARAMETERS = "Invalid Input Parameters"
    MISSING_INPUT_PARAMETERS = "Missing Input Parameters"
    HAS_EXCEPTION = "Has Exception"
    FAILED_API_RETRIEVAL = "Failed API Retrieval"
    WRONG_VALUES = "Wrong Values"
    CHECKER_ERROR = "Checker Error"
    TOOL_ERROR = "Tool Error"


PAPER_LABEL: dict[ErrorCategory, ErrorCategory] = {c: c for c in ErrorCategory}
"""Our categories mapped onto the paper's seven (wrong values count as invalid input parameters;
checker and tool errors are not the model's and keep their own labels)."""
PAPER_LABEL[ErrorCategory.WRONG_VALUES] = ErrorCategory.INVALID_INPUT_PARAMETERS

NOT_THE_MODELS: frozenset[ErrorCategory] = frozenset({ErrorCategory.CHECKER_ERROR, ErrorCategory.TOOL_ERROR})
"""Categories that blame our code, not the prediction."""


@dataclass(frozen=True)
class Observation:
    """What happened to one prediction, as facts (no judgement yet).

    Attributes:
        found_call: a well-formed call was parsed from the text.
        attempted_call: the text tries to call an API in some form.
        parse_failed: a call-like text could not be parsed faithfully.
        name_matches: the parsed API name equals the gold API name.
        bad_parameter: an undeclared argument name or a value of the wrong type.
        missing_parameter: a required argument is absent.
        raised: the executed call returned an exception.
        gold_is_search: the gold call is ToolSearcher.
        tool_broke: the tool raised an error it did not mean to (a bug).
        checker_crashed: the checker raised something other than a plain mismatch.
        correct: the checker accepted the prediction.
    """

    found_call: bool
    attempted_call: bool = False
    parse_failed: bool = False
    name_matches: bool = False
    bad_parameter: bool = False
    missing_parameter: bool = False
    raised: bool = False
    gold_is_search: bool = False
    tool_broke: bool = False
    checker_crashed: bool = False
    correct: bool = False


def classify(obs: Observation) -> ErrorCategory | None:
    """The error category of a prediction, or None when it is correct."""
    if obs.correct:
        return None
    if not obs.found_call:
        if obs.parse_failed or obs.attempted_call:
            return ErrorCategory.FALSE_API_CALL_FORMAT
        return ErrorCategory.NO_API_CALL
    if not obs.name_matches:
        return ErrorCategory.API_HALLUCINATION
    if obs.bad_parameter:
        return ErrorCategory.INVALID_INPUT_PARAMETERS
    if obs.missing_parameter:
        return ErrorCategory.MISSING_INPUT_PARAMETERS
    if obs.tool_broke:
        return ErrorCategory.TOOL_ERROR
    if obs.raised:
        return ErrorCategory.HAS_EXCEPTION
    if obs.checker_crashed:
        return ErrorCategory.CHECKER_ERROR
    if obs.gold_is_search:
        return ErrorCategory.FAILED_API_RETRIEVAL
    return ErrorCategory.WRONG_VALUES
