"""Stability across repetitions: how much a question's answers vary from one repetition to the
next, per question and overall, and what more repetitions would buy.

Managers and analysts only (``evaluation.views.reports.VIEWERS``): the page shows the judge's
labels, which annotators, reviewers and adjudicators must never see. 403 for the other members,
404 for outsiders.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from annotation.access import AppRequest, get_campaign_for
from evaluation.forms.measures import StabilityForm
from evaluation.measures import stability
from evaluation.pages.stability import questions_table
from evaluation.reports import measure_tables
from evaluation.views.downloads import measure_file
from evaluation.views.reports import VIEWERS


def _computed(request: AppRequest, slug: str) -> tuple[dict[str, Any], bool]:
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    criteria = list(campaign.criteria.order_by("name"))
    form = StabilityForm(request.GET, criteria=criteria)
    valid = form.is_valid()
    params = form.params()
    context: dict[str, Any] = {
        "campaign": campaign,
        "roles": roles,
        "form": form,
        "params": params,
        "errors": form.messages(),
    }
    figures = form.figures(campaign=campaign)
    if figures is not None:
        context["key"] = key = stability.stability_key(figures)
        context["result"] = stability.cached_stability(figures, key=key)
    return context, valid


@login_required
@require_GET
def stability_page(request: AppRequest, slug: str) -> HttpResponse:
    """The stability of the measure the form names (defaults: the first criterion, the judge's
    labels); 400 with the form's messages for a bad parameter."""
    context, valid = _computed(request, slug)
    key = context.get("key")
    if key is not None:
        context["questions_table"] = questions_table(result=context["result"], key=key)
    return render(request, "evaluation/stability.html", context, status=200 if valid else 400)


def _download(request: AppRequest, slug: str, *, extension: str) -> HttpResponse:
    context, valid = _computed(request, slug)
    if not valid or "result" not in context:
        message = "\n".join(context["errors"]) or context["params"].no_judge
        return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
    result = context["result"]
    return measure_file(
        name=slugify(f"{context['campaign'].slug}-{result.measure.name}-{result.source}-stability"),
        extension=extension,
        rows=lambda: measure_tables.stability_csv_rows(stability=result),
        data=lambda: stability.stability_as_json(stability=result),
    )


@login_required
@require_GET
def stability_csv(request: AppRequest, slug: str) -> HttpResponse:
    """The per-question table of the page's parameters as CSV, formulas neutralised (400 with
    the messages as text for a bad parameter)."""
    return _download(request, slug, extension="csv")


@login_required
@require_GET
def stability_json(request: AppRequest, slug: str) -> HttpResponse:
    """Everything the page shows, as the command's JSON (400 as for the CSV)."""
    return _download(request, slug, extension="json")
