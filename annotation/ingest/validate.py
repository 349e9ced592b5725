"""Pass 1 of an import: the whole file checked as it streams, keeping only compact bookkeeping.

An import reads its file twice. ``check_file`` validates every row and every rule across rows
(answer ids unique, one text, theme and difficulty per question, titles of shared chunks) while
keeping no text: per answer its id, row and a fingerprint of its record; per question and per
chunk a digest and the first row. The database checks and the loader work from that
bookkeeping, and the loader re-reads the file with ``CheckedFile.records`` (pass 2), which
refuses any row that is not the very record pass 1 checked. Peak memory thus follows the
number of answers and chunks, not the size of their texts.

Its length is the rules across rows, which share one streaming pass and its bookkeeping.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from django.conf import settings
from django.utils.functional import Promise
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from annotation.ingest.errors import MAX_ERRORS, ErrorLog, ImportFailed, RowError
from annotation.ingest.formats import ATTEST, AUTO, Declarations, open_file
from annotation.ingest.mapping import ImportMapping, check_mapping
from annotation.ingest.noting import Noted, in_parts, note_in_parts, noted
from annotation.ingest.readers import RawRow
from annotation.ingest.records import AnswerRecord, CategoryKeys, FieldNames, Warnings, validated_records

# Characters of a text an error message quotes: enough to recognise it, never a page of it.
QUOTED = 120


@dataclass(slots=True)
class QuestionSeen:
    """A question's first row in the file and what every other row must repeat."""

    row: int
    text: bytes  # text_digest of the question's text
    theme: str
    difficulty: str
    # Its answers in the file (a preview counts answers per theme and difficulty).
    answers: int = 1
    # The first row giving its reference answer and its gold evidence, with a digest of each
    # (0 and b"": not given); every other row giving one must give the same.
    reference_row: int = 0
    reference: bytes = b""
    gold_row: int = 0
    gold: bytes = b""
    # Of its gold evidence: the items with a passage text, and those with a chunk id.
    gold_texts: int = 0
    gold_chunks: int = 0


@dataclass(slots=True)
class ChunkSeen:
    """The first source giving a chunk id with one text: its row, field and title and page."""

    row: int
    field: str
    # hash((title, page)): only compared, in this process, to warn about another title or page.
    title_page: int


@dataclass(slots=True)
class LabelUses:
    """Where labels of one criterion at one level appear: the first MAX_ERRORS places, as
    (order, row, field), and how many there are in all."""

    count: int = 0
    first: list[tuple[int, int, str]] = field(default_factory=list)
    # Of the ``count`` units, how many carry a human label and how many a judge label.
    human: int = 0
    llm: int = 0


@dataclass(frozen=True)
class _Conflict:
    """Two rows that disagree; turned into an error once every row has been read."""

    row: int
    field: str
    question_id: str = ""
    here: str = ""
    first_row: int = 0
    answer_id: str = ""


