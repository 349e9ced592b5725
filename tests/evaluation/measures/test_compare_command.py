"""python manage.py compare: versions compared by question, from the command line."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Criterion
from tests.evaluation.measures.test_comparison import _version


def run(*args: str) -> str:
    out = StringIO()
    call_command("compare", *args, stdout=out)
    return out.getvalue()


def test_json_has_every_pair_per_estimate_and_theme(three_versions):
    data = json.loads(
        run(
            "--campaign", "Assistant v1", "--other", "Assistant v2", "--other", "Assistant v3",
            "--criterion", "relevance", "--format", "json",
        )
    )  # fmt: skip
    assert data["paired_by"] == "question"
    assert [v["campaign"] for v in data["versions"]] == ["Assistant v1", "Assistant v2", "Assistant v3"]
    overall = [row for row in data["rows"] if row["estimate"] == "ppi" and row["theme"] == "overall"]
    assert len(overall) == 3
    row = overall[1]
    assert (row["left"], row["right"]) == ("Assistant v1", "Assistant v3")
    assert row["ci"][0] <= row["difference"] <= row["ci"][1]
    assert row["p_adjusted"] >= row["p_value"]
    assert row["questions"] == 20 and row["shared_questions"] == 20


def test_table_marks_what_stays_significant(three_versions):
    text = run("--campaign", "Assistant v1", "--other", "Assistant v3", "--criterion", "relevance")
    assert text.splitlines()[0].startswith("relevance: versions paired by question, 95% t intervals")
    assert "p Holm" in text and "Assistant v3" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--other", "Nowhere"], "--other: campaign 'Nowhere' does not exist"),
        (["--other", "Assistant v2", "--alpha", "1.5"], "--alpha: must be strictly between 0 and 1"),
        (["--other", "Assistant v2", "--alpha", "x"], "--alpha must be a number"),
        (["--other", "Assistant v2", "--method", "magic"], "--method:"),
        (
            ["--other", "Assistant v2", "--format", "xml"],
            "invalid choice: 'xml' (choose from 'json', 'table')",
        ),
        (["--other", "Assistant v1"], "--other: campaign 'Assistant v1' is given more than once"),
        (
            ["--other", "Assistant v2", "--judge", "gpt"],
            "--judge: 'gpt' has no successful judgment of 'relevance'",
        ),
    ],
)
def test_bad_input_names_the_option(three_versions, args, message):
    with pytest.raises(CommandError) as caught:
        run("--campaign", "Assistant v1", "--criterion", "relevance", *args)
    assert message in str(caught.value)


def test_unknown_criterion_or_one_absent_from_a_campaign_names_it(three_versions):
    Criterion.objects.filter(campaign=three_versions[1], name="relevance").update(name="relevance-old")
    with pytest.raises(CommandError) as caught:
        run("--campaign", "Assistant v1", "--other", "Assistant v2", "--criterion", "relevance")
    assert "--criterion: 'relevance' is not a criterion of campaign 'Assistant v2'" in str(caught.value)
    with pytest.raises(CommandError) as caught:
        run("--campaign", "Assistant v1", "--other", "Assistant v3", "--criterion", "tone")
    assert "--criterion: 'tone' is not a criterion of campaign 'Assistant v1'" in str(caught.value)


def test_campaigns_with_no_question_in_common_are_refused(db):
    _version("First", {"a": [(1, 1)], "b": [(0, 0)]})
    _version("Second", {"c": [(1, 1)], "d": [(0, 0)]})
    with pytest.raises(CommandError) as caught:
        run("--campaign", "First", "--other", "Second", "--criterion", "relevance")
    assert "--other: campaigns 'First' and 'Second' have no question id in common" in str(caught.value)
