"""Repeated trials of a sampled model: per-sample success rates, pass^k and pass@k, and how much trials differ.

A run with ``trials=K`` (``apibank run --trials K --temperature T``) answers every sample K times, each trial with
its own seed. Our intervals elsewhere resample dialogues within one run; these figures say how much the answers of
one sampled model vary from run to run:

* the **per-sample success rate**: the share of a sample's trials that were right;
* **pass^k** (tau-bench's definition): the chance that k trials drawn from a sample's K are all right, averaged
  over samples, unbiased for k <= K (``C(c, k) / C(K, k)`` for c right of K); pass^1 is the mean success rate, and
  pass^k falls with k as fast as the model is inconsistent;
* **pass@k**: the chance that at least one of k drawn trials is right (``1 - C(K - c, k) / C(K, k)``);
* **per-trial accuracy**: each trial as a run of its own, and the share of **inconsistent** samples (some trials
  right, some wrong), which is what makes two single runs differ.

API-call samples and level-3 episodes count (an erratum's excluded samples do not); replies have no right answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import comb
from typing import Any

from apibank_lib.runs.records import JudgmentRecord

__all__ = ["SampleTrials", "pass_hat", "pass_at", "sample_trials", "measures", "trial_groups", "trial_figures"]


def pass_hat(n: int, c: int, k: int) -> float:
    """pass^k of one sample with ``c`` right of ``n`` trials: the chance that ``k`` trials drawn without
    replacement are all right."""
    if not 1 <= k <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n trials, got k={k}, n={n}")
    return comb(c, k) / comb(n, k)


def pass_at(n: int, c: int, k: int) -> float:
    """pass@k of one sample with ``c`` right of ``n`` trials: the chance that at least one of ``k`` drawn trials
    is right."""
    if not 1 <= k <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n trials, got k={k}, n={n}")
    return 1.0 - comb(n - c, k) / comb(n, k)


@dataclass(frozen=True)
class SampleTrials:
    """One sample's trials.

    Attributes:
        key, level, kind, dialogue_id: which sample (API call or episode).
        outcomes: right (True) or wrong, trial by trial (trial 1 first).
    """

    key: str
    level: int
    kind: str
    dialogue_id: str
    outcomes: tuple[bool, ...]

    @property
    def trials(self) -> int:
        return len(self.outcomes)

    @property
    def correct(self) -> int:
        return sum(self.outcomes)

    @property
    def rate(self) -> float:
        """The per-sample success rate."""
        return self.correct / self.trials

    @property
    def cluster(self) -> tuple[int, str]:
        """What intervals resample: the dialogue."""
        return (self.level, self.dialogue_id)


def sample_trials(judgments: Iterable[JudgmentRecord]) -> list[SampleTrials]:
    """The judged samples with a right answer (API calls, episodes), each with its trials, in first-seen order
    (samples an erratum excludes are left out)."""
    found: dict[str, list[JudgmentRecord]] = {}
    for j in judgments:
        if j.kind in ("api", "episode") and j.excluded is None:
            found.setdefault(j.key, []).append(j)
    out = []
    for key, js in found.items():
        js.sort(key=lambda j: j.trial)
        out.append(SampleTrials(key, js[0].level, js[0].kind, js[0].dialogue_id, tuple(bool(j.correct) for j in js)))
    return out


def measures(samples: Sequence[SampleTrials], k_max: int) -> list[tuple[str, int, list[float]]]:
    """Each measure's per-sample values over ``samples`` (each with ``k_max`` trials): ``(measure, k, values)`` for
    pass^k and pass@k (k = 1..K), each trial's accuracy (k: the trial) and the inconsistent samples (k: K). Their
    means are the figures; :func:`apibank_lib.report.comparisons.trials_table` adds intervals."""
    ks = range(1, k_max + 1)
    return [
        *(("pass^k", k, [pass_hat(k_max, s.correct, k) for s in samples]) for k in ks),
        *(("pass@k", k, [pass_at(k_max, s.correct, k) for s in samples]) for k in ks),
        *(("trial accuracy", t, [float(s.outcomes[t - 1]) for s in samples]) for t in ks),
        ("inconsistent samples", k_max, [float(0 < s.correct < s.trials) for s in samples]),
    ]


def trial_groups(samples: Sequence[SampleTrials]) -> list[tuple[str, list[SampleTrials]]]:
    """The groups the figures are given for, those with samples: each level's API-call samples (``"1"`` ...), a
    level's episodes (``"3/episodes"``), and API-call samples of all levels (``"all"``)."""
    groups = [
        (name, [s for s in samples if s.level == level and s.kind == kind])
        for level in (1, 2, 3)
        for kind, name in (("api", str(level)), ("episode", f"{level}/episodes"))
    ]
    groups.append(("all", [s for s in samples if s.kind == "api"]))
    return [(name, mine) for name, mine in groups if mine]


_KEYS = {"pass^k": "pass_hat", "pass@k": "pass_at", "trial accuracy": "per_trial"}


def _figures(samples: Sequence[SampleTrials]) -> dict[str, Any]:
    k_max = max(s.trials for s in samples)
    full = [s for s in samples if s.trials == k_max]  # a partial run's samples with fewer trials are left out
    n = len(full)

    def mean(values: Iterable[float]) -> float:
        return round(sum(values) / n, 4)

    out: dict[str, Any] = {"samples": n, "trials": k_max, "success_rate": mean(s.rate for s in full)}
    for measure, k, values in measures(full, k_max):
        if measure == "inconsistent samples":
            out["inconsistent"] = mean(values)
        else:
            out.setdefault(_KEYS[measure], {})[str(k)] = mean(values)
    return out


def trial_figures(judgments: Sequence[JudgmentRecord]) -> dict[str, Any] | None:
    """``metrics.json``'s ``trials`` entry: per level (``"1"`` ...) and over API-call samples of all levels
    (``"all"``; episodes per level only), the samples with every trial, K, their mean success rate, pass^k and
    pass@k for k = 1..K, each trial's accuracy and the share of inconsistent samples. None for a one-trial run."""
    samples = sample_trials(judgments)
    if not samples or max(s.trials for s in samples) < 2:
        return None
    return {name: _figures(mine) for name, mine in trial_groups(samples)}
