"""Calculator: the original's results on well-formed formulas, and bounded, clear behaviour on adversarial ones."""

from __future__ import annotations

import resource
import time

import pytest

from apibank_lib.env.tools.calculator import Calculator, evaluate_formula
from tests.helpers import sandbox_for


@pytest.mark.parametrize(
    ("formula", "value"),
    [
        ("(1 + 2) * 3", 9.0),
        ("25*3+7/3", 77.33333333333333),
        ("100/3", 33.333333333333336),
        ("10-2-3", 5.0),
        ("8/2/2", 2.0),
        ("1 2+3", 15.0),  # spaces are removed first, as in the original
        ("2+3*4-6/2", 11.0),
    ],
)
def test_results_match_the_original_on_well_formed_formulas(formula: str, value: float) -> None:
    assert evaluate_formula(formula) == value


@pytest.mark.parametrize(
    ("formula", "value"),
    [
        ("-5+3", -2.0),
        ("3+(-2)", 1.0),
        ("((1+2)*3)", 9.0),
        ("2*(3+(4-(1+1)))", 10.0),
        ("5*-3", -15.0),
        ("-(2+3)*-1", 5.0),
    ],
)
def test_inputs_that_broke_the_original_are_answered_correctly(formula: str, value: float) -> None:
    # The original loops forever on a leading minus and fails on nested parentheses.
    assert evaluate_formula(formula) == value


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("9**9**9", "invalid formula"),
        ("2^3", "invalid formula"),
        ("abc", "invalid formula"),
        ("1+x", "invalid formula"),
        ("12", "invalid formula"),
        ("(5)", "invalid formula"),
        ("1+", "invalid formula"),
        ("1.5+2", "invalid formula"),
        ("(1+2", "invalid formula"),
        ("()+1", "invalid formula"),
        ("--5+1", "invalid formula"),
        ("", "invalid formula"),
        ("5/0", "float division by zero"),
        ("1/(3-3)", "float division by zero"),
        ("9" * 400 + "*9", "result is too large"),
    ],
)
def test_bad_formulas_get_clear_exceptions(formula: str, message: str) -> None:
    with pytest.raises(Exception, match=message):
        evaluate_formula(formula)


def test_huge_formulas_stay_bounded_in_time_and_memory() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    assert evaluate_formula("+".join(["1"] * 5000)) == 5000.0  # a 10,000-character formula
    assert evaluate_formula("(" * 3000 + "1+1" + ")" * 3000) == 2.0  # deep nesting, no recursion
    with pytest.raises(Exception, match="invalid formula"):
        evaluate_formula("1+" * 60000)
    assert time.perf_counter() - start < 2.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB


def test_tool_envelope_and_checker() -> None:
    box = sandbox_for(Calculator)
    ok = box.execute("[Calculator(formula='(12+30)*2/7')]").to_dict()
    assert ok == {"api_name": "Calculator", "input": {"formula": "(12+30)*2/7"}, "output": 12.0, "exception": None}
    bad = box.execute("[Calculator(formula='-5+3')]").to_dict()
    assert bad["output"] == -2.0
    tool = box.tool("Calculator")
    assert tool.check({**ok, "input": {"formula": "( 12 + 30 ) * 2 / 7"}}, ok)  # spaces do not matter
    assert not tool.check({**ok, "input": {"formula": "84/7"}}, ok)  # the formula itself is compared
