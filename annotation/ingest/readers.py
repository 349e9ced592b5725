"""Reading import files (JSONL, JSON, CSV, XLSX) into raw rows: dicts plus where they came from.

Readers only decode the file; what the fields mean and whether they are valid is records.py's job.

Its length is four formats, each read as it streams, sharing the errors they name.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import itertools
import json
import os
import re
import sys
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from annotation.ingest.errors import (
    CANNOT_BE_READ,
    INVALID_JSON_AT_COLUMN,
    INVALID_JSON_AT_LINE,
    ErrorLog,
    ImportFailed,
    RowError,
)
from annotation.text import clean_value

FORMATS = (".jsonl", ".json", ".csv", ".xlsx")
# What the JSON decoder's RecursionError means to a person: records need a few levels at most.
TOO_DEEP = _("nested too deeply to read (a record needs a few levels of lists and objects at most)")
TOO_DEEP_AT_LINE = _(
    "nested too deeply to read (a record needs a few levels of lists and objects at most) (line %(line)s)"
)
CSV_DELIMITERS = (",", ";", "\t")
# Characters of a .json file read at a time; a record longer than that is read in more steps.
JSON_READ = 1 << 16
EMPTY_FILE = _("the file is empty")
# An XLSX workbook is a ZIP archive: what it unpacks to is bounded before any of it is read.
# Its members together may unpack to at most IMPORT_MAX_BYTES (a file that size is refused as
# CSV), and a member over XLSX_RATIO_FROM bytes to at most XLSX_MAX_RATIO times its packed size
# (Apache POI's default, the limit Excel's own files stay under: a 204 KB file unpacking to
# 200 MB is a ratio of 1,000). Python's zipfile never unpacks more than a member declares.
XLSX_MAX_RATIO = 100
XLSX_RATIO_FROM = 1 << 20
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True)
class RawRow:
    """One record as found in the file; ``row`` as in RowError. ``names``: for a record a
    dataset's reader made (``annotation.ingest.formats``), which of the file's fields each of
    ours came from, as (our field, the file's path) pairs, so that refusals name the file's."""

    row: int
    data: dict[str, object]
    names: tuple[tuple[str, str], ...] = ()
    # True when the reader knows that no text in ``data`` holds a control character the rule
    # removes or changes (``annotation.text``), so that cleaning it would give it back as it is.
    clean: bool = False
    # A digest of the bytes the record was read from, where a reader has them whole (a JSONL
    # line): any process reading the same bytes gives the same (``_lines``).
    digest: int | None = None


def file_format(name: str) -> str | None:
    """The format of a file from its extension (".jsonl", ".json", ".csv", ".xlsx"), or None."""
    suffix = Path(name).suffix.lower()
    return suffix if suffix in FORMATS else None


def _fail(*, file: str, field: str, message: str | Promise, row: int | None = None) -> ImportFailed:
    return ImportFailed([RowError(file=file, row=row, field=field, message=message)])


def check_size(*, path: Path, name: str, max_bytes: int) -> None:
    """ImportFailed naming the file when it cannot be read or is larger than ``max_bytes``."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise _fail(
            file=name, field="file", message=refusal(CANNOT_BE_READ, reason=exc.strerror or exc)
        ) from None
    if size > max_bytes:
        raise _fail(
            file=name,
            field="file",
            message=refusal(
                _("%(size)s bytes is more than the limit of %(limit)s bytes (IMPORT_MAX_BYTES)"),
                size=size,
                limit=max_bytes,
            ),
        )


def _decode_error(*, data: bytes, start: int, line: int, name: str) -> ImportFailed:
    return _fail(
        file=name,
        row=line,
        field="encoding",
        message=refusal(
            _(
                "byte 0x%(byte)s on line %(line)s is not UTF-8; "
                "save the file as UTF-8 (a byte order mark is accepted)"
            ),
            byte=f"{data[start]:02x}",
            line=line,
        ),
    )


