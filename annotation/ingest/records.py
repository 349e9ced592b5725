"""Validating raw rows into typed answer records, with every check that needs no database."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from django.conf import settings

from annotation.ingest.errors import ErrorLog
from annotation.ingest.mapping import ImportMapping, check_mapping
from annotation.ingest.readers import TOO_DEEP, RawRow, read_rows
from annotation.text import chunk_text_hash, parse_source_blob

RECORD_FIELDS = (
    "question_id",
    "question",
    "theme",
    "difficulty",
    "answer_id",
    "repetition",
    "answer",
    "sources",
    "labels",
    "sentences",
)
SOURCE_FIELDS = ("id", "title", "page", "text")
SENTENCE_FIELDS = ("text", "labels", "paragraph")
LABEL_SOURCES = ("human", "llm")
LABEL_COLUMN = re.compile(r"^(human|llm):(.+)$")
MAX_WARNINGS = 50
# Column widths of the models; longer values would fail at write time, so they fail here.
MAX_ID = 200
MAX_THEME = 200
MAX_DIFFICULTY = 50
# Lists and objects a record may nest (record > sources > chunk is 3): deeper is refused before
# any code walks it, so that nothing recurses out of the stack on a hostile file.
MAX_DEPTH = 8


# Records are slotted: an import holds one per source of every answer until all are written.
@dataclass(frozen=True, slots=True)
class SourceRecord:
    id: str
    title: str
    page: int | None
    text: str
    field: str
    # chunk_text_hash(text): with the id, what tells the campaign's chunk rows apart.
    text_hash: str


@dataclass(frozen=True, slots=True)
class LabelRecord:
    """The labels one unit carries for one criterion: a human's and a judge's (either may be None)."""

    criterion: str
    human: int | None
    llm: int | None
    field: str


@dataclass(frozen=True, slots=True)
class SentenceRecord:
    text: str
    paragraph: str | None
    labels: tuple[LabelRecord, ...]
    field: str


@dataclass(frozen=True, slots=True)
class AnswerRecord:
    row: int
    question_id: str
    question: str
    theme: str
    difficulty: str
    answer_id: str
    repetition: int
    answer: str
    sources: tuple[SourceRecord, ...]
    labels: tuple[LabelRecord, ...]
    # None: the answer is split into sentences on import.
    sentences: tuple[SentenceRecord, ...] | None


@dataclass
class ParsedFile:
    """A whole file, valid as far as can be told without the database."""

    name: str
    records: list[AnswerRecord]
    warnings: list[str] = field(default_factory=list)
    # Our field name -> the name the file uses, when a mapping renamed it (for messages).
    renamed: dict[str, str] = field(default_factory=dict)
    # Chunk id -> {text hash: first row giving that text}, over the whole file.
    chunk_texts: dict[str, dict[str, int]] = field(default_factory=dict)

    def field_name(self, path: str) -> str:
        """``path`` ("sources[2].page") spelled with the file's own top-level name."""
        head = re.split(r"[.\[]", path, maxsplit=1)[0]
        original = self.renamed.get(head)
        return path if original is None else original + path[len(head) :]


class _Warnings:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.more = 0

    def add(self, line: str) -> None:
        if len(self.lines) < MAX_WARNINGS:
            self.lines.append(line)
        else:
            self.more += 1

    def as_list(self) -> list[str]:
        return self.lines + ([f"... and {self.more} more warnings"] if self.more else [])


