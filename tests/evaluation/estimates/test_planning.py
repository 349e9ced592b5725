"""evaluation.estimates.planning: projected half-widths, labels needed, the judge-quality curve."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from evaluation.estimates import planning
from evaluation.estimates.report import GroupEstimate, Report, compute_report
from inference import intervals
from inference.estimators import means
from inference.estimators.ppi import robust_ppi, study_ppi
from inference.reliability import agreement as agreement_module
from tests.judged import study_campaign


def binary_arrays(
    *, seed: int, n: int, N: int, prevalence: float, agreement: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < prevalence).astype(float)
    yhat = np.where(rng.random(n) < agreement, y, 1 - y)
    y_rest = rng.random(N) < prevalence
    yhat_unlabeled = np.where(rng.random(N) < agreement, y_rest, ~y_rest).astype(float)
    return y, yhat, yhat_unlabeled


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_projection_at_the_current_n_is_the_study_ppi_halfwidth(seed):
    y, yhat, yhat_unlabeled = binary_arrays(seed=seed, n=40, N=3000, prevalence=0.8, agreement=0.9)
    study = study_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05)
    projected = planning.ppi_halfwidths(
        y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, n_labeled=[40], alpha=0.05
    )
    assert projected[0] == pytest.approx(study.halfwidth, rel=1e-10)


def test_projected_halfwidth_shrinks_as_labels_are_added():
    y, yhat, yhat_unlabeled = binary_arrays(seed=3, n=30, N=2000, prevalence=0.7, agreement=0.85)
    widths = planning.ppi_halfwidths(
        y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, n_labeled=[30, 60, 120, 500, 2030], alpha=0.05
    )
    assert np.all(np.diff(widths) < 0)
    # With every unit labeled, lambda is 0 and the projection is the classical interval.
    assert widths[-1] == pytest.approx(norm.ppf(0.975) * np.std(y) / math.sqrt(2030), rel=1e-12)


def test_labels_needed_is_the_first_total_reaching_the_target():
    y, yhat, yhat_unlabeled = binary_arrays(seed=4, n=30, N=5000, prevalence=0.75, agreement=0.9)
    target = 0.04
    extra = planning.labels_needed(
        y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, target_halfwidth=target, alpha=0.05
    )
    assert extra > 0
    at, before = planning.ppi_halfwidths(
        y=y,
        yhat=yhat,
        yhat_unlabeled=yhat_unlabeled,
        n_labeled=[30 + extra, 29 + extra],
        alpha=0.05,
        pseudo=planning.PILOT_PSEUDO,
    )
    assert at <= target < before


def test_the_projection_smooths_a_small_pilot_and_the_interval_does_not():
    # 30 labels, one disagreement in a pilot of a good judge: the projection reads the moments
    # with an eighth of an observation in each cell of the 2 x 2 table, by hand.
    y = np.array([1.0] * 20 + [0.0] * 10)
    yhat = y.copy()
    yhat[0] = 0.0
    unlabeled = np.array([1.0] * 600 + [0.0] * 400)
    weights = np.array([1.0] * 30 + [0.125] * 4)
    ya, ha = np.concatenate([y, [0, 0, 1, 1]]), np.concatenate([yhat, [0, 1, 0, 1]])
    my, mh = np.average(ya, weights=weights), np.average(ha, weights=weights)
    var_y = np.average((ya - my) ** 2, weights=weights)
    var_h = np.average((ha - mh) ** 2, weights=weights)
    cov = np.average((ya - my) * (ha - mh), weights=weights)
    pool = np.var(np.concatenate([yhat, unlabeled]), ddof=1)
    n, N = 30, 1000
    lam = min(1.0, max(0.0, cov / ((1 + n / N) * pool)))
    by_hand = 1.959963984540054 * math.sqrt(
        lam**2 * np.var(unlabeled) / N + (var_y - 2 * lam * cov + lam**2 * var_h) / n
    )
    smoothed, plain = (
        planning.ppi_halfwidths(
            y=y, yhat=yhat, yhat_unlabeled=unlabeled, n_labeled=[30], alpha=0.05, pseudo=p
        )[0]
        for p in (planning.PILOT_PSEUDO, 0.0)
    )
    assert smoothed == pytest.approx(by_hand)
    assert smoothed > plain
    # Without pseudo-observations the projection at the current n is the study interval.
    study = study_ppi(y=y, yhat=yhat, yhat_unlabeled=unlabeled, alpha=0.05)
    assert plain == pytest.approx(study.halfwidth, rel=1e-6)


def test_labels_needed_is_zero_when_the_target_is_already_met():
    y, yhat, yhat_unlabeled = binary_arrays(seed=5, n=50, N=1000, prevalence=0.6, agreement=0.9)
    current = study_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=0.05).halfwidth
    needed = planning.labels_needed(
        y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, target_halfwidth=current * 1.01, alpha=0.05
    )
    assert needed == 0


def test_a_good_judge_needs_fewer_labels_than_humans_alone():
    y, yhat, yhat_unlabeled = binary_arrays(seed=6, n=30, N=20000, prevalence=0.8, agreement=0.95)
    with_judge = planning.labels_needed(
        y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, target_halfwidth=0.03, alpha=0.05
    )
    alone = planning.classical_labels_needed(y=y, target_halfwidth=0.03, alpha=0.05)
    assert 0 < with_judge < alone


def test_classical_labels_needed_by_hand():
    y = np.array([1.0] * 8 + [0.0] * 2)  # Var = 0.16
    z = norm.ppf(0.975)
    expected = math.ceil(z**2 * 0.16 / 0.05**2) - 10
    assert planning.classical_labels_needed(y=y, target_halfwidth=0.05, alpha=0.05) == expected == 236
    # Fewer than 2 labels: worst-case variance 1/4.
    assert planning.classical_labels_needed(y=[], target_halfwidth=0.1, alpha=0.05) == math.ceil(
        z**2 * 0.25 / 0.01
    )


def test_an_unreachable_target_returns_the_classical_count_beyond_the_pool():
    y, yhat, yhat_unlabeled = binary_arrays(seed=7, n=20, N=100, prevalence=0.5, agreement=0.8)
    needed = planning.labels_needed(
        y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, target_halfwidth=0.01, alpha=0.05
    )
    assert needed == planning.classical_labels_needed(y=y, target_halfwidth=0.01, alpha=0.05)
    assert needed > len(yhat_unlabeled)


def test_planning_rejects_bad_targets():
    with pytest.raises(ValueError, match="target_halfwidth"):
        planning.classical_labels_needed(y=[1.0, 0.0], target_halfwidth=0.0, alpha=0.05)
    with pytest.raises(ValueError, match="n_labeled"):
        planning.ppi_halfwidths(
            y=[1.0, 0.0], yhat=[1.0, 0.0], yhat_unlabeled=[1.0], n_labeled=[4], alpha=0.05
        )


def test_agreement_curve_is_seeded_and_a_better_judge_gives_narrower_intervals():
    agreements = [0.5, 0.7, 0.9, 0.99]
    kwargs = dict(n=40, N=5000, prevalence=0.8, agreements=agreements, alpha=0.05, seed=12, reps=300)
    curve = planning.agreement_curve(**kwargs)
    assert curve == planning.agreement_curve(**kwargs)
    assert [row["agreement"] for row in curve] == agreements
    widths = [row["halfwidth"] for row in curve]
    assert widths == sorted(widths, reverse=True)
    assert [row["effective_n_median"] for row in curve] == sorted(row["effective_n_median"] for row in curve)
    # A coin-flip judge buys nothing: PPI++ is about the classical interval.
    assert curve[0]["halfwidth"] == pytest.approx(curve[0]["classical_halfwidth"], rel=0.05)
    assert curve[-1]["halfwidth"] < curve[-1]["classical_halfwidth"] / 2
    assert all(0 <= row["lam"] <= 1 and 0.7 < row["coverage"] <= 1 for row in curve)


def test_agreement_curve_matches_study_ppi_on_one_replication():
    # One replication with N = 1 is fully determined by the labeled arrays and one judge label.
    rows = planning.agreement_curve(n=25, N=1, prevalence=0.6, agreements=[0.8], alpha=0.1, seed=3, reps=1)
    rng = np.random.default_rng(3)
    y = (rng.random((1, 25)) < 0.6).astype(float)[0]
    yhat = np.where(rng.random((1, 25)) < 0.8, y, 1 - y)[0]
    ones = rng.binomial(1, 0.6 * 0.8 + 0.4 * 0.2, size=1)
    study = study_ppi(y=y, yhat=yhat, yhat_unlabeled=ones.astype(float), alpha=0.1)
    assert rows[0]["halfwidth"] == pytest.approx(study.halfwidth, rel=1e-10)
    assert rows[0]["lam"] == pytest.approx(study.lam, rel=1e-10, abs=1e-15)


def test_group_arrays_rebuild_the_groups_counts_and_plan_theme_plans_on_them(db):
    """A report group's confusion counts and judge totals give arrays with the same moments as
    the real ones, so the planner's answer is the one on the real arrays."""
    _, criterion, judge, _ = study_campaign()
    report = compute_report(criterion=criterion, judge=judge, method="study")
    group = report.themes[0]
    y, yhat, unlabeled = planning.group_arrays(group=group)
    assert y.size == yhat.size == group.n_paired and unlabeled.size == group.n_judge - group.n_paired
    confusion = group.agreement.confusion
    assert y.sum() == confusion["tp"] + confusion["fn"] and yhat.sum() == confusion["tp"] + confusion["fp"]
    assert (yhat.sum() + unlabeled.sum()) / group.n_judge == pytest.approx(group.judge.mean)
    plan = planning.plan_theme(group=group, target_halfwidth=0.1, alpha=0.05)
    assert plan.theme == group.theme and plan.n == group.n_paired and unlabeled.size == plan.N
    assert plan.needed == planning.labels_needed(
        y=y, yhat=yhat, yhat_unlabeled=unlabeled, target_halfwidth=0.1, alpha=0.05
    )
    assert plan.classical == planning.classical_labels_needed(y=y, target_halfwidth=0.1, alpha=0.05)
    assert plan.reachable == (plan.needed <= plan.N)


