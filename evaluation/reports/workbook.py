"""A report as an XLSX workbook for analysts: a summary of every criterion with where its numbers
come from, the automatic metrics, one sheet of estimates per criterion (with its chart), the
units and their labels, and the label history. Every text cell is written as text and
neutralised: an answer, a comment or an LLM's words never become a formula.

The workbook is written in openpyxl's write-only mode, its long sheets (units, label history) as
text straight into the file as it is sent (``long_sheets``): a campaign of a million units is
never held in memory, and its download starts at once.
"""

from __future__ import annotations

import datetime as dt
import importlib
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from django.utils import timezone
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.chart import BarChart, Reference
from openpyxl.chart.data_source import NumDataSource, NumRef
from openpyxl.chart.error_bar import ErrorBars
from openpyxl.styles import Font

from annotation.models import Campaign, Criterion, Label, Unit
from annotation.workflow import final_labels
from annotation.workflow.history import CSV_HEADER, history_rows
from evaluation.estimates.report import Report
from evaluation.estimates.small_themes import SmallThemes
from evaluation.models import Judge, Judgment
from evaluation.reports import long_sheets
from evaluation.reports.long_sheets import LongSheet, text_value
from evaluation.reports.read import Provenance
from evaluation.reports.tables import (
    COLUMNS,
    DECIMAL,
    HEADERS,
    INTEGER,
    PERCENT,
    SHRUNK_COLUMNS,
    SHRUNK_HEADERS,
    SOURCE_HEADERS,
    agreement_of,
    guidelines_text,
    prompt_text,
    report_groups,
    shrunk_rows,
    source_values,
)
from inference.numbers import finite

UNIT_CHUNK = 5000


_INDEX = {header: position for position, header in enumerate(HEADERS, start=1)}


def cell(ws, value: Any, number_format: str | None = None, bold: bool = False) -> Any:
    """What ``ws.append`` takes for one cell: text as a string cell, neutralised; a number with
    ``number_format``, or any bold value, as a styled cell; anything else (an empty cell, a plain
    number) as the bare value, which openpyxl writes the same without building a cell object for
    it and failing to bind one into its own."""
    if isinstance(value, float) and not math.isfinite(value):
        value = None
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = timezone.make_naive(value, dt.UTC)
    text = isinstance(value, str)
    if not text and not bold and (value is None or number_format is None):
        return value
    cell = WriteOnlyCell(ws, value=text_value(value) if text else value)
    if text:
        # Untrusted text (answers, LLM output) must never become a formula: a string cell, and
        # neutralised by text_value for the spreadsheets that re-read strings (and CSV round trips).
        cell.data_type = "s"
    if number_format and not text and value is not None:
        # An empty cell gets no format: unstyled, it is not written at all (a quarter of the
        # Units sheet's cells: the units no one labelled or judged on the criterion).
        cell.number_format = number_format
    if bold:
        cell.font = Font(bold=True)
    return cell


def header_cells(ws, headers: Sequence[str]) -> list[Any]:
    return [cell(ws, header, bold=True) for header in headers]


_SHEET_FORBIDDEN = re.compile(r"[\[\]:*?/\\]")


def sheet_title(name: str, taken: set[str]) -> str:
    base = _SHEET_FORBIDDEN.sub("-", name)[:28] or "criterion"
    title, n = base, 2
    while title.lower() in taken:
        title, n = f"{base[:25]} ({n})", n + 1
    taken.add(title.lower())
    return title


