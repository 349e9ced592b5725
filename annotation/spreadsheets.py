"""Cells for the spreadsheets the app writes (CSV and XLSX): text that cannot run as a formula.

Excel, LibreOffice and Google Sheets read a cell that starts with ``=``, ``+``, ``-`` or ``@``
(or a tab or carriage return before one of them) as a formula, even in a CSV. Themes, ids,
comments, judge names and LLM output all come from outside, so every text cell of every export
goes through :func:`neutralise`. Numbers, dates and empty cells are left as they are: a rate
stays a number an analyst can sum.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

# A cell starting with one of these is a formula (or may become one) for Excel and LibreOffice.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

T = TypeVar("T")


class Writable(Protocol):
    """Where CSV goes: an open text file, or an HttpResponse."""

    def write(self, text: str, /) -> object: ...


def neutralise(value: T) -> T | str:
    """``value`` itself unless it is text a spreadsheet would read as a formula; such text gets a
    leading apostrophe, the prefix spreadsheets themselves use for "this is text". Idempotent on
    anything that is not text; the apostrophe stays visible, so the cell is inert even after a
    round trip through another CSV."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def neutralise_row(values: list) -> list:
    """Each cell of a row through :func:`neutralise`."""
    return [neutralise(value) for value in values]
