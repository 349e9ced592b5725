"""Agreement between two raters of the same units: Cohen's kappa, the one definition the app uses
(between two people, ``annotation.workflow.agreement``, and between people and a judge), and the
observed and chance agreement and confusion counts of a judge against the human labels.

kappa = (p_o - p_e) / (1 - p_e), computed as scikit-learn's ``cohen_kappa_score`` computes it. The one
degenerate case is decided here, the same way everywhere: when chance agreement is certain
(p_e = 1, both raters gave one and the same value throughout, so p_o = 1 as well) kappa is 0/0,
**undefined**, and the app shows a dash. It is never reported as 1: agreement that chance alone
guarantees says nothing about the raters. No pairs: undefined too.

Its interval (:func:`bootstrap_kappa`) is a percentile bootstrap over the units, drawn as
Krippendorff's alpha's is (``inference.estimators.bootstrap.pattern_resamples``: a unit is its ordered pair
of labels, so the cost is resamples x the pairs of labels seen).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from inference.estimators.bootstrap import pattern_resamples, percentile_bounds
from inference.estimators.means import vector

# The bootstrap's defaults, as Krippendorff's alpha's (``inference.reliability.krippendorff``).
RESAMPLES = 1000
SEED = 0
MAX_DRAWS = 20_000_000
MIN_RESAMPLES = 200


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Cohen's kappa of two raters' labels of the same items (``a[i]`` and ``b[i]``), or None
    when undefined (no items, or chance agreement certain). Any label values; binary here.

    The arithmetic of scikit-learn's ``cohen_kappa_score`` (unweighted), step for step on the
    same float64 arrays, so the value is the same to the last bit (tests compare the two): the
    confusion matrix over the sorted values seen, chance's expected matrix from its margins, 1 -
    the off-diagonal sum over chance's off-diagonal sum. Without scikit-learn's checks of its
    inputs, which cost some milliseconds a call: a report computes hundreds of kappas."""
    if len(a) != len(b):
        raise ValueError(f"two raters, two label lists of one length: got {len(a)} and {len(b)}")
    if _undefined(a, b):
        return None
    first, second = np.asarray(a), np.asarray(b)
    values = np.union1d(first, second)
    confusion = np.zeros((len(values), len(values)), dtype=np.int64)
    np.add.at(confusion, (np.searchsorted(values, first), np.searchsorted(values, second)), 1)
    matrix = confusion.astype(np.float64)
    sum0 = np.sum(matrix, axis=0)
    sum1 = np.sum(matrix, axis=1)
    expected = np.outer(sum0, sum1) / np.sum(sum0)
    weights = np.ones([len(values), len(values)], dtype=np.float64)
    np.fill_diagonal(weights, 0)
    k = np.sum(weights * matrix) / np.sum(weights * expected)
    return float(1 - k)


