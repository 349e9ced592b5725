"""Answers against their reference answers, read from a campaign: the means per theme, the
command, the API, the report page's section and its downloads, and the versions compared."""

from __future__ import annotations

import csv
import io
import json
import re
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Answer, Campaign, Criterion, Question
from evaluation.measures import comparison
from evaluation.measures.overlap import FRENCH, exact_match, rouge_l, token_f1
from evaluation.measures.reference_answers import reference_linears, reference_report
from evaluation.models import Judge
from inference.estimators.bootstrap import question_bootstrap_means
from tests.factories import api_token, make_answer, make_campaign

pytestmark = pytest.mark.django_db

REFERENCES = {
    "Q-ca": ("Finance", "Le chiffre d'affaires 2023 est de 148,6 M€."),
    "Q-marge": ("Finance", "La marge baisse de deux points."),
    "Q-rh": ("RH", "L'effectif compte 412 salariés."),
}
ANSWERS = {
    "Q-ca": ["Le chiffre d’affaires 2023 est de 148,6 M€ [^c1^].", "Il atteint 150 M€ [^c1^]."],
    "Q-marge": ["La marge baisse [^c2^].", "Les sources ne le disent pas."],
    "Q-rh": ["L’effectif compte 412 salariés.", "412 salariés [^c1^].", "Environ quatre cents personnes."],
}


def build(campaign: Campaign) -> None:
    for external_id, (theme, reference) in REFERENCES.items():
        question = Question.objects.create(
            campaign=campaign,
            external_id=external_id,
            text="?",
            theme=theme,
            language="fr",
            reference_answer=reference,
        )
        for text in ANSWERS[external_id]:
            make_answer(campaign=campaign, question=question, text=text, sentences=[(text, [])])
    # A question without a reference answer: its answers are not scored.
    make_answer(campaign=campaign, theme="Finance", text="Rien.", sentences=[("Rien.", [])])


def test_each_theme_is_the_mean_of_its_answers_with_a_bootstrap_over_questions(campaign):
    build(campaign)
    report = reference_report(campaign=campaign)
    assert list(report.rows) == ["Finance", "RH", "overall"]
    assert (report.answers, report.questions_with_reference) == (7, 3)
    scored = []
    for external_id, (theme, reference) in REFERENCES.items():
        for text in ANSWERS[external_id]:
            bare = re.sub(r"\[\^\w+\^\]", "", text)
            values = [f(bare, reference, normalisation=FRENCH) for f in (exact_match, token_f1, rouge_l)]
            scored.append((theme, external_id, values))
    for theme in ("Finance", "RH", "overall"):
        chosen = [s for s in scored if theme == "overall" or s[0] == theme]
        expected = question_bootstrap_means(
            values=np.array([s[2] for s in chosen]), questions=[s[1] for s in chosen]
        )
        for name, mean in zip(("exact_match", "token_f1", "rouge_l"), expected, strict=True):
            assert report.rows[theme][name] == mean
    # The first answer is the reference, once its citation marker and apostrophe are set aside.
    assert report.rows["Finance"]["exact_match"].mean == pytest.approx(0.25)


def test_the_command_the_api_and_the_page_give_the_same_numbers(campaign, client, client_for, manager):
    build(campaign)
    out = StringIO()
    call_command("reference_answers", campaign=campaign.name, format="json", stdout=out)
    data = json.loads(out.getvalue())
    assert [row["theme"] for row in data["rows"]] == ["Finance", "RH", "overall"]
    overall = data["rows"][-1]
    expected = reference_report(campaign=campaign).rows["overall"]
    assert overall["token_f1"]["mean"] == expected["token_f1"].mean
    api = client.get(
        f"/api/v1/campaigns/{campaign.slug}/reference-answers?normalisation=fr",
        HTTP_AUTHORIZATION=f"Bearer {api_token(manager)}",
    )
    assert api.status_code == 200 and api.json()["rows"][-1]["rouge_l"] == overall["rouge_l"]
    client = client_for(manager)
    section = client.get(
        reverse("evaluation:reference_answers", args=[campaign.slug]), HTTP_HX_REQUEST="true"
    )
    text = section.content.decode()
    assert "Against the reference answer" in text
    assert f"{100 * expected['token_f1'].mean:.1f}" in text
    rows = list(
        csv.reader(
            io.StringIO(
                client.get(reverse("evaluation:reference_answers_csv", args=[campaign.slug])).content.decode()
            )
        )
    )
    assert rows[0][:3] == ["campaign", "measure", "theme"] and len(rows) == 1 + 3 * 3
    refused = client.get(
        reverse("evaluation:reference_answers", args=[campaign.slug]), {"normalisation": "latin"}
    )
    assert refused.status_code == 400


def test_without_reference_answers_the_report_pages_slot_goes_away(campaign, client_for, manager):
    make_answer(campaign=campaign)
    response = client_for(manager).get(
        reverse("evaluation:reference_answers", args=[campaign.slug]), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200 and response.content == b""


def test_two_versions_compare_their_overlap_by_question(campaign):
    build(campaign)
    other = make_campaign(name="Version 2")
    for external_id, (theme, reference) in REFERENCES.items():
        question = Question.objects.create(
            campaign=other,
            external_id=external_id,
            text="?",
            theme=theme,
            language="fr",
            reference_answer=reference,
        )
        make_answer(campaign=other, question=question, text=reference, sentences=[(reference, [])])
    for each in (campaign, other):
        Judge.objects.create(campaign=each, name="imported", kind=Judge.Kind.IMPORTED)
    left, right = reference_linears(campaign=campaign), reference_linears(campaign=other)
    assert right["exact_match"]["overall"].estimate == 1.0
    assert left["token_f1"]["overall"].estimate == pytest.approx(
        reference_report(campaign=campaign).rows["overall"]["token_f1"].mean
    )
    versions = [
        comparison.Version(
            campaign=each,
            criterion=Criterion.objects.get(campaign=each, name="relevance"),
            judge=each.judges.get(),
        )
        for each in (campaign, other)
    ]
    result = comparison.compare_versions(versions=versions)
    assert {"exact_match", "token_f1", "rouge_l"} <= set(result.metric_names)
    row = next(r for r in result.rows if r.estimate == "token_f1" and r.theme == "overall")
    assert row.difference is not None and row.difference.estimate == pytest.approx(
        right["token_f1"]["overall"].estimate - left["token_f1"]["overall"].estimate
    )
    assert row.difference.shared == 3
    assert Answer.objects.filter(campaign=other).count() == 3
