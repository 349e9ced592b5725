"""The ledger: a judge's cost per unit from its runs' recorded spend, a human label's from the
people's pace (or, when nobody labelled in Attest, the seconds imported labels recorded), the
label rows a unit takes and the campaign's hourly rate."""

from __future__ import annotations

import pytest

from annotation.models import Label, Level, Stage, Unit
from evaluation.measures import costs
from evaluation.models import Judge, JudgeRun, Judgment
from tests.factories import make_answer_units, make_user
from tests.judge_planned import CHEAP, DEAR, LABELED, THEMES, planned


def test_a_judge_costs_what_its_runs_spent_over_the_units_it_judged(campaign):
    criterion, cheap, dear = planned(campaign=campaign)
    by_judge = {
        cost.judge.name: cost for cost in costs.judge_costs(criterion=criterion, judges=[cheap, dear])
    }
    assert by_judge["cheap"].per_unit == pytest.approx(CHEAP)
    assert by_judge["cheap"].judged == sum(THEMES.values())
    assert by_judge["dear"].per_unit == pytest.approx(DEAR)
    assert by_judge["dear"].judged == LABELED * len(THEMES)


def test_a_judge_never_run_on_the_criterion_has_no_measured_cost(campaign):
    criterion, _, _ = planned(campaign=campaign)
    imported = Judge.objects.create(campaign=campaign, name="imported-one", kind=Judge.Kind.IMPORTED)
    (cost,) = costs.judge_costs(criterion=criterion, judges=[imported])
    assert cost.runs == 0 and cost.per_unit is None


def test_a_second_run_adds_its_spend(campaign):
    criterion, cheap, _ = planned(campaign=campaign)
    JudgeRun.objects.create(
        campaign=campaign, criterion=criterion, judge=cheap, status=JudgeRun.Status.DONE, cost=0.07
    )
    (cost,) = costs.judge_costs(criterion=criterion, judges=[cheap])
    assert cost.runs == 2
    assert cost.per_unit == pytest.approx((CHEAP * sum(THEMES.values()) + 0.07) / sum(THEMES.values()))


def test_a_human_label_costs_its_median_minutes_times_its_rows_times_the_hourly_rate(campaign):
    criterion, _, _ = planned(campaign=campaign, rate=60.0)
    human = costs.human_cost(criterion=criterion, campaign=campaign)
    # 30 s a label row, a label and a review per unit: one minute per final label, at 60 an hour.
    assert human.median_seconds == 30 and human.source == costs.CRITERION
    assert human.rows_per_unit == 2
    assert human.timed == 2 * (LABELED * len(THEMES) - 1)
    assert human.per_label == pytest.approx(1.0)


def test_no_hourly_rate_or_no_timed_label_means_no_human_cost(campaign):
    criterion, _, _ = planned(campaign=campaign, rate=None)
    assert costs.human_cost(criterion=criterion, campaign=campaign).per_label is None
    other = campaign.criteria.exclude(pk=criterion.pk).first()
    campaign.label_hourly_rate = 30.0
    human = costs.human_cost(criterion=other, campaign=campaign)
    # Nobody timed a label of the other criterion: the campaign's pace stands in, and says so.
    assert human.source == costs.CAMPAIGN and human.median_seconds == 30


def test_the_ledger_reads_the_database_in_four_queries(campaign, django_assert_num_queries):
    criterion, cheap, dear = planned(campaign=campaign)
    with django_assert_num_queries(4):
        costs.ledger(criterion=criterion, campaign=campaign, judges=[cheap, dear])


def test_set_hourly_rate_saves_and_clears(campaign):
    costs.set_hourly_rate(campaign=campaign, rate=42.5)
    campaign.refresh_from_db()
    assert campaign.label_hourly_rate == 42.5
    costs.set_hourly_rate(campaign=campaign, rate=None)
    campaign.refresh_from_db()
    assert campaign.label_hourly_rate is None


