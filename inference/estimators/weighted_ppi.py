"""PPI++ for a sample drawn with known, unequal inclusion probabilities, with the judge's
confidence as the prediction.

One group (a theme) of N units. The judge gives every unit a confidence c_i in [0, 1] (its
probability that the label is 1; a 0/1 verdict is a confidence too). A Poisson sample
(``inference/designs/inclusion.py``) sends unit i to the humans with probability pi_i; y_i is the human
label of a sampled unit. The target is the group's rate theta = (1/N) sum_i y_i, a finite
population mean, and the inference is design-based: the only randomness is which units were
drawn, so nothing is assumed about the judge or about how labels cluster in answers.

With r_i = y_i - lam c_i::

    theta_hat = lam * (1/N) sum_{all i} c_i + sum_{s} (r_i / pi_i) / sum_{s} (1 / pi_i)

the judge's mean confidence over the whole group (known exactly: no sampling error) plus the
Hajek (ratio) estimate of the mean residual. Its linearised variance under Poisson sampling
(Särndal, Swensson and Wretman 1992, 5.7)::

    V = (1 / N_hat^2) sum_{s} (1 - pi_i) / pi_i^2 (r_i - r_bar)^2,   N_hat = sum_{s} 1 / pi_i

times n / (n - 1). Units drawn with certainty (pi_i = 1) add nothing. lam is 1 by default: a
calibrated confidence is the label's expectation, and then lam = 1 minimises V. Fitting lam on
the same labels (``lam=None``: the weighted regression slope of y on c with weights
(1 - pi_i) / pi_i^2, clipped to [0, 1]) narrows the interval a little and costs coverage at the
sample sizes of a theme (93% instead of 95% at 30 labels, 90% instead of 96% at 12 with an
overconfident judge, in a simulation of 1,000 samples). The interval is theta_hat -/+ t_{n-1}
sqrt(V), kept in [0, 1] as every robust interval (``intervals.from_variance``).

**Floors.** Labels all equal: V is at least the smoothed rate's variance through the design (no
observed 0 is a rare event, not an impossible one). A 0/1 verdict as the prediction (a judge
without confidences, each theme split by its verdict): the residual is the disagreement, rare,
and a stratum's few labels often show none; V is then at least the robust estimators' rectifier
floor (``intervals.rectifier_floor``: the smoothed variances of the labels and of the
disagreements, over the labels the judge gave a verdict on; 1/2 elsewhere) through the design.
Both floors take at least a simple random sample's factor (1 - n/N) / n when the labeled units
were all drawn with certainty and others were not. Without it, at 95% agreement, the verdict split's intervals
covered 73-74% of the themes (``bench/efficiency_bench.py --quick``, "verdicts only"); with it,
96-100% over the seven designs (1,000 replications).

Why the confidence pays: the residual y - c of a calibrated judge has variance c (1 - c), small
where the judge is sure, while a 0/1 verdict leaves the full disagreement; and the design puts
the labels where the residual is large. Where it coincides with ``ppi_py`` (a given lambda):
the point estimate is ``ppi_mean_pointestimate`` with every unit's confidence as the unlabeled
set and 1 / pi as weights (``tests/inference/estimators/test_weighted_ppi.py``); ppi_py's variance
is the iid one, not the design's.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from inference import notes
from inference.designs.inclusion import UNKNOWN
from inference.estimators.ppi import PPI_CONFIDENCE
from inference.intervals import (
    TINY,
    Interval,
    check_alpha,
    from_variance,
    honest_df,
    nan_interval,
    rectifier_floor,
    smoothed_variance,
    unbounded_interval,
)

PPI_WEIGHTED = PPI_CONFIDENCE
# The share of the variance the confidences imply (each residual's c (1 - c) through the design)
# below which the observed variance is not believed. Where the design is sound the observed one
# falls under it by chance now and then; where the labels left only sure units, drawn at the floor
# rate, it falls 10 to 100 times under. At 1 the middle of the grid widened by 10% (17% at 90%
# accuracy), at 1/2 the corner covered 91.5%; at 3/4 the corner covers 95-99% and the middle
# widens by 1.9% on average (``bench/coverage_grid.py``, docs/statistics.md).
CONFIDENCE_FLOOR_SHARE = 0.75


def _array(values: ArrayLike, *, name: str, length: int | None = None) -> np.ndarray:
    array = np.asarray(values, dtype=float).ravel()
    if length is not None and array.shape[0] != length:
        raise ValueError(f"{name} has {array.shape[0]} values, expected {length}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def weighted_lambda(*, y: np.ndarray, c: np.ndarray, pi: np.ndarray) -> float:
    """The lam in [0, 1] that minimises the linearised variance: sum a (y - y_H)(c - c_H) /
    sum a (c - c_H)^2 with a = (1 - pi) / pi^2 and Hajek means y_H, c_H. 1 when the sample is a
    census or the confidences do not vary (the variance no longer depends on lam)."""
    w = 1 / pi
    a = (1 - pi) / pi**2
    y_c = y - np.sum(w * y) / np.sum(w)
    c_c = c - np.sum(w * c) / np.sum(w)
    denominator = float(np.sum(a * c_c**2))
    if denominator <= TINY:
        return 1.0
    return float(np.clip(np.sum(a * y_c * c_c) / denominator, 0.0, 1.0))


def weighted_ppi(
    *,
    y: ArrayLike,
    confidence: ArrayLike,
    pi: ArrayLike,
    confidence_all: ArrayLike,
    alpha: float,
    lam: float | None = 1.0,
    judge_mean: float | None = None,
) -> Interval:
    """Inverse-probability PPI++ estimate of a group's rate and its 1 - alpha interval.

    ``y``, ``confidence`` and ``pi``: the human labels (0/1), the judge's confidences and the
    inclusion probabilities of the n sampled units; ``confidence_all``: the judge's confidence
    on every unit of the group (sampled ones included), N values; ``judge_mean``, the judge's
    term when it is not their plain mean (a recalibrated confidence cross-fitted by folds,
    ``inference.reliability.calibration``: each label's prediction from the map fitted without it, the
    judge's term the mean of the folds' means). ``lam``: the coefficient (clipped to [0, 1]), 1
    by default; None fits it on the labels (:func:`weighted_lambda`).
    Method ``ppi++-confidence``, ``n`` the labels, ``N`` the group's size. Labels all equal:
    the residual variance is at least the smoothed rate's (as for ``classical_mean``), with a note.

    No labels: NaN. One label: the estimate with an infinite interval. Raises ValueError on
    inconsistent arrays or a probability outside (0, 1].
    """
    check_alpha(alpha)
    labels = _array(y, name="y")
    n = labels.shape[0]
    c = _array(confidence, name="confidence", length=n)
    p = _array(pi, name="pi", length=n)
    c_all = _array(confidence_all, name="confidence_all")
    N = c_all.shape[0]
    if np.any(p <= 0) or np.any(p > 1):
        raise ValueError("pi must be in (0, 1]")
    if np.any(c < 0) or np.any(c > 1) or np.any(c_all < 0) or np.any(c_all > 1):
        raise ValueError("confidences must be in [0, 1]")
    if n > N:
        raise ValueError(f"confidence_all has {N} values, fewer than the {n} labels")
    if n == 0:
        return nan_interval(method=PPI_WEIGHTED, alpha=alpha, n=0, N=N, note=notes.NO_LABELED_UNITS)
    coefficient = weighted_lambda(y=labels, c=c, pi=p) if lam is None else float(np.clip(lam, 0.0, 1.0))
    if not math.isfinite(coefficient):
        raise ValueError(f"lam must be finite, got {lam}")
    residual = labels - coefficient * c
    w = 1 / p
    n_hat = float(np.sum(w))
    residual_mean = float(np.sum(w * residual) / n_hat)
    mean = coefficient * (float(c_all.mean()) if judge_mean is None else float(judge_mean)) + residual_mean
    if n == 1:
        return unbounded_interval(
            mean=mean, method=PPI_WEIGHTED, alpha=alpha, n=1, N=N, lam=coefficient, note=notes.ONE_LABEL
        )
    # n / (n - 1): the small-sample factor of a linearised variance (as G / (G - 1) for clusters).
    pieces = (1 - p) * w**2
    deviations = residual - residual_mean
    variance = n / (n - 1) * float(np.sum(pieces * deviations**2)) / n_hat**2
    df = honest_df(pieces=pieces, deviations=deviations, limit=n - 1)
    note = ""
    design = n / (n - 1) * float(np.sum((1 - p) * w**2)) / n_hat**2
    if n < N:
        # Labels all drawn with certainty while other units were left: the design's own factor
        # is zero, the floors would be too; they take at least a simple random sample's.
        design = max(design, (1 - n / N) / n)
    verdicts = (c == 0) | (c == 1)
    if verdicts.any() and np.all(verdicts | (c == UNKNOWN)):
        # A 0/1 verdict as the prediction (1/2 on a unit the judge did not label): the residual
        # is the disagreement, and a stratum of ten labels where a judge that errs 5% of the
        # time erred on none would claim no variance at all. The robust estimators' floor on
        # the rectifier (smoothed rates of the labels and of the disagreements) over the
        # judged labels, per label, through the design.
        rectifier = rectifier_floor(
            labels=labels[verdicts], preds=c[verdicts], lam=coefficient, alpha=alpha, G=1
        )
        floor = design * rectifier
        if floor > variance:
            variance, note, df = floor, notes.FLOORED, n - 1
    else:
        # A confidence is the label's probability (recalibrated on the labels before it gets
        # here): a unit's residual y - lam c has variance c (1 - c). Where the design labels most
        # of a small theme and leaves only units the judge is sure of, drawn at the floor rate with
        # large weights, their rare errors are seldom drawn: the observed deviations then show
        # almost no variance while the estimate misses those errors (63-89% coverage at rates of
        # 2-5% or 95-98%, ``bench/coverage_grid.py``). The variance is at least a share of the
        # design's variance of those Bernoulli variances.
        expected = c * (1 - c)
        floor = CONFIDENCE_FLOOR_SHARE * n / (n - 1) * float(np.sum(pieces * expected)) / n_hat**2
        if floor > variance:
            variance, note = floor, notes.CONFIDENCE_FLOOR
            df = honest_df(pieces=pieces, deviations=np.sqrt(expected), limit=n - 1)
        if np.all(labels == labels[0]):
            # 12 labels all 1 with an uninformative judge would claim a rate surely at 100%; no
            # observed 0 shows a rare event, not an impossible one (the robust estimators' rule).
            floor = design * smoothed_variance(count=float(labels.sum()), n=n, alpha=alpha)
            if floor > variance:
                variance, note, df = floor, notes.SMOOTHED, n - 1
    return from_variance(
        mean=mean,
        variance=variance,
        alpha=alpha,
        df=df,
        method=PPI_WEIGHTED,
        n=n,
        N=N,
        lam=coefficient,
        bounded=True,
        # The design's variance of a Hajek mean of a variable of variance 1 is 1 / (its labels'
        # worth): a simple random sample's (1 - n/N) / n, a census's 0.
        least_n=1 / design if design > 0 else math.inf,
        note=note,
    )
