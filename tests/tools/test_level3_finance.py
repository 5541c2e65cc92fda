"""Level-3 GetOccupationSalary and TaxCalculator: lookups, the descending-threshold rule, checkers and the v2 fix."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.errors import ParameterTypeError
from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.level3.finance import GetOccupationSalary, TaxCalculator, salary_after_tax
from apibank_lib.env.tools.registry import tools_defined_in
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.level3.finance")

LV3 = Path(__file__).resolve().parents[2] / "data" / "eval" / "lv3_database"
SALARIES = {"Ship Pilot": 91000, "Ship Captain": 118000}


def sandbox(conversion: str = "v2") -> Any:
    return sandbox_for(*TOOLS, dbs={"Lv3Salaries": SALARIES}, conversion=conversion)


def call(sb: Any, name: str, **args: Any) -> dict[str, Any]:
    return sb.execute(ApiCall(name, args)).to_dict()


def test_salary_lookup_is_exact() -> None:
    sb = sandbox()
    assert call(sb, "GetOccupationSalary", occupation="Ship Pilot") == {
        "api_name": "GetOccupationSalary",
        "input": {"occupation": "Ship Pilot"},
        "output": {"salary": 91000},
        "exception": None,
    }
    for wrong in ("ship pilot", "Ship Pilot ", "Pilot"):
        result = call(sb, "GetOccupationSalary", occupation=wrong)
        assert (result["output"], result["exception"]) == (None, "The occupation is not in the database.")


@pytest.mark.parametrize(
    ("salary", "after"),
    [
        (100000, 70000.0),  # 30%: the 40% band is never reached
        (1e300, 0.7e300),
        (5000, 3500.0),
        (4999.5, 3999.6),
        (3000, 2400.0),
        (2999, 2699.1),
        (1000, 900.0),
        (999, 999.0),
        (0, 0.0),
    ],
)
def test_descending_thresholds(salary: float, after: float) -> None:
    assert salary_after_tax(float(salary)) == after


def test_tax_envelope_paper_conversion_and_negative_salary() -> None:
    assert call(sandbox("paper"), "TaxCalculator", salary="2999") == {
        "api_name": "TaxCalculator",
        "input": {"salary": 2999.0},
        "output": {"salary_after_tax": 2699.1},
        "exception": None,
    }
    with pytest.raises(ParameterTypeError):
        sandbox("paper").execute(ApiCall("TaxCalculator", {"salary": "-5"}))
    # Only v2 lets a negative through; no threshold matches and the text is empty, as in the original.
    negative = call(sandbox("v2"), "TaxCalculator", salary="-5")
    assert (negative["output"], negative["exception"]) == (None, "")


def tax(salary: float, after: float | None, exc: str | None = None) -> dict[str, Any]:
    out = None if after is None else {"salary_after_tax": after}
    return {"api_name": "TaxCalculator", "input": {"salary": salary}, "output": out, "exception": exc}


def test_tax_checker_and_its_v2_fix() -> None:
    tool = TaxCalculator()
    gold = tax(2999.0, 2699.1)
    assert tool.check(tax(2999, 2699.1), gold)
    assert not tool.check(tax(2999.5, 2699.55), gold)
    assert not tool.check(tax(2999.0, 2699.0), gold)
    with pytest.raises(AssertionError):
        tool.check({**tax(2999.0, 2699.1), "api_name": "GetOccupationSalary"}, gold)
    with pytest.raises(TypeError):  # a failed prediction crashed the original evaluator
        tool.check(tax(2999.0, None, ""), gold)
    assert not tool.check_corrected(tax(2999.0, None, ""), gold)
    assert tool.check_corrected(tax(-5.0, None, ""), tax(-5.0, None, ""))
    assert tool.check_corrected(tax(2999, 2699.1), gold)
    assert not tool.check_corrected(tax(2999.0, 2699.1, "x"), gold)


def test_salary_checker() -> None:
    tool = GetOccupationSalary()
    gold = call(sandbox(), "GetOccupationSalary", occupation="Ship Captain")
    assert tool.check(copy.deepcopy(gold), gold)
    assert not tool.check({**gold, "output": {"salary": 91000}}, gold)
    with pytest.raises(AssertionError):
        tool.check({**gold, "api_name": "TaxCalculator"}, gold)


def test_bundled_salary_then_tax() -> None:
    sb = sandbox_for(*TOOLS, dbs=load_databases(LV3, ["Lv3Salaries"]), conversion="paper")
    salary = call(sb, "GetOccupationSalary", occupation="Data Engineer")["output"]["salary"]
    assert salary == 104000
    assert call(sb, "TaxCalculator", salary=str(salary))["output"] == {"salary_after_tax": 72800.0}
    assert call(sb, "GetOccupationSalary", occupation="Data Scientist")["exception"] == (
        "The occupation is not in the database."
    )
