"""A workbook sent as it is written: openpyxl writes its short sheets (summaries, charts, styles),
and the rows of its long sheets (a campaign's units, its label history) are written here as the
worksheet XML openpyxl's write-only mode writes, straight into the zip, whose bytes go out as they
are made.

openpyxl builds a cell object and an XML element for every cell it writes: 20 s for the 1.6
million cells of a campaign of 50,000 units. Here a row is one string, built from the cells'
values; the workbook's bytes come in pieces of a few hundred kilobytes, the first within the time
openpyxl takes for the short sheets, so a download starts at once and memory stays flat whatever
the campaign's size.

A long sheet starts as an openpyxl sheet holding its header row (bold, frozen panes): its XML is
then cut at the end of that row, and the long rows go in between. Text cells are inline strings,
as openpyxl writes them, through :func:`text_value` (neutralised, characters XML cannot hold
dropped, cut at Excel's limit); numbers are numbers, with the column's number format; an empty or
non-finite value writes no cell.
"""

from __future__ import annotations

import datetime as dt
import io
import itertools
import math
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils import timezone
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.utils import get_column_letter
from openpyxl.utils.datetime import to_excel
from openpyxl.worksheet._write_only import WriteOnlyWorksheet

from annotation.spreadsheets import neutralise

EXCEL_TEXT_LIMIT = 32767
# Rows written between two pieces handed to the response: about 100 to 300 kB of XML, before
# compression, for the units sheet.
ROWS_PER_PIECE = 1000
# The rows of a sheet after its header: Excel opens no more than 1,048,576 rows of a sheet.
ROWS_PER_SHEET = 1_048_575
# Past this many rows a long sheet is written with zip64 sizes, as a sheet of 2 GiB or more needs
# (rows of 10 kB on average); below it, without them, which some versions of Excel ask to repair.
ZIP64_ROWS = 200_000


def text_value(value: Any) -> str:
    """What a text cell of every workbook holds: the text neutralised (never a formula), without
    the control characters XML cannot hold, cut at Excel's limit for a cell."""
    text = str(value)
    if not text.isprintable():  # a newline, a tab or a control character (rare: looked for only then)
        text = ILLEGAL_CHARACTERS_RE.sub("", text)
    return neutralise(text)[:EXCEL_TEXT_LIMIT]


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass
class LongSheet:
    """A sheet whose rows are written here (made by :func:`add_long_sheet`): ``worksheets`` are
    openpyxl's, each holding the header row, the first and the ones its rows continue on past
    Excel's limit; ``rows`` the values of the rows after the header, a cell per column;
    ``formats`` the number format of each column's numbers (None: Excel's General);
    ``rows_expected`` about how many rows there are."""

    worksheets: list[WriteOnlyWorksheet]
    rows: Iterable[Sequence[Any]]
    formats: Sequence[str | None]
    rows_expected: int


def add_long_sheet(
    workbook: Workbook,
    *,
    title: str,
    header: Callable[[WriteOnlyWorksheet], list[Any]],
    freeze: str,
    rows: Iterable[Sequence[Any]],
    formats: Sequence[str | None],
    rows_expected: int,
) -> LongSheet:
    """A long sheet added to ``workbook``: as many sheets as its ``rows_expected`` rows need
    (``title``, then ``title (2)`` and on past ``ROWS_PER_SHEET`` rows), each with the row
    ``header`` makes and its panes frozen at ``freeze``. The last takes whatever rows are left."""
    worksheets = []
    for number in range(1, max(1, math.ceil(rows_expected / ROWS_PER_SHEET)) + 1):
        worksheet = workbook.create_sheet(title if number == 1 else f"{title} ({number})")
        worksheet.freeze_panes = freeze
        worksheet.append(header(worksheet))
        worksheets.append(worksheet)
    return LongSheet(worksheets, rows, formats, rows_expected)


class _Pipe(io.RawIOBase):
    """Where the zip is written: bytes kept until taken. It cannot seek, so each entry of the zip
    is written with its sizes after its data, as streamed zips are."""

    def __init__(self) -> None:
        self._pieces: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._pieces.append(bytes(data))
        return len(data)

    def take(self) -> list[bytes]:
        """What was written since the last take, as one piece; none when nothing was."""
        data = b"".join(self._pieces)
        self._pieces.clear()
        return [data] if data else []


