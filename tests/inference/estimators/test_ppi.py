"""inference.estimators.ppi: equal to ppi_py on the same arrays, and to cases worked by hand."""

from __future__ import annotations

import math

import numpy as np
import ppi_py
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t
from sklearn.metrics import cohen_kappa_score

from inference import intervals
from inference.estimators import means
from inference.estimators.ppi import (
    METHODS,
    PPI,
    PPI_ROBUST_CROSSFIT,
    PPI_ROBUST_FIXED,
    PPI_ROBUST_POOLED,
    crossfit_lambdas,
    pooled_lambda,
    robust_ppi,
    study_lambda,
    study_ppi,
)
from inference.reliability import agreement as agreement_module

# (seed, n, N, prevalence, judge agreement): balanced, imbalanced both ways, tiny n, large N,
# and a judge worse than chance.
CASES = [
    (0, 30, 500, 0.5, 0.85),
    (1, 120, 4000, 0.8, 0.9),
    (2, 60, 1000, 0.06, 0.95),
    (3, 40, 2000, 0.97, 0.9),
    (4, 5, 50, 0.6, 0.7),
    (5, 300, 20000, 0.3, 0.6),
    (6, 50, 800, 0.5, 0.3),  # a judge worse than chance: lambda clipped to 0
]

Z95 = norm.ppf(0.975)


def binary_arrays(
    *, seed: int, n: int, N: int, prevalence: float, agreement: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < prevalence).astype(float)
    yhat = np.where(rng.random(n) < agreement, y, 1 - y)
    y_rest = rng.random(N) < prevalence
    yhat_unlabeled = np.where(rng.random(N) < agreement, y_rest, ~y_rest).astype(float)
    return y, yhat, yhat_unlabeled


def arrays_of(case: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    seed, n, N, prevalence, agreement = case
    return binary_arrays(seed=seed, n=n, N=N, prevalence=prevalence, agreement=agreement)


# Study numbers: ppi_py to the last digit


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_classical_mean_without_design_is_ppi_py_classical_mean_ci_to_the_last_digit(case, alpha):
    y, _, _ = arrays_of(case)
    interval = means.classical_mean(y=y, alpha=alpha)
    lo, hi = ppi_py.classical_mean_ci(y, alpha=alpha)
    assert (interval.lo, interval.hi, interval.mean) == (float(lo), float(hi), float(y.mean()))
    assert interval.method == means.CLASSICAL
    assert (interval.alpha, interval.n, interval.df) == (alpha, len(y), None)


def test_classical_mean_uses_the_normal_quantile_and_the_population_standard_deviation():
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0])
    interval = means.classical_mean(y=y, alpha=0.05)
    mean = 6 / 8
    sd = math.sqrt(mean * (1 - mean))  # ddof 0
    assert interval.mean == mean
    assert interval.halfwidth == pytest.approx(Z95 * sd / math.sqrt(8), rel=1e-14)


@pytest.mark.parametrize("case", CASES)
def test_judge_mean_is_the_classical_interval_on_every_judge_label(case):
    _, yhat, yhat_unlabeled = arrays_of(case)
    everything = np.concatenate([yhat, yhat_unlabeled])
    interval = means.judge_mean(yhat_all=everything, alpha=0.05)
    lo, hi = ppi_py.classical_mean_ci(everything, alpha=0.05)
    assert (interval.mean, interval.lo, interval.hi) == (float(everything.mean()), float(lo), float(hi))
    assert interval.method == means.JUDGE_ONLY
    assert "bias" in METHODS[means.JUDGE_ONLY]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_study_ppi_is_ppi_py_estimate_and_interval_to_the_last_digit(case, alpha):
    y, yhat, yhat_unlabeled = arrays_of(case)
    interval = study_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=alpha)
    mean = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_unlabeled, lam=None)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, yhat_unlabeled, alpha=alpha, lam=None)
    assert mean.shape == lo.shape == (1,)
    assert (interval.mean, interval.lo, interval.hi) == (mean[0], lo[0], hi[0])
    assert (interval.method, interval.alpha, interval.n, interval.N) == (
        PPI,
        alpha,
        len(y),
        len(yhat_unlabeled),
    )
    assert interval.note == ""


def test_study_ppi_clips_the_lambda_of_a_judge_worse_than_chance_to_zero():
    y, yhat, yhat_unlabeled = arrays_of(CASES[-1])
    assert np.mean((y - y.mean()) * (yhat - yhat.mean())) < 0
    assert study_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05).lam == 0.0


@pytest.mark.parametrize("case", CASES)
def test_study_ppi_reports_the_lambda_ppi_py_uses_for_its_interval(case):
    y, yhat, yhat_unlabeled = arrays_of(case)
    n, N = len(y), len(yhat_unlabeled)
    interval = study_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05)
    # lam=None recurses with unit weight vectors, which ppi_py renormalises: pass the same.
    lo, hi = ppi_py.ppi_mean_ci(
        y, yhat, yhat_unlabeled, alpha=0.05, lam=interval.lam, w=np.ones(n), w_unlabeled=np.ones(N)
    )
    assert (interval.lo, interval.hi) == (lo[0], hi[0])
    pooled = np.concatenate([yhat, yhat_unlabeled])
    cov = np.mean((y - y.mean()) * (yhat - yhat.mean()))
    closed_form = min(1.0, max(0.0, cov / ((1 + n / N) * np.var(pooled, ddof=1))))
    assert interval.lam == pytest.approx(closed_form, rel=1e-12, abs=1e-15)


