"""inference.estimators.multi_ppi: one judge is robust PPI++ to the last digit, several judges combine as
control variates, a judge on a random share costs its design variance, and the coefficients
never do worse than the best single judge."""

from __future__ import annotations

import itertools
import math

import numpy as np
import ppi_py
import pytest

from inference.estimators.multi_ppi import PPI_MULTI, JudgeTerm, box_minimum, multi_ppi
from inference.estimators.ppi import robust_ppi

# (seed, n, N, prevalence, judge agreement)
CASES = [
    (0, 30, 500, 0.5, 0.85),
    (1, 120, 4000, 0.8, 0.9),
    (2, 60, 1000, 0.06, 0.95),
    (3, 40, 2000, 0.97, 0.9),
    (5, 300, 6000, 0.3, 0.6),
    (6, 50, 800, 0.5, 0.3),  # a judge worse than chance: lambda clipped to 0
]


def one_judge(seed, n, N, prevalence, agreement):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < prevalence).astype(float)
    f = np.where(rng.random(n) < agreement, y, 1 - y)
    rest = rng.random(N) < prevalence
    f_unlabeled = np.where(rng.random(N) < agreement, rest, ~rest).astype(float)
    answers = rng.integers(0, max(2, n // 3), n)
    w = rng.uniform(1, 6, n)
    return y, f, f_unlabeled, answers, w


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("weighted", [False, True])
def test_one_judge_on_every_unit_is_robust_ppi_to_the_last_digit(case, weighted):
    y, f, f_unlabeled, answers, w = one_judge(*case)
    weights = w if weighted else None
    robust = robust_ppi(y=y, yhat=f, yhat_unlabeled=f_unlabeled, alpha=0.05, w=weights, clusters=answers)
    combined = multi_ppi(
        y=y,
        preds=f[:, None],
        terms=[JudgeTerm(values=np.concatenate([f, f_unlabeled]))],
        pool=f_unlabeled[:, None],
        population=len(y) + len(f_unlabeled),
        alpha=0.05,
        w=weights,
        clusters=answers,
    )
    interval = combined.interval
    assert (interval.mean, interval.lo, interval.hi, interval.se, interval.df, interval.note) == (
        robust.mean,
        robust.lo,
        robust.hi,
        robust.se,
        robust.df,
        robust.note,
    )
    assert combined.coefficients == (robust.lam,)
    assert interval.method == PPI_MULTI


@pytest.mark.parametrize("case", CASES[:4])
def test_one_judge_with_questions_as_clusters_is_robust_ppi_beyond_the_campaign(case):
    y, f, f_unlabeled, answers, w = one_judge(*case)
    questions = answers // 2
    unlabeled_questions = np.arange(len(f_unlabeled)) % 11 + 1000
    robust = robust_ppi(
        y=y,
        yhat=f,
        yhat_unlabeled=f_unlabeled,
        alpha=0.05,
        w=w,
        clusters=questions,
        unlabeled_clusters=unlabeled_questions,
        finite=False,
    )
    combined = multi_ppi(
        y=y,
        preds=f[:, None],
        terms=[
            JudgeTerm(
                values=np.concatenate([f, f_unlabeled]),
                questions=np.concatenate([questions, unlabeled_questions]),
            )
        ],
        pool=f_unlabeled[:, None],
        population=len(y) + len(f_unlabeled),
        alpha=0.05,
        w=w,
        clusters=questions,
        finite=False,
    )
    assert (combined.interval.mean, combined.interval.lo, combined.interval.hi) == (
        robust.mean,
        robust.lo,
        robust.hi,
    )


@pytest.mark.parametrize("lam", [0.0, 0.4, 1.0])
def test_point_estimate_is_ppi_py_with_every_unit_as_the_unlabeled_set(lam):
    y, f, f_unlabeled, _answers, _w = one_judge(*CASES[0])
    everything = np.concatenate([f, f_unlabeled])
    combined = multi_ppi(
        y=y,
        preds=f[:, None],
        terms=[JudgeTerm(values=everything)],
        population=len(everything),
        alpha=0.05,
        coefficients=[lam],
    )
    expected = ppi_py.ppi_mean_pointestimate(y, f, everything, lam=lam)
    assert combined.interval.mean == pytest.approx(float(np.asarray(expected).ravel()[0]), abs=1e-15)


def test_ppi_py_reads_two_prediction_columns_as_a_two_dimensional_mean_not_two_judges():
    # Why the comparison with ppi_py stops at one judge: its (n, 2) predictions are of an (n, 2)
    # label, one lambda for both coordinates, and it returns two estimates.
    y, f, f_unlabeled, _answers, _w = one_judge(*CASES[0])
    two = np.stack([f, 1 - f], axis=1)
    estimate = ppi_py.ppi_mean_pointestimate(
        np.stack([y, y], axis=1), two, np.stack([f_unlabeled, 1 - f_unlabeled], axis=1), lam=0.5
    )
    assert np.asarray(estimate).shape == (2,)


def test_two_judges_with_given_coefficients_by_hand():
    y = np.array([1, 1, 0, 1, 0, 1.0])
    f1 = np.array([1, 0, 0, 1, 1, 1.0])
    f2 = np.array([1, 1, 0, 1, 0, 0.0])
    rest1 = np.array([1, 1, 0, 0.0])
    rest2 = np.array([1, 0, 0, 1.0])
    combined = multi_ppi(
        y=y,
        preds=np.stack([f1, f2], axis=1),
        terms=[JudgeTerm(values=np.concatenate([f1, rest1])), JudgeTerm(values=np.concatenate([f2, rest2]))],
        population=10,
        alpha=0.05,
        coefficients=[0.25, 0.5],
    )
    # T1 = 6/10, T2 = 5/10; the rectifier's mean: mean(y) - 0.25 mean(f1) - 0.5 mean(f2).
    expected = 0.25 * 0.6 + 0.5 * 0.5 + (4 / 6 - 0.25 * 4 / 6 - 0.5 * 3 / 6)
    assert combined.interval.mean == pytest.approx(expected, abs=1e-15)
    assert combined.coefficients == (0.25, 0.5)
    r = y - 0.25 * f1 - 0.5 * f2
    rect = np.var(r, ddof=1) / 6 * (1 - 6 / 10)
    assert combined.variance >= rect - 1e-15  # at least the rectifier's (the floor may raise it)


def test_a_judge_on_a_drawn_share_adds_the_poisson_design_variance_of_its_mean():
    # Judge 2 judged the answers a, b, d (each drawn with q = 1/2): its mean is the Hajek mean over
    # them, and its design variance A / (A - 1) sum_a (1 - q) E_a^2, E_a = sum (f - T) / q / sum 1 / q.
    y = np.array([1, 0, 1, 1.0])
    f2_labeled = np.array([1, 0, 0, 1.0])
    drawn_values = np.array([1, 1, 0, 1, 0.0])
    drawn_answers = np.array(["a", "a", "b", "d", "d"])
    q = 0.5
    T = drawn_values.mean()
    E = np.array([((1 - T) + (1 - T)) / q, (0 - T) / q, ((1 - T) + (0 - T)) / q]) / (5 / q)
    draw_variance = 3 / 2 * np.sum((1 - q) * E**2)
    combined = multi_ppi(
        y=y,
        preds=f2_labeled[:, None],
        terms=[
            JudgeTerm(values=drawn_values, weights=np.full(5, 1 / q), clusters=drawn_answers, draw="share")
        ],
        population=40,
        alpha=0.05,
        coefficients=[0.8],
    )
    assert combined.draw_variance == pytest.approx(0.8**2 * draw_variance, rel=1e-12)
    r = y - 0.8 * f2_labeled
    assert combined.interval.mean == pytest.approx(0.8 * T + r.mean(), abs=1e-15)
    assert combined.interval.df is not None and combined.interval.df >= 3


def test_box_minimum_matches_a_search_of_the_box():
    rng = np.random.default_rng(3)
    grid = np.linspace(0, 1, 201)
    points = np.array(list(itertools.product(grid, grid)))  # every point of the box's grid
    for _ in range(20):
        A = rng.normal(size=(3, 2))
        H = A.T @ A
        b = rng.normal(size=2) * 0.8
        found = box_minimum(H=H, b=b)
        value = found @ H @ found - 2 * b @ found
        best = (np.einsum("ij,jk,ik->i", points, H, points) - 2 * points @ b).min()
        assert value <= best + 1e-12
        assert np.all((found >= 0) & (found <= 1))


def test_box_minimum_of_one_coordinate_is_the_clipped_ratio_and_zero_without_variance():
    assert box_minimum(H=np.array([[0.2]]), b=np.array([0.1]))[0] == 0.5
    assert box_minimum(H=np.array([[0.2]]), b=np.array([0.5]))[0] == 1.0
    assert box_minimum(H=np.array([[0.2]]), b=np.array([-0.1]))[0] == 0.0
    assert box_minimum(H=np.array([[0.0]]), b=np.array([0.1]))[0] == 0.0
    # Two identical judges: a singular system, and still a coefficient pair on the segment.
    H = np.array([[0.25, 0.25], [0.25, 0.25]])
    found = box_minimum(H=H, b=np.array([0.2, 0.2]))
    assert found.sum() == pytest.approx(0.8)


def population_of_two(seed, *, N=3000, prevalence=0.6, cheap=0.8, strong=0.95, correlated=False):
    rng = np.random.default_rng(seed)
    truth = (rng.random(N) < prevalence).astype(float)
    hard = rng.random(N) < 0.25
    cheap_right = rng.random(N) < cheap
    strong_right = rng.random(N) < strong
    if correlated:
        # Both judges err more often on the same hard units.
        cheap_right &= ~(hard & (rng.random(N) < 0.5))
        strong_right &= ~(hard & (rng.random(N) < 0.15))
    f1 = np.where(cheap_right, truth, 1 - truth)
    f2 = np.where(strong_right, truth, 1 - truth)
    return truth, f1, f2


def draw_and_combine(truth, f1, f2, *, rng, n, share, coefficients=None):
    N = truth.shape[0]
    labeled = np.zeros(N, dtype=bool)
    labeled[rng.choice(N, n, replace=False)] = True
    drawn = rng.random(N) < share
    pool = ~labeled & drawn
    return multi_ppi(
        y=truth[labeled],
        preds=np.stack([f1[labeled], f2[labeled]], axis=1),
        terms=[
            JudgeTerm(values=f1),
            JudgeTerm(
                values=f2[drawn],
                weights=np.full(int(drawn.sum()), 1 / share),
                clusters=np.flatnonzero(drawn),
                draw="strong",
            ),
        ],
        pool=np.stack([f1[pool], f2[pool]], axis=1),
        pool_weights=np.full(int(pool.sum()), 1 / share),
        population=N,
        alpha=0.05,
        coefficients=coefficients,
    )


@pytest.mark.parametrize("correlated", [False, True])
def test_a_strong_judge_on_a_share_beside_a_cheap_one_on_everything_is_unbiased_and_covers(correlated):
    truth, f1, f2 = population_of_two(7, correlated=correlated)
    rng = np.random.default_rng(11)
    errors, covered = [], 0
    reps = 200
    for _ in range(reps):
        interval = draw_and_combine(truth, f1, f2, rng=rng, n=80, share=0.3).interval
        errors.append(interval.mean - truth.mean())
        covered += interval.lo <= truth.mean() <= interval.hi
    assert abs(np.mean(errors)) < 3 * np.std(errors) / math.sqrt(reps)
    assert covered / reps >= 0.92


def test_the_combination_is_never_much_wider_than_the_best_single_judge_and_says_what_each_brings():
    truth, f1, f2 = population_of_two(3, N=6000)
    rng = np.random.default_rng(5)
    combined = draw_and_combine(truth, f1, f2, rng=rng, n=400, share=1.0)
    # ``without`` each judge: the other one alone, its coefficient fitted again.
    assert combined.variance <= min(combined.without) * 1.02
    assert combined.variance < combined.human_only
    # The strong judge takes most of the variance off beyond the cheap one, and not the reverse.
    assert combined.reduction(1) > combined.reduction(0)
    assert 0 <= combined.reduction(0) < 1


def test_degenerate_inputs():
    empty = multi_ppi(y=[], preds=np.zeros((0, 1)), terms=[JudgeTerm(values=[1.0])], population=5, alpha=0.05)
    assert math.isnan(empty.interval.mean)
    one = multi_ppi(
        y=[1.0, 0.0],
        preds=[[1.0], [0.0]],
        terms=[JudgeTerm(values=[1, 0, 1.0])],
        population=3,
        alpha=0.05,
        clusters=[7, 7],
    )
    assert math.isinf(one.interval.hi)
    census = multi_ppi(
        y=[1.0, 0.0, 1.0],
        preds=[[1.0], [0.0], [0.0]],
        terms=[JudgeTerm(values=[1, 0, 0.0])],
        population=3,
        alpha=0.05,
    )
    assert census.coefficients == (0.0,)
    assert "lambda 0" in census.interval.note
    with pytest.raises(ValueError, match="preds"):
        multi_ppi(y=[1.0], preds=[[1.0, 0.0]], terms=[JudgeTerm(values=[1.0])], population=2, alpha=0.05)
    with pytest.raises(ValueError, match="at least 1"):
        multi_ppi(
            y=[1.0],
            preds=[[1.0]],
            terms=[JudgeTerm(values=[1.0], weights=[0.5], clusters=[1])],
            population=2,
            alpha=0.05,
        )


def test_no_judges_give_the_human_labels_estimate_alone():
    rng = np.random.default_rng(3)
    y = (rng.random(40) < 0.4).astype(float)
    clusters = np.repeat(np.arange(20), 2)
    f = np.where(rng.random(40) < 0.9, y, 1 - y)
    with_judge = multi_ppi(
        y=y,
        preds=f[:, None],
        terms=[JudgeTerm(values=np.concatenate([f, np.zeros(160)]))],
        population=200,
        alpha=0.05,
        clusters=clusters,
    )
    for pool in (None, np.zeros((7, 0))):
        alone = multi_ppi(
            y=y, preds=np.zeros((40, 0)), terms=[], population=200, alpha=0.05, clusters=clusters, pool=pool
        )
        assert alone.coefficients == () and alone.without == ()
        assert alone.interval.mean == pytest.approx(y.mean(), abs=1e-15)
        assert alone.variance == pytest.approx(with_judge.human_only, rel=1e-12)
        assert alone.human_only == pytest.approx(alone.variance, rel=1e-12)
    with pytest.raises(ValueError, match="pool"):
        multi_ppi(
            y=y,
            preds=f[:, None],
            terms=[JudgeTerm(values=f)],
            population=200,
            alpha=0.05,
            pool=np.zeros((3, 2)),
        )
