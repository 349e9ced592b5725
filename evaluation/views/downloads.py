"""Downloads of a report: the PDF, the Excel workbook, the CSV table and the JSON, with the numbers
the report page shows (``evaluation.reports.read``); the same numbers with ARES's result keys; the
criterion's units, labels and the report's judge for Label Studio, Argilla and as Parquet.

Managers and analysts only, like the report itself.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotation.access import AppRequest
from annotation.models import Campaign, Criterion
from evaluation.errors import EstimateError
from evaluation.estimates.categorical import CategoricalReport
from evaluation.forms.reports import ReportForm, ReportParams
from evaluation.interchange import exporting
from evaluation.models import Judge
from evaluation.pages.overview import automatic_metrics_sections
from evaluation.reports import files, read, summary
from evaluation.views.compare import comparable_campaigns
from evaluation.views.reports import criterion_page

R = TypeVar("R", bound=HttpResponseBase)

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
# A workbook larger than this is sent as it is written, without its length.
WHOLE_BYTES = 256 * 1024


def _read(
    request: AppRequest, slug: str, criterion: str
) -> tuple[read.ShownReport, ReportParams] | HttpResponse:
    """The report a download holds, read as the report page reads it (403 or 404 as the report),
    with the page's parameters, or a 400 naming the parameter at fault, or saying which judges
    to choose among."""
    _campaign, _roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    form = ReportForm(request.GET, criterion=criterion_obj, judges=judges)
    valid = form.is_valid()
    params = form.params()
    if not valid or params.request is None:
        message = "; ".join(form.messages()) or params.no_judge
        return _refusal(message)
    try:
        return read.read_report(params.request), params
    except EstimateError as error:
        return _refusal(str(error))


def _shown_report(request: AppRequest, slug: str, criterion: str) -> read.ShownReport | HttpResponse:
    """:func:`_read`'s report alone."""
    found = _read(request, slug, criterion)
    return found if isinstance(found, HttpResponse) else found[0]


def _refusal(message: str) -> HttpResponse:
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


def _one_rate_per_theme(shown: read.ShownReport) -> HttpResponse | None:
    if isinstance(shown.report, CategoricalReport):
        return _refusal(
            _("This format holds one rate per theme; a criterion with categories has one per category.")
        )
    return None


@login_required
@require_GET
def export_xlsx(request: AppRequest, slug: str, criterion: str) -> HttpResponseBase:
    """The report as an Excel workbook (summary, automatic metrics, estimates with a chart,
    units, label history), with the report's GET parameters; its estimates are the ones the
    report page shows, and the Summary says where they come from. A criterion with categories:
    its estimates and confusion sheets (``evaluation.reports.categorical_files``)."""
    shown = _shown_report(request, slug, criterion)
    if isinstance(shown, HttpResponse):
        return shown
    name = files.filename(shown=shown, extension="xlsx")
    pieces = files.workbook_pieces(shown=shown)
    # A small workbook goes whole, with its length; a large one as it is written, from its first
    # WHOLE_BYTES on: the download starts at once and memory stays flat (a campaign of a million
    # units takes no more than the demo's).
    head: list[bytes] = []
    size = 0
    for piece in pieces:
        head.append(piece)
        size += len(piece)
        if size > WHOLE_BYTES:
            break
    else:
        return _attachment(b"".join(head), content_type=XLSX, name=name)

    def sent() -> Iterator[bytes]:
        yield b"".join(head)
        yield from pieces

    return _named(StreamingHttpResponse(sent(), content_type=XLSX), name=name)


