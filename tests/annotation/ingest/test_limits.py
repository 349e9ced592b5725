"""What an import file may unpack to and how long each of its texts may be: refused with file,
row and field, and nothing written."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation import ingest, limits
from annotation.ingest.readers import XLSX_MAX_RATIO, XLSX_RATIO_FROM
from evaluation.imports.campaign_file import import_file
from tests.annotation.ingest.test_ingest import write_xlsx
from tests.ingest_files import RECORDS, table_counts, write_jsonl

pytestmark = pytest.mark.django_db


def refused(path: Path) -> list[ingest.RowError]:
    before = table_counts()
    with pytest.raises(ingest.ImportFailed) as failure:
        import_file(path=path, campaign_name="Limits")
    assert table_counts() == before
    return failure.value.errors


def with_member(path: Path, name: str, data: bytes) -> Path:
    """The workbook at ``path`` with one more member, deflated."""
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, data)
    return path


def test_a_workbook_member_that_unpacks_a_thousand_times_its_size_is_a_bomb(tmp_path):
    # 8 MB of one repeated cell packs into about 8 KB: the shape of the 204 KB file whose
    # 200 MB question reached a unit page.
    path = write_xlsx(tmp_path / "bomb.xlsx", RECORDS)
    with_member(path, "xl/worksheets/sheet2.xml", b"<c><v>a</v></c>" * (8 * 1024 * 1024 // 15))
    errors = refused(path)
    assert [(e.file, e.row, e.field) for e in errors] == [(str(path), None, "file")]
    assert "xl/worksheets/sheet2.xml" in errors[0].message
    assert "compression bomb" in errors[0].message


def test_a_member_under_the_ratio_or_too_small_to_matter_is_read(tmp_path):
    path = write_xlsx(tmp_path / "fine.xlsx", RECORDS)
    # Half a megabyte of zeros packs a thousand times, but is under XLSX_RATIO_FROM.
    with_member(path, "xl/media/blank.bin", bytes(XLSX_RATIO_FROM // 2))
    summary = import_file(path=path, campaign_name="Fine")
    assert summary.answers_created == len(RECORDS)


def test_a_workbook_that_unpacks_past_the_import_limit_is_refused(tmp_path, settings):
    path = write_xlsx(tmp_path / "answers.xlsx", RECORDS)
    with zipfile.ZipFile(path) as archive:
        unpacked = sum(member.file_size for member in archive.infolist())
    packed = path.stat().st_size
    assert packed < unpacked
    settings.IMPORT_MAX_BYTES = (packed + unpacked) // 2
    errors = refused(path)
    assert [(e.row, e.field) for e in errors] == [(None, "file")]
    assert f"unpacks to {unpacked} bytes" in errors[0].message


def test_the_ratio_limit_is_apache_pois(tmp_path):
    """What the rule means on a number: a member just over 100 times its packed size is
    refused, the same member 100 times is read (a member stored unpacked is ratio 1)."""
    assert XLSX_MAX_RATIO == 100
    text = io.BytesIO()
    with zipfile.ZipFile(text, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("xl/big.bin", bytes(2 * XLSX_RATIO_FROM))
    member = zipfile.ZipFile(io.BytesIO(text.getvalue())).infolist()[0]
    assert member.file_size == member.compress_size


@pytest.mark.parametrize(
    ("change", "field", "limit"),
    [
        (lambda r: r.update(question="q" * (limits.QUESTION + 1)), "question", limits.QUESTION),
        (lambda r: r.update(answer="a" * (limits.ANSWER + 1)), "answer", limits.ANSWER),
        (
            lambda r: r.update(reference_answer="r" * (limits.REFERENCE_ANSWER + 1)),
            "reference_answer",
            limits.REFERENCE_ANSWER,
        ),
        (
            lambda r: r["sources"][0].update(text="s" * (limits.SOURCE_TEXT + 1)),
            "sources[1].text",
            limits.SOURCE_TEXT,
        ),
        (
            lambda r: r["sources"][0].update(title="t" * (limits.SOURCE_TITLE + 1)),
            "sources[1].title",
            limits.SOURCE_TITLE,
        ),
        (
            lambda r: r.update(gold_evidence=["g" * (limits.GOLD_TEXT + 1)]),
            "gold_evidence[1].text",
            limits.GOLD_TEXT,
        ),
        (
            lambda r: r.update(sentences=[{"text": "x" * (limits.SENTENCE + 1)}]),
            "sentences[1].text",
            limits.SENTENCE,
        ),
        (
            lambda r: r.update(sentences=[{"text": "x.", "paragraph": "p" * (limits.PARAGRAPH + 1)}]),
            "sentences[1].paragraph",
            limits.PARAGRAPH,
        ),
    ],
)
def test_a_text_over_its_limit_is_refused_naming_row_and_field(tmp_path, change, field, limit):
    records = json.loads(json.dumps(RECORDS))
    change(records[1])
    errors = refused(write_jsonl(tmp_path / "answers.jsonl", records))
    assert [(e.row, e.field) for e in errors] == [(2, field)]
    assert f"longer than {limit} characters" in errors[0].message


def test_a_conflict_quotes_a_long_question_shortened(tmp_path):
    records = json.loads(json.dumps(RECORDS))
    records[1]["question"] = "q" * 5000
    errors = refused(write_jsonl(tmp_path / "answers.jsonl", records))
    assert [(e.row, e.field) for e in errors] == [(2, "question")]
    assert len(errors[0].message) < 400
    assert "…" in errors[0].message


def test_a_text_at_its_limit_is_imported(tmp_path):
    records = json.loads(json.dumps(RECORDS))
    for record in records:
        if record["question_id"] == records[1]["question_id"]:
            record["question"] = "q" * limits.QUESTION
    records[1]["sources"][0]["text"] = "s" * limits.SOURCE_TEXT
    summary = import_file(path=write_jsonl(tmp_path / "answers.jsonl", records), campaign_name="At")
    assert summary.answers_created == len(RECORDS)


def test_the_import_page_refuses_a_bomb_naming_the_file(tmp_path, client_for, manager, campaign):
    path = write_xlsx(tmp_path / "bomb.xlsx", RECORDS)
    with_member(path, "xl/worksheets/sheet2.xml", bytes(4 * XLSX_RATIO_FROM))
    before = table_counts()
    response = client_for(manager).post(
        reverse("evaluation:import_into", args=[campaign.slug]),
        {"file": SimpleUploadedFile("bomb.xlsx", path.read_bytes())},
    )
    assert response.status_code == 400
    assert table_counts() == before
    assert [(e.file, e.row, e.field) for e in response.context["errors"]] == [("bomb.xlsx", None, "file")]
    assert "compression bomb" in response.content.decode()
