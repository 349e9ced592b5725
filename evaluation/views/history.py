"""How the estimates moved (report snapshots), and recomputing them on demand.

Managers and analysts only, like the report itself: every page here shows the judge's labels.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.access import ESTIMATE_REFRESHERS, get_campaign_for, may_refresh_estimates
from annotation.models import Criterion
from evaluation import snapshots
from evaluation.charts import interval_chart
from evaluation.estimates import OVERALL
from evaluation.jobs import request_estimates_refresh
from evaluation.views.reports import _pct, criterion_page, report_params

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
