"""Which judge a report reads: the candidates (a successful judgment, able to label), the
default (primary, only, only run beside imported labels), the refusals naming the candidates."""

from __future__ import annotations

import pytest

from annotation.models import Criterion, Unit
from evaluation.errors import EstimateError
from evaluation.estimates import judge_choice
from evaluation.models import Judge, Judgment, PrimaryJudge
from tests.categorical import correctness as categorical_correctness
from tests.factories import make_answer, make_campaign, make_judge, make_user


@pytest.fixture
def relevance(db):
    campaign = make_campaign(name="Judges")
    return Criterion.objects.get(campaign=campaign, name="relevance")


def names(judges) -> list[str]:
    return [judge.name for judge in judges]


def test_a_judge_whose_every_call_failed_is_no_candidate(relevance):
    campaign = relevance.campaign
    lexical = make_judge(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    failed = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    for unit in Unit.objects.filter(campaign=campaign, level=relevance.level):
        Judgment.objects.create(
            unit=unit, criterion=relevance, judge=failed, status=Judgment.Status.FAILED, error="no key"
        )
    assert names(judge_choice.candidates(criterion=relevance)) == ["lexical"]
    assert judge_choice.choose_judge(criterion=relevance) == lexical
    with pytest.raises(EstimateError) as refused:
        judge_choice.choose_judge(criterion=relevance, name="gpt")
    assert refused.value.field == "judge"
    assert (
        refused.value.message == "'gpt' has no successful judgment of 'relevance' (judges that have: lexical)"
    )


def test_a_judge_of_another_criterion_only_is_no_candidate(relevance):
    make_judge(campaign=relevance.campaign, name="veracity-only", criteria=("veracity",))
    assert judge_choice.candidates(criterion=relevance) == []
    veracity = Criterion.objects.get(campaign=relevance.campaign, name="veracity")
    assert names(judge_choice.candidates(criterion=veracity)) == ["veracity-only"]


def test_the_lexical_judge_is_no_candidate_for_a_criterion_with_categories(relevance):
    campaign = relevance.campaign
    correctness = categorical_correctness(campaign)
    for name, kind in (("lexical", Judge.Kind.LEXICAL), ("imported", Judge.Kind.IMPORTED)):
        judge = Judge.objects.create(campaign=campaign, name=name, kind=kind)
        unit = Unit.objects.filter(answer=make_answer(campaign=campaign), level="answer").get()
        Judgment.objects.create(unit=unit, criterion=correctness, judge=judge, value=2)
    assert names(judge_choice.candidates(criterion=correctness)) == ["imported"]
    assert names(judge_choice.candidates_by_criterion(criteria=[correctness])[correctness.pk]) == ["imported"]


def test_the_default_is_the_only_one_then_the_only_run_one_then_none(relevance):
    campaign = relevance.campaign
    with pytest.raises(EstimateError) as refused:
        judge_choice.require_judge(criterion=relevance)
    assert refused.value.message == "no judge has labeled 'relevance' successfully yet"
    imported = make_judge(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    assert judge_choice.pick(criterion=relevance) == (imported, judge_choice.ONLY)
    lexical = make_judge(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    assert judge_choice.pick(criterion=relevance) == (lexical, judge_choice.ONLY_RUN)
    make_judge(campaign=campaign, name="gpt")
    assert judge_choice.pick(criterion=relevance) == (None, "")
    with pytest.raises(EstimateError) as refused:
        judge_choice.require_judge(criterion=relevance)
    assert refused.value.message == (
        "several judges have labeled 'relevance': choose one (gpt, imported, lexical), or make one its "
        "primary judge"
    )
    assert judge_choice.pick(criterion=relevance, name="imported") == (imported, judge_choice.NAMED)


def test_the_primary_judge_is_the_default_while_it_labels_the_criterion(relevance):
    campaign = relevance.campaign
    make_judge(campaign=campaign, name="gpt")
    lexical = make_judge(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    manager = make_user()
    assert judge_choice.set_primary_judge(criterion=relevance, name="lexical", user=manager) == lexical
    assert judge_choice.pick(criterion=relevance) == (lexical, judge_choice.PRIMARY)
    chosen = PrimaryJudge.objects.get(criterion=relevance)
    assert (chosen.judge, chosen.chosen_by) == (lexical, manager)
    # Chosen again: one row, the new judge.
    judge_choice.set_primary_judge(criterion=relevance, name="gpt")
    assert PrimaryJudge.objects.get(criterion=relevance).judge.name == "gpt"
    # Its judgments no longer successful: it is no candidate, so no default any more.
    Judgment.objects.filter(judge__name="gpt").update(status=Judgment.Status.FAILED, value=None)
    assert judge_choice.pick(criterion=relevance) == (lexical, judge_choice.ONLY)
    assert judge_choice.set_primary_judge(criterion=relevance, name="") is None
    assert not PrimaryJudge.objects.exists()


def test_a_primary_judge_must_be_a_candidate(relevance):
    Judge.objects.create(campaign=relevance.campaign, name="idle")
    with pytest.raises(EstimateError) as refused:
        judge_choice.set_primary_judge(criterion=relevance, name="idle")
    assert refused.value.field == "judge" and "judges that have: none" in refused.value.message
    assert not PrimaryJudge.objects.exists()


def test_the_candidates_of_every_criterion_cost_one_query(relevance, django_assert_num_queries):
    campaign = relevance.campaign
    make_judge(campaign=campaign, name="gpt", criteria=("relevance", "veracity"))
    criteria = list(Criterion.objects.filter(campaign=campaign).order_by("name"))
    with django_assert_num_queries(1):
        found = judge_choice.candidates_by_criterion(criteria=criteria, confidences=True)
    assert {c.name: names(found[c.pk]) for c in criteria} == {
        "citation_support": [],
        "relevance": ["gpt"],
        "veracity": ["gpt"],
    }


def test_the_command_sets_clears_and_says_the_primary_judge(relevance):
    from io import StringIO

    from django.core.management import CommandError, call_command

    campaign = relevance.campaign
    make_judge(campaign=campaign, name="gpt")
    make_judge(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)

    def run(*args: str) -> str:
        out = StringIO()
        call_command(
            "primary_judge", "--campaign", campaign.name, "--criterion", "relevance", *args, stdout=out
        )
        return out.getvalue().strip()

    assert run() == "relevance: no default judge (judges that labeled it: gpt, lexical)"
    assert run("--judge", "gpt") == "relevance: gpt (primary; judges that labeled it: gpt, lexical)"
    assert run("--clear") == "relevance: no default judge (judges that labeled it: gpt, lexical)"
    with pytest.raises(CommandError, match="--judge: 'nobody' has no successful judgment"):
        run("--judge", "nobody")


def test_the_candidates_of_criteria_of_several_campaigns_are_each_campaigns_own(
    relevance, django_assert_num_queries
):
    other = make_campaign(name="Other judges")
    make_judge(campaign=relevance.campaign, name="gpt", criteria=("relevance",))
    make_judge(campaign=other, name="mistral", criteria=("relevance", "veracity"))
    criteria = list(
        Criterion.objects.filter(campaign__in=[relevance.campaign, other]).order_by("campaign", "name")
    )
    with django_assert_num_queries(1):
        found = judge_choice.candidates_by_criterion(criteria=criteria)
    assert {(c.campaign.name, c.name): names(found[c.pk]) for c in criteria} == {
        ("Judges", "citation_support"): [],
        ("Judges", "relevance"): ["gpt"],
        ("Judges", "veracity"): [],
        ("Other judges", "citation_support"): [],
        ("Other judges", "relevance"): ["mistral"],
        ("Other judges", "veracity"): ["mistral"],
    }
    # The same as each campaign's alone.
    for criterion in criteria:
        assert names(found[criterion.pk]) == names(judge_choice.candidates(criterion=criterion))