def _undefined(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether :func:`cohen_kappa` is undefined: no items, or both raters gave one and the same
    value throughout (chance agreement certain)."""
    return not a or (len(set(a)) == 1 and set(a) == set(b))


@dataclass(frozen=True)
class Agreement:
    """Human vs judge agreement on the paired units. ``confusion`` counts ``tp``, ``fp``, ``fn``,
    ``tn`` with the judge as the prediction and the human label as the truth."""

    observed: float
    chance: float
    kappa: float
    confusion: dict[str, int] = field(default_factory=dict)
    n: int = 0
    # Kappa's bootstrap interval over the paired units (:func:`bootstrap_kappa`), None where
    # kappa is undefined or fewer than two units are paired.
    kappa_interval: KappaInterval | None = None


def agreement(*, y: ArrayLike, yhat: ArrayLike) -> Agreement:
    """Observed agreement, chance agreement p_h p_j + (1 - p_h)(1 - p_j), Cohen's kappa
    (observed - chance) / (1 - chance) (:func:`cohen_kappa`: NaN where undefined, that is with no
    pairs or when chance is 1) and the confusion counts of judge ``yhat`` against human ``y``
    (both 0/1)."""
    labels = vector(y, name="y")
    preds = vector(yhat, name="yhat", length=labels.shape[0])
    if not (np.isin(labels, (0, 1)).all() and np.isin(preds, (0, 1)).all()):
        raise ValueError("agreement needs 0/1 labels")
    n = int(labels.shape[0])
    tp = int(np.sum((preds == 1) & (labels == 1)))
    fp = int(np.sum((preds == 1) & (labels == 0)))
    fn = int(np.sum((preds == 0) & (labels == 1)))
    tn = n - tp - fp - fn
    confusion = {"tp": tp, "fp": fp, "fn": fn, "tn": tn}
    if n == 0:
        return Agreement(observed=math.nan, chance=math.nan, kappa=math.nan, confusion=confusion, n=0)
    agree = tp + tn
    expected = (tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)
    human, judge = labels.astype(int).tolist(), preds.astype(int).tolist()
    kappa = cohen_kappa(human, judge)
    return Agreement(
        observed=agree / n,
        chance=expected / (n * n),
        kappa=math.nan if kappa is None else kappa,
        confusion=confusion,
        n=n,
        kappa_interval=bootstrap_kappa(human, judge),
    )


@dataclass(frozen=True)
class KappaInterval:
    """A bootstrap percentile interval of Cohen's kappa: ``lo``, ``hi`` at ``level``, from
    ``resamples`` resamples of the units, ``undefined`` of which gave no kappa (left out)."""

    lo: float
    hi: float
    level: float
    resamples: int
    undefined: int

    def as_dict(self) -> dict[str, float | int | str]:
        return {
            "lo": self.lo,
            "hi": self.hi,
            "level": self.level,
            "resamples": self.resamples,
            "undefined": self.undefined,
            "method": "percentile bootstrap over units",
        }


def _kappas(drawn: np.ndarray, pairs: list[tuple[int, int]], values: list[int]) -> np.ndarray:
    """Cohen's kappa of each resample (rows of ``drawn``: how many units of each pair of labels),
    as scikit-learn computes it: 1 - sum of the off-diagonal counts / sum of the off-diagonal
    counts chance expects; NaN where chance agreement is certain."""
    index = {value: i for i, value in enumerate(values)}
    k = len(values)
    cells = np.zeros((len(pairs), k * k))
    for p, (a, b) in enumerate(pairs):
        cells[p, index[a] * k + index[b]] = 1.0
    matrices = (drawn @ cells).reshape(-1, k, k)
    n = matrices.sum(axis=(1, 2))
    expected = matrices.sum(axis=2)[:, :, None] * matrices.sum(axis=1)[:, None, :] / n[:, None, None]
    off = 1.0 - np.eye(k)
    observed_off = (matrices * off).sum(axis=(1, 2))
    expected_off = (expected * off).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 1.0 - observed_off / expected_off
    return np.where(expected_off > 0, kappa, np.nan)


def bootstrap_kappa(
    a: Sequence[int],
    b: Sequence[int],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = 0.95,
) -> KappaInterval | None:
    """Percentile bootstrap interval of :func:`cohen_kappa` of the units ``(a[i], b[i])``: the
    units drawn with replacement ``resamples`` times (seeded: the same labels give the same
    interval), kappa computed on each, the middle ``level`` of the defined ones. None when kappa
    itself is undefined or there are fewer than two units."""
    if len(a) != len(b):
        raise ValueError(f"two raters, two label lists of one length: got {len(a)} and {len(b)}")
    if len(a) < 2 or _undefined(list(a), list(b)):
        return None
    shared: dict[tuple[int, int], int] = {}
    for pair in zip(a, b, strict=True):
        shared[pair] = shared.get(pair, 0) + 1
    pairs = list(shared)
    values = sorted({value for pair in pairs for value in pair})
    drawn = pattern_resamples(
        np.array(list(shared.values()), dtype=float),
        resamples=resamples,
        seed=seed,
        max_draws=MAX_DRAWS,
        min_resamples=MIN_RESAMPLES,
    )
    every = _kappas(drawn.astype(float), pairs, values)
    defined = every[~np.isnan(every)]
    if not len(defined):
        return None
    lo, hi = percentile_bounds(defined, level=level)
    return KappaInterval(
        lo=lo, hi=hi, level=level, resamples=len(drawn), undefined=int(len(every) - len(defined))
    )
