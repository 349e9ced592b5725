"""What pass 1 of an import keeps of each record (``Noted``: ids, digests, where its labels
are, no text), and a big JSONL file's records noted in parts by worker processes.

A JSONL file in our format of at least PARTS_MIN_BYTES is cut into ranges of whole lines of
about PART_BYTES; worker processes read and check each range's records and send back what pass
1 keeps of them, AHEAD_PER_WORKER ranges in flight per worker; the importing process numbers
them and notes them in file order (``validate.check_file``), so that the outcome is that of one
read. A range with a problem of its own sends the whole reading back to the importing process,
whose messages name the rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from annotation.ingest.analysis import AHEAD_PER_WORKER, in_order, process_pool, spare_workers
from annotation.ingest.errors import ErrorLog
from annotation.ingest.formats import ATTEST
from annotation.ingest.mapping import ImportMapping
from annotation.ingest.readers import file_format, line_parts, read_jsonl_part
from annotation.ingest.records import AnswerRecord, CategoryKeys, FieldNames, Repetitions, record_of

ANSWER_LEVEL, SENTENCE_LEVEL, CITATION_LEVEL = "answer", "sentence", "citation"
PARTS_MIN_BYTES = 1 << 24
PART_BYTES = 1 << 21


def text_digest(text: str) -> bytes:
    """A digest telling texts apart (questions compared across rows and with the database)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


@dataclass(slots=True)
class Noted:
    """What pass 1 keeps of a record: ids, digests and where its labels are, no text. Made
    where the record is read (a worker process on big JSONL files), noted in file order."""

    row: int
    fingerprint: int
    question_id: str
    # As the file gives them ("" and 0: left out) until numbered in file order (Repetitions).
    answer_id: str
    repetition: int
    question: bytes  # text_digest of the question's text
    theme: str
    difficulty: str
    # Digests of the reference answer and of the gold evidence, b"" when not given.
    reference: bytes
    gold: bytes
    gold_texts: int
    gold_chunks: int
    # (chunk id, text hash, field, title, page) of each source.
    sources: tuple[tuple[str, str, str, str, int | None], ...]
    # (criterion, level, has a human label, has a judge label, field) of each label, in order.
    labels: tuple[tuple[str, str, bool, bool, str], ...]


def noted(record: AnswerRecord, *, fingerprint: int) -> Noted:
    """What pass 1 keeps of ``record``, whose fingerprint is given."""
    gold, gold_texts, gold_chunks = b"", 0, 0
    if record.gold_evidence is not None:
        gold = text_digest(json.dumps([item.as_json() for item in record.gold_evidence]))
        gold_texts = sum(item.text is not None for item in record.gold_evidence)
        gold_chunks = sum(item.chunk_id is not None for item in record.gold_evidence)
    labels = [
        (label.criterion, ANSWER_LEVEL, label.human is not None, label.llm is not None, label.field)
        for label in record.labels
    ]
    for sentence in record.sentences or ():
        labels.extend(
            (label.criterion, SENTENCE_LEVEL, label.human is not None, label.llm is not None, label.field)
            for label in sentence.labels
        )
    return Noted(
        row=record.row,
        fingerprint=fingerprint,
        question_id=record.question_id,
        answer_id=record.answer_id or "",
        repetition=record.repetition,
        question=text_digest(record.question),
        theme=record.theme,
        difficulty=record.difficulty,
        reference=b"" if record.reference_answer is None else text_digest(record.reference_answer),
        gold=gold,
        gold_texts=gold_texts,
        gold_chunks=gold_chunks,
        sources=tuple((s.id, s.text_hash, s.field, s.title, s.page) for s in record.sources),
        labels=tuple(labels),
    )


def in_parts(*, format: str, name: str, path: Path) -> bool:
    """Whether pass 1 reads the file in parts, in worker processes: a big JSONL file in our
    format, on a machine with CPUs to spare."""
    return (
        format == ATTEST
        and file_format(name) == ".jsonl"
        and path.stat().st_size >= PARTS_MIN_BYTES
        and spare_workers() > 0
    )


@dataclass(frozen=True)
class _Part:
    """A range of whole lines of a JSONL file, and how to read its records."""

    path: Path
    name: str
    start: int
    end: int
    # The row of the file's header record if this part holds it (0: none), read already.
    header_row: int
    names: FieldNames
    mapping: ImportMapping
    categories: CategoryKeys


@dataclass
class _PartNoted:
    """A part's records noted, their rows counted from the part's first line."""

    lines: int
    rows: int
    # None: the part has a problem, named when the file is read again in the importing process.
    notes: list[Noted] | None
    unused: set[str]


def _note_part(part: _Part) -> _PartNoted:
    """A worker process's share of pass 1: a part's records read, checked and noted."""
    errors = ErrorLog(file=part.name)
    unused: set[str] = set()
    notes: list[Noted] = []
    rows = 0
    try:
        with part.path.open("rb") as stream:
            stream.seek(part.start)
            lines = stream.read(part.end - part.start).count(b"\n")
        for raw in read_jsonl_part(
            path=part.path, name=part.name, errors=errors, start=part.start, end=part.end
        ):
            if raw.row == part.header_row:
                continue
            rows += 1
            outcome = record_of(
                raw=raw,
                names=part.names,
                errors=errors,
                mapping=part.mapping,
                unused=unused,
                categories=part.categories,
            )
            if outcome is not None:
                assert raw.digest is not None  # a JSONL line's
                notes.append(noted(outcome[0], fingerprint=raw.digest))
    except Exception:  # a line not UTF-8, or whatever else: the importing process says what
        return _PartNoted(lines=0, rows=rows, notes=None, unused=unused)
    return _PartNoted(lines=lines, rows=rows, notes=None if errors else notes, unused=unused)


def note_in_parts(
    *,
    path: Path,
    name: str,
    names: FieldNames,
    mapping: ImportMapping,
    categories: CategoryKeys,
    header_row: int,
    note: Callable[[Noted], None],
    unused: set[str],
) -> int | None:
    """Pass 1 of the file at ``path`` read in parts of about PART_BYTES by worker processes,
    each record given to ``note`` here in file order, numbered as ``validated_records`` numbers
    them; the fields the file has that are not ours added to ``unused``. The number of records
    read, or None when a part has a problem or the workers cannot run."""
    workers = spare_workers()
    pool = process_pool(workers)
    if pool is None:
        return None
    parts = (
        _Part(
            path=path,
            name=name,
            start=start,
            end=end,
            header_row=header_row if start == 0 else 0,
            names=names,
            mapping=mapping,
            categories=categories,
        )
        for start, end in line_parts(path=path, size=PART_BYTES)
    )
    numbers = Repetitions()
    count = offset = 0
    try:
        for part in in_order(pool, _note_part, parts, ahead=AHEAD_PER_WORKER * workers):
            if part.notes is None:
                return None
            unused |= part.unused
            count += part.rows
            for record in part.notes:
                record.row += offset
                record.repetition, record.answer_id = numbers.number(
                    question_id=record.question_id,
                    repetition=record.repetition or None,
                    answer_id=record.answer_id,
                )
                note(record)
            offset += part.lines
    except BrokenProcessPool:
        return None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return count