class _Row:
    """Validation of one raw row; problems go to the shared error log with this row's number."""

    def __init__(self, *, raw: RawRow, parsed: ParsedFile, errors: ErrorLog, texts: dict[str, str]) -> None:
        self.number = raw.row
        self.parsed = parsed
        self.errors = errors
        # Chunk texts already read, by hash: a text repeated in many answers is held once.
        self.texts = texts
        self.ok = True

    def error(self, path: str, message: str) -> None:
        self.ok = False
        self.errors.add(row=self.number, field=self.parsed.field_name(path), message=message)

    def text(
        self, value: object, path: str, *, required: bool, max_length: int | None = None, numbers: bool = True
    ) -> str:
        """Trimmed text; ``numbers`` accepts a number for it (ids and codes, as spreadsheets store them)."""
        if type(value) is str:  # the usual case, checked first: imports call this for every field
            result = value.strip()
            if result and (max_length is None or len(result) <= max_length):
                return result
        if value is None:
            if required:
                self.error(path, "missing")
            return ""
        allowed = str | int | float if numbers else str
        if isinstance(value, bool) or not isinstance(value, allowed):
            self.error(path, f"must be text, not {type(value).__name__}")
            return ""
        if isinstance(value, float):
            value = str(int(value)) if value.is_integer() else str(value)
        result = str(value).strip()
        if required and not result:
            self.error(path, "must not be empty")
        elif max_length is not None and len(result) > max_length:
            self.error(path, f"longer than {max_length} characters")
        return result

    def integer(self, value: object, path: str, *, minimum: int | None = None) -> int | None:
        if type(value) is int and (minimum is None or value >= minimum):  # the usual case
            return value
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif (isinstance(value, float) and value.is_integer()) or (
            isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value)
        ):
            number = int(value)
        if number is None:
            self.error(path, f"must be a whole number, not {value!r}")
            return None
        if minimum is not None and number < minimum:
            self.error(path, f"must be at least {minimum}")
            return None
        return number

    def label_value(self, value: object, path: str) -> int | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, bool):
            self.error(path, f"must be 0, 1 or empty, not {value!r}")
            return None
        if isinstance(value, int | float) and value in (0, 1):
            return int(value)
        if isinstance(value, str) and value.strip() in ("0", "1"):
            return int(value.strip())
        self.error(path, f"must be 0, 1 or empty, not {value!r}")
        return None

    def json_text(self, value: str, path: str) -> tuple[bool, object]:
        """(True, the decoded JSON ``value``), or (False, None) with the problem logged at ``path``."""
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError as exc:
            self.error(path, f"invalid JSON at column {exc.colno}: {exc.msg}")
            return False, None
        except RecursionError:
            self.error(path, TOO_DEEP)
            return False, None
        if _too_deep(decoded):
            self.error(path, TOO_DEEP)
            return False, None
        return True, decoded

    def mapped(
        self, value: object, path: str, *, values: dict[str, str], required: bool, max_length: int
    ) -> str:
        """Trimmed text as ``text`` gives it, translated by ``values`` ("" for an empty value)."""
        result = self.text(value, path, required=required and "" not in values, max_length=max_length)
        translated = values.get(result, result)
        if translated is not result and len(translated) > max_length:
            self.error(path, f"{result!r} is mapped to a value longer than {max_length} characters")
        return translated

    def labels(self, value: object, path: str) -> dict[str, LabelRecord]:
        """``{"criterion": {"human": 0|1|null, "llm": 0|1|null}}`` (or its JSON text) as label records."""
        if value is None:
            return {}
        if isinstance(value, str):
            ok, value = self.json_text(value, path)
            if not ok:
                return {}
        if not isinstance(value, dict):
            self.error(path, 'must be an object such as {"relevance": {"human": 1, "llm": 0}}')
            return {}
        result = {}
        for criterion, pair in value.items():
            where = f"{path}.{criterion}"
            if not isinstance(criterion, str) or not criterion.strip():
                self.error(path, "criterion names must be non-empty text")
                continue
            if not isinstance(pair, dict):
                self.error(where, 'must be an object such as {"human": 1, "llm": 0}')
                continue
            unknown = sorted(set(pair) - set(LABEL_SOURCES))
            if unknown:
                self.error(f"{where}.{unknown[0]}", "unknown label source; use human or llm")
                continue
            result[criterion.strip()] = LabelRecord(
                criterion=criterion.strip(),
                human=self.label_value(pair.get("human"), f"{where}.human"),
                llm=self.label_value(pair.get("llm"), f"{where}.llm"),
                field=where,
            )
        return result

    def sources(self, value: object, mapping: dict[str, str]) -> tuple[SourceRecord, ...]:
        if value is None:
            self.error("sources", "missing (give [] for an answer without sources)")
            return ()
        if isinstance(value, str):
            value = self._source_list_from_text(value)
            if value is None:
                return ()
        if not isinstance(value, list):
            self.error("sources", "must be a list of {id, title, page, text} or the text of the sources")
            return ()
        result: list[SourceRecord] = []
        first_rank: dict[str, int] = {}
        for rank, item in enumerate(value, start=1):
            where = f"sources[{rank}]"
            if type(item) is dict and not mapping:
                # The usual well-formed source, accepted without the field-by-field checks below.
                chunk_id, title, page, text = (
                    item.get("id"),
                    item.get("title"),
                    item.get("page"),
                    item.get("text"),
                )
                if (
                    type(chunk_id) is str
                    and type(text) is str
                    and (title is None or type(title) is str)
                    and (page is None or type(page) is int)
                ):
                    chunk_id = chunk_id.strip()
                    if chunk_id and len(chunk_id) <= MAX_ID and chunk_id not in first_rank:
                        first_rank[chunk_id] = rank
                        # Ids, titles and digests repeat across answers: interned, each is held once.
                        digest = sys.intern(chunk_text_hash(text))
                        result.append(
                            SourceRecord(
                                id=sys.intern(chunk_id),
                                title=sys.intern((title or "").strip()),
                                page=page,
                                text=self.texts.setdefault(digest, text),
                                field=sys.intern(where),
                                text_hash=digest,
                            )
                        )
                        continue
            if not isinstance(item, dict):
                self.error(where, "must be an object with id, title, page, text")
                continue
            if mapping:
                item = {mapping.get(key, key): val for key, val in item.items()}
            chunk_id = self.text(item.get("id"), f"{where}.id", required=True, max_length=MAX_ID)
            if "text" not in item:
                self.error(f"{where}.text", "missing")
            elif not isinstance(item["text"], str):
                self.error(f"{where}.text", f"must be text, not {type(item['text']).__name__}")
            if not chunk_id:
                continue
            if chunk_id in first_rank:
                self.error(f"{where}.id", f"{chunk_id!r} is already sources[{first_rank[chunk_id]}]")
                continue
            first_rank[chunk_id] = rank
            text = item["text"] if isinstance(item.get("text"), str) else ""
            digest = chunk_text_hash(text)
            result.append(
                SourceRecord(
                    id=chunk_id,
                    title=self.text(item.get("title"), f"{where}.title", required=False),
                    page=self.integer(item.get("page"), f"{where}.page"),
                    text=self.texts.setdefault(digest, text),
                    field=where,
                    text_hash=digest,
                )
            )
        return tuple(result)

    def _source_list_from_text(self, value: str) -> list | None:
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                decoded = json.loads(stripped)
            except json.JSONDecodeError:
                decoded = None
            except RecursionError:
                self.error("sources", TOO_DEEP)
                return None
            if isinstance(decoded, list):
                if _too_deep(decoded):
                    self.error("sources", TOO_DEEP)
                    return None
                return decoded
        try:
            return parse_source_blob(value)
        except ValueError as exc:
            self.error("sources", f"neither a JSON list nor readable source text: {exc}")
            return None

    def sentences(self, value: object, mapping: dict[str, str]) -> tuple[SentenceRecord, ...] | None:
        if value is None:
            return None
        if isinstance(value, str):
            ok, value = self.json_text(value, "sentences")
            if not ok:
                return None
        if not isinstance(value, list):
            self.error("sentences", "must be a list of {text, labels}")
            return None
        if not value:
            self.error("sentences", "must list at least one sentence (leave it out to split the answer)")
            return None
        result = []
        for position, item in enumerate(value, start=1):
            where = f"sentences[{position}]"
            if isinstance(item, str):
                item = {"text": item}
            if not isinstance(item, dict):
                self.error(where, "must be an object with text and labels")
                continue
            if mapping:
                item = {mapping.get(key, key): val for key, val in item.items()}
            text = self.text(item.get("text"), f"{where}.text", required=True)
            paragraph = item.get("paragraph")
            if paragraph is not None and not isinstance(paragraph, str):
                self.error(f"{where}.paragraph", "must be text")
                paragraph = None
            labels = self.labels(item.get("labels"), f"{where}.labels")
            result.append(
                SentenceRecord(text=text, paragraph=paragraph, labels=tuple(labels.values()), field=where)
            )
        return tuple(result)


