"""A judge's confidence recalibrated on human labels: Platt scaling, and its cross-fitted use.

A judge's confidence c (its probability that the label is 1) drives the confidence-driven
design (units drawn in proportion to sqrt(c (1 - c))), the budget split, the anytime mode and the
inverse-probability PPI++ estimate (the residual y - c). A judge sure of itself and often wrong
(an overconfident one) then leaves its errors where the design samples least, and the estimate's
interval misses them: 68-81% coverage in bench/coverage_grid.py at 20 to 60 labels. The fix is to
read the confidence through the human labels already made: **Platt scaling** (Platt 1999,
*Probabilistic outputs for support vector machines*), p = sigmoid(a logit(c) + b), fitted by
maximum likelihood with Platt's own targets for the labels, (n_1 + 1) / (n_1 + 2) for a 1 and
1 / (n_0 + 2) for a 0, which keep the fit finite when the labels are all equal or perfectly
separated (a few dozen labels often are). Two parameters: an overconfident judge (logits three
times too large) gets a = 1/3 back, a shifted one its intercept, an anti-correlated one a
negative slope; a calibrated one stays near a = 1, b = 0. Isotonic regression, the other usual
choice, has as many steps as the labels allow and needs hundreds of them.

**Cross-fitted.** A label must not correct a prediction that was fitted on it: fitted on the same
labels, the map would make their residuals y - p too small and the interval too narrow. The
labeled units' clusters (answers) are cut into ``FOLDS`` folds; each fold's units get the map
fitted on the other folds (:func:`crossfit`), and the judge's mean over every unit is the mean
of the fold maps' means (cross-prediction-powered inference, Zrnic and Candès 2024). Below
``MIN_LABELS`` labels nothing is fitted (the identity map): two parameters from a handful of
labels would add more noise than they remove.

No database: arrays in, arrays out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, logit

# Fewer labels with a confidence than this and the confidence is used as the judge gave it.
MIN_LABELS = 20
# Folds of the cross-fitting (fewer when there are fewer clusters).
FOLDS = 5
# Confidences are read within [EPS, 1 - EPS]: a judge's 0 or 1 has an infinite logit.
EPS = 1e-6
_ITERATIONS = 100
# The width, on the logit scale, of the bins a group's confidences are counted in (``histogram``).
LOGIT_WIDTH = 0.02


@dataclass(frozen=True)
class Platt:
    """p = sigmoid(slope * logit(c) + intercept), fitted on ``labels`` labels (0: the identity,
    not fitted)."""

    slope: float = 1.0
    intercept: float = 0.0
    labels: int = 0

    @property
    def fitted(self) -> bool:
        return self.labels > 0

    def apply(self, confidence: ArrayLike) -> np.ndarray:
        """The recalibrated probabilities of a 1 (the confidences themselves when not fitted)."""
        c = np.asarray(confidence, dtype=float)
        if not self.fitted:
            return c
        return expit(self.slope * logit(np.clip(c, EPS, 1 - EPS)) + self.intercept)

    def as_json(self) -> dict[str, float | int]:
        return {"slope": self.slope, "intercept": self.intercept, "labels": self.labels}

    @classmethod
    def from_json(cls, data: dict | None) -> Platt:
        if not data:
            return IDENTITY
        return cls(slope=float(data["slope"]), intercept=float(data["intercept"]), labels=int(data["labels"]))


IDENTITY = Platt()


def _checked(confidence: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(confidence, dtype=float).ravel()
    y = np.asarray(labels, dtype=float).ravel()
    if c.shape != y.shape:
        raise ValueError(f"confidence has {c.size} values, labels {y.size}")
    if not np.all(np.isfinite(c)) or np.any(c < 0) or np.any(c > 1):
        raise ValueError("confidence: every value must be a probability in [0, 1]")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("labels must be 0 or 1")
    return c, y


def fit_platt(*, confidence: ArrayLike, labels: ArrayLike, least: int = MIN_LABELS) -> Platt:
    """Platt's map fitted on the 0/1 ``labels`` of units whose judge's confidences are
    ``confidence``: Newton's method with a backtracking line search on the log-likelihood with
    Platt's targets, from his starting point (slope 0, the intercept of the smoothed base rate),
    as Lin, Lin and Weng (2007) make it robust. The identity below ``least`` labels
    (``MIN_LABELS``), or with none."""
    c, y = _checked(confidence, labels)
    n = c.size
    if n < max(least, 1):
        return IDENTITY
    s = logit(np.clip(c, EPS, 1 - EPS))
    ones = float(y.sum())
    zeros = n - ones
    target = np.where(y == 1, (ones + 1) / (ones + 2), 1 / (zeros + 2))

    def loss(slope: float, intercept: float) -> float:
        z = slope * s + intercept
        # -[t log p + (1 - t) log(1 - p)] with p = sigmoid(z), written stably.
        return float(np.sum(np.logaddexp(0.0, z) - target * z))

    slope, intercept = 0.0, math.log((ones + 1) / (zeros + 1))
    current = loss(slope, intercept)
    for _ in range(_ITERATIONS):
        p = expit(slope * s + intercept)
        residual = p - target
        weight = p * (1 - p)
        g_slope, g_intercept = float(residual @ s), float(residual.sum())
        h_ss, h_si, h_ii = float(weight @ (s * s)) + 1e-12, float(weight @ s), float(weight.sum()) + 1e-12
        determinant = h_ss * h_ii - h_si * h_si
        if determinant <= 0:
            break
        step_slope = (h_ii * g_slope - h_si * g_intercept) / determinant
        step_intercept = (h_ss * g_intercept - h_si * g_slope) / determinant
        decrease = g_slope * step_slope + g_intercept * step_intercept
        size = 1.0
        while size > 1e-10:
            trial = (slope - size * step_slope, intercept - size * step_intercept)
            value = loss(*trial)
            if value <= current - 1e-4 * size * decrease:
                break
            size /= 2
        else:
            break
        (slope, intercept), current = trial, value
        if max(abs(size * step_slope), abs(size * step_intercept)) < 1e-9:
            break
    theta = (slope, intercept)
    return Platt(slope=float(theta[0]), intercept=float(theta[1]), labels=n)


def folds_of(clusters: ArrayLike, *, folds: int = FOLDS) -> np.ndarray:
    """The fold (0..K-1) of each labeled unit, by its cluster: the clusters, in a fixed random
    order (seed 0, so a report is reproducible), dealt round the K = min(``folds``, clusters)
    folds, so that a cluster's units share their fold."""
    raw = np.asarray(clusters).ravel()
    if raw.size == 0:
        return np.zeros(0, dtype=int)
    _, codes = np.unique(raw, return_inverse=True)
    G = int(codes.max()) + 1
    k = max(1, min(folds, G))
    deal = np.random.default_rng(0).permutation(G) % k
    return deal[codes.ravel()]


