"""The human budget of a confidence-driven sample split across themes where it buys most, with the
half-widths it should give: what the sampling page shows before drawing, and what the draw then
spends.

Each theme is one stratum of ``evaluation.allocation`` (the confidence design samples a whole
theme at once, its units weighted by the judge's uncertainty). Its spread S_t is the standard
deviation of the residual y - c the human labels correct, c the judge's probability of a 1:

- from the judge alone, the mean of sqrt(c_i (1 - c_i)) over the theme's units
  (``evaluation.inclusion.spread``; 1/2 where the judge gave no confidence), the residual's
  standard deviation if the confidence is calibrated;
- corrected by the **pilot**, the final human labels already made in the theme:
  S_t^2 = (sum_pilot (y_i - c_i)^2 + m0 * mean_i s_i^2) / (n_pilot + m0), the pilot's mean
  squared residual shrunk towards the judge's own figure with the weight of ``PRIOR_LABELS``
  labels. A judge sure of itself and often wrong shows here: its pilot residuals are large, and
  the split sends it more labels than its confidence alone would.

The split is :func:`evaluation.allocation.split_budget` for the manager's objective (the overall
rate, or the largest per-theme half-width), at least ``MINIMUM`` labels per theme. The half-widths
are projections (normal quantile, calibrated or pilot-corrected spread): the intervals after
drawing are somewhat wider at small n.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, refusal
from annotation.models import Criterion, Sample
from annotation.workflow import final_labels
from evaluation.allocation import OVERALL, Stratum, split_budget
from evaluation.confidence_sampling import check_judge, check_scored, draw_confidence_sample, population
from evaluation.inclusion import spread
from evaluation.models import Judge

PRIOR_LABELS = 4
MINIMUM = 2


@dataclass(frozen=True)
class ThemePlan:
    """One theme of the split: its units, those the judge gave a confidence, the pilot's labels,
    the spread, the labels the split gives it and the expected half-width."""

    theme: str
    units: int
    scored: int
    pilot: int
    spread: float
    labels: int
    halfwidth: float


@dataclass(frozen=True)
class Plan:
    """The split of ``budget`` for ``objective``: per theme, and the expected overall half-width."""

    budget: int
    objective: str
    alpha: float
    themes: list[ThemePlan]
    overall_halfwidth: float

    @property
    def per_theme(self) -> dict[str, int]:
        return {row.theme: row.labels for row in self.themes}

    @property
    def spent(self) -> int:
        return sum(row.labels for row in self.themes)


def plan_split(
    *, criterion: Criterion, judge: Judge | None, budget: int, objective: str = OVERALL, alpha: float = 0.05
) -> Plan:
    """The split of ``budget`` human labels across ``criterion``'s themes for the confidence
    design with ``judge``'s confidences, minimising ``objective``. Raises ValueError (field
    ``budget`` when it cannot give every theme its minimum; ``objective`` when unknown)."""
    judge = check_judge(criterion=criterion, judge=judge)
    units = population(criterion=criterion, judge=judge)
    check_scored(units=units, criterion=criterion, judge=judge)
    pilot = final_labels(criterion=criterion)
    by_theme: dict[str, list[int]] = defaultdict(list)
    for row, theme in enumerate(units.themes):
        by_theme[str(theme)].append(row)
    position = {int(unit_id): row for row, unit_id in enumerate(units.ids)}
    strata, details = [], {}
    for theme, rows in sorted(by_theme.items()):
        c = units.confidence[rows]
        model = float(np.mean(spread(confidence=c) ** 2))
        residuals = [
            (pilot[int(unit_id)] - units.confidence[position[int(unit_id)]]) ** 2
            for unit_id in units.ids[rows]
            if int(unit_id) in pilot
        ]
        s = float(np.sqrt((sum(residuals) + PRIOR_LABELS * model) / (len(residuals) + PRIOR_LABELS)))
        scored = int(np.count_nonzero(units.scored_mask[rows]))
        strata.append(Stratum(theme=theme, key="all", size=len(rows), spread=s))
        details[theme] = (len(rows), scored, len(residuals), s)
    needed = sum(min(MINIMUM, stratum.size) for stratum in strata)
    if budget < needed:
        raise FieldError(
            "budget",
            refusal(
                _(
                    "budget: %(budget)s labels cannot give each of the %(themes)s themes its "
                    "%(minimum)s labels; give at least %(needed)s"
                ),
                budget=budget,
                themes=len(strata),
                minimum=MINIMUM,
                needed=needed,
            ),
        )
    split = split_budget(strata=strata, budget=budget, objective=objective, alpha=alpha, minimum=MINIMUM)
    themes = [
        ThemePlan(
            theme=theme,
            units=size,
            scored=scored,
            pilot=pilot_count,
            spread=s,
            labels=split.per_theme[theme],
            halfwidth=split.halfwidths[theme],
        )
        for theme, (size, scored, pilot_count, s) in details.items()
    ]
    return Plan(
        budget=budget,
        objective=objective,
        alpha=alpha,
        themes=themes,
        overall_halfwidth=split.overall_halfwidth,
    )


def draw_by_plan(
    *,
    criterion: Criterion,
    judge: Judge | None,
    budget: int,
    objective: str = OVERALL,
    seed: int = 0,
    user=None,
) -> Sample:
    """Draw the confidence-driven sample with the split :func:`plan_split` shows: each theme's
    expected labels are its share of the split. Refusals as :func:`plan_split` and
    :func:`evaluation.confidence_sampling.draw_confidence_sample`; nothing is written then."""
    plan = plan_split(criterion=criterion, judge=judge, budget=budget, objective=objective)
    return draw_confidence_sample(
        criterion=criterion,
        judge=judge,
        budget=plan.spent,
        seed=seed,
        per_theme_budget=plan.per_theme,
        user=user,
    )