def test_study_ppi_on_a_case_worked_by_hand():
    y = [1, 0, 1, 1]
    yhat = [1, 0, 0, 1]
    yhat_unlabeled = [1, 1, 0, 0, 1, 1]
    n, N = 4, 6
    # Cov(Y, Yhat) with ddof 0: mean(Y * Yhat) - mean(Y) mean(Yhat) = 2/4 - (3/4)(2/4).
    cov = 2 / 4 - (3 / 4) * (2 / 4)
    # Var(Yhat) over all 10 judge labels (6 ones) with ddof 1.
    var_pool = (6 - 10 * 0.6**2) / 9
    lam = cov / ((1 + n / N) * var_pool)
    assert lam == pytest.approx(0.28125, rel=1e-14)
    theta = lam * (4 / 6) + sum(a - lam * b for a, b in zip(y, yhat, strict=True)) / n
    assert theta == pytest.approx(0.796875, rel=1e-14)
    rect = [a - lam * b for a, b in zip(y, yhat, strict=True)]
    rect_mean = sum(rect) / n
    var_rect = sum((r - rect_mean) ** 2 for r in rect) / n
    var_unl = (4 / 6) * (2 / 6)
    halfwidth = Z95 * math.sqrt(lam**2 * var_unl / N + var_rect / n)

    interval = study_ppi(
        y=np.array(y, float),
        yhat=np.array(yhat, float),
        yhat_unlabeled=np.array(yhat_unlabeled, float),
        alpha=0.05,
    )
    assert interval.lam == pytest.approx(lam, rel=1e-14)
    assert interval.mean == pytest.approx(theta, rel=1e-14)
    assert interval.halfwidth == pytest.approx(halfwidth, rel=1e-12)
    assert study_lambda(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled) == interval.lam


def test_study_ppi_with_a_constant_judge_uses_lambda_zero_and_gives_the_classical_interval():
    y = np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    interval = study_ppi(y=y, yhat=np.ones(6), yhat_unlabeled=np.ones(40), alpha=0.05)
    classical = means.classical_mean(y=y, alpha=0.05)
    assert interval.lam == 0.0
    assert "lambda 0" in interval.note
    assert interval.mean == pytest.approx(classical.mean, rel=1e-14)
    assert (interval.lo, interval.hi) == pytest.approx((classical.lo, classical.hi), rel=1e-14)


def test_study_ppi_without_labels_or_unlabeled_units_is_nan_with_a_note():
    empty = study_ppi(y=[], yhat=[], yhat_unlabeled=[1.0, 0.0], alpha=0.05)
    assert math.isnan(empty.mean) and math.isnan(empty.lo) and math.isnan(empty.halfwidth)
    assert empty.note == "no labeled units"
    no_pool = study_ppi(y=[1.0, 0.0], yhat=[1.0, 1.0], yhat_unlabeled=[], alpha=0.05)
    assert math.isnan(no_pool.mean) and no_pool.note == "no unlabeled units"


def test_one_label_gives_the_point_estimate_with_an_infinite_interval():
    ppi = study_ppi(y=[1.0], yhat=[1.0], yhat_unlabeled=[1.0, 0.0, 1.0], alpha=0.05)
    human = means.classical_mean(y=[1.0], alpha=0.05)
    for interval in (ppi, human):
        assert math.isfinite(interval.mean)
        assert (interval.lo, interval.hi) == (-math.inf, math.inf)
        assert "one label" in interval.note


def test_zero_width_classical_interval_says_so():
    interval = means.classical_mean(y=np.ones(12), alpha=0.05)
    assert interval.halfwidth == 0.0
    assert "zero width" in interval.note


def test_bad_alpha_and_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="alpha"):
        means.classical_mean(y=[1.0, 0.0], alpha=0.0)
    with pytest.raises(ValueError, match="yhat"):
        study_ppi(y=[1.0, 0.0], yhat=[1.0], yhat_unlabeled=[1.0], alpha=0.05)
    with pytest.raises(ValueError, match="positive"):
        robust_ppi(y=[1.0, 0.0], yhat=[1.0, 0.0], yhat_unlabeled=[1.0], alpha=0.05, w=[1.0, 0.0])


# Robust human-only interval


def test_classical_mean_with_clusters_is_the_hand_linearisation_with_a_t_quantile():
    y = np.array([1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0])
    w = np.array([2.0, 2.0, 1.0, 4.0, 4.0, 1.0, 1.0])
    clusters = np.array(["a", "a", "b", "c", "c", "d", "d"])
    interval = means.classical_mean(y=y, alpha=0.1, w=w, clusters=clusters)
    total = sum(w)
    mean = sum(wi * yi for wi, yi in zip(w, y, strict=True)) / total
    sums: dict[str, float] = {}
    for wi, yi, g in zip(w, y, clusters, strict=True):
        sums[g] = sums.get(g, 0.0) + wi * (yi - mean) / total
    G = 4
    variance = G / (G - 1) * sum(s**2 for s in sums.values())
    assert interval.mean == pytest.approx(mean, rel=1e-14)
    assert interval.halfwidth == pytest.approx(student_t.ppf(0.95, G - 1) * math.sqrt(variance), rel=1e-12)
    assert (interval.df, interval.method) == (3, means.CLASSICAL_ROBUST)


def test_classical_mean_with_one_unit_per_cluster_is_the_sample_variance_with_t():
    y, _, _ = arrays_of(CASES[0])
    n = len(y)
    interval = means.classical_mean(y=y, alpha=0.05, clusters=np.arange(n))
    expected = student_t.ppf(0.975, n - 1) * np.std(y, ddof=1) / math.sqrt(n)
    assert interval.halfwidth == pytest.approx(expected, rel=1e-12)


# Robust PPI++


def test_robust_ppi_with_fixed_lambda_and_no_design_is_the_hand_formula_with_t():
    y = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    yhat = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    yhat_unlabeled = [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    lam, n, N = 0.6, 6, 8
    rect = [a - lam * b for a, b in zip(y, yhat, strict=True)]
    rect_mean = sum(rect) / n
    # The judge's term over every judged unit, the labeled ones included.
    judged_mean = (sum(yhat) + sum(yhat_unlabeled)) / (n + N)
    theta = lam * judged_mean + rect_mean
    var_rect_ddof1 = sum((r - rect_mean) ** 2 for r in rect) / (n - 1)
    # This campaign's 14 units: the judge's term is exact, the rectifier's variance corrected by
    # the share of units left unlabeled.
    halfwidth = student_t.ppf(0.975, n - 1) * math.sqrt((1 - n / (n + N)) * var_rect_ddof1 / n)

    interval = robust_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05, lam=lam)
    assert interval.mean == pytest.approx(theta, rel=1e-14)
    assert (interval.lam, interval.df, interval.method) == (lam, n - 1, PPI_ROBUST_FIXED)
    # With 6 labels theta -/+ halfwidth leaves [0, 1]: cut at 1, widened to Wilson's interval at
    # the effective sample size theta (1 - theta) / variance, with the same t quantile, by hand.
    assert theta + halfwidth > 1
    q = student_t.ppf(0.975, n - 1)
    n_eff = theta * (1 - theta) / (halfwidth / q) ** 2
    centre = (theta + q**2 / (2 * n_eff)) / (1 + q**2 / n_eff)
    half = q / (1 + q**2 / n_eff) * math.sqrt(theta * (1 - theta) / n_eff + q**2 / (4 * n_eff**2))
    expected = (min(theta - halfwidth, centre - half), max(1.0, centre + half))
    assert (interval.lo, interval.hi) == pytest.approx(expected, rel=1e-12)
    assert intervals.standard_error(interval) * q == pytest.approx(halfwidth, rel=1e-12)
    assert intervals.WILSON_NOTE in interval.note
    assert 0 <= interval.lo < theta < interval.hi <= 1


