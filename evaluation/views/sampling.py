"""The confidence-driven sample: the budget's split across themes and its expected half-widths,
shown before drawing, then the draw.

This page lives in ``evaluation`` because it reads the judge's confidences; the annotators' side
(``annotation``) never reads a judgment, so its sampling page only links here. A drawn sample is
an ordinary sample: its page is the annotation one.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.access import AppRequest, get_campaign_for
from annotation.forms import add_domain_error
from annotation.models import Role
from evaluation.designs.active import PilotNeeded
from evaluation.designs.budget_split import Plan, draw_by_plan, plan_split
from evaluation.forms.designs import ConfidenceSampleForm
from inference.reliability.calibration import MIN_LABELS

VIEWERS = [Role.MANAGER, Role.ANALYST]
OPERATORS = [Role.MANAGER]


def _plan(form: ConfidenceSampleForm) -> Plan | None:
    """The split the valid form asks for, or None with the refusal placed on the form (the
    missing pilot as ``form.pilot_needed``: what the campaign lacks, said on a page that answers
    200)."""
    form.pilot_needed = None
    if not form.is_valid():
        return None
    data = form.cleaned_data
    try:
        return plan_split(
            criterion=data["criterion"],
            judge=data["judge"],
            budget=data["budget"],
            objective=data["objective"],
            by_verdict=data["by_verdict"],
            without_pilot=data["without_pilot"],
        )
    except PilotNeeded as error:
        form.pilot_needed = error
        return None
    except ValueError as error:
        add_domain_error(form, error)
        return None


@login_required
@require_http_methods(["GET", "POST"])
def confidence_sample(request: AppRequest, slug: str) -> HttpResponse:
    """GET: the split for the form's values (the defaults when none are given); POST (managers):
    the draw with that split, then the sample's page."""
    roles_needed = OPERATORS if request.method == "POST" else VIEWERS
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=roles_needed)
    data = request.POST if request.method == "POST" else (request.GET or None)
    form = ConfidenceSampleForm(data, campaign=campaign)
    plan = _plan(form)
    if request.method == "POST" and plan is not None:
        try:
            sample = draw_by_plan(**form.cleaned_data, user=request.user)
        except ValueError as error:
            add_domain_error(form, error)
        else:
            return redirect("annotation:sample_detail", slug=campaign.slug, sample_id=sample.pk)
    context = {
        "campaign": campaign,
        "form": form,
        "plan": plan,
        "can_operate": bool(roles.intersection(OPERATORS)),
        "least_pilot": MIN_LABELS,
    }
    # An unbound form is a choice to make (which judge), and a missing pilot a step to take, not
    # refusals.
    status = 200 if plan is not None or not form.is_bound or form.pilot_needed else 400
    return render(request, "evaluation/confidence_sample.html", context, status=status)