@dataclass
class CheckedFile:
    """A file valid as far as can be told without the database, and what pass 2 needs to
    read it again. Holds no text of the file but question ids, answer ids and chunk ids."""

    path: Path
    name: str
    mapping: ImportMapping
    max_bytes: int
    names: FieldNames
    # What pass 1 notes (``_FirstPass``), empty until it does.
    warnings: list[str] = field(default_factory=list)
    # Answer id -> its row, in file order.
    answers: dict[str, int] = field(default_factory=dict)
    questions: dict[str, QuestionSeen] = field(default_factory=dict)
    # (chunk id, text hash) -> its first source, in file order.
    chunks: dict[tuple[str, str], ChunkSeen] = field(default_factory=dict)
    # (criterion, level) -> where its labels are.
    labels: dict[tuple[str, str], LabelUses] = field(default_factory=dict)
    # Row and fingerprint of every record, in file order (see ``_Read.fingerprint``).
    rows: array = field(default_factory=lambda: array("q"))
    fingerprints: array = field(default_factory=lambda: array("q"))
    # Keys of the criteria with named categories, read before pass 1 (records.CategoryKeys).
    categories: CategoryKeys = field(default_factory=dict)
    # The format the file is read in (annotation.ingest.formats) and what it declares.
    format: str = ATTEST
    declarations: Declarations = field(default_factory=Declarations)

    @property
    def count(self) -> int:
        """The number of answers in the file."""
        return len(self.rows)

    def field_name(self, path: str) -> str:
        return self.names(path)

    def read_again(self, errors: ErrorLog) -> Iterator[RawRow]:
        """The file's records read again, in its format, from the start."""
        return open_file(
            path=self.path, name=self.name, format=self.format, errors=errors, max_bytes=self.max_bytes
        ).rows

    def records(self) -> Iterator[AnswerRecord]:
        """Pass 2: the file's records read again, each one checked against pass 1.

        Raises ImportFailed naming the row when the file no longer gives the records pass 1
        checked (it changed in between): a row now invalid, different, missing or extra.
        """
        errors = ErrorLog(file=self.name)
        rows = _Read(self.read_again(errors))
        stream = validated_records(
            rows=rows,
            names=self.names,
            mapping=self.mapping,
            errors=errors,
            unused=set(),
            categories=self.categories,
        )
        index = 0
        for record in stream:
            errors.raise_if_any()
            if index >= len(self.rows):
                raise _changed(
                    name=self.name,
                    row=record.row,
                    message=_(
                        "the file changed while it was imported: it is a record it did not hold; "
                        "nothing was imported, import it again"
                    ),
                )
            if record.row != self.rows[index]:
                raise _changed(
                    name=self.name,
                    row=min(record.row, self.rows[index]),
                    message=_(
                        "the file changed while it was imported: it has other rows; "
                        "nothing was imported, import it again"
                    ),
                )
            if rows.fingerprint(record) != self.fingerprints[index]:
                raise _changed(
                    name=self.name,
                    row=record.row,
                    message=_(
                        "the file changed while it was imported: it holds another record on this row; "
                        "nothing was imported, import it again"
                    ),
                )
            index += 1
            yield record
        errors.raise_if_any()
        if index < len(self.rows):
            raise _changed(
                name=self.name,
                row=self.rows[index],
                message=_(
                    "the file changed while it was imported: it no longer holds this row; "
                    "nothing was imported, import it again"
                ),
            )

    def question_texts(self, *, rows: set[int]) -> dict[int, str]:
        """The question text of the records at ``rows``, read from the file again: only for the
        messages of a refused import, so that pass 1 keeps no text."""
        if not rows:
            return {}
        errors = ErrorLog(file=self.name)
        records = validated_records(
            rows=self.read_again(errors),
            names=self.names,
            mapping=self.mapping,
            errors=errors,
            unused=set(),
            categories=self.categories,
        )
        return {record.row: record.question for record in records if record.row in rows}


def _changed(*, name: str, row: int, message: str | Promise) -> ImportFailed:
    return ImportFailed([RowError(file=name, row=row, field="file", message=message)])


class _Read:
    """Raw rows passed through, counted (a file with none is refused), the last one's row and
    digest kept for its record's fingerprint: ``validated_records`` gives each record before it
    reads the next row."""

    def __init__(self, rows: Iterator[RawRow]) -> None:
        self.rows = rows
        self.count = 0
        self._row = 0
        self._digest: int | None = None

    def __iter__(self) -> Iterator[RawRow]:
        for raw in self.rows:
            self.count += 1
            self._row, self._digest = raw.row, raw.digest
            yield raw

    def fingerprint(self, record: AnswerRecord) -> int:
        """What tells pass 2 its record is the one pass 1 checked: the digest of its line where
        the reader has one (a JSONL line, the same in every process, so that pass 1 may read
        the file in worker processes), else Python's hash of the whole record (every field,
        every source and label; both passes then run in this process). 64 bits make a changed
        record with the same fingerprint vanishingly unlikely."""
        assert record.row == self._row, "a record comes before the next row is read"
        return hash(record) if self._digest is None else self._digest


