"""Differences between two estimates: paired by question for two versions of the assistant that
asked the same questions (each estimate decomposed into its units' contributions, summed per
question), or as independent samples; Holm's adjustment over several pairs; and the difference
of two proportions with Newcombe's hybrid score interval (a judge's agreement with the humans
before and after a change of its prompt, or in two weeks).

Every estimate here is asymptotically linear: theta_hat - theta ~ sum_i psi_i, one contribution
psi_i per unit. Summed per question id, the two versions' contributions give the difference's
cluster-robust variance with the question as cluster:

    Var(theta_B - theta_A) = G / (G - 1) sum_q (psi_B,q - psi_A,q)^2

over the G questions of either campaign, and a t interval with G - 1 degrees of freedom.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from inference import intervals
from inference.estimators import means, ppi
from inference.intervals import TINY, quantile

# A difference of two rates.
DIFFERENCE_BOUNDS = (-1.0, 1.0)


@dataclass(frozen=True)
class Linear:
    """An asymptotically linear estimate: its value, the sums per question id of its units'
    contributions to its error, and the units it rests on. NaN when it cannot be computed.
    ``floor``: variance its contributions do not show and the report's interval holds (the
    floors of ``inference.intervals``: a few labels that show no disagreement, or no 0, are not
    a perfect judge or a rate of 100%); added to any difference it takes part in."""

    estimate: float
    contributions: dict[str, float]
    n: int
    floor: float = 0.0

    @property
    def variance(self) -> float:
        """The cluster-robust variance with the question as cluster (NaN below two questions),
        plus ``floor``."""
        return means.cluster_variance(np.array(list(self.contributions.values()), dtype=float)) + self.floor


NAN = Linear(estimate=math.nan, contributions={}, n=0)


@dataclass(frozen=True)
class PairedDifference:
    """``right - left`` of two versions' estimates, paired by question.

    ``se`` and the ``lo``/``hi`` t interval (``df`` = questions - 1, cut to [-1, 1]) come from
    the per-question differences of contributions; ``independent_se`` is what treating the two
    as independent samples would give. ``p_value`` is two-sided (NaN when ``degenerate``),
    ``p_adjusted`` is adjusted over the pairs compared for the same estimate and theme by the
    adjustment asked for (Holm's by default), and ``p_holm`` and ``p_bonferroni`` are both
    adjustments, shown side by side."""

    estimate: float
    se: float
    df: int
    lo: float
    hi: float
    p_value: float
    independent_se: float
    questions: int
    shared: int
    degenerate: bool
    alpha: float
    p_adjusted: float = math.nan
    p_holm: float = math.nan
    p_bonferroni: float = math.nan

    @property
    def significant(self) -> bool:
        """Marked as a difference: not degenerate and Holm's adjusted p-value below alpha."""
        return not self.degenerate and self.p_adjusted < self.alpha


def paired_difference(*, left: Linear, right: Linear, alpha: float) -> PairedDifference | None:
    """The difference ``right - left`` with its 1 - alpha interval paired by question (see the
    module's docstring). None when either estimate is missing or fewer than two questions carry
    them. Degenerate (no p-value, never significant) when the paired variance or either side's
    own variance is zero."""
    if not (math.isfinite(left.estimate) and math.isfinite(right.estimate)):
        return None
    questions = sorted(set(left.contributions) | set(right.contributions))
    if len(questions) < 2:
        return None
    totals = np.array(
        [right.contributions.get(q, 0.0) - left.contributions.get(q, 0.0) for q in questions], dtype=float
    )
    # The floors each side's report holds are variance the pairing cannot remove.
    variance = means.cluster_variance(totals) + left.floor + right.floor
    se = math.sqrt(variance)
    # Not G - 1 when a few questions carry most of the difference (those with human labels,
    # beside hundreds that carry only the judge's share): Satterthwaite's rule on the totals.
    df = intervals.honest_df(pieces=np.ones(totals.shape[0]), deviations=totals, limit=len(questions) - 1)
    estimate = min(1.0, max(-1.0, right.estimate - left.estimate))
    half = quantile(alpha=alpha, df=df) * se
    sides = (left.variance, right.variance)
    degenerate = not (variance > TINY and all(v > TINY for v in sides))
    p_value = math.nan if degenerate else float(2 * student_t.sf(abs(estimate) / se, df))
    independent = sum(v for v in sides if math.isfinite(v))
    lo, hi = intervals.keep_around(
        estimate=estimate, lo=estimate - half, hi=estimate + half, bounds=(-1.0, 1.0)
    )
    return PairedDifference(
        estimate=estimate,
        se=se,
        df=df,
        lo=lo,
        hi=hi,
        p_value=p_value,
        independent_se=math.sqrt(independent),
        questions=len(questions),
        shared=len(set(left.contributions) & set(right.contributions)),
        degenerate=degenerate,
        alpha=alpha,
    )


def one_sided_p(*, estimate: float, se: float, df: int | None) -> float:
    """P(T <= estimate / se): the one-sided p-value that a difference is below 0 (a drop), on a t
    law with ``df`` degrees of freedom (normal without). NaN without a positive standard error."""
    if not (se > 0 and math.isfinite(se)):
        return math.nan
    z = estimate / se
    return float(student_t.cdf(z, df)) if df is not None else float(norm.cdf(z))


HOLM = "holm"
BONFERRONI = "bonferroni"
# How p-values are adjusted over the pairs compared (or the groups a gate checks).
ADJUSTMENTS = (HOLM, BONFERRONI)


def adjusted(p_values: Sequence[float], *, method: str = HOLM) -> list[float]:
    """The p-values adjusted for their number, by Holm's step-down procedure (the default: it
    rejects everything Bonferroni's does and more) or Bonferroni's, min(1, m p) (seed 004's
    choice: simpler to state, "each p-value times the comparisons made"). Both keep the
    family-wise error rate at alpha whatever the dependence between the tests."""
    if method == HOLM:
        return holm(p_values)
    if method == BONFERRONI:
        return bonferroni(p_values)
    raise ValueError(f"unknown adjustment {method!r}; expected one of {', '.join(ADJUSTMENTS)}")


def bonferroni(p_values: Sequence[float]) -> list[float]:
    """Bonferroni's adjusted p-values, min(1, m p), m the finite p-values; NaN stays NaN."""
    m = sum(1 for p in p_values if not math.isnan(p))
    return [p if math.isnan(p) else min(1.0, m * p) for p in p_values]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's (1979) step-down adjusted p-values, in the order given: with the m finite p-values
    sorted p_(1) <= ... <= p_(m), p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)). Rejecting
    where p~ < alpha controls the family-wise error rate at alpha. NaN stays NaN and is not
    counted in m."""
    finite = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    m = len(finite)
    adjusted = [math.nan] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(finite):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def per_question(questions: Sequence[str], values: np.ndarray) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for question, value in zip(questions, values, strict=True):
        totals[question] += float(value)
    return dict(totals)


def add_contributions(into: dict[str, float], contributions: dict[str, float], *, share: float = 1.0) -> None:
    for question, value in contributions.items():
        into[question] = into.get(question, 0.0) + share * value


def rate_linear(counts: dict[str, tuple[int, int]]) -> Linear:
    """The rate of successes over units counted per question (question -> (n, successes))."""
    n = sum(count for count, _ in counts.values())
    if n == 0:
        return NAN
    rate = sum(ones for _, ones in counts.values()) / n
    return Linear(
        estimate=rate,
        contributions={q: (ones - count * rate) / n for q, (count, ones) in counts.items()},
        n=n,
    )


def stratified(parts: list[tuple[Linear, int]]) -> Linear:
    """sum_k (N_k / N) theta_k with contributions combined alike; NaN when a part is."""
    kept = [(part, size) for part, size in parts if size > 0]
    if not kept or any(not math.isfinite(part.estimate) for part, _ in kept):
        return NAN
    total = sum(size for _, size in kept)
    contributions: dict[str, float] = {}
    for part, size in kept:
        add_contributions(contributions, part.contributions, share=size / total)
    return Linear(
        estimate=sum(size / total * part.estimate for part, size in kept),
        contributions=contributions,
        n=sum(part.n for part, _ in kept),
        floor=sum((size / total) ** 2 * part.floor for part, size in kept),
    )


def mean_linear(
    *,
    values: np.ndarray,
    questions: list[str],
    answers: np.ndarray,
    w: np.ndarray | None,
    alpha: float,
    floored: bool,
) -> Linear:
    """The (Hajek) mean of ``values`` decomposed by question. ``floored`` (the robust method):
    when every value is equal, the report's human-only interval holds the variance of the
    smoothed rate over the G answers (``means.classical_mean``), which this one then holds too."""
    contributions = per_question(questions, means.hajek_influence(values, w))
    floor = 0.0
    if floored and np.all(values == values[0]):
        G = len(np.unique(answers))
        floor = intervals.smoothed_variance(count=float(np.sum(values)), n=values.shape[0], alpha=alpha) / G
    estimate = float(values.mean() if w is None else np.sum(w * values) / np.sum(w))
    return Linear(estimate=estimate, contributions=contributions, n=values.shape[0], floor=floor)


def ppi_linear(
    *,
    y: np.ndarray,
    yhat: np.ndarray,
    questions: list[str],
    answers: np.ndarray,
    judged: dict[str, tuple[int, int]],
    w: np.ndarray | None,
    method: str,
    alpha: float,
) -> Linear:
    """PPI++ of 0/1 labels ``y`` and the judge's ``yhat`` on the same units (their ``questions``
    and ``answers``, design weights ``w``), with the judge's labels on every judged unit of the
    group, the labeled ones included, counted per question (``judged``: question -> (units,
    ones)), decomposed by question with its lambda held fixed: the report's
    (``ppi.robust_ppi``'s cross-fitted one and its judge's term over every judged unit for
    ``robust``; ``ppi.study_lambda`` and ppi_py's term over the unlabeled units for ``study``).
    Each judged unit contributes lam (Yhat - mean) / (its units) to the judge's term, a labeled
    unit its rectifier's share beside it. The robust method's floor on the rectifier's variance
    (``intervals.rectifier_floor``, with the report's G answers) is kept in ``floor`` where the
    contributions show less."""
    n = y.shape[0]
    total = sum(count for count, _ in judged.values())
    ones_all = sum(ones for _, ones in judged.values())
    labeled_per_question: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for question, value in zip(questions, yhat, strict=True):
        labeled_per_question[question][0] += 1
        labeled_per_question[question][1] += float(value)
    N = total - n
    ones_unl = ones_all - int(round(float(np.sum(yhat))))
    yhat_unlabeled = np.repeat(np.array([1.0, 0.0]), [max(ones_unl, 0), max(N - ones_unl, 0)])
    if N <= 0:
        lam_i = np.zeros(n)
    elif method == "robust":
        lam_i = ppi.crossfit_lambdas(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, w=w, clusters=answers)
    else:
        pool = np.concatenate([yhat, yhat_unlabeled])
        constant = bool(np.all(pool == pool[0]))
        lam = 0.0 if constant else ppi.study_lambda(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled)
        lam_i = np.full(n, lam if math.isfinite(lam) else 0.0)
    share = np.full(n, 1 / n) if w is None else w / np.sum(w)
    lam_bar = float(np.sum(share * lam_i))
    rectifier = y - lam_i * yhat
    contributions = per_question(questions, means.hajek_influence(rectifier, w))
    floor = 0.0
    if method == "robust":
        shown = means.cluster_variance(np.array(list(contributions.values()), dtype=float))
        G = len(np.unique(answers))
        least = intervals.rectifier_floor(labels=y, preds=yhat, lam=lam_bar, alpha=alpha, G=G)
        floor = max(0.0, least - shown) if math.isfinite(shown) else least
        # The judge's term over every judged unit of the group.
        term_mean = ones_all / total if total else 0.0
        judge_part = {q: lam_bar * (ones - count * term_mean) / total for q, (count, ones) in judged.items()}
    else:
        # ppi_py's term: the mean of the judge's labels on the unlabeled units.
        term_mean = ones_unl / N if N > 0 else 0.0
        judge_part = {}
        for q, (count, ones) in judged.items():
            inside = labeled_per_question.get(q, [0.0, 0.0])
            judge_part[q] = (
                lam_bar * ((ones - inside[1]) - (count - inside[0]) * term_mean) / N if N > 0 else 0.0
            )
    add_contributions(contributions, judge_part)
    return Linear(
        estimate=lam_bar * term_mean + float(np.sum(share * rectifier)),
        contributions=contributions,
        n=n,
        floor=floor,
    )


DIFFERENCE = "difference-independent"


def difference(
    *, left: intervals.Interval, right: intervals.Interval, alpha: float
) -> intervals.Interval | None:
    """``right - left`` for two estimates from independent campaigns, as an interval of a
    difference (within [-1, 1]): the estimates as shown, their standard errors (each the one its
    report's interval was built with: ``intervals.standard_error``, floors included) added in
    quadrature, with a t quantile on Welch and Satterthwaite's degrees of freedom
    (se^2)^2 / sum_k se_k^4 / df_k (a normal side counts as infinite; normal when both are).
    None when either estimate is missing or unbounded."""
    if not all(math.isfinite(x) for x in (left.mean, left.halfwidth, right.mean, right.halfwidth)):
        return None
    estimate = right.shown_mean - left.shown_mean
    parts = [(intervals.standard_error(side) ** 2, side.df) for side in (left, right)]
    se = math.sqrt(sum(v for v, _ in parts))
    spread = sum(v**2 / df for v, df in parts if df is not None and df > 0)
    df = max(1, math.floor(se**4 / spread)) if spread > 0 else None
    half = intervals.quantile(alpha=alpha, df=df) * se
    lo, hi = intervals.keep_around(
        estimate=estimate, lo=estimate - half, hi=estimate + half, bounds=DIFFERENCE_BOUNDS
    )
    return intervals.Interval(
        mean=estimate,
        lo=lo,
        hi=hi,
        method=DIFFERENCE,
        alpha=alpha,
        n=left.n + right.n,
        df=df,
        se=se,
        bounds=DIFFERENCE_BOUNDS,
    )


NEWCOMBE = "newcombe-hybrid-score"
NEWCOMBE_PAIRED = "newcombe-hybrid-score-paired"


def newcombe_difference(
    *, right: intervals.Interval, left: intervals.Interval, correlation: float | None = None
) -> intervals.Interval:
    """``right - left`` of two proportions with Newcombe's hybrid score interval (Newcombe 1998,
    *Interval estimation for the difference between independent proportions*, method 10): from
    each proportion's Wilson interval, [d - sqrt((p2 - l2)^2 + (u1 - p1)^2), d + sqrt((u2 -
    p2)^2 + (p1 - l1)^2)] with p2 ``right``'s and p1 ``left``'s. ``correlation``: the phi of a
    paired 2 x 2 table when the two proportions are on the same units (Newcombe 1998, *Improved
    confidence intervals for the difference between binomial proportions based on paired
    data*, method 10), subtracting 2 phi times the products (a NaN phi, a margin empty, counts
    as 0); None for independent samples. The interval's level is the two intervals' (their
    alpha), within [-1, 1]."""
    p1, l1, u1 = left.mean, left.lo, left.hi
    p2, l2, u2 = right.mean, right.lo, right.hi
    rho = 0.0 if correlation is None or math.isnan(correlation) else correlation
    d = p2 - p1
    low = math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * rho * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    high = math.sqrt(max(0.0, (u2 - p2) ** 2 - 2 * rho * (u2 - p2) * (p1 - l1) + (p1 - l1) ** 2))
    return intervals.Interval(
        mean=d,
        lo=max(-1.0, d - low),
        hi=min(1.0, d + high),
        method=NEWCOMBE if correlation is None else NEWCOMBE_PAIRED,
        alpha=right.alpha,
        n=right.n + left.n if correlation is None else right.n,
        bounds=DIFFERENCE_BOUNDS,
    )
