"""Means of 0/1 labels with their intervals: the human labels alone (``classical_mean``) and the
judge's labels alone (``judge_mean``), and the pieces every estimator shares: arrays checked,
design weights, answers as clusters, Hajek means and their cluster-robust (linearisation)
variance.

Without weights and clusters the human-only mean is exactly ``ppi_py.classical_mean_ci``; with
them, a Hajek mean with a cluster-robust variance and a t quantile with G - 1 degrees of freedom
(G labeled clusters), kept inside [0, 1] (``inference.intervals.from_variance``).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from ppi_py import classical_mean_ci

from inference import notes
from inference.intervals import (
    TINY,
    Interval,
    check_alpha,
    effective_count,
    from_variance,
    inside_unit,
    nan_interval,
    quantile,
    smoothed_variance,
    unbounded_interval,
)

CLASSICAL = "classical"
CLASSICAL_ROBUST = "classical-robust"
JUDGE_ONLY = "judge-only"


def vector(values: ArrayLike | None, *, name: str, length: int | None = None) -> np.ndarray:
    """``values`` as a flat float array (empty for None); ValueError when its length is not
    ``length`` or it holds NaN or infinities."""
    array = np.asarray([] if values is None else values, dtype=float).ravel()
    if length is not None and array.shape[0] != length:
        raise ValueError(f"{name} has {array.shape[0]} values, expected {length}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def positive_weights(values: ArrayLike | None, *, name: str, length: int) -> np.ndarray | None:
    """Design weights as :func:`vector` reads them, each strictly positive (None stays None)."""
    if values is None:
        return None
    w = vector(values, name=name, length=length)
    if np.any(w <= 0):
        raise ValueError(f"{name} must be positive")
    return w


def cluster_codes(clusters: ArrayLike | None, *, length: int) -> tuple[np.ndarray, int]:
    """Codes 0..G-1 per unit; without clusters every unit is its own cluster."""
    if clusters is None:
        return np.arange(length), length
    raw = np.asarray(clusters).ravel()
    if raw.shape[0] != length:
        raise ValueError(f"clusters has {raw.shape[0]} values, expected {length}")
    _, codes = np.unique(raw, return_inverse=True)
    return codes.ravel(), int(codes.max()) + 1 if length else 0


def hajek_mean(values: np.ndarray, w: np.ndarray | None) -> float:
    if w is None:
        return float(values.mean())
    return float(np.sum(w * values) / np.sum(w))


def hajek_influence(values: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Each unit's contribution to the (linearised) error of the Hajek mean of ``values``:
    w_i (x_i - mean_w) / sum w (1/n instead of w_i / sum w without weights). They sum to 0; the
    mean's variance is built from their sums per cluster (:func:`cluster_variance`)."""
    share = np.full(values.shape[0], 1 / values.shape[0]) if w is None else w / np.sum(w)
    return share * (values - hajek_mean(values, w))


def cluster_variance(totals: np.ndarray) -> float:
    """Cluster-robust variance of an asymptotically linear estimate from the sums of its units'
    contributions per cluster (``totals``, one per cluster, G of them): G / (G - 1) sum totals^2.
    NaN below two clusters."""
    G = totals.shape[0]
    if G < 2:
        return math.nan
    return G / (G - 1) * float(np.sum(totals**2))


def linearised_variance(*, values: np.ndarray, w: np.ndarray | None, codes: np.ndarray, G: int) -> float:
    """Cluster-robust variance of the Hajek mean of ``values``: sum over clusters of the squared
    within-cluster sums of normalised weighted residuals, times G / (G - 1). Without weights and
    with one unit per cluster this is Var(values, ddof=1) / n."""
    return cluster_variance(np.bincount(codes, weights=hajek_influence(values, w), minlength=G))


def _zero_width_note(values: np.ndarray) -> str:
    if values.size and np.all(values == values[0]):
        return notes.ZERO_WIDTH
    return ""


def finite_population_factor(*, n: int, population: int | None) -> float:
    """The finite-population correction 1 - n / N of a sample of ``n`` units drawn from a group of
    ``population`` (1 without one: a sample of an unbounded population). Labeling every unit of a
    group leaves no sampling error: the factor is 0 and the interval the rate itself."""
    if population is None:
        return 1.0
    if population < n:
        raise ValueError(f"population has {population} units, fewer than the {n} labels")
    return 1.0 - n / population if population else 1.0


def classical_mean(
    *,
    y: ArrayLike,
    alpha: float,
    w: ArrayLike | None = None,
    clusters: ArrayLike | None = None,
    population: int | None = None,
) -> Interval:
    """Mean of the human labels ``y`` with a 1 - alpha interval.

    Without ``w``, ``clusters`` and ``population``: exactly ``ppi_py.classical_mean_ci`` (normal
    quantile, population standard deviation), method ``classical``. With design weights ``w``
    and/or answer ids ``clusters``: Hajek mean, cluster-robust linearisation variance (G / (G - 1)
    factor) and a Student t quantile with G - 1 degrees of freedom, method ``classical-robust``;
    ``population``, the size N of the group the labels were drawn from, applies the
    finite-population correction 1 - n / N (the interval is then about the rate of those N
    units). No labels: NaN interval. One label (or one cluster): the mean with an infinite
    interval.
    """
    alpha = check_alpha(alpha)
    values = vector(y, name="y")
    n = values.shape[0]
    robust = w is not None or clusters is not None or population is not None
    method = CLASSICAL_ROBUST if robust else CLASSICAL
    weights = positive_weights(w, name="w", length=n)
    codes, G = cluster_codes(clusters, length=n)
    if n == 0:
        return nan_interval(method=method, alpha=alpha, n=0, note=notes.NO_LABELED_UNITS)
    mean = hajek_mean(values, weights)
    if not robust:
        if n == 1:
            return unbounded_interval(mean=mean, method=method, alpha=alpha, n=1, note=notes.ONE_LABEL)
        lo, hi = classical_mean_ci(values, alpha=alpha)
        return Interval(
            mean=float(values.mean()),
            lo=float(lo),
            hi=float(hi),
            method=method,
            alpha=alpha,
            n=n,
            note=_zero_width_note(values),
        )
    if G == 1:
        return unbounded_interval(mean=mean, method=method, alpha=alpha, n=n, df=0, note=notes.ONE_CLUSTER)
    factor = finite_population_factor(n=n, population=population)
    return _clustered_interval(
        mean=mean,
        variance=linearised_variance(values=values, w=weights, codes=codes, G=G),
        count=float(np.sum(values)),
        n=n,
        G=G,
        alpha=alpha,
        factor=factor,
        least_n=least_labels(codes=codes, G=G, w=weights, factor=factor),
    )


