"""The one rule on control characters in texts that come in (annotation.text), then the rule where
texts come in: an import file (JSONL, CSV; the API's answers are one), the API's bodies, a
judge's reply. A NUL in a text is refused by PostgreSQL: each is tested on both databases."""

from __future__ import annotations

import csv
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.models import Answer, Campaign, Question, Sentence
from annotation.templatetags.answer_text import MARK_CLOSE, MARK_OPEN
from annotation.text import clean_text, clean_value
from evaluation.imports.campaign_file import import_file
from tests.factories import api_token, make_user
from tests.ingest_files import RECORDS, write_jsonl

CONTROLS = [chr(c) for c in range(0x20) if chr(c) not in "\t\n\r\x0b\x0c"] + ["\x7f"]


def test_the_rule_removes_nul_and_the_controls_and_keeps_tabs_and_line_breaks():
    assert clean_text("a\x00b\x01c\x1bd\x7fe") == "abcde"
    assert clean_text("page 1.\x0cPage 2\x0bcolumn") == "page 1.\nPage 2\ncolumn"
    assert clean_text("a\tb\nc\r\nd") == "a\tb\nc\r\nd"
    assert clean_text("Chiffre d’affaires : 48,2 M€ — 6 %") == "Chiffre d’affaires : 48,2 M€ — 6 %"
    # The unit page's highlight marks can never come from a text.
    assert MARK_OPEN not in clean_text(f"x{MARK_OPEN}y{MARK_CLOSE}") and MARK_CLOSE not in clean_text(
        MARK_CLOSE
    )
    assert clean_value({"q\x00": ["a\x00", {"b": "c\x0c"}, 3, None, True]}) == {
        "q": ["a", {"b": "c\n"}, 3, None, True]
    }


@given(st.text())
def test_no_removed_character_survives_and_the_rule_is_idempotent(text):
    cleaned = clean_text(text)
    assert not any(c in cleaned for c in CONTROLS)
    assert "\x0b" not in cleaned and "\x0c" not in cleaned
    assert clean_text(cleaned) == cleaned
    # Nothing else is touched: the text without its controls, breaks for form feeds.
    assert cleaned == "".join("\n" if c in "\x0b\x0c" else c for c in text if c not in CONTROLS)


@given(st.dictionaries(st.text(), st.text() | st.lists(st.text())), st.booleans())
def test_a_jsonl_line_read_without_the_cleaning_walk_is_clean_already(record, ascii_only):
    from annotation.ingest.errors import ErrorLog
    from annotation.ingest.readers import _cleaned, _read_jsonl

    line = json.dumps(record, ensure_ascii=ascii_only)
    rows = list(_cleaned(_read_jsonl(lines=[(1, line + "\n", 0)], errors=ErrorLog(file="x.jsonl"))))
    assert [row.data for row in rows] == [clean_value(record)]
    if rows[0].clean:
        assert clean_value(record) == record


def test_only_jsonl_lines_that_may_hold_a_control_character_are_walked_through():
    from annotation.ingest.errors import ErrorLog
    from annotation.ingest.readers import _read_jsonl

    lines = [
        json.dumps(RECORDS[0]),
        json.dumps({"answer": "a\x00b"}),
        json.dumps({"answer": "a\\bc"}),
        json.dumps({"answer": "a\x7fb"}),  # DEL escaped
        json.dumps({"answer": "a\x7fb"}, ensure_ascii=False),  # DEL itself
        json.dumps({"answer": 'é\n\t"', "id": "c\\1"}),  # escapes that give no control character
    ]
    rows = _read_jsonl(
        lines=((number, line, 0) for number, line in enumerate(lines, start=1)),
        errors=ErrorLog(file="x.jsonl"),
    )
    assert [row.clean for row in rows] == [True, False, False, False, False, True]


def _dirty(records: list[dict]) -> list[dict]:
    dirty = [dict(r) for r in records]
    dirty[0]["question"] = "Quel est\x00 le chiffre\x1b d'affaires 2023 ?"
    dirty[0]["answer"] = dirty[0]["answer"].replace(". Il", ".\x0cIl", 1) + "\x00"
    return dirty


@pytest.mark.django_db
def test_an_import_file_with_nul_and_page_breaks_is_imported_under_the_rule(tmp_path):
    path = write_jsonl(tmp_path / "dirty.jsonl", _dirty(RECORDS))
    summary = import_file(path=path, campaign_name="Dirty")
    assert summary.answers_created == len(RECORDS)
    campaign = Campaign.objects.get(name="Dirty")
    question = Question.objects.get(campaign=campaign, external_id=RECORDS[0]["question_id"])
    assert question.text == "Quel est le chiffre d'affaires 2023 ?"
    answer = Answer.objects.filter(question=question).order_by("pk").first()
    assert "\x00" not in answer.text and "\x0c" not in answer.text
    assert "48,2 M€ [^c1^].\nIl progresse" in answer.text
    texts = Sentence.objects.filter(answer__question__campaign=campaign).values_list("text", flat=True)
    assert not any(c in text for text in texts for c in CONTROLS)


@pytest.mark.django_db
def test_a_csv_file_with_a_nul_in_a_cell_is_imported_under_the_rule(tmp_path):
    path = tmp_path / "dirty.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question_id", "question", "theme", "answer", "sources"])
        writer.writerow(["Q1", "Quel\x00 taux ?", "Finance", "Le taux est de 3\x00 %.", "[]"])
    import_file(path=path, campaign_name="Dirty CSV")
    question = Question.objects.get(campaign__name="Dirty CSV")
    assert question.text == "Quel taux ?"
    assert Answer.objects.get(question=question).text == "Le taux est de 3 %."


@pytest.mark.django_db
def test_the_api_takes_a_nul_out_of_a_campaign_name_and_refuses_a_name_of_controls_only(client):
    staff = make_user(username="staff")
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    auth = {"HTTP_AUTHORIZATION": f"Bearer {api_token(staff)}"}

    def post(name):
        return client.post(
            "/api/v1/campaigns", data=json.dumps({"name": name}), content_type="application/json", **auth
        )

    created = post("Audit\x00 2026")
    assert created.status_code == 201, created.content
    assert created.json()["name"] == "Audit 2026"
    refused = post("\x00\x01")
    assert refused.status_code == 400 and refused["Content-Type"] == "application/json"
    assert [e["field"] for e in refused.json()["errors"]] == ["name"]
    assert Campaign.objects.filter(name="Audit 2026").count() == 1 and Campaign.objects.count() == 1


@pytest.mark.django_db
def test_answers_posted_to_the_api_are_imported_under_the_rule(client, campaign):
    from tests.factories import member

    token = api_token(member(campaign, "manager"))
    record = dict(_dirty(RECORDS)[0])
    response = client.post(
        f"/api/v1/campaigns/{campaign.slug}/answers",
        data=json.dumps({"records": [record]}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 201, response.content
    question = Question.objects.get(campaign=campaign, external_id=record["question_id"])
    assert question.text == "Quel est le chiffre d'affaires 2023 ?"
    answer = Answer.objects.get(question=question)
    assert "\x00" not in answer.text and "48,2 M€ [^c1^].\nIl progresse" in answer.text
