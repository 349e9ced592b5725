"""Agreement between two raters of the same units: Cohen's kappa, the one definition the app uses
(between two people, ``annotation.workflow.agreement``, and between people and a judge), and the
observed and chance agreement and confusion counts of a judge against the human labels.

kappa = (p_o - p_e) / (1 - p_e), computed by scikit-learn's ``cohen_kappa_score``. The one
degenerate case is decided here, the same way everywhere: when chance agreement is certain
(p_e = 1, both raters gave one and the same value throughout, so p_o = 1 as well) kappa is 0/0,
**undefined**, and the app shows a dash. It is never reported as 1: agreement that chance alone
guarantees says nothing about the raters. No pairs: undefined too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from inference.means import vector


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Cohen's kappa of two raters' labels of the same items (``a[i]`` and ``b[i]``), or None
    when undefined (no items, or chance agreement certain). Any label values; binary here."""
    if len(a) != len(b):
        raise ValueError(f"two raters, two label lists of one length: got {len(a)} and {len(b)}")
    if not a or (len(set(a)) == 1 and set(a) == set(b)):
        return None
    # Imported here: scikit-learn's metrics take half a second to import, and most requests
    # never compute a kappa.
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(a, b))


@dataclass(frozen=True)
class Agreement:
    """Human vs judge agreement on the paired units. ``confusion`` counts ``tp``, ``fp``, ``fn``,
    ``tn`` with the judge as the prediction and the human label as the truth."""

    observed: float
    chance: float
    kappa: float
    confusion: dict[str, int] = field(default_factory=dict)
    n: int = 0


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
    kappa = cohen_kappa(labels.astype(int).tolist(), preds.astype(int).tolist())
    return Agreement(
        observed=agree / n,
        chance=expected / (n * n),
        kappa=math.nan if kappa is None else kappa,
        confusion=confusion,
        n=n,
    )
