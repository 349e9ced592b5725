"""Human agreement (percent and Cohen's kappa per theme) and the work page that shows it with my queues."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import translation
from sklearn.metrics import cohen_kappa_score

from annotation.models import AnnotationMode, Label, Role, Stage
from annotation.workflow.agreement import OVERALL, human_agreement
from tests.factories import label, member, sampled_by_theme

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


# Per criterion and theme


def test_review_mode_agreement_per_theme_and_overall(campaign, annotator, reviewer, adjudicator):
    plan = {"Finance": [(1, 1), (1, 1), (0, 0), (1, 0)], "IT": [(0, 0), (1, 1), (0, 1)]}
    criterion, units = sampled_by_theme(campaign, plan)
    pairs = [pair for theme in plan.values() for pair in theme]
    for unit, (first, second) in zip(units, pairs, strict=True):
        label(annotator, criterion, Stage.LABEL, first, unit=unit)
        label(reviewer, criterion, Stage.REVIEW, second, unit=unit, comment="" if first == second else "non")
    label(adjudicator, criterion, Stage.ADJUDICATION, 1, unit=units[3], comment="oui")
    result = human_agreement(criterion=criterion)
    assert result.compared == "first label vs review"
    with translation.override("fr"):
        assert str(result.compared) == "première étiquette contre relecture"
    finance, it = result.themes
    assert (finance.theme, finance.pairs, finance.agreed, finance.adjudications) == ("Finance", 4, 3, 1)
    assert finance.percent == pytest.approx(75.0)
    assert finance.kappa == pytest.approx(cohen_kappa_score([1, 1, 0, 1], [1, 1, 0, 0]))
    assert (it.pairs, it.agreed, it.adjudications) == (3, 2, 0)
    assert result.overall.theme == OVERALL
    assert (result.overall.pairs, result.overall.agreed, result.overall.adjudications) == (7, 5, 1)
    assert result.overall.kappa == pytest.approx(cohen_kappa_score(*zip(*pairs, strict=True)))


def test_units_without_a_second_label_and_imported_labels_do_not_count(campaign, annotator):
    criterion, units = sampled_by_theme(campaign, {"Finance": [(1, 1), (1, 1)]})
    label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    Label.objects.create(unit=units[1], criterion=criterion, stage=Stage.IMPORTED, value=1)
    result = human_agreement(criterion=criterion)
    assert result.overall.pairs == 0 and result.overall.percent is None and result.overall.kappa is None


def test_blind_mode_compares_the_two_blind_labels(campaign):
    campaign.annotation_mode = AnnotationMode.BLIND_DOUBLE
    campaign.save()
    criterion, units = sampled_by_theme(campaign, {"HR": [(1, 1), (0, 1), (0, 0)]})
    first, second = member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR)
    for unit, (a, b) in zip(units, [(1, 1), (0, 1), (0, 0)], strict=True):
        label(first, criterion, Stage.LABEL, a, unit=unit)
        label(second, criterion, Stage.LABEL, b, unit=unit)
    result = human_agreement(criterion=criterion)
    assert result.compared == "first vs second blind label"
    assert (result.overall.pairs, result.overall.agreed) == (3, 2)


def test_a_withdrawn_review_no_longer_counts(campaign, annotator, reviewer):
    from annotation.workflow import undo_last

    criterion, units = sampled_by_theme(campaign, {"Finance": [(1, 1)]})
    label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    label(reviewer, criterion, Stage.REVIEW, 1, unit=units[0])
    undo_last(user=reviewer, criterion=criterion, stage=Stage.REVIEW)
    assert human_agreement(criterion=criterion).overall.pairs == 0


# The work page


def work_url(campaign) -> str:
    return reverse("annotation:work", args=[campaign.slug])


def test_work_page_lists_my_queues_with_links(client_for, campaign, reviewer):
    both = member(campaign, Role.ANNOTATOR, Role.REVIEWER, username="both")
    criterion, units = sampled_by_theme(campaign, {"Finance": [(1, 1), (1, 0)]})
    other = member(campaign, Role.ANNOTATOR)
    label(other, criterion, Stage.LABEL, 1, unit=units[0])
    label(reviewer, criterion, Stage.REVIEW, 1, unit=units[0])
    response = client_for(both).get(work_url(campaign))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<html" in page
    assert reverse("annotation:annotate", args=[campaign.slug, "relevance", "label"]) in page
    assert reverse("annotation:adjudicate", args=[campaign.slug, "relevance"]) not in page
    queues = {(q.criterion.name, q.stage): q for q in response.context["queues"]}
    assert set(queues) == {
        (c, s) for c in ("citation_support", "relevance", "veracity") for s in ("label", "review")
    }
    assert queues[("relevance", "label")].available == 1
    assert reverse("annotation:history", args=[campaign.slug]) not in page


@pytest.mark.parametrize("persona", ["manager", "adjudicator", "analyst"])
def test_work_page_shows_the_agreement_to_those_who_do_not_label(request, client_for, campaign, persona):
    annotator, reviewer = member(campaign, Role.ANNOTATOR), member(campaign, Role.REVIEWER)
    criterion, units = sampled_by_theme(campaign, {"Finance": [(1, 1)]})
    label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    label(reviewer, criterion, Stage.REVIEW, 1, unit=units[0])
    response = client_for(request.getfixturevalue(persona)).get(work_url(campaign))
    page = response.content.decode()
    assert 'id="human-agreement"' in page and "100.0%" in page
    agreement = {entry.criterion.name: entry for entry in response.context["agreement"]}
    assert agreement[criterion.name].overall.pairs == 1


def test_blind_annotators_and_reviewers_never_see_the_agreement_on_the_work_page(client_for, campaign):
    campaign.annotation_mode = AnnotationMode.BLIND_DOUBLE
    campaign.save()
    first, second = member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR, Role.REVIEWER)
    criterion, units = sampled_by_theme(campaign, {"Finance": [(1, 1)]})
    label(first, criterion, Stage.LABEL, 0, unit=units[0])
    label(second, criterion, Stage.LABEL, 1, unit=units[0])
    for person in (first, second):
        response = client_for(person).get(work_url(campaign))
        page = response.content.decode()
        assert response.status_code == 200
        # Seeing 0% on the only pair would tell the second annotator the first one's label.
        assert response.context["agreement"] is None
        assert "Human agreement" not in page and "0.0%" not in page and "Cohen" not in page


def test_work_page_htmx_request_returns_the_queues_fragment(client_for, campaign, annotator):
    sampled_by_theme(campaign, {"Finance": [(1, 1)]})
    response = client_for(annotator).get(work_url(campaign), **HTMX)
    page = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in page and 'id="queues"' in page and "Human agreement" not in page


def test_managers_get_the_history_link_and_adjudicators_their_queue(
    client_for, campaign, manager, adjudicator
):
    page = client_for(manager).get(work_url(campaign)).content.decode()
    assert reverse("annotation:history", args=[campaign.slug]) in page
    assert "do not include labelling" in page
    response = client_for(adjudicator).get(work_url(campaign))
    assert {q.stage for q in response.context["queues"]} == {"adjudication"}


def test_work_page_access(client, client_for, outsider, campaign, annotator):
    response = client.get(work_url(campaign))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert client_for(outsider).get(work_url(campaign)).status_code == 404
    assert client_for(annotator).post(work_url(campaign)).status_code == 405
