"""evaluation.estimates.small_themes: a report's themes shrunk toward the judge, worked by hand, equal to
shrink_to_judge on the report's own arrays, and refused where it is not offered."""

from __future__ import annotations

import math

import pytest

from evaluation.errors import EstimateError
from evaluation.estimates import small_themes
from evaluation.estimates.report import GroupEstimate, Report, compute_report
from inference import intervals
from inference.estimators import means
from inference.estimators.ppi import PPI, PPI_ROBUST_CROSSFIT
from inference.estimators.shrinkage import PPI_SHRUNK, critical_value, shrink_to_judge
from tests.judged import judged_campaign


def interval(mean: float, se: float | None = None, *, method: str = PPI_ROBUST_CROSSFIT, n: int = 20):
    half = 1.96 * se if se is not None else math.inf
    return intervals.Interval(
        mean=mean, lo=mean - half, hi=mean + half, method=method, alpha=0.05, n=n, N=100, se=se
    )


def group(theme: str, *, ppi: intervals.Interval, judge: float) -> GroupEstimate:
    return GroupEstimate(
        theme=theme,
        difficulty=None,
        method="robust",
        size=120,
        n_human=ppi.n,
        n_paired=ppi.n,
        n_judge=120,
        human=interval(ppi.mean, 0.1, method=means.CLASSICAL_ROBUST),
        judge=intervals.Interval(
            mean=judge, lo=judge - 0.01, hi=judge + 0.01, method=means.JUDGE_ONLY, alpha=0.05, n=120
        ),
        ppi=ppi,
        agreement=None,
        effective_n=math.nan,
        missing_judgments=[],
        weighted=False,
    )


def report(*groups: GroupEstimate, method: str = "robust") -> Report:
    overall = groups[0]
    return Report(
        campaign="c",
        criterion="relevance",
        level="answer",
        judge="imported",
        alpha=0.05,
        method=method,
        sample_id=None,
        themes=list(groups),
        overall=overall,
    )


def test_two_themes_worked_by_hand():
    # Differences 0.2 and -0.1; squared minus se^2: 0.04 - 0.01 = 0.03 and 0.01 - 0.0025 = 0.0075:
    # tau^2 = 0.01875, above the lower bound 2 mean(se^4) / (k mean(se^2)) = 0.0085.
    shrunk = small_themes.shrink_report(
        report=report(
            group("Finance", ppi=interval(0.7, 0.1), judge=0.5),
            group("IT", ppi=interval(0.6, 0.05), judge=0.7),
        )
    )
    assert shrunk.tau2 == pytest.approx(0.01875)
    finance, it = shrunk.themes
    assert finance.weight == pytest.approx(0.01875 / 0.02875)  # 0.652
    assert it.weight == pytest.approx(0.01875 / 0.02125)  # 0.882
    assert finance.shrunk.mean == pytest.approx(0.5 + 0.01875 / 0.02875 * 0.2)  # 0.630
    assert it.shrunk.mean == pytest.approx(0.7 - 0.01875 / 0.02125 * 0.1)  # 0.612
    chi = critical_value(0.01 / 0.01875, 0.05)
    assert finance.shrunk.halfwidth == pytest.approx(chi * finance.weight * 0.1)
    assert finance.shrunk.method == PPI_SHRUNK and finance.shrunk.alpha == 0.05
    assert (finance.standard_error, finance.judge_mean) == (0.1, 0.5)


def test_the_lower_bound_holds_tau2_up_when_the_themes_agree_with_the_judge_by_chance():
    # Both differences equal their standard errors: the moment estimate is 0, the bound
    # 2 (1e-4 + 6.25e-6) / 2 / (2 (0.01 + 0.0025) / 2) = 0.0085 holds.
    shrunk = small_themes.shrink_report(
        report=report(
            group("Finance", ppi=interval(0.6, 0.1), judge=0.5),
            group("IT", ppi=interval(0.8, 0.05), judge=0.75),
        )
    )
    assert shrunk.tau2 == pytest.approx(0.0085)
    assert shrunk.themes[0].shrunk.mean == pytest.approx(0.5 + 0.0085 / 0.0185 * 0.1)


