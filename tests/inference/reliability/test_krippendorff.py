"""Krippendorff's alpha (nominal): the paper's worked examples, its properties, the bootstrap."""

from __future__ import annotations

import pytest

from inference.reliability.krippendorff import bootstrap_alpha, nominal_alpha

# Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011), section C: four observers,
# twelve units, nominal values 1-5, missing values (None). The paper finds alpha = 0.743.
OBSERVERS = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]
PAPER_UNITS = [[value for value in column if value is not None] for column in zip(*OBSERVERS, strict=True)]
# Section A of the same paper: two observers, ten units, binary: alpha = 0.095.
BINARY_A = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
BINARY_B = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]


def test_the_papers_four_observer_nominal_example_gives_0_743():
    # By hand: 40 pairable values (unit 12's lone value is not), n_c = 9, 13, 10, 5, 3 so
    # n^2 - sum n_c^2 = 1600 - 384 = 1216; D_u = (m^2 - sum n_uc^2) / (m - 1) is 2 for units 2
    # and 8 ([2,2,3,2] and [1,1,2,1]), 4 for unit 6 ([1,2,3,4]), 0 elsewhere: 8 in all.
    assert nominal_alpha(PAPER_UNITS) == pytest.approx(1 - 39 * 8 / 1216)
    assert round(nominal_alpha(PAPER_UNITS), 3) == 0.743


def test_the_papers_binary_example_gives_0_095():
    # By hand: coincidences o00 = 10, o01 = o10 = 4, o11 = 2; n0 = 14, n1 = 6, n = 20;
    # alpha = 1 - (n - 1) o01 / (n0 n1) = 1 - 19 * 4 / 84 = 0.0952.
    units = list(zip(BINARY_A, BINARY_B, strict=True))
    assert nominal_alpha(units) == pytest.approx(1 - 19 * 4 / 84)
    assert round(nominal_alpha(units), 3) == 0.095


def test_perfect_agreement_is_one_and_a_single_value_is_undefined():
    assert nominal_alpha([[0, 0], [1, 1], [1, 1, 1]]) == 1.0
    assert nominal_alpha([[1, 1], [1, 1]]) is None
    assert nominal_alpha([]) is None
    assert nominal_alpha([[1], [0]]) is None  # nothing pairable


def test_order_of_units_and_of_values_and_lone_values_do_not_matter():
    units = [[0, 1], [1, 1], [0, 0], [1, 0, 1]]
    shuffled = [[1, 0, 1], [0, 0], [1, 1], [1, 0], [5]]
    assert nominal_alpha(units) == pytest.approx(nominal_alpha(shuffled))


def test_systematic_disagreement_is_below_zero():
    assert nominal_alpha([[0, 1], [1, 0], [0, 1], [1, 0]]) < 0


def test_bootstrap_is_seeded_brackets_alpha_and_counts_its_resamples():
    first = bootstrap_alpha(PAPER_UNITS, resamples=300, seed=3)
    again = bootstrap_alpha(PAPER_UNITS, resamples=300, seed=3)
    other = bootstrap_alpha(PAPER_UNITS, resamples=300, seed=4)
    assert first is not None and other is not None
    assert first == again
    assert first != other
    assert first.resamples == 300 and first.level == 0.95
    assert first.lo <= nominal_alpha(PAPER_UNITS) <= first.hi <= 1.0


def test_bootstrap_is_none_when_alpha_is_undefined_or_a_single_unit_pairs():
    assert bootstrap_alpha([[1, 1], [1, 1]]) is None
    assert bootstrap_alpha([[0, 1]]) is None


def test_bootstrap_draws_fewer_resamples_when_the_patterns_are_many(monkeypatch):
    from inference.reliability import krippendorff

    # Four patterns: units of one, two, three and four values 1 beside a 0.
    units = [[0] + [1] * (1 + n % 4) for n in range(100)]
    assert bootstrap_alpha(units, resamples=1000).resamples == 1000
    monkeypatch.setattr(krippendorff, "MAX_DRAWS", 4 * 250)
    assert bootstrap_alpha(units, resamples=1000).resamples == 250
    monkeypatch.setattr(krippendorff, "MAX_DRAWS", 4 * 50)
    assert bootstrap_alpha(units, resamples=1000).resamples == krippendorff.MIN_RESAMPLES
    assert bootstrap_alpha(units, resamples=100).resamples == 100


def test_the_multinomial_bootstrap_matches_drawing_units_with_replacement():
    import numpy as np

    units = list(zip([0, 1, 0, 0, 0, 0, 0, 0, 1, 0] * 3, [1, 1, 1, 0, 0, 1, 0, 0, 0, 0] * 3, strict=True))
    rng = np.random.default_rng(11)
    direct = []
    for _ in range(3000):
        drawn = [units[i] for i in rng.integers(0, len(units), len(units))]
        if (alpha := nominal_alpha(drawn)) is not None:
            direct.append(alpha)
    lo, hi = np.percentile(direct, [2.5, 97.5])
    result = bootstrap_alpha(units, resamples=3000, seed=5)
    assert result.lo == pytest.approx(lo, abs=0.05)
    assert result.hi == pytest.approx(hi, abs=0.05)


def test_bootstrap_leaves_out_resamples_where_alpha_is_undefined():
    # Two agreeing units of each value and nothing else: a resample of one kind only has no alpha.
    result = bootstrap_alpha([[0, 0], [1, 1]], resamples=200, seed=0)
    assert result is not None
    assert 0 < result.undefined < 200
    assert result.lo == result.hi == 1.0
