"""Two campaigns (two versions of the assistant) compared theme by theme on their PPI++ estimates.

Managers and analysts of both campaigns only: the page shows the judge's labels.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotation.access import AppRequest, campaigns_for
from annotation.categories import is_categorical
from annotation.models import Campaign, Membership
from evaluation import snapshots
from evaluation.estimates import compute_report
from evaluation.forms import CompareForm
from evaluation.views.reports import VIEWERS, criterion_page


def _comparable_campaigns(request: AppRequest, campaign: Campaign) -> list[Campaign]:
    viewer = Membership.objects.filter(user=request.user, role__in=VIEWERS).values("campaign_id")
    found = campaigns_for(user=request.user).exclude(pk=campaign.pk)
    if not request.user.is_superuser:
        found = found.filter(pk__in=viewer)
    return list(found.order_by("name"))


@login_required
@require_GET
def compare(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """This campaign's PPI++ estimates of the criterion beside another campaign's (two versions
    of the assistant), theme by theme, with the difference and its interval.

    GET: ``other`` (the other campaign's slug; the user must be its manager or analyst too),
    ``judge`` and ``other_judge`` (defaults as on the report), ``method``, ``alpha``: see
    :class:`~evaluation.forms.CompareForm`. Both reports are computed now.
    """
    campaign, roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    candidates = _comparable_campaigns(request, campaign)
    form = CompareForm(request.GET, judges=judges, candidates=candidates, criterion=criterion_obj)
    valid = form.is_valid()
    params = form.params()
    context: dict[str, Any] = {
        "campaign": campaign,
        "roles": roles,
        "criterion": criterion_obj,
        "candidates": candidates,
        "judges": judges,
        "judge": params.judge,
        "params": params,
        "other": form.other_campaign,
        "other_judges": form.other_judges,
        "other_judge": form.cleaned_data.get("other_judge"),
        "errors": form.messages(),
    }
    if is_categorical(criterion_obj):
        context["errors"] = [
            *context["errors"],
            _(
                "Campaigns are compared on a rate per theme; a criterion with categories has one "
                "per category: read its report."
            ),
        ]
        return render(request, "evaluation/compare.html", context, status=400)
    # A valid form has its judge and, with another campaign, that campaign's criterion.
    if valid and params.judge is not None and form.other_criterion is not None:
        left = compute_report(
            criterion=criterion_obj, judge=params.judge, alpha=params.alpha, method=params.method
        )
        right = compute_report(
            criterion=form.other_criterion,
            judge=form.cleaned_data["other_judge"],
            alpha=params.alpha,
            method=params.method,
        )
        context.update(left=left, right=right, compared=snapshots.compare_reports(left=left, right=right))
    return render(request, "evaluation/compare.html", context, status=200 if valid else 400)
