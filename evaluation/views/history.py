"""How the estimates moved (report snapshots), and recomputing them on demand.

Managers and analysts only, like the report itself: every page here shows the judge's labels.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST

from annotation.access import ESTIMATE_REFRESHERS, AppRequest, get_campaign_for, may_refresh_estimates
from annotation.models import Criterion
from evaluation.estimates import snapshots
from evaluation.forms.reports import RefreshForm, ReportForm
from evaluation.jobs import request_estimates_refresh
from evaluation.views.reports import criterion_page


@login_required
@require_GET
def history(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The stored snapshots of the criterion's estimates for one judge, method and alpha, oldest
    first: a chart of the PPI++ intervals per theme as labels arrived, and a table of them all.
    Same GET parameters as the report; a bad one gives 400 naming it."""
    campaign, roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    form = ReportForm(request.GET, criterion=criterion_obj, judges=judges)
    valid = form.is_valid()
    params = form.params()
    context: dict[str, Any] = {
        "campaign": campaign,
        "roles": roles,
        "criterion": criterion_obj,
        "judges": judges,
        "judge": params.judge,
        "params": params,
        "errors": form.messages(),
        "may_refresh": may_refresh_estimates(roles=roles),
    }
    if not valid:
        return render(request, "evaluation/history.html", context, status=400)
    if params.judge is not None:
        kept = snapshots.history(
            criterion=criterion_obj, judge=params.judge, method=params.method, alpha=params.alpha
        )
        context["table"] = snapshots.history_table(kept=kept)
    return render(request, "evaluation/history.html", context)


@login_required
@require_POST
def refresh(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """Ask a worker to recompute and snapshot the criterion's estimates now (the roles of
    annotation.access.ESTIMATE_REFRESHERS), then go back to the history, or to the report when
    ``back`` is "report", with the parameters sent."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=ESTIMATE_REFRESHERS)
    criterion_obj = get_object_or_404(Criterion, campaign=campaign, name=criterion)
    form = RefreshForm(request.POST)
    form.is_valid()
    if request_estimates_refresh(criterion=criterion_obj):
        messages.success(
            request, gettext("The estimates are being recomputed; the new snapshot appears here.")
        )
    else:
        messages.info(request, gettext("A recomputation of these estimates is already on its way."))
    page = "evaluation:report" if form.cleaned_data.get("back") == "report" else "evaluation:history"
    return redirect(reverse(page, args=[slug, criterion_obj.name]) + form.query())
