"""Annotators at a glance: each person's pace, leases, overrides and agreement, per criterion.

Managers and adjudicators only (``annotation.access.ANNOTATOR_VIEWERS``): 403 for the other
members, 404 for outsiders. Human labels only, no judge output.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from annotation.access import ANNOTATOR_VIEWERS, AppRequest, get_campaign_for
from evaluation.forms.reports import AnnotatorsForm
from evaluation.measures.annotator_stats import BREAK_SECONDS
from evaluation.measures.annotators import annotators_page, campaign_criteria
from inference.reliability.krippendorff import RESAMPLES


@login_required
@require_GET
def annotators(request: AppRequest, slug: str) -> HttpResponse:
    """The page for the criterion the form names (GET ``criterion``; 400 for an unknown one)."""
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=ANNOTATOR_VIEWERS)
    criteria = campaign_criteria(campaign=campaign)
    form = AnnotatorsForm(request.GET, criteria=criteria)
    valid = form.is_valid()
    chosen = form.cleaned_data.get("criterion") if valid else None
    page = annotators_page(campaign=campaign, criteria=criteria, chosen=chosen, now=timezone.now())
    context = {
        "campaign": campaign,
        "roles": roles,
        "form": form,
        "page": page,
        "break_minutes": BREAK_SECONDS // 60,
        "resamples": RESAMPLES,
    }
    return render(request, "evaluation/annotators.html", context, status=200 if valid else 400)