def test_robust_ppi_beyond_the_campaign_adds_the_judges_term_by_hand():
    # finite=False: the units are a sample of the process (the assistant asked again). No
    # correction, and each judged unit contributes lam (yhat - mean) / (n + N) beside the
    # labeled units' rectifier part; every unit its own cluster.
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    yhat = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    yhat_unlabeled = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    lam, n, N = 0.6, 6, 8
    total = n + N
    judged_mean = (yhat.sum() + yhat_unlabeled.sum()) / total
    rect = y - lam * yhat
    labeled = (rect - rect.mean()) / n + lam * (yhat - judged_mean) / total
    unlabeled = lam * (yhat_unlabeled - judged_mean) / total
    # The labeled units' judge part moves against their rectifier: the sum is below the
    # rectifier's own variance here, and no part of it is dropped. One small-sample factor, the
    # labeled clusters' n / (n - 1).
    variance = n / (n - 1) * (np.sum(labeled**2) + np.sum(unlabeled**2))
    assert variance < n / (n - 1) * np.sum(((rect - rect.mean()) / n) ** 2)
    interval = robust_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05, lam=lam, finite=False)
    assert interval.mean == pytest.approx(lam * judged_mean + rect.mean(), rel=1e-14)
    assert interval.se == pytest.approx(math.sqrt(variance), rel=1e-12)
    # The same units as clusters of their own, given explicitly, change nothing.
    clustered = robust_ppi(
        y=y,
        yhat=yhat,
        yhat_unlabeled=yhat_unlabeled,
        alpha=0.05,
        lam=lam,
        finite=False,
        clusters=[f"l{k}" for k in range(n)],
        unlabeled_clusters=[f"u{k}" for k in range(N)],
    )
    assert clustered.se == pytest.approx(interval.se, rel=1e-12)


def test_robust_ppi_by_question_sums_the_judges_term_with_the_labels_of_each_question():
    # Questions as clusters, beyond the campaign: a question's contributions (its labeled units'
    # rectifier and judge parts, its unlabeled units' judge parts) are summed before squaring.
    y = np.array([1.0, 0.0, 1.0, 1.0])
    yhat = np.array([1.0, 1.0, 1.0, 0.0])
    unl = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    questions = np.array(["a", "a", "b", "c"])
    unlabeled_questions = np.array(["a", "b", "b", "c", "c", "d"])
    lam, n, total = 0.5, 4, 10
    judged_mean = (yhat.sum() + unl.sum()) / total
    rect = y - lam * yhat
    parts = {}
    for q, value in zip(
        questions, (rect - rect.mean()) / n + lam * (yhat - judged_mean) / total, strict=True
    ):
        parts[q] = parts.get(q, 0.0) + value
    for q, value in zip(unlabeled_questions, lam * (unl - judged_mean) / total, strict=True):
        parts[q] = parts.get(q, 0.0) + value
    rectifier_only = {}
    for q, value in zip(questions, (rect - rect.mean()) / n, strict=True):
        rectifier_only[q] = rectifier_only.get(q, 0.0) + value
    interval = robust_ppi(
        y=y,
        yhat=yhat,
        yhat_unlabeled=unl,
        alpha=0.05,
        lam=lam,
        finite=False,
        clusters=questions,
        unlabeled_clusters=unlabeled_questions,
    )
    labeled_G = len(rectifier_only)
    # One small-sample factor, the labeled questions' G / (G - 1).
    variance = labeled_G / (labeled_G - 1) * sum(v**2 for v in parts.values())
    rect_var = labeled_G / (labeled_G - 1) * sum(v**2 for v in rectifier_only.values())
    z2 = Z95**2
    floor = ((1 - lam) ** 2 * _smoothed(3, 4, z2) + lam**2 * _smoothed(2, 4, z2)) / labeled_G
    expected = max(rect_var, floor) + variance - rect_var
    assert interval.se == pytest.approx(math.sqrt(expected), rel=1e-12)
    assert interval.df == labeled_G - 1 == 2


def _smoothed(count: float, n: int, z2: float) -> float:
    rate = (count + z2 / 2) / (n + z2)
    return rate * (1 - rate)


@pytest.mark.parametrize("case", CASES[:4])
def test_robust_ppi_estimate_is_ppi_py_on_every_judged_unit_and_singleton_clusters_change_nothing(case):
    y, yhat, yhat_unlabeled = arrays_of(case)
    n, N, lam = len(y), len(yhat_unlabeled), 0.7
    robust = robust_ppi(
        y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05, lam=lam, clusters=np.arange(n)
    )
    unclustered = robust_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05, lam=lam)
    judged = np.concatenate([yhat, yhat_unlabeled])
    # ppi_py's estimate with every judged unit in its "unlabeled" set.
    assert robust.mean == pytest.approx(ppi_py.ppi_mean_pointestimate(y, yhat, judged, lam=lam)[0], rel=1e-13)
    assert (robust.lo, robust.hi) == pytest.approx((unclustered.lo, unclustered.hi), rel=1e-13)
    # This campaign's units: the rectifier's variance (ddof 1), floored, times 1 - n / (n + N).
    labels, preds = np.asarray(y), np.asarray(yhat)
    floor = (
        (1 - lam) ** 2 * _smoothed(labels.sum(), n, Z95**2)
        + lam**2 * _smoothed(np.sum(labels != preds), n, Z95**2)
    ) / n
    rectifier = max(np.var(y - lam * yhat, ddof=1) / n, floor)
    assert intervals.standard_error(robust) ** 2 == pytest.approx((1 - n / (n + N)) * rectifier, rel=1e-10)
    assert ("floored" in robust.note) == (floor > np.var(y - lam * yhat, ddof=1) / n)


