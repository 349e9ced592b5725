"""The planner of several judges on a criterion: per theme, which judges to run on which share of
the answers and how many human labels to have in all, at least cost for a target half-width
(``inference.designs.judge_allocation.plan_theme``), priced on the criterion's ledger
(``evaluation.measures.costs``), beside the best single judge run on every unit and human labels
alone.

Per theme, the pilot is the units with a final human label that every judge considered labelled
(ok judgments): their moments (``judge_allocation.moments``), the final labels already made, each
judge's units judged already, and, for sentences, each judge's design effect read on its judged
units with the answers as clusters (a share draws whole answers). A theme with fewer than
``MIN_PILOT`` such units is not planned: its moments would mean little.

A judge enters the plan at its measured cost per unit; a judge never run on the criterion has no
measured cost and enters only when it has judged every unit already (nothing more to spend),
else it is left out with the reason. Nothing is planned without a human label's cost.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from annotation.criteria.categories import is_categorical
from annotation.models import Criterion, Level, Unit
from annotation.workflow.state import final_labels
from evaluation.measures.costs import Ledger, ledger
from evaluation.models import Judge, Judgment
from inference.designs.inclusion import cluster_design_effect
from inference.designs.judge_allocation import Option, ThemePlan, moments, plan_theme

MIN_PILOT = 10
MAX_JUDGES = 3
DEFAULT_TARGET = 0.05

# Why nothing is planned ("" when something is).
CATEGORICAL = "categorical"
NO_JUDGE = "no_judge"
NO_HUMAN_COST = "no_human_cost"
# Why a judge is left out.
NO_COST = "no_cost"


@dataclass(frozen=True)
class ThemeRow:
    """One theme: its units, final labels, the pilot (labelled units every judge judged), and the
    plan (None when the pilot is under ``MIN_PILOT``)."""

    theme: str
    size: int
    labeled: int
    pilot: int
    plan: ThemePlan | None
    judges: tuple[str, ...]
    # Whether each judge judged every unit of the theme already: its term is then over every unit,
    # whatever share the maths gave it (at no cost left, any share ties).
    whole: tuple[bool, ...] = ()

    @property
    def best_shares(self) -> tuple[float, ...]:
        """The cheapest plan's share of each judge, 1 for a judge used that judged every unit."""
        if self.plan is None:
            return ()
        return tuple(
            1.0 if share and whole else share
            for share, whole in zip(self.plan.best.shares, self.whole, strict=True)
        )

    @property
    def shares(self) -> list[tuple[str, float]]:
        """The cheapest plan's judges and shares, the judges it runs only (none unplanned)."""
        if self.plan is None:
            return []
        return [(name, share) for name, share in zip(self.judges, self.best_shares, strict=True) if share]

    @property
    def single_judge(self) -> str:
        if self.plan is None or self.plan.single is None:
            return ""
        return self.judges[int(np.argmax(self.plan.single.shares))]

    @property
    def to_draw(self) -> int:
        """Human labels still to draw under the cheapest plan."""
        return 0 if self.plan is None else max(0, self.plan.best.labels - self.labeled)

    @property
    def saving(self) -> float | None:
        """The share of the best single judge's cost the cheapest plan saves (None: no single
        judge, or it costs nothing more)."""
        if self.plan is None or self.plan.single is None or self.plan.single.cost <= 0:
            return None
        return 1 - self.plan.best.cost / self.plan.single.cost


@dataclass(frozen=True)
class JudgePlan:
    criterion: Criterion
    target: float
    alpha: float
    ledger: Ledger | None
    judges: list[Judge]
    left_out: list[tuple[Judge, str]] = field(default_factory=list)
    themes: list[ThemeRow] = field(default_factory=list)
    empty: str = ""

    @property
    def planned(self) -> list[ThemeRow]:
        return [row for row in self.themes if row.plan is not None]

    @property
    def best_cost(self) -> float:
        return sum(row.plan.best.cost for row in self.planned if row.plan)

    @property
    def single_cost(self) -> float | None:
        costs = [row.plan.single.cost for row in self.planned if row.plan and row.plan.single]
        return sum(costs) if costs and len(costs) == len(self.planned) else None

    @property
    def human_only_cost(self) -> float:
        return sum(row.plan.human_only.cost for row in self.planned if row.plan)

    @property
    def saving(self) -> float | None:
        single = self.single_cost
        return None if not single else 1 - self.best_cost / single

    def shares_of(self, judge: Judge) -> dict[str, float]:
        """The themes where the cheapest plan runs ``judge``, and its share there."""
        k = next((k for k, chosen in enumerate(self.judges) if chosen.pk == judge.pk), None)
        if k is None:
            return {}
        return {row.theme: row.best_shares[k] for row in self.planned if row.best_shares[k]}


