"""Downloads of a report: the Excel workbook and the CSV table, with the numbers the report page
shows (snapshots.report_to_show).

Managers and analysts only, like the report itself.
"""

from __future__ import annotations

import io

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.views.decorators.http import require_GET

from annotation.access import AppRequest
from annotation.models import Campaign
from evaluation import exports, snapshots
from evaluation.forms import ReportForm
from evaluation.views.reports import criterion_page


def _shown_report(
    request: AppRequest, slug: str, criterion: str
) -> tuple[Campaign, snapshots.ShownReport] | HttpResponse:
    campaign, _, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    form = ReportForm(request.GET, judges=judges)
    valid = form.is_valid()
    params = form.params()
    if not valid or params.judge is None:
        message = "; ".join(form.messages()) or params.no_judge
        return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
    shown = snapshots.report_to_show(
        criterion=criterion_obj, judge=params.judge, method=params.method, alpha=params.alpha
    )
    return campaign, shown


@login_required
@require_GET
def export_xlsx(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The report as an Excel workbook (summary, automatic metrics, estimates with a chart,
    units, label history), with the report's GET parameters; its estimates are the ones the
    report page shows, and the Summary says where they come from."""
    found = _shown_report(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, shown = found
    buffer = io.BytesIO()
    exports.build_workbook(
        campaign=campaign,
        criteria_reports=[shown.report],
        path_or_buffer=buffer,
        provenances=[shown.provenance],
    )
    response = HttpResponse(
        buffer.getvalue(),
        content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    )
    name = exports.report_filename(campaign=campaign, report=shown.report, extension="xlsx")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_GET
def export_csv(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The report's estimates table as CSV, with the report's GET parameters; the estimates the
    report page shows, with columns saying where they come from."""
    found = _shown_report(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, shown = found
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = exports.report_filename(campaign=campaign, report=shown.report, extension="csv")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    exports.write_csv(report=shown.report, stream=response, provenance=shown.provenance)
    return response