def _too_deep(value: object) -> bool:
    """Whether ``value`` nests lists and objects more than MAX_DEPTH levels (without recursing)."""
    level = [value]
    for _ in range(MAX_DEPTH):
        level = [
            item
            for container in level
            if isinstance(container, list | dict)
            for item in (container.values() if isinstance(container, dict) else container)
        ]
        if not level:
            return False
    return any(isinstance(item, list | dict) for item in level)


def _rename(*, raw: RawRow, mapping: dict[str, str], row: _Row) -> dict[str, object]:
    data: dict[str, object] = {}
    for key, value in raw.data.items():
        target = mapping.get(key, key)
        if target in data:
            row.error(target, f"given twice (columns {key!r} and another one both mean {target!r})")
            continue
        data[target] = value
    return data


def _record(
    *,
    raw: RawRow,
    parsed: ParsedFile,
    errors: ErrorLog,
    mapping: ImportMapping,
    unused: set[str],
    texts: dict[str, str],
) -> tuple[AnswerRecord, int | None] | None:
    """The record of one row and its explicit repetition (None: from the order), or None if bad."""
    row = _Row(raw=raw, parsed=parsed, errors=errors, texts=texts)
    data = _rename(raw=raw, mapping=mapping.columns, row=row)
    for key, value in data.items():
        if isinstance(value, list | dict) and _too_deep(value):
            row.error(key, TOO_DEEP)
    if not row.ok:
        return None
    columns = mapping.columns
    labels = row.labels(data.get("labels"), "labels")
    for key, value in data.items():
        match = LABEL_COLUMN.match(key)
        if match:
            source, criterion = match.group(1), match.group(2).strip()
            label = labels.get(criterion) or LabelRecord(criterion=criterion, human=None, llm=None, field=key)
            if getattr(label, source) is not None:
                row.error(key, f"the {source} label of {criterion!r} is given twice")
                continue
            labels[criterion] = replace(label, **{source: row.label_value(value, key)})
        elif key not in RECORD_FIELDS:
            unused.add(key)
    question_id = row.text(data.get("question_id"), "question_id", required=True, max_length=MAX_ID)
    record_fields = {
        "question_id": question_id,
        "question": row.text(data.get("question"), "question", required=True, numbers=False),
        "theme": row.mapped(
            data.get("theme"),
            "theme",
            values=mapping.values.get("theme", {}),
            required=True,
            max_length=MAX_THEME,
        ),
        "difficulty": row.mapped(
            data.get("difficulty"),
            "difficulty",
            values=mapping.values.get("difficulty", {}),
            required=False,
            max_length=MAX_DIFFICULTY,
        ),
        "answer_id": row.text(data.get("answer_id"), "answer_id", required=False, max_length=MAX_ID),
        "answer": row.text(data.get("answer"), "answer", required=True, numbers=False),
        "sources": row.sources(data.get("sources"), columns),
        "labels": tuple(labels.values()),
        "sentences": row.sentences(data.get("sentences"), columns),
    }
    repetition = row.integer(data.get("repetition"), "repetition", minimum=1)
    if not row.ok:
        return None
    return AnswerRecord(row=raw.row, repetition=repetition or 0, **record_fields), repetition


