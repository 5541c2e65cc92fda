"""Level-3 money tools: look up an occupation's salary, compute salary after tax.

``Lv3Salaries`` maps an occupation (exact, case-sensitive) to its salary. The
tax rule has no table: its thresholds and rates are code, as in the original.
"""

from __future__ import annotations

import math
from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.shapes import NUM, DictOf
from apibank_lib.env.tools.base import CORRECTED, LEVEL3, Tool, checker_rule
from apibank_lib.env.tools.common import original_errors
from apibank_lib.env.tools.level3.checks import require_same_api, same_api_and_envelope

__all__ = ["GetOccupationSalary", "TaxCalculator", "TAX_RATES", "salary_after_tax"]

_LV3_SALARIES_SHAPE = DictOf(NUM)
"""Record shape of the ``Lv3Salaries`` database."""

TAX_RATES: dict[float, float] = {0: 0.0, 1000: 0.1, 3000: 0.2, 5000: 0.3, math.inf: 0.4}
"""Threshold -> tax rate, as in the original. The 40% rate is never applied (see salary_after_tax)."""


def salary_after_tax(salary: float) -> float:
    """Apply the original rule: the rate of the first threshold, in descending order, that the salary reaches.

    The largest threshold is infinity, which no finite salary reaches, so the
    40% rate never applies and everything from 5000 up is taxed at 30%.

    Raises:
        ToolFailure: with an empty message for a negative (or NaN) salary (the original's
            ``StopIteration`` from finding no threshold has an empty text).
    """
    for threshold in sorted(TAX_RATES, reverse=True):
        if salary >= threshold:
            return salary - salary * TAX_RATES[threshold]
    raise ToolFailure("")


class GetOccupationSalary(Tool):
    """Look up the salary of an occupation."""

    name = "GetOccupationSalary"
    domain = "finance"
    toolset = LEVEL3
    description = "Look up the typical annual salary of an occupation."
    input_parameters = {"occupation": Param("str", "The occupation, e.g. Civil Engineer.")}
    output_parameters = {"salary": Param("int", "The annual salary.")}
    database_name = "Lv3Salaries"
    database_shape = _LV3_SALARIES_SHAPE
    read_only = True

    def run(self, occupation: Any) -> Any:
        # An occupation that is not hashable fails the original's membership test with the TypeError text.
        with original_errors(TypeError):
            known = occupation in self.db
        if not known:
            raise ToolFailure("The occupation is not in the database.")
        return {"salary": self.db[occupation]}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return same_api_and_envelope(pred, gold)


class TaxCalculator(Tool):
    """Compute the salary left after income tax.

    Checker fix (the corrected rule): the original checker reads
    ``output['salary_after_tax']`` of both envelopes, so a failed call on
    either side (output ``None``) makes it raise TypeError, which crashed the
    original evaluator. The v2 rule compares the salary, the whole output and
    the exception instead.
    """

    name = "TaxCalculator"
    domain = "finance"
    toolset = LEVEL3
    description = "Compute how much of a salary is left after income tax."
    input_parameters = {"salary": Param("float", "The salary before tax.")}
    output_parameters = {"salary_after_tax": Param("float", "The salary after tax.")}
    read_only = True

    def run(self, salary: Any) -> Any:
        return {"salary_after_tax": salary_after_tax(salary)}

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        require_same_api(pred, gold)
        return (
            pred["input"]["salary"] == gold["input"]["salary"]
            and pred["output"]["salary_after_tax"] == gold["output"]["salary_after_tax"]
            and pred["exception"] == gold["exception"]
        )

    @checker_rule(CORRECTED)
    def check_corrected(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        require_same_api(pred, gold)
        return (
            pred["input"]["salary"] == gold["input"]["salary"]
            and pred["output"] == gold["output"]
            and pred["exception"] == gold["exception"]
        )
