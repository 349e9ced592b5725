"""python manage.py stability: formats, measures, sources and refusals."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Criterion
from evaluation.models import Judge
from tests.evaluation.measures.test_stability import repeated

TABLE = {"Finance-1": [1, 1, 0], "Finance-2": [0, 0, 0], "IT-1": [1, 1, 1]}


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("stability", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def judged(campaign):
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    repeated(
        campaign, TABLE, judge=judge, criterion=Criterion.objects.get(campaign=campaign, name="relevance")
    )
    return campaign


def test_json_has_questions_summary_and_width_curve(judged):
    data = json.loads(run("--campaign", judged.name, "--criterion", "relevance", "--format", "json"))
    assert data["measure"] == "relevance" and data["judge"] == "gpt" and data["source"] == "judge"
    assert data["overall"]["icc"] == pytest.approx(2 / 3)
    assert data["overall"]["share_disagreeing"] == pytest.approx(1 / 3)
    assert data["overall"]["questions_compared"] == 3
    assert [t["theme"] for t in data["themes"]] == ["Finance", "IT"]
    assert [p["repetitions"] for p in data["width_by_repetitions"]] == [1, 2, 3]
    assert data["questions"][0] == {
        "question": "Finance-1",
        "theme": "Finance",
        "difficulty": "simple",
        "repetitions": [1, 2, 3],
        "values": [1.0, 1.0, 0.0],
        "rate": pytest.approx(2 / 3),
        "spread": pytest.approx(3**-0.5),
        "min": 0.0,
        "max": 1.0,
        "disagree": True,
    }


def test_table_is_the_default_and_names_the_figures(judged):
    text = run("--campaign", judged.name)
    assert "criterion relevance (answer level), judge gpt" in text
    assert "overall" in text and "0.667" in text and "33.3%" in text
    assert "mean width" in text


def test_metric_and_csv_to_a_file(judged, tmp_path):
    path = tmp_path / "s.csv"
    out = run("--campaign", judged.name, "--metric", "response", "--format", "csv", "--output", str(path))
    assert out.strip() == f"wrote {path}"
    rows = list(csv.reader(path.open(encoding="utf-8")))
    assert rows[0][0] == "question" and len(rows) == 4


def test_human_source_needs_no_judge(judged):
    data = json.loads(run("--campaign", judged.name, "--source", "human", "--format", "json"))
    assert data["source"] == "human" and data["questions"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--campaign", "Nope"], "campaign 'Nope' does not exist"),
        (["--format", "xml"], "argument --format: invalid choice: 'xml'"),
        (["--criterion", "nope"], "--criterion: 'criterion:nope' is not a criterion or metric"),
        (["--metric", "nope"], "--metric: 'metric:nope'"),
        (["--criterion", "relevance", "--metric", "response"], "not both"),
        (["--source", "crowd"], "--source: 'crowd' is not one of judge, human"),
        (["--draws", "0"], "--draws: must be between 1 and 200"),
        (["--alpha", "3"], "--alpha: must be strictly between 0 and 1"),
        (["--judge", "other"], "--judge: 'other' has no successful judgment of 'relevance'"),
    ],
)
def test_refusals_name_the_option(args, message, judged):
    if args[0] != "--campaign":
        args = ["--campaign", judged.name, *args]
    with pytest.raises(CommandError) as caught:
        run(*args)
    assert message in str(caught.value)


def test_the_table_and_the_json_say_why_there_is_nothing_to_compare(judged):
    data = json.loads(run("--campaign", judged.name, "--source", "human", "--format", "json"))
    assert data["nothing_to_compare"] == "no_values"
    assert json.loads(run("--campaign", judged.name, "--format", "json"))["nothing_to_compare"] is None
    text = run("--campaign", judged.name, "--source", "human")
    assert (
        text.splitlines()[1]
        == "no answer has a value of this measure from this source yet: nothing to compare"
    )
    assert "mean width" not in text