def _check_across_rows(*, parsed: ParsedFile, errors: ErrorLog, warnings: _Warnings) -> None:
    """Answer ids unique; one text, theme and difficulty per question. Chunks: an id may come
    with several texts (each answer keeps its own); one text of an id should keep its title
    and page (a warning otherwise). Fills ``parsed.chunk_texts``."""
    answers: dict[str, int] = {}
    questions: dict[str, AnswerRecord] = {}
    chunks: dict[tuple[str, str], tuple[int, SourceRecord]] = {}
    for record in parsed.records:
        if record.answer_id in answers:
            errors.add(
                row=record.row,
                field=parsed.field_name("answer_id"),
                message=(
                    f"{record.answer_id!r} is already the id of the answer at row {answers[record.answer_id]}"
                ),
            )
        else:
            answers[record.answer_id] = record.row
        first = questions.setdefault(record.question_id, record)
        for attribute in ("question", "theme", "difficulty"):
            if getattr(first, attribute) != getattr(record, attribute):
                errors.add(
                    row=record.row,
                    field=parsed.field_name(attribute),
                    message=(
                        f"question {record.question_id!r} has {getattr(record, attribute)!r} here but "
                        f"{getattr(first, attribute)!r} at row {first.row}"
                    ),
                )
        for source in record.sources:
            key = (source.id, source.text_hash)
            seen = chunks.get(key)
            if seen is None:
                chunks[key] = (record.row, source)
                parsed.chunk_texts.setdefault(source.id, {})[source.text_hash] = record.row
                continue
            first_row, first_source = seen
            if (first_source.title, first_source.page) != (source.title, source.page):
                warnings.add(
                    f"{parsed.name}:{record.row}: {parsed.field_name(source.field)}: chunk {source.id!r} "
                    f"has another title or page than with the same text at row {first_row}; the first is kept"
                )


