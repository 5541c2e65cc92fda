"""Scoring a reply against its reference: ROUGE-L as the original evaluator computed it.

The metric is ROUGE-L F of the ``rouge`` package (summary-level, sentences
split on ``.``, case-sensitive, set-based), the one the original used. Levels
1-2 round each score to 4 decimals; level 3 removes every ``User:`` and ``AI:``
first and does not round. A text the package cannot score (empty, or only
punctuation) scores 0 where the original crashed. What a protocol changes (e.g.
removing a leading ``AI:``) is applied by the caller through
``GradingProtocol.normalise_reply``.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["rouge_l", "score_reply"]


def rouge_l(hypothesis: str, reference: str) -> float:
    """ROUGE-L F1 with the ``rouge`` package's semantics; 0 when either text has no token."""
    from rouge import Rouge

    if not hypothesis or not hypothesis.strip() or not reference or not reference.strip():
        return 0.0
    try:
        return float(Rouge().get_scores(hypothesis, reference)[0]["rouge-l"]["f"])
    except ValueError:  # "Hypothesis is empty." for texts such as "..."
        return 0.0


def score_reply(text: str, reference: str, level: int, normalise: Callable[[str], str]) -> float:
    """The ROUGE-L score of a reply at a level, with a protocol's normalisation of level-1/2 replies."""
    if level == 3:
        return rouge_l(text.replace("User:", "").replace("AI:", "").strip(), reference)
    return round(rouge_l(normalise(text), reference), 4)