def check_file(
    *,
    path: Path | str,
    name: str | None = None,
    mapping: ImportMapping | dict[str, str] | None = None,
    max_bytes: int | None = None,
    categories: CategoryKeys | None = None,
    format: str = AUTO,
) -> CheckedFile:
    """Pass 1: read and validate the file at ``path`` (``name`` in messages; default the path).

    ``categories``: the category keys of the campaign's criteria with named categories
    (``annotation.criteria.editing.campaign_category_keys``): their labels are keys, and a key the
    criterion does not have is an error naming the row and field.

    ``format``: one of ``annotation.ingest.formats.FORMAT_NAMES``, or AUTO to detect it from
    the file's shape. A format's declared criteria with categories are read with the keys they
    declare where the campaign (``categories``) has no criterion of that name.

    Raises ImportFailed with up to MAX_ERRORS errors (file, row, field) when anything is wrong:
    row errors first, then the rules across rows, as one list sorted by row. Touches no
    database and keeps no text. ``max_bytes`` defaults to settings.IMPORT_MAX_BYTES. A big JSONL
    file in our format is read in parts by worker processes (``annotation.ingest.noting``), with
    the same outcome.
    """
    name = name or str(path)
    mapping = check_mapping(mapping=mapping or {}, name="mapping")
    checked = CheckedFile(
        path=Path(path),
        name=name,
        mapping=mapping,
        max_bytes=settings.IMPORT_MAX_BYTES if max_bytes is None else max_bytes,
        names=FieldNames(renamed={target: key for key, target in mapping.columns.items()}),
        categories=dict(categories or {}),
    )
    errors = ErrorLog(file=name)
    unused: set[str] = set()
    opened = open_file(
        path=checked.path, name=name, format=format, errors=errors, max_bytes=checked.max_bytes
    )
    checked.format, checked.declarations = opened.format, opened.declarations
    checked.categories = {**opened.declarations.category_keys(), **checked.categories}
    first_pass = _FirstPass(checked=checked)
    count = None
    if not errors and in_parts(format=checked.format, name=checked.name, path=checked.path):
        count = note_in_parts(
            path=checked.path,
            name=checked.name,
            names=checked.names,
            mapping=checked.mapping,
            categories=checked.categories,
            header_row=opened.header_row,
            note=first_pass.note,
            unused=unused,
        )
        if count is None:
            # A part had a problem: the file is read again here, whose messages name its rows.
            checked = replace(
                checked,
                answers={},
                questions={},
                chunks={},
                labels={},
                rows=array("q"),
                fingerprints=array("q"),
            )
            first_pass, unused = _FirstPass(checked=checked), set()
            opened = open_file(
                path=checked.path, name=name, format=format, errors=errors, max_bytes=checked.max_bytes
            )
    if count is None:
        raw_rows = _Read(opened.rows)
        for record in validated_records(
            rows=raw_rows,
            names=checked.names,
            mapping=mapping,
            errors=errors,
            unused=unused,
            categories=checked.categories,
        ):
            first_pass.note(noted(record, fingerprint=raw_rows.fingerprint(record)))
        count = raw_rows.count
    if not count and not errors:
        errors.add(row=None, field="file", message=_("no records found"))
    # Rules across rows are logged after every row error, as when they ran over kept records,
    # so that the same MAX_ERRORS are listed.
    _log_conflicts(checked=checked, conflicts=first_pass.conflicts, errors=errors)
    errors.more += first_pass.more_conflicts
    errors.raise_if_any()
    for key in sorted(unused):
        first_pass.warnings.add(f"{name}: {key}: not a known field; ignored")
    for warning in opened.warnings:
        first_pass.warnings.add(warning)
    checked.warnings = first_pass.warnings.as_list()
    return checked


