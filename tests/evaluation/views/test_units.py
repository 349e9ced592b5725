"""One unit, whole: who opens it, what it shows, what it costs; the disagreements with the judge."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape

from annotation.models import AnnotationMode, Criterion, Label, Level, Role, Stage, Unit
from evaluation.models import Judge, Judgment, PrimaryJudge
from evaluation.pages import unit_record
from tests.factories import add_member, make_answer, make_user

REASONING = "<script>alert('judge')</script> The answer strays"


def relevance(campaign) -> Criterion:
    return Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")


def answer_unit(campaign, *, theme: str = "Finance") -> Unit:
    answer = make_answer(campaign=campaign, theme=theme, text=f"Une réponse sur {theme} [^c1^].")
    return Unit.objects.get(answer=answer, level=Level.ANSWER)


def labelled_unit(campaign, annotator, reviewer) -> tuple[Unit, Judge]:
    """A unit labelled 1, withdrawn, labelled 1 again, changed to 0, confirmed 0 by the reviewer;
    two judges: one says 1 (with hostile reasoning), one failed."""
    criterion = relevance(campaign)
    unit = answer_unit(campaign)
    for user, stage, value, comment in [
        (annotator, Stage.LABEL, 1, ""),
        (annotator, Stage.LABEL, None, ""),
        (annotator, Stage.LABEL, 1, ""),
        (annotator, Stage.LABEL, 0, "off-topic second paragraph"),
        (reviewer, Stage.REVIEW, 0, "agreed"),
    ]:
        Label.objects.create(
            unit=unit, criterion=criterion, user=user, stage=stage, value=value, comment=comment
        )
    judge = Judge.objects.create(campaign=campaign, name="gpt-judge")
    Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=1, reasoning=REASONING)
    broken = Judge.objects.create(campaign=campaign, name="broken-judge")
    Judgment.objects.create(
        unit=unit, criterion=criterion, judge=broken, status=Judgment.Status.FAILED, error="timeout"
    )
    return unit, judge


def unit_url(campaign, unit) -> str:
    return reverse("evaluation:unit", args=[campaign.slug, unit.pk])


# Who opens the unit page


@pytest.mark.parametrize("persona", ["manager", "analyst"])
def test_managers_and_analysts_see_labels_and_judges(
    persona, campaign, annotator, reviewer, client_for, request
):
    unit, _ = labelled_unit(campaign, annotator, reviewer)
    response = client_for(request.getfixturevalue(persona)).get(unit_url(campaign, unit))
    assert response.status_code == 200
    content = response.content.decode()
    assert (
        "off-topic second paragraph" in content and "gpt-judge" in content and "The answer strays" in content
    )


def test_adjudicators_see_human_labels_but_no_judge(campaign, annotator, reviewer, adjudicator, client_for):
    unit, _ = labelled_unit(campaign, annotator, reviewer)
    response = client_for(adjudicator).get(unit_url(campaign, unit))
    assert response.status_code == 200
    content = response.content.decode()
    assert "off-topic second paragraph" in content and "annotator" in content
    assert "gpt-judge" not in content and "strays" not in content and "timeout" not in content
    assert not response.context["record"].with_judges


def test_adjudicators_who_also_analyse_see_the_judges(campaign, annotator, reviewer, adjudicator, client_for):
    add_member(campaign=campaign, user=adjudicator, roles=[Role.ANALYST])
    unit, _ = labelled_unit(campaign, annotator, reviewer)
    assert "gpt-judge" in client_for(adjudicator).get(unit_url(campaign, unit)).content.decode()


@pytest.mark.parametrize("persona", ["annotator", "reviewer"])
def test_people_who_label_or_review_get_403(persona, campaign, annotator, reviewer, client_for, request):
    unit, _ = labelled_unit(campaign, annotator, reviewer)
    assert client_for(request.getfixturevalue(persona)).get(unit_url(campaign, unit)).status_code == 403


@pytest.mark.parametrize("also", [Role.ANNOTATOR, Role.REVIEWER])
def test_adjudicators_who_also_label_get_403(also, campaign, annotator, reviewer, adjudicator, client_for):
    add_member(campaign=campaign, user=adjudicator, roles=[also])
    unit, _ = labelled_unit(campaign, annotator, reviewer)
    assert client_for(adjudicator).get(unit_url(campaign, unit)).status_code == 403


def test_blind_mode_annotators_see_no_other_label(campaign, annotator, client_for):
    campaign.annotation_mode = AnnotationMode.BLIND_DOUBLE
    campaign.save()
    other = make_user(username="other-annotator")
    add_member(campaign=campaign, user=other, roles=[Role.ANNOTATOR])
    unit = answer_unit(campaign)
    Label.objects.create(unit=unit, criterion=relevance(campaign), user=other, stage=Stage.LABEL, value=1)
    response = client_for(annotator).get(unit_url(campaign, unit))
    assert response.status_code == 403 and b"other-annotator" not in response.content


def test_outsiders_get_404_and_anonymous_is_sent_to_login(
    campaign, annotator, reviewer, outsider, client, client_for
):
    unit, _ = labelled_unit(campaign, annotator, reviewer)
    response = client.get(unit_url(campaign, unit))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert client_for(outsider).get(unit_url(campaign, unit)).status_code == 404


def test_a_unit_of_another_campaign_is_404(campaign, manager, client_for):
    from tests.factories import make_campaign

    elsewhere = answer_unit(make_campaign(name="Elsewhere"))
    assert client_for(manager).get(unit_url(campaign, elsewhere)).status_code == 404


def test_post_is_refused(campaign, manager, annotator, reviewer, client_for):
    unit, _ = labelled_unit(campaign, annotator, reviewer)
    assert client_for(manager).post(unit_url(campaign, unit)).status_code == 405


# What it shows


def test_the_record_tells_each_row_and_the_final_label(campaign, annotator, reviewer):
    unit, _ = labelled_unit(campaign, annotator, reviewer)
    record = unit_record.unit_record(campaign=campaign, unit_id=unit.pk, with_judges=True)
    assert record is not None
    (item,) = record.criteria
    assert [(row.action, row.label.value, row.previous) for row in item.rows] == [
        ("label", 1, None),
        ("withdrawal", None, 1),
        ("change", 1, None),
        ("change", 0, 1),
        ("label", 0, None),
    ]
    assert item.final == 0
    assert item.in_force == {item.rows[3].label.pk, item.rows[4].label.pk}
    assert [(j.judge.name, j.status, j.value) for j in item.judgments] == [
        ("broken-judge", "failed", None),
        ("gpt-judge", "ok", 1),
    ]


def test_the_page_shows_the_answer_history_and_escapes_the_reasoning(
    campaign, annotator, reviewer, manager, client_for
):
    unit, _ = labelled_unit(campaign, annotator, reviewer)
    content = client_for(manager).get(unit_url(campaign, unit)).content.decode()
    assert "Une réponse sur Finance" in content and unit.answer.question.text in content
    assert "withdrawal" in content and "differs from the final label" in content and "timeout" in content
    assert (
        "<script>alert" not in content and "&lt;script&gt;alert(&#x27;judge&#x27;)&lt;/script&gt;" in content
    )


def test_a_sentence_unit_is_highlighted_in_its_answer(campaign, manager, client_for):
    answer = make_answer(campaign=campaign)
    unit = Unit.objects.get(answer=answer, level=Level.SENTENCE, sentence__position=1)
    content = client_for(manager).get(unit_url(campaign, unit)).content.decode()
    assert '<mark class="target">' in content and "Veracity" in content


def test_a_citation_unit_shows_its_sentence_and_its_one_chunk(campaign, manager, client_for):
    answer = make_answer(campaign=campaign, citations=True, chunk_ids=("c1", "c2", "c3"))
    unit = Unit.objects.get(answer=answer, level=Level.CITATION, chunk__external_id="c2")
    content = client_for(manager).get(unit_url(campaign, unit)).content.decode()
    assert '<mark class="target">' in content and "Citation support" in content
    assert "Texte c2." in content and "Texte c1." not in content and "Texte c3." not in content


def test_queries_do_not_grow_with_labels_or_judgments(campaign, annotator, reviewer, manager, client_for):
    unit, judge = labelled_unit(campaign, annotator, reviewer)
    client = client_for(manager)
    with CaptureQueriesContext(connection) as few:
        assert client.get(unit_url(campaign, unit)).status_code == 200
    criterion = relevance(campaign)
    for n in range(6):
        Label.objects.create(unit=unit, criterion=criterion, user=annotator, stage=Stage.LABEL, value=n % 2)
        other = Judge.objects.create(campaign=campaign, name=f"judge-{n}")
        Judgment.objects.create(unit=unit, criterion=criterion, judge=other, value=1, reasoning="r")
    with CaptureQueriesContext(connection) as many:
        assert client.get(unit_url(campaign, unit)).status_code == 200
    assert len(many) == len(few)
    # session, user, campaign, roles, unit, sources, criteria, labels, judgments
    assert len(few) == 9


def test_without_the_judges_no_judgment_is_read(campaign, annotator, reviewer, adjudicator, client_for):
    unit, _ = labelled_unit(campaign, annotator, reviewer)
    client = client_for(adjudicator)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(unit_url(campaign, unit)).status_code == 200
    assert len(queries) == 8
    assert not any("evaluation_judgment" in q["sql"] for q in queries)


# Where humans and the judge disagree


def disagreeing_campaign(campaign, *, per_theme: int = 3) -> tuple[Criterion, Judge, Judge]:
    """Per theme: ``per_theme`` units where the judge says 1 and the final label is 0, one where
    they agree, one without a final label and one whose judgment failed. A second judge agrees."""
    criterion = relevance(campaign)
    judge = Judge.objects.create(campaign=campaign, name="gpt-judge")
    other = Judge.objects.create(campaign=campaign, name="other-judge")
    for theme in ["Finance", "IT"]:
        for index in range(per_theme + 3):
            unit = answer_unit(campaign, theme=theme)
            if index != per_theme + 1:
                Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=0)
            if index == per_theme + 2:
                Judgment.objects.create(
                    unit=unit, criterion=criterion, judge=judge, status=Judgment.Status.FAILED, error="x"
                )
            else:
                value = 0 if index == per_theme else 1
                Judgment.objects.create(
                    unit=unit, criterion=criterion, judge=judge, value=value, reasoning=REASONING
                )
            Judgment.objects.create(unit=unit, criterion=criterion, judge=other, value=0)
    # Two judges labeled it: the first is the criterion's primary judge, the one read by default.
    PrimaryJudge.objects.create(criterion=criterion, judge=judge)
    return criterion, judge, other


def disagreements_url(campaign, **params) -> str:
    url = reverse("evaluation:disagreements", args=[campaign.slug, "relevance"])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def listed(response) -> list[int]:
    return [row.unit.pk for row in response.context["rows"]]


@pytest.mark.parametrize("persona", ["manager", "analyst"])
def test_the_disagreements_list_units_where_the_final_label_and_the_judge_differ(
    persona, campaign, client_for, request
):
    disagreeing_campaign(campaign)
    response = client_for(request.getfixturevalue(persona)).get(disagreements_url(campaign))
    assert response.status_code == 200
    rows = response.context["rows"]
    assert len(rows) == 6 and all(row.final == 0 and row.judgment.value == 1 for row in rows)
    content = response.content.decode()
    for row in rows:
        assert unit_url(campaign, row.unit) in content
    assert "<script>alert" not in content and "&lt;script&gt;" in content


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator"])
def test_people_who_label_get_403_on_the_disagreements(persona, campaign, client_for, request):
    disagreeing_campaign(campaign)
    assert client_for(request.getfixturevalue(persona)).get(disagreements_url(campaign)).status_code == 403


def test_outsiders_get_404_on_the_disagreements(campaign, outsider, client_for):
    disagreeing_campaign(campaign)
    assert client_for(outsider).get(disagreements_url(campaign)).status_code == 404


def test_the_disagreements_filter_by_theme_and_judge(campaign, analyst, client_for):
    disagreeing_campaign(campaign)
    client = client_for(analyst)
    it = client.get(disagreements_url(campaign, theme="IT"))
    assert len(listed(it)) == 3 and {row.unit.theme for row in it.context["rows"]} == {"IT"}
    assert listed(client.get(disagreements_url(campaign, judge="other-judge"))) == []
    assert client.get(disagreements_url(campaign, judge="nobody")).status_code == 400
    assert client.get(disagreements_url(campaign, theme="Nowhere")).status_code == 400


def test_without_a_primary_judge_the_disagreements_ask_which_judge(campaign, analyst, client_for):
    criterion, _judge, _other = disagreeing_campaign(campaign)
    PrimaryJudge.objects.filter(criterion=criterion).delete()
    response = client_for(analyst).get(disagreements_url(campaign))
    assert response.status_code == 200 and "rows" not in response.context
    assert "Several judges have labeled this criterion" in response.content.decode()
    assert len(listed(client_for(analyst).get(disagreements_url(campaign, judge="gpt-judge")))) == 6


def test_the_disagreements_are_paginated(campaign, analyst, client_for, monkeypatch):
    from evaluation.views import units

    monkeypatch.setattr(units, "PER_PAGE", 4)
    disagreeing_campaign(campaign)
    client = client_for(analyst)
    first = client.get(disagreements_url(campaign, judge="gpt-judge"))
    second = client.get(disagreements_url(campaign, judge="gpt-judge", page=2))
    assert len(listed(first)) == 4 and len(listed(second)) == 2
    assert not set(listed(first)) & set(listed(second))
    assert "judge=gpt-judge&amp;page=2" in first.content.decode()


def test_the_disagreements_queries_do_not_grow_with_the_units(campaign, analyst, client_for):
    disagreeing_campaign(campaign, per_theme=2)
    client = client_for(analyst)
    with CaptureQueriesContext(connection) as few:
        assert client.get(disagreements_url(campaign)).status_code == 200
    criterion = relevance(campaign)
    judge = Judge.objects.get(campaign=campaign, name="gpt-judge")
    for _ in range(10):
        unit = answer_unit(campaign)
        Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=0)
        Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=1, reasoning="r")
    with CaptureQueriesContext(connection) as many:
        assert client.get(disagreements_url(campaign)).status_code == 200
    assert len(many) == len(few)
    # session, user, campaign, roles, criterion, judges, themes, judgments, labels, the page's
    # judgments with their units, its labels
    assert len(few) == 11, [q["sql"][:80] for q in few]


# Links to the unit page and the disagreements


def test_the_adjudication_page_links_to_the_unit(campaign, annotator, reviewer, adjudicator, client_for):
    from tests.factories import label, sampled

    criterion, units = sampled(campaign=campaign, answers=1)
    label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    label(reviewer, criterion, Stage.REVIEW, 0, unit=units[0], comment="Hors sujet.")
    client = client_for(adjudicator)
    page = client.get(reverse("annotation:adjudicate", args=[campaign.slug, "relevance"])).content.decode()
    assert unit_url(campaign, units[0]) in page
    assert client.get(unit_url(campaign, units[0])).status_code == 200


def test_the_label_history_links_each_row_to_its_unit(campaign, annotator, reviewer, manager, client_for):
    unit, _ = labelled_unit(campaign, annotator, reviewer)
    page = client_for(manager).get(reverse("annotation:history", args=[campaign.slug])).content.decode()
    assert unit_url(campaign, unit) in page


def test_the_report_links_to_the_disagreements_with_its_judge(campaign, analyst, client_for):
    disagreeing_campaign(campaign)
    report = reverse("evaluation:report", args=[campaign.slug, "relevance"])
    page = client_for(analyst).get(report + "?judge=gpt-judge").content.decode()
    assert disagreements_url(campaign, judge="gpt-judge") in page


def test_the_lexical_judge_s_reason_is_shown_in_the_reader_s_language(campaign, client_for, manager):
    from evaluation.judge.lexical import lexical_relevance

    unit = answer_unit(campaign)
    verdict = lexical_relevance(question="Quel est le chiffre d'affaires ?", answer=unit.answer.text)
    lexical = Judge.objects.create(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    Judgment.objects.create(
        unit=unit,
        criterion=relevance(campaign),
        judge=lexical,
        value=verdict.label,
        reasoning=verdict.reasoning,
    )
    client = client_for(manager)
    english = client.get(unit_url(campaign, unit)).content.decode()
    french = client.get(unit_url(campaign, unit), HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert escape(verdict.reasoning) in english
    assert "des termes de la question trouvés dans la réponse" in french
    assert "of the question&#x27;s terms" not in french
