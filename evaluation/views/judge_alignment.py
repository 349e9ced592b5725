"""How far each judge of a binary criterion can be trusted: its agreement, kappa, sensitivity
and specificity against the final human labels with their intervals, per theme and overall, its
confusion table, Dorner's ceiling, and its drift between prompt versions and periods, overall
and per theme (``evaluation.measures.judge_alignment``), on the part of the criterion's held-out
split the form asks for; its CSV and JSON. Managers set the split aside here (POST).

Managers and analysts only (``evaluation.views.reports.VIEWERS``): the page shows the judges'
labels, which annotators, reviewers and adjudicators must never see. 403 for the other members,
404 for outsiders.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from annotation.access import AppRequest, get_campaign_for
from annotation.models import Criterion, Role
from evaluation.designs import held_out
from evaluation.forms.measures import JudgeAlignmentForm
from evaluation.measures import judge_alignment
from evaluation.reports import measure_tables
from evaluation.views.downloads import measure_file
from evaluation.views.reports import criterion_page


def _computed(request: AppRequest, slug: str, criterion: str) -> tuple[dict[str, Any], bool]:
    campaign, roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    split = held_out.split_of(criterion=criterion_obj)
    form = JudgeAlignmentForm(request.GET, split=split is not None)
    valid = form.is_valid()
    alpha, clusters, part = form.params()
    result = judge_alignment.compute_judge_alignment(
        criterion=criterion_obj, alpha=alpha, clusters=clusters, judges=judges, part=part, split=split
    )
    context: dict[str, Any] = {
        "campaign": campaign,
        "roles": roles,
        "criterion": criterion_obj,
        "form": form,
        "alpha": alpha,
        "clusters": clusters,
        "part": part,
        "split": split,
        "may_split": Role.MANAGER in roles or request.user.is_superuser,
        "errors": form.messages(),
        "result": result,
    }
    return context, valid


@login_required
@require_http_methods(["GET", "POST"])
def judge_alignment_page(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """Every judge of ``criterion`` against the humans, with the form's alpha, clusters and part
    (400 with the form's messages, and the defaults' figures, for a bad parameter).

    POST sets aside the criterion's held-out split (``evaluation.designs.held_out``), managers
    only (403 for the other members): made once, an existing split is left as it is. Back to
    the page, with a message."""
    if request.method == "POST":
        return _make_split(request, slug, criterion)
    context, valid = _computed(request, slug, criterion)
    return render(request, "evaluation/judge_alignment.html", context, status=200 if valid else 400)


def _make_split(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    campaign, _roles = get_campaign_for(user=request.user, slug=slug, roles=[Role.MANAGER])
    criterion_obj = get_object_or_404(Criterion, campaign=campaign, name=criterion)
    split, made = held_out.make_split(criterion=criterion_obj, user=request.user)
    if made:
        messages.success(
            request,
            _(
                "The human-labelled units of this criterion are now split for good: compare prompts "
                "on the selection part, report on the held-out part."
            ),
        )
    else:
        messages.info(
            request,
            _("This criterion's held-out split was made on %(date)s: it stays as it is.")
            % {"date": date_format(split.created_at, "SHORT_DATE_FORMAT")},
        )
    return redirect(reverse("evaluation:judge_alignment", args=[campaign.slug, criterion_obj.name]))


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
