"""Draw a criterion's human sample by the judge's confidence, and recompute its probabilities.

The confidence-driven design (``evaluation.inclusion``): within each theme, unit i goes to the
humans with probability proportional to sqrt(c_i (1 - c_i)), c_i the judge's probability that the
label is 1 (``evaluation.calibration.probability_of_one``), at least ``floor`` times the theme's
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

from annotation.errors import FieldError, refusal
from annotation.models import Criterion, Sample, Unit
from annotation.sampling.design import allocate_clusters
from annotation.sampling.draws import GivenDraw, store_given_sample
from evaluation.calibration import probability_of_one
from evaluation.inclusion import DEFAULT_FLOOR, confidence_probabilities, poisson_draw, spread
from evaluation.models import Judge, Judgment

UNKNOWN = 0.5


@dataclass(frozen=True)
class Population:
    """Every unit of a criterion's level: ids, themes and the judge's probability that the label
    is 1 (``UNKNOWN`` where it gave no confidence), parallel arrays by unit id; ``scored_mask``
    the units with a confidence, ``scored`` their number."""

    ids: np.ndarray
    themes: np.ndarray
    confidence: np.ndarray
    scored_mask: np.ndarray

    @property
    def scored(self) -> int:
        return int(np.count_nonzero(self.scored_mask))


def population(*, criterion: Criterion, judge: Judge) -> Population:
    """The units of ``criterion``'s level with ``judge``'s confidence on each (two queries)."""
    rows = list(
        Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level)
        .order_by("id")
        .values_list("id", "theme")
    )
    judged = {
        unit_id: probability_of_one(value=int(cast(int, value)), confidence=float(cast(float, confidence)))
        for unit_id, value, confidence in Judgment.objects.filter(
            judge=judge,
            criterion=criterion,
            status=Judgment.Status.OK,
            confidence__isnull=False,
            value__isnull=False,
        ).values_list("unit_id", "value", "confidence")
    }
    ids = np.array([unit_id for unit_id, _ in rows], dtype=np.int64)
    themes = np.array([theme for _, theme in rows], dtype=object)
    confidence = np.array([judged.get(unit_id, UNKNOWN) for unit_id, _ in rows], dtype=float)
    scored_mask = np.array([unit_id in judged for unit_id, _ in rows], dtype=bool)
    return Population(ids=ids, themes=themes, confidence=confidence, scored_mask=scored_mask)


def check_judge(*, criterion: Criterion, judge: Judge | None) -> Judge:
    """``judge`` when it is a judge of the criterion's campaign; FieldError on ``judge`` naming the
    design otherwise."""
    if judge is None or judge.campaign_id != criterion.campaign_id:
        raise FieldError(
            "judge",
            _("judge: the judge-confidence design needs a judge of this campaign; choose one"),
        )
    return judge


def check_scored(*, units: Population, criterion: Criterion, judge: Judge) -> None:
    """FieldError on ``judge`` when it gave no confidence on any unit of the criterion: the
    design would have nothing to follow."""
    if units.scored == 0:
        raise FieldError(
            "judge",
            refusal(
                _(
                    "judge: %(judge)s gave no confidence on %(criterion)s; the judge-confidence design "
                    "needs one (choose a confidence source on the judge's runs page), or use K-means"
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


def _theme_seed(*, seed: int, theme: str) -> int:
    digest = hashlib.sha256(f"{int(seed)}\x1f{theme}\x1fconfidence".encode()).digest()
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


def draw_confidence_sample(
    *,
    criterion: Criterion,
    judge: Judge | None,
    budget: int,
    seed: int = 0,
    per_theme_budget: Mapping[str, int] | None = None,
    floor: float = DEFAULT_FLOOR,
    user=None,
) -> Sample:
    """Draw and store a confidence-driven sample of ``criterion``'s units; return it (done).

    ``budget`` is the expected number of labels, split across themes by :func:`theme_budgets`
    (or as ``per_theme_budget`` says); the number drawn varies around it (Poisson sampling).
    Refuses (FieldError naming ``judge``, ``budget``, ``per_theme_budget``, ``seed`` or
    ``draws``) when there is no judge of the campaign, when the judge gave no confidence on the
    criterion (the design has nothing to follow; its runs page sets a confidence source), on a bad
    budget, or when the draw took no unit; nothing is written then.
    """
    judge = check_judge(criterion=criterion, judge=judge)
    units = population(criterion=criterion, judge=judge)
    check_scored(units=units, criterion=criterion, judge=judge)
    names, counts = np.unique(units.themes.astype(str), return_counts=True)
    sizes = {str(name): int(count) for name, count in zip(names, counts, strict=True)}
    budgets = theme_budgets(sizes=sizes, budget=budget, per_theme_budget=per_theme_budget)
    draws: list[GivenDraw] = []
    shapes: dict[str, dict[str, float]] = {}
    for theme, theme_budget in budgets.items():
        if theme_budget == 0:
            continue
        rows = units.themes == theme
        probabilities = confidence_probabilities(
            confidence=units.confidence[rows], budget=theme_budget, floor=floor
        )
        shapes[theme] = {
            "budget": theme_budget,
            **_shape(probabilities=probabilities, scores=spread(confidence=units.confidence[rows])),
        }
        drawn = poisson_draw(probabilities=probabilities, seed=_theme_seed(seed=seed, theme=theme))
        draws.extend(
            GivenDraw(unit_id=int(unit_id), theme=theme, inclusion_probability=float(p))
            for unit_id, p in zip(units.ids[rows][drawn], probabilities[drawn], strict=True)
        )
    parameters = {"judge": judge.name, "judge_id": judge.pk, "floor": floor, "themes": shapes}
    return store_given_sample(
        criterion=criterion,
        draws=draws,
        design=Sample.Design.CONFIDENCE,
        seed=seed,
        budget=int(budget),
        parameters=parameters,
        user=user,
    )


def design_probabilities(
    *, sample: Sample, themes: Mapping[int, str], confidence: Mapping[int, float]
) -> dict[int, float]:
    """The probability that the confidence-driven ``sample`` draws each unit of ``themes``
    (unit id -> theme), from its recorded shape and the judge's probability of a 1 on the unit
    (``confidence``; ``UNKNOWN`` when missing); 0 for a theme the sample left out."""
    shapes = sample.design_parameters.get("themes", {})
    out: dict[int, float] = {}
    for unit_id, theme in themes.items():
        shape = shapes.get(theme)
        if shape is None:
            out[unit_id] = 0.0
            continue
        c = float(confidence.get(unit_id, UNKNOWN))
        score = float(np.sqrt(c * (1 - c)))
        out[unit_id] = min(1.0, max(float(shape["low"]), float(shape["scale"]) * score))
    return out
