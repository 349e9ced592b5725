"""Spreadsheet cells: text that would run as a formula is made inert, everything else is kept."""

from __future__ import annotations

import datetime as dt

import pytest

from annotation.spreadsheets import neutralise, neutralise_row


@pytest.mark.parametrize(
    "text",
    ['=HYPERLINK("http://evil","x")', "+1+1", "-2+3", "@SUM(A1)", "\t=1+1", "\r=1+1", "=", "-"],
)
def test_text_a_spreadsheet_reads_as_a_formula_gets_an_apostrophe(text):
    assert neutralise(text) == "'" + text


@pytest.mark.parametrize("text", ["Finance", "", " =not first", "'=already quoted", "Ressources humaines"])
def test_other_text_is_unchanged(text):
    assert neutralise(text) == text


@pytest.mark.parametrize("value", [-0.25, -3, 0, 1.5, None, True, dt.date(2026, 1, 1)])
def test_numbers_dates_and_empty_cells_stay_what_they_are(value):
    assert neutralise(value) is value


def test_a_row_is_neutralised_cell_by_cell():
    assert neutralise_row(["=cmd", -1.0, "IT", None]) == ["'=cmd", -1.0, "IT", None]
