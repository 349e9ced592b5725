"""inference.designs.judge_allocation: the planner of several judges on one ledger."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from evaluation.estimates import planning
from inference.designs.judge_allocation import Moments, moments, plan_theme

Z = float(norm.ppf(0.975))


def pilot(seed: int, n: int, prevalence: float, accuracies: list[float]) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < prevalence).astype(float)
    preds = np.stack([np.where(rng.random(n) < a, y, 1 - y) for a in accuracies], axis=1)
    return y, preds


def test_one_judge_s_smoothed_moments_are_the_single_judge_planner_s():
    y, preds = pilot(0, 30, 0.7, [0.95])
    found = moments(y=y, preds=preds)
    single = planning._moments(
        y=y, yhat=preds[:, 0], yhat_unlabeled=np.zeros(5), pseudo=planning.PILOT_PSEUDO
    )
    assert found.var_y == pytest.approx(single["var_y"], abs=1e-15)
    assert found.cov[0] == pytest.approx(single["cov"], abs=1e-15)
    assert found.var_f[0][0] == pytest.approx(single["var_yhat"], abs=1e-15)


def test_human_labels_alone_need_the_classical_sample_size_with_its_correction():
    m = Moments(var_y=0.25, cov=(0.1,), var_f=((0.25,),), n=50)
    plan = plan_theme(m=m, size=2000, target=0.05, human_cost=1.0, judge_costs=[0.0])
    n = plan.human_only.labels
    needed = lambda k: Z * math.sqrt((1 / k - 1 / 2000) * 0.25)  # noqa: E731
    assert needed(n) <= 0.05 < needed(n - 1)
    assert plan.human_only.shares == (0.0,)


def test_the_plan_reaches_the_target_with_the_fewest_labels_for_its_shares():
    y, preds = pilot(1, 200, 0.5, [0.8, 0.95])
    plan = plan_theme(
        m=moments(y=y, preds=preds), size=5000, target=0.03, human_cost=200, judge_costs=[1, 20]
    )
    best = plan.best
    assert best.halfwidth <= 0.03
    assert best.cost <= plan.single.cost <= plan.human_only.cost
    # One label fewer with the same shares misses the target.
    fewer = plan_theme(
        m=moments(y=y, preds=preds),
        size=5000,
        target=best.halfwidth * 1.0001,
        human_cost=200,
        judge_costs=[1, 20],
        shares=sorted(set(best.shares) | {0.0}),
    )
    assert fewer.best.labels <= best.labels
    # Two judges of different cost and quality: the cheapest design is well below the best single
    # judge on every unit with human labels.
    assert best.cost < 0.8 * plan.single.cost
    assert best.human_cost + sum(best.judge_costs) == best.cost
    strong = best.shares[1]
    assert best.judge_costs[1] == pytest.approx(20 * (strong * 5000 + (1 - strong) * best.labels))


def test_a_judge_that_judged_every_unit_costs_nothing_more_and_runs_at_share_one():
    y, preds = pilot(2, 100, 0.6, [0.85])
    plan = plan_theme(
        m=moments(y=y, preds=preds), size=1000, target=0.05, human_cost=50, judge_costs=[3.0], judged=[1000]
    )
    assert plan.best.shares == (1.0,) and plan.best.judge_costs == (0.0,)
    labeled = plan_theme(
        m=moments(y=y, preds=preds),
        size=1000,
        target=0.05,
        human_cost=50,
        judge_costs=[3.0],
        judged=[1000],
        labeled=plan.best.labels,
    )
    assert labeled.best.cost == 0.0


def test_bad_input_is_refused():
    m = Moments(var_y=0.25, cov=(0.1,), var_f=((0.25,),), n=50)
    with pytest.raises(ValueError, match="judge_costs"):
        plan_theme(m=m, size=10, target=0.1, human_cost=1, judge_costs=[1, 2])
    with pytest.raises(ValueError, match="target"):
        plan_theme(m=m, size=10, target=1.5, human_cost=1, judge_costs=[1])


def test_a_design_effect_multiplies_a_share_s_variance_and_one_keeps_today_s_plan():
    y, preds = pilot(1, 200, 0.5, [0.8, 0.95])
    m = moments(y=y, preds=preds)
    kwargs = dict(m=m, size=20000, target=0.03, human_cost=1.0, judge_costs=[0.001, 0.02])
    plain = plan_theme(**kwargs)
    assert plan_theme(**kwargs, design_effects=[1.0, 1.0]) == plain
    # The plan's own variance, by hand, with judge 1's share term doubled.
    shares = plain.best.shares
    assert 0 < shares[1] < 1
    lam = np.array(plain.best.coefficients)
    S, c, n = np.array(m.var_f), np.array(m.cov), plain.best.labels
    rect = (1 / n - 1 / 20000) * (m.var_y - 2 * lam @ c + lam @ S @ lam)
    draw = [(1 - s) / (s * 20000) * S[k, k] if s > 0 else 0.0 for k, s in enumerate(shares)]
    assert plain.best.halfwidth == pytest.approx(Z * math.sqrt(rect + lam**2 @ np.array(draw)), rel=1e-9)
    clustered = plan_theme(**kwargs, design_effects=[1.0, 2.4])
    assert clustered.best.halfwidth <= 0.03
    assert clustered.best.cost > plain.best.cost
    # Judged on every unit, a judge's design effect changes nothing.
    single = plan_theme(**kwargs, design_effects=[1.0, 2.4], shares=(0.0, 1.0))
    assert single.best == plan_theme(**kwargs, shares=(0.0, 1.0)).best
    with pytest.raises(ValueError, match="design_effects"):
        plan_theme(**kwargs, design_effects=[1.0])
    with pytest.raises(ValueError, match="design_effects"):
        plan_theme(**kwargs, design_effects=[1.0, 0.0])