@login_required
@require_GET
def export_csv(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The report's estimates table as CSV, with the report's GET parameters; the estimates the
    report page shows, with columns saying where they come from; a row per category or group
    and theme for a criterion with categories."""
    shown = _shown_report(request, slug, criterion)
    if isinstance(shown, HttpResponse):
        return shown
    stream = io.StringIO()
    files.write_csv(shown=shown, stream=stream)
    name = files.filename(shown=shown, extension="csv")
    return _attachment(stream.getvalue(), content_type="text/csv; charset=utf-8", name=name)


@login_required
@require_GET
def export_json(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The report as JSON, the one every road writes (``read.report_as_data``: the command's and
    the API's), with the report's GET parameters."""
    shown = _shown_report(request, slug, criterion)
    if isinstance(shown, HttpResponse):
        return shown
    text = json.dumps(read.report_as_data(shown), indent=2, ensure_ascii=False)
    name = files.filename(shown=shown, extension="json")
    return _attachment(text, content_type="application/json; charset=utf-8", name=name)


@login_required
@require_GET
def export_pdf(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The report as a PDF in the reader's language, with the report's GET parameters: the
    figures the report page shows (``read.read_report``), the change against the previous
    version, the judge's calibration and the automatic metrics (the sections the page loads
    after it), and a methods paragraph written from the report's parameters
    (``evaluation.reports.pdf``). Managers and analysts only, like the report."""
    found = _read(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    shown, params = found
    campaign, criterion_obj = shown.request.criterion.campaign, shown.request.criterion
    extras: dict[str, Any] = {"metrics": automatic_metrics_sections(campaign=campaign)}
    if not isinstance(shown.report, CategoricalReport):
        extras["version_change"] = summary.change_against_previous(
            campaign=campaign,
            criterion=criterion_obj,
            judge=shown.request.judge,
            method=shown.request.method,
            alpha=shown.request.alpha,
            candidates=comparable_campaigns(request, campaign),
        )
        if shown.request.judge.kind != Judge.Kind.IMPORTED:
            extras["calibration"] = summary.calibration_context(
                criterion=criterion_obj, judge=shown.request.judge
            )
    buffer = io.BytesIO()
    files.write_pdf(shown=shown, sink=buffer, target=params.target, **extras)
    return _attachment(
        buffer.getvalue(), content_type="application/pdf", name=files.filename(shown=shown, extension="pdf")
    )


def _attachment(content: bytes | str, *, content_type: str, name: str) -> HttpResponse:
    return _named(HttpResponse(content, content_type=content_type), name=name)


def _named(response: R, *, name: str) -> R:
    """``response`` as a download named ``name``."""
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def measure_file(
    *, name: str, extension: str, rows: Callable[[], Iterable[list]], data: Callable[[], Any]
) -> HttpResponse:
    """A measure page's download: ``rows()`` as CSV (its cells neutralised by the rows' writer)
    or ``data()`` as indented JSON, as ``name.extension`` (only the one asked for is computed)."""
    if extension == "csv":
        stream = io.StringIO()
        csv.writer(stream).writerows(rows())
        return _attachment(stream.getvalue(), content_type="text/csv; charset=utf-8", name=f"{name}.csv")
    text = json.dumps(data(), indent=2, ensure_ascii=False)
    return _attachment(text, content_type="application/json; charset=utf-8", name=f"{name}.json")


def _units_export(
    request: AppRequest, slug: str, criterion: str
) -> tuple[Campaign, Criterion, Judge | None] | HttpResponse:
    """The campaign, criterion and judge of an export of the criterion's units (403 or 404 as
    the report; 400 for a bad parameter). No judge named and none to default to: the units go
    out with their human labels only."""
    campaign, _roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    form = ReportForm(request.GET, criterion=criterion_obj, judges=judges)
    if not form.is_valid():
        return _refusal("; ".join(form.messages()))
    return campaign, criterion_obj, form.params().judge


def _name(campaign: Campaign, criterion: Criterion, fmt: str) -> str:
    return f"{campaign.slug}-{criterion.name}.{exporting.EXTENSIONS[fmt]}"


@login_required
@require_GET
def export_label_studio(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The criterion's units as Label Studio tasks: every label in force as an annotation, the
    report's judge as predictions."""
    found = _units_export(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, criterion_obj, judge = found
    stream = io.StringIO()
    try:
        exporting.write_label_studio(
            campaign=campaign, criteria=[criterion_obj], stream=stream, judges=[judge] if judge else []
        )
    except exporting.ExportError as error:
        return _refusal(str(error))
    name = _name(campaign, criterion_obj, exporting.LABEL_STUDIO)
    return _attachment(stream.getvalue(), content_type="application/json; charset=utf-8", name=name)


@login_required
@require_GET
def export_argilla(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The criterion's units as Argilla records: labels in force as responses, the report's
    judge as suggestions."""
    found = _units_export(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, criterion_obj, judge = found
    stream = io.StringIO()
    try:
        exporting.write_argilla(campaign=campaign, criteria=[criterion_obj], stream=stream, judge=judge)
    except exporting.ExportError as error:
        return _refusal(str(error))
    name = _name(campaign, criterion_obj, exporting.ARGILLA)
    return _attachment(stream.getvalue(), content_type="application/json; charset=utf-8", name=name)


@login_required
@require_GET
def export_parquet(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The criterion's units with their labels and judgments as Parquet."""
    found = _units_export(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, criterion_obj, _judge = found
    buffer = io.BytesIO()
    exporting.write_parquet(campaign=campaign, criteria=[criterion_obj], sink=buffer)
    name = _name(campaign, criterion_obj, exporting.PARQUET)
    return _attachment(buffer.getvalue(), content_type="application/vnd.apache.parquet", name=name)


@login_required
@require_GET
def export_ares(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The estimates the report page shows, with ARES's result keys, as JSON."""
    shown = _shown_report(request, slug, criterion)
    if isinstance(shown, HttpResponse):
        return shown
    refused = _one_rate_per_theme(shown)
    if refused is not None:
        return refused
    stream = io.StringIO()
    exporting.write_ares(report=shown.binary, stream=stream)  # ARES's keys hold one rate per theme: PPI++'s
    name = files.filename(shown=shown, extension="ares.json")
    return _attachment(stream.getvalue(), content_type="application/json; charset=utf-8", name=name)