def test_minutes_given_stand_in_for_the_pace_and_say_so(campaign):
    criterion, _, _ = planned(campaign=campaign, rate=30.0)
    human = costs.human_cost(criterion=criterion, campaign=campaign, minutes=1.5)
    # 1.5 minutes a label row, two rows a unit, at 30 an hour: 1.5.
    assert human.source == costs.GIVEN and human.minutes == 1.5 and human.per_label == pytest.approx(1.5)


def _imported(campaign, *, criterion_name: str, seconds: list[float | None], author):
    criterion = campaign.criteria.get(name=criterion_name)
    units = make_answer_units(campaign=campaign, theme="Imported", count=len(seconds))
    for index, (spent, unit) in enumerate(zip(seconds, units, strict=True)):
        Label.objects.create(
            unit=unit,
            criterion=criterion,
            stage=Stage.IMPORTED,
            value=index % 2,
            user=author,
            seconds_spent=spent,
        )
    return criterion


def test_without_a_label_timed_in_attest_imported_labels_recorded_seconds_give_the_pace(campaign):
    author = make_user(username="ls-author")
    criterion = _imported(
        campaign, criterion_name="relevance", seconds=[40, 50, 60, None, 4000], author=author
    )
    campaign.label_hourly_rate = 60.0
    human = costs.human_cost(criterion=criterion, campaign=campaign)
    # 40, 50, 60 kept (no time: not counted; over 10 minutes: a break): 50 s, one row a unit.
    assert human.source == costs.IMPORTED and human.median_seconds == 50 and human.timed == 3
    assert human.per_label == pytest.approx(50 / 60)
    other = campaign.criteria.exclude(pk=criterion.pk).first()
    elsewhere = costs.human_cost(criterion=other, campaign=campaign)
    assert elsewhere.source == costs.IMPORTED_CAMPAIGN and elsewhere.median_seconds == 50


def test_labels_timed_in_attest_come_before_imported_seconds_whose_time_stamps_are_left_out(campaign):
    criterion, _, _ = planned(campaign=campaign, rate=60.0)
    _imported(
        campaign, criterion_name="relevance", seconds=[300, 300, 300], author=make_user(username="ls-2")
    )
    human = costs.human_cost(criterion=criterion, campaign=campaign)
    assert human.source == costs.CRITERION and human.median_seconds == 30
    assert human.timed == 2 * (LABELED * len(THEMES) - 1)  # no gap from the imported rows


def test_the_ledger_reads_imported_seconds_in_one_more_query(campaign, django_assert_num_queries):
    criterion = _imported(
        campaign, criterion_name="relevance", seconds=[40, 50], author=make_user(username="ls-3")
    )
    judge = Judge.objects.create(campaign=campaign, name="imported-judge", kind=Judge.Kind.IMPORTED)
    with django_assert_num_queries(5):
        costs.ledger(criterion=criterion, campaign=campaign, judges=[judge])


def test_the_plan_says_its_pace_came_from_imported_labels(campaign, client_for, manager):
    criterion = _imported(
        campaign, criterion_name="relevance", seconds=[90] * 12, author=make_user(username="ls-4")
    )
    judge = Judge.objects.create(campaign=campaign, name="imported-judge", kind=Judge.Kind.IMPORTED)
    for unit in Unit.objects.filter(campaign=campaign, level=Level.ANSWER):
        Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=1)
    costs.set_hourly_rate(campaign=campaign, rate=60.0)
    data = client_for(manager).get(f"/campaigns/{campaign.slug}/relevance/judges/plan/export.json").json()
    human = data["ledger"]["human"]
    assert human["source"] == "imported" and human["median_seconds"] == 90 and human["per_label"] == 1.5
    page = client_for(manager).get(f"/campaigns/{campaign.slug}/relevance/judges/plan/").content.decode()
    assert "the median of the 12 times that imported labels recorded" in page
    assert "timed labels" not in page and "none timed on this one" not in page
    french = client_for(manager).get(
        f"/campaigns/{campaign.slug}/relevance/judges/plan/", HTTP_ACCEPT_LANGUAGE="fr"
    )
    assert "la médiane des 12 durées enregistrées par les étiquettes importées" in french.content.decode()
