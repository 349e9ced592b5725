"""The start page after login: one section per role, the most actionable first: the queues with
units waiting and a Start button each, the managers' path with its next action, the analysts'
estimates with the change against the previous version; a number of queries that grows neither
with the units nor with the criteria nor with the campaigns."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Criterion, Role
from evaluation.judge import runs
from evaluation.models import JudgeRun
from tests.factories import PASSWORD, add_member, label, make_campaign, make_user, member, sampled
from tests.judged import version_campaign

pytestmark = pytest.mark.django_db

START = reverse("evaluation:start")


def annotate_url(campaign, criterion: str = "relevance", stage: str = "label") -> str:
    return reverse("annotation:annotate", args=[campaign.slug, criterion, stage])


def sections(page: str) -> list[str]:
    """The page's sections, in order (``data-section``)."""
    return re.findall(r'<section class="card start-section[^"]*" data-section="(\w+)"', page)


def section(page: str, name: str) -> str:
    match = re.search(rf'data-section="{name}".*?</section>', page, re.S)
    assert match, f"no {name} section"
    return match.group(0)


def test_logging_in_lands_on_the_start_page(client, campaign, annotator):
    response = client.post(reverse("login"), {"username": "annotator", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == START


def test_an_annotator_sees_each_queue_waiting_for_them_with_a_start_button(client_for, campaign, annotator):
    sampled(campaign=campaign, answers=3)
    page = client_for(annotator).get(START).content.decode()
    assert sections(page) == ["label"]
    work = section(page, "label")
    assert "To label" in work and "3 units wait for you" in work and campaign.name in work
    assert re.search(rf'<a class="button primary" href="{re.escape(annotate_url(campaign))}">Start', work)
    # Veracity's and citation support's queues are empty: not listed.
    assert work.count('class="start-queue"') == 1 and "Veracity" not in work
    assert reverse("annotation:team", args=[campaign.slug]) not in page and "How good" not in page


def test_nothing_waiting_is_said_plainly_and_comes_last(client_for, campaign, annotator):
    add_member(campaign=campaign, user=annotator, roles=[Role.REVIEWER])
    sampled(campaign=campaign, answers=2)
    page = client_for(annotator).get(START).content.decode()
    assert sections(page) == ["label", "review"]
    assert "Nothing waits for you to review." in section(page, "review")
    assert annotate_url(campaign, stage="review") not in page


def test_the_queues_span_campaigns_and_leave_out_units_already_labelled(client_for, campaign, annotator):
    criterion, _ = sampled(campaign=campaign, answers=3)
    label(annotator, criterion, "label", 1)
    other = make_campaign(name="Second")
    add_member(campaign=other, user=annotator, roles=[Role.ANNOTATOR])
    sampled(campaign=other, answers=2)
    work = section(client_for(annotator).get(START).content.decode(), "label")
    assert "2 units wait for you" in work and f'href="{annotate_url(other)}"' in work
    assert work.count("2 units wait for you") == 2  # two left here, two there


def test_a_reviewer_and_an_adjudicator_get_their_own_queues(
    client_for, campaign, annotator, reviewer, adjudicator
):
    criterion, _ = sampled(campaign=campaign, answers=2)
    label(annotator, criterion, "label", 1)
    page = client_for(reviewer).get(START).content.decode()
    assert sections(page) == ["review"] and "1 unit waits for you" in page
    assert f'href="{annotate_url(campaign, stage="review")}"' in page
    adjudicate = reverse("annotation:adjudicate", args=[campaign.slug, "relevance"])
    page = client_for(adjudicator).get(START).content.decode()
    assert "Nothing waits for you to adjudicate." in page and adjudicate not in page
    label(reviewer, criterion, "review", 0, comment="Hors sujet.")
    page = client_for(adjudicator).get(START).content.decode()
    assert "1 unit waits for you" in page and f'href="{adjudicate}"' in page


def test_an_analyst_reads_each_criterions_estimate_and_its_change_against_the_previous_version(
    client_for, db
):
    first, _, _ = version_campaign("Assistant v1", seed=1, share=0.6)
    second, _, judge = version_campaign("Assistant v2", seed=2, share=0.85)
    analyst = make_user(username="ana")
    for campaign in (first, second):
        add_member(campaign=campaign, user=analyst, roles=[Role.ANALYST])
    response = client_for(analyst).get(START)
    page = response.content.decode()
    assert sections(page) == ["estimates"] and "units wait for you" not in page
    estimates = section(page, "estimates")
    # The newest version first, each campaign's criteria in the order people read them.
    assert estimates.index("Assistant v2") < estimates.index("Assistant v1")
    found = response.context["start"].sections[0].headlines[0]
    row = found.rows[0]
    card = re.search(
        r'<li class="headline-card" data-criterion="relevance">.*?</li>\n', estimates, re.S
    ).group(0)
    assert f"{row.estimate.shown_mean * 100:.1f}%" in card and "PPI++" in card
    assert f"{row.overall.n_human} human labels · {row.overall.n_judge} judged by {judge.name}" in card
    assert reverse("evaluation:report", args=[second.slug, "relevance"]) in card
    diff = row.change.difference
    assert f"{diff.estimate * 100:+.1f} pts" in card
    assert ("significant" if diff.significant else "not significant") in card
    assert "Changes are against the previous version of the assistant, Assistant v1" in estimates


def test_a_manager_sees_progress_and_the_next_step_with_its_button(client_for, campaign, manager):
    client = client_for(manager)

    def steps() -> dict[str, str]:
        page = client.get(START).content.decode()
        return {
            key: state for state, key in re.findall(r'<li class="(done|next|todo)" data-step="(\w+)">', page)
        }

    def next_button() -> str:
        page = client.get(START).content.decode()
        return re.search(
            r'<li class="next" data-step="\w+">.*?<a class="button primary" href="([^"]+)"', page, re.S
        ).group(1)

    assert steps() == {
        "import": "next",
        "criteria": "done",
        "sample": "todo",
        "judge": "todo",
        "label": "todo",
        "report": "todo",
    }
    assert next_button() == reverse("evaluation:import_into", args=[campaign.slug])
    # A sample of one criterion: veracity and citation support need not be worked on.
    criterion, _ = sampled(campaign=campaign, answers=2)
    assert steps()["sample"] == "done" and steps()["judge"] == "next"
    assert next_button() == reverse("evaluation:run_list", args=[campaign.slug])
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.run_inline(run_id=runs.create_run(criterion=criterion, judge=judge).pk)
    assert JudgeRun.objects.get(pk=run.pk).status == "done"
    # Nobody labels yet: the label step's button is the team page's.
    assert steps()["judge"] == "done" and steps()["label"] == "next"
    assert next_button() == reverse("annotation:team", args=[campaign.slug])
    annotator = member(campaign, Role.ANNOTATOR)
    reviewer = member(campaign, Role.REVIEWER)
    assert next_button() == reverse("evaluation:annotators", args=[campaign.slug])
    for _ in range(2):
        label(annotator, criterion, "label", 1)
        label(reviewer, criterion, "review", 1)
    assert steps()["label"] == "done" and steps()["report"] == "next"
    assert next_button() == reverse("evaluation:campaign_overview", args=[campaign.slug]) + "#headline"
    page = client.get(START).content.decode()
    progress = re.search(r'<tr data-criterion="relevance">(.*?)</tr>', page, re.S).group(1)
    assert "2 / 2" in progress  # the sample settled


def test_the_most_actionable_section_comes_first(client_for, campaign):
    person = make_user(username="many")
    add_member(
        campaign=campaign, user=person, roles=[Role.ANNOTATOR, Role.REVIEWER, Role.ANALYST, Role.MANAGER]
    )
    page = client_for(person).get(START).content.decode()
    # Nothing to label, a campaign to set up: the path first, then the estimates, then the queues.
    assert sections(page) == ["manage", "estimates", "label", "review"]
    sampled(campaign=campaign, answers=2)
    assert sections(client_for(person).get(START).content.decode()) == [
        "label",
        "manage",
        "estimates",
        "review",
    ]


def test_someone_without_a_campaign_is_told_so(client_for, outsider):
    page = client_for(outsider).get(START).content.decode()
    assert "not a member of any campaign" in page and sections(page) == []
    assert reverse("evaluation:import_new") not in page


def test_staff_get_the_new_campaign_link_on_the_start_page_and_the_campaign_list(
    client_for, campaign, manager
):
    manager.is_staff = True
    manager.save()
    client = client_for(manager)
    for page in (START, reverse("evaluation:campaign_list")):
        assert reverse("evaluation:import_new") in client.get(page).content.decode()


def test_a_superuser_sees_every_campaign_as_a_manager_and_an_analyst(client_for, campaign):
    make_campaign(name="Another")
    page = client_for(make_user(username="root", superuser=True)).get(START).content.decode()
    # Every role in every campaign: nothing waits in the queues, said last.
    assert sections(page) == ["manage", "estimates", "label", "review", "adjudication"]
    for name in ("manage", "estimates"):
        assert "Velmont due diligence" in section(page, name) and "Another" in section(page, name)


def test_anonymous_visitors_go_to_the_login_page_and_other_methods_are_refused(client, client_for, annotator):
    response = client.get(START)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert client_for(annotator).post(START).status_code == 405


def queries(client) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(START).status_code == 200
    return len(captured.captured_queries)


def test_the_queries_grow_neither_with_units_nor_criteria_nor_campaigns(client_for, db):
    person = make_user(username="everyone")
    every = [Role.ANNOTATOR, Role.REVIEWER, Role.ADJUDICATOR, Role.ANALYST, Role.MANAGER]
    first, _, _ = version_campaign("Assistant v1", seed=1, questions=4)
    add_member(campaign=first, user=person, roles=every)
    sampled(campaign=first, answers=2)
    client = client_for(person)
    few = queries(client)
    for n, seed in enumerate((2, 3), start=2):
        more, _, _ = version_campaign(f"Assistant v{n}", seed=seed, questions=6)
        add_member(campaign=more, user=person, roles=every)
        sampled(campaign=more, answers=4)
        Criterion.objects.create(campaign=more, name=f"tone{n}", title=f"Tone {n}", level="answer")
    member(first, Role.ANNOTATOR)
    # Session, user, roles, campaigns, criteria and queues (two), the headlines (four), the
    # samples' progress, the units.
    assert queries(client) == few == 12


def test_a_person_who_only_labels_costs_six_queries(client_for, campaign, annotator):
    sampled(campaign=campaign, answers=2)
    assert queries(client_for(annotator)) == 6
