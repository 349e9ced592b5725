"""A campaign's answers against their questions' reference answers (exact match, token F1,
ROUGE-L per theme; ``evaluation.measures.reference_answers``): the report page's section, loaded
after the page, and its JSON and CSV. Managers and analysts, as the reports."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import AppRequest, get_campaign_for
from annotation.models import Campaign
from evaluation.forms.measures import ReferenceForm
from evaluation.measures.reference_answers import ReferenceReport, reference_report, report_as_json, write_csv
from evaluation.views.reports import VIEWERS


def _read(request: AppRequest, slug: str) -> tuple[Campaign, ReferenceForm, ReferenceReport | None]:
    campaign, _roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    form = ReferenceForm(request.GET)
    if not form.is_valid():
        return campaign, form, None
    data = form.cleaned_data
    return (
        campaign,
        form,
        reference_report(campaign=campaign, normalisation=data["normalisation"], alpha=data["alpha"]),
    )


@login_required
@require_GET
def reference_section(request: AppRequest, slug: str) -> HttpResponse:
    """The section (htmx, from the report page), or a page of its own; 400 with the form's
    messages for a bad parameter."""
    campaign, form, report = _read(request, slug)
    if request.htmx and report is not None and not report.rows:
        return HttpResponse("")  # no reference answer: the report page's slot goes away
    context = {"campaign": campaign, "form": form, "reference": report, "query": request.GET.urlencode()}
    template = "evaluation/_reference_answers.html" if request.htmx else "evaluation/reference_answers.html"
    return render(request, template, context, status=200 if report is not None else 400)


@login_required
@require_GET
def reference_json(request: AppRequest, slug: str) -> HttpResponse:
    """The section's numbers as JSON (``manage.py reference_answers --format json``'s)."""
    campaign, form, report = _read(request, slug)
    if report is None:
        return HttpResponse(json.dumps({"errors": form.errors}), status=400, content_type="application/json")
    response = HttpResponse(
        json.dumps(report_as_json(report), indent=2, ensure_ascii=False), content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-reference-answers.json"'
    return response


@login_required
@require_GET
def reference_csv(request: AppRequest, slug: str) -> HttpResponse:
    """The section's numbers as CSV: one row per measure and theme."""
    campaign, form, report = _read(request, slug)
    if report is None:
        return HttpResponse(str(form.errors), status=400, content_type="text/plain")
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-reference-answers.csv"'
    write_csv(report=report, stream=response)
    return response