def test_a_judge_that_agrees_with_every_label_gets_the_agresti_coull_floor_by_hand():
    # 20 labels, the judge agrees with all: the rectifier Y - 1 * Yhat is 0 everywhere, and
    # without a floor the interval would have no width. With 0 disagreements among 20, the
    # smoothed rate is (0 + z^2/2) / (20 + z^2) and the floor lam^2 rate (1 - rate) / G, with the
    # finite-population correction of 20 labels among 220 judged units.
    y = [1.0] * 15 + [0.0] * 5
    unlabeled = [1.0] * 150 + [0.0] * 50
    interval = robust_ppi(y=y, yhat=y, yhat_unlabeled=unlabeled, alpha=0.05, lam=1.0)
    z2 = 1.959963984540054**2
    rate = (z2 / 2) / (20 + z2)
    variance = (1 - 20 / 220) * rate * (1 - rate) / 20
    assert interval.mean == pytest.approx(0.75)
    assert interval.halfwidth == pytest.approx(student_t.ppf(0.975, 19) * math.sqrt(variance), rel=1e-12)
    assert "floored" in interval.note
    # Beyond the campaign the judge's own variance comes on top (every unit its own cluster).
    wider = robust_ppi(y=y, yhat=y, yhat_unlabeled=unlabeled, alpha=0.05, lam=1.0, finite=False)
    assert wider.se**2 == pytest.approx(rate * (1 - rate) / 20 + 20 / 19 * 0.75 * 0.25 / 220, rel=1e-12)


def test_twelve_labels_all_1_do_not_make_a_zero_width_robust_interval():
    # Every label 1, every judge label 1: lambda is 0 (the judge's labels do not vary) and the
    # rectifier is Y, constant. The floor is the smoothed rate's variance over G = 12 clusters;
    # at an estimate of exactly 1 the interval reaches Wilson's for 12 labels all 1 (the rule of
    # three's bound, 12 / (12 + q^2)), wider than the floored one.
    y = [1.0] * 12
    z2 = 1.959963984540054**2
    rate = (12 + z2 / 2) / (12 + z2)
    q = student_t.ppf(0.975, 11)
    expected = q * math.sqrt(rate * (1 - rate) / 12)
    human = means.classical_mean(y=y, alpha=0.05, clusters=list(range(12)))
    assert human.mean == 1.0
    assert (human.lo, human.hi) == pytest.approx((min(1 - expected, 12 / (12 + q**2)), 1.0), rel=1e-12)
    assert human.lo == pytest.approx(12 / (12 + q**2), rel=1e-12)
    assert "all labels are equal" in human.note and intervals.WILSON_NOTE in human.note
    # PPI++ over 62 judged units: the floor times 1 - 12/62, and Wilson's at 12 / (1 - 12/62).
    ppi = robust_ppi(y=y, yhat=y, yhat_unlabeled=[1.0] * 50, alpha=0.05, clusters=list(range(12)))
    factor = 1 - 12 / 62
    worth = 12 / factor
    assert ppi.lam == 0 and ppi.mean == 1.0 and "floored" in ppi.note
    assert ppi.se**2 == pytest.approx(factor * rate * (1 - rate) / 12, rel=1e-12)
    assert (ppi.lo, ppi.hi) == pytest.approx((worth / (worth + q**2), 1.0), rel=1e-12)
    # The study method stays exactly ppi_py's, zero width included.
    assert means.classical_mean(y=y, alpha=0.05).halfwidth == 0


@pytest.mark.parametrize("lam", [None, 0.5])
def test_robust_ppi_with_constant_weights_matches_no_weights(lam):
    y, yhat, yhat_unlabeled = arrays_of(CASES[1])
    clusters = np.arange(len(y)) // 3
    plain = robust_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05, lam=lam, clusters=clusters)
    weighted = robust_ppi(
        y=y,
        yhat=yhat,
        yhat_unlabeled=yhat_unlabeled,
        alpha=0.05,
        lam=lam,
        clusters=clusters,
        w=np.full(len(y), 37.5),
    )
    assert weighted.mean == pytest.approx(plain.mean, rel=1e-13)
    assert weighted.lam == pytest.approx(plain.lam, rel=1e-13)
    assert (weighted.lo, weighted.hi) == pytest.approx((plain.lo, plain.hi), rel=1e-12)


def test_robust_ppi_weighted_point_estimate_is_ppi_py_weighted_estimate_for_a_fixed_lambda():
    y, yhat, yhat_unlabeled = arrays_of(CASES[0])
    rng = np.random.default_rng(11)
    w = rng.uniform(1, 20, size=len(y))
    interval = robust_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05, lam=0.8, w=w)
    # ppi_py's weighted estimate with every judged unit, the labeled ones too, as its unlabeled set.
    judged = np.concatenate([yhat, yhat_unlabeled])
    expected = ppi_py.ppi_mean_pointestimate(y, yhat, judged, lam=0.8, w=w)
    assert interval.mean == pytest.approx(expected[0], rel=1e-13)


