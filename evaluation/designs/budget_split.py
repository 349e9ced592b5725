"""The human budget of a confidence-driven sample split across themes where it buys most, with the
half-widths it should give: what the sampling page shows before drawing, and what the draw then
spends.

Each theme is one stratum of ``inference.designs.allocation`` (the confidence design samples a whole
theme at once, its units weighted by the judge's uncertainty). Its spread S_t is the standard
deviation of the residual y - c the human labels correct, c the judge's probability of a 1:

- from the judge alone, the mean of sqrt(c_i (1 - c_i)) over the theme's units
  (``inference.designs.inclusion.spread``; 1/2 where the judge gave no confidence), the residual's
  standard deviation if the confidence is calibrated;
- corrected by the **pilot**, the final human labels already made in the theme (c_i there the
  prediction the estimator reads):
  S_t^2 = (sum_pilot (y_i - c_i)^2 + m0 * mean_i s_i^2) / (n_pilot + m0), the pilot's mean
  squared residual shrunk towards the judge's own figure with the weight of ``PRIOR_LABELS``
  labels. A judge sure of itself and often wrong shows here: its pilot residuals are large, and
  the split sends it more labels than its confidence alone would.

**Split by the judge's verdict** (``by_verdict``): each theme is cut into its verdict strata
(``evaluation.designs.active.strata_of``: the units the judge called 1, called 0, did not
label), each a stratum of the split with the same formula restricted to it, so a verdict the
pilot saw the judge get wrong more often than its confidence says gets more labels (Neyman
allocation on the pilot's disagreement, Fisch et al. 2024). The residual is y - c with c the
prediction the estimator reads (the judge's confidence, else its verdict): a judge without
confidences splits by verdict too, its residual then the disagreement itself.

The split is :func:`inference.designs.allocation.split_budget` for the manager's objective (the overall
rate, or the largest per-theme half-width), at least ``MINIMUM`` labels per theme (per stratum).
The half-widths are projections (normal quantile, calibrated or pilot-corrected spread): the intervals after
drawing are somewhat wider at small n.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, refusal
from annotation.models import Criterion, Sample
from annotation.workflow import final_labels
from evaluation import page_cache
from evaluation.designs.active import (
    Population,
    check_judge,
    check_scored,
    draw_confidence_sample,
    judged_units,
    pilot_calibration,
    population,
    strata_of,
)
from evaluation.models import Judge
from inference.designs.allocation import OVERALL, Stratum, split_budget
from inference.designs.inclusion import spread

PRIOR_LABELS = 4
MINIMUM = 2


@dataclass(frozen=True)
class StratumPlan:
    """One verdict stratum of a theme split by the judge's verdict (``key`` as
    ``evaluation.designs.active.stratum_key``): its units, pilot labels, spread and labels."""

    key: str
    units: int
    pilot: int
    spread: float
    labels: int


# Past this share of a theme's units labelled (the pilot's and the split's), the judge's
# confidence buys little: the units left are those it is sure of, and the interval rests on the
# estimator's variance floor for a rare error among them (92.7-99.9% coverage at N = 500 with
# 300 labels and rates near 0 or 1, 63.5-89% before that floor; docs/statistics.md, Coverage in
# every design). The confidence page names such themes and offers a K-means sample instead.
MOST_OF_A_THEME = 0.5


@dataclass(frozen=True)
class ThemePlan:
    """One theme of the split: its units, those the judge gave a confidence, the pilot's labels,
    the spread, the labels the split gives it and the expected half-width; ``strata`` its
    verdict strata when the split goes within themes (empty otherwise)."""

    theme: str
    units: int
    scored: int
    pilot: int
    spread: float
    labels: int
    halfwidth: float
    strata: list[StratumPlan] = field(default_factory=list)

    @property
    def mostly_labelled(self) -> bool:
        """Whether the pilot and the split would label more than MOST_OF_A_THEME of the theme."""
        return self.pilot + self.labels > MOST_OF_A_THEME * self.units


@dataclass(frozen=True)
class Plan:
    """The split of ``budget`` for ``objective``: per theme (and per verdict stratum when
    ``by_verdict``), and the expected overall half-width."""

    budget: int
    objective: str
    alpha: float
    themes: list[ThemePlan]
    overall_halfwidth: float
    by_verdict: bool = False
    # Whether the pilot recalibrated the confidences the spreads read (else: as the judge gave them).
    recalibrated: bool = True

    @property
    def mostly_labelled(self) -> list[str]:
        """The themes this split would mostly label (``ThemePlan.mostly_labelled``)."""
        return [row.theme for row in self.themes if row.mostly_labelled]

    @property
    def per_theme(self) -> dict[str, int]:
        return {row.theme: row.labels for row in self.themes}

    @property
    def per_stratum(self) -> dict[str, dict[str, int]] | None:
        """Theme -> stratum key -> labels, or None when the split stays at the themes."""
        if not self.by_verdict:
            return None
        return {row.theme: {stratum.key: stratum.labels for stratum in row.strata} for row in self.themes}

    @property
    def spent(self) -> int:
        return sum(row.labels for row in self.themes)


def _spread(*, units: Population, rows: np.ndarray, pilot: dict[int, int]) -> tuple[float, int]:
    """A group's spread S (see the module) and its number of pilot labels."""
    model = float(np.mean(spread(confidence=units.confidence[rows]) ** 2))
    residuals = [
        (pilot[int(unit_id)] - float(c)) ** 2
        for unit_id, c in zip(units.ids[rows], units.prediction[rows], strict=True)
        if int(unit_id) in pilot
    ]
    s = float(np.sqrt((sum(residuals) + PRIOR_LABELS * model) / (len(residuals) + PRIOR_LABELS)))
    return s, len(residuals)


