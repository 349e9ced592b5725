"""The planner of several judges on a criterion: the maths' plan on the pilot the database holds,
the judges left out and why, the themes with too few labels, nothing planned without a human
label's cost."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.workflow.state import final_labels
from evaluation.designs import judge_plan
from evaluation.models import Judge, Judgment
from inference.designs.judge_allocation import moments, plan_theme
from tests.judge_planned import CHEAP, DEAR, LABELED, THEMES, planned


def test_each_theme_gets_the_maths_plan_on_its_pilot(campaign):
    criterion, cheap, dear = planned(campaign=campaign)
    plan = judge_plan.compute_plan(criterion=criterion, judges=[cheap, dear], target=0.1)
    assert not plan.empty and [row.theme for row in plan.themes] == sorted(THEMES)
    finals = final_labels(criterion=criterion)
    for row in plan.themes:
        units = list(criterion.campaign.units.filter(theme=row.theme, level="answer").order_by("id"))
        pilot = [unit.pk for unit in units if unit.pk in finals]
        verdicts = {
            (j, u): float(v == 1)
            for j, u, v in Judgment.objects.filter(criterion=criterion).values_list(
                "judge_id", "unit_id", "value"
            )
        }
        expected = plan_theme(
            m=moments(
                y=[float(finals[u] == 1) for u in pilot],
                preds=np.array([[verdicts[(judge.pk, u)] for judge in (cheap, dear)] for u in pilot]),
            ),
            size=len(units),
            target=0.1,
            human_cost=1.0,
            judge_costs=[CHEAP, DEAR],
            labeled=LABELED,
            judged=[len(units), LABELED],
        )
        assert row.plan == expected and row.pilot == LABELED and row.size == THEMES[row.theme]
        assert row.plan.best.cost <= row.plan.human_only.cost
        assert row.plan.single is not None and row.plan.best.cost <= row.plan.single.cost + 1e-9
    assert plan.best_cost == pytest.approx(sum(row.plan.best.cost for row in plan.themes))


def test_a_theme_with_too_few_labels_is_not_planned(campaign):
    criterion, cheap, dear = planned(campaign=campaign, themes={"Finance": 30, "IT": 12}, labeled=10)
    Judgment.objects.filter(judge=dear, unit__theme="IT").order_by("id")[:1].get().delete()
    plan = judge_plan.compute_plan(criterion=criterion, judges=[cheap, dear])
    rows = {row.theme: row for row in plan.themes}
    assert rows["Finance"].plan is not None
    assert rows["IT"].plan is None and rows["IT"].pilot == 9 < judge_plan.MIN_PILOT
    assert [row.theme for row in plan.planned] == ["Finance"]


def test_a_judge_with_no_measured_cost_is_left_out_unless_it_judged_everything(campaign):
    criterion, cheap, dear = planned(campaign=campaign)
    partial = Judge.objects.create(campaign=campaign, name="partial", kind=Judge.Kind.IMPORTED)
    whole = Judge.objects.create(campaign=campaign, name="whole", kind=Judge.Kind.IMPORTED)
    for index, unit in enumerate(criterion.campaign.units.filter(level="answer").order_by("id")):
        Judgment.objects.create(unit=unit, criterion=criterion, judge=whole, value=1)
        if index % 2:
            Judgment.objects.create(unit=unit, criterion=criterion, judge=partial, value=1)
    plan = judge_plan.compute_plan(criterion=criterion, judges=[cheap, partial, whole])
    assert [judge.name for judge in plan.judges] == ["cheap", "whole"]
    assert [(judge.name, reason) for judge, reason in plan.left_out] == [("partial", judge_plan.NO_COST)]


def test_nothing_is_planned_without_a_human_labels_cost(campaign):
    criterion, cheap, dear = planned(campaign=campaign, rate=None)
    plan = judge_plan.compute_plan(criterion=criterion, judges=[cheap, dear])
    assert plan.empty == judge_plan.NO_HUMAN_COST and plan.themes == []


def test_no_judge_and_a_criterion_with_categories_say_why(campaign):
    criterion, _, _ = planned(campaign=campaign)
    assert judge_plan.compute_plan(criterion=criterion, judges=[]).empty == judge_plan.NO_JUDGE
    criterion.kind = "categorical"
    assert judge_plan.compute_plan(criterion=criterion, judges=[]).empty == judge_plan.CATEGORICAL


def test_a_theme_not_planned_runs_no_judge_and_draws_nothing(campaign):
    criterion, cheap, dear = planned(campaign=campaign, labeled=6)
    plan = judge_plan.compute_plan(criterion=criterion, judges=[cheap, dear])
    assert all(row.plan is None and row.shares == [] and row.to_draw == 0 for row in plan.themes)
    assert plan.planned == [] and plan.shares_of(dear) == {} and plan.saving is None
