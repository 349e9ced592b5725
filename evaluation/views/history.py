"""How the estimates moved (report snapshots), two campaigns compared, downloads of a report.

Managers and analysts only, like the report itself: every page here shows the judge's labels.
"""

from __future__ import annotations

import io
import math
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_POST

from annotation.access import ESTIMATE_REFRESHERS, campaigns_for, get_campaign_for, may_refresh_estimates
from annotation.models import Campaign, Criterion, Membership
from evaluation import exports, snapshots
from evaluation.charts import interval_chart
from evaluation.estimates import OVERALL, Report, compute_report
from evaluation.jobs import request_estimates_refresh
from evaluation.views.reports import (
    VIEWERS,
    _halfwidth,
    _interval,
    _pct,
    campaign_judges,
    criterion_page,
    report_params,
)

# Snapshots drawn in the history chart (the table lists them all).
CHART_SNAPSHOTS = 20


def _snapshot_interval(group: dict[str, Any]) -> tuple[float | None, float | None, float | None]:
    lo, hi = group.get("ppi_ci") or (None, None)
    return group.get("ppi_mean"), lo, hi


def _snapshot_cell(group: dict[str, Any] | None) -> str:
    if not group or group.get("ppi_mean") is None:
        return "—"
    mean, lo, hi = _snapshot_interval(group)
    interval = f" [{_pct(lo)}, {_pct(hi)}]" if lo is not None and hi is not None else " (unbounded)"
    return f"{_pct(mean)}{interval}"


@login_required
@require_GET
def history(request: HttpRequest, slug: str, criterion: str) -> HttpResponse:
    """The stored snapshots of the criterion's estimates for one judge, method and alpha, oldest
    first: a chart of the PPI++ intervals per theme as labels arrived, and a table of them all.
    Same GET parameters as the report; a bad one gives 400 naming it."""
    campaign, roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    params = report_params(request=request, judges=judges)
    context: dict[str, Any] = {
        "campaign": campaign,
        "roles": roles,
        "criterion": criterion_obj,
        "judges": judges,
        "judge": params.judge,
        "method": params.method,
        "alpha": params.alpha,
        "errors": params.errors,
        "no_judge": params.no_judge,
        "confidence": f"{(1 - params.alpha) * 100:g}%",
        "may_refresh": may_refresh_estimates(roles=roles),
    }
    if params.errors:
        return render(request, "evaluation/history.html", context, status=400)
    rows = []
    if params.judge is not None:
        kept = snapshots.history(
            criterion=criterion_obj, judge=params.judge, method=params.method, alpha=params.alpha
        )
        themes = sorted({g["theme"] for snap in kept for g in snap.data.get("themes", [])})
        for snap in kept:
            groups = {g["theme"]: g for g in snap.data.get("themes", [])}
            groups[OVERALL] = snap.data.get("overall") or {}
            rows.append({"snapshot": snap, "groups": groups})
        context["themes"] = themes
        context["rows"] = [
            {
                "snapshot": row["snapshot"],
                "cells": [_snapshot_cell(row["groups"].get(theme)) for theme in [*themes, OVERALL]],
            }
            for row in reversed(rows)
        ]
        context["chart"] = interval_chart(
            rows=[
                {
                    "label": f"{row['snapshot'].created_at:%Y-%m-%d %H:%M} · n={row['snapshot'].n_human}",
                    "estimates": [
                        (theme, *_snapshot_interval(row["groups"][theme]))
                        for theme in [*themes, OVERALL]
                        if theme in row["groups"]
                    ],
                }
                for row in rows[-CHART_SNAPSHOTS:]
            ],
            title=f"{criterion_obj.name}: PPI++ per theme over time ({context['confidence']} intervals)",
        )
    return render(request, "evaluation/history.html", context)


