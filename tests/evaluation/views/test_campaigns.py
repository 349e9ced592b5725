from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import AnnotationMode, Question, Role, Stage
from tests.factories import label, make_answer, make_campaign, member, sampled_by_theme

pytestmark = pytest.mark.django_db


def test_anonymous_is_sent_to_login_from_every_page(client, campaign):
    for url in (
        reverse("evaluation:campaign_list"),
        reverse("evaluation:campaign_overview", args=[campaign.slug]),
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_campaign_list_shows_only_my_campaigns(client_for, annotator, campaign):
    other = make_campaign(name="Secret campaign")
    page = client_for(annotator).get(reverse("evaluation:campaign_list")).content.decode()
    assert campaign.name in page
    assert other.name not in page


def test_overview_shows_counts_to_a_member(client_for, analyst, campaign):
    make_answer(campaign=campaign)
    response = client_for(analyst).get(reverse("evaluation:campaign_overview", args=[campaign.slug]))
    assert response.status_code == 200
    assert response.context["counts"] == {
        "questions": 1,
        "answers": 1,
        "sentences": 2,
        "units": 3,
        "labels": 0,
        "judgments": 0,
    }


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator"])
def test_overview_hides_label_and_judgment_counts_from_people_who_label(
    client_for, campaign, persona, request
):
    make_answer(campaign=campaign)
    response = client_for(request.getfixturevalue(persona)).get(
        reverse("evaluation:campaign_overview", args=[campaign.slug])
    )
    assert response.status_code == 200
    assert response.context["counts"] == {"questions": 1, "answers": 1, "sentences": 2, "units": 3}
    page = response.content.decode()
    assert "Labels" not in page and "Judgments" not in page


def test_overview_is_404_to_an_outsider_as_for_a_campaign_that_does_not_exist(client_for, outsider, campaign):
    client = client_for(outsider)
    existing = client.get(reverse("evaluation:campaign_overview", args=[campaign.slug]))
    missing = client.get(reverse("evaluation:campaign_overview", args=["no-such-campaign"]))
    assert existing.status_code == missing.status_code == 404
    # The same page, but for the CSRF token, masked afresh in every response.
    assert without_csrf_tokens(existing.content) == without_csrf_tokens(missing.content)


def without_csrf_tokens(content: bytes) -> str:
    return re.sub(r'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]+', r"\1", content.decode())


def test_overview_of_an_unknown_campaign_is_404(client_for, analyst):
    response = client_for(analyst).get(reverse("evaluation:campaign_overview", args=["nope"]))
    assert response.status_code == 404


def test_overview_refuses_post(client_for, analyst, campaign):
    response = client_for(analyst).post(reverse("evaluation:campaign_overview", args=[campaign.slug]))
    assert response.status_code == 405


def overview_url(campaign) -> str:
    return reverse("evaluation:campaign_overview", args=[campaign.slug])


def test_overview_shows_the_automatic_metrics_table_and_one_chart_per_metric(client_for, analyst, campaign):
    q = Question.objects.create(
        campaign=campaign, external_id="Q1", text="CA ?", theme="Finance", difficulty="simple", language="fr"
    )
    make_answer(campaign=campaign, question=q)
    make_answer(campaign=campaign, question=q, text="Le chiffre est en hausse.", sentences=[("Hausse.", [])])
    make_answer(campaign=campaign, theme="Juridique", difficulty="inappropriée", text="Aucune information.")
    response = client_for(analyst).get(overview_url(campaign))
    assert response.status_code == 200
    page = response.content.decode()
    sections = response.context["metrics"]["sections"]
    assert [s["name"] for s in sections] == [
        "correct_language",
        "response",
        "functional_citation",
        "abstention_on_inappropriate",
    ]
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') == 4
    for section in sections:
        ET.fromstring(str(section["chart"]))
    response_rows = [
        (r["theme"], r["difficulty"], r["n"], r["successes"], r["rate"]) for r in sections[1]["rows"]
    ]
    assert response_rows == [
        ("Finance", "simple", 2, 1, "50.0%"),
        ("Finance", "All difficulties", 2, 1, "50.0%"),
        ("Juridique", "inappropriée", 1, 0, "0.0%"),
        ("Juridique", "All difficulties", 1, 0, "0.0%"),
    ]
    assert sections[1]["overall"]["n"] == 3
    assert "Automatic metrics" in page
    assert "<td>Juridique</td><td>inappropriée</td>" in page
    assert "50.0% – 50.0%" not in page  # a rate of 0.5 on two answers has a wide interval
    assert "0.0% – 0.0%" in page and "no width" in page  # collapsed Wald intervals are flagged


def test_overview_of_a_campaign_without_answers_says_so(client_for, analyst, campaign):
    page = client_for(analyst).get(overview_url(campaign)).content.decode()
    assert "No answer yet" in page
    assert 'class="chart"' not in page


@pytest.mark.parametrize("persona", ["manager", "annotator", "reviewer", "adjudicator", "analyst"])
def test_every_role_sees_the_automatic_metrics(request, client_for, campaign, persona):
    make_answer(campaign=campaign)
    response = client_for(request.getfixturevalue(persona)).get(overview_url(campaign))
    assert response.status_code == 200
    # The factory's question has no language, so there is no correct-language section.
    assert [s["name"] for s in response.context["metrics"]["sections"]] == ["response", "functional_citation"]


def test_htmx_request_gets_the_metrics_fragment_only(client_for, analyst, campaign):
    make_answer(campaign=campaign)
    response = client_for(analyst).get(overview_url(campaign), headers={"HX-Request": "true"})
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="automatic-metrics"' in page
    assert 'class="chart"' in page
    assert "<html" not in page


def test_theme_names_are_escaped_in_table_and_chart(client_for, analyst, campaign):
    make_answer(campaign=campaign, theme="<script>alert(1)</script>")
    page = client_for(analyst).get(overview_url(campaign)).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_an_invalid_campaign_regex_is_shown_instead_of_the_metrics(client_for, analyst, campaign):
    make_answer(campaign=campaign)
    campaign.abstention_patterns = ["(unclosed"]
    campaign.save()
    response = client_for(analyst).get(overview_url(campaign))
    assert response.status_code == 200
    assert "abstention pattern: invalid regular expression" in response.content.decode()
    assert response.context["metrics"]["sections"] == []


def test_overview_query_count_does_not_grow_with_the_number_of_answers(
    client_for, analyst, campaign, django_assert_num_queries
):
    client = client_for(analyst)
    for n in range(2):
        make_answer(campaign=campaign, theme="Finance", difficulty=("simple", "hard")[n % 2])
    with CaptureQueriesContext(connection) as small:
        assert client.get(overview_url(campaign)).status_code == 200
    for n in range(18):
        make_answer(campaign=campaign, theme=("Finance", "RH", "IT")[n % 3], difficulty="inappropriate")
    with django_assert_num_queries(len(small)):
        response = client.get(overview_url(campaign))
    assert response.context["counts"]["answers"] == 20


# Human agreement on the overview


def labelled_pairs(campaign, mode: str = AnnotationMode.REVIEW):
    """Two Finance units whose first and second human labels agree on one and differ on the other."""
    campaign.annotation_mode = mode
    campaign.save()
    criterion, units = sampled_by_theme(campaign, {"Finance": [(1, 1), (1, 0)]})
    first = member(campaign, Role.ANNOTATOR)
    second = member(campaign, Role.ANNOTATOR if mode == AnnotationMode.BLIND_DOUBLE else Role.REVIEWER)
    second_stage = Stage.LABEL if mode == AnnotationMode.BLIND_DOUBLE else Stage.REVIEW
    for unit, value in zip(units, (1, 0), strict=True):
        label(first, criterion, Stage.LABEL, 1, unit=unit)
        label(second, criterion, second_stage, value, unit=unit, comment="" if value else "non")
    return criterion, units, first, second


@pytest.mark.parametrize("persona", ["manager", "adjudicator", "analyst"])
def test_overview_shows_the_human_agreement_per_criterion_and_theme(request, client_for, campaign, persona):
    criterion, units, _, _ = labelled_pairs(campaign)
    response = client_for(request.getfixturevalue(persona)).get(overview_url(campaign))
    page = response.content.decode()
    assert response.status_code == 200
    assert 'id="human-agreement"' in page and "Cohen" in page
    relevance = next(r for r in response.context["agreement"] if r.criterion.name == "relevance")
    assert (relevance.overall.pairs, relevance.overall.agreed, relevance.overall.adjudications) == (2, 1, 0)
    assert [row.theme for row in relevance.themes] == ["Finance"]
    assert "50.0%" in page


@pytest.mark.parametrize("persona", ["annotator", "reviewer"])
def test_labellers_never_see_the_human_agreement_on_the_overview(request, client_for, campaign, persona):
    labelled_pairs(campaign)
    response = client_for(request.getfixturevalue(persona)).get(overview_url(campaign))
    page = response.content.decode()
    assert response.status_code == 200
    assert response.context["agreement"] is None
    assert 'id="human-agreement"' not in page and "Cohen" not in page and "50.0%" not in page


def test_a_blind_annotator_cannot_read_the_other_label_from_the_overview(client_for, campaign):
    _, _, first, second = labelled_pairs(campaign, mode=AnnotationMode.BLIND_DOUBLE)
    for person in (first, second):
        page = client_for(person).get(overview_url(campaign)).content.decode()
        assert "Human agreement" not in page and "Cohen" not in page
