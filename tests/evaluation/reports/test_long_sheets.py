"""The workbook's long sheets, written as text into a workbook sent as it is written
(``evaluation.reports.long_sheets``): read back, their cells are what openpyxl's own cells give."""

from __future__ import annotations

import datetime as dt
import io
import math
import random
import zipfile
from datetime import UTC

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openpyxl import Workbook, load_workbook

from evaluation.reports import long_sheets
from evaluation.reports.long_sheets import EXCEL_TEXT_LIMIT, LongSheet, add_long_sheet, workbook_pieces
from evaluation.reports.workbook import cell, header_cells

HEADERS = ["text", "number", "when"]
FORMATS = [None, "0", "yyyy-mm-dd hh:mm:ss"]


def _long(rows: list[list], *, rows_expected: int | None = None) -> bytes:
    wb = Workbook(write_only=True)
    sheet = _sheet(wb, iter(rows), len(rows) if rows_expected is None else rows_expected)
    return b"".join(workbook_pieces(wb, [sheet]))


def _sheet(wb: Workbook, rows, rows_expected: int) -> LongSheet:
    return add_long_sheet(
        wb,
        title="Long",
        header=lambda ws: header_cells(ws, HEADERS),
        freeze="A2",
        rows=rows,
        formats=FORMATS,
        rows_expected=rows_expected,
    )


def _by_openpyxl(rows: list[list]) -> bytes:
    """The same rows, every cell built by openpyxl (the workbook's ``cell``)."""
    wb = Workbook(write_only=True)
    ws = wb.create_sheet("Long")
    ws.freeze_panes = "A2"
    ws.append(header_cells(ws, HEADERS))
    for row in rows:
        ws.append([cell(ws, value, fmt) for value, fmt in zip(row, FORMATS, strict=True)])
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


def _cells(content: bytes, loose: bool = False) -> list[list[tuple]]:
    ws = load_workbook(io.BytesIO(content))["Long"]
    assert ws.freeze_panes == "A2"
    # An empty cell is empty, whatever type its XML names (openpyxl names an empty text's), and
    # a row of empty cells a blank row (openpyxl writes some, a long sheet none).
    # ``loose``: numbers equal to 14 significant digits (openpyxl writes 16, a long sheet every
    # digit; a whole float comes back as an integer from one, a float from the other), times to
    # the millisecond.
    rows = [[_cell(c, loose) if c.value is not None else None for c in row] for row in ws.iter_rows()]
    return [row for row in rows if any(row)]


class _Near:
    """A time equal to any within a millisecond (each writer rounds the serial number its own way)."""

    def __init__(self, value: dt.datetime) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dt.datetime) and abs(other - self.value) <= dt.timedelta(milliseconds=1)

    def __repr__(self) -> str:
        return f"~{self.value!r}"


def _cell(c, loose: bool) -> tuple:
    value = c.value
    if loose and isinstance(value, int | float) and not isinstance(value, bool):
        value = pytest.approx(value, rel=1e-14)
    elif loose and isinstance(value, dt.datetime):
        value = _Near(value)
    return value, c.data_type, c.number_format, c.font.b


values = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.integers(min_value=-(2**53), max_value=2**53),
    # Not up to the largest float: openpyxl writes 16 digits, and 1.797693134862316e308 reads as inf.
    st.floats(min_value=-1e300, max_value=1e300),
    st.sampled_from([math.nan, math.inf, -math.inf]),
)
times = st.one_of(
    st.none(),
    st.datetimes(
        min_value=dt.datetime(1901, 1, 1), max_value=dt.datetime(2999, 1, 1), timezones=st.just(UTC)
    ),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(values, values, times), max_size=8))
def test_long_rows_read_back_as_the_cells_openpyxl_writes(rows):
    rows = [list(row) for row in rows]
    assert _cells(_long(rows)) == _cells(_by_openpyxl(rows), loose=True)