def summary_sheet(
    wb: Workbook,
    campaign: Campaign,
    reports: Sequence[Report],
    provenances: Sequence[Provenance | None],
    titles: Mapping[str, str] | None = None,
) -> None:
    """The overall figures of each report, one row each: the criterion's name, then its title
    (``titles``: name -> title, as stored; blank for a name it lacks), then the numbers."""
    titles = titles or {}
    ws = wb.create_sheet("Summary")
    ws.freeze_panes = "A4"
    ws.append([cell(ws, "Campaign", bold=True), cell(ws, campaign.name)])
    ws.append([cell(ws, "Generated", bold=True), cell(ws, timezone.now(), "yyyy-mm-dd hh:mm")])
    headers = [
        "criterion", "title", "level", "judge", "method", "alpha", "N", "n_human", "n_judge",
        "human_mean", "judge_mean", "ppi_mean", "ppi_lo", "ppi_hi", "kappa", "effective_n",
        "missing_judgments", "human_guidelines", "judge_prompt", *SOURCE_HEADERS,
    ]  # fmt: skip
    ws.append(header_cells(ws, headers))
    for report, provenance in zip(reports, provenances, strict=True):
        overall = report.overall
        ws.append(
            [
                cell(ws, report.criterion),
                cell(ws, titles.get(report.criterion, "")),
                cell(ws, report.level),
                cell(ws, report.judge),
                cell(ws, report.method),
                cell(ws, report.alpha, "0.00"),
                cell(ws, overall.size, INTEGER),
                cell(ws, overall.n_human, INTEGER),
                cell(ws, overall.n_judge, INTEGER),
                cell(ws, finite(overall.human.shown_mean), PERCENT),
                cell(ws, finite(overall.judge.shown_mean), PERCENT),
                cell(ws, finite(overall.ppi.shown_mean), PERCENT),
                cell(ws, finite(overall.ppi.shown_lo), PERCENT),
                cell(ws, finite(overall.ppi.shown_hi), PERCENT),
                cell(ws, agreement_of(overall, "kappa"), DECIMAL),
                cell(ws, finite(overall.effective_n), "0.0"),
                cell(ws, len(overall.missing_judgments), INTEGER),
                cell(ws, guidelines_text(report.versions)),
                cell(ws, prompt_text(report.versions)),
                *(cell(ws, value) for value in source_values(provenance)),
            ]
        )


def _flat(row: Any) -> dict[str, Any]:
    """A metrics row as flat columns; an interval pair ``ci`` becomes ``ci_lo`` and ``ci_hi``."""
    data = asdict(row) if is_dataclass(row) and not isinstance(row, type) else dict(row)
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, list | tuple) and len(value) == 2:
            flat[f"{key}_lo"], flat[f"{key}_hi"] = value
        elif isinstance(value, list | tuple | dict):
            flat[key] = str(value)
        else:
            flat[key] = value
    return flat


def metrics_sheet(wb: Workbook, campaign: Campaign) -> None:
    ws = wb.create_sheet("Automatic metrics")
    ws.freeze_panes = "A2"
    try:
        metrics = importlib.import_module("evaluation.measures.automatic")
        compute_metrics = metrics.compute_metrics
    except (ImportError, AttributeError):
        ws.append(header_cells(ws, ["note"]))
        ws.append([cell(ws, "Automatic metrics are not available in this installation.")])
        return
    results = list(compute_metrics(campaign=campaign))
    overall = getattr(metrics, "overall_metrics", None)
    if overall is not None:
        results += list(overall(rows=results))
    rows = [_flat(result) for result in results]
    headers: list[str] = []
    for row in rows:
        headers.extend(key for key in row if key not in headers)
    ws.append(header_cells(ws, headers or ["note"]))
    if not rows:
        ws.append([cell(ws, "No automatic metrics for this campaign.")])
    for row in rows:
        cells = []
        for key in headers:
            value = row.get(key)
            number_format = None
            if isinstance(value, float):
                number_format = PERCENT if key in ("rate", "ci_lo", "ci_hi") else DECIMAL
            elif isinstance(value, int) and not isinstance(value, bool):
                number_format = INTEGER
            cells.append(cell(ws, value, number_format))
        ws.append(cells)