def compute_plan(
    *,
    criterion: Criterion,
    judges: Sequence[Judge],
    target: float = DEFAULT_TARGET,
    alpha: float = 0.05,
    minutes: float | None = None,
) -> JudgePlan:
    """The plan of ``criterion`` with ``judges`` (at most ``MAX_JUDGES``; the caller checks them)
    for a half-width of ``target`` at level 1 - ``alpha`` (see the module); ``minutes`` a human
    label's minutes when given in place of the people's measured pace. A constant number of
    queries."""
    base = JudgePlan(criterion=criterion, target=target, alpha=alpha, ledger=None, judges=[])
    if is_categorical(criterion):
        return replace(base, empty=CATEGORICAL)
    if not judges:
        return replace(base, empty=NO_JUDGE)
    costs = ledger(criterion=criterion, campaign=criterion.campaign, judges=judges, minutes=minutes)
    units = list(
        Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level)
        .order_by("id")
        .values_list("id", "theme", "answer_id")
    )
    judged: dict[int, dict[int, float]] = {judge.pk: {} for judge in judges}
    for judge_id, unit_id, value in Judgment.objects.filter(
        judge__in=list(judges), criterion=criterion, status=Judgment.Status.OK, value__isnull=False
    ).values_list("judge_id", "unit_id", "value"):
        judged[judge_id][unit_id] = 1.0 if value == 1 else 0.0
    every = {unit_id for unit_id, _, _ in units}
    kept: list[Judge] = []
    left_out: list[tuple[Judge, str]] = []
    for judge in judges:
        if costs.of(judge).per_unit is None and not every <= judged[judge.pk].keys():
            left_out.append((judge, NO_COST))
        else:
            kept.append(judge)
    if costs.human.per_label is None:
        return replace(base, ledger=costs, judges=kept, left_out=left_out, empty=NO_HUMAN_COST)
    if not kept:
        return replace(base, ledger=costs, judges=kept, left_out=left_out, empty=NO_JUDGE)
    finals = final_labels(criterion=criterion)
    by_theme: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for unit_id, theme, answer_id in units:
        by_theme[theme].append((unit_id, answer_id))
    rows = [
        _theme(
            theme=theme,
            units=by_theme[theme],
            finals=finals,
            judges=kept,
            judged=judged,
            ledger=costs,
            target=target,
            alpha=alpha,
            sentences=criterion.level != Level.ANSWER,
        )
        for theme in sorted(by_theme)
    ]
    return replace(base, ledger=costs, judges=kept, left_out=left_out, themes=rows)


def _theme(
    *,
    theme: str,
    units: list[tuple[int, int]],
    finals: dict[int, int],
    judges: list[Judge],
    judged: dict[int, dict[int, float]],
    ledger: Ledger,
    target: float,
    alpha: float,
    sentences: bool,
) -> ThemeRow:
    names = tuple(judge.name for judge in judges)
    labeled = [unit_id for unit_id, _ in units if unit_id in finals]
    pilot = [unit_id for unit_id in labeled if all(unit_id in judged[judge.pk] for judge in judges)]
    row = ThemeRow(
        theme=theme, size=len(units), labeled=len(labeled), pilot=len(pilot), plan=None, judges=names
    )
    if len(pilot) < MIN_PILOT:
        return row
    y = np.array([float(finals[unit_id] == 1) for unit_id in pilot])
    preds = np.array([[judged[judge.pk][unit_id] for judge in judges] for unit_id in pilot])
    counts, effects, prices = [], [], []
    for judge in judges:
        mine = [(unit_id, answer_id) for unit_id, answer_id in units if unit_id in judged[judge.pk]]
        counts.append(len(mine))
        effects.append(
            cluster_design_effect(
                values=[judged[judge.pk][unit_id] for unit_id, _ in mine],
                clusters=[answer_id for _, answer_id in mine],
            )
            if sentences and mine
            else 1.0
        )
        # A judge with no measured cost enters only when it judged every unit: nothing to spend.
        prices.append(ledger.of(judge).per_unit or 0.0)
    plan = plan_theme(
        m=moments(y=y, preds=preds),
        size=len(units),
        target=target,
        human_cost=float(ledger.human.per_label or 0.0),
        judge_costs=prices,
        alpha=alpha,
        labeled=len(labeled),
        judged=counts,
        design_effects=effects,
    )
    return replace(row, plan=plan, whole=tuple(count == len(units) for count in counts))


