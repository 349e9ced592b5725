"""The start page after login: the units waiting for the person in every campaign, with a link
per queue; for managers, each campaign's setup steps; a bounded number of queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Role
from evaluation.judge import runs
from evaluation.models import JudgeRun
from tests.factories import PASSWORD, add_member, label, make_campaign, make_user, member, sampled

pytestmark = pytest.mark.django_db

START = reverse("evaluation:start")


def annotate_url(campaign, criterion: str = "relevance", stage: str = "label") -> str:
    return reverse("annotation:annotate", args=[campaign.slug, criterion, stage])


def test_logging_in_lands_on_the_start_page(client, campaign, annotator):
    response = client.post(reverse("login"), {"username": "annotator", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == START


def test_an_annotator_sees_the_units_waiting_and_a_link_to_their_queue(client_for, campaign, annotator):
    sampled(campaign=campaign, answers=3)
    page = client_for(annotator).get(START).content.decode()
    assert "3 units wait for you" in page
    assert f'href="{annotate_url(campaign)}"' in page
    assert "Setup" not in page  # not a manager
    assert reverse("annotation:team", args=[campaign.slug]) not in page


def test_the_count_spans_campaigns_and_leaves_out_units_already_labelled(client_for, campaign, annotator):
    criterion, _ = sampled(campaign=campaign, answers=3)
    label(annotator, criterion, "label", 1)
    other = make_campaign(name="Second")
    add_member(campaign=other, user=annotator, roles=[Role.ANNOTATOR])
    sampled(campaign=other, answers=2)
    page = client_for(annotator).get(START).content.decode()
    assert "4 units wait for you" in page
    assert "2 units waiting" in page and f'href="{annotate_url(other)}"' in page


def test_a_reviewer_and_an_adjudicator_get_their_own_stages(
    client_for, campaign, annotator, reviewer, adjudicator
):
    criterion, _ = sampled(campaign=campaign, answers=2)
    label(annotator, criterion, "label", 1)
    page = client_for(reviewer).get(START).content.decode()
    assert "1 unit waits for you" in page
    assert f'href="{annotate_url(campaign, stage="review")}"' in page
    page = client_for(adjudicator).get(START).content.decode()
    assert "0 units wait for you" in page
    assert "Adjudicate · " in page
    assert reverse("annotation:adjudicate", args=[campaign.slug, "relevance"]) not in page  # nothing waits


def test_an_analyst_sees_their_campaign_without_queues_or_setup(client_for, campaign, analyst):
    page = client_for(analyst).get(START).content.decode()
    assert "0 units wait for you" in page
    assert reverse("evaluation:campaign_overview", args=[campaign.slug]) in page
    assert "Setup" not in page


def test_a_manager_sees_the_setup_steps_with_what_is_done_and_a_link_to_each(client_for, campaign, manager):
    client = client_for(manager)
    page = client.get(START).content.decode()
    for name in ("evaluation:import_into", "annotation:sampling", "annotation:team", "evaluation:run_list"):
        assert reverse(name, args=[campaign.slug]) in page
    assert page.count('class="todo"') == 4 and "next" in page
    criterion, _ = sampled(campaign=campaign, answers=2)
    member(campaign, Role.ANNOTATOR)
    page = client.get(START).content.decode()
    assert page.count('class="done"') == 3 and page.count('class="todo"') == 1  # the judge is left
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    JudgeRun.objects.filter(pk=runs.create_run(criterion=criterion, judge=judge).pk).update(status="done")
    assert client.get(START).content.decode().count('class="done"') == 4


def test_someone_without_a_campaign_is_told_so(client_for, outsider):
    page = client_for(outsider).get(START).content.decode()
    assert "0 units wait for you" in page and "not a member of any campaign" in page
    assert reverse("evaluation:import_new") not in page


def test_staff_get_the_new_campaign_link_on_the_start_page_and_the_campaign_list(
    client_for, campaign, manager
):
    manager.is_staff = True
    manager.save()
    client = client_for(manager)
    for page in (START, reverse("evaluation:campaign_list")):
        assert reverse("evaluation:import_new") in client.get(page).content.decode()


def test_a_superuser_sees_every_campaign_as_a_manager(client_for, campaign):
    make_campaign(name="Another")
    page = client_for(make_user(username="root", superuser=True)).get(START).content.decode()
    assert "Velmont due diligence" in page and "Another" in page
    assert page.count("<h3>Setup</h3>") == 2


def test_anonymous_visitors_go_to_the_login_page_and_other_methods_are_refused(client, client_for, annotator):
    response = client.get(START)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert client_for(annotator).post(START).status_code == 405


def queries(client) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(START).status_code == 200
    return [q["sql"] for q in captured.captured_queries]


def test_the_start_page_queries_do_not_grow_with_the_units(client_for, campaign, manager):
    add_member(campaign=campaign, user=manager, roles=[Role.ANNOTATOR])
    sampled(campaign=campaign, answers=2)
    client = client_for(manager)
    few = queries(client)
    sampled(campaign=campaign, answers=20)
    member(campaign, Role.ANNOTATOR)
    many = queries(client)
    # Session, user, the roles, the campaigns with their setup, the criteria, then one count per
    # queue: three criteria at the label stage.
    assert len(few) == len(many) == 8, many


def test_the_start_page_queries_grow_only_with_the_queues(client_for, campaign, manager):
    client = client_for(manager)
    assert len(queries(client)) == 5  # a manager who labels nothing: no queue
    add_member(campaign=campaign, user=manager, roles=[Role.REVIEWER, Role.ADJUDICATOR])
    assert len(queries(client)) == 5 + 3 * 2  # three criteria x (review, adjudication)