def _criterion_sheet(
    wb: Workbook, report: Report, taken: set[str], small: SmallThemes | None, title: str
) -> None:
    ws = wb.create_sheet(sheet_title(report.criterion, taken))
    groups = report_groups(report=report)
    ws.freeze_panes = "B2"
    ws.append(header_cells(ws, [*HEADERS, *(SHRUNK_HEADERS if small is not None else [])]))
    for group, row in zip(groups, shrunk_rows(report=report, small=small), strict=True):
        cells = [cell(ws, value(group), fmt) for _, value, fmt in COLUMNS]
        if small is not None:
            cells += [cell(ws, value(row), fmt) for _, value, fmt in SHRUNK_COLUMNS]
        ws.append(cells)
    # The chart shows themes and overall (not the difficulty cells), with PPI++ error bars.
    rows = [row for row, group in enumerate(groups, start=2) if group.difficulty is None]
    chart = BarChart()
    chart.type = "col"
    chart.title = f"{title}: PPI++ estimate per theme ({100 * (1 - report.alpha):g}% CI)"
    chart.y_axis.title = "rate"
    chart.y_axis.number_format = PERCENT
    chart.y_axis.scaling.min = 0
    chart.y_axis.scaling.max = 1
    last = max(rows) if rows else 2
    mean_col = _INDEX["ppi_mean"]
    chart.add_data(Reference(ws, min_col=mean_col, min_row=1, max_row=last), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=_INDEX["theme"], min_row=2, max_row=last))

    def ref(column: str) -> NumDataSource:
        return NumDataSource(numRef=NumRef(f=Reference(ws, min_col=_INDEX[column], min_row=2, max_row=last)))

    chart.series[0].errBars = ErrorBars(
        errDir="y", errBarType="both", errValType="cust", plus=ref("ppi_plus"), minus=ref("ppi_minus")
    )
    chart.width, chart.height = 22, 11
    ws.add_chart(chart, f"A{len(groups) + 4}")


def units_sheet(wb: Workbook, campaign: Campaign, criteria: list[Criterion]) -> LongSheet:
    """Every unit, its text, its final human label and each judge's label per criterion of
    ``criteria``: a long sheet, its rows read as the workbook is written (more than one sheet
    past Excel's 1,048,576 rows)."""
    judges = list(Judge.objects.filter(campaign=campaign).order_by("name"))
    columns: list[tuple[Criterion, Judge | None]] = [(criterion, None) for criterion in criteria]
    columns += [(criterion, judge) for criterion in criteria for judge in judges]
    headers = ["unit", "level", "answer", "sentence", "theme", "difficulty", "text", "source"]
    headers += [f"{c.name}: human" if j is None else f"{c.name}: {j.name}" for c, j in columns]
    return long_sheets.add_long_sheet(
        wb,
        title="Units",
        header=lambda ws: header_cells(ws, headers),
        freeze="B2",
        rows=_unit_rows(campaign, criteria, columns),
        formats=[None] * 8 + [INTEGER] * len(columns),
        rows_expected=Unit.objects.filter(campaign=campaign).count(),
    )


def _unit_rows(
    campaign: Campaign, criteria: list[Criterion], columns: list[tuple[Criterion, Judge | None]]
) -> Iterator[list[Any]]:
    finals = {criterion.pk: final_labels(criterion=criterion) for criterion in criteria}
    fields = (
        "id",
        "level",
        "answer__external_id",
        "sentence__position",
        "theme",
        "difficulty",
    )
    last = 0
    while True:
        chunk = list(
            Unit.objects.filter(campaign=campaign, pk__gt=last)
            .order_by("pk")
            .values_list(*fields, "answer__text", "sentence__text", "chunk__external_id")[:UNIT_CHUNK]
        )
        if not chunk:
            break
        first, last = chunk[0][0], chunk[-1][0]
        judged: dict[tuple[int, int, int], int | None] = {
            (unit_id, criterion_id, judge_id): value
            for unit_id, criterion_id, judge_id, value in Judgment.objects.filter(
                unit_id__gte=first,
                unit_id__lte=last,
                criterion__in=criteria,
                status=Judgment.Status.OK,
            ).values_list("unit_id", "criterion_id", "judge_id", "value")
        }
        wanted = [(criterion.pk, None if judge is None else judge.pk) for criterion, judge in columns]
        for unit_id, level, answer, position, theme, difficulty, answer_text, sentence_text, source in chunk:
            text = answer_text if level == "answer" else sentence_text
            row = [unit_id, level, answer, position, theme, difficulty, text, source]
            for criterion_id, judge_id in wanted:
                if judge_id is None:
                    row.append(finals[criterion_id].get(unit_id))
                else:
                    row.append(judged.get((unit_id, criterion_id, judge_id)))
            yield row


