"""Draw a criterion's human sample by the judge's confidence, and recompute its probabilities.

The confidence-driven design (``inference.designs.inclusion``): within each theme, unit i goes to the
humans with probability proportional to sqrt(c_i (1 - c_i)), c_i the judge's probability that the
label is 1 (``evaluation.measures.calibration.probability_of_one``), at least ``floor`` times the theme's
uniform rate and at most 1, the probabilities of a theme summing to its budget; the draw is
Poisson (each unit on its own coin), seeded by (seed, theme) so that a theme's draw never depends
on the others. A unit the judge left without a confidence counts as c = 1/2, the most uncertain:
any probability fixed before the draw keeps the estimator unbiased, and 1/2 spends labels where
nothing is known.

The orchestration lives here because it reads judgments; ``annotation`` receives a plain list of
(unit, theme, probability) and stores it (``annotation.sampling.draws.store_given_sample``), so
that the annotators' side never reads a judge's output.

Each theme's probabilities are min(1, max(low, scale * s_i)) with s_i = sqrt(c_i (1 - c_i)):
``low`` and ``scale`` per theme are recorded in the sample's ``design_parameters``, so the
probability that the sample would have drawn any unit, drawn or not, is known later
(:func:`design_probabilities`), which pooling several samples needs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import numpy as np
from django.utils.translation import gettext_lazy as _

from annotation.criteria.categories import is_categorical
from annotation.errors import FieldError, refusal
from annotation.models import Criterion, Sample, Unit
from annotation.sampling.design import allocate_clusters
from annotation.sampling.draws import GivenDraw, store_given_sample
from annotation.workflow import final_labels
from evaluation.measures.calibration import probability_of_one
from evaluation.models import Judge, Judgment
from inference.designs.inclusion import DEFAULT_FLOOR, UNKNOWN, confidence_probabilities, poisson_draw, spread
from inference.reliability.calibration import IDENTITY, MIN_LABELS, Platt, fit_platt


class PilotNeeded(FieldError):
    """A design that follows the judge's confidence, refused because no pilot of human labels
    checked it yet: a state of the campaign (label a K-means sample first, or draw without a pilot
    knowingly), not a mistake in the request. ``judge`` and ``criterion`` are the names,
    ``labels`` the pilot's labels so far and ``least`` those needed, for a page that says it in
    its own words."""

    def __init__(self, message, *, judge: str, criterion: str, labels: int, least: int) -> None:
        super().__init__("judge", message)
        self.judge, self.criterion, self.labels, self.least = judge, criterion, labels, least


# The verdict stratum of a unit the judge did not label (``Population.verdicts``).
NOT_JUDGED = -1


@dataclass(frozen=True)
class Judged:
    """What the design reads of one judgment: the 0/1 verdict and the judge's probability that
    the label is 1, or None when it gave no confidence."""

    verdict: int
    confidence: float | None

    @property
    def design_confidence(self) -> float:
        """The c the design follows: the confidence, ``UNKNOWN`` without one (spend labels where
        nothing is known)."""
        return UNKNOWN if self.confidence is None else self.confidence

    @property
    def prediction(self) -> float:
        """The c the estimator reads (``evaluation.estimates.weights``): the confidence, else the
        verdict."""
        return float(self.verdict) if self.confidence is None else self.confidence


def judged_units(
    *, criterion: Criterion, judge_id: int, unit_ids: list[int] | None = None
) -> dict[int, Judged]:
    """``judge_id``'s verdict and confidence on the units of ``criterion`` it labeled (only
    ``unit_ids`` when given), one query."""
    rows = Judgment.objects.filter(
        judge_id=judge_id, criterion=criterion, status=Judgment.Status.OK, value__isnull=False
    )
    if unit_ids is not None:
        rows = rows.filter(unit_id__in=unit_ids)
    out = {}
    for unit_id, value, confidence in rows.values_list("unit_id", "value", "confidence"):
        verdict = int(cast(int, value))  # value__isnull=False above
        out[unit_id] = Judged(
            verdict=verdict,
            confidence=None
            if confidence is None
            else probability_of_one(value=verdict, confidence=float(confidence)),
        )
    return out


def pilot_calibration(
    *,
    criterion: Criterion,
    judge: Judge,
    judged: Mapping[int, Judged] | None = None,
    finals: Mapping[int, int] | None = None,
) -> tuple[Platt, int]:
    """The judge's confidence recalibrated on the pilot, the final human labels already made of
    ``criterion`` on units it gave a confidence (``inference.reliability.calibration.fit_platt``; the
    identity below ``calibration.MIN_LABELS`` of them), and the number of those labels. A design
    follows its confidence through this map, fixed before the draw and recorded with the sample,
    so the probabilities stay those the draw used. ``judged`` and ``finals``: the judge's units
    and the final labels, when the caller read them already."""
    finals = final_labels(criterion=criterion) if finals is None else finals
    judged = judged_units(criterion=criterion, judge_id=judge.pk) if judged is None else judged
    pairs = [
        (found.confidence, finals[unit_id])
        for unit_id, found in sorted(judged.items())
        if found.confidence is not None and unit_id in finals
    ]
    if not pairs:
        return IDENTITY, 0
    return fit_platt(confidence=[c for c, _ in pairs], labels=[y for _, y in pairs]), len(pairs)


@dataclass(frozen=True)
class Population:
    """Every unit of a criterion's level, parallel arrays by unit id: ids, themes, the c the
    design follows (the judge's probability that the label is 1, ``UNKNOWN`` where it gave no
    confidence), the c the estimator reads (``prediction``: the confidence, else the verdict,
    else ``UNKNOWN``), the judge's verdict (``NOT_JUDGED`` where it gave none); ``scored_mask``
    the units with a confidence, ``scored`` their number, ``judged`` the units with a verdict."""

    ids: np.ndarray
    themes: np.ndarray
    confidence: np.ndarray
    scored_mask: np.ndarray
    prediction: np.ndarray
    verdicts: np.ndarray

    @property
    def scored(self) -> int:
        return int(np.count_nonzero(self.scored_mask))

    @property
    def judged(self) -> int:
        return int(np.count_nonzero(self.verdicts != NOT_JUDGED))


def population(
    *,
    criterion: Criterion,
    judge: Judge,
    calibration: Platt = IDENTITY,
    judged: Mapping[int, Judged] | None = None,
) -> Population:
    """The units of ``criterion``'s level with ``judge``'s verdict and confidence on each (two
    queries, one when ``judged`` is given), each confidence read through ``calibration`` (the
    pilot's map a design was drawn with: :func:`pilot_calibration`, recorded in the sample)."""
    rows = list(
        Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level)
        .order_by("id")
        .values_list("id", "theme")
    )
    judged = judged_units(criterion=criterion, judge_id=judge.pk) if judged is None else judged
    ids = np.array([unit_id for unit_id, _ in rows], dtype=np.int64)
    themes = np.array([theme for _, theme in rows], dtype=object)
    found = [judged.get(unit_id) for unit_id, _ in rows]
    scored = np.array([j is not None and j.confidence is not None for j in found], dtype=bool)
    confidence = np.array([UNKNOWN if j is None else j.design_confidence for j in found], dtype=float)
    prediction = np.array([UNKNOWN if j is None else j.prediction for j in found], dtype=float)
    if calibration.fitted and scored.any():
        confidence[scored] = calibration.apply(confidence[scored])
        prediction[scored] = confidence[scored]
    return Population(
        ids=ids,
        themes=themes,
        confidence=confidence,
        scored_mask=scored,
        prediction=prediction,
        verdicts=np.array([NOT_JUDGED if j is None else j.verdict for j in found], dtype=np.int64),
    )


