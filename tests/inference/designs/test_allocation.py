"""inference.designs.allocation: the budget split against Neyman allocation worked by hand."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from inference.designs.allocation import (
    LARGEST_THEME,
    OVERALL,
    Stratum,
    disagreement_spread,
    expected_variances,
    split_budget,
    verdict_strata,
)


def test_overall_objective_is_neyman_allocation():
    # Two themes of 1,000 units, spreads 0.4 and 0.1: n proportional to N S, 40 and 10 of 50.
    strata = [Stratum("A", "all", 1000, 0.4), Stratum("B", "all", 1000, 0.1)]
    split = split_budget(strata=strata, budget=50, objective=OVERALL, minimum=1)
    assert split.per_theme == {"A": 40, "B": 10}
    z = norm.ppf(0.975)
    v_a = 0.4**2 * (1 / 40 - 1 / 1000)
    v_b = 0.1**2 * (1 / 10 - 1 / 1000)
    assert split.halfwidths["A"] == pytest.approx(z * math.sqrt(v_a))
    assert split.overall_halfwidth == pytest.approx(z * math.sqrt(0.25 * v_a + 0.25 * v_b))


def test_verdict_strata_within_a_theme_follow_size_times_spread():
    # Judge says 1 on 800 units (10% disagreement), 0 on 200 (40%): n_h proportional to N_h S_h.
    strata = [Stratum("A", "judge 1", 800, 0.3), Stratum("A", "judge 0", 200, math.sqrt(0.24))]
    split = split_budget(strata=strata, budget=100, minimum=1)
    share = 800 * 0.3 / (800 * 0.3 + 200 * math.sqrt(0.24))
    assert split.labels[("A", "judge 1")] == pytest.approx(100 * share, abs=1)
    assert sum(split.labels.values()) == 100


def test_largest_theme_objective_evens_out_the_theme_variances():
    strata = [Stratum("A", "all", 2000, 0.45), Stratum("B", "all", 300, 0.2), Stratum("C", "all", 500, 0.3)]
    split = split_budget(strata=strata, budget=300, objective=LARGEST_THEME)
    widths = list(split.halfwidths.values())
    assert max(widths) / min(widths) < 1.05
    overall = split_budget(strata=strata, budget=300, objective=OVERALL)
    assert max(split.halfwidths.values()) < max(overall.halfwidths.values())
    assert split.overall_halfwidth >= overall.overall_halfwidth


def test_minimums_and_sizes_bound_the_split():
    strata = [Stratum("A", "all", 5, 0.5), Stratum("B", "all", 1000, 0.0)]
    split = split_budget(strata=strata, budget=40, minimum=3)
    assert split.labels[("A", "all")] == 5  # never more than the stratum holds
    assert split.labels[("B", "all")] == 3  # no spread, still its minimum
    with pytest.raises(ValueError, match="below"):
        split_budget(strata=strata, budget=4, minimum=3)


def test_expected_variances_match_the_stratified_formula():
    strata = [Stratum("A", "x", 300, 0.3), Stratum("A", "y", 100, 0.5)]
    variances = expected_variances(strata=strata, labels={("A", "x"): 30, ("A", "y"): 20})
    expected = 0.75**2 * 0.09 * (1 / 30 - 1 / 300) + 0.25**2 * 0.25 * (1 / 20 - 1 / 100)
    assert variances["A"] == pytest.approx(expected)


def test_disagreement_spread_is_smoothed_by_agresti_coull():
    z2 = norm.ppf(0.975) ** 2
    rate = (z2 / 2) / (10 + z2)
    assert disagreement_spread(disagreements=0, labels=10) == pytest.approx(math.sqrt(rate * (1 - rate)))
    with pytest.raises(ValueError):
        disagreement_spread(disagreements=11, labels=10)


def test_bad_input():
    with pytest.raises(ValueError, match="objective"):
        split_budget(strata=[Stratum("A", "all", 10, 0.5)], budget=5, objective="median")
    with pytest.raises(ValueError, match="twice"):
        split_budget(strata=[Stratum("A", "all", 10, 0.5), Stratum("A", "all", 10, 0.5)], budget=5)


def test_verdict_strata_from_the_judge_labels_and_a_pilot():
    strata = verdict_strata(
        theme="RH", judged={"1": 700, "0": 300, "x": 0}, pilot={"1": (2, 20), "0": (5, 10)}
    )
    assert [(s.key, s.size) for s in strata] == [("judge 0", 300), ("judge 1", 700)]
    assert strata[1].spread == pytest.approx(disagreement_spread(disagreements=2, labels=20))
    unseen = verdict_strata(theme="RH", judged={"0": 50}, pilot={})
    assert unseen[0].spread == pytest.approx(0.5)
    split = split_budget(strata=strata, budget=60)
    assert sum(split.labels.values()) == 60
