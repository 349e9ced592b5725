"""Pass 1 of a big JSONL file read in parts by worker processes: the same bookkeeping, the same
refusals and the same pass 2 as when this process reads the file alone."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation import ingest
from annotation.ingest import noting, validate
from tests.ingest_files import RECORDS

HEADER = {
    "criteria": [{"name": "support", "title": "Support", "level": "sentence"}],
    "citation_pattern": r"\[\^([a-z0-9]+)\^\]",
}


def lines(records: list[dict | str]) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in records)


def many(count: int) -> list[dict]:
    """``count`` answers to a few questions, no answer ids (numbered in file order), labels on
    some, a chunk that changes title (a warning) and a field the import does not know."""
    records = []
    for i in range(count):
        record = dict(RECORDS[i % len(RECORDS)])
        record.pop("answer_id", None)
        record["question_id"] = f"Q{i % 5}"
        record["question"] = f"Question {i % 5} ?"
        record["theme"], record["difficulty"] = ("Finance", "simple") if i % 5 else ("RH", "complex")
        if i == 21:
            record["sources"] = [dict(s, title=f"{s['title']} v2") for s in record["sources"]]
        if i % 7 == 3:
            record["colour"] = "blue"
        records.append(record)
    return records


def bookkeeping(checked: ingest.CheckedFile) -> dict:
    return {
        "answers": checked.answers,
        "questions": checked.questions,
        "chunks": checked.chunks,
        "labels": checked.labels,
        "rows": checked.rows.tolist(),
        "fingerprints": checked.fingerprints.tolist(),
        "warnings": checked.warnings,
        "format": checked.format,
        "declarations": checked.declarations,
        "categories": checked.categories,
    }


def outcome(path: Path) -> dict | list[tuple]:
    """What pass 1 gives: its bookkeeping, or the errors it refuses the file with."""
    try:
        return bookkeeping(ingest.check_file(path=path))
    except ingest.ImportFailed as failure:
        return [(e.file, e.row, e.field, str(e.message)) for e in failure.errors]


@pytest.fixture
def in_parts(monkeypatch):
    """Pass 1 in parts of about ``part_bytes`` whatever the file's size; the values the parts gave
    (None: a part had a problem and this process read the file again) are listed."""
    results: list[int | None] = []
    real = validate.note_in_parts

    def spied(**options):
        result = real(**options)
        results.append(result)
        return result

    monkeypatch.setattr(validate, "note_in_parts", spied)
    monkeypatch.setattr("annotation.ingest.analysis.os.cpu_count", lambda: 2)

    def check(path: Path, *, part_bytes: int = 600) -> tuple[dict | list, dict | list, list[int | None]]:
        results.clear()
        monkeypatch.setattr(noting, "PARTS_MIN_BYTES", 0)
        monkeypatch.setattr(noting, "PART_BYTES", part_bytes)
        parts = outcome(path)
        monkeypatch.setattr(noting, "PARTS_MIN_BYTES", 1 << 62)
        alone = outcome(path)
        return parts, alone, list(results)

    return check


def test_a_file_read_in_parts_gives_the_bookkeeping_of_one_read(tmp_path, in_parts):
    records = many(40)
    path = tmp_path / "big.jsonl"
    # A byte order mark, the header, blank lines between parts: rows stay the file's lines.
    path.write_bytes(codecs.BOM_UTF8 + lines([HEADER, *records[:20], "", "   ", *records[20:]]).encode())
    parts, alone, results = in_parts(path)
    assert results == [40]
    assert parts == alone
    assert isinstance(parts, dict)
    assert parts["rows"][0] == 2 and parts["rows"][20] == 24 and parts["rows"][-1] == 43
    # Numbered in file order across the parts: the fifth answer to Q0 is Q0-5.
    assert parts["answers"]["Q0-5"] == parts["rows"][20]
    assert any("not a known field" in warning for warning in parts["warnings"])
    assert any("another title or page" in warning for warning in parts["warnings"])
    assert parts["declarations"].criteria[0].name == "support"


def test_pass_two_reads_the_records_pass_one_read_in_parts(tmp_path, in_parts, monkeypatch):
    path = tmp_path / "big.jsonl"
    path.write_text(lines(many(30)), encoding="utf-8")
    monkeypatch.setattr(noting, "PARTS_MIN_BYTES", 0)
    monkeypatch.setattr(noting, "PART_BYTES", 500)
    monkeypatch.setattr("annotation.ingest.analysis.os.cpu_count", lambda: 2)
    checked = ingest.check_file(path=path)
    records = list(checked.records())
    assert [r.row for r in records] == list(range(1, 31))
    assert records[10].answer_id == "Q0-3" and records[10].repetition == 3
    # A line changed after pass 1, its row and length kept: pass 2 refuses the file at that row.
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    text[17] = text[17].replace("Question 2 ?", "Question 9 ?")
    path.write_text("".join(text), encoding="utf-8")
    with pytest.raises(ingest.ImportFailed) as failure:
        list(checked.records())
    assert [(e.row, e.field) for e in failure.value.errors] == [(18, "file")]
    assert "another record on this row" in str(failure.value.errors[0].message)


@pytest.mark.parametrize(
    ("spoil", "from_parts"),
    [
        # A row's own problem: the importing process reads the file again for its messages.
        pytest.param(
            lambda records: records.__setitem__(25, dict(records[25], answer="")), None, id="a bad row"
        ),
        pytest.param(
            lambda records: records.__setitem__(31, "{not json"), None, id="a line that is not JSON"
        ),
        # Rules across rows are the importing process's, on what the parts noted.
        pytest.param(
            lambda records: records.__setitem__(33, dict(records[33], question="Autre question ?")),
            40,
            id="a question's text differing",
        ),
        pytest.param(
            lambda records: records.__setitem__(2, dict(records[2], answer_id="Q3-1")),
            40,
            id="an answer id given twice",
        ),
    ],
)
def test_a_problem_in_a_part_is_refused_as_when_one_process_reads(tmp_path, in_parts, spoil, from_parts):
    records: list = many(40)
    spoil(records)
    path = tmp_path / "big.jsonl"
    path.write_text(lines(records), encoding="utf-8")
    parts, alone, results = in_parts(path)
    assert results == [from_parts]
    assert isinstance(alone, list) and alone
    assert parts == alone


def test_a_line_not_utf8_in_a_later_part_names_its_line(tmp_path, in_parts):
    path = tmp_path / "big.jsonl"
    data = lines(many(30)).encode().splitlines(keepends=True)
    data[22] = data[22].replace(b"Question", b"Questi\xe9n", 1)
    path.write_bytes(b"".join(data))
    parts, alone, results = in_parts(path)
    assert results == [None]
    assert parts == alone
    assert [(row, field) for _, row, field, _ in parts] == [(23, "encoding")]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(min_value=1, max_value=25),
    part_bytes=st.integers(min_value=1, max_value=4000),
    blanks=st.sets(st.integers(min_value=0, max_value=25), max_size=4),
)
def test_any_cut_into_parts_gives_the_bookkeeping_of_one_read(
    tmp_path_factory, in_parts, count, part_bytes, blanks
):
    records: list = many(count)
    for position in sorted(blanks, reverse=True):
        records.insert(min(position, len(records)), "")
    path = tmp_path_factory.mktemp("cut") / "big.jsonl"
    path.write_text(lines(records), encoding="utf-8")
    parts, alone, results = in_parts(path, part_bytes=part_bytes)
    assert results == [count]
    assert parts == alone


def test_a_mapping_reads_the_parts_as_it_reads_the_file(tmp_path, in_parts, monkeypatch):
    records = []
    for record in many(30):
        renamed = {("intitule" if key == "question" else key): value for key, value in record.items()}
        renamed["theme"] = {"Finance": "Financial", "RH": "Human resources"}[record["theme"]]
        records.append(renamed)
    path = tmp_path / "big.jsonl"
    path.write_text(lines(records), encoding="utf-8")
    mapping = {
        "columns": {"intitule": "question"},
        "values": {"theme": {"Financial": "Finance", "Human resources": "RH"}},
    }
    real = ingest.check_file
    monkeypatch.setattr(ingest, "check_file", lambda **options: real(**options, mapping=mapping))
    parts, alone, results = in_parts(path)
    assert results == [30]
    assert parts == alone
    assert isinstance(parts, dict)
    assert {seen.theme for seen in parts["questions"].values()} == {"Finance", "RH"}


def test_the_pool_gives_results_in_order_taking_payloads_only_as_far_ahead_as_asked():
    from annotation.ingest.analysis import in_order, process_pool

    taken: list[int] = []

    def payloads():
        for number in range(-20, 0):
            taken.append(number)
            yield number

    pool = process_pool(2)
    assert pool is not None
    with pool:
        results = in_order(pool, abs, payloads(), ahead=3)
        assert next(results) == 20
        assert len(taken) == 3
        assert list(results) == list(range(19, 0, -1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=30), max_size=20),
    size=st.integers(min_value=1, max_value=200),
    last_line_end=st.booleans(),
)
def test_the_parts_cover_the_file_line_by_line(tmp_path_factory, text, size, last_line_end):
    from annotation.ingest.readers import _lines, line_parts

    content = "\n".join(line.replace("\n", " ").replace("\r", " ") for line in text)
    if last_line_end and content:
        content += "\n"
    path = tmp_path_factory.mktemp("parts") / "lines.jsonl"
    path.write_text(content, encoding="utf-8")
    parts = list(line_parts(path=path, size=size))
    # Contiguous ranges from the first byte to the last, each ending at a line's end or the file's.
    assert [start for start, _ in parts] == ([0, *(end for _, end in parts[:-1])] if parts else [])
    assert (parts[-1][1] if parts else 0) == path.stat().st_size
    data = path.read_bytes()
    assert all(data[end - 1 : end] == b"\n" for _, end in parts[:-1])
    # Read part by part, the lines and their digests are those of the whole file.
    whole = list(_lines(path=path, name="lines.jsonl"))
    read, offset = [], 0
    for start, end in parts:
        lines = list(_lines(path=path, name="lines.jsonl", start=start, end=end))
        read += [(number + offset, line, digest) for number, line, digest in lines]
        offset += len(lines)
    assert read == whole
