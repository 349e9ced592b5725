"""Imports carry a criterion's category keys in ``labels``; a key it does not have names the row
and field, and nothing is written."""

from __future__ import annotations

import csv

import pytest

from annotation import ingest
from annotation.models import Criterion, Label
from evaluation.imports.campaign_file import import_file
from evaluation.models import Judgment
from tests.categorical import correctness
from tests.factories import make_campaign
from tests.ingest_files import RECORDS, table_counts, write_jsonl

pytestmark = pytest.mark.django_db


def records_with(labels: list[dict]) -> list[dict]:
    made = []
    for record, label in zip(RECORDS, labels, strict=False):
        record = dict(record)
        record["labels"] = label
        made.append(record)
    return made


def test_category_keys_land_as_their_values_for_humans_and_the_judge(tmp_path):
    campaign = make_campaign(name="Correctness")
    criterion = correctness(campaign)
    path = write_jsonl(
        tmp_path / "answers.jsonl",
        records_with(
            [
                {"correctness": {"human": "5", "llm": 5}},
                {"correctness": {"human": 2, "llm": "4"}},
                {"correctness": {"llm": "1"}},
            ]
        ),
    )
    import_file(path=path, campaign_name="Correctness")
    humans = sorted(Label.objects.filter(criterion=criterion).values_list("value", flat=True))
    judged = sorted(Judgment.objects.filter(criterion=criterion).values_list("value", flat=True))
    assert (humans, judged) == ([2, 5], [1, 4, 5])


def test_keys_that_are_not_the_values_are_read_without_case(tmp_path):
    campaign = make_campaign(name="Letters")
    criterion = correctness(campaign)
    criterion.categories = [
        {**category, "key": "abcde"[index]} for index, category in enumerate(criterion.categories)
    ]
    criterion.save()
    path = write_jsonl(
        tmp_path / "answers.jsonl", records_with([{"correctness": {"human": "E", "llm": "a"}}])
    )
    import_file(path=path, campaign_name="Letters")
    assert list(Label.objects.filter(criterion=criterion).values_list("value", flat=True)) == [5]
    assert list(Judgment.objects.filter(criterion=criterion).values_list("value", flat=True)) == [1]


def test_a_key_the_criterion_does_not_have_names_the_row_and_field_and_writes_nothing(tmp_path):
    campaign = make_campaign(name="Correctness")
    correctness(campaign)
    path = write_jsonl(
        tmp_path / "bad.jsonl",
        records_with([{"correctness": {"human": "5"}}, {"correctness": {"human": "9", "llm": "x"}}]),
    )
    before = table_counts()
    with pytest.raises(ingest.ImportFailed) as failure:
        import_file(path=path, campaign_name="Correctness", name="bad.jsonl")
    text = str(failure.value)
    assert (
        "bad.jsonl:2: labels.correctness.human: '9' is not a category key of 'correctness' "
        "(keys: 1, 2, 3, 4, 5)" in text
    )
    assert "bad.jsonl:2: labels.correctness.llm: 'x' is not a category key" in text
    assert table_counts() == before


def test_csv_label_columns_carry_category_keys(tmp_path):
    campaign = make_campaign(name="Correctness")
    criterion = correctness(campaign)
    path = tmp_path / "answers.csv"
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(
            ["question_id", "question", "theme", "answer", "sources", "human:correctness", "llm:correctness"]
        )
        writer.writerow(
            ["Q1", "Quel est le chiffre d'affaires ?", "Finance", "Il est de 12 M€.", "[]", "3", "1"]
        )
    import_file(path=path, campaign_name="Correctness")
    assert list(Label.objects.filter(criterion=criterion).values_list("value", flat=True)) == [3]
    assert list(Judgment.objects.filter(criterion=criterion).values_list("value", flat=True)) == [1]


def test_binary_criteria_keep_their_0_1_rule_beside_a_categorical_one(tmp_path):
    campaign = make_campaign(name="Both")
    correctness(campaign)
    path = write_jsonl(tmp_path / "bad.jsonl", records_with([{"relevance": {"human": 3}}]))
    with pytest.raises(ingest.ImportFailed) as failure:
        import_file(path=path, campaign_name="Both", name="bad.jsonl")
    assert "labels.relevance.human: must be 0, 1 or empty, not 3" in str(failure.value)
    assert Criterion.objects.get(campaign=campaign, name="relevance").labels.count() == 0