def stratum_key(verdict: int) -> str:
    """The key of a verdict stratum in the recorded design: ``"judge 1"``, ``"judge 0"``,
    ``"not judged"``."""
    return "not judged" if verdict == NOT_JUDGED else f"judge {int(verdict)}"


def strata_of(*, units: Population, theme: str, by_verdict: bool) -> dict[str, np.ndarray]:
    """The rows of ``theme``'s units, by stratum key: one ``"all"`` stratum, or one per verdict
    (:func:`stratum_key`) when ``by_verdict``; strata without a unit are left out."""
    rows = units.themes == theme
    if not by_verdict:
        return {"all": rows}
    out = {}
    for verdict in sorted(set(units.verdicts[rows].tolist()), reverse=True):
        out[stratum_key(int(verdict))] = rows & (units.verdicts == verdict)
    return out


def check_binary(criterion: Criterion) -> None:
    """FieldError on ``criterion`` when it has categories: the designs that follow the judge's
    probability of a 1 (and its 0/1 verdict) are defined for a 0/1 label only."""
    if is_categorical(criterion):
        raise FieldError(
            "criterion",
            refusal(
                _(
                    "criterion: %(criterion)s has categories; sampling by the judge follows its "
                    "probability of a 1, so it needs a 0/1 criterion (use K-means)"
                ),
                criterion=repr(criterion.name),
            ),
        )


