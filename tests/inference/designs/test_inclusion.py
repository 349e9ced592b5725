"""inference.designs.inclusion: the confidence-driven design's probabilities, worked by hand and checked
by enumerating every sample of a small population; the union of independent samples likewise."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from inference.designs import inclusion


def _poisson_subsets(p: np.ndarray):
    """Every subset of the units (as a 0/1 tuple) with its probability under Poisson sampling."""
    for chosen in itertools.product((0, 1), repeat=p.size):
        mask = np.array(chosen, dtype=bool)
        yield mask, float(np.prod(np.where(mask, p, 1 - p)))


def test_probabilities_are_proportional_to_the_spread_when_no_bound_binds():
    # spreads 0.5, 0.5, 0.3, 0.3 (sum 1.6): budget 2 gives 1.25 x spread
    p = inclusion.confidence_probabilities(confidence=[0.5, 0.5, 0.1, 0.9], budget=2, floor=0)
    assert p == pytest.approx([0.625, 0.625, 0.375, 0.375])


def test_probabilities_capped_at_one_hand_the_excess_to_the_others():
    # 2 x spread would be 1, 1, 0.6, 0.6 (3.2); a budget of 3.5 caps the first two at 1 and
    # gives the other two 0.75 each
    p = inclusion.confidence_probabilities(confidence=[0.5, 0.5, 0.1, 0.9], budget=3.5, floor=0)
    assert p == pytest.approx([1.0, 1.0, 0.75, 0.75])


def test_floor_keeps_every_unit_drawable_even_a_certain_one():
    confidence = np.array([0.0, 1.0, 0.5, 0.5, 0.3, 0.99])
    p = inclusion.confidence_probabilities(confidence=confidence, budget=2, floor=0.5)
    assert p.sum() == pytest.approx(2)
    assert np.all(p >= 0.5 * 2 / 6 - 1e-12)
    assert p[0] == pytest.approx(0.5 * 2 / 6)
    assert np.all(p <= 1)
    # between the bounds, proportional to the spread
    free = (p > 0.5 * 2 / 6 + 1e-9) & (p < 1)
    ratio = p[free] / inclusion.spread(confidence=confidence[free])
    assert ratio == pytest.approx(np.full(ratio.size, ratio[0]))


def test_floor_one_is_the_uniform_design_and_a_full_budget_takes_everyone():
    assert inclusion.confidence_probabilities(
        confidence=[0.1, 0.5, 0.9], budget=1.5, floor=1
    ) == pytest.approx([0.5, 0.5, 0.5])
    assert inclusion.confidence_probabilities(confidence=[0.1, 0.5, 0.9], budget=3) == pytest.approx(
        [1, 1, 1]
    )


def test_design_by_enumeration_marginals_are_the_probabilities_and_size_the_budget():
    confidence = np.array([0.5, 0.05, 0.7, 0.95, 0.3])
    p = inclusion.confidence_probabilities(confidence=confidence, budget=2, floor=0.5)
    marginal = np.zeros(p.size)
    expected_size = total = 0.0
    for mask, probability in _poisson_subsets(p):
        marginal += probability * mask
        expected_size += probability * mask.sum()
        total += probability
    assert total == pytest.approx(1)
    assert marginal == pytest.approx(p)
    assert expected_size == pytest.approx(2)


def test_poisson_draw_is_seeded_and_draws_each_unit_at_its_rate():
    p = np.array([0.1, 0.5, 0.9, 1.0, 0.0])
    assert np.array_equal(
        inclusion.poisson_draw(probabilities=p, seed=3), inclusion.poisson_draw(probabilities=p, seed=3)
    )
    counts = sum(inclusion.poisson_draw(probabilities=p, seed=seed).astype(int) for seed in range(4000))
    assert counts / 4000 == pytest.approx(p, abs=0.025)


def test_grouped_probabilities_spend_each_theme_budget_within_the_theme():
    confidence = [0.5, 0.9, 0.2, 0.6, 0.99, 0.5]
    groups = ["A", "A", "A", "B", "B", "B"]
    p = inclusion.grouped_confidence_probabilities(
        confidence=confidence, groups=groups, budgets={"A": 1, "B": 2}
    )
    assert p[:3].sum() == pytest.approx(1)
    assert p[3:].sum() == pytest.approx(2)
    with pytest.raises(ValueError, match="no budget"):
        inclusion.grouped_confidence_probabilities(confidence=confidence, groups=groups, budgets={"A": 1})


def test_union_of_a_fixed_size_sample_and_a_poisson_sample_by_enumeration():
    # Sample A: 2 of 4 units at random (6 equally likely pairs); sample B: Poisson with p_B.
    # A unit is labeled when either drew it; its probability, enumerated over all 6 x 16 joint
    # outcomes, is 1 - (1 - 1/2)(1 - p_B).
    p_b = np.array([0.1, 0.4, 0.0, 1.0])
    union = np.zeros(4)
    for pair in itertools.combinations(range(4), 2):
        in_a = np.isin(np.arange(4), pair)
        for in_b, probability in _poisson_subsets(p_b):
            union += (1 / 6) * probability * (in_a | in_b)
    computed = inclusion.union_inclusion_probabilities(probabilities=[np.full(4, 0.5), p_b])
    assert computed == pytest.approx(union)
    assert computed == pytest.approx([0.55, 0.7, 0.5, 1.0])


def test_union_of_a_stratified_sample_and_its_top_up_by_enumeration():
    # A K-means-like sample (1 unit of cluster {0, 1, 2}, 1 of cluster {3, 4}) and an
    # independent top-up of 1 unit among all 5: enumerate the 3 x 2 x 5 outcomes.
    union = np.zeros(5)
    for first, second, top_up in itertools.product((0, 1, 2), (3, 4), range(5)):
        for unit in {first, second, top_up}:  # a unit drawn twice is labeled once
            union[unit] += 1 / 30
    kmeans = np.array([1 / 3, 1 / 3, 1 / 3, 1 / 2, 1 / 2])
    computed = inclusion.union_inclusion_probabilities(probabilities=[kmeans, np.full(5, 1 / 5)])
    assert computed == pytest.approx(union)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"confidence": [0.5, 1.2], "budget": 1}, "probability"),
        ({"confidence": [], "budget": 1}, "no units"),
        ({"confidence": [0.5, 0.5], "budget": 3}, "budget"),
        ({"confidence": [0.5, 0.5], "budget": 1, "floor": 2}, "floor"),
    ],
)
def test_bad_input_names_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        inclusion.confidence_probabilities(**kwargs)


def test_union_refuses_samples_of_different_lengths():
    with pytest.raises(ValueError, match=r"probabilities\[1\]"):
        inclusion.union_inclusion_probabilities(probabilities=[[0.5, 0.5], [0.5]])
    assert math.isclose(float(inclusion.union_inclusion_probabilities(probabilities=[[0.3]])[0]), 0.3)


def test_poisson_cluster_variance_by_hand():
    # Mean 0.75; residuals .25, -.75, .25, .25; totals per answer -0.5, 0.25, 0.25.
    values, answers = [1.0, 0.0, 1.0, 1.0], ["a", "a", "b", "c"]
    assert inclusion.poisson_cluster_variance(
        values=values, probabilities=0.5, clusters=answers
    ) == pytest.approx((0.25 + 0.0625 + 0.0625) / 16, abs=1e-15)
    # Units drawn one by one: (1 - q) / (q N) Var(f), Var(f) = 0.1875.
    assert inclusion.poisson_cluster_variance(values=values, probabilities=0.5) == pytest.approx(
        1 / 4 * 0.1875, abs=1e-15
    )
    # Answer a at 0.25, the others at 1 (always drawn, no variance): 3 x 0.25 / 16.
    assert inclusion.poisson_cluster_variance(
        values=values, probabilities=[0.25, 0.25, 1.0, 1.0], clusters=answers
    ) == pytest.approx(3 * 0.25 / 16, abs=1e-15)
    # Design effect: 0.375 / 0.75; alike units in an answer raise it above 1.
    assert inclusion.cluster_design_effect(values=values, clusters=answers) == pytest.approx(0.5, abs=1e-15)
    assert inclusion.cluster_design_effect(values=[1, 1, 0, 0], clusters=[1, 1, 2, 2]) == pytest.approx(2.0)
    assert inclusion.cluster_design_effect(values=values) == pytest.approx(1.0)
    assert inclusion.cluster_design_effect(values=[1, 1, 1], clusters=[1, 1, 2]) == 1.0
    with pytest.raises(ValueError, match="within a cluster"):
        inclusion.poisson_cluster_variance(values=values, probabilities=[0.2, 0.5, 1, 1], clusters=answers)
    with pytest.raises(ValueError, match="probabilities"):
        inclusion.poisson_cluster_variance(values=values, probabilities=0.0)
    with pytest.raises(ValueError, match="clusters"):
        inclusion.cluster_design_effect(values=values, clusters=[1, 2])


def test_poisson_cluster_variance_matches_a_simulated_draw_of_answers():
    rng = np.random.default_rng(7)
    A = 150
    answers = np.repeat(np.arange(A), rng.integers(1, 7, size=A))
    # Units of an answer alike: the answer's verdict, flipped on one unit in five.
    f = (rng.random(A) < 0.5)[answers].astype(float)
    f = np.where(rng.random(answers.size) < 0.2, 1 - f, f)
    q_answer = np.where(np.arange(A) % 2 == 0, 0.3, 0.6)
    q = q_answer[answers]
    drawn = (rng.random((4000, A)) < q_answer)[:, answers]
    hajek = (drawn * f / q).sum(axis=1) / (drawn / q).sum(axis=1)
    formula = inclusion.poisson_cluster_variance(values=f, probabilities=q, clusters=answers)
    assert formula == pytest.approx(float(np.var(hajek)), rel=0.1)
    # Drawn one by one the formula would be about half of it: the design effect matters.
    assert inclusion.poisson_cluster_variance(values=f, probabilities=q) < 0.6 * formula
    # At one rate the design effect is the ratio of the two.
    assert inclusion.poisson_cluster_variance(values=f, probabilities=0.3, clusters=answers) == pytest.approx(
        inclusion.cluster_design_effect(values=f, clusters=answers)
        * inclusion.poisson_cluster_variance(values=f, probabilities=0.3),
        rel=1e-12,
    )
