"""The draw of a judge's share: whole answers drawn per theme with the planned probability,
recorded with it, reproducible from its seed, one share per judge and criterion; the planner's
button that draws the shares and starts the runs; a run on a share judges its units and the
labelled ones only."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Level, Unit
from evaluation import jobs
from evaluation.designs import judge_plan, judge_shares
from evaluation.errors import EstimateError
from evaluation.estimates.multi_judge import compute_combined
from evaluation.judge import runs
from evaluation.models import Judge, JudgeBatch, JudgeRun, JudgeShare, JudgeShareItem, Judgment
from tests.factories import make_corpus
from tests.judge_planned import planned


@pytest.fixture
def sentences(campaign):
    """Veracity on sentences: 3 sentences an answer, 20 answers in Finance and 10 in IT."""
    make_corpus(campaign=campaign, answers_per_theme={"Finance": 20, "IT": 10}, sentences=3)
    criterion = campaign.criteria.get(name="veracity")
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI, model="m")
    return criterion, judge


def test_a_share_draws_whole_answers_and_records_each_units_probability(campaign, sentences):
    criterion, judge = sentences
    share = judge_shares.draw_share(
        criterion=criterion, judge=judge, shares={"Finance": 0.5, "IT": 1.0}, seed=7
    )
    items = list(
        JudgeShareItem.objects.filter(share=share).values_list("unit_id", "probability", "unit__theme")
    )
    assert share.shares == {"Finance": 0.5, "IT": 1.0} and share.seed == 7
    assert {(theme, q) for _, q, theme in items} == {("Finance", 0.5), ("IT", 1.0)}
    drawn = set(
        Unit.objects.filter(pk__in=[unit_id for unit_id, _, _ in items]).values_list("answer_id", flat=True)
    )
    # Every unit of a drawn answer, and every answer of a theme at 1.
    whole = Unit.objects.filter(level=Level.SENTENCE, answer_id__in=drawn, campaign=campaign).count()
    assert len(items) == whole
    assert Unit.objects.filter(level=Level.SENTENCE, theme="IT", campaign=campaign).count() == sum(
        1 for _, _, theme in items if theme == "IT"
    )
    finance = {answer for answer in drawn if Unit.objects.filter(answer_id=answer, theme="Finance").exists()}
    assert 0 < len(finance) < 20


def test_the_same_seed_draws_the_same_share(campaign, sentences):
    criterion, judge = sentences
    other = Judge.objects.create(campaign=campaign, name="other", kind=Judge.Kind.OPENAI, model="m")
    first = judge_shares.draw_share(criterion=criterion, judge=judge, shares={"Finance": 0.3}, seed=11)
    again = judge_shares.draw_share(criterion=criterion, judge=other, shares={"Finance": 0.3}, seed=11)
    assert sorted(first.items.values_list("unit_id", flat=True)) == sorted(
        again.items.values_list("unit_id", flat=True)
    )


def test_a_second_share_of_a_judge_is_refused_with_the_reason(campaign, sentences):
    criterion, judge = sentences
    judge_shares.draw_share(criterion=criterion, judge=judge, shares={"Finance": 0.3}, seed=1)
    with pytest.raises(EstimateError, match="already has a drawn share") as refused:
        judge_shares.draw_share(criterion=criterion, judge=judge, shares={"IT": 0.3}, seed=2)
    assert refused.value.conflict and JudgeShare.objects.filter(judge=judge).count() == 1


def test_a_probability_outside_zero_one_is_refused(campaign, sentences):
    criterion, judge = sentences
    for q in (0.0, 1.5):
        with pytest.raises(EstimateError, match="probability"):
            judge_shares.draw_share(criterion=criterion, judge=judge, shares={"Finance": q}, seed=1)
    assert not JudgeShare.objects.exists()


def test_a_run_on_a_share_judges_its_units_and_the_labelled_ones_not_judged_yet(campaign):
    criterion, cheap, dear = planned(campaign=campaign)
    share = judge_shares.draw_share(criterion=criterion, judge=dear, shares={"Finance": 0.5}, seed=3)
    run = runs.create_run(criterion=criterion, judge=dear, scope=JudgeRun.Scope.SHARE)
    batched = {
        unit_id
        for ids in JudgeBatch.objects.filter(run=run).values_list("unit_ids", flat=True)
        for unit_id in ids
    }
    judged = set(dear.judgments.values_list("unit_id", flat=True))
    drawn = set(share.items.values_list("unit_id", flat=True))
    # The labelled units were judged already: only the share's others remain.
    assert batched == drawn - judged and batched


def test_a_run_on_a_share_is_refused_without_a_share(campaign):
    criterion, cheap, _ = planned(campaign=campaign)
    with pytest.raises(runs.RunError, match="no drawn share"):
        runs.create_run(criterion=criterion, judge=cheap, scope=JudgeRun.Scope.SHARE)


def test_the_button_draws_the_planned_shares_and_starts_the_runs(campaign, manager):
    """``draw_planned`` draws; ``jobs.draw_shares_and_run`` starts the runs it names with it."""
    criterion, cheap, dear = planned(campaign=campaign)
    plan = judge_plan.compute_plan(criterion=criterion, judges=[cheap, dear], target=0.15)
    # The cheap judge judged every unit already; the dear one goes on a share of each theme.
    assert plan.shares_of(cheap) in ({}, {"IT": 1.0}) and 0 < plan.shares_of(dear)["Finance"] < 1
    shares, started = jobs.draw_shares_and_run(plan=plan, seed=5, user=manager)
    (share,) = shares
    assert share.judge == dear and share.shares == plan.shares_of(dear)
    assert share.seed == judge_shares.share_seed(seed=5, judge=dear)
    assert set(share.items.values_list("probability", flat=True)) <= set(plan.shares_of(dear).values())
    ((run_judge, scope),) = [(run.judge, run.scope) for run in started]
    assert run_judge == dear and scope == JudgeRun.Scope.SHARE
    with pytest.raises(EstimateError, match="already has a drawn share"):
        jobs.draw_shares_and_run(plan=plan, seed=6, user=manager)
    assert JudgeShare.objects.count() == 1


def test_the_button_refuses_a_plan_that_runs_no_judge(campaign):
    criterion, cheap, dear = planned(campaign=campaign)
    # Wide enough that the labels made already reach it: no judge to run.
    plan = judge_plan.compute_plan(criterion=criterion, judges=[cheap, dear], target=0.3)
    assert not plan.shares_of(dear)
    with pytest.raises(EstimateError, match="no judge"):
        jobs.draw_shares_and_run(plan=plan, seed=1)
    assert not JudgeShare.objects.exists() and not JudgeRun.objects.filter(status="pending").exists()


def test_the_combined_estimate_weighs_the_drawn_share(campaign, manager):
    criterion, cheap, dear = planned(campaign=campaign)
    plan = judge_plan.compute_plan(criterion=criterion, judges=[cheap, dear], target=0.15)
    (share,) = judge_shares.draw_planned(plan=plan, seed=5, user=manager).shares
    judged = set(dear.judgments.values_list("unit_id", flat=True))
    for unit_id in share.items.exclude(unit_id__in=judged).values_list("unit_id", flat=True):
        Judgment.objects.create(unit_id=unit_id, criterion=criterion, judge=dear, value=1)
    report = compute_combined(criterion=criterion, judges=[cheap, dear])
    # The draw's seed comes from the judge's id: now and then a theme's draw takes no answer, or
    # every answer the labels left, and the judge has then no share to weigh there.
    judged = set(dear.judgments.values_list("unit_id", flat=True))
    weighed = []
    for group in report.themes:
        (part,) = [part for part in group.judges if part.judge == "dear"]
        units = Unit.objects.filter(campaign=campaign, level=criterion.level, theme=group.theme)
        whole = not units.exclude(pk__in=judged).exists()
        if share.items.filter(unit__theme=group.theme).exists() and not whole:
            assert part.share == pytest.approx(plan.shares_of(dear)[group.theme])
            weighed.append(group.theme)
        else:
            assert part.share is None
    assert weighed


def test_the_judge_command_runs_a_judge_on_its_share_and_the_labelled_units(campaign, capsys):
    criterion, _, _ = planned(campaign=campaign)
    lexical = runs.get_or_create_judge(campaign=campaign, name="lexical")
    with pytest.raises(CommandError, match="no drawn share"):
        call_command("judge", campaign=campaign.name, criterion="relevance", judge="lexical", only_share=True)
    share = judge_shares.draw_share(criterion=criterion, judge=lexical, shares={"IT": 0.5}, seed=4)
    call_command("judge", campaign=campaign.name, criterion="relevance", judge="lexical", only_share=True)
    labelled = set(criterion.labels.filter(unit__theme="IT").values_list("unit_id", flat=True))
    drawn = set(share.items.values_list("unit_id", flat=True))
    assert set(lexical.judgments.values_list("unit_id", flat=True)) == labelled | drawn


def test_a_run_on_a_share_leaves_the_themes_outside_the_share_alone(campaign):
    criterion, cheap, _ = planned(campaign=campaign)
    other = Judge.objects.create(campaign=campaign, name="other", kind=Judge.Kind.OPENAI, model="m")
    share = judge_shares.draw_share(criterion=criterion, judge=other, shares={"IT": 0.5}, seed=2)
    run = runs.create_run(criterion=criterion, judge=other, scope=JudgeRun.Scope.SHARE)
    batched = {
        u for ids in JudgeBatch.objects.filter(run=run).values_list("unit_ids", flat=True) for u in ids
    }
    labelled_it = set(criterion.labels.filter(unit__theme="IT").values_list("unit_id", flat=True))
    assert batched == set(share.items.values_list("unit_id", flat=True)) | labelled_it
    assert not Unit.objects.filter(pk__in=batched, theme="Finance").exists()
