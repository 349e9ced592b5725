"""Inclusion probabilities of the labeled units when the labels of a theme come from several of a
criterion's samples, and the judge's confidence the inverse-probability PPI reads.

**Several samples.** The current sample (``annotation.sampling.current``) gives its items'
probabilities. When a theme's labeled units are not all in it but each is in at least one sample
of the criterion (an older sample, a top-up with another design), the theme's units are weighted
by their probability of having been drawn by any of those samples, 1 - prod_k (1 - pi_k,i)
(``inference.designs.inclusion.union_inclusion_probabilities``; the samples' draws are independent:
each ignores the others' outcome). pi_k,i of a unit sample k drew is its recorded probability;
of a unit it did not draw:

- a confidence-driven sample: recomputed exactly from its recorded shape and what its judge
  said of the unit, the confidence the design followed and, for a sample split by verdict, the
  verdict (``evaluation.designs.active.design_probabilities``);
- an anytime batch (``evaluation.designs.anytime``): 1 - (1 - q_i)^T, q_i recomputed from its recorded
  shape and the confidence its design followed, T the theme's draws in the sequence
  (``evaluation.designs.anytime.sequence_probabilities``); a sequence's earlier batches are left out, as
  its latest batch holds all their units (they are not independent samples);
- a K-means sample: it records the clusters of its drawn units only, so a unit it did not draw
  counts with its theme's rate, drawn / N (the mean of its clusters' rates weighted by their
  sizes): an approximation, exact when the theme's clusters have one rate.

A theme with a labeled unit in no sample keeps equal weights, with a note (as before).

**The judge's confidence as the prediction.** c_i is the judge's probability that the label is
1 (``evaluation.measures.calibration.probability_of_one``), its 0/1 verdict when it gave no confidence,
and 1/2 on a unit it did not judge: any fixed c keeps the estimator unbiased, a better one only
narrows the interval.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Case, Count, F, FloatField, Q, Sum, Value, When
from django.db.models.functions import Floor, Greatest, Least, Ln

from annotation.models import Criterion, Sample, SampleItem, Unit
from evaluation.designs.active import Judged, design_probabilities, judged_units
from evaluation.designs.anytime_status import sequence_probabilities
from evaluation.models import Judge, Judgment
from inference.designs.inclusion import UNKNOWN, union_inclusion_probabilities
from inference.reliability.calibration import EPS, LOGIT_WIDTH, Crossfit

ID_CHUNK = 900
# Designs whose probabilities follow a judge's confidence.
JUDGE_DESIGNS = (Sample.Design.CONFIDENCE, Sample.Design.SEQUENTIAL)


@dataclass
class Pooled:
    """Union probabilities of the labeled units of the ``pooled`` themes, and the themes whose
    labels a confidence-driven sample fed (``confidence``)."""

    probability: dict[int, float] = field(default_factory=dict)
    pooled: set[str] = field(default_factory=set)
    confidence: set[str] = field(default_factory=set)


def _chunks(ids: list[int]) -> Iterable[list[int]]:
    for start in range(0, len(ids), ID_CHUNK):
        yield ids[start : start + ID_CHUNK]


def _independent(samples: Iterable[Sample]) -> dict[int, Sample]:
    """The samples by id, an anytime sequence by its latest batch only (``samples`` oldest
    first): a batch holds every unit of the earlier ones, so they are one sample, not several."""
    out: dict[int, Sample] = {}
    latest: dict[str, int] = {}
    for sample in samples:
        if sample.design == Sample.Design.SEQUENTIAL:
            sequence = str(sample.design_parameters.get("sequence", sample.pk))
            if sequence in latest:
                del out[latest[sequence]]
            latest[sequence] = sample.pk
        out[sample.pk] = sample
    return out


@dataclass
class Predictions:
    """The judge's probabilities of a 1 over one (theme, difficulty) cell, as the estimator reads
    them: the units it gave a confidence counted in the bins of ``calibration.histogram`` (of
    width ``LOGIT_WIDTH`` on the logit scale)
    (``scored``: each bin's exact mean and count), and the units it labeled with a verdict alone
    (``verdicts``, ``verdict_sum``: their 0/1 labels summed)."""

    scored: list[tuple[float, int]] = field(default_factory=list)
    verdicts: int = 0
    verdict_sum: float = 0.0

    @property
    def judged(self) -> int:
        return sum(count for _, count in self.scored) + self.verdicts


def predictions(*, criterion: Criterion, judge: Judge) -> dict[tuple[str, str], Predictions]:
    """Per (theme, difficulty): the judge's probabilities of a 1 (:class:`Predictions`), in one
    query whose rows are at most the cells times the bins, whatever the number of units."""
    probability = Case(
        When(value=1, then=F("confidence")),
        default=Value(1.0) - F("confidence"),
        output_field=FloatField(),
    )
    scored = Q(confidence__isnull=False)
    # The bins of inference.reliability.calibration.histogram, computed in SQL: floor(logit(p) / width), p
    # read within [EPS, 1 - EPS].
    inside = Greatest(Least(probability, Value(1 - EPS)), Value(EPS), output_field=FloatField())
    rows = (
        Judgment.objects.filter(
            judge=judge,
            criterion=criterion,
            status=Judgment.Status.OK,
            value__isnull=False,
            unit__level=criterion.level,
        )
        .annotate(
            bin=Case(
                When(scored, then=Floor(Ln(inside / (Value(1.0) - inside)) / Value(LOGIT_WIDTH))),
                default=Value(None),
                output_field=FloatField(),
            ),
            prediction=Case(
                When(scored, then=probability), default=F("value") * 1.0, output_field=FloatField()
            ),
        )
        .values("unit__theme", "unit__difficulty", "bin")
        .annotate(n=Count("id"), total=Sum("prediction"))
        .order_by()
    )
    out: dict[tuple[str, str], Predictions] = defaultdict(Predictions)
    for row in rows:
        cell = out[(row["unit__theme"], row["unit__difficulty"])]
        total = float(row["total"] or 0.0)
        if row["bin"] is None:
            cell.verdicts += row["n"]
            cell.verdict_sum += total
        else:
            cell.scored.append((total / row["n"], row["n"]))
    return dict(out)


def prediction_mean(
    *,
    cells: Mapping[tuple[str, str], Predictions],
    keys: Iterable[tuple[str, str]],
    size: int,
    calibration: Crossfit | None = None,
    rows: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> float:
    """The judge's mean probability of a 1 over a group of ``size`` units made of the ``keys``
    cells, 1/2 where it did not judge; the confidences read through the cross-fitted
    ``calibration`` when one is given (``Crossfit.mean_of``, with the group's labeled ``rows`` of
    it and their design ``weights``), its verdicts as they are."""
    found = [cells[key] for key in keys if key in cells]
    values = [value for cell in found for value, _ in cell.scored]
    counts = [count for cell in found for _, count in cell.scored]
    scored = sum(counts)
    total = sum(cell.verdict_sum for cell in found)
    if scored:
        if calibration is not None and calibration.fitted:
            total += scored * calibration.mean_of(values, counts, rows=rows, weights=weights)
        else:
            total += float(np.dot(values, counts))
    judged = scored + sum(cell.verdicts for cell in found)
    return (total + UNKNOWN * max(size - judged, 0)) / size if size else UNKNOWN


def pool(
    *, criterion: Criterion, current: Sample | None, labeled: Mapping[int, tuple[str, float | None]]
) -> Pooled:
    """What :mod:`evaluation.estimates.report` needs beyond the current sample's probabilities:
    ``labeled`` maps every labeled unit to its theme and its probability in the current sample
    (None when the current sample did not draw it). No query when every labeled unit is in the
    current sample."""
    result = Pooled()
    if current is None:
        return result
    if current.design in JUDGE_DESIGNS:
        result.confidence = {theme for theme, _ in labeled.values()}
    missing = {theme for theme, pi in labeled.values() if pi is None}
    if not missing:
        return result
    by_theme: dict[str, list[int]] = defaultdict(list)
    for unit_id, (theme, _) in labeled.items():
        if theme in missing:
            by_theme[theme].append(unit_id)
    ids = sorted(unit_id for units in by_theme.values() for unit_id in units)
    samples = _independent(
        Sample.objects.filter(criterion=criterion, items__isnull=False)
        .distinct()
        .order_by("created_at", "pk")
    )
    drawn: dict[int, dict[int, float]] = defaultdict(dict)
    for chunk in _chunks(ids):
        for sample_id, unit_id, pi in SampleItem.objects.filter(
            sample_id__in=list(samples), unit_id__in=chunk
        ).values_list("sample_id", "unit_id", "inclusion_probability"):
            drawn[sample_id][unit_id] = float(pi)
    covered = {unit_id for units in drawn.values() for unit_id in units}
    themes = [theme for theme, units in sorted(by_theme.items()) if set(units) <= covered]
    if not themes:
        return result
    sizes = dict(
        Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level, theme__in=themes)
        .values_list("theme")
        .annotate(n=Count("id"))
        .values_list("theme", "n")
    )
    rates = {
        (row["sample_id"], row["theme"]): row["n"]
        for row in SampleItem.objects.filter(sample_id__in=list(samples), theme__in=themes)
        .values("sample_id", "theme")
        .annotate(n=Count("id"))
        .order_by()
    }
    judged: dict[int, dict[int, Judged]] = {}
    for theme in themes:
        units = sorted(by_theme[theme])
        rows = []
        for sample_id, sample in sorted(samples.items()):
            if sample.design in JUDGE_DESIGNS:
                judge_id = int(sample.design_parameters.get("judge_id", 0))
                if judge_id not in judged:
                    judged[judge_id] = {}
                    for chunk in _chunks(ids):
                        judged[judge_id].update(
                            judged_units(criterion=criterion, judge_id=judge_id, unit_ids=chunk)
                        )
                if sample.design == Sample.Design.CONFIDENCE:
                    recomputed = design_probabilities(
                        sample=sample, themes=dict.fromkeys(units, theme), judged=judged[judge_id]
                    )
                else:
                    recomputed = sequence_probabilities(
                        sample=sample, themes=dict.fromkeys(units, theme), judged=judged[judge_id]
                    )
                if any(unit_id in drawn[sample_id] for unit_id in units):
                    result.confidence.add(theme)
            else:
                rate = rates.get((sample_id, theme), 0) / sizes[theme] if sizes.get(theme) else 0.0
                recomputed = dict.fromkeys(units, min(1.0, rate))
            rows.append([drawn[sample_id].get(unit_id, recomputed[unit_id]) for unit_id in units])
        union = union_inclusion_probabilities(probabilities=[np.asarray(row) for row in rows])
        result.probability.update(zip(units, (float(p) for p in union), strict=True))
        result.pooled.add(theme)
    return result
