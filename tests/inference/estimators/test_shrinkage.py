"""inference.estimators.shrinkage: shrunk estimates worked by hand, the robust critical value, and the
average coverage across themes in a seeded simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from inference.estimators import shrinkage


def test_shrunk_estimates_by_hand():
    # differences 0.2 and -0.1, squared minus se^2: 0.03 and 0: tau^2 = 0.015, w = 0.015 / 0.025
    shrunk = shrinkage.shrink_to_judge(
        estimates=[0.9, 0.5], standard_errors=[0.1, 0.1], judge_means=[0.7, 0.6]
    )
    assert [s.tau2 for s in shrunk] == pytest.approx([0.015, 0.015])
    assert [s.weight for s in shrunk] == pytest.approx([0.6, 0.6])
    assert [s.mean for s in shrunk] == pytest.approx([0.82, 0.54])
    chi = shrinkage.critical_value(0.01 / 0.015, 0.05)
    assert shrunk[0].halfwidth == pytest.approx(chi * 0.6 * 0.1)


def test_critical_value_is_the_normal_quantile_without_bias_and_grows_with_it():
    assert shrinkage.critical_value(0.0, 0.05) == pytest.approx(norm.ppf(0.975))
    values = [shrinkage.critical_value(t, 0.05) for t in (0.1, 1.0, 10.0)]
    assert values == sorted(values)
    # worst-case non-coverage at the critical value is alpha
    for t, chi in zip((0.1, 1.0, 10.0), values, strict=True):
        assert shrinkage._worst_non_coverage(t, chi) == pytest.approx(0.05, abs=2e-4)
        assert chi == pytest.approx(shrinkage._critical_value(t, 0.05), rel=2e-3)


def test_average_coverage_across_themes_is_at_least_nominal():
    rng = np.random.default_rng(4)
    covered = []
    for _ in range(300):
        k = 12
        judge = rng.uniform(0.5, 0.9, size=k)
        truth = np.clip(judge + rng.normal(0, 0.05, size=k), 0, 1)
        se = rng.uniform(0.03, 0.12, size=k)
        estimates = truth + se * rng.normal(size=k)
        for s, target in zip(
            shrinkage.shrink_to_judge(estimates=estimates, standard_errors=se, judge_means=judge),
            truth,
            strict=True,
        ):
            covered.append(s.lo <= target <= s.hi)
    assert np.mean(covered) >= 0.94


def test_bad_input():
    with pytest.raises(ValueError, match="at least 2"):
        shrinkage.shrink_to_judge(estimates=[0.5], standard_errors=[0.1], judge_means=[0.5])
    with pytest.raises(ValueError, match="positive"):
        shrinkage.shrink_to_judge(estimates=[0.5, 0.6], standard_errors=[0.1, 0.0], judge_means=[0.5, 0.5])
