"""The formats an import reads: our own (``attest``, with an optional header that declares
criteria) and published datasets' (``hagrid``, ``alce``, ``ragtruth``), chosen by name or
detected from the file's shape.

A dataset's reader turns each of its records into records of our format (``RawRow``), so that
everything after it is the campaign import itself: the same checks of every row, the same
limits (``annotation.limits``), the same rule on control characters, the same two passes and
one transaction. A reader checks what is its own (the dataset's structure and labels) and names
the dataset's fields in its refusals; each row it makes says which of the dataset's fields each
of ours came from (``RawRow.names``), so that a later refusal (a text too long) names them too.

A reader may also declare criteria (the dataset's labels, created on first use with its names)
and a citation pattern (``Declarations``): both are checked against the campaign and applied
inside the import's transaction (``annotation.ingest.load``). docs/import-format.md, "Published
datasets", says what each reader takes.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from annotation.ingest.errors import (
    INVALID_JSON_AT_LINE,
    MISSING,
    MUST_BE_TEXT,
    ErrorLog,
    ImportFailed,
    RowError,
)
from annotation.ingest.readers import TOO_DEEP, RawRow, check_size, file_format, read_rows
from annotation.text import clean_value

ATTEST, HAGRID, ALCE, RAGTRUTH = "attest", "hagrid", "alce", "ragtruth"
# The names ``--format`` and the import page take; "" (auto) detects the format.
FORMAT_NAMES = (ATTEST, HAGRID, ALCE, RAGTRUTH)
AUTO = ""
_MODULES = {ATTEST: "declared", HAGRID: "hagrid", ALCE: "alce", RAGTRUTH: "ragtruth"}
# How the formats are written for people.
TITLES = {ATTEST: "Attest", HAGRID: "HAGRID", ALCE: "ALCE", RAGTRUTH: "RAGTruth"}
# What each takes, for messages: the extensions its files have.
_EXTENSIONS = {
    ATTEST: (".jsonl", ".json", ".csv", ".xlsx"),
    HAGRID: (".jsonl", ".json"),
    ALCE: (".json",),
    RAGTRUTH: (".jsonl",),
}


@dataclass(frozen=True)
class DeclaredCriterion:
    """A criterion a file brings: created with these when the campaign has none of this name,
    else the campaign's must be the same (level, kind and categories). ``categories`` empty: a
    binary criterion (labels 0 and 1)."""

    name: str
    title: str
    level: str
    categories: tuple[tuple[int, str, str, str], ...] = ()  # (value, key, name, title)
    groups: tuple[tuple[str, tuple[int, ...]], ...] = ()
    guidelines: str = ""

    @property
    def kind(self) -> str:
        return "categorical" if self.categories else "binary"

    def category_list(self) -> list[dict]:
        return [{"value": v, "key": k, "name": n, "title": t} for v, k, n, t in self.categories]

    def group_dict(self) -> dict[str, list[int]]:
        return {name: list(values) for name, values in self.groups}

    def keys(self) -> dict[str, int]:
        """Its category keys (lower case) -> values, as an import reads its labels."""
        return {key.lower(): value for value, key, _name, _title in self.categories}


@dataclass(frozen=True)
class Declarations:
    """What a file says of the campaign besides its records: criteria to have, and the pattern
    its citations follow (None: the campaign's)."""

    criteria: tuple[DeclaredCriterion, ...] = ()
    citation_pattern: str | None = None

    def category_keys(self) -> dict[str, dict[str, int]]:
        return {c.name: c.keys() for c in self.criteria if c.categories}

    def __bool__(self) -> bool:
        return bool(self.criteria) or self.citation_pattern is not None


@dataclass
class Opened:
    """A file opened in a format: its declarations, its records in our format (read as they are
    asked for), and the reader's warnings (filled as the records are read)."""

    format: str
    declarations: Declarations
    rows: Iterator[RawRow]
    warnings: list[str] = field(default_factory=list)
    # The row of our format's header record, read already (0: the file has none).
    header_row: int = 0


def _fail(*, name: str, field: str, message: str | Promise, row: int | None = None) -> ImportFailed:
    return ImportFailed([RowError(file=name, row=row, field=field, message=message)])


def open_file(*, path: Path, name: str, format: str, errors: ErrorLog, max_bytes: int) -> Opened:
    """The file at ``path`` (``name`` in messages) read in ``format`` (AUTO: detected, see
    ``detect``). ImportFailed naming the file when the format is unknown or does not take the
    file's extension; a bad record is logged in ``errors`` as it is read."""
    if format == AUTO:
        format = detect(path=path, name=name, max_bytes=max_bytes)
    if format not in FORMAT_NAMES:
        raise _fail(
            name=name,
            field="format",
            message=refusal(
                _("unknown format %(format)s: use %(formats)s"),
                format=repr(format),
                formats=", ".join(FORMAT_NAMES),
            ),
        )
    extension = file_format(name)
    if extension is not None and extension not in _EXTENSIONS[format]:
        raise _fail(
            name=name,
            field="format",
            message=refusal(
                _("the %(format)s format is read from %(extensions)s files, not %(extension)s"),
                format=format,
                extensions=", ".join(_EXTENSIONS[format]),
                extension=extension,
            ),
        )
    module = importlib.import_module(f"annotation.ingest.{_MODULES[format]}")
    opened: Opened = module.open_file(path=path, name=name, errors=errors, max_bytes=max_bytes)
    return opened


def detect(*, path: Path, name: str, max_bytes: int) -> str:
    """The format of the file from its first record, when its shape says it: HAGRID's records
    hold ``query``, ``quotes`` and ``answers``; RAGTruth's ``source_id`` with ``response`` or
    ``source_info``; ALCE's results are one JSON object (``data``, or its human evaluations: an
    object of datasets holding objects of models holding objects of items); anything else is
    ours. A file that cannot be read is left to our reader,
    whose refusal names the problem."""
    extension = file_format(name)
    if extension == ".json" and _first_character(path) == "{":
        return ALCE if _alce_shaped(path=path, name=name, max_bytes=max_bytes) else ATTEST
    if extension not in (".jsonl", ".json"):
        return ATTEST
    try:
        first_row = next(
            iter(read_rows(path=path, name=name, errors=ErrorLog(file=name), max_bytes=max_bytes))
        )
    except (ImportFailed, StopIteration):
        return ATTEST
    keys = set(first_row.data)
    if {"query", "quotes", "answers"} <= keys:
        return HAGRID
    if "source_id" in keys and keys & {"response", "source_info"}:
        return RAGTRUTH
    return ATTEST


def read_document(*, path: Path, name: str, max_bytes: int) -> object:
    """A JSON file read whole (its size checked first), every text under the rule on control
    characters: for the formats that publish one JSON object rather than a list of records.
    ImportFailed naming the file (and the line) when it is not UTF-8 JSON."""
    check_size(path=path, name=name, max_bytes=max_bytes)
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _fail(
            name=name,
            field="encoding",
            message=refusal(_("byte %(position)s is not UTF-8; save the file as UTF-8"), position=exc.start),
        ) from None
    try:
        return clean_value(json.loads(text))
    except json.JSONDecodeError as exc:
        raise _fail(
            name=name,
            field="json",
            message=refusal(INVALID_JSON_AT_LINE, line=exc.lineno, column=exc.colno, reason=exc.msg),
        ) from None
    except RecursionError:
        raise _fail(name=name, field="json", message=TOO_DEEP) from None


def _alce_shaped(*, path: Path, name: str, max_bytes: int) -> bool:
    """Whether a JSON object is ALCE's: a result (``data``) or a human evaluation (objects of
    objects of items)."""
    try:
        document = read_document(path=path, name=name, max_bytes=max_bytes)
    except ImportFailed:
        return False
    if not isinstance(document, dict) or not document:
        return False
    if isinstance(document.get("data"), list):
        return True
    return all(
        isinstance(models, dict) and models and all(isinstance(items, dict) for items in models.values())
        for models in document.values()
    )


def _first_character(path: Path) -> str:
    try:
        with Path(path).open("rb") as stream:
            head = stream.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return ""
    return head[:1].decode("ascii", errors="replace")


class DatasetRecord:
    """Reads one record of a dataset, logging each problem with the dataset's own path
    (``answers[2].sentences[1].attributable``; lists counted from 1, as our format's refusals
    count them) on the record's row."""

    def __init__(self, *, errors: ErrorLog, row: int, prefix: str = "") -> None:
        self.errors = errors
        self.row = row
        self.prefix = prefix
        self.ok = True

    def where(self, path: str) -> str:
        return f"{self.prefix}.{path}" if self.prefix and path else (self.prefix or path)

    def error(self, path: str, message: str | Promise) -> None:
        self.ok = False
        self.errors.add(row=self.row, field=self.where(path), message=message)

    def text(self, value: object, path: str, *, required: bool = True, numbers: bool = False) -> str | None:
        """A text (an id may be a number), or None with the problem logged."""
        if isinstance(value, str):
            if required and not value.strip():
                self.error(path, _("must not be empty"))
                return None
            return value
        if value is None:
            if required:
                self.error(path, MISSING)
            return None
        if numbers and isinstance(value, int | float) and not isinstance(value, bool):
            return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
        self.error(path, refusal(MUST_BE_TEXT, type=type(value).__name__))
        return None

    def listing(self, value: object, path: str, *, required: bool = True) -> list:
        if value is None and not required:
            return []
        if not isinstance(value, list):
            self.error(path, MISSING if value is None else _("must be a JSON list"))
            return []
        return value

    def mapping(self, value: object, path: str) -> dict | None:
        if not isinstance(value, dict):
            self.error(path, MISSING if value is None else _("must be a JSON object"))
            return None
        return value

    def binary(self, value: object, path: str) -> int | None:
        """A 0/1 label (None, or absent: no label)."""
        if value is None:
            return None
        if not isinstance(value, bool) and isinstance(value, int | float) and value in (0, 1):
            return int(value)
        self.error(path, refusal(_("must be 0, 1 or null, not %(value)s"), value=json.dumps(value)))
        return None

    def whole(self, value: object, path: str, *, minimum: int | None = None) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
            self.error(path, refusal(_("must be a whole number, not %(value)s"), value=json.dumps(value)))
            return None
        if minimum is not None and value < minimum:
            self.error(path, refusal(_("must be at least %(minimum)s"), minimum=minimum))
            return None
        return int(value)
