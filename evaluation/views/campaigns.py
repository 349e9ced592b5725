"""Campaign list and overview."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import AppRequest, campaigns_for, get_campaign_for, may_see_annotators, may_see_counts
from annotation.workflow.agreement import campaign_agreement, may_see_agreement
from evaluation.pages.overview import automatic_metrics_sections, campaign_counts


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
    context["criteria"] = list(campaign.criteria.order_by("name").values_list("name", flat=True))
    context["sees_judge"] = bool(roles.intersection({"manager", "analyst"}))
    context["sees_annotators"] = may_see_annotators(roles=roles)
    # Human agreement only for those who do not label: see annotation.workflow.agreement.AGREEMENT_ROLES.
    context["agreement"] = campaign_agreement(campaign=campaign) if may_see_agreement(roles=roles) else None
    return render(request, "evaluation/campaign_overview.html", context)