def check_judge(*, criterion: Criterion, judge: Judge | None) -> Judge:
    """``judge`` when it is a judge of the criterion's campaign; FieldError on ``judge`` naming the
    design otherwise; FieldError on ``criterion`` for a criterion with categories
    (:func:`check_binary`)."""
    check_binary(criterion)
    if judge is None or judge.campaign_id != criterion.campaign_id:
        raise FieldError(
            "judge",
            _("judge: the judge-confidence design needs a judge of this campaign; choose one"),
        )
    return judge


def check_scored(
    *,
    units: Population,
    criterion: Criterion,
    judge: Judge,
    by_verdict: bool = False,
    calibration: Platt | None = None,
    pilot_labels: int = 0,
) -> None:
    """FieldError on ``judge`` when the design would have nothing to follow: no confidence on any
    unit of the criterion, or, split by verdict, no verdict on any (a judge that gives verdicts
    without confidences can still split each theme by its verdict); or, given the pilot's
    ``calibration``, when the judge gives confidences that no pilot checked (fewer than
    ``calibration.MIN_LABELS`` labels: ``pilot_labels``)."""
    if by_verdict and units.judged == 0:
        raise FieldError(
            "judge",
            refusal(
                _("judge: %(judge)s has not labeled %(criterion)s; run it first, or use K-means"),
                judge=repr(judge.name),
                criterion=repr(criterion.name),
            ),
        )
    if units.scored and calibration is not None and not calibration.fitted:
        raise PilotNeeded(
            refusal(
                _(
                    "judge: %(judge)s's confidence on %(criterion)s has not been checked against "
                    "enough human labels (%(labels)s of the %(least)s needed); label a pilot first, "
                    "a K-means sample of at least %(least)s units, so that its confidence is "
                    "recalibrated before it chooses who labels what (an overconfident judge would "
                    "otherwise leave its errors where the design samples least), or draw without "
                    "a pilot knowingly"
                ),
                judge=repr(judge.name),
                criterion=repr(criterion.name),
                labels=pilot_labels,
                least=MIN_LABELS,
            ),
            judge=judge.name,
            criterion=criterion.name,
            labels=pilot_labels,
            least=MIN_LABELS,
        )
    if not by_verdict and units.scored == 0:
        raise FieldError(
            "judge",
            refusal(
                _(
                    "judge: %(judge)s gave no confidence on %(criterion)s; the judge-confidence design "
                    "needs one (choose a confidence source on the judge's runs page), split each "
                    "theme by the judge's verdict, or use K-means"
                ),
                judge=repr(judge.name),
                criterion=repr(criterion.name),
            ),
        )


