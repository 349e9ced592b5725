"""The adjudication page: the labels in conflict, a decision with its reason, access rules."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import AnnotationMode, Label, Role, Stage
from annotation.workflow import final_labels
from tests.factories import label, member, sampled

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
# The adjudication page, a GET renewing the lease: the same count whatever roles the person holds.
ADJUDICATION_PAGE_QUERIES = 12


def url(campaign, criterion, action: str = "") -> str:
    name = f"annotation:adjudicate_{action}" if action else "annotation:adjudicate"
    return reverse(name, args=[campaign.slug, criterion.name])


def shown_unit(response) -> int | None:
    found = re.search(r'id="work"[^>]*data-unit="(\d*)"', response.content.decode())
    assert found
    return int(found.group(1)) if found.group(1) else None


@pytest.fixture
def conflict(campaign, annotator, reviewer):
    """Two units: one confirmed, one overridden (to adjudicate)."""
    criterion, units = sampled(campaign=campaign, answers=2)
    label(annotator, criterion, Stage.LABEL, 1, unit=units[0], comment="Dans le sujet.")
    label(annotator, criterion, Stage.LABEL, 1, unit=units[1], comment="Répond à la question.")
    label(reviewer, criterion, Stage.REVIEW, 1, unit=units[0])
    label(reviewer, criterion, Stage.REVIEW, 0, unit=units[1], comment="Parle des RH, hors sujet.")
    return criterion, units


def test_page_shows_the_labels_and_comments_in_conflict(client_for, adjudicator, campaign, conflict):
    criterion, units = conflict
    response = client_for(adjudicator).get(url(campaign, criterion))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<html" in page
    assert shown_unit(response) == units[1].pk
    assert "Labels in conflict" in page
    assert "Répond à la question." in page and "Parle des RH, hors sujet." in page
    assert ">annotator<" in page and ">reviewer<" in page
    assert page.count('data-needs-comment="true"') == 2
    assert "Reason" in page


def test_htmx_get_returns_the_fragment(client_for, adjudicator, campaign, conflict):
    criterion, units = conflict
    response = client_for(adjudicator).get(url(campaign, criterion), **HTMX)
    assert response.status_code == 200
    assert "<html" not in response.content.decode()
    assert shown_unit(response) == units[1].pk


def test_a_decision_with_its_reason_becomes_the_final_label(client_for, adjudicator, campaign, conflict):
    criterion, units = conflict
    client = client_for(adjudicator)
    client.get(url(campaign, criterion))
    response = client.post(
        url(campaign, criterion, "submit"),
        {
            "unit_id": units[1].pk,
            "value": "1",
            "comment": "La question porte aussi sur les RH.",
            "request_key": "d1",
        },
        **HTMX,
    )
    assert response.status_code == 200
    assert shown_unit(response) is None
    assert "No disagreement left" in response.content.decode()
    decision = Label.objects.get(stage=Stage.ADJUDICATION)
    assert (decision.user, decision.value, decision.comment) == (
        adjudicator,
        1,
        "La question porte aussi sur les RH.",
    )
    assert final_labels(criterion=criterion) == {units[0].pk: 1, units[1].pk: 1}


def test_a_decision_without_a_reason_is_refused(client_for, adjudicator, campaign, conflict):
    criterion, units = conflict
    client = client_for(adjudicator)
    response = client.post(url(campaign, criterion, "submit"), {"unit_id": units[1].pk, "value": "0"}, **HTMX)
    assert response.status_code == 200
    page = response.content.decode()
    assert "needs a reason" in page and 'data-focus="comment"' in page
    assert shown_unit(response) == units[1].pk
    assert not Label.objects.filter(stage=Stage.ADJUDICATION).exists()
    plain = client.post(url(campaign, criterion, "submit"), {"unit_id": units[1].pk, "value": "0"})
    assert plain.status_code == 400


def test_without_javascript_a_decision_redirects_back(client_for, adjudicator, campaign, conflict):
    criterion, units = conflict
    response = client_for(adjudicator).post(
        url(campaign, criterion, "submit"), {"unit_id": units[1].pk, "value": "0", "comment": "hors sujet"}
    )
    assert response.status_code == 302 and response["Location"] == url(campaign, criterion)


def test_skip_and_undo_work_on_the_adjudication_stage(client_for, adjudicator, campaign, conflict):
    criterion, units = conflict
    client = client_for(adjudicator)
    client.get(url(campaign, criterion))
    skipped = client.post(url(campaign, criterion, "skip"), {"unit_id": units[1].pk}, **HTMX)
    assert shown_unit(skipped) == units[1].pk  # the only one: it comes back
    client.post(
        url(campaign, criterion, "submit"), {"unit_id": units[1].pk, "value": "0", "comment": "non"}, **HTMX
    )
    undone = client.post(url(campaign, criterion, "undo"), {"request_key": "u1"}, **HTMX)
    assert shown_unit(undone) == units[1].pk
    assert final_labels(criterion=criterion) == {units[0].pk: 1}


def test_blind_mode_adjudicator_sees_both_labels(client_for, adjudicator, campaign):
    campaign.annotation_mode = AnnotationMode.BLIND_DOUBLE
    campaign.save()
    criterion, units = sampled(campaign=campaign, answers=1)
    first = member(campaign, Role.ANNOTATOR, username="alice")
    second = member(campaign, Role.ANNOTATOR, username="bruno")
    label(first, criterion, Stage.LABEL, 1, comment="Tout est sourcé.")
    label(second, criterion, Stage.LABEL, 0, comment="Le 12 M€ n'apparaît pas.")
    page = client_for(adjudicator).get(url(campaign, criterion)).content.decode()
    assert ">alice<" in page and ">bruno<" in page
    assert "Tout est sourcé." in page and "Le 12 M€ n&#x27;apparaît pas." in page


def test_an_adjudicator_never_settles_a_unit_they_labelled(client_for, campaign, annotator):
    both = member(campaign, Role.REVIEWER, Role.ADJUDICATOR)
    criterion, units = sampled(campaign=campaign, answers=1)
    label(annotator, criterion, Stage.LABEL, 1)
    label(both, criterion, Stage.REVIEW, 0, comment="non")
    assert shown_unit(client_for(both).get(url(campaign, criterion))) is None


# Access


def test_annotator_gets_403(client_for, annotator, campaign, conflict):
    criterion, units = conflict
    client = client_for(annotator)
    assert client.get(url(campaign, criterion)).status_code == 403
    response = client.post(
        url(campaign, criterion, "submit"), {"unit_id": units[1].pk, "value": "1", "comment": "x"}
    )
    assert response.status_code == 403
    assert not Label.objects.filter(stage=Stage.ADJUDICATION).exists()


def test_outsider_gets_404_and_anonymous_goes_to_login(client, client_for, outsider, campaign, conflict):
    criterion, units = conflict
    anonymous = client.get(url(campaign, criterion))
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
    outside = client_for(outsider)
    assert outside.get(url(campaign, criterion)).status_code == 404
    response = outside.post(
        url(campaign, criterion, "submit"), {"unit_id": units[1].pk, "value": "1", "comment": "x"}
    )
    assert response.status_code == 404
    assert not Label.objects.filter(stage=Stage.ADJUDICATION).exists()


def test_wrong_methods_are_405(client_for, adjudicator, campaign, conflict):
    criterion, _ = conflict
    client = client_for(adjudicator)
    assert client.post(url(campaign, criterion)).status_code == 405
    for action in ("submit", "skip", "undo"):
        assert client.get(url(campaign, criterion, action)).status_code == 405


def test_the_annotate_url_for_adjudication_leads_here(client_for, adjudicator, campaign, conflict):
    criterion, _ = conflict
    response = client_for(adjudicator).get(
        reverse("annotation:annotate", args=[campaign.slug, criterion.name, "adjudication"])
    )
    assert response.status_code == 302 and response["Location"] == url(campaign, criterion)


def test_the_annotate_actions_of_the_adjudication_stage_serve_the_adjudication_page(
    client_for, adjudicator, campaign, conflict
):
    criterion, units = conflict
    target = reverse("annotation:annotate_submit", args=[campaign.slug, criterion.name, "adjudication"])
    data = {"unit_id": units[1].pk, "value": "0", "comment": "hors sujet"}
    response = client_for(adjudicator).post(target, data, **HTMX)
    assert response.status_code == 200 and "No disagreement left" in response.content.decode()
    assert Label.objects.get(stage=Stage.ADJUDICATION).value == 0
    plain = client_for(adjudicator).post(
        reverse("annotation:annotate_skip", args=[campaign.slug, criterion.name, "adjudication"]),
        {"unit_id": units[1].pk},
    )
    assert plain.status_code == 302 and plain["Location"] == url(campaign, criterion)


def test_query_count_of_an_adjudication_submit_does_not_grow_with_the_campaign(
    client, django_assert_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.factories import make_campaign

    def prepare(size: int):
        campaign = make_campaign()
        criterion, units = sampled(campaign=campaign, answers=size)
        first, second = member(campaign, Role.ANNOTATOR), member(campaign, Role.REVIEWER)
        for n, unit in enumerate(units):
            label(first, criterion, Stage.LABEL, 1, unit=unit, comment="oui")
            label(second, criterion, Stage.REVIEW, n % 2, unit=unit, comment="" if n % 2 else "non")
        client.force_login(member(campaign, Role.ADJUDICATOR))
        page = client.get(url(campaign, criterion))
        key = re.search(r'name="request_key" value="([0-9a-f]+)"', page.content.decode()).group(1)
        data = {"unit_id": shown_unit(page), "value": "1", "comment": "la source le dit", "request_key": key}
        return url(campaign, criterion, "submit"), data

    target, data = prepare(4)
    with CaptureQueriesContext(connection) as captured:
        response = client.post(target, data, **HTMX)
    small = len(captured)  # at once: the next request clears the connection's query log
    assert response.status_code == 200 and shown_unit(response) is not None
    target, data = prepare(30)
    with django_assert_num_queries(small):
        response = client.post(target, data, **HTMX)
    assert shown_unit(response) is not None
    assert Label.objects.filter(stage=Stage.ADJUDICATION).count() == 2


def test_the_link_to_the_unit_page_is_shown_to_an_adjudicator_who_may_open_it(
    client_for, adjudicator, campaign, conflict, django_assert_num_queries
):
    criterion, units = conflict
    client = client_for(adjudicator)
    client.get(url(campaign, criterion))  # the unit is leased now: the next GET renews the lease
    with django_assert_num_queries(ADJUDICATION_PAGE_QUERIES):
        page = client.get(url(campaign, criterion)).content.decode()
    unit_page = reverse("evaluation:unit", args=[campaign.slug, units[1].pk])
    assert f'href="{unit_page}"' in page
    assert client.get(unit_page).status_code == 200


def test_an_adjudicator_who_also_labels_gets_no_link_to_the_unit_page_they_may_not_open(
    client_for, campaign, conflict, django_assert_num_queries
):
    criterion, units = conflict
    labelling = member(campaign, Role.ADJUDICATOR, Role.ANNOTATOR)
    client = client_for(labelling)
    client.get(url(campaign, criterion))
    with django_assert_num_queries(ADJUDICATION_PAGE_QUERIES):
        response = client.get(url(campaign, criterion))
    page = response.content.decode()
    assert shown_unit(response) == units[1].pk
    unit_page = reverse("evaluation:unit", args=[campaign.slug, units[1].pk])
    assert unit_page not in page and "Every label on this unit" not in page
    assert client.get(unit_page).status_code == 403
