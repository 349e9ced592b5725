"""Downloads of a report: the Excel workbook and the CSV table, with the numbers the report page
shows (snapshots.report_to_show); the same numbers with ARES's result keys; the criterion's units,
labels and the report's judge for Label Studio, Argilla and as Parquet.

Managers and analysts only, like the report itself.
"""

from __future__ import annotations

import io

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotation.access import AppRequest
from annotation.criteria.categories import is_categorical
from annotation.models import Campaign, Criterion
from evaluation import errors
from evaluation.estimates import small_themes
from evaluation.estimates.categorical import CategoricalReport, compute_categorical_report
from evaluation.forms.reports import ReportForm, ReportParams
from evaluation.interchange import exporting
from evaluation.reports import categorical_files, exports, read
from evaluation.views.reports import criterion_page

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def _report_params(
    request: AppRequest, slug: str, criterion: str
) -> tuple[Campaign, Criterion, ReportParams] | HttpResponse:
    """The campaign, criterion and report parameters of a download (403 or 404 as the report),
    or a 400 naming the parameter at fault or the missing judge (or ``shrinkage`` asked for
    where it is not offered: ``small_themes.check_shrinkage``)."""
    campaign, _, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    form = ReportForm(request.GET, judges=judges)
    valid = form.is_valid()
    params = form.params()
    if not valid or params.judge is None:
        message = "; ".join(form.messages()) or params.no_judge
        return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
    if params.shrinkage:
        try:
            small_themes.check_shrinkage(method=params.method, categorical=is_categorical(criterion_obj))
        except errors.EstimateError as error:
            return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
    return campaign, criterion_obj, params


def _categorical(
    request: AppRequest, slug: str, criterion: str
) -> tuple[Campaign, CategoricalReport] | HttpResponse | None:
    """The report of a criterion with categories, computed now (a 400 as the report's); None
    for a binary criterion."""
    found = _report_params(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, criterion_obj, params = found
    if not is_categorical(criterion_obj):
        return None
    assert params.judge is not None
    report = compute_categorical_report(
        criterion=criterion_obj, judge=params.judge, method=params.method, alpha=params.alpha
    )
    return campaign, report


def _shown_report(
    request: AppRequest, slug: str, criterion: str
) -> tuple[Campaign, read.ShownReport, small_themes.SmallThemes | None] | HttpResponse:
    """The campaign, the numbers the report page shows and, when asked for, their shrinkage
    toward the judge (a 400 naming ``shrinkage`` where it cannot be had)."""
    found = _report_params(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, criterion_obj, params = found
    if is_categorical(criterion_obj):
        return HttpResponse(
            _("This format holds one rate per theme; a criterion with categories has one per category."),
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    assert params.judge is not None
    shown = read.report_to_show(
        criterion=criterion_obj, judge=params.judge, method=params.method, alpha=params.alpha
    )
    small = None
    if params.shrinkage:
        try:
            small = small_themes.shrink_report(report=shown.report)
        except errors.EstimateError as error:
            return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
    return campaign, shown, small


@login_required
@require_GET
def export_xlsx(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The report as an Excel workbook (summary, automatic metrics, estimates with a chart,
    units, label history), with the report's GET parameters; its estimates are the ones the
    report page shows, and the Summary says where they come from. A criterion with categories:
    its estimates and confusion sheets (``evaluation.reports.categorical_files``)."""
    categorical = _categorical(request, slug, criterion)
    if isinstance(categorical, HttpResponse):
        return categorical
    if categorical is not None:
        campaign, report = categorical
        buffer = io.BytesIO()
        categorical_files.build_workbook(campaign=campaign, report=report, path_or_buffer=buffer)
        name = categorical_files.report_filename(campaign=campaign, report=report, extension="xlsx")
        return _attachment(buffer.getvalue(), content_type=XLSX, name=name)
    found = _shown_report(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, shown, small = found
    buffer = io.BytesIO()
    exports.build_workbook(
        campaign=campaign,
        criteria_reports=[shown.report],
        path_or_buffer=buffer,
        provenances=[shown.provenance],
        shrinkages=[small],
    )
    response = HttpResponse(buffer.getvalue(), content_type=XLSX)
    name = exports.report_filename(campaign=campaign, report=shown.report, extension="xlsx")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_GET
def export_csv(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The report's estimates table as CSV, with the report's GET parameters; the estimates the
    report page shows, with columns saying where they come from; a row per category or group
    and theme for a criterion with categories."""
    categorical = _categorical(request, slug, criterion)
    if isinstance(categorical, HttpResponse):
        return categorical
    if categorical is not None:
        campaign, report = categorical
        stream = io.StringIO()
        categorical_files.write_csv(report=report, stream=stream)
        name = categorical_files.report_filename(campaign=campaign, report=report, extension="csv")
        return _attachment(stream.getvalue(), content_type="text/csv; charset=utf-8", name=name)
    found = _shown_report(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, shown, small = found
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = exports.report_filename(campaign=campaign, report=shown.report, extension="csv")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    exports.write_csv(report=shown.report, stream=response, provenance=shown.provenance, small=small)
    return response


def _attachment(content: bytes | str, *, content_type: str, name: str) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _name(campaign: Campaign, criterion: Criterion, fmt: str) -> str:
    return f"{campaign.slug}-{criterion.name}.{exporting.EXTENSIONS[fmt]}"


@login_required
@require_GET
def export_label_studio(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The criterion's units as Label Studio tasks: every label in force as an annotation, the
    report's judge as predictions."""
    found = _report_params(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, criterion_obj, params = found
    stream = io.StringIO()
    judges = [params.judge] if params.judge is not None else []
    try:
        exporting.write_label_studio(
            campaign=campaign, criteria=[criterion_obj], stream=stream, judges=judges
        )
    except exporting.ExportError as error:
        return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
    name = _name(campaign, criterion_obj, exporting.LABEL_STUDIO)
    return _attachment(stream.getvalue(), content_type="application/json; charset=utf-8", name=name)


@login_required
@require_GET
def export_argilla(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The criterion's units as Argilla records: labels in force as responses, the report's
    judge as suggestions."""
    found = _report_params(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, criterion_obj, params = found
    stream = io.StringIO()
    try:
        exporting.write_argilla(
            campaign=campaign, criteria=[criterion_obj], stream=stream, judge=params.judge
        )
    except exporting.ExportError as error:
        return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
    name = _name(campaign, criterion_obj, exporting.ARGILLA)
    return _attachment(stream.getvalue(), content_type="application/json; charset=utf-8", name=name)


@login_required
@require_GET
def export_parquet(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The criterion's units with their labels and judgments as Parquet."""
    found = _report_params(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, criterion_obj, _ = found
    buffer = io.BytesIO()
    exporting.write_parquet(campaign=campaign, criteria=[criterion_obj], sink=buffer)
    name = _name(campaign, criterion_obj, exporting.PARQUET)
    return _attachment(buffer.getvalue(), content_type="application/vnd.apache.parquet", name=name)


@login_required
@require_GET
def export_ares(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The estimates the report page shows, with ARES's result keys, as JSON."""
    found = _shown_report(request, slug, criterion)
    if isinstance(found, HttpResponse):
        return found
    campaign, shown, _small = found  # ARES's keys hold one rate per theme: the PPI++ one
    stream = io.StringIO()
    exporting.write_ares(report=shown.report, stream=stream)
    name = exports.report_filename(campaign=campaign, report=shown.report, extension="ares.json")
    return _attachment(stream.getvalue(), content_type="application/json; charset=utf-8", name=name)
