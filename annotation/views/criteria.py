"""The criteria page (managers): the campaign's criteria, a form to make one, and a form to edit
each (``annotation.criteria.editing``). An edit of the guidelines or the judge prompt makes a new version."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from annotation.access import AppRequest, get_campaign_for
from annotation.criteria.editing import CriterionErrors, categories_text, groups_text, save_criterion
from annotation.forms import CriterionForm, add_domain_error
from annotation.models import Campaign, Criterion, Role
from annotation.workbench import shown_title

CRITERIA_ROLES = [Role.MANAGER]


def _saved(request: AppRequest, *, criterion: Criterion, number: int, created: bool) -> None:
    params = {"name": shown_title(criterion.title), "number": number}
    if created:
        messages.success(request, _("Criterion %(name)s created (guidelines version %(number)s).") % params)
    else:
        messages.success(request, _("Criterion %(name)s saved (guidelines version %(number)s).") % params)


def _save(request: AppRequest, campaign: Campaign, form: CriterionForm, criterion: Criterion | None) -> bool:
    """Save the form's criterion; False, with the refusal on the form, when it is refused."""
    if not form.is_valid():
        return False
    try:
        saved, version = save_criterion(campaign=campaign, draft=form.draft(), criterion=criterion)
    except CriterionErrors as refused:
        for error in refused.errors:
            add_domain_error(form, error)
        return False
    _saved(request, criterion=saved, number=version.number, created=criterion is None)
    return True


@login_required
@require_http_methods(["GET", "POST"])
def criteria(request: AppRequest, slug: str) -> HttpResponse:
    """The campaign's criteria and the form that makes one (400 with the form's errors)."""
    campaign, _roles = get_campaign_for(user=request.user, slug=slug, roles=CRITERIA_ROLES)
    form = CriterionForm(request.POST if request.method == "POST" else None, campaign=campaign)
    if request.method == "POST" and _save(request, campaign, form, None):
        return redirect("annotation:criteria", slug=campaign.slug)
    context = {
        "campaign": campaign,
        "criteria": Criterion.objects.filter(campaign=campaign).select_related("current_version"),
        "form": form,
    }
    return render(request, "annotation/criteria.html", context, status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
def criterion_edit(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The form of one criterion, filled with what it is now (400 with the form's errors)."""
    campaign, _roles = get_campaign_for(user=request.user, slug=slug, roles=CRITERIA_ROLES)
    found = get_object_or_404(
        Criterion.objects.select_related("current_version"), campaign=campaign, name=criterion
    )
    initial = {
        "title": found.title,
        "positive_key": found.positive_key,
        "negative_key": found.negative_key,
        "categories": categories_text(found),
        "category_groups": groups_text(found),
        "guidelines": found.guidelines,
        "judge_prompt": found.judge_prompt,
    }
    form = CriterionForm(
        request.POST if request.method == "POST" else None,
        campaign=campaign,
        criterion=found,
        initial=initial,
    )
    if request.method == "POST" and _save(request, campaign, form, found):
        return redirect("annotation:criteria", slug=campaign.slug)
    versions = found.versions.order_by("-number")
    context = {"campaign": campaign, "criterion": found, "form": form, "versions": versions}
    return render(request, "annotation/criterion_edit.html", context, status=400 if form.errors else 200)
