"""The level-3 Calculator: the level-1 Calculator's behaviour and checker under its own description.

The original level-3 file differs from the level-1 one only in an import path,
so the behaviour (including our safe evaluator, see ``tools/calculator.py``)
is inherited unchanged.
"""

from __future__ import annotations

from apibank_lib.env.tools import calculator as level1
from apibank_lib.env.tools.base import LEVEL3

__all__ = ["Calculator"]


class Calculator(level1.Calculator):
    """Arithmetic on integers with + - * / and parentheses (level-3 tool set)."""

    toolset = LEVEL3
    description = "Calculate the value of an arithmetic expression with whole numbers, + - * / and parentheses."
    read_only = True
