"""Our own format, whose JSONL or JSON file may start with a header that declares criteria (with
their categories) and the citation pattern: a new criterion and its labels then import in one
step, the criterion created inside the import's transaction.

The header is the file's first record, told from an answer by holding ``criteria`` or
``citation_pattern`` and no ``question_id``::

    {"criteria": [{"name": "correctness", "title": "Correctness", "level": "answer",
                   "categories": [{"value": 1, "key": "1", "name": "wrong", "title": "Wrong"},
                                  {"value": 2, "key": "2", "name": "right", "title": "Right"}],
                   "groups": {"fine": [2]}},
                  {"name": "faithful", "title": "Faithful", "level": "sentence"}],
     "citation_pattern": "\\[(\\d+)\\]"}

A criterion without ``categories`` is binary. Every other record is an answer, as without the
header (docs/import-format.md). CSV and XLSX files have no header: they declare nothing.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from django.utils.translation import gettext_lazy as _

from annotation import limits
from annotation.corpus.citations import CitationPatternError, compile_citation_pattern
from annotation.criteria.categories import CategoryError, check_definition
from annotation.errors import refusal
from annotation.ingest.errors import ErrorLog
from annotation.ingest.formats import ATTEST, DatasetRecord, Declarations, DeclaredCriterion, Opened
from annotation.ingest.readers import RawRow, file_format, read_rows
from annotation.models import Level

HEADER_KEYS = ("criteria", "citation_pattern")
# The levels a file can label (a citation-level criterion's labels are given in Attest).
LEVELS = (Level.ANSWER.value, Level.SENTENCE.value)
NAME_LENGTH = 100
TITLE_LENGTH = 200
PATTERN_LENGTH = 300


def is_header(data: dict[str, object]) -> bool:
    return "question_id" not in data and any(key in data for key in HEADER_KEYS)


def open_file(*, path: Path, name: str, errors: ErrorLog, max_bytes: int) -> Opened:
    """Our format; a JSONL or JSON file's header read first (see the module's docstring)."""
    rows = read_rows(path=path, name=name, errors=errors, max_bytes=max_bytes)
    if file_format(name) not in (".jsonl", ".json"):
        return Opened(format=ATTEST, declarations=Declarations(), rows=rows)
    first = next(rows, None)
    if first is None:
        return Opened(format=ATTEST, declarations=Declarations(), rows=iter(()))
    if not is_header(first.data):
        return Opened(format=ATTEST, declarations=Declarations(), rows=itertools.chain([first], rows))
    return Opened(
        format=ATTEST, declarations=read_header(first, errors=errors), rows=rows, header_row=first.row
    )


def read_header(first: RawRow, *, errors: ErrorLog) -> Declarations:
    """The declarations of a header record; each problem logged on its row and field."""
    record = DatasetRecord(errors=errors, row=first.row)
    unknown = sorted(set(first.data) - set(HEADER_KEYS))
    if unknown:
        record.error(unknown[0], _("a header holds criteria and citation_pattern only"))
    pattern = None
    if first.data.get("citation_pattern") is not None:
        pattern = record.text(first.data["citation_pattern"], "citation_pattern")
        if pattern is not None:
            if len(pattern) > PATTERN_LENGTH:
                record.error(
                    "citation_pattern", refusal(_("longer than %(count)s characters"), count=PATTERN_LENGTH)
                )
            try:
                compile_citation_pattern(pattern)
            except CitationPatternError as exc:
                record.error("citation_pattern", exc.reason)
    criteria: list[DeclaredCriterion] = []
    seen: set[str] = set()
    for position, item in enumerate(
        record.listing(first.data.get("criteria"), "criteria", required=False), 1
    ):
        made = _criterion(record, item, f"criteria[{position}]")
        if made is None:
            continue
        if made.name in seen:
            record.error(
                f"criteria[{position}].name", refusal(_("%(name)s is declared twice"), name=repr(made.name))
            )
            continue
        seen.add(made.name)
        criteria.append(made)
    return Declarations(criteria=tuple(criteria), citation_pattern=pattern)


def _criterion(record: DatasetRecord, item: object, path: str) -> DeclaredCriterion | None:
    given = record.mapping(item, path)
    if given is None:
        return None
    unknown = sorted(set(given) - {"name", "title", "level", "categories", "groups", "guidelines"})
    if unknown:
        record.error(
            f"{path}.{unknown[0]}",
            _("not a field of a criterion (name, title, level, categories, groups, guidelines)"),
        )
        return None
    ok = record.ok
    record.ok = True
    name = record.text(given.get("name"), f"{path}.name")
    if name is not None and (
        len(name) > NAME_LENGTH or not name.replace("-", "").replace("_", "").isalnum() or not name.isascii()
    ):
        record.error(f"{path}.name", _("must be a slug (letters, digits, - and _) of at most 100 characters"))
    title = record.text(given.get("title"), f"{path}.title")
    if title is not None and len(" ".join(title.split())) > TITLE_LENGTH:
        record.error(f"{path}.title", refusal(_("longer than %(count)s characters"), count=TITLE_LENGTH))
    level = given.get("level")
    if level not in LEVELS:
        record.error(
            f"{path}.level",
            refusal(_("must be answer or sentence, not %(level)s"), level=repr(level)),
        )
    guidelines = record.text(given.get("guidelines"), f"{path}.guidelines", required=False) or ""
    if len(guidelines) > limits.GUIDELINES:
        record.error(
            f"{path}.guidelines", refusal(_("longer than %(count)s characters"), count=limits.GUIDELINES)
        )
    categories: tuple[tuple[int, str, str, str], ...] = ()
    groups: tuple[tuple[str, tuple[int, ...]], ...] = ()
    if given.get("categories") is not None:
        try:
            checked, grouped = check_definition(categories=given["categories"], groups=given.get("groups"))
        except CategoryError as exc:
            record.error(f"{path}.{exc.field}", str(exc).removeprefix(f"{exc.field}: "))
        else:
            categories = tuple((c.value, c.key, c.name, c.title) for c in checked)
            groups = tuple((group, tuple(values)) for group, values in sorted(grouped.items()))
    elif given.get("groups") is not None:
        record.error(f"{path}.groups", _("groups need categories"))
    good = record.ok
    record.ok = ok and good
    if not good or name is None or title is None:
        return None
    return DeclaredCriterion(
        name=name,
        title=" ".join(title.split()),
        level=str(level),
        categories=categories,
        groups=groups,
        guidelines=guidelines.strip(),
    )