def _clustered_interval(
    *, mean: float, variance: float, count: float, n: int, G: int, alpha: float, factor: float, least_n: float
) -> Interval:
    """The robust human-only interval from the mean of ``n`` labels (``count`` of them 1) in ``G``
    clusters and its cluster-robust variance, before the finite-population ``factor``."""
    note = ""
    if variance <= TINY:
        # Every label equal: ~12 labels all 1 do not make a theme surely at 100%. The variance
        # of the smoothed rate, as robust_ppi's rectifier floor gives it.
        variance = smoothed_variance(count=count, n=n, alpha=alpha) / G
        note = notes.SMOOTHED
    return from_variance(
        mean=mean,
        variance=factor * variance,
        alpha=alpha,
        df=G - 1,
        method=CLASSICAL_ROBUST,
        n=n,
        N=0,
        note=note,
        bounded=True,
        least_n=least_n,
    )


def clustered_means(*, sums: np.ndarray, counts: np.ndarray, alpha: float) -> list[Interval]:
    """``classical_mean`` of unweighted labels with clusters, for several samples at once, each
    given by its clusters' sums and sizes alone: ``sums`` and ``counts`` are G x K, column k the
    sum of the labels and their number in each of the G clusters of sample k (every cluster holds
    one label at least). The same intervals as ``classical_mean(y=..., clusters=...)`` of each
    sample's labels, to rounding, without reading the labels again: the mean, the clusters'
    influence totals (S_g - n_g mean) / n and Kish's count n^2 / sum n_g^2 need only these."""
    alpha = check_alpha(alpha)
    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    G = sums.shape[0]
    n = counts.sum(axis=0)
    summed = sums.sum(axis=0)
    means = summed / n
    totals = (sums - counts * means) / n
    variances = [cluster_variance(totals[:, k]) for k in range(sums.shape[1])]
    least = n**2 / np.sum(counts**2, axis=0)
    out = []
    for k, variance in enumerate(variances):
        if G == 1:
            out.append(
                unbounded_interval(
                    mean=float(means[k]),
                    method=CLASSICAL_ROBUST,
                    alpha=alpha,
                    n=int(n[k]),
                    df=0,
                    note=notes.ONE_CLUSTER,
                )
            )
            continue
        out.append(
            _clustered_interval(
                mean=float(means[k]),
                variance=variance,
                count=float(summed[k]),
                n=int(n[k]),
                G=G,
                alpha=alpha,
                factor=1.0,
                least_n=float(least[k]),
            )
        )
    return out


def least_labels(*, codes: np.ndarray, G: int, w: np.ndarray | None, factor: float) -> float:
    """The fewest labels a rate estimated from these clustered, weighted labels is worth, for its
    interval near a bound (``intervals.inside_unit``): Kish's effective count of the clusters
    (``intervals.effective_count``), raised by the finite-population correction ``factor`` as a
    variance is lowered by it (a census is worth every label: an infinite count)."""
    count = effective_count(codes=codes, G=G, w=w)
    return count / factor if factor > 0 else math.inf


def judge_mean(*, yhat_all: ArrayLike, alpha: float, bounded: bool = False) -> Interval:
    """Mean of the judge's labels over all its units (labeled and unlabeled) with the classical
    normal interval of ``ppi_py.classical_mean_ci``. Method ``judge-only``: the interval only
    reflects sampling noise, never the judge's bias. ``bounded`` (the robust method): where that
    interval leaves [0, 1], or a bound is near for the n judge labels, it is cut at the bound and
    widened to the Wilson score interval on them (``intervals.inside_unit``), with a note."""
    alpha = check_alpha(alpha)
    values = vector(yhat_all, name="yhat_all")
    n = values.shape[0]
    if n == 0:
        return nan_interval(method=JUDGE_ONLY, alpha=alpha, n=0, note=notes.NO_JUDGE_LABELS)
    if n == 1:
        return unbounded_interval(
            mean=float(values[0]), method=JUDGE_ONLY, alpha=alpha, n=1, note=notes.ONE_JUDGE_LABEL
        )
    lo, hi = classical_mean_ci(values, alpha=alpha)
    mean, low, high, note = float(values.mean()), float(lo), float(hi), _zero_width_note(values)
    if bounded:
        q = quantile(alpha=alpha, df=None)
        variance = mean * (1 - mean) / n
        bounded_mean, bounded_low, bounded_high, why = inside_unit(mean=mean, variance=variance, q=q, n=n)
        if why:
            mean, low, high, note = bounded_mean, bounded_low, bounded_high, why
    return Interval(mean=mean, lo=low, hi=high, method=JUDGE_ONLY, alpha=alpha, n=n, note=note)