def test_a_theme_without_a_standard_error_is_left_as_it_is_with_its_reason():
    themes = (
        group("Finance", ppi=interval(0.7, 0.1), judge=0.5),
        group("IT", ppi=interval(0.6, 0.05), judge=0.7),
        group("Legal", ppi=interval(1.0, None, n=1), judge=0.9),  # one label: unbounded
        group(
            "RH",
            ppi=intervals.nan_interval(method=PPI_ROBUST_CROSSFIT, alpha=0.05, n=0, note="x"),
            judge=0.4,
        ),
    )
    shrunk = small_themes.shrink_report(report=report(*themes))
    assert shrunk.shrunk_count == 2
    legal, rh = shrunk.of("Legal"), shrunk.of("RH")
    assert legal.shrunk is None and str(legal.reason) == str(small_themes.NO_STANDARD_ERROR)
    assert rh.shrunk is None and str(rh.reason) == str(small_themes.NO_ESTIMATE)
    # The two others exactly as without them.
    alone = small_themes.shrink_report(report=report(*themes[:2]))
    assert shrunk.of("IT").shrunk == alone.of("IT").shrunk


@pytest.mark.parametrize("count", [0, 1])
def test_fewer_than_two_themes_with_a_standard_error_is_refused_on_the_shrinkage_field(count):
    themes = [group("Finance", ppi=interval(0.7, 0.1), judge=0.5)][:count]
    themes.append(group("IT", ppi=interval(0.6, 0.0), judge=0.7))  # se 0
    with pytest.raises(EstimateError) as caught:
        small_themes.shrink_report(report=report(*themes))
    assert caught.value.field == "shrinkage"
    assert str(caught.value).startswith("shrinkage: needs at least 2 themes")
    assert f"this report has {count}" in str(caught.value)


def test_a_method_whose_estimate_is_not_ppi_and_a_criterion_with_categories_are_refused():
    with pytest.raises(
        EstimateError, match=r"^shrinkage: offered only with a method whose per-theme estimate is PPI\+\+"
    ):
        small_themes.check_shrinkage(method="human-only", categorical=False)
    with pytest.raises(EstimateError, match=r"^shrinkage: not offered for a criterion with categories"):
        small_themes.check_shrinkage(method="robust", categorical=True)
    for method in ("robust", "study"):
        small_themes.check_shrinkage(method=method, categorical=False)


@pytest.mark.parametrize("method", ["robust", "study"])
def test_equals_shrink_to_judge_on_the_reports_own_arrays(method, campaign):
    criterion, judge, _ = judged_campaign(campaign)
    computed = compute_report(criterion=criterion, judge=judge, method=method)
    expected = shrink_to_judge(
        estimates=[g.ppi.mean for g in computed.themes],
        standard_errors=[intervals.standard_error(g.ppi) for g in computed.themes],
        judge_means=[g.judge.mean for g in computed.themes],
        alpha=0.05,
    )
    shrunk = small_themes.shrink_report(report=computed)
    assert [row.theme for row in shrunk.themes] == [g.theme for g in computed.themes]
    for row, s in zip(shrunk.themes, expected, strict=True):
        assert (row.shrunk.mean, row.shrunk.lo, row.shrunk.hi, row.weight) == (s.mean, s.lo, s.hi, s.weight)
    assert shrunk.tau2 == expected[0].tau2


def test_a_study_estimate_outside_zero_one_is_shrunk_from_inside_and_never_inverted():
    # The study method's PPI++ mean may leave [0, 1] (ppi_py does not clip): -0.06 with the
    # judge at 0 is shrunk as 0, so the interval stays ordered and inside [0, 1].
    shrunk = small_themes.shrink_report(
        report=report(
            group("Finance", ppi=interval(-0.06, 0.01, method=PPI), judge=0.0),
            group("IT", ppi=interval(0.6, 0.05, method=PPI), judge=0.7),
            method="study",
        )
    )
    finance = shrunk.of("Finance").shrunk
    assert 0.0 <= finance.lo <= finance.mean <= finance.hi <= 1.0
    assert finance.mean == pytest.approx(0.0)
