"""The interval contract, property-tested: whatever the labels, every estimator, comparison and
the gate give an interval that is never inverted, holds its estimate, and (shown) stays within
[0, 1] for a rate and [-1, 1] for a difference. Hypothesis drives them through the edge cases
that hurt: all labels equal, one label, an estimate past a bound, zero variance, weights near 0,
one cluster, a constant judge."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation.estimates.report import GroupEstimate, Report
from evaluation.reports import gate
from inference import intervals, paired
from inference.estimators import means, ppi, sequential, shrinkage
from inference.estimators.multi_ppi import JudgeTerm, multi_ppi
from inference.estimators.weighted_ppi import weighted_ppi

ALPHAS = st.sampled_from([0.01, 0.05, 0.1, 0.5])
# Design weights from 1 to a million: a unit drawn with probability near 0 weighs near infinity.
WEIGHTS = st.floats(min_value=1.0, max_value=1e6)
PROFILE = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def holds(interval: intervals.Interval, *, bounds: tuple[float, float] = (0.0, 1.0)) -> None:
    """The contract, as every page, download and gate reads an interval."""
    if math.isnan(interval.mean):
        return
    assert interval.lo <= interval.mean <= interval.hi, interval
    low, high = bounds
    shown = (interval.shown_lo, interval.shown_mean, interval.shown_hi)
    finite = [value for value in shown if math.isfinite(value)]
    assert all(low <= value <= high for value in finite), interval
    if all(math.isfinite(value) for value in shown):
        assert shown[0] <= shown[1] <= shown[2], interval


@st.composite
def labeled(draw, *, least: int = 0, most: int = 40):
    """Human labels, the judge's on the same units (agreeing with a drawn rate, or constant),
    answers as clusters (one answer holding every unit, or one each), design weights."""
    n = draw(st.integers(min_value=least, max_value=most))
    y = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    kind = draw(st.sampled_from(["agrees", "constant", "random"]))
    if kind == "agrees":
        yhat = list(y)
    elif kind == "constant":
        yhat = [draw(st.integers(0, 1))] * n
    else:
        yhat = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    clusters = draw(st.sampled_from(["one", "each", "pairs"]))
    answers = (
        [0] * n if clusters == "one" else list(range(n)) if clusters == "each" else [i // 2 for i in range(n)]
    )
    w = draw(st.lists(WEIGHTS, min_size=n, max_size=n))
    N = draw(st.integers(min_value=0, max_value=200))
    ones = draw(st.integers(min_value=0, max_value=N))
    return np.array(y, float), np.array(yhat, float), np.array(answers), np.array(w), N, ones


@PROFILE
@given(data=labeled(), alpha=ALPHAS, weighted=st.booleans())
def test_human_only_and_judge_only(data, alpha, weighted):
    y, _yhat, answers, w, N, ones = data
    holds(means.classical_mean(y=y, alpha=alpha))
    holds(means.classical_mean(y=y, alpha=alpha, w=w if weighted else None, clusters=answers))
    judge = np.repeat([1.0, 0.0], [ones, N - ones])
    holds(means.judge_mean(yhat_all=judge, alpha=alpha))
    holds(means.judge_mean(yhat_all=judge, alpha=alpha, bounded=True))


@PROFILE
@given(data=labeled(), alpha=ALPHAS, weighted=st.booleans(), lam=st.one_of(st.none(), st.floats(0, 1)))
def test_ppi_study_and_robust(data, alpha, weighted, lam):
    y, yhat, answers, w, N, ones = data
    unlabeled = np.repeat([1.0, 0.0], [ones, N - ones])
    holds(ppi.study_ppi(y=y, yhat=yhat, yhat_unlabeled=unlabeled, alpha=alpha))
    holds(
        ppi.robust_ppi(
            y=y,
            yhat=yhat,
            yhat_unlabeled=unlabeled,
            alpha=alpha,
            w=w if weighted else None,
            clusters=answers,
            lam=lam,
            lam_method="crossfit" if lam is None else "fixed",
        )
    )
    # Beyond the campaign, questions as clusters: the labeled units' questions and the unlabeled
    # ones' (several per question, some questions with no label).
    holds(
        ppi.robust_ppi(
            y=y,
            yhat=yhat,
            yhat_unlabeled=unlabeled,
            alpha=alpha,
            w=w if weighted else None,
            clusters=answers // 3,
            unlabeled_clusters=np.arange(N) % 7,
            lam=lam,
            lam_method="crossfit" if lam is None else "fixed",
            finite=False,
        )
    )


@PROFILE
@given(
    data=labeled(least=1),
    alpha=ALPHAS,
    confidence=st.floats(0.0, 1.0),
    pi=st.floats(1e-4, 1.0),
    judge_mean=st.one_of(st.none(), st.floats(0.0, 1.0)),
    spread=st.booleans(),
)
def test_inverse_probability_ppi(data, alpha, confidence, pi, judge_mean, spread):
    y, _yhat, _answers, w, N, _ones = data
    n = y.shape[0]
    # Unequal probabilities and confidences too: a weight of a million among weights of 1.
    probabilities = np.minimum(1.0, pi * w / w.max()) if spread else np.full(n, pi)
    c = np.clip(confidence + (y - 0.5) * 0.3, 0, 1) if spread else np.full(n, confidence)
    holds(
        weighted_ppi(
            y=y,
            confidence=c,
            pi=np.maximum(probabilities, 1e-9),
            confidence_all=np.full(max(N, n), confidence),
            judge_mean=judge_mean,
            alpha=alpha,
        )
    )


@PROFILE
@given(
    mean=st.floats(-1.0, 2.0),
    variance=st.floats(0.0, 1.0),
    alpha=ALPHAS,
    df=st.one_of(st.none(), st.integers(1, 50)),
    n=st.integers(0, 500),
)
def test_an_interval_built_from_a_variance_past_a_bound(mean, variance, alpha, df, n):
    """An estimate past a bound by more than its half-width (1.3 with a small variance) once gave
    lo 1.1 > hi 1.0, shown [100%, 100%]; no estimate past a bound is ever [1, 1] from a few
    labels."""
    interval = intervals.from_variance(
        mean=mean, variance=variance, alpha=alpha, df=df, method="m", n=n, N=0, bounded=True
    )
    holds(interval)
    if 1 <= n <= 100 and mean > 1 and mean - math.sqrt(variance) * intervals.quantile(alpha=alpha, df=df) > 1:
        assert interval.lo < 1


def test_the_estimate_past_one_by_more_than_its_half_width_of_the_issue():
    interval = intervals.from_variance(
        mean=1.3, variance=0.01, alpha=0.05, df=None, method="m", n=30, N=0, bounded=True
    )
    assert interval.mean == 1.0 and interval.hi == 1.0
    assert interval.lo == pytest.approx(min(1 - 1.959964 * 0.1, 30 / (30 + 1.959964**2)), rel=1e-5)


@PROFILE
@given(
    parts=st.lists(
        st.tuples(
            st.floats(-0.5, 1.5),
            st.floats(0.0, 0.3),
            st.integers(0, 1000),
            st.one_of(st.none(), st.integers(1, 30)),
        ),
        min_size=1,
        max_size=6,
    ),
    alpha=ALPHAS,
    bounded=st.booleans(),
)
def test_intervals_combined_over_strata(parts, alpha, bounded):
    built = [
        (
            intervals.from_variance(
                mean=m, variance=v, alpha=alpha, df=df, method="m", n=5, N=0, bounded=True
            ),
            size,
        )
        for m, v, size, df in parts
    ]
    holds(intervals.stratified_combine(parts=built, alpha=alpha, method="stratified m", bounded=bounded))


@PROFILE
@given(
    left=labeled(least=1), right=labeled(least=1), alpha=ALPHAS, method=st.sampled_from(["robust", "study"])
)
def test_versions_compared_by_question_and_as_independent_samples(left, right, alpha, method):
    linears = []
    for y, yhat, answers, w, N, ones in (left, right):
        questions = [f"q{answer % 4}" for answer in answers]
        # Every judged unit, the labeled ones (counted by question) and N more in q0.
        judged: dict[str, tuple[int, int]] = {}
        for question, value in zip(questions, yhat, strict=True):
            count, found = judged.get(question, (0, 0))
            judged[question] = (count + 1, found + int(value))
        count, found = judged.get("q0", (0, 0))
        judged["q0"] = (count + N, found + ones)
        weights = w if method == "robust" else None
        linears.append(
            (
                paired.mean_linear(
                    values=y,
                    questions=questions,
                    answers=answers,
                    w=weights,
                    alpha=alpha,
                    floored=method == "robust",
                ),
                paired.ppi_linear(
                    y=y,
                    yhat=yhat,
                    questions=questions,
                    answers=answers,
                    judged=judged,
                    w=weights,
                    method=method,
                    alpha=alpha,
                ),
            )
        )
    for a, b in zip(linears[0], linears[1], strict=True):
        diff = paired.paired_difference(left=a, right=b, alpha=alpha)
        if diff is not None and math.isfinite(diff.se):
            assert -1 <= diff.lo <= diff.estimate <= diff.hi <= 1
            assert diff.se**2 >= a.floor + b.floor - 1e-15
    y_l, yhat_l, answers_l, _, N_l, ones_l = left
    y_r, yhat_r, answers_r, _, N_r, ones_r = right
    one = ppi.robust_ppi(
        y=y_l,
        yhat=yhat_l,
        yhat_unlabeled=np.repeat([1.0, 0.0], [ones_l, N_l - ones_l]),
        alpha=alpha,
        clusters=answers_l,
    )
    other = ppi.robust_ppi(
        y=y_r,
        yhat=yhat_r,
        yhat_unlabeled=np.repeat([1.0, 0.0], [ones_r, N_r - ones_r]),
        alpha=alpha,
        clusters=answers_r,
    )
    independent = paired.difference(left=one, right=other, alpha=alpha)
    if independent is not None:
        holds(independent, bounds=(-1.0, 1.0))


@PROFILE
@given(
    themes=st.lists(
        st.tuples(st.floats(-0.2, 1.2), st.floats(1e-4, 0.5), st.floats(0.0, 1.0)), min_size=2, max_size=8
    ),
    alpha=ALPHAS,
)
def test_small_themes_shrunk_toward_the_judge(themes, alpha):
    shrunk = shrinkage.shrink_to_judge(
        estimates=[t[0] for t in themes],
        standard_errors=[t[1] for t in themes],
        judge_means=[t[2] for t in themes],
        alpha=alpha,
    )
    for row in shrunk:
        assert 0 <= row.lo <= row.mean <= row.hi <= 1


@PROFILE
@given(
    y=st.lists(st.integers(0, 1), min_size=1, max_size=60),
    confidence=st.floats(0.01, 0.99),
    batch=st.integers(1, 20),
    alpha=ALPHAS,
)
def test_anytime_looks(y, confidence, batch, alpha):
    N = 100
    q = np.full(N, 1 / N)
    looks = sequential.anytime_ppi(
        units=np.arange(len(y)) % N,
        y=y,
        q=q,
        confidence_all=np.full(N, confidence),
        batch=batch,
        alpha=alpha,
        planned=len(y),
        variance_guess=0.25,
    )
    for look in looks:
        assert 0 <= look.lo <= min(1.0, max(0.0, look.mean)) <= look.hi <= 1


def _group(theme: str, interval: intervals.Interval, *, n: int) -> GroupEstimate:
    return GroupEstimate(
        theme=theme,
        difficulty=None,
        method="robust",
        size=100,
        n_human=n,
        n_paired=n,
        n_judge=100,
        human=interval,
        judge=interval,
        ppi=interval,
        agreement=None,
        effective_n=math.nan,
        missing_judgments=[],
        weighted=False,
    )


def _report(groups: list[GroupEstimate]) -> Report:
    return Report(
        campaign="c",
        criterion="relevance",
        level="answer",
        judge="j",
        alpha=0.05,
        method="robust",
        sample_id=None,
        themes=groups[:-1],
        overall=groups[-1],
    )


@PROFILE
@given(
    data=st.lists(
        st.tuples(st.floats(-0.3, 1.3), st.floats(0.0, 0.2), st.integers(0, 40)), min_size=2, max_size=5
    ),
    base=st.lists(st.tuples(st.floats(-0.3, 1.3), st.floats(0.0, 0.2)), min_size=2, max_size=5),
    min_lower=st.floats(0.0, 1.0),
)
def test_the_gate_decides_on_intervals_that_hold(data, base, min_lower):
    def build(rows):
        return [
            _group(
                f"T{index}" if index < len(rows) - 1 else "overall",
                intervals.from_variance(
                    mean=m, variance=v, alpha=0.05, df=None, method="m", n=n, N=0, bounded=True
                ),
                n=n,
            )
            for index, (m, v, n) in enumerate(rows)
        ]

    report = _report(build(data))
    baseline = _report(build([(m, v, 10) for m, v in base]))
    figures, failures = gate.decide(
        report=report, baseline=baseline, checked={"overall", "T0"}, min_lower=min_lower, baseline_name="b"
    )
    for figure in figures:
        if figure.estimate is not None and figure.lower is not None:
            assert 0 <= figure.lower <= figure.estimate <= figure.upper <= 1
        if figure.difference is not None:
            assert -1 <= figure.difference_lower <= figure.difference <= figure.difference_upper <= 1
        if figure.checked and figure.lower is not None and figure.lower < min_lower:
            assert any(failure.startswith(("overall", "theme")) for failure in figure.failures)


def test_the_study_interval_takes_in_an_estimate_ppi_py_rounded_apart_from_it():
    # ppi_py's estimate and interval, computed apart, with no variance: 0.9999999999999999
    # against [1.0, 1.0] (found by the property test above); the interval holds the estimate.
    found = ppi.study_ppi(y=[1.0, 0.0, 0.0], yhat=[1.0, 0.0, 0.0], yhat_unlabeled=np.ones(196), alpha=0.1)
    assert found.lo <= found.mean <= found.hi
    assert found.hi - found.lo < 1e-12 and abs(found.mean - 1.0) < 1e-12


def test_strata_with_a_variance_whose_square_is_subnormal_combine_with_the_normal_quantile():
    # Found by the property test above at more examples: the Satterthwaite ratio overflowed.
    tiny = intervals.from_variance(mean=0.5, variance=4e-161, alpha=0.05, df=5, method="m", n=5, N=0)
    wide = intervals.from_variance(mean=0.5, variance=0.01, alpha=0.05, df=None, method="m", n=5, N=0)
    combined = intervals.stratified_combine(parts=[(tiny, 1), (wide, 1)], alpha=0.05, method="s")
    holds(combined)
    assert combined.df is None and combined.hi - combined.lo > 0


@PROFILE
@given(data=labeled(), alpha=ALPHAS, weighted=st.booleans(), share=st.floats(0.05, 1.0), finite=st.booleans())
def test_several_judges_combined(data, alpha, weighted, share, finite):
    # A judge on every unit and a second on a random share of them (its values a permutation of
    # the first's, its draw by answers), labels weighted or not, about the campaign or beyond it.
    y, yhat, answers, w, N, ones = data
    n = y.shape[0]
    everything = np.concatenate([yhat, np.repeat([1.0, 0.0], [ones, N - ones])])
    second = everything[::-1].copy()
    drawn = max(1, int(share * everything.shape[0]))
    combined = multi_ppi(
        y=y,
        preds=np.stack([yhat, second[:n]], axis=1),
        terms=[
            JudgeTerm(values=everything, questions=np.arange(everything.shape[0]) % 5),
            JudgeTerm(
                values=second[:drawn],
                weights=np.full(drawn, 1 / share),
                clusters=np.arange(drawn) // 3,
                draw="share",
                questions=np.arange(drawn) % 5,
            ),
        ],
        population=max(n + N, n),
        alpha=alpha,
        w=w if weighted else None,
        clusters=answers % 5 if not finite else answers,
        finite=finite,
    )
    holds(combined.interval)
