"""How well a judge's confidence is calibrated against the final human labels.

For a binary criterion, the judge's probability that a unit's label is 1 is its confidence when
it said 1, one minus it when it said 0 (``evaluation.judge.confidence``). Against the final human
labels y of the units both labelled:

- **Brier score**: mean of (p - y)^2; 0 is perfect, 0.25 is a constant 0.5.
- **Reliability**: the units in ten bins of equal width of p; per bin, the mean p beside the
  share of human 1s. A calibrated judge's points lie on the diagonal.
- **Expected calibration error (ECE)**: sum over bins of (units in the bin / units) x |mean p -
  share of 1s| (Naeini, Cooper and Hauskrecht 2015; Guo et al. 2017), on the same ten bins.

Pure functions of arrays, then one that reads a judge's judgments and the final labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from annotation.models import Criterion
from annotation.workflow import final_labels
from evaluation.models import Judge, Judgment

BINS = 10


@dataclass(frozen=True)
class Bin:
    low: float
    high: float
    count: int
    mean_probability: float
    observed: float


@dataclass(frozen=True)
class Calibration:
    """A judge's calibration over ``count`` units with a confidence and a final human label
    (``unscored``: units with a final label whose judgment has no confidence)."""

    count: int
    unscored: int
    brier: float | None
    ece: float | None
    bins: list[Bin]


def probability_of_one(*, value: int, confidence: float) -> float:
    """The judge's probability that the label is 1, from its label and its confidence in it."""
    return confidence if value == 1 else 1.0 - confidence


def calibration(
    probabilities: np.ndarray, labels: np.ndarray, *, unscored: int = 0, bins: int = BINS
) -> Calibration:
    """Brier score, ECE and reliability bins of probabilities p (of a 1) against 0/1 labels."""
    p = np.asarray(probabilities, dtype=float)
    y = np.asarray(labels, dtype=float)
    if p.shape != y.shape:
        raise ValueError("probabilities and labels differ in length")
    if p.size == 0:
        return Calibration(count=0, unscored=unscored, brier=None, ece=None, bins=[])
    # Bin b holds b/bins <= p < (b+1)/bins; p = 1 goes to the last bin.
    which = np.minimum((p * bins).astype(int), bins - 1)
    found: list[Bin] = []
    ece = 0.0
    for b in range(bins):
        inside = which == b
        n = int(inside.sum())
        if not n:
            continue
        mean_p, observed = float(p[inside].mean()), float(y[inside].mean())
        ece += n / p.size * abs(mean_p - observed)
        found.append(
            Bin(low=b / bins, high=(b + 1) / bins, count=n, mean_probability=mean_p, observed=observed)
        )
    return Calibration(
        count=int(p.size), unscored=unscored, brier=float(np.mean((p - y) ** 2)), ece=ece, bins=found
    )


def judge_calibration(*, criterion: Criterion, judge: Judge) -> Calibration:
    """The judge's calibration on the criterion's units that have a final human label: one query
    for the judgments, and those of ``final_labels``."""
    finals = final_labels(criterion=criterion)
    rows = Judgment.objects.filter(criterion=criterion, judge=judge, status=Judgment.Status.OK).values_list(
        "unit_id", "value", "confidence"
    )
    probabilities, labels, unscored = [], [], 0
    for unit_id, value, confidence in rows:
        if unit_id not in finals or value is None:
            continue
        if confidence is None:
            unscored += 1
            continue
        probabilities.append(probability_of_one(value=value, confidence=confidence))
        labels.append(finals[unit_id])
    return calibration(np.array(probabilities), np.array(labels), unscored=unscored)
