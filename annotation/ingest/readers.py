"""Reading import files (JSONL, JSON, CSV, XLSX) into raw rows: dicts plus where they came from.

Readers only decode the file; what the fields mean and whether they are valid is records.py's job.
"""

from __future__ import annotations

import csv
import io
import json
import os
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from annotation.ingest.errors import ErrorLog, ImportFailed, RowError

FORMATS = (".jsonl", ".json", ".csv", ".xlsx")
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


def _decode(*, data: bytes, name: str) -> str:
    """The UTF-8 text of ``data`` (a UTF-8 byte order mark is dropped); any other encoding fails."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise _fail(
            file=name,
            row=line,
            field="encoding",
            message=(
                f"byte 0x{data[exc.start]:02x} on line {line} is not UTF-8; "
                "save the file as UTF-8 (a byte order mark is accepted)"
            ),
        ) from None


def read_rows(*, path: Path, name: str, errors: ErrorLog, max_bytes: int) -> list[RawRow]:
    """The records of the file at ``path`` (shown as ``name`` in errors), in file order.

    Problems that make the whole file unreadable (unknown extension, too big, not UTF-8, not
    JSON, not a workbook) raise ImportFailed at once; a bad line or row is logged in ``errors``
    and skipped so that reading goes on and reports the other problems too.
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
    text = _decode(data=Path(path).read_bytes(), name=name)
    if fmt == ".jsonl":
        return _read_jsonl(text=text, errors=errors)
    if fmt == ".json":
        return _read_json(text=text, name=name, errors=errors)
    return _read_csv(text=text, name=name, errors=errors)


def _read_jsonl(*, text: str, errors: ErrorLog) -> list[RawRow]:
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.add(row=number, field="json", message=f"invalid JSON at column {exc.colno}: {exc.msg}")
            continue
        if not isinstance(data, dict):
            errors.add(row=number, field="json", message="a line must hold one JSON object")
            continue
        rows.append(RawRow(row=number, data=data))
    return rows


def _read_json(*, text: str, name: str, errors: ErrorLog) -> list[RawRow]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(
            file=name,
            field="json",
            message=f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
        ) from None
    if not isinstance(data, list):
        raise _fail(file=name, field="json", message="the file must hold a JSON list of records")
    rows = []
    for number, record in enumerate(data, start=1):
        if not isinstance(record, dict):
            errors.add(row=number, field="json", message="a record must be a JSON object")
            continue
        rows.append(RawRow(row=number, data=record))
    return rows


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


def _read_csv(*, text: str, name: str, errors: ErrorLog) -> list[RawRow]:
    first_line = text.split("\n", 1)[0]
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_sniff_delimiter(first_line))
    try:
        header_cells = next(reader)
    except StopIteration:
        raise _fail(file=name, field="file", message="the file is empty") from None
    except csv.Error as exc:
        raise _fail(file=name, row=1, field="csv", message=str(exc)) from None
    columns = _header(cells=header_cells, name=name)
    rows = []
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
        rows.append(RawRow(row=number, data=data))
    return rows


def _cell(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str | int | float | bool):
        return value
    # Dates and times: their text, as the spreadsheet shows them.
    return str(value)


def _read_xlsx(*, path: Path, name: str, errors: ErrorLog) -> list[RawRow]:
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
        rows = []
        for number, cells in enumerate(lines, start=2):
            data = {
                column: _cell(value)
                for column, value in zip(columns, cells, strict=False)
                if column is not None and value is not None and value != ""
            }
            if data:
                rows.append(RawRow(row=number, data=data))
        return rows
    finally:
        workbook.close()


def read_mapping(*, path: Path, name: str) -> dict[str, str]:
    """The column renaming in the JSON file at ``path``: an object of file name -> our name.

    Raises ImportFailed (naming ``name``) when the file is not UTF-8 JSON holding an object of
    non-empty strings.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise _fail(file=name, field="mapping", message=f"cannot be read: {exc.strerror or exc}") from None
    try:
        mapping = json.loads(_decode(data=data, name=name))
    except json.JSONDecodeError as exc:
        raise _fail(
            file=name,
            field="mapping",
            message=f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
        ) from None
    return check_mapping(mapping=mapping, name=name)


def check_mapping(*, mapping: object, name: str) -> dict[str, str]:
    """``mapping`` if it is a dict of non-empty strings to non-empty strings; else ImportFailed."""
    if not isinstance(mapping, dict):
        raise _fail(
            file=name, field="mapping", message='must be a JSON object such as {"Question ID": "question_id"}'
        )
    problems = [
        RowError(file=name, row=None, field=f"mapping[{key!r}]", message="names must be non-empty strings")
        for key, value in mapping.items()
        if not (isinstance(key, str) and key.strip() and isinstance(value, str) and value.strip())
    ]
    if problems:
        raise ImportFailed(problems)
    return {key.strip(): value.strip() for key, value in mapping.items()}