def test_a_group_without_paired_units_has_no_plan_and_the_curve_needs_two():
    nan = intervals.Interval(mean=math.nan, lo=math.nan, hi=math.nan, method="m", alpha=0.05, n=0)

    empty = GroupEstimate(
        theme="RH", difficulty=None, method="study", size=3, n_human=0, n_paired=0, n_judge=3,
        human=nan, judge=nan, ppi=nan, agreement=None, effective_n=math.nan, missing_judgments=[],
        weighted=False,
    )  # fmt: skip
    plan = planning.plan_theme(group=empty, target_halfwidth=0.05, alpha=0.05)
    assert (plan.needed, plan.classical, plan.N, plan.reachable) == (None, None, None, False)
    report = Report(
        campaign="c", criterion="relevance", level="answer", judge="j", alpha=0.05, method="study",
        sample_id=None, themes=[empty], overall=empty,
    )  # fmt: skip
    assert planning.report_curve(report=report) is None


def test_report_curve_is_the_seeded_agreement_curve_at_the_reports_sizes(db):
    _, criterion, judge, _ = study_campaign()
    report = compute_report(criterion=criterion, judge=judge, method="study")
    curve = planning.report_curve(report=report)
    overall = report.overall
    assert (curve.n, curve.N) == (overall.n_paired, overall.n_judge - overall.n_paired)
    assert curve.rows == planning.agreement_curve(
        n=curve.n,
        N=curve.N,
        prevalence=curve.prevalence,
        agreements=planning.CURVE_AGREEMENTS,
        alpha=0.05,
        seed=planning.CURVE_SEED,
        reps=planning.CURVE_REPS,
    )


