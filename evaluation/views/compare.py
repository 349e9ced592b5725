"""Two campaigns (two versions of the assistant) compared theme by theme on their PPI++ estimates.

Managers and analysts of both campaigns only: the page shows the judge's labels.
"""

from __future__ import annotations

import math
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import campaigns_for
from annotation.models import Campaign, Criterion, Membership
from evaluation import snapshots
from evaluation.charts import interval_chart
from evaluation.estimates import Report, compute_report
from evaluation.views.reports import (
    VIEWERS,
    _halfwidth,
    _interval,
    _pct,
    campaign_judges,
    criterion_page,
    report_params,
)


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