def test_robust_ppi_cluster_variance_is_the_hand_sum_over_answers():
    y = np.array([1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    yhat = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    yhat_unlabeled = np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    w = np.array([3.0, 3.0, 1.0, 1.0, 2.0, 2.0, 2.0, 5.0])
    clusters = np.array([10, 10, 11, 12, 12, 12, 13, 14])
    lam = 0.4
    share = w / w.sum()
    rect = y - lam * yhat
    rect_mean = float(np.sum(share * rect))
    by_answer: dict[int, float] = {}
    for s, r, g in zip(share, rect, clusters, strict=True):
        by_answer[int(g)] = by_answer.get(int(g), 0.0) + s * (r - rect_mean)
    G = len(by_answer)
    var_rect = G / (G - 1) * sum(v**2 for v in by_answer.values())
    total = len(y) + len(yhat_unlabeled)
    expected = student_t.ppf(0.95, G - 1) * math.sqrt((1 - len(y) / total) * var_rect)

    interval = robust_ppi(
        y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.1, lam=lam, w=w, clusters=clusters
    )
    judged_mean = (yhat.sum() + yhat_unlabeled.sum()) / total
    assert interval.mean == pytest.approx(lam * judged_mean + rect_mean, rel=1e-14)
    q = student_t.ppf(0.95, G - 1)
    assert intervals.standard_error(interval) * q == pytest.approx(expected, rel=1e-12)
    assert interval.df == G - 1 == 4
    assert 0 <= interval.lo < interval.mean < interval.hi <= 1


def test_crossfit_lambdas_leave_each_answer_out():
    y, yhat, yhat_unlabeled = arrays_of(CASES[0])
    n = len(y)
    clusters = np.arange(n) % 7
    lambdas = crossfit_lambdas(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, clusters=clusters)
    for g in range(7):
        rest = clusters != g
        cov = np.mean((y[rest] - y[rest].mean()) * (yhat[rest] - yhat[rest].mean()))
        var = np.var(np.concatenate([yhat[rest], yhat_unlabeled]))
        expected = min(1.0, max(0.0, cov / var))
        assert lambdas[clusters == g] == pytest.approx(np.full(int(np.sum(~rest)), expected), rel=1e-10)


def test_robust_ppi_crossfit_reports_the_mean_lambda_and_uses_each_cluster_lambda():
    y, yhat, yhat_unlabeled = arrays_of(CASES[1])
    clusters = np.arange(len(y)) // 4
    lambdas = crossfit_lambdas(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, clusters=clusters)
    assert len(set(np.round(lambdas, 12))) > 1
    interval = robust_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05, clusters=clusters)
    assert interval.lam == pytest.approx(lambdas.mean(), rel=1e-13)
    judged = np.concatenate([yhat, yhat_unlabeled])
    expected = lambdas.mean() * judged.mean() + np.mean(y - lambdas * yhat)
    assert interval.mean == pytest.approx(expected, rel=1e-13)
    assert interval.method == PPI_ROBUST_CROSSFIT


def test_pooled_lambda_is_the_hand_ratio_across_groups_and_labels_the_method():
    groups = [arrays_of(CASES[0]), arrays_of(CASES[1])]
    numerator = denominator = 0.0
    for y, yhat, yhat_unlabeled in groups:
        n, N = len(y), len(yhat_unlabeled)
        numerator += n * np.mean((y - y.mean()) * (yhat - yhat.mean()))
        denominator += n * (1 + n / N) * np.var(np.concatenate([yhat, yhat_unlabeled]))
    lam = pooled_lambda(groups=groups)
    assert lam == pytest.approx(numerator / denominator, rel=1e-12)
    y, yhat, yhat_unlabeled = groups[0]
    interval = robust_ppi(
        y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05, lam=lam, lam_method="pooled"
    )
    assert (interval.method, interval.lam) == (PPI_ROBUST_POOLED, lam)


def test_robust_ppi_clips_a_given_lambda_and_rejects_bad_lambda_methods():
    y, yhat, yhat_unlabeled = arrays_of(CASES[0])
    assert robust_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05, lam=1.7).lam == 1.0
    with pytest.raises(ValueError, match="needs a lam"):
        robust_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05, lam_method="pooled")
    with pytest.raises(ValueError, match="unknown lam_method"):
        robust_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05, lam_method="same")


def test_robust_ppi_degenerate_cases_say_why():
    empty = robust_ppi(y=[], yhat=[], yhat_unlabeled=[1.0], alpha=0.05)
    assert math.isnan(empty.mean) and empty.note == "no labeled units"

    one_answer = robust_ppi(
        y=[1.0, 0.0, 1.0], yhat=[1.0, 0.0, 0.0], yhat_unlabeled=[1.0, 0.0], alpha=0.05, clusters=[5, 5, 5]
    )
    assert math.isfinite(one_answer.mean)
    assert (one_answer.lo, one_answer.hi, one_answer.df) == (-math.inf, math.inf, 0)
    assert "one cluster" in one_answer.note
    assert one_answer.lam == 0.0

    one_label = robust_ppi(y=[1.0], yhat=[1.0], yhat_unlabeled=[1.0, 0.0], alpha=0.05)
    assert one_label.halfwidth == math.inf and "one cluster" in one_label.note

    y = np.array([1.0, 0.0, 1.0, 1.0])
    constant = robust_ppi(y=y, yhat=np.ones(4), yhat_unlabeled=np.ones(9), alpha=0.05)
    assert constant.lam == 0.0
    assert constant.mean == pytest.approx(0.75)

    # Every judged unit labeled: lambda 0, the human-only estimate; about this campaign's four
    # units, a census (no width), beyond it the human-only interval.
    no_pool = robust_ppi(y=y, yhat=[1.0, 0.0, 0.0, 1.0], yhat_unlabeled=[], alpha=0.05)
    census = means.classical_mean(y=y, alpha=0.05, clusters=np.arange(4), population=4)
    assert no_pool.lam == 0.0 and "no unlabeled units" in no_pool.note
    assert (no_pool.mean, no_pool.lo, no_pool.hi) == (census.mean, census.lo, census.hi) == (0.75, 0.75, 0.75)
    beyond = robust_ppi(y=y, yhat=[1.0, 0.0, 0.0, 1.0], yhat_unlabeled=[], alpha=0.05, finite=False)
    human = means.classical_mean(y=y, alpha=0.05, clusters=np.arange(4))
    assert (beyond.mean, beyond.lo, beyond.hi) == pytest.approx((human.mean, human.lo, human.hi), rel=1e-14)


