"""Campaign list and overview."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import (
    JUDGE_VIEWERS,
    AppRequest,
    campaigns_for,
    get_campaign_for,
    may_see_annotators,
    may_see_counts,
    may_see_judges,
)
from annotation.workflow.agreement import campaign_agreement, may_see_agreement
from evaluation.pages.overview import automatic_metrics_sections, campaign_counts
from evaluation.reports.headline import headlines
from evaluation.views.compare import comparable_campaigns


@login_required
@require_GET
def campaign_list(request: AppRequest) -> HttpResponse:
    campaigns = campaigns_for(user=request.user).order_by("name")
    return render(request, "evaluation/campaign_list.html", {"campaigns": campaigns})


@login_required
@require_GET
def campaign_overview(request: AppRequest, slug: str) -> HttpResponse:
    # Any role: the automatic metrics hold no judge output and no human label.
    campaign, roles = get_campaign_for(user=request.user, slug=slug)
    context = {
        "campaign": campaign,
        "roles": roles,
        "metrics": automatic_metrics_sections(campaign=campaign),
    }
    if request.htmx:
        return render(request, "evaluation/campaign_overview.html#metrics", context)
    context["counts"] = campaign_counts(campaign=campaign, with_work=may_see_counts(roles=roles))
    context["sees_judge"] = may_see_judges(roles=roles)
    if context["sees_judge"]:
        # How good the assistant is, first: figures built on the judge's labels (JUDGE_VIEWERS).
        candidates = comparable_campaigns(request, campaign)
        context["headline"] = headlines(campaigns=[campaign], candidates=candidates)[campaign.pk]
    context["sees_annotators"] = may_see_annotators(roles=roles)
    # Human agreement only for those who do not label: see annotation.workflow.agreement.AGREEMENT_ROLES.
    context["agreement"] = campaign_agreement(campaign=campaign) if may_see_agreement(roles=roles) else None
    return render(request, "evaluation/campaign_overview.html", context)


@login_required
@require_GET
def headline_card(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """One criterion's card of the headline, computed now: the overview and the start page load
    it after the page for a criterion whose figures are computed when read (one with categories,
    or one not snapshotted yet). Managers and analysts (``JUDGE_VIEWERS``) only, as the
    headline: others 403, outsiders and unknown criteria 404. GET ``level`` 4: the card's title
    is an h4 (the start page's), else an h3."""
    campaign, _roles = get_campaign_for(user=request.user, slug=slug, roles=JUDGE_VIEWERS)
    candidates = comparable_campaigns(request, campaign)
    found = headlines(campaigns=[campaign], candidates=candidates, only=criterion, compute=True)[campaign.pk]
    if not found.rows:
        raise Http404("No such criterion.")
    context = {
        "campaign": campaign,
        "row": found.rows[0],
        "alpha": found.alpha,
        "heading": "h4" if request.GET.get("level") == "4" else "h3",
    }
    return render(request, "evaluation/_headline_card.html", context)