def _lines(
    *, path: Path, name: str, start: int = 0, end: int | None = None
) -> Iterator[tuple[int, str, int]]:
    """The file's lines as (1-based number, text with its line end, digest), read one at a
    time; with ``start`` and ``end``, those of that byte range (``line_parts``), numbered from
    its start. The digest, a signed 64-bit integer, tells a line's bytes apart in any process:
    the first 8 bytes of their SHA-1, which current CPUs have instructions for (0.07 s for 100 MB
    of lines against 0.16 s with BLAKE2b; it is there to notice a line changed between the two
    passes of an import, not to resist an attack).

    Reading line by line keeps memory flat whatever the file's size; a line that is not UTF-8
    makes the whole file unreadable (ImportFailed naming the line).
    """
    with Path(path).open("rb") as stream:
        stream.seek(start)
        position = start
        for number, data in enumerate(stream, start=1):
            if end is not None:
                if position >= end:
                    return
                position += len(data)
            if number == 1 and start == 0 and data.startswith(codecs.BOM_UTF8):
                data = data[len(codecs.BOM_UTF8) :]
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _decode_error(data=data, start=exc.start, line=number, name=name) from None
            yield number, text, int.from_bytes(hashlib.sha1(data).digest()[:8], "little", signed=True)


def line_parts(*, path: Path, size: int) -> Iterator[tuple[int, int]]:
    """(start, end) byte ranges of whole lines, about ``size`` bytes each, covering the file."""
    total = Path(path).stat().st_size
    with Path(path).open("rb") as stream:
        start = 0
        while start < total:
            stream.seek(start + size)
            stream.readline()
            end = min(stream.tell(), total)
            yield start, end
            start = end


def read_jsonl_part(*, path: Path, name: str, errors: ErrorLog, start: int, end: int) -> Iterator[RawRow]:
    """The records of the lines between bytes ``start`` and ``end`` of a JSONL file (a range of
    ``line_parts``), as ``read_rows`` gives them, their rows numbered from the range's start."""
    return _cleaned(_read_jsonl(lines=_lines(path=path, name=name, start=start, end=end), errors=errors))


def read_rows(*, path: Path, name: str, errors: ErrorLog, max_bytes: int) -> Iterator[RawRow]:
    """The records of the file at ``path`` (shown as ``name`` in errors), in file order.

    Problems that make the whole file unreadable (unknown extension, too big, not UTF-8, not
    JSON, not a workbook) raise ImportFailed, the first two (and a workbook that unpacks too
    big) at once, the others when reading
    reaches them; a bad line or row is logged in ``errors`` and skipped so that reading goes on
    and reports the other problems too. Every format is read a record at a time, so the caller
    holds at most the rows it keeps.
    """
    fmt = file_format(name)
    if fmt is None:
        suffix = Path(name).suffix or _("(none)")
        raise _fail(
            file=name,
            field="file",
            message=refusal(
                _("unknown extension %(suffix)s: use .jsonl, .json, .csv or .xlsx"), suffix=suffix
            ),
        )
    check_size(path=path, name=name, max_bytes=max_bytes)
    if fmt == ".xlsx":
        _check_unpacked(path=path, name=name, max_bytes=max_bytes)
        rows = _read_xlsx(path=path, name=name, errors=errors)
    elif fmt == ".jsonl":
        rows = _read_jsonl(lines=_lines(path=path, name=name), errors=errors)
    elif fmt == ".json":
        rows = _read_json(path=path, name=name, errors=errors)
    else:
        rows = _read_csv(lines=_lines(path=path, name=name), name=name, errors=errors)
    return _cleaned(rows)


def _cleaned(rows: Iterator[RawRow]) -> Iterator[RawRow]:
    """Every text of every record under the rule on control characters (``annotation.text``)."""
    for raw in rows:
        if raw.clean:
            yield raw
            continue
        yield RawRow(row=raw.row, data=clean_value(raw.data), names=raw.names, digest=raw.digest)  # type: ignore[arg-type]


