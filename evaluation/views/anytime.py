"""The anytime-valid mode's pages: start a sequence, draw its next batch, and each theme's status
("precise enough, stop" or "about N more labels"); managers operate, analysts view.

The status reads the judge's confidences, so it lives in ``evaluation``; the work page
(``annotation``) only loads :func:`anytime_work` with htmx, for managers and analysts.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.access import AppRequest, get_campaign_for
from annotation.forms import add_domain_error
from annotation.models import Role, Sample
from evaluation.designs import anytime_status
from evaluation.designs.anytime import next_batch, start_sequence
from evaluation.forms.designs import AnytimeForm

VIEWERS = [Role.MANAGER, Role.ANALYST]
OPERATORS = [Role.MANAGER]


@login_required
@require_http_methods(["GET", "POST"])
def anytime(request: AppRequest, slug: str) -> HttpResponse:
    """GET: every open sequence's status and the form to start one; POST (managers): start a
    sequence with the form's values (its first batch), then back to this page."""
    roles_needed = OPERATORS if request.method == "POST" else VIEWERS
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=roles_needed)
    form = AnytimeForm(request.POST if request.method == "POST" else None, campaign=campaign)
    if request.method == "POST" and form.is_valid():
        try:
            start_sequence(**form.cleaned_data, user=request.user)
        except ValueError as error:
            add_domain_error(form, error)
        else:
            return redirect("evaluation:anytime", slug=campaign.slug)
    context = {
        "campaign": campaign,
        "form": form,
        "sequences": anytime_status.open_sequences(campaign=campaign),
        "can_operate": bool(roles.intersection(OPERATORS)),
    }
    status = 400 if request.method == "POST" else 200
    return render(request, "evaluation/anytime.html", context, status=status)


@login_required
@require_POST
def anytime_next(request: AppRequest, slug: str, sample_id: int) -> HttpResponse:
    """POST (managers): draw the next batch of the sequence whose latest batch is ``sample_id``."""
    campaign, _roles = get_campaign_for(user=request.user, slug=slug, roles=OPERATORS)
    sample = get_object_or_404(
        Sample.objects.select_related("criterion"),
        pk=sample_id,
        campaign=campaign,
        design=Sample.Design.SEQUENTIAL,
    )
    try:
        next_batch(sample=sample, user=request.user)
    except ValueError as error:
        messages.error(request, str(error))
    return redirect("evaluation:anytime", slug=campaign.slug)


@login_required
@require_GET
def anytime_work(request: AppRequest, slug: str) -> HttpResponse:
    """The open sequences' status as a fragment, for the work page of managers and analysts."""
    campaign, _roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    context = {
        "campaign": campaign,
        "sequences": anytime_status.open_sequences(campaign=campaign),
        "compact": True,
    }
    return render(request, "evaluation/anytime.html#sequences", context)