def _number(value: float | None, digits: int = 6) -> float | None:
    return None if value is None or not np.isfinite(value) else round(float(value), digits)


def _option(option: Option | None, judges: tuple[str, ...]) -> dict[str, Any] | None:
    if option is None:
        return None
    return {
        "judges": [
            {"judge": name, "share": _number(share)}
            for name, share in zip(judges, option.shares, strict=True)
            if share
        ],
        "human_labels": option.labels,
        "halfwidth": _number(option.halfwidth),
        "human_cost": _number(option.human_cost),
        "judge_costs": _number(sum(option.judge_costs)),
        "cost": _number(option.cost),
    }


def ledger_as_json(ledger: Ledger | None) -> dict[str, Any] | None:
    """The ledger's figures and where each comes from (None: nothing priced, see ``empty``)."""
    if ledger is None:
        return None
    human = ledger.human
    return {
        "human": {
            "per_label": _number(human.per_label),
            "median_seconds": _number(human.median_seconds),
            "minutes": _number(human.minutes),
            "timed": human.timed,
            # criterion, campaign, imported, imported_campaign or given ("": no label timed)
            "source": human.source,
            "rows_per_unit": _number(human.rows_per_unit),
            "hourly_rate": _number(human.hourly_rate),
        },
        "judges": [
            {
                "judge": cost.judge.name,
                "per_unit": _number(cost.per_unit, 9),
                "runs": cost.runs,
                "spend": _number(cost.spend, 9),
                "judged": cost.judged,
                # runs: spend over units judged; "": never run on the criterion, not measured
                "source": "runs" if cost.per_unit is not None else "",
            }
            for cost in ledger.judges
        ],
    }


def plan_as_json(plan: JudgePlan) -> dict[str, Any]:
    """The plan as the page's download, the command and the API give it: per theme the cheapest
    plan (judges and shares, human labels in all and still to draw, cost), the best single judge
    and human labels alone; the totals; the ledger with its sources."""
    return {
        "campaign": plan.criterion.campaign.slug,
        "criterion": plan.criterion.name,
        "target": plan.target,
        "alpha": plan.alpha,
        "min_pilot": MIN_PILOT,
        # "" when something is planned; else categorical, no_judge or no_human_cost
        "empty": plan.empty,
        "judges": [judge.name for judge in plan.judges],
        "left_out": [{"judge": judge.name, "reason": reason} for judge, reason in plan.left_out],
        "ledger": ledger_as_json(plan.ledger),
        "themes": [
            {
                "theme": row.theme,
                "units": row.size,
                "labeled": row.labeled,
                "pilot": row.pilot,
                "planned": row.plan is not None,
                "judges": [{"judge": name, "share": _number(share)} for name, share in row.shares],
                "human_labels": None if row.plan is None else row.plan.best.labels,
                "to_draw": row.to_draw if row.plan is not None else None,
                "halfwidth": None if row.plan is None else _number(row.plan.best.halfwidth),
                "cost": None if row.plan is None else _number(row.plan.best.cost),
                "best_single_judge": None
                if row.plan is None or row.plan.single is None
                else {"judge": row.single_judge, **(_option(row.plan.single, row.judges) or {})},
                "human_only": None if row.plan is None else _option(row.plan.human_only, row.judges),
                "saving": _number(row.saving),
            }
            for row in plan.themes
        ],
        "totals": {
            "cost": _number(plan.best_cost),
            "single_judge_cost": _number(plan.single_cost),
            "human_only_cost": _number(plan.human_only_cost),
            "saving": _number(plan.saving),
            "to_draw": sum(row.to_draw for row in plan.planned),
        },
    }