class _FirstPass:
    """The bookkeeping of pass 1, noted record by record into ``checked``."""

    def __init__(self, *, checked: CheckedFile) -> None:
        self.checked = checked
        self.warnings = Warnings()
        # The first MAX_ERRORS disagreements between rows (all that can be listed), the rest counted.
        self.conflicts: list[_Conflict] = []
        self.more_conflicts = 0
        self.label_order = 0

    def note(self, record: Noted) -> None:
        checked = self.checked
        checked.rows.append(record.row)
        checked.fingerprints.append(record.fingerprint)
        first_row = checked.answers.setdefault(record.answer_id, record.row)
        if first_row != record.row:
            self._conflict(
                _Conflict(row=record.row, field="answer_id", answer_id=record.answer_id, first_row=first_row)
            )
        self._question(record)
        self._chunks(record)
        self._labels(record)

    def _conflict(self, conflict: _Conflict) -> None:
        if len(self.conflicts) < MAX_ERRORS:
            self.conflicts.append(conflict)
        else:
            self.more_conflicts += 1

    def _question(self, record: Noted) -> None:
        first = self.checked.questions.get(record.question_id)
        if first is None:
            first = self.checked.questions[record.question_id] = QuestionSeen(
                row=record.row, text=record.question, theme=record.theme, difficulty=record.difficulty
            )
            self._extras(record, first)
            return
        first.answers += 1
        self._extras(record, first)
        for attribute, differs, here in (
            # The question's text, kept by no pass, is read again for the message.
            ("question", record.question != first.text, ""),
            ("theme", record.theme != first.theme, record.theme),
            ("difficulty", record.difficulty != first.difficulty, record.difficulty),
        ):
            if differs:
                self._conflict(
                    _Conflict(
                        row=record.row,
                        field=attribute,
                        question_id=record.question_id,
                        here=here,
                        first_row=first.row,
                    )
                )

    def _extras(self, record: Noted, first: QuestionSeen) -> None:
        """Note the row's reference answer and gold evidence of the question, if it gives them."""
        if record.reference:
            if not first.reference_row:
                first.reference_row, first.reference = record.row, record.reference
            elif record.reference != first.reference:
                self._conflict(
                    _Conflict(
                        row=record.row,
                        field="reference_answer",
                        question_id=record.question_id,
                        first_row=first.reference_row,
                    )
                )
        if record.gold:
            if not first.gold_row:
                first.gold_row, first.gold = record.row, record.gold
                first.gold_texts, first.gold_chunks = record.gold_texts, record.gold_chunks
            elif record.gold != first.gold:
                self._conflict(
                    _Conflict(
                        row=record.row,
                        field="gold_evidence",
                        question_id=record.question_id,
                        first_row=first.gold_row,
                    )
                )

    def _chunks(self, record: Noted) -> None:
        chunks, names = self.checked.chunks, self.checked.names
        for chunk_id, text_hash, where, title, page in record.sources:
            key = (chunk_id, text_hash)
            title_page = hash((title, page))
            seen = chunks.get(key)
            if seen is None:
                # Kept for every chunk: noted in a worker process, its strings come here unshared.
                key = (sys.intern(chunk_id), sys.intern(text_hash))
                chunks[key] = ChunkSeen(row=record.row, field=sys.intern(where), title_page=title_page)
            elif seen.title_page != title_page:
                self.warnings.add(
                    f"{self.checked.name}:{record.row}: {names(where)}: chunk {chunk_id!r} "
                    f"has another title or page than with the same text at row {seen.row}; the first is kept"
                )

    def _labels(self, record: Noted) -> None:
        for criterion, level, human, llm, where in record.labels:
            uses = self.checked.labels.setdefault((criterion, level), LabelUses())
            uses.count += 1
            uses.human += human
            uses.llm += llm
            if len(uses.first) < MAX_ERRORS:
                uses.first.append((self.label_order, record.row, where))
            self.label_order += 1


def _log_conflicts(*, checked: CheckedFile, conflicts: list[_Conflict], errors: ErrorLog) -> None:
    if not conflicts:
        return
    texts = checked.question_texts(
        rows={row for c in conflicts if c.field == "question" for row in (c.row, c.first_row)}
    )
    for conflict in conflicts:
        if conflict.field == "answer_id":
            message = refusal(
                _("%(answer)s is already the id of the answer at row %(row)s"),
                answer=repr(conflict.answer_id),
                row=conflict.first_row,
            )
        elif conflict.field in ("reference_answer", "gold_evidence"):
            message = refusal(
                _("question %(question)s has another %(field)s here than at row %(row)s"),
                question=repr(conflict.question_id),
                field=conflict.field,
                row=conflict.first_row,
            )
        else:
            first = checked.questions[conflict.question_id]
            value = (
                texts.get(conflict.first_row, "")
                if conflict.field == "question"
                else getattr(first, conflict.field)
            )
            message = refusal(
                _("question %(question)s has %(here)s here but %(value)s at row %(row)s"),
                question=repr(conflict.question_id),
                here=repr(
                    Truncator(
                        texts.get(conflict.row, "") if conflict.field == "question" else conflict.here
                    ).chars(QUOTED)
                ),
                value=repr(Truncator(value).chars(QUOTED)),
                row=conflict.first_row,
            )
        errors.add(row=conflict.row, field=checked.names(conflict.field), message=message)