def _style_ids(workbook: Workbook, worksheet: WriteOnlyWorksheet, formats: Sequence[str | None]) -> list[str]:
    """The ``s`` attribute of each column's numbers: the workbook's style of that number format
    (registered now, so openpyxl writes it in the styles it saves)."""
    attributes = []
    for number_format in formats:
        if number_format is None:
            attributes.append("")
            continue
        styled = WriteOnlyCell(worksheet, value=0)
        styled.number_format = number_format
        attributes.append(f' s="{styled.style_id}"')
    return attributes


def _rows_xml(rows: Iterable[Sequence[Any]], styles: list[str]) -> Iterator[str]:
    """The XML of a sheet's ``rows`` from its second row on, a piece of ``ROWS_PER_PIECE`` rows at
    a time."""
    letters = [get_column_letter(column) for column in range(1, len(styles) + 1)]
    piece: list[str] = []
    for number, values in enumerate(rows, start=2):
        cells = [f'<row r="{number}">']
        for letter, style, value in zip(letters, styles, values, strict=True):
            kind = type(value)
            if value is None:
                continue
            if kind is int:
                cells.append(f'<c r="{letter}{number}"{style}><v>{value}</v></c>')
            elif kind is bool:
                cells.append(f'<c r="{letter}{number}" t="b"><v>{int(value)}</v></c>')
            elif isinstance(value, dt.datetime):
                naive = timezone.make_naive(value, dt.UTC) if value.tzinfo is not None else value
                cells.append(f'<c r="{letter}{number}"{style}><v>{to_excel(naive)!r}</v></c>')
            elif isinstance(value, int | float):  # a float, or a number of another type (numpy's)
                if math.isfinite(value):
                    cells.append(f'<c r="{letter}{number}"{style}><v>{value!r}</v></c>')
            else:
                text = _escaped(text_value(value))
                if text:
                    space = ' xml:space="preserve"' if text.strip() != text else ""
                    cells.append(f'<c r="{letter}{number}" t="inlineStr"><is><t{space}>{text}</t></is></c>')
        cells.append("</row>")
        piece.append("".join(cells))
        if len(piece) == ROWS_PER_PIECE:
            yield "".join(piece)
            piece.clear()
    if piece:
        yield "".join(piece)


def workbook_pieces(workbook: Workbook, long_sheets: Sequence[LongSheet]) -> Iterator[bytes]:
    """The XLSX file of ``workbook`` (write-only, every sheet added) with the rows of
    ``long_sheets``, in pieces as they are written. Joined, the pieces are the file."""
    styles = [_style_ids(workbook, sheet.worksheets[0], sheet.formats) for sheet in long_sheets]
    short = io.BytesIO()
    workbook.save(short)
    short.seek(0)
    # Each long sheet's rows read once, from its first worksheet to its last (openpyxl writes the
    # worksheets in the workbook's order).
    long_by_path: dict[str, tuple[Iterator[Sequence[Any]], list[str], bool, int]] = {}
    for sheet, style in zip(long_sheets, styles, strict=True):
        rows = iter(sheet.rows)
        for number, worksheet in enumerate(sheet.worksheets, start=1):
            last = number == len(sheet.worksheets)
            long_by_path[worksheet.path.lstrip("/")] = (rows, style, last, sheet.rows_expected)
    pipe = _Pipe()
    with (
        zipfile.ZipFile(short) as written,
        # zlib's default level: zlib's level 1 gave a file a fifth larger (4.3 MB against 3.6 at
        # 50k) for 15% less time.
        zipfile.ZipFile(pipe, "w", compression=zipfile.ZIP_DEFLATED) as sent,
    ):
        for info in written.infolist():
            found = long_by_path.get(info.filename)
            if found is None:
                sent.writestr(info, written.read(info), compress_type=zipfile.ZIP_DEFLATED)
                continue
            left, style, last, expected = found
            xml = written.read(info)
            head, end, tail = xml.partition(b"</sheetData>")
            if not end:
                raise ValueError(f"{info.filename}: no sheetData to write rows into")
            # A sheet its rows continue past takes a sheet's worth; the last one, what is left.
            part = left if last else itertools.islice(left, ROWS_PER_SHEET)
            zip64 = min(expected, ROWS_PER_SHEET) > ZIP64_ROWS
            # Named, not a ZipInfo: the entry then takes the zip's compression.
            with sent.open(info.filename, "w", force_zip64=zip64) as out:
                out.write(head)
                for piece in _rows_xml(part, style):
                    out.write(piece.encode())
                    yield from pipe.take()
                out.write(end + tail)
            yield from pipe.take()
    yield from pipe.take()
