"""Versions of the assistant compared theme by theme: by question when their campaigns share
question ids (``evaluation.measures.comparison``), else as independent samples on their PPI++ estimates.

Managers and analysts of every campaign compared only: the page shows the judge's labels.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotation.access import AppRequest, campaigns_for
from annotation.criteria.categories import is_categorical
from annotation.forms import add_domain_error
from annotation.models import Campaign, Membership
from evaluation import errors
from evaluation.forms.reports import CompareForm, ReportForm
from evaluation.measures import comparison
from evaluation.measures.comparison import compare_reports
from evaluation.reports import read, summary
from evaluation.views.reports import VIEWERS, criterion_page
from inference.paired import HOLM


def comparable_campaigns(request: AppRequest, campaign: Campaign) -> list[Campaign]:
    """The other campaigns the user manages or analyses (every other one for a superuser)."""
    viewer = Membership.objects.filter(user=request.user, role__in=VIEWERS).values("campaign_id")
    found = campaigns_for(user=request.user).exclude(pk=campaign.pk)
    if not request.user.is_superuser:
        found = found.filter(pk__in=viewer)
    return list(found.order_by("name"))


@login_required
@require_GET
def compare(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """This campaign's estimates of the criterion beside other campaigns' (versions of the
    assistant), theme by theme, with each difference and its interval.

    GET: ``other`` (the other campaign's slug; the user must be its manager or analyst too),
    ``judge`` and ``other_judge`` (defaults as on the report), ``more`` (further campaigns, each
    with its default judge), ``method``, ``alpha``: see :class:`~evaluation.forms.reports.CompareForm`.
    Campaigns sharing question ids (and any three or more) are compared by question
    (:func:`~evaluation.measures.comparison.compare_versions`); two that share none, as independent
    samples on their PPI++ estimates, each read as its report page reads it (``read.read_report``:
    its latest snapshot, or computed now), and the page says which. Paired by question, the
    estimates are computed now from the labels and judgments.
    """
    campaign, roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    candidates = comparable_campaigns(request, campaign)
    form = CompareForm(request.GET, judges=judges, candidates=candidates, criterion=criterion_obj)
    valid = form.is_valid()
    params = form.params()
    more: list[Campaign] = form.cleaned_data.get("more") or []
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
        "more": more,
    }
    if is_categorical(criterion_obj):
        context["errors"] = [
            *form.messages(),
            _(
                "Campaigns are compared on a rate per theme; a criterion with categories has one "
                "per category: read its report."
            ),
        ]
        return render(request, "evaluation/compare.html", context, status=400)
    # A valid form has its judge and, with another campaign, that campaign's criterion.
    other = form.other_campaign
    if valid and params.judge is not None and other is not None and form.other_criterion is not None:
        campaigns = [campaign, other, *more]
        if comparison.by_question(campaigns=campaigns):
            try:
                versions = comparison.versions_for(
                    campaigns=campaigns,
                    criterion=criterion_obj.name,
                    judges=[params.judge, form.cleaned_data["other_judge"], *[None] * len(more)],
                )
                context["paired"] = comparison.compare_versions(
                    versions=versions,
                    alpha=params.alpha,
                    method=params.method,
                    adjustment=form.cleaned_data.get("adjust") or HOLM,
                )
            except errors.ComparisonError as exc:
                add_domain_error(form, exc)
                valid = False
        else:
            assert params.request is not None and form.other_request is not None
            left = read.read_report(params.request)
            right = read.read_report(form.other_request)
            context.update(
                left=left.binary,
                right=right.binary,
                left_source=left.provenance,
                right_source=right.provenance,
                compared=compare_reports(left=left.binary, right=right.binary),
            )
    context["errors"] = form.messages()
    return render(request, "evaluation/compare.html", context, status=200 if valid else 400)


@login_required
@require_GET
def previous_version_section(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The report's section on the change against the previous version of the assistant: the
    latest campaign created before this one that shares question ids with it and that the user
    manages or analyses too (``summary.previous_version``), its PPI++ estimates compared with this
    report's by question (``summary.version_change``: the compare page's comparison). The report
    page loads it as soon as it is shown (htmx); without a previous version it is empty. GET
    ``judge``, ``method``, ``alpha`` as on the report (400 naming the parameter at fault, or for
    a criterion with categories); 403 or 404 as the report."""
    campaign, _roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    form = ReportForm(request.GET, criterion=criterion_obj, judges=judges)
    valid = form.is_valid()
    params = form.params()
    if is_categorical(criterion_obj) or not valid or params.request is None:
        message = (
            "; ".join(form.messages())
            or params.no_judge
            or _("a criterion with categories has no rate per theme")
        )
        return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
    change = summary.change_against_previous(
        campaign=campaign,
        criterion=criterion_obj,
        judge=params.request.judge,
        method=params.method,
        alpha=params.alpha,
        candidates=comparable_campaigns(request, campaign),
    )
    if change is None:
        return HttpResponse("")
    context = {
        "campaign": campaign,
        "criterion": criterion_obj,
        "change": change,
        "alpha": params.alpha,
        "method": params.method,
    }
    return render(request, "evaluation/_version_change.html", context)
