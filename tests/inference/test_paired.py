"""inference.paired's difference of two proportions: Newcombe's hybrid score interval against
Newcombe's own worked examples, and its paired form."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from inference.intervals import Interval, wilson
from inference.paired import NEWCOMBE, NEWCOMBE_PAIRED, newcombe_difference

Q = float(norm.ppf(0.975))


def share(k: int, n: int) -> Interval:
    lo, hi = wilson(p=k / n, n=n, q=Q)
    return Interval(mean=k / n, lo=lo, hi=hi, method="wilson", alpha=0.05, n=n)


@pytest.mark.parametrize(
    ("right", "left", "expected"),
    [
        # Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10.
        ((56, 70), (48, 80), (0.0524, 0.3339)),
        ((9, 10), (3, 10), (0.1705, 0.8090)),
        ((5, 56), (0, 29), (-0.0381, 0.1926)),
    ],
)
def test_independent_difference_is_newcombe_s_method_10(right, left, expected):
    interval = newcombe_difference(right=share(*right), left=share(*left))
    assert (round(interval.lo, 4), round(interval.hi, 4)) == expected
    assert interval.method == NEWCOMBE
    assert interval.lo <= interval.mean <= interval.hi
    assert interval.bounds == (-1.0, 1.0)


def test_paired_difference_narrows_as_the_two_proportions_move_together():
    right, left = share(40, 50), share(34, 50)
    independent = newcombe_difference(right=right, left=left)
    paired_none = newcombe_difference(right=right, left=left, correlation=0.0)
    paired = newcombe_difference(right=right, left=left, correlation=0.6)
    assert (paired_none.lo, paired_none.hi) == (independent.lo, independent.hi)
    assert paired_none.method == NEWCOMBE_PAIRED
    assert paired.hi - paired.lo < independent.hi - independent.lo
    assert paired.excludes(0.0) or paired.lo <= 0 <= paired.hi


def test_paired_difference_covers_in_a_simulation_of_two_judges_on_the_same_units():
    # Two judges' agreements with the humans on the same 200 units, correlated (both right on
    # the easy units): the paired interval covers the true difference about 95% of the time.
    rng = np.random.default_rng(4)
    covered = 0
    reps = 400
    for _ in range(reps):
        easy = rng.random(200) < 0.7
        a = np.where(easy, rng.random(200) < 0.97, rng.random(200) < 0.6)
        b = np.where(easy, rng.random(200) < 0.95, rng.random(200) < 0.5)
        both = np.array([np.sum(a & b), np.sum(a & ~b), np.sum(~a & b), np.sum(~a & ~b)], dtype=float)
        margins = (both[0] + both[1]) * (both[2] + both[3]) * (both[0] + both[2]) * (both[1] + both[3])
        phi = (both[0] * both[3] - both[1] * both[2]) / np.sqrt(margins) if margins > 0 else 0.0
        interval = newcombe_difference(
            right=share(int(b.sum()), 200), left=share(int(a.sum()), 200), correlation=phi
        )
        truth = (0.7 * 0.95 + 0.3 * 0.5) - (0.7 * 0.97 + 0.3 * 0.6)
        covered += interval.lo <= truth <= interval.hi
    assert covered / reps >= 0.93
