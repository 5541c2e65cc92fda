"""Judging answers: calls (by execution), replies (ROUGE-L), episodes (end state); the error taxonomy; ToolRL's
exact-match judge; the data checked through the grader.

* :mod:`~apibank_lib.grading.grader`: ``Grader``.
* :mod:`~apibank_lib.grading.replay`: ``replay`` (the gold judged as a prediction).
* :mod:`~apibank_lib.grading.taxonomy`: ``ErrorCategory``.
* :mod:`~apibank_lib.grading.toolrl`: protocol ``toolrl-1``.
* :mod:`~apibank_lib.grading.validate`: ``apibank validate``.
"""

from apibank_lib.grading.grader import EpisodeJudgment, Grader, Judgment
from apibank_lib.grading.replay import replay
from apibank_lib.grading.taxonomy import ErrorCategory

__all__ = ["Grader", "Judgment", "EpisodeJudgment", "replay", "ErrorCategory"]
