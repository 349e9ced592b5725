from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import AnnotationMode, Criterion, Question, Role, Stage
from evaluation.estimates.snapshots import record_snapshots
from evaluation.models import Judge, Judgment, ReportSnapshot
from tests.categorical import categorical_campaign
from tests.factories import (
    add_member,
    label,
    make_answer,
    make_answers,
    make_campaign,
    make_user,
    member,
    sampled_by_theme,
)
from tests.judged import version_campaign

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
    # The header's language switch comes back to the address asked for, whatever it is.
    pattern = r'("X-CSRFToken": "|name="csrfmiddlewaretoken" value="|name="next" value=")[^"]+'
    return re.sub(pattern, r"\1", content.decode())


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
    assert '<th scope="row">Juridique</th><td data-label="Difficulty">inappropriée</td>' in page
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
    make_answers(
        campaign=campaign, about=[(("Finance", "RH", "IT")[n % 3], "inappropriate") for n in range(18)]
    )
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


# How good the assistant is: the overview's headline


def headline_versions():
    first, _, _ = version_campaign("Assistant v1", seed=1, share=0.6)
    second, _, _ = version_campaign("Assistant v2", seed=2, share=0.85)
    analyst = make_user(username="ana")
    for campaign in (first, second):
        add_member(campaign=campaign, user=analyst, roles=[Role.ANALYST])
    return first, second, analyst


def test_the_overview_answers_how_good_the_assistant_is_first(client_for, db):
    first, second, analyst = headline_versions()
    response = client_for(analyst).get(overview_url(second))
    page = response.content.decode()
    assert (
        page.index('id="headline"') < page.index("Automatic metrics") and "How good is the assistant?" in page
    )
    headline = response.context["headline"]
    assert [row.criterion.name for row in headline.rows] == ["relevance", "veracity", "citation_support"]
    assert headline.previous == first
    # Each criterion once, linked to its report from its card; no second list of reports.
    assert page.count(f'href="{reverse("evaluation:report", args=[second.slug, "relevance"])}"') == 1
    assert "Report: relevance" not in page
    diff = headline.rows[0].change.difference
    assert f"{diff.estimate * 100:+.1f} pts" in page


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator"])
def test_people_who_label_see_no_headline(client_for, campaign, persona, request):
    version_campaign("Velmont v2", seed=2)
    response = client_for(request.getfixturevalue(persona)).get(overview_url(campaign))
    assert (
        "headline" not in response.context and "How good is the assistant?" not in response.content.decode()
    )


def test_a_criterion_computed_when_read_comes_after_the_page_in_its_card(client_for, campaign, analyst):
    correctness, _, _ = categorical_campaign(campaign)
    page = client_for(analyst).get(overview_url(campaign)).content.decode()
    card_url = reverse("evaluation:headline_card", args=[campaign.slug, "correctness"])
    assert f'hx-get="{card_url}"' in page
    card = client_for(analyst).get(card_url).content.decode()
    assert 'data-criterion="correctness"' in card and 'data-part="correct"' in card and "hx-get" not in card
    assert "<h3" in card and "<h4" in client_for(analyst).get(card_url + "?level=4").content.decode()


@pytest.mark.parametrize(
    ("persona", "status"), [("annotator", 403), ("adjudicator", 403), ("outsider", 404), ("manager", 200)]
)
def test_the_headline_card_is_for_managers_and_analysts(client_for, campaign, persona, status, request):
    categorical_campaign(campaign)
    url = reverse("evaluation:headline_card", args=[campaign.slug, "correctness"])
    assert client_for(request.getfixturevalue(persona)).get(url).status_code == status


def test_the_headline_card_of_an_unknown_criterion_is_404_and_only_get_is_allowed(
    client_for, campaign, analyst
):
    client = client_for(analyst)
    assert client.get(reverse("evaluation:headline_card", args=[campaign.slug, "nope"])).status_code == 404
    assert (
        client.post(reverse("evaluation:headline_card", args=[campaign.slug, "relevance"])).status_code == 405
    )


def test_the_overview_queries_do_not_grow_with_the_criteria(client_for, db):
    first, second, analyst = headline_versions()
    client = client_for(analyst)
    # The automatic metrics come from the page cache after the first visit (the campaign's content version).
    client.get(overview_url(second))
    with CaptureQueriesContext(connection) as few:
        assert client.get(overview_url(second)).status_code == 200
    for campaign in (first, second):
        for n in range(3):
            criterion = Criterion.objects.create(
                campaign=campaign, name=f"tone{n}", title=f"Tone {n}", level="answer"
            )
            judge = Judge.objects.get(campaign=campaign)
            Judgment.objects.bulk_create(
                Judgment(unit=unit, criterion=criterion, judge=judge, value=1)
                for unit in campaign.units.filter(level="answer")
            )
            record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    with CaptureQueriesContext(connection) as many:
        response = client.get(overview_url(second))

    def besides_agreement(captured) -> list[str]:
        # The human agreement reads each criterion's labels (annotation.workflow.agreement).
        return [q["sql"] for q in captured.captured_queries if 'FROM "annotation_label"' not in q["sql"]]

    assert len(besides_agreement(many)) == len(besides_agreement(few))
    assert [row.criterion.name for row in response.context["headline"].rows][:4] == [
        "relevance",
        "tone0",
        "tone1",
        "tone2",
    ]
