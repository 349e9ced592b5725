"""A categorical criterion's report as files: CSV rows per category or group and theme, workbook
sheets (estimates, confusion matrices) and a text table. The columns of each row are a binary
report's (``evaluation.reports.tables.COLUMNS``), for the indicator of its category or group."""

from __future__ import annotations

import csv
import dataclasses
import math
from collections.abc import Iterator

from openpyxl import Workbook

from annotation.models import Campaign, Criterion
from annotation.spreadsheets import Writable, neutralise_row
from evaluation.estimates.categorical import CategoricalReport, Confusion
from evaluation.estimates.report import Report
from evaluation.reports import long_sheets, tables, workbook
from inference.numbers import finite

CATEGORY_HEADERS = ["category", "category_kind", "category_values"]


def indicator_reports(*, report: CategoricalReport) -> list[Report]:
    """One binary report per category and group, named ``<criterion>: <category or group>``
    (what the workbook's Summary lists, one row each)."""
    return [
        dataclasses.replace(item.report, criterion=f"{report.criterion}: {item.indicator.name}")
        for item in report.estimates
    ]


def write_csv(*, report: CategoricalReport, stream: Writable) -> None:
    """One row per category or group and per theme (then theme x difficulty cells, then
    overall): the criterion, the judge, alpha, the texts the numbers rest on, where the numbers
    come from (computed now), the category or group (``CATEGORY_HEADERS``: name, kind, its
    values separated by spaces) and a binary report's columns (``tables.HEADERS``) for its
    indicator. Rates are fractions."""
    writer = csv.writer(stream)
    writer.writerow(
        [
            *tables.REPORT_HEADERS,
            *CATEGORY_HEADERS,
            *tables.HEADERS,
        ]
    )
    texts = [
        tables.guidelines_text(report.versions),
        tables.prompt_text(report.versions),
        *tables.source_values(None),
    ]
    for item in report.estimates:
        named = [
            item.indicator.name,
            item.indicator.kind,
            " ".join(str(v) for v in sorted(item.indicator.values)),
        ]
        for group in tables.report_groups(report=item.report):
            values = [value(group) for _, value, _ in tables.COLUMNS]
            writer.writerow(
                neutralise_row(
                    [
                        report.criterion,
                        report.judge,
                        report.alpha,
                        *texts,
                        *named,
                        *("" if v is None else v for v in values),
                    ]
                )
            )


def add_sheets(wb: Workbook, report: CategoricalReport, taken: set[str]) -> None:
    """Two sheets: the estimates (a row per category or group and theme) and the confusion
    matrices (human rows, judge columns) per theme and overall, with agreement and kappa."""
    ws = wb.create_sheet(workbook.sheet_title(report.criterion, taken))
    ws.freeze_panes = "D2"
    ws.append(workbook.header_cells(ws, [*CATEGORY_HEADERS, *tables.HEADERS]))
    for item in report.estimates:
        values = " ".join(str(v) for v in sorted(item.indicator.values))
        for group in tables.report_groups(report=item.report):
            ws.append(
                [
                    workbook.cell(ws, item.indicator.name),
                    workbook.cell(ws, item.indicator.kind),
                    workbook.cell(ws, values),
                    *(workbook.cell(ws, value(group), fmt) for _, value, fmt in tables.COLUMNS),
                ]
            )
    cs = wb.create_sheet(workbook.sheet_title(f"{report.criterion} confusion", taken))
    names = {category.value: category.name for category in report.categories}
    for confusion in report.confusion:
        cs.append(
            [
                workbook.cell(cs, confusion.theme, bold=True),
                workbook.cell(cs, "n"),
                workbook.cell(cs, confusion.n, tables.INTEGER),
                workbook.cell(cs, "observed_agreement"),
                workbook.cell(cs, finite(confusion.observed), tables.PERCENT),
                workbook.cell(cs, "kappa"),
                workbook.cell(cs, finite(confusion.kappa), tables.DECIMAL),
            ]
        )
        cs.append(workbook.header_cells(cs, ["human \\ judge", *(names[v] for v in confusion.values)]))
        for value, row in zip(confusion.values, confusion.matrix, strict=True):
            cs.append([workbook.cell(cs, names[value]), *(workbook.cell(cs, n, tables.INTEGER) for n in row)])
        cs.append([])


def table_lines(*, report: CategoricalReport) -> list[str]:
    """The report as text: a binary table per category and group, then the confusion matrices."""
    lines: list[str] = []
    for item, named in zip(report.estimates, indicator_reports(report=report), strict=True):
        kind = "category" if item.indicator.kind == "category" else "group"
        values = ", ".join(str(v) for v in sorted(item.indicator.values))
        lines += [f"{kind} {item.indicator.name} ({values}): {item.indicator.title}"]
        lines += tables.table_lines(report=named)[:-1]
        lines.append("")
    names = {category.value: category.name for category in report.categories}
    for confusion in report.confusion:
        lines += confusion_lines(confusion=confusion, names=names)
    lines.append(
        f"human labels under guidelines {tables.guidelines_text(report.versions)}; "
        f"judge prompt {tables.prompt_text(report.versions)}"
    )
    return lines


def confusion_lines(*, confusion: Confusion, names: dict[int, str]) -> list[str]:
    """One confusion matrix as text: human rows, judge columns (by value)."""
    kappa = "-" if not math.isfinite(confusion.kappa) else f"{confusion.kappa:.2f}"
    observed = "-" if not math.isfinite(confusion.observed) else f"{100 * confusion.observed:.1f}%"
    lines = [
        f"confusion {confusion.theme}: n {confusion.n}, agreement {observed}, kappa {kappa} "
        "(rows human, columns judge)",
        f"{'':<24}" + "".join(f"{value:>6}" for value in confusion.values),
    ]
    for value, row in zip(confusion.values, confusion.matrix, strict=True):
        lines.append(f"{f'{value} {names[value]}'[:24]:<24}" + "".join(f"{n:>6}" for n in row))
    lines.append("")
    return lines


def workbook_pieces(*, campaign: Campaign, report: CategoricalReport) -> Iterator[bytes]:
    """The campaign's workbook for a categorical criterion, as ``workbook.workbook_pieces`` makes
    it for a binary one: Summary (one row per category and group, overall), Automatic metrics,
    the estimates and confusion sheets (``add_sheets``), Units (the final human label and the
    judge's label are category values) and Label history. Numbers computed now. In pieces as
    it is written (``long_sheets``): joined, the XLSX file."""
    wb = Workbook(write_only=True)
    taken = {"summary", "automatic metrics", "units", "label history"}
    named = indicator_reports(report=report)
    criteria = list(Criterion.objects.filter(campaign=campaign, name=report.criterion))
    title = criteria[0].title if criteria else report.criterion
    titles = {
        named_report.criterion: f"{title}: {item.indicator.title}"
        for named_report, item in zip(named, report.estimates, strict=True)
    }
    workbook.summary_sheet(wb, campaign, named, [None] * len(named), titles)
    workbook.metrics_sheet(wb, campaign)
    add_sheets(wb, report, taken)
    units = workbook.units_sheet(wb, campaign, criteria)
    history = workbook.history_sheet(wb, campaign)
    return long_sheets.workbook_pieces(wb, [units, history])