# What in a JSON text can give a decoded string a control character the rule removes or changes:
# the escapes \b and \f, a \u escape of U+0000-U+001F or U+007F, and DEL itself (JSON refuses
# the other control characters raw in a string; \t, \n and \r are kept by the rule). Matching
# more (an escaped backslash before a b) only sends the record through the cleaning.
# DEL is looked for apart: in one pattern with the escapes it made the search try every
# position of the line (54 against 3.4 microseconds for a line of 10 kB).
_MAY_HOLD_CONTROLS = re.compile(r"\\(?:[bf]|u00[01][0-9a-fA-F]|u007[fF])")


def _may_hold_controls(line: str) -> bool:
    return "\x7f" in line or _MAY_HOLD_CONTROLS.search(line) is not None


def _read_jsonl(*, lines: Iterable[tuple[int, str, int]], errors: ErrorLog) -> Iterator[RawRow]:
    for number, line, digest in lines:
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.add(
                row=number,
                field="json",
                message=refusal(INVALID_JSON_AT_COLUMN, column=exc.colno, reason=exc.msg),
            )
            continue
        except RecursionError:
            errors.add(row=number, field="json", message=TOO_DEEP)
            continue
        if not isinstance(data, dict):
            errors.add(row=number, field="json", message=_("a line must hold one JSON object"))
            continue
        # Most lines hold no control character: one search of the line instead of a walk
        # through every text of the record.
        yield RawRow(row=number, data=data, clean=not _may_hold_controls(line), digest=digest)


def too_deep_record(text: str) -> tuple[int, int]:
    """(record number, line) where the JSON list ``text`` nests deeper than the decoder goes.

    Only called once decoding failed: brackets are counted outside strings, commas at the
    list's own level count the records.
    """
    depth, record, limit = 0, 1, sys.getrecursionlimit() // 2
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{},]', text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                break
        elif token in "]}":
            depth -= 1
        elif token == "," and depth == 1:
            record += 1
    else:
        return record, 1
    return record, text.count("\n", 0, match.start()) + 1


def _read_json(*, path: Path, name: str, errors: ErrorLog) -> Iterator[RawRow]:
    """The records of a JSON list, decoded one at a time (numbered from 1)."""
    with Path(path).open("rb") as stream:
        text = _JsonText(stream=stream, name=name)
        position = text.skip_space()
        if text.at(position) != "[":
            raise _not_a_list(text=text.rest(), name=name)
        decoder = json.JSONDecoder()
        position, number = text.skip_space(position + 1), 0
        mark = text.at(position)
        while mark != "]":
            number += 1
            record, position = text.decode(decoder=decoder, position=position, record=number)
            if isinstance(record, dict):
                yield RawRow(row=number, data=record)
            else:
                errors.add(row=number, field="json", message=_("a record must be a JSON object"))
            del record
            position = text.forget(text.skip_space(position))
            mark = text.at(position)
            if mark == ",":
                position = text.skip_space(position + 1)
            elif mark != "]":
                raise text.invalid(position=position, message="Expecting ',' delimiter")
        position = text.skip_space(position + 1)
        if text.at(position):
            raise text.invalid(position=position, message="Extra data")


