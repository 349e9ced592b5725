"""How far each judge of a binary criterion can be trusted: its agreement, kappa, sensitivity
and specificity against the final human labels with their intervals, per theme and overall, its
confusion table, Dorner's ceiling, and its drift between prompt versions and periods
(``evaluation.measures.judge_alignment``); its CSV and JSON.

Managers and analysts only (``evaluation.views.reports.VIEWERS``): the page shows the judges'
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

from annotation.access import AppRequest
from evaluation.forms.measures import JudgeAlignmentForm
from evaluation.measures import judge_alignment
from evaluation.reports import measure_tables
from evaluation.views.downloads import measure_file
from evaluation.views.reports import criterion_page


def _computed(request: AppRequest, slug: str, criterion: str) -> tuple[dict[str, Any], bool]:
    campaign, roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    form = JudgeAlignmentForm(request.GET)
    valid = form.is_valid()
    alpha, clusters = form.params()
    result = judge_alignment.compute_judge_alignment(
        criterion=criterion_obj, alpha=alpha, clusters=clusters, judges=judges
    )
    context: dict[str, Any] = {
        "campaign": campaign,
        "roles": roles,
        "criterion": criterion_obj,
        "form": form,
        "alpha": alpha,
        "clusters": clusters,
        "errors": form.messages(),
        "result": result,
    }
    return context, valid


@login_required
@require_GET
def judge_alignment_page(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """Every judge of ``criterion`` against the humans, with the form's alpha and clusters (400
    with the form's messages, and the defaults' figures, for a bad parameter)."""
    context, valid = _computed(request, slug, criterion)
    return render(request, "evaluation/judge_alignment.html", context, status=200 if valid else 400)


def _download(request: AppRequest, slug: str, criterion: str, *, extension: str) -> HttpResponse:
    context, valid = _computed(request, slug, criterion)
    if not valid:
        return HttpResponse(
            "\n".join(context["errors"]), status=400, content_type="text/plain; charset=utf-8"
        )
    result = context["result"]
    return measure_file(
        name=slugify(f"{context['campaign'].slug}-{result.criterion.name}-judge-alignment"),
        extension=extension,
        rows=lambda: measure_tables.judge_alignment_csv_rows(result=result),
        data=lambda: judge_alignment.judge_alignment_as_json(result=result),
    )


@login_required
@require_GET
def judge_alignment_csv(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """One row per judge and theme, and per judge overall, as CSV, formulas neutralised."""
    return _download(request, slug, criterion, extension="csv")


@login_required
@require_GET
def judge_alignment_json(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """Everything the page shows, drifts included, as JSON."""
    return _download(request, slug, criterion, extension="json")