def history_sheet(wb: Workbook, campaign: Campaign) -> LongSheet:
    """The label history as its CSV gives it (``annotation.workflow.history``), one row per label
    row, oldest first: a long sheet, its rows read as the workbook is written."""
    formats = {"label_id": INTEGER, "time_utc": "yyyy-mm-dd hh:mm:ss", "value": INTEGER, "replaces": INTEGER}
    return long_sheets.add_long_sheet(
        wb,
        title="Label history",
        header=lambda ws: header_cells(ws, CSV_HEADER),
        freeze="A2",
        rows=history_rows(campaign=campaign),
        formats=[formats.get(name) for name in CSV_HEADER],
        rows_expected=Label.objects.filter(criterion__campaign=campaign).count(),
    )


def workbook_pieces(
    *,
    campaign: Campaign,
    criteria_reports: Sequence[Report],
    provenances: Sequence[Provenance | None] | None = None,
    shrinkages: Sequence[SmallThemes | None] | None = None,
) -> Iterator[bytes]:
    """The campaign's workbook, in pieces as it is written (``long_sheets``): joined, the XLSX file.

    ``provenances`` says, per report, where its numbers come from (a snapshot or a computation,
    as of when: the Summary's last columns); None for reports computed now. ``shrinkages``: per
    report, its shrinkage toward the judge (the ``SHRUNK_HEADERS`` columns of its sheet), or
    None. The other sheets (metrics, units, label history) are always read as the workbook is
    written.

    Sheets: Summary (overall figures per criterion), Automatic metrics (or a note when the
    metrics module is absent), one sheet per report (estimates and agreement per theme and
    overall, a bar chart with the PPI++ intervals as error bars), Units (every unit, its text,
    final human label and each judge's label per reported criterion) and Label history (every
    human label row). Numbers are numbers with formats, header rows are frozen.
    """
    wb = Workbook(write_only=True)
    taken = {"summary", "automatic metrics", "units", "label history"}
    names = list(dict.fromkeys(report.criterion for report in criteria_reports))
    by_name = {c.name: c for c in Criterion.objects.filter(campaign=campaign, name__in=names)}
    titles = {name: criterion.title for name, criterion in by_name.items()}
    summary_sheet(wb, campaign, criteria_reports, provenances or [None] * len(criteria_reports), titles)
    metrics_sheet(wb, campaign)
    for report, small in zip(criteria_reports, shrinkages or [None] * len(criteria_reports), strict=True):
        _criterion_sheet(wb, report, taken, small, titles.get(report.criterion, report.criterion))
    units = units_sheet(wb, campaign, [by_name[name] for name in names if name in by_name])
    history = history_sheet(wb, campaign)
    return long_sheets.workbook_pieces(wb, [units, history])


def build_workbook(
    *,
    campaign: Campaign,
    criteria_reports: Sequence[Report],
    path_or_buffer: Any,
    provenances: Sequence[Provenance | None] | None = None,
    shrinkages: Sequence[SmallThemes | None] | None = None,
) -> None:
    """:func:`workbook_pieces` written to ``path_or_buffer`` (a path or a binary file object)."""
    pieces = workbook_pieces(
        campaign=campaign, criteria_reports=criteria_reports, provenances=provenances, shrinkages=shrinkages
    )
    write_pieces(pieces, path_or_buffer)


def write_pieces(pieces: Iterable[bytes], path_or_buffer: Any) -> None:
    """A workbook's pieces written to ``path_or_buffer`` (a path or a binary file object)."""
    if isinstance(path_or_buffer, str | Path):
        with open(path_or_buffer, "wb") as sink:
            sink.writelines(pieces)
    else:
        path_or_buffer.writelines(pieces)