def test_robust_ppi_with_design_weights_is_unbiased_where_the_unweighted_estimate_is_not():
    # Two strata of 1,500 units; 30 labels drawn from the first, 10 from the second, so the
    # second (lower prevalence, an over-optimistic judge) is under-represented among labels.
    rng = np.random.default_rng(7)
    stratum = np.repeat([0, 1], 1500)
    y_pop = np.where(stratum == 0, rng.random(3000) < 0.9, rng.random(3000) < 0.4).astype(float)
    yhat_pop = y_pop.copy()
    flips = (stratum == 0) & (rng.random(3000) < 0.05)
    yhat_pop[flips] = 1 - yhat_pop[flips]
    yhat_pop[(stratum == 1) & (y_pop == 0) & (rng.random(3000) < 0.5)] = 1.0
    truth = y_pop.mean()
    draws = {0: 30, 1: 10}

    weighted_errors, unweighted_errors = [], []
    for _ in range(300):
        picked = np.concatenate(
            [rng.choice(np.flatnonzero(stratum == k), m, replace=False) for k, m in draws.items()]
        )
        inclusion = np.where(stratum[picked] == 0, 30 / 1500, 10 / 1500)
        rest = np.ones(3000, dtype=bool)
        rest[picked] = False
        arrays = dict(y=y_pop[picked], yhat=yhat_pop[picked], yhat_unlabeled=yhat_pop[rest], alpha=0.05)
        weighted_errors.append(robust_ppi(**arrays, w=1 / inclusion).mean - truth)
        unweighted_errors.append(robust_ppi(**arrays).mean - truth)

    assert abs(np.mean(weighted_errors)) < 0.02
    assert np.mean(unweighted_errors) > 0.06
    assert abs(np.mean(weighted_errors)) < abs(np.mean(unweighted_errors)) / 4


# Agreement, n_eff, stratified combination


@pytest.mark.parametrize("case", CASES)
def test_agreement_kappa_equals_sklearn_cohen_kappa(case):
    y, yhat, _ = arrays_of(case)
    result = agreement_module.agreement(y=y, yhat=yhat)
    assert result.kappa == pytest.approx(cohen_kappa_score(y, yhat), rel=1e-12, abs=1e-15)
    assert result.observed == pytest.approx(np.mean(y == yhat), rel=1e-15)
    assert result.n == len(y)


def test_agreement_confusion_takes_the_judge_as_prediction_and_chance_by_hand():
    y = np.array([1, 1, 1, 0, 0, 1, 0, 1])
    yhat = np.array([1, 0, 1, 1, 0, 1, 0, 1])
    result = agreement_module.agreement(y=y, yhat=yhat)
    assert result.confusion == {"tp": 4, "fp": 1, "fn": 1, "tn": 2}
    p_h, p_j = 5 / 8, 5 / 8
    chance = p_h * p_j + (1 - p_h) * (1 - p_j)
    assert result.observed == 6 / 8
    assert result.chance == pytest.approx(chance, rel=1e-15)
    assert result.kappa == pytest.approx((6 / 8 - chance) / (1 - chance), rel=1e-14)


