"""Evidence coverage and retrieval ranking metrics of a campaign's answers, against the gold
evidence of its questions; the same numbers as JSON.

Managers and analysts only, like the reports: the calibration reads final human labels.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import AppRequest, get_campaign_for
from annotation.models import Campaign
from evaluation.forms.measures import EvidenceForm
from evaluation.measures.evidence import (
    EvidenceError,
    EvidenceReport,
    answer_criteria,
    evidence_report,
    report_as_json,
    write_csv,
)
from evaluation.views.compare import comparable_campaigns
from evaluation.views.reports import VIEWERS


def _report(request: AppRequest, slug: str) -> tuple[Campaign, set[str], EvidenceForm, EvidenceReport | None]:
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    form = EvidenceForm(
        request.GET,
        criteria=answer_criteria(campaign=campaign),
        candidates=comparable_campaigns(request, campaign),
    )
    report = None
    if form.is_valid():
        try:
            report = evidence_report(campaign=campaign, **form.report_arguments(), cached=True)
        except EvidenceError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.reason)
    return campaign, roles, form, report


def _others(form: EvidenceForm, report: EvidenceReport) -> list[EvidenceReport]:
    """The reports of the campaigns chosen to stand beside this one (no calibration)."""
    return [
        evidence_report(campaign=other, budgets=report.budgets, ks=report.ks, alpha=report.alpha, cached=True)
        for other in form.cleaned_data["other"]
    ]


@login_required
@require_GET
def evidence(request: AppRequest, slug: str) -> HttpResponse:
    """The page: coverage per theme at each budget (table and chart), ranking metrics per theme,
    and the calibration on a criterion (thresholds, category shares chart). 400 for a bad
    parameter, named on the page."""
    campaign, roles, form, report = _report(request, slug)
    context: dict[str, Any] = {"campaign": campaign, "roles": roles, "form": form, "report": report}
    if report is not None:
        context["form"] = form.effective()
        context["calibrated"] = form.cleaned_data["criterion"]  # the criterion, for its title
        context["query"] = request.GET.urlencode()
        others = _others(form, report)
        if others:
            context["side_by_side"] = [report, *others]
    return render(request, "evaluation/evidence.html", context, status=200 if report is not None else 400)


@login_required
@require_GET
def evidence_json(request: AppRequest, slug: str) -> HttpResponse:
    """The page's numbers as the command's JSON (same parameters); 400 naming a bad one."""
    campaign, _roles, form, report = _report(request, slug)
    if report is None:
        return HttpResponse("; ".join(form.messages()), status=400, content_type="text/plain; charset=utf-8")
    others = _others(form, report)
    data = [report_as_json(r) for r in [report, *others]] if others else report_as_json(report)
    response = HttpResponse(json.dumps(data, ensure_ascii=False, indent=2), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-evidence.json"'
    return response


@login_required
@require_GET
def evidence_csv(request: AppRequest, slug: str) -> HttpResponse:
    """The page's means as CSV (same parameters); 400 naming a bad one."""
    campaign, _roles, form, report = _report(request, slug)
    if report is None:
        return HttpResponse("; ".join(form.messages()), status=400, content_type="text/plain; charset=utf-8")
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-evidence.csv"'
    write_csv(reports=[report, *_others(form, report)], stream=response)
    return response
