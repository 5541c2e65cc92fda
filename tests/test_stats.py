"""The cluster bootstrap and the paired permutation test, against small examples worked out by hand."""

from __future__ import annotations

import pytest

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.stats import bootstrap_mean, paired_comparison


def test_bootstrap_interval_of_a_small_example() -> None:
    # Clusters a = [1, 0], b = [1], c = [1]: the mean is 3/4. Drawing three clusters, the lowest replicate is
    # "a, a, a" (1/2), with probability 1/27 > 2.5%; the highest is any draw without a (1), with probability
    # (2/3)^3 = 8/27 > 2.5%. So the 95% percentile interval is exactly [0.5, 1.0].
    iv = bootstrap_mean([1, 0, 1, 1], ["a", "a", "b", "c"], n_boot=4000, seed=3)
    assert (iv.estimate, iv.low, iv.high, iv.samples, iv.clusters) == (0.75, 0.5, 1.0, 4, 3)


def test_bootstrap_is_seeded_and_keeps_clusters_together() -> None:
    values = [1, 1, 1, 1, 0, 0, 0, 0]
    one_cluster_each = bootstrap_mean(values, list(range(8)), n_boot=500, seed=7)
    two_clusters = bootstrap_mean(values, [0, 0, 0, 0, 1, 1, 1, 1], n_boot=500, seed=7)
    assert bootstrap_mean(values, list(range(8)), n_boot=500, seed=7) == one_cluster_each
    assert one_cluster_each.estimate == two_clusters.estimate == 0.5
    # two correlated clusters carry less information than eight independent samples: a wider interval
    assert two_clusters.high - two_clusters.low > one_cluster_each.high - one_cluster_each.low
    assert (two_clusters.low, two_clusters.high) == (0.0, 1.0)
    constant = bootstrap_mean([0.25, 0.25], ["x", "y"])
    assert constant.low == constant.high == 0.25


def test_paired_comparison_of_a_small_example() -> None:
    # Per-cluster differences A - B: c1 = 2 (two samples), c2 = +1, c3 = -1; 4 samples, so A - B = 2/4.
    # The 8 sign patterns give |sums| 2, 4, 0, 2, 2, 0, 4, 2: six are >= 2, so p = 6/8 exactly.
    # Bootstrap: drawing c3 three times gives -1 (probability 1/27 > 2.5%), drawing only c1 and c2 gives +1
    # (8/27 > 2.5%): the interval is exactly [-1, 1].
    a = [1, 1, 1, 0]
    b = [0, 0, 0, 1]
    result = paired_comparison(a, b, ["c1", "c1", "c2", "c3"], n_boot=2000, seed=0)
    assert result.difference == 0.5 and result.exact and result.p_value == 0.75
    assert (result.samples, result.clusters) == (4, 3)
    assert (result.low, result.high) == (-1.0, 1.0)


def test_identical_runs_do_not_differ_and_a_clear_gap_is_significant() -> None:
    same = paired_comparison([1, 0, 1], [1, 0, 1], ["a", "b", "c"])
    assert same.difference == 0.0 and same.p_value == 1.0 and same.low == same.high == 0.0
    clusters = [f"d{i}" for i in range(30)]
    gap = paired_comparison([1.0] * 30, [0.0] * 30, clusters, n_perm=999, seed=1)
    assert not gap.exact and gap.p_value == pytest.approx(1 / 1000)  # only the observed pattern is as extreme


def test_mismatched_inputs_are_refused() -> None:
    with pytest.raises(ConfigError, match="same samples"):
        paired_comparison([1, 0], [1], ["a", "b"])
    with pytest.raises(ConfigError, match="cluster labels"):
        bootstrap_mean([1, 0], ["a"])
    with pytest.raises(ConfigError, match="no samples"):
        bootstrap_mean([], [])