def plan_split(
    *,
    criterion: Criterion,
    judge: Judge | None,
    budget: int,
    objective: str = OVERALL,
    alpha: float = 0.05,
    by_verdict: bool = False,
    without_pilot: bool = False,
) -> Plan:
    """The split of ``budget`` human labels across ``criterion``'s themes for the confidence
    design with ``judge``'s confidences, minimising ``objective``; with ``by_verdict``, across
    each theme's verdict strata too. Raises ValueError (field ``budget`` when it cannot give
    every theme, or stratum, its minimum; ``objective`` when unknown; ``judge`` as
    ``evaluation.designs.active.check_scored``).

    Kept in the page cache under the campaign's units, the criterion, its labels and the judge's
    judgments (what it reads; no sample) and the arguments: the page shows it on every visit,
    and a million units take a second to read."""
    judge = check_judge(criterion=criterion, judge=judge)
    key = page_cache.estimates_key(criterion=criterion, judge=judge, samples=False)
    arguments = ("split", budget, objective, alpha, by_verdict, without_pilot)
    return page_cache.cached(
        "budget_split",
        None if key is None else [*key, arguments],
        lambda: _plan_split(
            criterion=criterion,
            judge=judge,
            budget=budget,
            objective=objective,
            alpha=alpha,
            by_verdict=by_verdict,
            without_pilot=without_pilot,
        ),
    )


def _plan_split(
    *,
    criterion: Criterion,
    judge: Judge,
    budget: int,
    objective: str,
    alpha: float,
    by_verdict: bool,
    without_pilot: bool,
) -> Plan:
    judged = judged_units(criterion=criterion, judge_id=judge.pk)
    pilot = final_labels(criterion=criterion)
    calibration, pilot_labels = pilot_calibration(
        criterion=criterion, judge=judge, judged=judged, finals=pilot
    )
    units = population(criterion=criterion, judge=judge, calibration=calibration, judged=judged)
    check_scored(
        units=units,
        criterion=criterion,
        judge=judge,
        by_verdict=by_verdict,
        calibration=None if without_pilot else calibration,
        pilot_labels=pilot_labels,
    )
    strata: list[Stratum] = []
    details: dict[str, tuple[int, int, int, float]] = {}
    stratum_pilots: dict[tuple[str, str], int] = {}  # the pilot labels of each verdict stratum
    for theme in sorted({str(theme) for theme in units.themes}):
        rows = units.themes == theme
        s, pilot_count = _spread(units=units, rows=rows, pilot=pilot)
        details[theme] = (
            int(np.count_nonzero(rows)),
            int(np.count_nonzero(units.scored_mask[rows])),
            pilot_count,
            s,
        )
        for key, stratum_rows in strata_of(units=units, theme=theme, by_verdict=by_verdict).items():
            stratum_spread = s
            if by_verdict:
                stratum_spread, pilots = _spread(units=units, rows=stratum_rows, pilot=pilot)
                stratum_pilots[(theme, key)] = pilots
            strata.append(
                Stratum(theme=theme, key=key, size=int(np.count_nonzero(stratum_rows)), spread=stratum_spread)
            )
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
            )
            if not by_verdict
            else refusal(
                _(
                    "budget: %(budget)s labels cannot give each of the %(strata)s verdict strata its "
                    "%(minimum)s labels; give at least %(needed)s"
                ),
                budget=budget,
                strata=len(strata),
                minimum=MINIMUM,
                needed=needed,
            ),
        )
    split = split_budget(strata=strata, budget=budget, objective=objective, alpha=alpha, minimum=MINIMUM)
    themes = []
    for theme, (size, scored, pilot_count, s) in details.items():
        theme_strata = (
            [
                StratumPlan(
                    key=stratum.key,
                    units=stratum.size,
                    pilot=stratum_pilots[(theme, stratum.key)],
                    spread=stratum.spread,
                    labels=split.labels[(theme, stratum.key)],
                )
                for stratum in strata
                if stratum.theme == theme
            ]
            if by_verdict
            else []
        )
        themes.append(
            ThemePlan(
                theme=theme,
                units=size,
                scored=scored,
                pilot=pilot_count,
                spread=s,
                labels=split.per_theme[theme],
                halfwidth=split.halfwidths[theme],
                strata=theme_strata,
            )
        )
    return Plan(
        budget=budget,
        objective=objective,
        alpha=alpha,
        themes=themes,
        overall_halfwidth=split.overall_halfwidth,
        recalibrated=calibration.fitted,
        by_verdict=by_verdict,
    )


def draw_by_plan(
    *,
    criterion: Criterion,
    judge: Judge | None,
    budget: int,
    objective: str = OVERALL,
    by_verdict: bool = False,
    seed: int = 0,
    without_pilot: bool = False,
    user=None,
) -> Sample:
    """Draw the confidence-driven sample with the split :func:`plan_split` shows: each theme's
    (each verdict stratum's) expected labels are its share of the split. Refusals as
    :func:`plan_split` and :func:`evaluation.designs.active.draw_confidence_sample`; nothing
    is written then."""
    plan = plan_split(
        criterion=criterion,
        judge=judge,
        budget=budget,
        objective=objective,
        by_verdict=by_verdict,
        without_pilot=without_pilot,
    )
    return draw_confidence_sample(
        criterion=criterion,
        judge=judge,
        budget=plan.spent,
        seed=seed,
        per_theme_budget=plan.per_theme,
        stratum_budgets=plan.per_stratum,
        without_pilot=without_pilot,
        user=user,
    )