def _robust_group(*, y, yhat, unlabeled, method="robust") -> GroupEstimate:
    clusters = np.arange(len(y))
    if method == "robust":
        human = means.classical_mean(y=y, alpha=0.05, clusters=clusters)
        ppi = robust_ppi(y=y, yhat=yhat, yhat_unlabeled=unlabeled, alpha=0.05, clusters=clusters)
    else:
        human = means.classical_mean(y=y, alpha=0.05)
        ppi = study_ppi(y=y, yhat=yhat, yhat_unlabeled=unlabeled, alpha=0.05)
    return GroupEstimate(
        theme="Finance", difficulty=None, method=method, size=len(y) + len(unlabeled), n_human=len(y),
        n_paired=len(y), n_judge=len(y) + len(unlabeled), human=human,
        judge=means.judge_mean(yhat_all=[*yhat, *unlabeled], alpha=0.05), ppi=ppi,
        agreement=agreement_module.agreement(y=y, yhat=yhat), effective_n=math.nan, missing_judgments=[],
        weighted=False,
    )  # fmt: skip


def test_a_theme_wider_than_the_target_never_needs_zero_more_labels():
    # 12 labels all 1, the judge agreeing with each: the study formula sees no variance and
    # projects a zero half-width ("0 more labels"), like ppi_py's own zero-width interval, while
    # the robust interval shown keeps a variance floor and is wider than +/- 5 points.
    y = np.ones(12)
    group = _robust_group(y=y, yhat=y, unlabeled=np.array([1.0] * 280 + [0.0] * 20))
    assert group.ppi.halfwidth > 0.05 and group.human.halfwidth > 0.05
    unlabeled = np.array([1.0] * 280 + [0.0] * 20)
    plain = planning.ppi_halfwidths(y=y, yhat=y, yhat_unlabeled=unlabeled, n_labeled=[12], alpha=0.05)
    assert plain[0] == 0  # the study projection alone: the bug
    plan = planning.plan_theme(group=group, target_halfwidth=0.05, alpha=0.05)
    assert plan.needed >= 1 and plan.classical >= 1
    # Anchored on the shown half-width h: the smoothed projection scaled to h at n = 12, the
    # first total whose projection reaches the target; at least what 1 / sqrt(n) alone needs
    # (the judge's own variance does not shrink with more labels).
    totals = np.arange(12, 313)
    curve = planning.ppi_halfwidths(
        y=y, yhat=y, yhat_unlabeled=unlabeled, n_labeled=totals, alpha=0.05, pseudo=planning.PILOT_PSEUDO
    )
    anchored = curve * group.ppi.halfwidth / curve[0]
    assert plan.needed == int(totals[np.flatnonzero(anchored <= 0.05 * (1 + 1e-9))[0]]) - 12
    assert plan.needed >= math.ceil(12 * (group.ppi.halfwidth / 0.05) ** 2 - 1e-9) - 12
    assert plan.classical == math.ceil(12 * (group.human.halfwidth / 0.05) ** 2 - 1e-9) - 12


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("method", ["robust", "study"])
def test_plans_agree_with_the_interval_shown(seed, method):
    y, yhat, unlabeled = binary_arrays(seed=seed, n=20, N=400, prevalence=0.8, agreement=0.9)
    group = _robust_group(y=y, yhat=yhat, unlabeled=unlabeled, method=method)
    for target in (0.02, 0.05, 0.1, 0.2, 0.5):
        plan = planning.plan_theme(group=group, target_halfwidth=target, alpha=0.05)
        if group.ppi.halfwidth > target:
            assert plan.needed >= 1
        else:
            assert plan.needed == 0
        if group.human.halfwidth > target:
            assert plan.classical >= 1


def test_anchored_projection_equals_the_shown_halfwidth_at_the_current_n():
    y, yhat, unlabeled = binary_arrays(seed=5, n=25, N=300, prevalence=0.7, agreement=0.85)
    group = _robust_group(y=y, yhat=yhat, unlabeled=unlabeled)
    h = group.ppi.halfwidth
    # A target just below the shown half-width needs one label or a few, never zero; just above, zero.
    assert planning.plan_theme(group=group, target_halfwidth=h * 0.999, alpha=0.05).needed >= 1
    assert planning.plan_theme(group=group, target_halfwidth=h * 1.001, alpha=0.05).needed == 0
