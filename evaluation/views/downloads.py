"""Downloads of a report: the Excel workbook and the CSV table, with the numbers the report page
shows (snapshots.report_to_show).

Managers and analysts only, like the report itself.
"""

from __future__ import annotations

import io

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from annotation.models import Campaign
from evaluation import exports, snapshots
from evaluation.estimates import Report
from evaluation.views.reports import criterion_page, report_params


def _export_report(
    request: HttpRequest, slug: str, criterion: str
) -> tuple[Campaign, snapshots.ShownReport] | HttpResponse:
    campaign, _, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    params = report_params(request=request, judges=judges)
    if params.errors or params.judge is None:
        message = "; ".join(params.errors) or params.no_judge
        return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
    shown = snapshots.report_to_show(
        criterion=criterion_obj, judge=params.judge, method=params.method, alpha=params.alpha
    )
    return campaign, shown


def _filename(campaign: Campaign, report: Report, extension: str) -> str:
    return f"{campaign.slug}-{slugify(report.criterion)}-{slugify(report.judge)}-{report.method}.{extension}"


@login_required
@require_GET
def export_xlsx(request: HttpRequest, slug: str, criterion: str) -> HttpResponse:
    """The report as an Excel workbook (summary, automatic metrics, estimates with a chart,
    units, label history), with the report's GET parameters; its estimates are the ones the
    report page shows (snapshots.report_to_show), the Summary says which."""
    found = _export_report(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, shown = found
    report = shown.report
    buffer = io.BytesIO()
    exports.build_workbook(
        campaign=campaign, criteria_reports=[report], path_or_buffer=buffer, provenances=[shown.provenance]
    )
    response = HttpResponse(
        buffer.getvalue(),
        content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    )
    response["Content-Disposition"] = f'attachment; filename="{_filename(campaign, report, "xlsx")}"'
    return response


@login_required
@require_GET
def export_csv(request: HttpRequest, slug: str, criterion: str) -> HttpResponse:
    """The report's estimates table as CSV, with the report's GET parameters; the estimates the
    report page shows, with columns saying where they come from."""
    found = _export_report(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, shown = found
    report = shown.report
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_filename(campaign, report, "csv")}"'
    exports.write_csv(report=report, stream=response, provenance=shown.provenance)
    return response