@login_required
@require_POST
def refresh(request: HttpRequest, slug: str, criterion: str) -> HttpResponse:
    """Ask a worker to recompute and snapshot the criterion's estimates now (the roles of
    annotation.access.ESTIMATE_REFRESHERS), then go back to the history, or to the report when
    ``back`` is "report"."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=ESTIMATE_REFRESHERS)
    criterion_obj = get_object_or_404(Criterion, campaign=campaign, name=criterion)
    if request_estimates_refresh(criterion=criterion_obj):
        messages.success(request, "The estimates are being recomputed; the new snapshot appears here.")
    else:
        messages.info(request, "A recomputation of these estimates is already on its way.")
    page = "evaluation:report" if request.POST.get("back") == "report" else "evaluation:history"
    return redirect(reverse(page, args=[slug, criterion_obj.name]) + _query(request))


def _query(request: HttpRequest) -> str:
    kept = {key: request.POST[key] for key in ("judge", "method", "alpha") if request.POST.get(key)}
    return "?" + urlencode(kept) if kept else ""


def _comparable_campaigns(request: HttpRequest, campaign: Campaign) -> list[Campaign]:
    viewer = Membership.objects.filter(user=request.user, role__in=VIEWERS).values("campaign_id")
    found = campaigns_for(user=request.user).exclude(pk=campaign.pk)
    if not request.user.is_superuser:
        found = found.filter(pk__in=viewer)
    return list(found.order_by("name"))


def _difference_cell(row: snapshots.ThemeComparison) -> dict[str, Any]:
    diff = row.difference
    if diff is None:
        return {"text": "—", "ci": "", "excludes_zero": False}
    return {
        "text": f"{diff.estimate * 100:+.1f} pts",
        "ci": f"[{diff.lo * 100:+.1f}, {diff.hi * 100:+.1f}]",
        "excludes_zero": diff.excludes_zero,
    }


def _side(group) -> dict[str, Any]:
    if group is None:
        return {"ppi": "—", "ci": "", "half": "—", "n_human": "—", "method": ""}
    return {
        "ppi": _pct(group.ppi.mean),
        "ci": _interval(group.ppi),
        "half": _halfwidth(group.ppi),
        "n_human": group.n_human,
        "method": group.ppi.method,
    }


@login_required
@require_GET
def compare(request: HttpRequest, slug: str, criterion: str) -> HttpResponse:
    """This campaign's PPI++ estimates of the criterion beside another campaign's (two versions
    of the assistant), theme by theme, with the difference and its interval.

    GET: ``other`` (the other campaign's slug; the user must be its manager or analyst too),
    ``judge`` and ``other_judge`` (defaults as on the report), ``method``, ``alpha``.
    """
    campaign, roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    params = report_params(request=request, judges=judges)
    errors = list(params.errors)
    context: dict[str, Any] = {
        "campaign": campaign,
        "roles": roles,
        "criterion": criterion_obj,
        "candidates": _comparable_campaigns(request, campaign),
        "judges": judges,
        "judge": params.judge,
        "method": params.method,
        "alpha": params.alpha,
        "confidence": f"{(1 - params.alpha) * 100:g}%",
    }
    other_slug = request.GET.get("other") or ""
    other = next((c for c in context["candidates"] if c.slug == other_slug), None)
    if other_slug and other is None:
        # The same answer whether the campaign exists or not: outsiders learn nothing.
        errors.append(f"other: {other_slug!r} is not a campaign you manage or analyse")
    elif other is not None:
        other_criterion = Criterion.objects.filter(campaign=other, name=criterion_obj.name).first()
        other_judges = campaign_judges(campaign=other)
        other_params = report_params(request=request, judges=other_judges, prefix="other_")
        errors.extend(e for e in other_params.errors if e.startswith("other_"))
        context.update(other=other, other_judges=other_judges, other_judge=other_params.judge)
        if other_criterion is None:
            errors.append(f"other: {other.name!r} has no criterion {criterion_obj.name!r}")
        for side, side_params in (("this campaign", params), ("other", other_params)):
            if side_params.judge is None and side_params.no_judge:
                errors.append(f"{side}: {side_params.no_judge}")
        if not errors:
            left = compute_report(
                criterion=criterion_obj, judge=params.judge, alpha=params.alpha, method=params.method
            )
            right = compute_report(
                criterion=other_criterion, judge=other_params.judge, alpha=params.alpha, method=params.method
            )
            context.update(_comparison_context(left=left, right=right, campaign=campaign, other=other))
    context["errors"] = errors
    return render(request, "evaluation/compare.html", context, status=400 if errors else 200)


def _comparison_context(
    *, left: Report, right: Report, campaign: Campaign, other: Campaign
) -> dict[str, Any]:
    compared = snapshots.compare_reports(left=left, right=right)
    names = (campaign.name, other.name)
    chart = interval_chart(
        rows=[
            {
                "label": row.theme,
                "estimates": [
                    (name, group.ppi.mean, group.ppi.lo, group.ppi.hi)
                    for name, group in zip(names, (row.left, row.right), strict=True)
                    if group is not None and math.isfinite(group.ppi.mean)
                ],
            }
            for row in compared
        ],
        title=f"{left.criterion}: PPI++ per theme, {names[0]} vs {names[1]}",
    )
    return {
        "chart": chart,
        "left": left,
        "right": right,
        "compared": [
            {
                "theme": row.theme,
                "left": _side(row.left),
                "right": _side(row.right),
                "difference": _difference_cell(row),
            }
            for row in compared
        ],
    }


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
