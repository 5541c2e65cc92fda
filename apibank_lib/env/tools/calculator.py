"""Calculator: integer arithmetic with + - * / and parentheses, safe on any input.

The original evaluated formulas with a hand-written token rewriter that loops
forever (and grows memory without bound) on a leading minus such as ``-5+3``
and fails on nested parentheses. Ours keeps the original's input rules and
error texts for invalid formulas (``invalid formula``, ``float division by
zero``) and its results on every well-formed formula, but evaluates with an
iterative shunting-yard parser: unary minus and nesting work, work is linear
in the formula's length, and nothing recurses.
"""

from __future__ import annotations

import math
from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import Param
from apibank_lib.env.tools.base import Tool

__all__ = ["Calculator", "evaluate_formula"]

_ALLOWED = set("0123456789+-*/()")
_OPERATORS = set("+-*/")
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3, "pos": 3}
MAX_FORMULA_LENGTH = 100_000
"""Longer formulas are refused outright (keeps time and memory bounded)."""


def _tokenise(formula: str) -> list[Any]:
    tokens: list[Any] = []
    i, n = 0, len(formula)
    while i < n:
        c = formula[i]
        if c.isdigit():
            j = i
            while j < n and formula[j].isdigit():
                j += 1
            # float() of a very long digit run is inf, never an error or a slow big-int.
            tokens.append(float(formula[i:j]))
            i = j
            continue
        tokens.append(c)
        i += 1
    return tokens


def evaluate_formula(formula: str) -> float:
    """Evaluate an integer formula with ``+ - * /`` and parentheses.

    Spaces are removed first (as in the original, so ``1 2+3`` is ``12+3``).

    Raises:
        ToolFailure: ``invalid formula`` for anything that is not such a formula
            (letters, ``**``, decimals, unbalanced parentheses, no operator);
            ``float division by zero``; ``result is too large``.
    """
    if not isinstance(formula, str):
        raise ToolFailure("invalid formula")
    f = formula.replace(" ", "")
    ops = sum(1 for c in f if c in _OPERATORS)
    if (
        not f
        or len(f) > MAX_FORMULA_LENGTH
        or any(c not in _ALLOWED for c in f)
        or f.count("(") != f.count(")")
        or ops == 0
        or ops + 1 == len(f)
    ):
        raise ToolFailure("invalid formula")

    output: list[float] = []
    stack: list[str] = []
    expect_operand = True

    def apply(op: str) -> None:
        if op in ("neg", "pos"):
            if not output:
                raise ToolFailure("invalid formula")
            if op == "neg":
                output[-1] = -output[-1]
            return
        if len(output) < 2:
            raise ToolFailure("invalid formula")
        b, a = output.pop(), output.pop()
        if op == "+":
            output.append(a + b)
        elif op == "-":
            output.append(a - b)
        elif op == "*":
            output.append(a * b)
        else:
            if b == 0:
                raise ToolFailure("float division by zero")
            output.append(a / b)

    for tok in _tokenise(f):
        if isinstance(tok, float):
            if not expect_operand:
                raise ToolFailure("invalid formula")
            output.append(tok)
            expect_operand = False
        elif tok == "(":
            if not expect_operand:
                raise ToolFailure("invalid formula")
            stack.append(tok)
        elif tok == ")":
            if expect_operand:
                raise ToolFailure("invalid formula")
            while stack and stack[-1] != "(":
                apply(stack.pop())
            if not stack:
                raise ToolFailure("invalid formula")
            stack.pop()
            expect_operand = False
        elif expect_operand:
            if tok not in "+-":
                raise ToolFailure("invalid formula")
            if stack and stack[-1] in ("neg", "pos"):
                raise ToolFailure("invalid formula")  # no "--5": one sign per operand
            stack.append("neg" if tok == "-" else "pos")
        else:
            while stack and stack[-1] != "(" and _PRECEDENCE[stack[-1]] >= _PRECEDENCE[tok]:
                apply(stack.pop())
            stack.append(tok)
            expect_operand = True
    if expect_operand:
        raise ToolFailure("invalid formula")
    while stack:
        op = stack.pop()
        if op == "(":
            raise ToolFailure("invalid formula")
        apply(op)
    if len(output) != 1:
        raise ToolFailure("invalid formula")
    result = output[0]
    if not math.isfinite(result):
        raise ToolFailure("result is too large")
    return result


class Calculator(Tool):
    """Arithmetic on integers with + - * / and parentheses."""

    name = "Calculator"
    domain = "utility"
    description = "Work out an arithmetic formula over whole numbers using + - * / and parentheses."
    input_parameters = {
        "formula": Param("str", "The formula to compute, e.g. (12+30)*2/7; only digits, + - * / and parentheses."),
    }
    output_parameters = {"result": Param("float", "The value of the formula.")}

    def run(self, formula: Any) -> Any:
        return evaluate_formula(formula)

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        pf = str(pred["input"]["formula"]).replace(" ", "")
        gf = str(gold["input"]["formula"]).replace(" ", "")
        return pf == gf and pred["output"] == gold["output"] and pred["exception"] == gold["exception"]
