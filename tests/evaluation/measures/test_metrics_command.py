"""python manage.py metrics"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Answer, Question
from evaluation.measures.automatic import compute_metrics, metrics_as_json
from tests.factories import make_answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def filled(campaign):
    q = Question.objects.create(
        campaign=campaign, external_id="Q1", text="CA ?", theme="Finance", difficulty="simple", language="fr"
    )
    for n in range(4):
        answer = make_answer(campaign=campaign, question=q)
        if n == 3:
            Answer.objects.filter(pk=answer.pk).update(language="en")
    return campaign


def run(*args: str) -> str:
    out = StringIO()
    call_command("metrics", *args, stdout=out)
    return out.getvalue()


def test_json_output_is_the_specified_document(filled):
    data = json.loads(run("--campaign", filled.name, "--format", "json"))
    assert data == json.loads(
        json.dumps(metrics_as_json(campaign=filled, rows=compute_metrics(campaign=filled)))
    )
    language = [m for m in data["metrics"] if m["metric"] == "correct_language" and m["difficulty"] is None]
    assert language == [
        {
            "metric": "correct_language",
            "theme": "Finance",
            "difficulty": None,
            "n": 4,
            "rate": 0.75,
            "ci": [pytest.approx(0.3256553, abs=1e-6), 1.0],
        }
    ]


def test_table_output_lists_every_row_with_percentages(filled):
    lines = run("--campaign", filled.name).splitlines()
    assert lines[0].split() == ["metric", "theme", "difficulty", "n", "rate", "95%", "Wald", "interval"]
    assert len(lines) == 2 + len(compute_metrics(campaign=filled))
    language = [line for line in lines if line.startswith("correct_language") and "simple" in line]
    assert len(language) == 1
    assert language[0].split()[-4:] == ["4", "75.0%", "[32.6%,", "100.0%]"]


def test_alpha_sets_the_level_of_the_intervals(filled):
    table = run("--campaign", filled.name, "--alpha", "0.1")
    assert "90% Wald interval" in table
    # 0.75 +- 1.645 * 0.2165 = [39.4%, 100%]
    assert "[39.4%, 100.0%]" in table


def test_an_empty_campaign_prints_an_empty_table(campaign):
    assert "(no answers)" in run("--campaign", campaign.name)
    assert json.loads(run("--campaign", campaign.name, "--format", "json"))["metrics"] == []


def test_an_unknown_campaign_is_an_error_naming_it(db):
    with pytest.raises(CommandError, match="campaign 'Nowhere' does not exist"):
        run("--campaign", "Nowhere")


def test_an_invalid_campaign_regex_is_a_command_error(filled):
    filled.citation_pattern = "[unclosed"
    filled.save()
    with pytest.raises(CommandError, match="citation pattern: invalid regular expression"):
        run("--campaign", filled.name)


def test_an_alpha_outside_zero_one_is_a_command_error(filled):
    with pytest.raises(CommandError, match="alpha"):
        run("--campaign", filled.name, "--alpha", "2")
