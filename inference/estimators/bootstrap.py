"""Means over answers with a percentile bootstrap interval over questions. Django-free.

The answers to one question share it (and, for a retriever, its gold evidence and mostly its
chunks), so they are not independent: the question is the unit that is resampled, each drawn
question bringing all its answers (the cluster bootstrap, Davison and Hinkley 1997, section 3.8;
Field and Welsh 2007). Evidence coverage, the ranking metrics, ALCE's citation measures and the
overlap with the reference answer all take their intervals from :func:`question_bootstrap_means`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Mean:
    """A mean over answers with a percentile bootstrap interval over questions (the unit that
    is resampled), ``alpha`` its level: ``n`` answers of ``questions`` questions."""

    mean: float | None
    lo: float | None
    hi: float | None
    n: int
    questions: int
    alpha: float
    method: str = "percentile bootstrap over questions"

    def as_dict(self) -> dict[str, object]:
        return {
            "mean": self.mean,
            "lo": self.lo,
            "hi": self.hi,
            "n": self.n,
            "questions": self.questions,
            "alpha": self.alpha,
            "method": self.method,
        }


def question_bootstrap_means(
    *,
    values: np.ndarray,
    questions: Sequence[object],
    alpha: float = 0.05,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> list[Mean]:
    """The mean over answers of each column of ``values`` (answers x measures), each with a
    percentile bootstrap interval that resamples questions with replacement and keeps each
    drawn question's answers together (answers to one question are not independent; Davison
    and Hinkley 1997, section 3.8). The statistic of a resample is the mean over all its
    answers. Reproducible from ``seed``; the same draws serve every column."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or values.shape[0] != len(questions):
        raise ValueError("values must be answers x measures, one question per answer")
    measures = values.shape[1]
    n = values.shape[0]
    if n == 0:
        return [Mean(None, None, None, 0, 0, alpha) for _ in range(measures)]
    codes: dict[object, int] = {}
    index = np.array([codes.setdefault(q, len(codes)) for q in questions])
    groups = len(codes)
    sums = np.zeros((groups, measures))
    np.add.at(sums, index, values)
    counts = np.bincount(index, minlength=groups).astype(float)
    means = values.mean(axis=0)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, groups, size=(resamples, groups))
    # How often each question is drawn in each resample, then sums and counts by matrix products.
    weights = np.zeros((resamples, groups))
    np.add.at(weights, (np.repeat(np.arange(resamples), groups), draws.ravel()), 1.0)
    boot = (weights @ sums) / (weights @ counts)[:, None]
    lo = np.quantile(boot, alpha / 2, axis=0)
    hi = np.quantile(boot, 1 - alpha / 2, axis=0)
    return [
        Mean(
            mean=float(means[j]),
            lo=float(lo[j]),
            hi=float(hi[j]),
            n=n,
            questions=groups,
            alpha=alpha,
        )
        for j in range(measures)
    ]


# Statistics of units that fall into a few patterns (the values a unit received: a pair of labels,
# a unit's counts of each value): units of one pattern are interchangeable, so a resample of the
# units is drawn as how many times each pattern comes up, a multinomial draw with the same law as
# drawing units with replacement, and its cost is resamples x patterns, whatever the number of
# units. Krippendorff's alpha and Cohen's kappa take their intervals from it.


def pattern_resamples(
    counts: np.ndarray, *, resamples: int, seed: int, max_draws: int, min_resamples: int
) -> np.ndarray:
    """Resamples of the units as counts per pattern (resamples x patterns), ``counts`` the units
    of each pattern. Fewer resamples than asked when resamples x patterns would pass
    ``max_draws``, never fewer than ``min_resamples`` (nor than asked, when fewer). Seeded: the
    same units give the same draws."""
    size = int(counts.sum())
    resamples = max(min(resamples, max_draws // len(counts)), min(resamples, min_resamples))
    rng = np.random.default_rng(seed)
    return rng.multinomial(size, counts / size, size=resamples)


def percentile_bounds(values: np.ndarray, *, level: float) -> tuple[float, float]:
    """The middle ``level`` of ``values`` (the percentile interval)."""
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)