def theme_budgets(
    *, sizes: Mapping[str, int], budget: int, per_theme_budget: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Expected labels per theme: ``per_theme_budget`` for the themes it names, the rest of
    ``budget`` split in proportion to the other themes' sizes, each theme at least 1 label and at
    most its size (``annotation.sampling.design.allocate_clusters`` with one unit per cluster)."""
    return allocate_clusters(
        theme_sizes=sizes, budget=budget, per_cluster=1, per_theme_budget=per_theme_budget
    )


def _group_seed(*, seed: int, label: str) -> int:
    """The seed of one group's draw: a theme's (``label`` the theme, as before strata existed) or
    a verdict stratum's (theme and key)."""
    digest = hashlib.sha256(f"{int(seed)}\x1f{label}\x1fconfidence".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _shape(*, probabilities: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """``low`` and ``scale`` with min(1, max(low, scale * score)) = the probabilities."""
    low = float(probabilities.min())
    if np.allclose(probabilities, low):
        return {"low": low, "scale": 0.0}
    free = (probabilities > low) & (probabilities < 1) & (scores > 0)
    if free.any():
        scale = float(np.median(probabilities[free] / scores[free]))
    else:
        scale = float(1 / scores[(probabilities >= 1) & (scores > 0)].min())
    return {"low": low, "scale": scale}


def _draw_group(
    *, units: Population, rows: np.ndarray, budget: int, floor: float, seed: int, label: str
) -> tuple[dict[str, float], list[tuple[int, float]]]:
    """The shape and the Poisson draw of one group of units (a theme, or a theme's verdict
    stratum) with ``budget`` expected labels: its recorded shape, and the (unit id, probability)
    of the units drawn."""
    confidence = units.confidence[rows]
    probabilities = confidence_probabilities(confidence=confidence, budget=budget, floor=floor)
    shape = {"budget": budget, **_shape(probabilities=probabilities, scores=spread(confidence=confidence))}
    drawn = poisson_draw(probabilities=probabilities, seed=_group_seed(seed=seed, label=label))
    return shape, [
        (int(unit_id), float(p))
        for unit_id, p in zip(units.ids[rows][drawn], probabilities[drawn], strict=True)
    ]


def draw_confidence_sample(
    *,
    criterion: Criterion,
    judge: Judge | None,
    budget: int,
    seed: int = 0,
    per_theme_budget: Mapping[str, int] | None = None,
    stratum_budgets: Mapping[str, Mapping[str, int]] | None = None,
    floor: float = DEFAULT_FLOOR,
    without_pilot: bool = False,
    user=None,
) -> Sample:
    """Draw and store a confidence-driven sample of ``criterion``'s units; return it (done).

    The judge's confidence is read through the pilot's map (:func:`pilot_calibration`, recorded
    with the sample). Without a pilot of ``calibration.MIN_LABELS`` labels the draw is refused,
    unless ``without_pilot``: the manager then draws on the confidence as the judge gave it, and
    the sample and the report say so.

    ``budget`` is the expected number of labels, split across themes by :func:`theme_budgets`
    (or as ``per_theme_budget`` says); the number drawn varies around it (Poisson sampling).
    ``stratum_budgets`` (theme -> verdict stratum key -> expected labels, as
    ``evaluation.designs.budget_split`` plans them) splits each theme by the judge's verdict
    (:func:`strata_of`): each stratum is then drawn on its own, with its own budget, and a judge
    without confidences samples each stratum uniformly.
    Refuses (FieldError naming ``judge``, ``budget``, ``per_theme_budget``, ``seed`` or
    ``draws``) when there is no judge of the campaign, when the judge gave no confidence on the
    criterion (no verdict, split by verdict) so that the design has nothing to follow, on a bad
    budget, or when the draw took no unit; nothing is written then.
    """
    judge = check_judge(criterion=criterion, judge=judge)
    judged = judged_units(criterion=criterion, judge_id=judge.pk)
    calibration, pilot_labels = pilot_calibration(criterion=criterion, judge=judge, judged=judged)
    units = population(criterion=criterion, judge=judge, calibration=calibration, judged=judged)
    by_verdict = stratum_budgets is not None
    check_scored(
        units=units,
        criterion=criterion,
        judge=judge,
        by_verdict=by_verdict,
        calibration=None if without_pilot else calibration,
        pilot_labels=pilot_labels,
    )
    names, counts = np.unique(units.themes.astype(str), return_counts=True)
    sizes = {str(name): int(count) for name, count in zip(names, counts, strict=True)}
    if stratum_budgets is not None:
        per_theme_budget = {theme: sum(keys.values()) for theme, keys in stratum_budgets.items()}
    budgets = theme_budgets(sizes=sizes, budget=budget, per_theme_budget=per_theme_budget)
    draws: list[GivenDraw] = []
    shapes: dict[str, dict] = {}
    for theme, theme_budget in budgets.items():
        if theme_budget == 0:
            continue
        if stratum_budgets is None:
            shape, drawn = _draw_group(
                units=units,
                rows=units.themes == theme,
                budget=theme_budget,
                floor=floor,
                seed=seed,
                label=theme,
            )
            shapes[theme] = shape
        else:
            strata, drawn = {}, []
            for key, rows in strata_of(units=units, theme=theme, by_verdict=True).items():
                stratum_budget = int(stratum_budgets.get(theme, {}).get(key, 0))
                if stratum_budget <= 0:
                    raise FieldError(
                        "budget",
                        refusal(
                            _("budget: stratum %(stratum)s of theme %(theme)s gets no label in the split"),
                            stratum=repr(key),
                            theme=repr(theme),
                        ),
                    )
                strata[key], found = _draw_group(
                    units=units,
                    rows=rows,
                    budget=min(stratum_budget, int(np.count_nonzero(rows))),
                    floor=floor,
                    seed=seed,
                    label=f"{theme}\x1f{key}",
                )
                drawn.extend(found)
            shapes[theme] = {"budget": theme_budget, "strata": strata}
        draws.extend(GivenDraw(unit_id=unit_id, theme=theme, inclusion_probability=p) for unit_id, p in drawn)
    parameters = {
        "judge": judge.name,
        "judge_id": judge.pk,
        "floor": floor,
        "by_verdict": by_verdict,
        "calibration": calibration.as_json(),
        "pilot_labels": pilot_labels,
        "themes": shapes,
    }
    return store_given_sample(
        criterion=criterion,
        draws=draws,
        design=Sample.Design.CONFIDENCE,
        seed=seed,
        budget=int(budget),
        parameters=parameters,
        user=user,
    )


def _probability(shape: Mapping[str, float], c: float) -> float:
    score = float(np.sqrt(c * (1 - c)))
    return min(1.0, max(float(shape["low"]), float(shape["scale"]) * score))


def design_probabilities(
    *, sample: Sample, themes: Mapping[int, str], judged: Mapping[int, Judged]
) -> dict[int, float]:
    """The probability that the confidence-driven ``sample`` draws each unit of ``themes``
    (unit id -> theme), from its recorded shape and what its judge said of the unit (``judged``,
    :func:`judged_units`; a unit missing there counts as not judged, c = ``UNKNOWN``); 0 for a
    theme, or a verdict stratum, the sample left out."""
    shapes = sample.design_parameters.get("themes", {})
    calibration = Platt.from_json(sample.design_parameters.get("calibration"))
    out: dict[int, float] = {}
    for unit_id, theme in themes.items():
        shape = shapes.get(theme)
        found = judged.get(unit_id)
        if shape is not None and "strata" in shape:
            shape = shape["strata"].get(stratum_key(NOT_JUDGED if found is None else found.verdict))
        if shape is None:
            out[unit_id] = 0.0
            continue
        out[unit_id] = _probability(shape, design_confidence(found, calibration=calibration))
    return out


def design_confidence(found: Judged | None, *, calibration: Platt) -> float:
    """The c a design followed for a unit: its confidence through the design's recorded pilot
    map, ``UNKNOWN`` where the judge gave none or did not judge the unit."""
    if found is None or found.confidence is None:
        return UNKNOWN
    return float(calibration.apply(found.confidence))
