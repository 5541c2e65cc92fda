"""Scoring a reply against its reference: ROUGE-L, with either of two packages.

* :data:`ROUGE_PACKAGE`, the ``rouge`` package, is what the original evaluator
  used: ROUGE-L F, summary-level (sentences split on ``.``), case-sensitive,
  set-based; each level-1/2 score rounded to 4 decimals as the original did. A
  text it cannot score (empty, or only punctuation) scores 0 where the original
  crashed. The ``paper`` protocol uses it.
* :data:`ROUGE_SCORE_PACKAGE`, Google's ``rouge-score`` package, is the common
  reference implementation: ROUGE-L F over lower-cased alphanumeric tokens,
  stemming off (our choice: no stemmer is needed to compare replies, and a
  stemmer would make scores depend on its version), no rounding. The ``v2``
  protocol uses it.

Level 3 removes every ``User:`` and ``AI:`` from a reply before scoring, as the
original level-3 evaluator did; what a protocol changes further (e.g. removing a
leading ``AI:``) is applied by the caller through ``GradingProtocol.normalise_reply``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "ReplyMetric",
    "ROUGE_PACKAGE",
    "ROUGE_SCORE_PACKAGE",
    "REPLY_METRICS",
    "rouge_l",
    "rouge_score_l",
    "score_reply",
]


def rouge_l(hypothesis: str, reference: str) -> float:
    """ROUGE-L F1 with the ``rouge`` package's semantics; 0 when either text has no token."""
    from rouge import Rouge

    if not hypothesis or not hypothesis.strip() or not reference or not reference.strip():
        return 0.0
    try:
        return float(Rouge().get_scores(hypothesis, reference)[0]["rouge-l"]["f"])
    except ValueError:  # "Hypothesis is empty." for texts such as "..."
        return 0.0


@lru_cache(maxsize=1)
def _rouge_scorer() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def rouge_score_l(hypothesis: str, reference: str) -> float:
    """ROUGE-L F1 of the ``rouge-score`` package, stemming off (0 when either text has no token)."""
    return float(_rouge_scorer().score(reference, hypothesis)["rougeL"].fmeasure)


@dataclass(frozen=True)
class ReplyMetric:
    """A way of scoring replies.

    Attributes:
        name: the package's name, recorded with every score.
        score: ``(hypothesis, reference) -> F1``.
        rounding: decimals each level-1/2 score is rounded to (None: not rounded).
    """

    name: str
    score: Callable[[str, str], float]
    rounding: int | None

    def __repr__(self) -> str:
        return f"<ReplyMetric {self.name}>"


ROUGE_PACKAGE = ReplyMetric("rouge", rouge_l, 4)
"""ROUGE-L of the ``rouge`` package, rounded per sample at levels 1-2: the original evaluator's metric."""

ROUGE_SCORE_PACKAGE = ReplyMetric("rouge-score", rouge_score_l, None)
"""ROUGE-L of the ``rouge-score`` package, stemming off."""

REPLY_METRICS: tuple[ReplyMetric, ...] = (ROUGE_SCORE_PACKAGE, ROUGE_PACKAGE)
"""Every reply metric: each reply is scored with all of them, and the protocol's is the reported one."""


def score_reply(text: str, reference: str, level: int, normalise: Callable[[str], str], metric: ReplyMetric) -> float:
    """The ROUGE-L score of a reply at a level, with a protocol's normalisation of level-1/2 replies."""
    if level == 3:
        return metric.score(text.replace("User:", "").replace("AI:", "").strip(), reference)
    score = metric.score(normalise(text), reference)
    return score if metric.rounding is None else round(score, metric.rounding)