def test_hostile_and_odd_texts_read_back_inert_cut_and_whole():
    rows = [
        ['=HYPERLINK("http://evil")\x07', 1, None],
        ["  a <b> & 'c'  ", None, None],
        ["x" * (EXCEL_TEXT_LIMIT + 10), 2.5, None],
        ["ligne une\nligne deux\tfin", math.nan, dt.datetime(2026, 12, 6, 17, 30, tzinfo=dt.UTC)],
    ]
    read = load_workbook(io.BytesIO(_long(rows)))["Long"]
    got = [[c.value for c in row] for row in read.iter_rows(min_row=2)]
    assert got == [
        ['\'=HYPERLINK("http://evil")', 1, None],
        ["  a <b> & 'c'  ", None, None],
        ["x" * EXCEL_TEXT_LIMIT, 2.5, None],
        ["ligne une\nligne deux\tfin", None, dt.datetime(2026, 12, 6, 17, 30)],
    ]
    assert read["C5"].number_format == "yyyy-mm-dd hh:mm:ss" and read["B2"].number_format == "0"
    assert read["A2"].data_type == "s" and read["A1"].font.b


def test_the_file_comes_in_pieces_while_its_rows_are_read(monkeypatch):
    monkeypatch.setattr(long_sheets, "ROWS_PER_PIECE", 10)
    pulled = 0
    noise = random.Random(0)

    def rows():
        nonlocal pulled
        for number in range(95):
            pulled += 1
            # Text that does not compress: zlib hands out its output as its input comes.
            yield [noise.randbytes(1000).hex(), number, None]

    wb = Workbook(write_only=True)
    pieces = workbook_pieces(wb, [_sheet(wb, rows(), 95)])
    sent = [next(pieces) for _ in range(3)]
    # Three pieces out before the rows are all read (zlib keeps up to a few dozen kB back).
    assert all(sent) and pulled <= 60
    rest = list(pieces)
    assert pulled == 95 and len(rest) >= 3 and all(rest)
    content = b"".join(sent + rest)
    with zipfile.ZipFile(io.BytesIO(content)) as written:
        assert written.testzip() is None
    read = load_workbook(io.BytesIO(content))["Long"]
    assert [c.value for c in read[96]][1:] == [94, None] and read.max_row == 96


@pytest.mark.parametrize("expected, zip64", [(10, False), (long_sheets.ZIP64_ROWS + 1, True)])
def test_a_sheet_expected_past_zip64_rows_is_written_with_zip64_sizes(expected, zip64):
    rows = [["a", n, None] for n in range(20)]
    content = _long(rows, rows_expected=expected)
    with zipfile.ZipFile(io.BytesIO(content)) as written:
        assert written.testzip() is None
        sheet = written.getinfo("xl/worksheets/sheet1.xml")
        local = content[sheet.header_offset : sheet.header_offset + 30]
    # The version needed to extract, in the entry's own header: 4.5 for zip64, 2.0 without.
    assert int.from_bytes(local[4:6], "little") == (45 if zip64 else 20)
    assert _cells(content) == _cells(_by_openpyxl(rows))


def test_rows_past_a_sheets_limit_continue_on_sheets_of_their_own(monkeypatch):
    monkeypatch.setattr(long_sheets, "ROWS_PER_SHEET", 10)
    rows = [[f"row {n}", n, None] for n in range(25)]
    wb = Workbook(write_only=True)
    first = _sheet(wb, iter(rows), 25)
    wb.create_sheet("After").append(["after"])
    book = load_workbook(io.BytesIO(b"".join(workbook_pieces(wb, [first]))))
    assert book.sheetnames == ["Long", "Long (2)", "Long (3)", "After"]
    for title, numbers in (("Long", range(10)), ("Long (2)", range(10, 20)), ("Long (3)", range(20, 25))):
        ws = book[title]
        assert [c.value for c in ws[1]] == HEADERS and ws[1][0].font.b and ws.freeze_panes == "A2"
        assert [row[1] for row in ws.iter_rows(min_row=2, values_only=True)] == list(numbers)
    assert [c.value for c in book["After"][1]] == ["after"]


def test_more_rows_than_expected_go_on_the_last_sheet(monkeypatch):
    monkeypatch.setattr(long_sheets, "ROWS_PER_SHEET", 10)
    rows = [[f"row {n}", n, None] for n in range(25)]
    book = load_workbook(io.BytesIO(_long(rows, rows_expected=12)))
    assert book.sheetnames == ["Long", "Long (2)"]
    assert [row[1] for row in book["Long (2)"].iter_rows(min_row=2, values_only=True)] == list(range(10, 25))