def test_agreement_leaves_kappa_undefined_when_chance_agreement_is_one():
    both_one = agreement_module.agreement(y=[1, 1, 1], yhat=[1, 1, 1])
    assert (both_one.observed, both_one.chance) == (1.0, 1.0) and math.isnan(both_one.kappa)
    assert math.isnan(agreement_module.agreement(y=[0, 0], yhat=[0, 0]).kappa)
    opposite = agreement_module.agreement(y=[1, 1], yhat=[0, 0])
    assert (opposite.observed, opposite.chance, opposite.kappa) == (0.0, 0.0, 0.0)
    judge_constant = agreement_module.agreement(y=[1, 0, 1], yhat=[1, 1, 1])
    assert judge_constant.kappa == pytest.approx(cohen_kappa_score([1, 0, 1], [1, 1, 1]), abs=1e-15)
    nothing = agreement_module.agreement(y=[], yhat=[])
    assert math.isnan(nothing.kappa) and nothing.confusion == {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    with pytest.raises(ValueError, match="0/1"):
        agreement_module.agreement(y=[2, 0], yhat=[1, 0])


def test_effective_n_by_hand_and_degenerate_halfwidths():
    assert intervals.effective_n(theta=0.5, halfwidth=0.1, alpha=0.05) == pytest.approx(
        1.959963984540054**2 * 0.25 / 0.01, rel=1e-12
    )
    assert intervals.effective_n(theta=0.8, halfwidth=0.05, alpha=0.1) == pytest.approx(
        norm.ppf(0.95) ** 2 * 0.16 / 0.0025, rel=1e-12
    )
    assert math.isnan(intervals.effective_n(theta=0.5, halfwidth=0.0, alpha=0.05))
    assert math.isnan(intervals.effective_n(theta=0.5, halfwidth=math.nan, alpha=0.05))
    assert intervals.effective_n(theta=0.5, halfwidth=math.inf, alpha=0.05) == 0.0


def _normal_part(mean: float, sd: float, *, alpha: float = 0.05, n: int = 10) -> intervals.Interval:
    half = norm.ppf(1 - alpha / 2) * sd
    return intervals.Interval(mean=mean, lo=mean - half, hi=mean + half, method="x", alpha=alpha, n=n)


def _t_part(mean: float, sd: float, df: int, *, alpha: float = 0.05) -> intervals.Interval:
    half = student_t.ppf(1 - alpha / 2, df) * sd
    return intervals.Interval(
        mean=mean, lo=mean - half, hi=mean + half, method="x", alpha=alpha, n=df + 1, df=df
    )


def test_stratified_combine_weights_by_group_sizes_with_a_normal_quantile():
    parts = [(_normal_part(0.8, 0.05), 300), (_normal_part(0.5, 0.1, alpha=0.1), 100)]
    combined = intervals.stratified_combine(parts=parts, alpha=0.05, method="study")
    assert combined.mean == pytest.approx(0.75 * 0.8 + 0.25 * 0.5, rel=1e-14)
    sd = math.sqrt(0.75**2 * 0.05**2 + 0.25**2 * 0.1**2)
    assert combined.halfwidth == pytest.approx(Z95 * sd, rel=1e-12)
    assert (combined.df, combined.method, combined.n) == (None, "study", 20)


def test_stratified_combine_uses_satterthwaite_degrees_of_freedom_rounded_down():
    parts = [(_t_part(0.9, 0.04, 9), 200), (_t_part(0.6, 0.08, 4), 200), (_t_part(0.7, 0.1, 29), 0)]
    combined = intervals.stratified_combine(parts=parts, alpha=0.05, method="robust")
    v1, v2 = 0.25 * 0.04**2, 0.25 * 0.08**2
    df = math.floor((v1 + v2) ** 2 / (v1**2 / 9 + v2**2 / 4))
    assert combined.df == df == 6
    assert combined.mean == pytest.approx(0.75, rel=1e-14)
    assert combined.halfwidth == pytest.approx(student_t.ppf(0.975, df) * math.sqrt(v1 + v2), rel=1e-12)


def test_stratified_combine_propagates_missing_and_infinite_parts():
    nan_part = intervals.Interval(mean=math.nan, lo=math.nan, hi=math.nan, method="x", alpha=0.05, n=0)
    missing = intervals.stratified_combine(
        parts=[(_normal_part(0.5, 0.1), 10), (nan_part, 5)], alpha=0.05, method="m"
    )
    assert math.isnan(missing.mean) and missing.note == "1 of 2 groups have no estimate"
    one_cluster = intervals.Interval(mean=0.4, lo=-math.inf, hi=math.inf, method="x", alpha=0.05, n=3, df=0)
    infinite = intervals.stratified_combine(
        parts=[(_t_part(0.5, 0.1, 9), 10), (one_cluster, 10)], alpha=0.05, method="m"
    )
    assert infinite.mean == pytest.approx(0.45) and infinite.halfwidth == math.inf
    assert math.isnan(intervals.stratified_combine(parts=[], alpha=0.05, method="m").mean)


# Intervals of a rate stay in [0, 1]

# Wilson score intervals at 95% (statsmodels' proportion_confint(method="wilson") gives the same),
# and by hand: 0/5 is [0, (z^2/5) / (1 + z^2/5)] = [0, 0.4345].
WILSON_CASES = [
    (0, 5, (0.0, 0.43448246478317487)),
    (5, 5, (0.5655175352168252, 1.0)),
    (3, 10, (0.10779126740630104, 0.6032218525388546)),
]


@pytest.mark.parametrize(("ones", "n", "expected"), WILSON_CASES)
def test_wilson_is_the_score_interval_worked_by_hand(ones, n, expected):
    assert intervals.wilson(p=ones / n, n=n, q=Z95) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    z2 = Z95**2
    p = ones / n
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    assert expected == pytest.approx((max(0, centre - half), min(1, centre + half)), rel=1e-12, abs=1e-15)


DEGENERATE = [
    ([1.0] * 3, [1.0] * 3, [1.0] * 40),
    ([0.0] * 3, [0.0] * 3, [0.0] * 40),
    ([1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [1.0] * 40),
    ([0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0] * 39 + [1.0]),
    ([0.0, 0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0, 1.0], [0.0] * 60 + [1.0] * 2),
    ([1.0] * 11 + [0.0], [1.0] * 12, [1.0] * 200 + [0.0]),
]


@pytest.mark.parametrize(("y", "yhat", "unlabeled"), DEGENERATE)
def test_robust_intervals_never_leave_0_1_on_degenerate_inputs(y, yhat, unlabeled):
    clusters = np.arange(len(y))
    w = np.linspace(1.0, 3.0, len(y))
    intervals = [
        means.classical_mean(y=y, alpha=0.05, clusters=clusters),
        means.classical_mean(y=y, alpha=0.05, w=w, clusters=clusters),
        robust_ppi(y=y, yhat=yhat, yhat_unlabeled=unlabeled, alpha=0.05, clusters=clusters),
        robust_ppi(y=y, yhat=yhat, yhat_unlabeled=unlabeled, alpha=0.05, w=w, clusters=clusters),
        means.judge_mean(yhat_all=[*yhat, *unlabeled], alpha=0.05, bounded=True),
    ]
    for interval in intervals:
        assert 0 <= interval.lo <= interval.mean <= interval.hi <= 1, interval
        assert not interval.clipped
        if interval.hi - interval.lo > 0:
            assert interval.halfwidth > 0


def test_a_robust_interval_inside_0_1_is_the_t_interval_unchanged():
    y, yhat, unlabeled = arrays_of(CASES[1])
    interval = robust_ppi(y=y, yhat=yhat, yhat_unlabeled=unlabeled, alpha=0.05, lam=0.5)
    q = student_t.ppf(0.975, len(y) - 1)
    assert interval.lo > 0 and interval.hi < 1
    assert (interval.lo, interval.hi) == pytest.approx(
        (interval.mean - q * interval.se, interval.mean + q * interval.se), rel=1e-14
    )
    assert intervals.WILSON_NOTE not in interval.note and intervals.CUT_NOTE not in interval.note


def test_a_t_interval_leaving_0_1_becomes_wilson_at_the_effective_sample_size():
    # 1 zero in 8 labels, 8 clusters: 0.875 -/+ t_7 * se passes 1.
    y = [1.0] * 7 + [0.0]
    interval = means.classical_mean(y=y, alpha=0.05, clusters=list(range(8)))
    q = student_t.ppf(0.975, 7)
    variance = np.var(y, ddof=1) / 8
    assert 0.875 + q * math.sqrt(variance) > 1
    # p (1 - p) / variance is 7 here (ddof 1): never fewer than the 8 labels the estimate used.
    n_eff = max(0.875 * 0.125 / variance, 8)
    assert n_eff == 8
    wilson_lo, wilson_hi = intervals.wilson(p=0.875, n=n_eff, q=q)
    cut = (0.875 - q * math.sqrt(variance), 1.0)
    assert (interval.lo, interval.hi) == pytest.approx(
        (min(cut[0], wilson_lo), max(cut[1], wilson_hi)), rel=1e-12
    )
    assert interval.lo == pytest.approx(wilson_lo, rel=1e-12) and interval.lo < cut[0]
    assert interval.se == pytest.approx(math.sqrt(variance), rel=1e-12)
    assert interval.mean == 0.875 and interval.note == intervals.WILSON_NOTE


def test_an_estimate_very_near_a_bound_is_never_worth_fewer_labels_than_it_used():
    # A variance held up by a floor while p (1 - p) vanishes: p (1 - p) / variance is 0.02, and
    # Wilson's interval at 0.02 labels would be about [0.005, 1]. At the 20 labels used it is
    # Wilson's for 20 labels all equal to 1 at p: lower bound 20 p / (20 + q^2) to first order.
    q = 1.959963984540054
    mean, lo, hi, note = intervals.inside_unit(mean=0.9998, variance=0.01, q=q, n=20)
    wilson_lo, _ = intervals.wilson(p=0.9998, n=20, q=q)
    cut_lo = 0.9998 - q * 0.1
    assert (mean, hi, note) == (0.9998, 1.0, intervals.WILSON_NOTE)
    assert lo == pytest.approx(min(cut_lo, wilson_lo), rel=1e-12)
    assert 0.79 < lo < 0.81  # the cut normal interval's bound, not Wilson's at 0.02 labels
    without_floor, *_ = intervals.wilson(p=0.9998, n=0.9998 * 0.0002 / 0.01, q=q)
    assert without_floor < 0.01
    # An estimate a hair from 1 on 20 labels (Wilson's interval held at the 20 labels).
    robust = robust_ppi(y=[1.0] * 20, yhat=[1.0] * 19 + [0.0], yhat_unlabeled=[1.0] * 20, alpha=0.05)
    assert robust.mean > 0.97 and robust.lo > 0.75 and robust.hi == 1.0


def test_study_keeps_ppi_py_numbers_and_clips_only_what_is_shown():
    y = np.array([1.0, 1.0, 1.0, 0.0])
    yhat = np.array([1.0, 1.0, 1.0, 1.0])
    unlabeled = np.array([1.0] * 30 + [0.0] * 2)
    interval = study_ppi(y=y, yhat=yhat, yhat_unlabeled=unlabeled, alpha=0.05)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, unlabeled, alpha=0.05, lam=None)
    assert (interval.lo, interval.hi) == (float(lo[0]), float(hi[0]))
    assert interval.hi > 1 and interval.clipped
    assert (interval.shown_lo, interval.shown_hi) == (interval.lo, 1.0)
    classical = means.classical_mean(y=[0.0, 0.0, 0.0, 1.0], alpha=0.05)
    assert (
        classical.lo < 0
        and classical.clipped
        and (classical.shown_lo, classical.shown_hi) == (0.0, classical.hi)
    )
    inside = means.classical_mean(y=[0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0], alpha=0.05)
    assert not inside.clipped and (inside.shown_lo, inside.shown_hi) == (inside.lo, inside.hi)


def test_clip_bound_keeps_missing_and_infinite_bounds():
    assert math.isnan(intervals.clip_bound(None)) and math.isnan(intervals.clip_bound(math.nan))
    assert intervals.clip_bound(math.inf) == math.inf and intervals.clip_bound(-math.inf) == -math.inf
    assert (intervals.clip_bound(-0.2), intervals.clip_bound(0.3), intervals.clip_bound(1.01)) == (
        0.0,
        0.3,
        1.0,
    )
    one = means.classical_mean(y=[1.0], alpha=0.05)
    assert not one.clipped and math.isinf(one.shown_hi)


def test_judge_only_stays_ppi_py_for_the_study_and_bounded_for_robust():
    everything = np.array([0.0] * 199 + [1.0])
    study = means.judge_mean(yhat_all=everything, alpha=0.05)
    lo, hi = ppi_py.classical_mean_ci(everything, alpha=0.05)
    assert (study.lo, study.hi) == (float(lo), float(hi)) and study.lo < 0
    robust = means.judge_mean(yhat_all=everything, alpha=0.05, bounded=True)
    wilson_lo, wilson_hi = intervals.wilson(p=0.005, n=200, q=Z95)
    assert (robust.lo, robust.hi) == pytest.approx((0.0, max(wilson_hi, float(hi))), rel=1e-12, abs=1e-15)
    assert robust.hi == pytest.approx(wilson_hi, rel=1e-12) and wilson_hi > hi
    assert robust.note == intervals.WILSON_NOTE


def test_robust_stratified_combination_stays_in_0_1():
    parts = [
        (means.classical_mean(y=[1.0] * 5 + [0.0], alpha=0.05, clusters=list(range(6))), 100),
        (means.classical_mean(y=[1.0] * 6, alpha=0.05, clusters=list(range(6))), 300),
    ]
    combined = intervals.stratified_combine(parts=parts, alpha=0.05, method="s", bounded=True)
    assert 0 <= combined.lo < combined.mean < combined.hi <= 1
    raw = intervals.stratified_combine(parts=parts, alpha=0.05, method="s")
    assert raw.hi > 1 and raw.clipped and combined.se == pytest.approx(raw.se, rel=1e-14)


# Effective sample size


def test_effective_n_keeps_the_study_formula_without_reference():
    z = Z95
    assert intervals.effective_n(theta=0.3, halfwidth=0.1, alpha=0.05) == pytest.approx(
        z**2 * 0.21 / 0.01, rel=1e-12
    )


def test_effective_n_of_a_narrower_interval_is_never_below_the_labels_used():
    # A robust human-only interval of 30 labels, +/- 7 points near 1 (design effect, t quantile):
    # PPI++ at 99% +/- 5 points is narrower, yet the study formula calls it worth 15 labels.
    human = intervals.Interval(
        mean=0.96, lo=0.86, hi=1.0, method=means.CLASSICAL_ROBUST, alpha=0.05, n=30, df=29
    )
    formula = intervals.effective_n(theta=0.99, halfwidth=0.05, alpha=0.05)
    assert formula == pytest.approx(Z95**2 * 0.99 * 0.01 / 0.05**2, rel=1e-12) and formula < 30
    worth = intervals.effective_n(theta=0.99, halfwidth=0.05, alpha=0.05, reference=human)
    assert worth == pytest.approx(30 * (0.07 / 0.05) ** 2, rel=1e-12)
    assert worth > 30
    # As wide as the human-only interval: worth exactly its labels.
    same = intervals.effective_n(theta=0.99, halfwidth=0.07, alpha=0.05, reference=human)
    assert same == pytest.approx(30, rel=1e-12)
    # A reference without a usable half-width falls back to the formula.
    one = means.classical_mean(y=[1.0], alpha=0.05)
    assert intervals.effective_n(theta=0.3, halfwidth=0.1, alpha=0.05, reference=one) == pytest.approx(
        Z95**2 * 0.21 / 0.01, rel=1e-12
    )