def _not_a_list(*, text: str, name: str) -> ImportFailed:
    """Why a .json file that does not start a list is refused: decoded whole to say it."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return _fail(
            file=name,
            field="json",
            message=refusal(INVALID_JSON_AT_LINE, line=exc.lineno, column=exc.colno, reason=exc.msg),
        )
    except RecursionError:
        record, line = too_deep_record(text)
        return _fail(file=name, row=record, field="json", message=refusal(TOO_DEEP_AT_LINE, line=line))
    return _fail(file=name, field="json", message=_("the file must hold a JSON list of records"))


class _JsonText:
    """The text of a ``.json`` file, read as parsing needs it and forgotten once parsed, so that
    a list of records is decoded one record at a time. Positions are in the text read so far;
    lines and columns in messages are the file's."""

    def __init__(self, *, stream: BinaryIO, name: str) -> None:
        self.name = name
        self.stream = stream
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.text = ""
        self.line = 1  # the file's line where self.text starts ...
        self.column = 0  # ... and the characters of that line before it
        self.lines_read = 0  # line ends in the bytes read so far (for encoding errors)
        self.eof = False

    def _read(self) -> bool:
        """Read more (at least as much as is held, so a long record costs few re-parses)."""
        if self.eof:
            return False
        data = self.stream.read(max(JSON_READ, len(self.text)))
        try:
            self.text += self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            line = self.lines_read + exc.object.count(b"\n", 0, exc.start) + 1
            raise _decode_error(data=exc.object, start=exc.start, line=line, name=self.name) from None
        self.lines_read += data.count(b"\n")
        if not data:
            self.eof = True
        return True

    def at(self, position: int) -> str:
        """The character at ``position`` ("" at the end of the file)."""
        while position >= len(self.text) and self._read():
            pass
        return self.text[position : position + 1]

    def skip_space(self, position: int = 0) -> int:
        while True:
            end = _JSON_SPACE.match(self.text, position).end()  # type: ignore[union-attr]  # \s* always matches
            if end < len(self.text) or not self._read():
                return end

    def rest(self) -> str:
        while self._read():
            pass
        return self.text

    def forget(self, position: int) -> int:
        """Drop the text before ``position`` once it is long; returns where ``position`` is now."""
        if position < JSON_READ:
            return position
        gone = self.text[:position]
        breaks = gone.count("\n")
        self.column = position - gone.rfind("\n") - 1 if breaks else self.column + position
        self.line += breaks
        self.text = self.text[position:]
        return 0

    def where(self, position: int) -> tuple[int, int]:
        """The file's (line, column) of ``position``, both from 1."""
        breaks = self.text.count("\n", 0, position)
        if breaks:
            return self.line + breaks, position - self.text.rfind("\n", 0, position)
        return self.line, self.column + position + 1

    def invalid(self, *, position: int, message: str) -> ImportFailed:
        line, column = self.where(position)
        return _fail(
            file=self.name,
            field="json",
            message=refusal(INVALID_JSON_AT_LINE, line=line, column=column, reason=message),
        )

    def decode(self, *, decoder: json.JSONDecoder, position: int, record: int) -> tuple[object, int]:
        """The JSON value at ``position`` and the position after it, reading more as needed."""
        while True:
            try:
                value, end = decoder.raw_decode(self.text, position)
            except json.JSONDecodeError as exc:
                # A value cut where the text read ends fails there (a string: where it starts);
                # then read more and try again. Anything else is wrong in the file itself.
                cut = exc.pos >= len(self.text) - 8 or exc.msg.startswith("Unterminated string")
                if cut and self._read():
                    continue
                raise self.invalid(position=exc.pos, message=exc.msg) from None
            except RecursionError:
                line, _column = self.where(position)
                raise _fail(
                    file=self.name, row=record, field="json", message=refusal(TOO_DEEP_AT_LINE, line=line)
                ) from None
            # A number ending where the text read ends may go on in what is not read yet.
            if end < len(self.text) or not self._read():
                return value, end


def _header(*, cells: Iterable[object], name: str) -> list[str | None]:
    """Column names (None for an unnamed column); a repeated name makes the file unreadable."""
    names: list[str | None] = []
    seen: set[str] = set()
    for cell in cells:
        column = "" if cell is None else str(cell).strip()
        if column in seen:
            raise _fail(file=name, row=1, field=column, message=_("this column appears twice in the header"))
        if column:
            seen.add(column)
        names.append(column or None)
    if not seen:
        raise _fail(file=name, row=1, field="header", message=_("the first row must name the columns"))
    return names


