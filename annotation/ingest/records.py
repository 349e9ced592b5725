"""Validating one raw row into a typed answer record: every check of a row on its own.

Its length is a list: one check per field of a row (ids, texts, theme, difficulty, sources,
human and judge labels, gold evidence), each naming its field; split, a row's checks would no
longer read together.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation import limits
from annotation.corpus.sources import chunk_text_hash, parse_source_blob
from annotation.errors import refusal
from annotation.ingest.answer_records import (
    AnswerRecord,
    CategoryKeys,
    GoldItem,
    LabelRecord,
    SentenceRecord,
    SourceRecord,
)
from annotation.ingest.errors import INVALID_JSON_AT_COLUMN, MISSING, MUST_BE_TEXT, ErrorLog
from annotation.ingest.mapping import ImportMapping
from annotation.ingest.readers import TOO_DEEP, RawRow

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
    "reference_answer",
    "gold_evidence",
)
SOURCE_FIELDS = ("id", "title", "page", "text")
SENTENCE_FIELDS = ("text", "labels", "paragraph")
GOLD_FIELDS = ("text", "chunk_id")
LABEL_SOURCES = ("human", "llm")
LABEL_COLUMN = re.compile(r"^(human|llm):(.+)$")
MAX_WARNINGS = 50
TOO_LONG = _("longer than %(count)s characters")
# Lists and objects a record may nest (record > sources > chunk is 3): deeper is refused before
# any code walks it, so that nothing recurses out of the stack on a hostile file.
MAX_DEPTH = 8


@dataclass(frozen=True)
class FieldNames:
    """How messages spell our field names: with the file's own name when a mapping renamed it."""

    # Our field name -> the name the file uses.
    renamed: dict[str, str] = field(default_factory=dict)

    def __call__(self, path: str) -> str:
        """``path`` ("sources[2].page") spelled with the file's own top-level name."""
        head = re.split(r"[.\[]", path, maxsplit=1)[0]
        original = self.renamed.get(head)
        return path if original is None else original + path[len(head) :]


