"""Reading import files (JSONL, JSON, CSV, XLSX) into raw rows: dicts plus where they came from.

Readers only decode the file; what the fields mean and whether they are valid is records.py's job.
"""

from __future__ import annotations

import codecs
import csv
import itertools
import json
import os
import re
import sys
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from annotation.ingest.errors import ErrorLog, ImportFailed, RowError

FORMATS = (".jsonl", ".json", ".csv", ".xlsx")
# What the JSON decoder's RecursionError means to a person: records need a few levels at most.
TOO_DEEP = "nested too deeply to read (a record needs a few levels of lists and objects at most)"
CSV_DELIMITERS = (",", ";", "\t")


@dataclass(frozen=True)
class RawRow:
    """One record as found in the file; ``row`` as in RowError."""

    row: int
    data: dict[str, object]


def file_format(name: str) -> str | None:
    """The format of a file from its extension (".jsonl", ".json", ".csv", ".xlsx"), or None."""
    suffix = Path(name).suffix.lower()
    return suffix if suffix in FORMATS else None


def _fail(*, file: str, field: str, message: str, row: int | None = None) -> ImportFailed:
    return ImportFailed([RowError(file=file, row=row, field=field, message=message)])


def _check_size(*, path: Path, name: str, max_bytes: int) -> None:
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise _fail(file=name, field="file", message=f"cannot be read: {exc.strerror or exc}") from None
    if size > max_bytes:
        raise _fail(
            file=name,
            field="file",
            message=f"{size} bytes is more than the limit of {max_bytes} bytes (IMPORT_MAX_BYTES)",
        )


def _decode_error(*, data: bytes, start: int, line: int, name: str) -> ImportFailed:
    return _fail(
        file=name,
        row=line,
        field="encoding",
        message=(
            f"byte 0x{data[start]:02x} on line {line} is not UTF-8; "
            "save the file as UTF-8 (a byte order mark is accepted)"
        ),
    )


def _decode(*, data: bytes, name: str) -> str:
    """The UTF-8 text of ``data`` (a UTF-8 byte order mark is dropped); any other encoding fails."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise _decode_error(data=data, start=exc.start, line=line, name=name) from None


def _lines(*, path: Path, name: str) -> Iterator[tuple[int, str]]:
    """The file's lines as (1-based number, text with its line end), read one at a time.

    Reading line by line keeps memory flat whatever the file's size; a line that is not UTF-8
    makes the whole file unreadable (ImportFailed naming the line).
    """
    with Path(path).open("rb") as stream:
        for number, data in enumerate(stream, start=1):
            if number == 1 and data.startswith(codecs.BOM_UTF8):
                data = data[len(codecs.BOM_UTF8) :]
            try:
                yield number, data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _decode_error(data=data, start=exc.start, line=number, name=name) from None


def read_rows(*, path: Path, name: str, errors: ErrorLog, max_bytes: int) -> Iterator[RawRow]:
    """The records of the file at ``path`` (shown as ``name`` in errors), in file order.

    Problems that make the whole file unreadable (unknown extension, too big, not UTF-8, not
    JSON, not a workbook) raise ImportFailed, the first two at once, the others when reading
    reaches them; a bad line or row is logged in ``errors`` and skipped so that reading goes on
    and reports the other problems too. JSONL, CSV and XLSX are read a row at a time, so the
    caller holds at most the rows it keeps; a JSON list is read whole.
    """
    fmt = file_format(name)
    if fmt is None:
        suffix = Path(name).suffix or "(none)"
        raise _fail(
            file=name, field="file", message=f"unknown extension {suffix}: use .jsonl, .json, .csv or .xlsx"
        )
    _check_size(path=path, name=name, max_bytes=max_bytes)
    if fmt == ".xlsx":
        return _read_xlsx(path=path, name=name, errors=errors)
    if fmt == ".jsonl":
        return _read_jsonl(lines=_lines(path=path, name=name), errors=errors)
    if fmt == ".json":
        return _read_json(text=_decode(data=Path(path).read_bytes(), name=name), name=name, errors=errors)
    return _read_csv(lines=_lines(path=path, name=name), name=name, errors=errors)


def _read_jsonl(*, lines: Iterable[tuple[int, str]], errors: ErrorLog) -> Iterator[RawRow]:
    for number, line in lines:
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.add(row=number, field="json", message=f"invalid JSON at column {exc.colno}: {exc.msg}")
            continue
        except RecursionError:
            errors.add(row=number, field="json", message=TOO_DEEP)
            continue
        if not isinstance(data, dict):
            errors.add(row=number, field="json", message="a line must hold one JSON object")
            continue
        yield RawRow(row=number, data=data)


def _too_deep_record(text: str) -> tuple[int, int]:
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


def _read_json(*, text: str, name: str, errors: ErrorLog) -> Iterator[RawRow]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(
            file=name,
            field="json",
            message=f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
        ) from None
    except RecursionError:
        record, line = _too_deep_record(text)
        raise _fail(file=name, row=record, field="json", message=f"{TOO_DEEP} (line {line})") from None
    del text
    if not isinstance(data, list):
        raise _fail(file=name, field="json", message="the file must hold a JSON list of records")
    # Records leave the list as they are read, so that only the kept ones stay in memory.
    data.reverse()
    number = 0
    while data:
        record = data.pop()
        number += 1
        if not isinstance(record, dict):
            errors.add(row=number, field="json", message="a record must be a JSON object")
            continue
        yield RawRow(row=number, data=record)


def _header(*, cells: Iterable[object], name: str) -> list[str | None]:
    """Column names (None for an unnamed column); a repeated name makes the file unreadable."""
    names: list[str | None] = []
    seen: set[str] = set()
    for cell in cells:
        column = "" if cell is None else str(cell).strip()
        if column in seen:
            raise _fail(file=name, row=1, field=column, message="this column appears twice in the header")
        if column:
            seen.add(column)
        names.append(column or None)
    if not seen:
        raise _fail(file=name, row=1, field="header", message="the first row must name the columns")
    return names


def _sniff_delimiter(first_line: str) -> str:
    # Spreadsheets in many locales write ';' (the comma being the decimal mark); pick what the
    # header uses most.
    return max(CSV_DELIMITERS, key=first_line.count)


def _read_csv(*, lines: Iterator[tuple[int, str]], name: str, errors: ErrorLog) -> Iterator[RawRow]:
    first = next(lines, None)
    if first is None:
        raise _fail(file=name, field="file", message="the file is empty")
    # csv.reader pulls more lines for a quoted cell that spans several; line_num counts them.
    reader = csv.reader(
        (line for _, line in itertools.chain([first], lines)), delimiter=_sniff_delimiter(first[1])
    )
    try:
        header_cells = next(reader)
    except StopIteration:
        raise _fail(file=name, field="file", message="the file is empty") from None
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
                message=f"{len(cells)} cells but the header names {len(columns)} columns",
            )
            continue
        data = {
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


def _read_xlsx(*, path: Path, name: str, errors: ErrorLog) -> Iterator[RawRow]:
    import openpyxl

    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        raise _fail(file=name, field="file", message=f"not a readable XLSX workbook ({exc})") from None
    try:
        sheet = workbook.worksheets[0]
        lines = sheet.iter_rows(values_only=True)
        try:
            columns = _header(cells=next(lines), name=name)
        except StopIteration:
            raise _fail(file=name, field="file", message="the first sheet is empty") from None
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
