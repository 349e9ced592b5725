"""The estimates report of one criterion: human vs judge vs PPI++ per theme, agreement, planner.

Managers and analysts only: the page shows the judge's labels, which annotators, reviewers and
adjudicators must never see.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from annotation.access import AppRequest, get_campaign_for, may_refresh_estimates
from annotation.criteria.categories import is_categorical
from annotation.models import Campaign, Criterion, Role
from evaluation.errors import EstimateError
from evaluation.estimates import judge_choice, planning
from evaluation.estimates.categorical import CategoricalReport, theme_tables
from evaluation.estimates.params import METHODS
from evaluation.forms.reports import PrimaryJudgeForm, ReportForm
from evaluation.models import Judge
from evaluation.reports import read, summary
from inference.estimators import ppi

VIEWERS = [Role.MANAGER, Role.ANALYST]


def criterion_page(
    *, request: AppRequest, slug: str, criterion: str
) -> tuple[Campaign, set[str], Criterion, list[Judge]]:
    """The campaign (403 unless the user is its manager or analyst), the user's roles, the
    criterion by name (404) and the judges its reports may read, by name
    (``judge_choice.candidates``): what every report page reads."""
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    criterion_obj = get_object_or_404(Criterion, campaign=campaign, name=criterion)
    criterion_obj.campaign = campaign
    return campaign, roles, criterion_obj, judge_choice.candidates(criterion=criterion_obj)


@login_required
@require_GET
def report(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The report of ``criterion`` for managers and analysts (403 for any other role).

    GET parameters as in :class:`~evaluation.forms.reports.ReportForm`, read by
    :func:`~evaluation.reports.read.read_report` as every road reads a report: the latest
    snapshot of the parameters, or computed now, and the page says which. With several
    candidate judges and no default, the page asks which (200: a choice to make, not an error).
    A bad parameter gives 400 with a message naming it. An htmx request gets the results region
    only, with status 200 even when it shows errors: htmx does not swap 4xx responses, and the
    region is where they belong. A criterion with categories shows, per theme, each category's
    and group's estimates and the human x judge confusion matrix.
    """
    campaign, roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    form = ReportForm(request.GET, criterion=criterion_obj, judges=judges)
    valid = form.is_valid()
    params = form.params()
    errors = form.messages()
    context: dict[str, Any] = {
        "campaign": campaign,
        "roles": roles,
        "criterion": criterion_obj,
        "criteria": campaign.criteria.order_by("name"),
        "judges": judges,
        "params": params,
        "judge": params.judge,
        "primary": judge_choice.primary_among(judges),
        "may_choose_primary": Role.MANAGER in roles or request.user.is_superuser,
        "methods": METHODS,
        "errors": errors,
        "method_notes": ppi.METHODS,
    }
    if valid and params.request is not None:
        try:
            shown = read.read_report(params.request)
        except EstimateError as error:
            errors.append(str(error))
            valid = False
        else:
            _add_shown(context, shown=shown, judges=judges, roles=roles, target=params.target)
    if request.htmx:
        return render(request, "evaluation/report.html#results", context)
    return render(request, "evaluation/report.html", context, status=200 if valid else 400)


def _add_shown(
    context: dict[str, Any], *, shown: read.ShownReport, judges: list[Judge], roles: set[str], target: float
) -> None:
    """What the report page shows of ``shown``: the numbers, their provenance, the planner,
    the small themes, citation recall, the calibration section's address, the other judges."""
    context.update(report=shown.report, shown=shown, combined=shown.combined)
    request = shown.request
    if isinstance(shown.report, CategoricalReport):
        context.update(categorical=shown.report, tables=theme_tables(report=shown.report))
        return
    campaign, criterion = request.criterion.campaign, request.criterion
    plans, curve = planning.report_planner(report=shown.binary, target_halfwidth=target, alpha=request.alpha)
    context.update(
        may_refresh=may_refresh_estimates(roles=roles)
        and shown.provenance.computed_because != read.PARAMETERS,
        plans=plans,
        curve=curve,
        citation_rows=shown.citation_rows,
        small_themes=shown.small_themes,
    )
    if request.judge.kind != Judge.Kind.IMPORTED:
        # Loaded right after the page (it reads every label: not on the snapshot's path).
        context["calibration_url"] = (
            reverse("evaluation:calibration", args=[campaign.slug, criterion.name])
            + "?"
            + urlencode({"judge": request.judge.name})
        )
    # The answers against their reference answers read every answer: loaded after the page too.
    context["reference_url"] = reverse("evaluation:reference_answers", args=[campaign.slug])
    # The change against the previous version reads both versions' labels: loaded after the page too.
    context["version_url"] = (
        reverse("evaluation:previous_version", args=[campaign.slug, criterion.name])
        + "?"
        + urlencode({"judge": request.judge.name, "method": request.method, "alpha": request.alpha})
    )
    if len(judges) > 1:
        context["comparison"] = read.overall_by_judge(shown=shown, judges=judges)


@login_required
@require_POST
def choose_primary_judge(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """Make a candidate judge the criterion's primary judge (POST ``judge``; empty: none), the one
    its reports read when none is named; managers only (403 for the other members). Back to the
    report, with a message; a name that is not a candidate gives the message, nothing changes."""
    campaign, _roles = get_campaign_for(user=request.user, slug=slug, roles=[Role.MANAGER])
    criterion_obj = get_object_or_404(Criterion, campaign=campaign, name=criterion)
    form = PrimaryJudgeForm(request.POST)
    name = form.cleaned_data["judge"] if form.is_valid() else ""
    try:
        chosen = judge_choice.set_primary_judge(criterion=criterion_obj, name=name, user=request.user)
    except EstimateError as error:
        messages.error(request, error.message)
    else:
        if chosen is None:
            messages.info(request, _("This criterion has no primary judge any more."))
        else:
            messages.success(
                request,
                _("%(judge)s is now the primary judge of this criterion: its reports read it by default.")
                % {"judge": chosen.name},
            )
    return redirect(reverse("evaluation:report", args=[campaign.slug, criterion_obj.name]))


@login_required
@require_GET
def calibration_section(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The judge's calibration on a binary criterion against the final human labels (reliability
    diagram, Brier score, expected calibration error; ``evaluation.measures.calibration``), for managers
    and analysts: the report's section, loaded as soon as the report is shown (htmx), or a page of
    its own. GET ``judge``: a name among the campaign's judges (default as on the report); 400 naming
    it otherwise, or for a criterion with categories."""
    campaign, _roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    try:
        judge = judge_choice.choose_judge(
            criterion=criterion_obj, name=request.GET.get("judge", ""), judges=judges
        )
    except EstimateError as error:
        return HttpResponseBadRequest(f"judge: {error.message}", content_type="text/plain; charset=utf-8")
    if judge is None or is_categorical(criterion_obj):
        return HttpResponseBadRequest(
            _("judge: choose a judge of this campaign (the calibration is of a binary criterion)"),
            content_type="text/plain; charset=utf-8",
        )
    context = {
        "campaign": campaign,
        "criterion": criterion_obj,
        **summary.calibration_context(criterion=criterion_obj, judge=judge),
    }
    template = "evaluation/calibration.html#section" if request.htmx else "evaluation/calibration.html"
    return render(request, template, context)
