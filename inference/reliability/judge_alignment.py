"""How well a judge agrees with the human labels, with intervals: agreement, sensitivity and
specificity (Wilson score intervals at the effective number of units), Cohen's kappa, the saving
the judge brings to PPI++ and the most any judge agreeing that often could bring (Dorner, Nastl
and Hardt's ceiling), each with a percentile bootstrap over clusters; and the difference of two
agreements, for drift (Newcombe's hybrid score interval, independent or paired).

Units of one answer (its sentences) or of one question (its repeated answers) are not
independent: a judge that misreads one answer errs on its sentences together. A proportion's
interval is Wilson's at the effective number of units, n p (1 - p) / (n Var_cluster) (Kish's
design effect of the clusters, never more than n); the bootstrap resamples the clusters, each
bringing all its units (the cluster bootstrap, Davison and Hinkley 1997, 3.8).

**The saving a judge brings.** With Y the human label and f the judge's (0/1), PPI++ with its best
lambda and the judge on unlimited units has variance (1 - rho^2) Var(Y) / n, rho the correlation
of Y and f (the phi coefficient of their 2 x 2 table): the judge is worth 1 / (1 - rho^2) times
the human labels, its effective-sample-size factor. Dorner, Nastl and Hardt (ICLR 2025, *Limits
to scalable evaluation at the frontier: LLM as judge won't beat twice the data*, Theorem 6 and
Corollary 7) show that when the judge's agreement rate with the truth is no higher than the rate
being measured (a judge no better than the model it judges), rho^2 <= 1/2, so no debiasing of
that judge saves more than half the labels: the factor is at most 2. At a measured agreement a
and human rate p, the **ceiling** is the largest factor over every 2 x 2 table with that
agreement and that rate (the judge's own rate of 1s free): :func:`dorner_ceiling`. The measured
factor is what this judge gives; the ceiling is what a judge that agrees as often could give at
best, and it is 2 or less whenever a <= p.

No database: label arrays in, figures out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inference.estimators.means import cluster_codes
from inference.intervals import Interval, check_alpha, effective_count, quantile, wilson
from inference.reliability.agreement import cohen_kappa

RESAMPLES = 1000
SEED = 0
WILSON_CLUSTERED = "wilson-clustered"
BOOTSTRAP = "percentile bootstrap over clusters"


def clustered_wilson(
    *, hits: np.ndarray, clusters: Sequence[object] | np.ndarray, alpha: float
) -> Interval | None:
    """The share of 1s among ``hits`` (0/1, one per unit) with the Wilson score interval at the
    effective number of units: p (1 - p) over the variance of the mean with the clusters' units
    together (Kish's design effect), at most the units; at p = 0 or 1, Kish's effective number of
    the clusters. None without units."""
    values = np.asarray(hits, dtype=float).ravel()
    n = values.shape[0]
    if n == 0:
        return None
    codes, G = cluster_codes(np.asarray(clusters).ravel(), length=n)
    p = float(values.mean())
    # The clusters' variance of the mean without the small-sample factor G / (G - 1): one unit per
    # cluster then gives p (1 - p) / n exactly, and Wilson's interval at the n units.
    totals = np.bincount(codes, weights=(values - p) / n, minlength=G)
    variance = float(np.sum(totals**2))
    if 0 < p < 1 and variance > 0:
        n_eff = min(float(n), p * (1 - p) / variance)
    else:
        n_eff = min(float(n), effective_count(codes=codes, G=G))
    n_eff = max(n_eff, 1.0)
    lo, hi = wilson(p=p, n=n_eff, q=quantile(alpha=alpha, df=None))
    return Interval(mean=p, lo=min(lo, p), hi=max(hi, p), method=WILSON_CLUSTERED, alpha=alpha, n=n)


def phi(*, tp: float, fp: float, fn: float, tn: float) -> float:
    """The correlation of the human label and the judge's over a 2 x 2 table (the phi
    coefficient); NaN when either gave one value throughout."""
    margins = (tp + fn) * (fp + tn) * (tp + fp) * (fn + tn)
    if margins <= 0:
        return math.nan
    return (tp * tn - fp * fn) / math.sqrt(margins)


def saving_factor(rho: float) -> float:
    """1 / (1 - rho^2): how many human labels one is worth with the judge on unlimited units and
    PPI++'s best lambda (infinite at rho^2 = 1; 1 for a judge uncorrelated with the humans or
    worse than chance, whose lambda is 0). NaN for NaN."""
    if math.isnan(rho):
        return math.nan
    if rho <= 0:
        return 1.0
    return math.inf if rho >= 1 else 1.0 / (1.0 - rho * rho)


def _ceiling_rho2(agreement: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """The largest rho^2 with a positive correlation over the 2 x 2 tables of human rate p and
    agreement a (vectorised over pairs): with d = 1 - a split into false positives x and false
    negatives d - x (x in [max(0, d - p), min(d, 1 - p)]), the judge's rate is q = p - d + 2x
    and Cov = p (1 - p) - d (1 - p) + x (1 - 2p) = A + B x.

    rho^2 = Cov^2 / (p (1 - p) q (1 - q)) has, inside the range, one stationary point where Cov
    is not 0: its derivative in q is zero where B q (1 - q) = Cov (1 - 2q), which, with Cov
    written A' + (B / 2) q (A' = A - B (p - d) / 2), is linear in q: q* = A' / (B / 2 + 2 A').
    The maximum is at q* or at an end of the range: exact, where a grid over x would only
    approach it. (On a million random pairs it was always at an end, q* a minimum there; q* is
    kept rather than that relied on.)"""
    a = np.clip(np.asarray(agreement, dtype=float), 0.0, 1.0)
    p = np.clip(np.asarray(rate, dtype=float), 0.0, 1.0)
    d = 1 - a
    low = np.maximum(0.0, d - p)
    high = np.minimum(d, 1 - p)
    slope = 1 - 2 * p
    level = p * (1 - p) - d * (1 - p)
    shifted = level - slope * (p - d) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        stationary = (shifted / (slope / 2 + 2 * shifted) - (p - d)) / 2
    inside = np.clip(np.where(np.isfinite(stationary), stationary, low), low, np.maximum(low, high))
    x = np.stack([low, high, inside], axis=-1)
    q = (p - d)[..., None] + 2 * x
    cov = level[..., None] + x * slope[..., None]
    denominator = (p * (1 - p))[..., None] * q * (1 - q)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho2 = np.where((denominator > 1e-15) & (cov > 0), cov * cov / denominator, 0.0)
    best = np.max(np.minimum(rho2, 1.0), axis=-1)
    # An empty range (an agreement no table with that rate reaches) has no ceiling.
    return np.where(high >= low - 1e-12, best, np.nan)


def dorner_ceiling(*, agreement: float, rate: float) -> float:
    """The largest effective-sample-size factor 1 / (1 - rho^2) over every 2 x 2 table with human
    rate ``rate`` and agreement ``agreement`` (the judge's rate free): what any judge agreeing
    that often could save at best. At most 2 when agreement <= rate (Dorner, Nastl and Hardt
    2025, Theorem 6); infinite at agreement 1."""
    if math.isnan(agreement) or math.isnan(rate):
        return math.nan
    if agreement >= 1:
        return math.inf
    rho2 = float(_ceiling_rho2(np.array(agreement), np.array(rate)))
    if math.isnan(rho2):
        return math.nan
    return math.inf if rho2 >= 1 else 1.0 / (1.0 - rho2)


@dataclass(frozen=True)
class Bootstrapped:
    """A figure and its percentile bootstrap interval over clusters (``lo``/``hi`` None when too
    few resamples defined it)."""

    value: float | None
    lo: float | None
    hi: float | None

    def as_dict(self) -> dict[str, float | None]:
        return {"value": self.value, "lo": self.lo, "hi": self.hi}


@dataclass(frozen=True)
class Alignment:
    """A judge against the human labels on ``n`` units in ``clusters`` clusters: the confusion
    counts (judge as the prediction), agreement, sensitivity (of the human 1s, the judge said
    1) and specificity with Wilson intervals at the effective number of units; Cohen's kappa,
    the measured saving factor and the Dorner ceiling with bootstrap intervals over clusters."""

    n: int
    clusters: int
    confusion: dict[str, int]
    human_rate: float | None
    agreement: Interval | None
    sensitivity: Interval | None
    specificity: Interval | None
    kappa: Bootstrapped
    factor: Bootstrapped
    ceiling: Bootstrapped
    alpha: float
    resamples: int


def _tables(y: np.ndarray, f: np.ndarray, codes: np.ndarray, G: int) -> np.ndarray:
    """Per cluster: counts of (tp, fp, fn, tn)."""
    cells = np.stack(
        [(f == 1) & (y == 1), (f == 1) & (y == 0), (f == 0) & (y == 1), (f == 0) & (y == 0)], axis=1
    ).astype(float)
    return np.stack([np.bincount(codes, weights=cells[:, c], minlength=G) for c in range(4)], axis=1)


def _figures(tables: np.ndarray) -> dict[str, np.ndarray]:
    """Kappa, the measured factor and the ceiling of each row of (tp, fp, fn, tn) counts."""
    tp, fp, fn, tn = (tables[:, c] for c in range(4))
    n = tp + fp + fn + tn
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = (tp + tn) / n
        p_h, p_j = (tp + fn) / n, (tp + fp) / n
        chance = p_h * p_j + (1 - p_h) * (1 - p_j)
        kappa = np.where(chance < 1 - 1e-12, (observed - chance) / (1 - chance), np.nan)
        margins = (tp + fn) * (fp + tn) * (tp + fp) * (fn + tn)
        rho = np.where(
            margins > 0, (tp * tn - fp * fn) / np.sqrt(np.where(margins > 0, margins, 1.0)), np.nan
        )
        rho2 = np.where(rho > 0, rho * rho, 0.0)
        factor = np.where(np.isnan(rho), np.nan, np.where(rho2 < 1, 1 / (1 - rho2), np.inf))
        ceiling_rho2 = _ceiling_rho2(observed, p_h)
        ceiling = np.where(observed >= 1, np.inf, np.where(ceiling_rho2 < 1, 1 / (1 - ceiling_rho2), np.inf))
    return {"kappa": kappa, "factor": factor, "ceiling": ceiling}


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _interval(values: np.ndarray, *, alpha: float) -> tuple[float | None, float | None]:
    defined = values[~np.isnan(values)]
    if defined.size < max(2, values.size // 2):
        return None, None
    # A saving factor is infinite where a resample's judge agreed perfectly: a percentile between
    # two infinite values is NaN (numpy warns of inf - inf), read as no bound below.
    with np.errstate(invalid="ignore"):
        bounds = np.percentile(defined, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    lo, hi = (float(value) for value in bounds)
    return (lo if math.isfinite(lo) else None), (hi if math.isfinite(hi) else None)


def alignment(
    *,
    y: Sequence[int] | np.ndarray,
    yhat: Sequence[int] | np.ndarray,
    clusters: Sequence[object] | np.ndarray,
    alpha: float = 0.05,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Alignment:
    """:class:`Alignment` of the judge's 0/1 labels ``yhat`` against the human ones ``y`` on the
    same units, ``clusters`` each unit's cluster (the questions: the bootstrap resamples them,
    each with all its units). Seeded: the same labels give the same intervals."""
    alpha = check_alpha(alpha)
    labels = np.asarray(y, dtype=float).ravel()
    preds = np.asarray(yhat, dtype=float).ravel()
    if labels.shape != preds.shape:
        raise ValueError(f"y and yhat differ in length: {labels.shape[0]} and {preds.shape[0]}")
    if not (np.isin(labels, (0, 1)).all() and np.isin(preds, (0, 1)).all()):
        raise ValueError("alignment needs 0/1 labels")
    n = labels.shape[0]
    codes, G = cluster_codes(np.asarray(clusters).ravel(), length=n)
    tables = _tables(labels, preds, codes, G)
    total = tables.sum(axis=0)
    tp, fp, fn, tn = (int(value) for value in total)
    confusion = {"tp": tp, "fp": fp, "fn": fn, "tn": tn}
    empty = Bootstrapped(None, None, None)
    if n == 0:
        return Alignment(0, 0, confusion, None, None, None, None, empty, empty, empty, alpha, 0)
    agreement = clustered_wilson(hits=(labels == preds), clusters=codes, alpha=alpha)
    positives, negatives = labels == 1, labels == 0
    sensitivity = (
        clustered_wilson(hits=preds[positives] == 1, clusters=codes[positives], alpha=alpha)
        if positives.any()
        else None
    )
    specificity = (
        clustered_wilson(hits=preds[negatives] == 0, clusters=codes[negatives], alpha=alpha)
        if negatives.any()
        else None
    )
    point = _figures(total[np.newaxis, :])
    kappa_value = cohen_kappa(labels.astype(int).tolist(), preds.astype(int).tolist())
    drawn = np.zeros((0, G))
    if G >= 2 and resamples > 0:
        rng = np.random.default_rng(seed)
        drawn = rng.multinomial(G, np.full(G, 1 / G), size=resamples).astype(float)
    boot = _figures(drawn @ tables) if drawn.size else {key: np.zeros(0) for key in point}

    def figure(key: str, value: float | None) -> Bootstrapped:
        lo, hi = _interval(boot[key], alpha=alpha) if drawn.size else (None, None)
        return Bootstrapped(value=value, lo=lo, hi=hi)

    return Alignment(
        n=n,
        clusters=G,
        confusion=confusion,
        human_rate=float(labels.mean()),
        agreement=agreement,
        sensitivity=sensitivity,
        specificity=specificity,
        kappa=figure("kappa", kappa_value),
        factor=figure("factor", _finite(float(point["factor"][0]))),
        ceiling=figure("ceiling", _finite(float(point["ceiling"][0]))),
        alpha=alpha,
        resamples=int(drawn.shape[0]),
    )
