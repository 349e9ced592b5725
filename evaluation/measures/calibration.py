"""How well a judge's confidence is calibrated against the final human labels.

For a binary criterion, the judge's probability that a unit's label is 1 is its confidence when
it said 1, one minus it when it said 0 (``evaluation.judge.confidence``). Against the final human
labels y of the units both labelled:

- **Brier score**: mean of (p - y)^2; 0 is perfect, 0.25 is a constant 0.5.
- **Reliability**: the units in ten bins of equal width of p; per bin, the mean p beside the
  share of human 1s. A calibrated judge's points lie on the diagonal.
- **Expected calibration error (ECE)**: sum over bins of (units in the bin / units) x |mean p -
  share of 1s| (Naeini, Cooper and Hauskrecht 2015; Guo et al. 2017), on the same ten bins.

The same figures **after recalibration**: the confidence read through Platt's map
(``inference.reliability.calibration``), each unit's from the map fitted without its fold of answers, as the
estimates read it (``evaluation.estimates.report``); the map fitted on every label is shown too.

Pure functions of arrays, then one that reads a judge's judgments and the final labels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from annotation.models import Criterion, Label
from annotation.workflow import final_labels
from evaluation import page_cache
from evaluation.models import Judge, Judgment
from inference.reliability.calibration import Platt, crossfit

BINS = 10
# Which edge a bin holds: its lower one (b/bins <= p < (b+1)/bins, the default), or its upper one
# as scikit-learn's calibration_curve does (np.searchsorted on the inner edges: b/bins < p <=
# (b+1)/bins, p = 0 in the first bin).
LOWER, SKLEARN = "lower", "sklearn"
EDGES = (LOWER, SKLEARN)


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
    (``unscored``: units with a final label whose judgment has no confidence). ``after``: the
    same figures of the recalibrated confidence, cross-fitted, and ``platt`` the map fitted on
    every label, when there were enough labels to fit one
    (``inference.reliability.calibration.MIN_LABELS``)."""

    count: int
    unscored: int
    brier: float | None
    ece: float | None
    bins: list[Bin]
    after: Calibration | None = None
    platt: Platt | None = None
    folds: int = 0


def probability_of_one(*, value: int, confidence: float) -> float:
    """The judge's probability that the label is 1, from its label and its confidence in it."""
    return confidence if value == 1 else 1.0 - confidence


def calibration(
    probabilities: np.ndarray, labels: np.ndarray, *, unscored: int = 0, bins: int = BINS, edges: str = LOWER
) -> Calibration:
    """Brier score, ECE and reliability bins of probabilities p (of a 1) against 0/1 labels;
    ``edges``: which edge of its bin a probability on one goes to (``EDGES``)."""
    p = np.asarray(probabilities, dtype=float)
    y = np.asarray(labels, dtype=float)
    if p.shape != y.shape:
        raise ValueError("probabilities and labels differ in length")
    if p.size == 0:
        return Calibration(count=0, unscored=unscored, brier=None, ece=None, bins=[])
    if edges == SKLEARN:
        which = np.searchsorted(np.linspace(0.0, 1.0, bins + 1)[1:-1], p)
    elif edges == LOWER:
        # Bin b holds b/bins <= p < (b+1)/bins; p = 1 goes to the last bin.
        which = np.minimum((p * bins).astype(int), bins - 1)
    else:
        raise ValueError(f"edges must be one of {', '.join(EDGES)}, got {edges!r}")
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
    """The judge's calibration on the criterion's units that have a final human label, kept in
    the page cache under what it reads (``page_cache.estimates_key``'s criterion, labels and
    judgments, without the samples, which it does not read)."""
    key = page_cache.estimates_key(criterion=criterion, judge=judge, samples=False)
    return page_cache.cached("calibration", key, lambda: _judge_calibration(criterion=criterion, judge=judge))


def _judge_calibration(*, criterion: Criterion, judge: Judge) -> Calibration:
    """``judge_calibration`` computed: one query for the judgments of the labelled units (a
    subquery on the criterion's labels: a judge of a million units is read for its few thousand
    labelled ones), and those of ``final_labels``."""
    finals = final_labels(criterion=criterion)
    labelled = Label.objects.filter(criterion=criterion).values("unit_id")
    rows = (
        Judgment.objects.filter(
            criterion=criterion, judge=judge, status=Judgment.Status.OK, unit_id__in=labelled
        )
        .values_list("unit_id", "value", "confidence", "unit__answer_id")
        .order_by("unit_id")
    )
    probabilities, labels, answers, unscored = [], [], [], 0
    for unit_id, value, confidence, answer_id in rows:
        if unit_id not in finals or value is None:
            continue
        if confidence is None:
            unscored += 1
            continue
        probabilities.append(probability_of_one(value=value, confidence=confidence))
        labels.append(finals[unit_id])
        answers.append(answer_id)
    p, y = np.array(probabilities), np.array(labels)
    before = calibration(p, y, unscored=unscored)
    if not before.count or not set(labels) <= {0, 1}:
        return before
    fit = crossfit(confidence=p, labels=y, clusters=answers)
    if not fit.fitted:
        return before
    return replace(
        before, after=calibration(fit.labeled, y, unscored=unscored), platt=fit.whole, folds=len(fit.maps)
    )
