"""Differences between two estimates: paired by question for two versions of the assistant that
asked the same questions (each estimate decomposed into its units' contributions, summed per
question), or as independent samples; Holm's adjustment over several pairs.

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
from scipy.stats import t as student_t

from inference import intervals, means
from inference.intervals import TINY, quantile


@dataclass(frozen=True)
class Linear:
    """An asymptotically linear estimate: its value, the sums per question id of its units'
    contributions to its error, and the units it rests on. NaN when it cannot be computed."""

    estimate: float
    contributions: dict[str, float]
    n: int

    @property
    def variance(self) -> float:
        """The cluster-robust variance with the question as cluster (NaN below two questions)."""
        return means.cluster_variance(np.array(list(self.contributions.values()), dtype=float))


NAN = Linear(estimate=math.nan, contributions={}, n=0)


@dataclass(frozen=True)
class PairedDifference:
    """``right - left`` of two versions' estimates, paired by question.

    ``se`` and the ``lo``/``hi`` t interval (``df`` = questions - 1, cut to [-1, 1]) come from
    the per-question differences of contributions; ``independent_se`` is what treating the two
    as independent samples would give. ``p_value`` is two-sided (NaN when ``degenerate``),
    ``p_adjusted`` is Holm's over the pairs compared for the same estimate and theme."""

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
    variance = means.cluster_variance(totals)
    se = math.sqrt(variance)
    df = len(questions) - 1
    estimate = right.estimate - left.estimate
    half = quantile(alpha=alpha, df=df) * se
    sides = (left.variance, right.variance)
    degenerate = not (variance > TINY and all(v > TINY for v in sides))
    p_value = math.nan if degenerate else float(2 * student_t.sf(abs(estimate) / se, df))
    independent = sum(v for v in sides if math.isfinite(v))
    return PairedDifference(
        estimate=estimate,
        se=se,
        df=df,
        lo=max(-1.0, estimate - half),
        hi=min(1.0, estimate + half),
        p_value=p_value,
        independent_se=math.sqrt(independent),
        questions=len(questions),
        shared=len(set(left.contributions) & set(right.contributions)),
        degenerate=degenerate,
        alpha=alpha,
    )


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
    )


@dataclass(frozen=True)
class Difference:
    """``right - left`` of two independent estimates, with a normal-approximation interval."""

    estimate: float
    lo: float
    hi: float

    @property
    def excludes_zero(self) -> bool:
        return self.lo > 0 or self.hi < 0


def difference(*, left: intervals.Interval, right: intervals.Interval, alpha: float) -> Difference | None:
    """``right - left`` for two estimates from independent campaigns: the standard errors
    (half-width / the quantile each interval used) add in quadrature, with a normal quantile.
    None when either estimate is missing or unbounded."""
    if not all(math.isfinite(x) for x in (left.mean, left.halfwidth, right.mean, right.halfwidth)):
        return None
    estimate = right.mean - left.mean
    half = intervals.quantile(alpha=alpha, df=None) * math.hypot(
        intervals.standard_error(left), intervals.standard_error(right)
    )
    return Difference(estimate=estimate, lo=estimate - half, hi=estimate + half)