def _sniff_delimiter(first_line: str) -> str:
    # Spreadsheets in many locales write ';' (the comma being the decimal mark); pick what the
    # header uses most.
    return max(CSV_DELIMITERS, key=first_line.count)


def _read_csv(*, lines: Iterator[tuple[int, str, int]], name: str, errors: ErrorLog) -> Iterator[RawRow]:
    first = next(lines, None)
    if first is None:
        raise _fail(file=name, field="file", message=EMPTY_FILE)
    # csv.reader pulls more lines for a quoted cell that spans several; line_num counts them.
    reader = csv.reader(
        (line for _, line, _ in itertools.chain([first], lines)), delimiter=_sniff_delimiter(first[1])
    )
    try:
        header_cells = next(reader)
    except StopIteration:
        raise _fail(file=name, field="file", message=EMPTY_FILE) from None
    except csv.Error as exc:
        raise _fail(file=name, row=1, field="csv", message=str(exc)) from None
    columns = _header(cells=header_cells, name=name)
    number = 1
    while True:
        number += 1
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            errors.add(row=number, field="csv", message=str(exc))
            break
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) > len(columns):
            errors.add(
                row=number,
                field="csv",
                message=refusal(
                    _("%(cells)s cells but the header names %(columns)s columns"),
                    cells=len(cells),
                    columns=len(columns),
                ),
            )
            continue
        data: dict[str, object] = {
            column: cell
            for column, cell in zip(columns, cells, strict=False)
            if column is not None and cell != ""
        }
        yield RawRow(row=number, data=data)


def _cell(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str | int | float | bool):
        return value
    # Dates and times: their text, as the spreadsheet shows them.
    return str(value)


def _check_unpacked(*, path: Path, name: str, max_bytes: int) -> None:
    """Refuse a workbook whose members declare more than ``max_bytes`` unpacked in all, or one
    member over XLSX_RATIO_FROM bytes that unpacks to more than XLSX_MAX_RATIO times its size."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise _fail(
            file=name,
            field="file",
            message=refusal(_("not a readable XLSX workbook (%(reason)s)"), reason=exc),
        ) from None
    total = sum(member.file_size for member in members)
    if total > max_bytes:
        raise _fail(
            file=name,
            field="file",
            message=refusal(
                _(
                    "the workbook unpacks to %(size)s bytes, more than the limit of %(limit)s bytes"
                    " (IMPORT_MAX_BYTES)"
                ),
                size=total,
                limit=max_bytes,
            ),
        )
    for member in members:
        if member.file_size > XLSX_RATIO_FROM and member.file_size > XLSX_MAX_RATIO * max(
            1, member.compress_size
        ):
            raise _fail(
                file=name,
                field="file",
                message=refusal(
                    _(
                        "%(member)s unpacks to %(ratio)s times its size in the workbook (at most"
                        " %(limit)s): a compression bomb, not a spreadsheet"
                    ),
                    member=member.filename,
                    ratio=member.file_size // max(1, member.compress_size),
                    limit=XLSX_MAX_RATIO,
                ),
            )


def _read_xlsx(*, path: Path, name: str, errors: ErrorLog) -> Iterator[RawRow]:
    import openpyxl

    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        raise _fail(
            file=name,
            field="file",
            message=refusal(_("not a readable XLSX workbook (%(reason)s)"), reason=exc),
        ) from None
    try:
        sheet = workbook.worksheets[0]
        lines = sheet.iter_rows(values_only=True)
        try:
            columns = _header(cells=next(lines), name=name)
        except StopIteration:
            raise _fail(file=name, field="file", message=_("the first sheet is empty")) from None
        for number, cells in enumerate(lines, start=2):
            data = {
                column: _cell(value)
                for column, value in zip(columns, cells, strict=False)
                if column is not None and value is not None and value != ""
            }
            if data:
                yield RawRow(row=number, data=data)
    finally:
        workbook.close()
