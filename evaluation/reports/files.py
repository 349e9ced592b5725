"""A report read (``read.ShownReport``) as a file for people: its name, its workbook, its CSV, its
text table and its PDF, each written by the writer of its kind (one rate per theme: ``workbook``
and ``tables``; categories: ``categorical_files``; the PDF: ``pdf``, both kinds). The report
page's downloads and the ``report`` command both write through here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.utils.text import slugify

from annotation.spreadsheets import Writable
from evaluation.estimates.categorical import CategoricalReport
from evaluation.reports import categorical_files, pdf, tables, workbook
from evaluation.reports.read import ShownReport
from evaluation.reports.summary import VersionChange


def filename(*, shown: ShownReport, extension: str) -> str:
    """``<campaign>-<criterion>-<judge>-<method>.<extension>``."""
    report = shown.report
    campaign = shown.request.criterion.campaign
    return f"{campaign.slug}-{slugify(report.criterion)}-{slugify(report.judge)}-{report.method}.{extension}"


def workbook_pieces(*, shown: ShownReport) -> Iterator[bytes]:
    """The report's workbook, with where its numbers come from in its Summary, in pieces as it is
    written: joined, the XLSX file. Its short sheets are written before this returns, its long
    ones (units, label history) as the pieces are taken."""
    campaign = shown.request.criterion.campaign
    if isinstance(shown.report, CategoricalReport):
        return categorical_files.workbook_pieces(campaign=campaign, report=shown.report)
    return workbook.workbook_pieces(
        campaign=campaign,
        criteria_reports=[shown.report],
        provenances=[shown.provenance],
        shrinkages=[shown.small_themes],
    )


def write_workbook(*, shown: ShownReport, sink: Any) -> None:
    """The report's workbook into ``sink`` (a path or a binary buffer)."""
    workbook.write_pieces(workbook_pieces(shown=shown), sink)


def write_csv(*, shown: ShownReport, stream: Writable) -> None:
    """The report's estimates table as CSV into ``stream``, with where its numbers come from."""
    if isinstance(shown.report, CategoricalReport):
        categorical_files.write_csv(report=shown.report, stream=stream)
        return
    tables.write_csv(
        report=shown.report, stream=stream, provenance=shown.provenance, small=shown.small_themes
    )


def text_lines(*, shown: ShownReport) -> list[str]:
    """The report as the command's plain-text table, then where its numbers come from."""
    if isinstance(shown.report, CategoricalReport):
        lines = categorical_files.table_lines(report=shown.report)
    else:
        lines = tables.table_lines(report=shown.report, small=shown.small_themes)
    if shown.combined is not None:
        lines = [*lines, "", *tables.combined_lines(report=shown.combined)]
    return [*lines, f"estimates: {shown.provenance.describe()}"]


def write_pdf(
    *,
    shown: ShownReport,
    sink: Any,
    target: float,
    version_change: VersionChange | None = None,
    calibration: dict[str, Any] | None = None,
    metrics: Any = None,
) -> pdf.StaticFilesOnly:
    """The report as a PDF into ``sink`` (a binary buffer), in the active language: the report
    page's figures (the planner at ``target``), with the change against the previous version, the
    judge's calibration and the automatic metrics when given; the fetcher that drew it."""
    return pdf.write_pdf(
        sink=sink,
        shown=shown,
        target=target,
        version_change=version_change,
        calibration=calibration,
        metrics=metrics,
    )