class Warnings:
    """Warning lines up to MAX_WARNINGS, then only counted."""

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

    def __init__(
        self, *, raw: RawRow, names: FieldNames, errors: ErrorLog, categories: CategoryKeys | None = None
    ) -> None:
        self.number = raw.row
        self.names = names
        self.errors = errors
        self.ok = True
        self.categories = categories or {}

    def error(self, path: str, message: str | Promise) -> None:
        self.ok = False
        self.errors.add(row=self.number, field=self.names(path), message=message)

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
                self.error(path, MISSING)
            return ""
        allowed = str | int | float if numbers else str
        if isinstance(value, bool) or not isinstance(value, allowed):
            self.error(path, refusal(MUST_BE_TEXT, type=type(value).__name__))
            return ""
        if isinstance(value, float):
            value = str(int(value)) if value.is_integer() else str(value)
        result = str(value).strip()
        if required and not result:
            self.error(path, _("must not be empty"))
        elif max_length is not None and len(result) > max_length:
            self.error(path, refusal(TOO_LONG, count=max_length))
        return result

    def fits(self, value: str, path: str, *, max_length: int) -> bool:
        """Whether a text taken as it is (not trimmed) is at most ``max_length`` characters."""
        if len(value) <= max_length:
            return True
        self.error(path, refusal(TOO_LONG, count=max_length))
        return False

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
            self.error(path, refusal(_("must be a whole number, not %(value)s"), value=repr(value)))
            return None
        if minimum is not None and number < minimum:
            self.error(path, refusal(_("must be at least %(minimum)s"), minimum=minimum))
            return None
        return number

    def label_value(self, value: object, path: str, *, criterion: str = "") -> int | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        keys = self.categories.get(criterion)
        if keys is not None:
            return self.category_key(value, path, criterion=criterion, keys=keys)
        if isinstance(value, bool):
            self.error(path, refusal(_("must be 0, 1 or empty, not %(value)s"), value=repr(value)))
            return None
        if isinstance(value, int | float) and value in (0, 1):
            return int(value)
        if isinstance(value, str) and value.strip() in ("0", "1"):
            return int(value.strip())
        self.error(path, refusal(_("must be 0, 1 or empty, not %(value)s"), value=repr(value)))
        return None

    def category_key(self, value: object, path: str, *, criterion: str, keys: dict[str, int]) -> int | None:
        """The value of the category whose key ``value`` is (a text, or a whole number for a
        digit key); keys compare without case, as the annotation pages read them."""
        text = ""
        if isinstance(value, str):
            text = value.strip().lower()
        elif isinstance(value, int) and not isinstance(value, bool):
            text = str(value)
        elif isinstance(value, float) and value.is_integer():
            text = str(int(value))
        if text in keys:
            return keys[text]
        self.error(
            path,
            refusal(
                _("%(value)s is not a category key of %(criterion)s (keys: %(keys)s)"),
                value=repr(value),
                criterion=repr(criterion),
                keys=", ".join(keys),
            ),
        )
        return None

    def json_text(self, value: str, path: str) -> tuple[bool, object]:
        """(True, the decoded JSON ``value``), or (False, None) with the problem logged at ``path``."""
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError as exc:
            self.error(path, refusal(INVALID_JSON_AT_COLUMN, column=exc.colno, reason=exc.msg))
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
            self.error(
                path,
                refusal(
                    _("%(value)s is mapped to a value longer than %(count)s characters"),
                    value=repr(result),
                    count=max_length,
                ),
            )
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
            self.error(path, _('must be an object such as {"relevance": {"human": 1, "llm": 0}}'))
            return {}
        result = {}
        for criterion, pair in value.items():
            where = f"{path}.{criterion}"
            if not isinstance(criterion, str) or not criterion.strip():
                self.error(path, _("criterion names must be non-empty text"))
                continue
            if not isinstance(pair, dict):
                self.error(where, _('must be an object such as {"human": 1, "llm": 0}'))
                continue
            unknown = sorted(set(pair) - set(LABEL_SOURCES))
            if unknown:
                self.error(f"{where}.{unknown[0]}", _("unknown label source; use human or llm"))
                continue
            name = criterion.strip()
            result[name] = LabelRecord(
                criterion=name,
                human=self.label_value(pair.get("human"), f"{where}.human", criterion=name),
                llm=self.label_value(pair.get("llm"), f"{where}.llm", criterion=name),
                field=where,
            )
        return result

    def sources(self, value: object, mapping: dict[str, str]) -> tuple[SourceRecord, ...]:
        if value is None:
            self.error("sources", _("missing (give [] for an answer without sources)"))
            return ()
        if isinstance(value, str):
            value = self._source_list_from_text(value)
            if value is None:
                return ()
        if not isinstance(value, list):
            self.error("sources", _("must be a list of {id, title, page, text} or the text of the sources"))
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
                    and len(text) <= limits.SOURCE_TEXT
                    and (title is None or len(title) <= limits.SOURCE_TITLE)
                ):
                    chunk_id = chunk_id.strip()
                    if chunk_id and len(chunk_id) <= limits.ID and chunk_id not in first_rank:
                        first_rank[chunk_id] = rank
                        # Ids, titles and digests repeat across answers: interned, each is held once.
                        digest = sys.intern(chunk_text_hash(text))
                        result.append(
                            SourceRecord(
                                id=sys.intern(chunk_id),
                                title=sys.intern((title or "").strip()),
                                page=page,
                                text=text,
                                field=sys.intern(where),
                                text_hash=digest,
                            )
                        )
                        continue
            if not isinstance(item, dict):
                self.error(where, _("must be an object with id, title, page, text"))
                continue
            if mapping:
                item = {mapping.get(key, key): val for key, val in item.items()}
            chunk_id = self.text(item.get("id"), f"{where}.id", required=True, max_length=limits.ID)
            if "text" not in item:
                self.error(f"{where}.text", MISSING)
            elif not isinstance(item["text"], str):
                self.error(f"{where}.text", refusal(MUST_BE_TEXT, type=type(item["text"]).__name__))
            else:
                self.fits(item["text"], f"{where}.text", max_length=limits.SOURCE_TEXT)
            if not chunk_id:
                continue
            if chunk_id in first_rank:
                self.error(
                    f"{where}.id",
                    refusal(
                        _("%(id)s is already sources[%(rank)s]"), id=repr(chunk_id), rank=first_rank[chunk_id]
                    ),
                )
                continue
            first_rank[chunk_id] = rank
            text = item["text"] if isinstance(item.get("text"), str) else ""
            digest = chunk_text_hash(text)
            result.append(
                SourceRecord(
                    id=chunk_id,
                    title=self.text(
                        item.get("title"), f"{where}.title", required=False, max_length=limits.SOURCE_TITLE
                    ),
                    page=self.integer(item.get("page"), f"{where}.page"),
                    text=text,
                    field=where,
                    text_hash=digest,
                )
            )
        return tuple(result)

    def gold_evidence(self, value: object, mapping: dict[str, str]) -> tuple[GoldItem, ...] | None:
        """A list of passage texts, ``{"text": ...}`` and ``{"chunk_id": ...}`` items (or its
        JSON text) as gold items; None when not given."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, str):
            ok, value = self.json_text(value, "gold_evidence")
            if not ok:
                return None
        shape = _('must be a list of passage texts or of {"text": ...} and {"chunk_id": ...} objects')
        if not isinstance(value, list):
            self.error("gold_evidence", shape)
            return None
        result: list[GoldItem] = []
        for position, item in enumerate(value, start=1):
            where = f"gold_evidence[{position}]"
            if isinstance(item, str):
                item = {"text": item}
            if not isinstance(item, dict):
                self.error(where, shape)
                continue
            if mapping:
                item = {mapping.get(key, key): val for key, val in item.items()}
            if "text" not in item and "chunk_id" not in item:
                self.error(where, _("give the passage's text or the chunk_id of a retrieved chunk"))
                continue
            text = chunk_id = None
            if "text" in item:
                given = item["text"]
                if not isinstance(given, str):
                    self.error(f"{where}.text", refusal(MUST_BE_TEXT, type=type(given).__name__))
                    continue
                if not given.strip():
                    self.error(f"{where}.text", _("must not be empty"))
                    continue
                if not self.fits(given, f"{where}.text", max_length=limits.GOLD_TEXT):
                    continue
                text = given
            if "chunk_id" in item:
                chunk_id = self.text(
                    item["chunk_id"], f"{where}.chunk_id", required=True, max_length=limits.ID
                )
                if not chunk_id:
                    continue
            result.append(GoldItem(text=text, chunk_id=chunk_id))
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
            self.error(
                "sources", refusal(_("neither a JSON list nor readable source text: %(reason)s"), reason=exc)
            )
            return None

    def sentences(self, value: object, mapping: dict[str, str]) -> tuple[SentenceRecord, ...] | None:
        if value is None:
            return None
        if isinstance(value, str):
            ok, value = self.json_text(value, "sentences")
            if not ok:
                return None
        if not isinstance(value, list):
            self.error("sentences", _("must be a list of {text, labels}"))
            return None
        if not value:
            self.error("sentences", _("must list at least one sentence (leave it out to split the answer)"))
            return None
        result = []
        for position, item in enumerate(value, start=1):
            where = f"sentences[{position}]"
            if isinstance(item, str):
                item = {"text": item}
            if not isinstance(item, dict):
                self.error(where, _("must be an object with text and labels"))
                continue
            if mapping:
                item = {mapping.get(key, key): val for key, val in item.items()}
            text = self.text(item.get("text"), f"{where}.text", required=True, max_length=limits.SENTENCE)
            paragraph = item.get("paragraph")
            if paragraph is not None and not isinstance(paragraph, str):
                self.error(f"{where}.paragraph", _("must be text"))
                paragraph = None
            elif paragraph is not None and not self.fits(
                paragraph, f"{where}.paragraph", max_length=limits.PARAGRAPH
            ):
                paragraph = None
            labels = self.labels(item.get("labels"), f"{where}.labels")
            result.append(
                SentenceRecord(text=text, paragraph=paragraph, labels=tuple(labels.values()), field=where)
            )
        return tuple(result)


def _too_deep(value: object) -> bool:
    """Whether ``value`` nests lists and objects more than MAX_DEPTH levels (without recursing)."""
    level = [value]
    for _depth in range(MAX_DEPTH):
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
            row.error(
                target,
                refusal(
                    _("given twice (columns %(column)s and another one both mean %(field)s)"),
                    column=repr(key),
                    field=repr(target),
                ),
            )
            continue
        data[target] = value
    return data


def record_of(
    *,
    raw: RawRow,
    names: FieldNames,
    errors: ErrorLog,
    mapping: ImportMapping,
    unused: set[str],
    categories: CategoryKeys | None = None,
) -> tuple[AnswerRecord, int | None] | None:
    """The record of one row and its explicit repetition (None: from the order), or None if bad
    (logged in ``errors``). Its repetition and answer id are not yet numbered (``Repetitions``)."""
    if raw.names:
        names = FieldNames(renamed={**names.renamed, **dict(raw.names)})
    row = _Row(raw=raw, names=names, errors=errors, categories=categories)
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
                row.error(
                    key,
                    refusal(
                        _("the %(source)s label of %(criterion)s is given twice"),
                        source=source,
                        criterion=repr(criterion),
                    ),
                )
                continue
            given = row.label_value(value, key, criterion=criterion)
            labels[criterion] = (
                replace(label, human=given) if source == "human" else replace(label, llm=given)
            )
        elif key not in RECORD_FIELDS:
            unused.add(key)
    question_id = row.text(data.get("question_id"), "question_id", required=True, max_length=limits.ID)
    record_fields: dict[str, Any] = {
        "question_id": question_id,
        "question": row.text(
            data.get("question"), "question", required=True, numbers=False, max_length=limits.QUESTION
        ),
        "theme": row.mapped(
            data.get("theme"),
            "theme",
            values=mapping.values.get("theme", {}),
            required=True,
            max_length=limits.THEME,
        ),
        "difficulty": row.mapped(
            data.get("difficulty"),
            "difficulty",
            values=mapping.values.get("difficulty", {}),
            required=False,
            max_length=limits.DIFFICULTY,
        ),
        "answer_id": row.text(data.get("answer_id"), "answer_id", required=False, max_length=limits.ID),
        "answer": row.text(
            data.get("answer"), "answer", required=True, numbers=False, max_length=limits.ANSWER
        ),
        "sources": row.sources(data.get("sources"), columns),
        "labels": tuple(labels.values()),
        "sentences": row.sentences(data.get("sentences"), columns),
        # An empty reference answer is no reference answer, as an empty cell is a missing one.
        "reference_answer": row.text(
            data.get("reference_answer"),
            "reference_answer",
            required=False,
            numbers=False,
            max_length=limits.REFERENCE_ANSWER,
        )
        or None,
        "gold_evidence": row.gold_evidence(data.get("gold_evidence"), columns),
    }
    repetition = row.integer(data.get("repetition"), "repetition", minimum=1)
    if not row.ok:
        return None
    return AnswerRecord(row=raw.row, repetition=repetition or 0, **record_fields), repetition


def validated_records(
    *,
    rows: Iterable[RawRow],
    names: FieldNames,
    mapping: ImportMapping,
    errors: ErrorLog,
    unused: set[str],
    categories: CategoryKeys | None = None,
) -> Iterator[AnswerRecord]:
    """The valid records of ``rows``, in file order, with their default repetition and id.

    ``categories``: per criterion with named categories, its keys (lower case) -> values; the
    labels of those criteria are category keys, stored as their values. Other criteria's labels
    are 0 or 1.

    A bad row is logged in ``errors`` and skipped; keys that are not fields go to ``unused``.
    A missing ``repetition`` is the record's rank among the file's valid answers to the same
    question (1, 2, ...); a missing ``answer_id`` is ``f"{question_id}-{repetition}"``. The
    same rows always give the same records: both passes of an import rely on it.
    """
    numbers = Repetitions()
    for raw in rows:
        outcome = record_of(
            raw=raw, names=names, errors=errors, mapping=mapping, unused=unused, categories=categories
        )
        if outcome is None:
            continue
        record, repetition = outcome
        repetition, answer_id = numbers.number(
            question_id=record.question_id, repetition=repetition, answer_id=record.answer_id
        )
        yield replace(record, repetition=repetition, answer_id=answer_id)


class Repetitions:
    """The repetition and answer id of each valid record in file order, where the file leaves
    them out: its rank among the file's valid answers to the same question (1, 2, ...), and
    ``f"{question_id}-{repetition}"``."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def number(self, *, question_id: str, repetition: int | None, answer_id: str | None) -> tuple[int, str]:
        order = self._seen[question_id] = self._seen.get(question_id, 0) + 1
        repetition = repetition or order
        return repetition, answer_id or f"{question_id}-{repetition}"
