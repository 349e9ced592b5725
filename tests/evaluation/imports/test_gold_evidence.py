"""Reference answers and gold evidence given with a campaign's questions on import."""

from __future__ import annotations

import csv
import json

import pytest

from annotation.models import Campaign, Question
from evaluation.imports.campaign_file import import_file, preview_file
from tests.annotation.ingest.test_ingest import import_fails, import_ok
from tests.ingest_files import DATA, RECORDS, write_jsonl

pytestmark = pytest.mark.django_db

PASSAGE = "Le chiffre d'affaires consolidé 2023 s'élève à 48,2 M€."


def with_evidence(**extras) -> list[dict]:
    records = [dict(r) for r in RECORDS]
    records[0].update(extras)
    return records


def test_reference_answer_and_gold_evidence_land_on_the_question(tmp_path):
    path = write_jsonl(
        tmp_path / "a.jsonl",
        with_evidence(
            reference_answer="48,2 M€.",
            gold_evidence=[PASSAGE, {"chunk_id": "c2"}, {"text": "Marge", "chunk_id": 3}],
        ),
    )
    summary, campaign = import_ok(path)
    question = Question.objects.get(campaign=campaign, external_id="Q1")
    assert question.reference_answer == "48,2 M€."
    assert question.gold_evidence == [
        {"text": PASSAGE},
        {"chunk_id": "c2"},
        {"text": "Marge", "chunk_id": "3"},
    ]
    other = Question.objects.get(campaign=campaign, external_id="Q2")
    assert (other.reference_answer, other.gold_evidence) == ("", [])
    assert summary.questions_given_evidence == 1
    assert "questions given a reference answer or gold evidence: 1" in summary.lines()


def test_a_later_row_of_the_question_may_give_them_and_rows_that_repeat_them_agree(tmp_path):
    records = [dict(r) for r in RECORDS]
    records[1]["gold_evidence"] = [PASSAGE]
    records[0]["gold_evidence"] = [PASSAGE]
    _, campaign = import_ok(write_jsonl(tmp_path / "a.jsonl", records))
    assert Question.objects.get(campaign=campaign, external_id="Q1").gold_evidence == [{"text": PASSAGE}]


def test_rows_of_one_question_with_different_gold_evidence_are_refused(tmp_path):
    records = [dict(r) for r in RECORDS]
    records[0]["gold_evidence"] = [PASSAGE]
    records[1]["gold_evidence"] = ["another passage"]
    errors = import_fails(write_jsonl(tmp_path / "a.jsonl", records))
    assert [(e.row, e.field) for e in errors] == [(2, "gold_evidence")]
    assert "row 1" in str(errors[0].message)


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("not a list", "gold_evidence"),
        ({"text": PASSAGE}, "gold_evidence"),
        ([3], "gold_evidence[1]"),
        ([{"title": "x"}], "gold_evidence[1]"),
        ([{"text": 3}], "gold_evidence[1].text"),
        ([{"text": "  "}], "gold_evidence[1].text"),
        ([PASSAGE, {"chunk_id": ""}], "gold_evidence[2].chunk_id"),
        ([{"chunk_id": [1]}], "gold_evidence[1].chunk_id"),
    ],
)
def test_gold_evidence_that_is_not_a_list_of_texts_or_ids_is_refused_naming_row_and_field(
    tmp_path, value, field
):
    errors = import_fails(write_jsonl(tmp_path / "a.jsonl", with_evidence(gold_evidence=value)))
    assert [(e.row, e.field) for e in errors] == [(1, field)]


def test_a_reference_answer_that_is_not_text_is_refused(tmp_path):
    errors = import_fails(write_jsonl(tmp_path / "a.jsonl", with_evidence(reference_answer=12)))
    assert [(e.row, e.field) for e in errors] == [(1, "reference_answer")]


def test_csv_cells_carry_gold_evidence_as_json(tmp_path):
    path = tmp_path / "a.csv"
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(
            ["question_id", "question", "theme", "answer", "sources", "reference_answer", "gold_evidence"]
        )
        writer.writerow(
            ["Q1", "Combien ?", "Finance", "48 M€.", "[]", "48 M€", json.dumps([PASSAGE, {"chunk_id": "c1"}])]
        )
        writer.writerow(["Q1", "Combien ?", "Finance", "48 M€ !", "[]", "", ""])
    _, campaign = import_ok(path)
    question = Question.objects.get(campaign=campaign)
    assert question.gold_evidence == [{"text": PASSAGE}, {"chunk_id": "c1"}]
    assert question.reference_answer == "48 M€"


def test_importing_again_with_update_sets_the_gold_evidence_of_existing_questions(tmp_path):
    import_ok(DATA / "answers.jsonl")
    path = write_jsonl(tmp_path / "a.jsonl", with_evidence(gold_evidence=[{"chunk_id": "c1"}]))
    import_file(path=path, campaign_name="Import", update=True)
    campaign = Campaign.objects.get(name="Import")
    assert Question.objects.get(campaign=campaign, external_id="Q1").gold_evidence == [{"chunk_id": "c1"}]


def test_a_preview_counts_reference_answers_and_gold_evidence(tmp_path):
    path = write_jsonl(
        tmp_path / "a.jsonl",
        with_evidence(reference_answer="48,2 M€.", gold_evidence=[PASSAGE, {"chunk_id": "c2"}]),
    )
    evidence = preview_file(path=path, campaign_name="Import").evidence
    assert (
        evidence.reference_answers,
        evidence.gold_questions,
        evidence.gold_texts,
        evidence.gold_chunks,
    ) == (
        1,
        1,
        1,
        1,
    )
    assert not Campaign.objects.exists()