@dataclass(frozen=True)
class Crossfit:
    """A cross-fitted recalibration: ``labeled`` the labeled units' probabilities, each from the
    map fitted without its fold; ``maps`` the folds' maps; ``whole`` the map fitted on every
    label (what the report shows as "after", never used on the labels it saw)."""

    labeled: np.ndarray
    maps: tuple[Platt, ...]
    whole: Platt
    folds: np.ndarray | None = None

    @property
    def fitted(self) -> bool:
        return self.whole.fitted

    def mean_of(
        self,
        confidence: ArrayLike,
        counts: ArrayLike | None = None,
        *,
        rows: ArrayLike | None = None,
        weights: ArrayLike | None = None,
    ) -> float:
        """The judge's recalibrated mean over a group of units whose confidences are
        ``confidence`` (each standing for ``counts`` units when given): the folds' maps' means,
        each weighted by its fold's share of the group's labeled units (``rows``, indices into
        the labels the maps were fitted on; all of them without it) and of their design
        ``weights`` (equal without them). With those shares the group's estimate is the weighted
        mean of one PPI++ estimate per fold, mean_all f_k + mean_w,k(y - f_k), whose error no
        longer moves with a fold's map to first order (an equal share per fold would leave it a
        fold's luck in size)."""
        c = np.asarray(confidence, dtype=float).ravel()
        units = np.ones(c.size) if counts is None else np.asarray(counts, dtype=float).ravel()
        total = float(units.sum())
        if total <= 0:
            return math.nan
        means = np.array([np.sum(units * fold.apply(c)) / total for fold in self.maps])
        if self.folds is None or len(self.maps) == 1:
            return float(np.mean(means))
        folds = self.folds if rows is None else self.folds[np.asarray(rows, dtype=int)]
        w = np.ones(folds.size) if weights is None else np.asarray(weights, dtype=float).ravel()
        shares = np.bincount(folds, weights=w, minlength=len(self.maps))
        if shares.sum() <= 0:
            return float(np.mean(means))
        return float(np.sum(shares * means) / np.sum(shares))


def histogram(confidence: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The confidences of a group of units as (value, count) pairs, one per non-empty bin of
    width ``LOGIT_WIDTH`` on the logit scale (its value the exact mean of its confidences): what
    the judge's mean over a group needs of them (``Crossfit.mean_of``), from however many units.
    Bins of the logit, not of the probability: an overconfident judge puts thousands of units
    between 0.999 and 1, where a map with slope 1/3 still spreads them from 0.91 to 0.99. The
    app reads the same bins from the database (``evaluation.estimates.weights.predictions``);
    the identity map gives back the exact mean."""
    c = np.asarray(confidence, dtype=float).ravel()
    which = logit_bin(c)
    keys, codes = np.unique(which, return_inverse=True)
    counts = np.bincount(codes, minlength=keys.size)
    sums = np.bincount(codes, weights=c, minlength=keys.size)
    return sums / counts, counts.astype(float)


def logit_bin(confidence: np.ndarray) -> np.ndarray:
    """The bin of each confidence: floor(logit(c) / ``LOGIT_WIDTH``), c read within [EPS, 1 - EPS]."""
    return np.floor(logit(np.clip(confidence, EPS, 1 - EPS)) / LOGIT_WIDTH).astype(np.int64)


def crossfit(*, confidence: ArrayLike, labels: ArrayLike, clusters: ArrayLike | None = None) -> Crossfit:
    """Platt's map cross-fitted over the folds of the labeled units' ``clusters`` (each unit its
    own without them): see the module. With fewer than ``MIN_LABELS`` labels, or a single
    cluster (no fold can be left out), every map is the identity."""
    c, y = _checked(confidence, labels)
    whole = fit_platt(confidence=c, labels=y)
    if not whole.fitted:
        return Crossfit(labeled=c.copy(), maps=(IDENTITY,), whole=IDENTITY)
    fold = folds_of(np.arange(c.size) if clusters is None else clusters)
    maps = []
    out = np.empty(c.size)
    for k in range(int(fold.max()) + 1):
        inside = fold == k
        # The whole fit decided that there are labels enough; each fold's map is fitted on the
        # others' (four fifths of them), however few that leaves above none.
        fitted = fit_platt(confidence=c[~inside], labels=y[~inside], least=1)
        if not fitted.fitted:
            return Crossfit(labeled=c.copy(), maps=(IDENTITY,), whole=IDENTITY)
        maps.append(fitted)
        out[inside] = fitted.apply(c[inside])
    return Crossfit(labeled=out, maps=tuple(maps), whole=whole, folds=fold)
