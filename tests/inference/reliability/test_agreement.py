"""Cohen's kappa: worked by hand, equal to scikit-learn's, undefined in the degenerate cases."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.workflow.agreement import _group as agreement_group
from inference.reliability import agreement
from inference.reliability.agreement import cohen_kappa


def test_kappa_worked_by_hand():
    # 10 pairs: 4 (1,1), 3 (0,0), 2 (1,0), 1 (0,1). p_o = 0.7; A says 1 six times, B five times:
    # p_e = 0.6*0.5 + 0.4*0.5 = 0.5, kappa = (0.7 - 0.5) / 0.5 = 0.4.
    pairs = [(1, 1)] * 4 + [(0, 0)] * 3 + [(1, 0)] * 2 + [(0, 1)]
    a, b = zip(*pairs, strict=True)
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-15)


@pytest.mark.parametrize("seed", range(8))
def test_kappa_equals_scikit_learn_and_the_formula(seed):
    rng = random.Random(seed)
    n = rng.randint(5, 60)
    a = [rng.randint(0, 1) for _ in range(n)]
    b = [rng.randint(0, 1) for _ in range(n)]
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    assert cohen_kappa(a, b) == pytest.approx((observed - chance) / (1 - chance), abs=1e-12)
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-15)


@pytest.mark.parametrize("seed", range(40))
def test_kappa_is_scikit_learns_to_the_last_bit_for_any_values(seed):
    """Computed without scikit-learn, the same arithmetic: equal, not approximately equal, so
    no figure moves; two to five values (categories), one rater's may be missing from the
    other's, and one rater constant."""
    rng = random.Random(seed)
    values = rng.sample([0, 1, 2, 3, 5, -1], rng.randint(2, 5))
    n = rng.randint(1, 200)
    a = [rng.choice(values) for _ in range(n)]
    b = [x if rng.random() < 0.7 else rng.choice(values[1:]) for x in a]
    if seed % 5 == 0:
        a = [values[0]] * n
    if cohen_kappa(a, b) is not None:
        assert cohen_kappa(a, b) == float(cohen_kappa_score(a, b))


@pytest.mark.parametrize("value", [0, 1])
def test_kappa_is_undefined_when_chance_agreement_is_certain(value):
    assert cohen_kappa([value] * 5, [value] * 5) is None


def test_kappa_is_undefined_without_pairs_and_zero_for_constant_opposite_raters():
    assert cohen_kappa([], []) is None
    assert cohen_kappa([1] * 5, [0] * 5) == pytest.approx(0.0)
    # One rater constant, the other not: defined (chance agreement is below 1).
    assert cohen_kappa([1, 1, 1, 1], [1, 1, 0, 1]) == pytest.approx(cohen_kappa_score([1] * 4, [1, 1, 0, 1]))


def test_unequal_lengths_are_refused():
    with pytest.raises(ValueError, match="one length"):
        cohen_kappa([1, 0], [1])


def test_humans_and_judge_get_the_same_kappa_from_the_same_labels():
    """The two layers use one definition: same pairs, same number, same undefined case."""
    a, b = [1, 1, 0, 1, 0, 0, 1], [1, 0, 0, 1, 1, 0, 1]
    assert agreement.agreement(y=a, yhat=b).kappa == cohen_kappa(a, b)
    assert agreement_group("T", list(zip(a, b, strict=True)), 0).kappa == cohen_kappa(a, b)
    assert agreement_group("T", [(1, 1)] * 3, 0).kappa is None
    assert math.isnan(agreement.agreement(y=[1, 1, 1], yhat=[1, 1, 1]).kappa)


def test_kappas_bootstrap_interval_resamples_the_units_and_each_kappa_is_scikit_learns():
    from inference.reliability.agreement import _kappas, bootstrap_kappa

    rng = np.random.default_rng(4)
    a = rng.integers(0, 2, 80).tolist()
    b = [x if rng.random() < 0.8 else 1 - x for x in a]
    interval = bootstrap_kappa(a, b)
    kappa = cohen_kappa(a, b)
    assert interval is not None and interval.lo < kappa < interval.hi
    assert interval == bootstrap_kappa(a, b)  # seeded
    pairs = sorted(set(zip(a, b, strict=True)))
    for _ in range(20):
        counts = rng.integers(0, 6, len(pairs))
        left = [p[0] for p, c in zip(pairs, counts, strict=True) for _ in range(c)]
        right = [p[1] for p, c in zip(pairs, counts, strict=True) for _ in range(c)]
        ours = _kappas(counts[None, :].astype(float), pairs, [0, 1])[0]
        if len(set(left) | set(right)) > 1:
            assert abs(ours - cohen_kappa_score(left, right)) < 1e-12
    # Undefined kappa, or a single unit: no interval.
    assert bootstrap_kappa([1, 1, 1], [1, 1, 1]) is None
    assert bootstrap_kappa([1], [0]) is None
