"""Statistics that hold up: cluster-bootstrap confidence intervals and paired comparisons of runs.

Samples cut from one dialogue share its history and its state, so they are not
independent: a model that misreads a dialogue tends to fail all of its samples.
Every interval here therefore resamples *clusters* (dialogues, or level-3 items)
with replacement, keeping each cluster's samples together, and every paired test
permutes at the cluster level. Everything is seeded: the same inputs give the
same numbers.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from apibank_lib.core.errors import ConfigError

__all__ = ["MIN_CLUSTERS", "Interval", "bounds", "TOO_FEW", "PairedComparison", "bootstrap_mean", "paired_comparison", "percentiles", "N_BOOT", "SEED", "wilson_interval"]

N_BOOT = 2000
"""Bootstrap replicates by default."""

SEED = 0
"""The default seed of every resampling."""

MIN_CLUSTERS = 10
"""Below this many resampled clusters (dialogues or items) an interval is not shown: a bootstrap over three
dialogues gives bounds that look exact and mean nothing (tables leave the cell blank and say why)."""

_EXACT_LIMIT = 4096
"""Up to this many sign patterns (12 clusters), a permutation test enumerates them all instead of sampling."""


@dataclass(frozen=True)
class Interval:
    """A mean with its bootstrap confidence interval.

    Attributes:
        estimate: the mean over all samples.
        low, high: the interval's bounds (percentile bootstrap over clusters).
        level: the confidence level (0.95).
        samples, clusters: how many samples and clusters it rests on.
    """

    estimate: float
    low: float
    high: float
    level: float
    samples: int
    clusters: int

    def __str__(self) -> str:
        return f"{self.estimate:.4f} [{self.low:.4f}, {self.high:.4f}]"

    @property
    def shown(self) -> bool:
        """Whether a table shows this interval: it rests on at least :data:`MIN_CLUSTERS` clusters."""
        return self.clusters >= MIN_CLUSTERS


TOO_FEW = f"fewer than {MIN_CLUSTERS} dialogues: no interval"
"""What a table says where it leaves an interval blank."""


def bounds(interval: Interval | PairedComparison, scale: float = 1.0, digits: int = 2) -> tuple[float | None, float | None]:
    """The interval's bounds as a table shows them (times ``scale``, rounded), or ``(None, None)`` when it rests on
    fewer than :data:`MIN_CLUSTERS` clusters."""
    if interval.clusters < MIN_CLUSTERS:
        return None, None
    return round(scale * interval.low, digits), round(scale * interval.high, digits)


@dataclass(frozen=True)
class PairedComparison:
    """Run A minus run B on the same samples.

    Attributes:
        difference: mean(A) - mean(B) over the paired samples.
        low, high: the difference's bootstrap confidence interval (clusters resampled).
        p_value: two-sided, from a sign-flip permutation test over clusters
            (exact when there are few clusters).
        level: the confidence level.
        samples, clusters: how many paired samples and clusters.
        exact: whether the p-value enumerated every sign pattern.
    """

    difference: float
    low: float
    high: float
    p_value: float
    level: float
    samples: int
    clusters: int
    exact: bool


def _cluster_sums(values: Sequence[float], clusters: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster sums and counts, clusters in order of first appearance."""
    if len(values) != len(clusters):
        raise ConfigError(f"{len(values)} values but {len(clusters)} cluster labels")
    index: dict[Hashable, int] = {}
    ids = np.array([index.setdefault(c, len(index)) for c in clusters], dtype=np.intp)
    sums = np.bincount(ids, weights=np.asarray(values, dtype=float), minlength=len(index))
    counts = np.bincount(ids, minlength=len(index)).astype(float)
    return sums, counts


def percentiles(replicates: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates at a confidence level (the one rule every interval here uses)."""
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(replicates, [tail, 100.0 - tail])
    return float(low), float(high)


def bootstrap_mean(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    n_boot: int = N_BOOT,
    level: float = 0.95,
    seed: int = SEED,
) -> Interval:
    """The mean of ``values`` with a percentile bootstrap interval that resamples clusters.

    Args:
        values: one number per sample (1/0 for a correct/wrong call, a ROUGE-L score ...).
        clusters: the cluster of each sample (e.g. ``(level, dialogue_id)``).
        n_boot: bootstrap replicates.
        level: confidence level.
        seed: the resampling's seed.

    Each replicate draws as many clusters as there are, with replacement, and
    takes the mean over all samples of the drawn clusters (a ratio estimate, so
    large dialogues weigh as much as they do in the plain mean).
    """
    sums, counts = _cluster_sums(values, clusters)
    if not len(sums):
        raise ConfigError("no samples to average")
    estimate = float(sums.sum() / counts.sum())
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(sums), size=(n_boot, len(sums)))
    replicates = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    low, high = percentiles(replicates, level)
    return Interval(estimate, low, high, level, int(counts.sum()), len(sums))


def paired_comparison(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    n_boot: int = N_BOOT,
    n_perm: int = N_BOOT,
    level: float = 0.95,
    seed: int = SEED,
) -> PairedComparison:
    """Compare two runs on the same samples: the difference of means, its interval, and a p-value.

    Args:
        a, b: each run's value per sample, in the same sample order.
        clusters: the cluster of each sample.
        n_boot: bootstrap replicates for the interval.
        n_perm: random sign patterns for the p-value when there are too many to enumerate.
        level: confidence level.
        seed: the seed of both resamplings.

    The p-value tests "no difference": under it, which run a cluster's
    difference belongs to is arbitrary, so each cluster's summed difference
    keeps or flips its sign; the p-value is the share of sign patterns whose
    total difference is at least as large in absolute value as the observed one
    (every pattern when there are at most 12 clusters; otherwise ``n_perm``
    random patterns, counting the observed one).
    """
    if len(a) != len(b):
        raise ConfigError(f"the runs have {len(a)} and {len(b)} values: compare them on the same samples")
    diff_sums, counts = _cluster_sums([x - y for x, y in zip(a, b)], clusters)
    if not len(diff_sums):
        raise ConfigError("no paired samples to compare")
    total = counts.sum()
    observed = float(diff_sums.sum() / total)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(diff_sums), size=(n_boot, len(diff_sums)))
    low, high = percentiles(diff_sums[draws].sum(axis=1) / counts[draws].sum(axis=1), level)
    tolerance = 1e-12  # ties in floating point count as "at least as large"
    exact = 2 ** len(diff_sums) <= _EXACT_LIMIT
    if exact:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(diff_sums))))
        stats = np.abs(signs @ diff_sums) / total
        p_value = float(np.mean(stats >= abs(observed) - tolerance))
    else:
        signs = rng.choice((1.0, -1.0), size=(n_perm, len(diff_sums)))
        stats = np.abs(signs @ diff_sums) / total
        p_value = float((1 + np.sum(stats >= abs(observed) - tolerance)) / (n_perm + 1))
    return PairedComparison(observed, low, high, p_value, level, int(total), len(diff_sums), exact)


def wilson_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (``successes`` of ``n``); (0, 0) for ``n == 0``.

    Used for rates over independent items (a synthesis method's usable rate), where a bootstrap over a few dozen
    yes/no items would be coarse; it stays inside [0, 1] and is sensible at 0 and n.
    """
    if n <= 0:
        return 0.0, 0.0
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