def parse_rows(
    *,
    rows: Iterable[RawRow],
    name: str,
    mapping: ImportMapping | dict[str, str] | None = None,
    errors: ErrorLog | None = None,
) -> ParsedFile:
    """Validate raw rows into answer records; raise ImportFailed listing every problem found.

    Rows are consumed one at a time and only their compact records are kept. Problems already
    in ``errors`` (from reading the file) are reported along with these. ``mapping`` renames
    columns and translates values (see annotation.ingest.mapping; a dict renames columns).

    A missing ``repetition`` is the record's rank among the file's answers to the same
    question (1, 2, ...); a missing ``answer_id`` is ``f"{question_id}-{repetition}"``.
    """
    mapping = check_mapping(mapping=mapping or {}, name="mapping")
    errors = errors if errors is not None else ErrorLog(file=name)
    warnings = _Warnings()
    parsed = ParsedFile(
        name=name, records=[], renamed={target: key for key, target in mapping.columns.items()}
    )
    unused: set[str] = set()
    texts: dict[str, str] = {}
    seen_per_question: dict[str, int] = {}
    any_row = False
    for raw in rows:
        any_row = True
        outcome = _record(raw=raw, parsed=parsed, errors=errors, mapping=mapping, unused=unused, texts=texts)
        if outcome is None:
            continue
        record, repetition = outcome
        order = seen_per_question[record.question_id] = seen_per_question.get(record.question_id, 0) + 1
        repetition = repetition or order
        answer_id = record.answer_id or f"{record.question_id}-{repetition}"
        parsed.records.append(replace(record, repetition=repetition, answer_id=answer_id))
    if not any_row and not errors:
        errors.add(row=None, field="file", message="no records found")
    _check_across_rows(parsed=parsed, errors=errors, warnings=warnings)
    errors.raise_if_any()
    for key in sorted(unused):
        warnings.add(f"{name}: {key}: not a known field; ignored")
    parsed.warnings = warnings.as_list()
    return parsed


def parse_file(
    *,
    path: Path | str,
    name: str | None = None,
    mapping: ImportMapping | dict[str, str] | None = None,
    max_bytes: int | None = None,
) -> ParsedFile:
    """Read and validate the file at ``path`` (called ``name`` in messages; default: the path).

    Raises ImportFailed with up to MAX_ERRORS row errors when anything is wrong; touches no
    database. ``max_bytes`` defaults to settings.IMPORT_MAX_BYTES.
    """
    name = name or str(path)
    errors = ErrorLog(file=name)
    rows = read_rows(
        path=Path(path),
        name=name,
        errors=errors,
        max_bytes=settings.IMPORT_MAX_BYTES if max_bytes is None else max_bytes,
    )
    return parse_rows(rows=rows, name=name, mapping=mapping, errors=errors)
