"""The estimates report of one criterion: human vs judge vs PPI++ per theme, agreement, planner.

Managers and analysts only: the page shows the judge's labels, which annotators, reviewers and
adjudicators must never see.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotation.access import AppRequest, get_campaign_for, may_refresh_estimates
from annotation.criteria.categories import is_categorical
from annotation.models import Campaign, Criterion, Role
from evaluation.errors import EstimateError
from evaluation.estimates import planning, small_themes
from evaluation.estimates.categorical import compute_categorical_report, theme_tables
from evaluation.estimates.params import METHODS
from evaluation.forms.reports import ReportForm
from evaluation.measures import calibration, citations
from evaluation.models import Judge
from evaluation.reports import charts, judge_choice, read
from inference import ppi

VIEWERS = [Role.MANAGER, Role.ANALYST]


def criterion_page(
    *, request: AppRequest, slug: str, criterion: str
) -> tuple[Campaign, set[str], Criterion, list[Judge]]:
    """The campaign (403 unless the user is its manager or analyst), the user's roles, the
    criterion by name (404) and the campaign's judges able to label it, by name
    (``judge_choice.able_judges``): what every report page reads."""
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    criterion_obj = get_object_or_404(Criterion, campaign=campaign, name=criterion)
    judges = judge_choice.able_judges(criterion=criterion_obj, judges=campaign_judges(campaign=campaign))
    return campaign, roles, criterion_obj, judges


def campaign_judges(*, campaign: Campaign) -> list[Judge]:
    return list(Judge.objects.filter(campaign=campaign).order_by("name"))


@login_required
@require_GET
def report(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The report of ``criterion`` for managers and analysts (403 for any other role).

    A criterion with categories shows, per theme, each category's and group's estimates and
    the human x judge confusion matrix (``evaluation.estimates.categorical``), computed when asked for.
    GET parameters as in :class:`~evaluation.forms.reports.ReportForm`; with several judges and none
    named, the page asks which (the command refuses the same way). A bad parameter gives 400
    with a message naming it. The numbers are :func:`~evaluation.reports.read.report_to_show`'s:
    the latest snapshot of the parameters, or computed now, and the page says which. An htmx
    request gets the results region only, with status 200 even when it shows errors: htmx does
    not swap 4xx responses, and the region is where they belong. With ``shrinkage``, each
    theme's row adds its estimate shrunk toward the judge (``evaluation.estimates.small_themes``, read
    from the report's numbers: no query), or the page refuses it (400 naming ``shrinkage``).
    """
    campaign, roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    form = ReportForm(request.GET, judges=judges)
    valid = form.is_valid()
    params = form.params()
    errors = form.messages()
    if valid and params.shrinkage:
        try:
            small_themes.check_shrinkage(method=params.method, categorical=is_categorical(criterion_obj))
        except EstimateError as error:
            errors.append(str(error))
            valid = False
    context: dict[str, Any] = {
        "campaign": campaign,
        "roles": roles,
        "criterion": criterion_obj,
        "criteria": campaign.criteria.order_by("name"),
        "judges": judges,
        "params": params,
        "judge": params.judge,
        "methods": METHODS,
        "errors": errors,
        "method_notes": ppi.METHODS,
    }
    if valid and params.judge is not None and is_categorical(criterion_obj):
        categorical_report = compute_categorical_report(
            criterion=criterion_obj, judge=params.judge, method=params.method, alpha=params.alpha
        )
        context.update(
            categorical=categorical_report,
            report=categorical_report,
            tables=theme_tables(report=categorical_report),
        )
    elif valid and params.judge is not None:
        shown = read.report_to_show(
            criterion=criterion_obj, judge=params.judge, method=params.method, alpha=params.alpha
        )
        context.update(
            report=shown.report,
            shown=shown,
            may_refresh=may_refresh_estimates(roles=roles) and shown.computed_because != "parameters",
            plans=[
                planning.plan_theme(group=group, target_halfwidth=params.target, alpha=params.alpha)
                for group in shown.report.themes
            ],
            curve=planning.report_curve(report=shown.report),
            citation_rows=citations.rows_to_show(
                criterion=criterion_obj,
                judge=params.judge,
                method=params.method,
                alpha=params.alpha,
                precision=shown.report,
            ),
        )
        if params.shrinkage:
            try:
                context["small_themes"] = small_themes.shrink_report(report=shown.report)
            except EstimateError as error:
                errors.append(str(error))
                valid = False
        if params.judge.kind != Judge.Kind.IMPORTED:
            # Read when the section is shown (it reads every label: not on the snapshot's path).
            context["calibration_url"] = (
                reverse("evaluation:calibration", args=[campaign.slug, criterion_obj.name])
                + "?"
                + urlencode({"judge": params.judge.name})
            )
        if len(judges) > 1:
            context["comparison"] = read.overall_by_judge(
                criterion=criterion_obj, judges=judges, shown=shown, method=params.method, alpha=params.alpha
            )
    if request.htmx:
        return render(request, "evaluation/report.html#results", context)
    return render(request, "evaluation/report.html", context, status=200 if valid else 400)


@login_required
@require_GET
def calibration_section(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The judge's calibration on a binary criterion against the final human labels (reliability
    diagram, Brier score, expected calibration error; ``evaluation.measures.calibration``), for managers
    and analysts: the report's section, loaded when it comes into view (htmx), or a page of its
    own. GET ``judge``: a name among the campaign's judges (default as on the report); 400 naming
    it otherwise, or for a criterion with categories."""
    campaign, _roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    try:
        judge = judge_choice.choose_judge(judges=judges, name=request.GET.get("judge", ""))
    except EstimateError as error:
        return HttpResponseBadRequest(f"judge: {error.message}", content_type="text/plain; charset=utf-8")
    if judge is None or is_categorical(criterion_obj):
        return HttpResponseBadRequest(
            _("judge: choose a judge of this campaign (the calibration is of a binary criterion)"),
            content_type="text/plain; charset=utf-8",
        )
    judged = calibration.judge_calibration(criterion=criterion_obj, judge=judge)
    context = {
        "campaign": campaign,
        "criterion": criterion_obj,
        "judge": judge,
        "calibration": judged,
        "calibration_chart": charts.reliability_chart(
            points=[(b.mean_probability, b.observed, b.count) for b in judged.bins],
            title=_("Reliability of %(judge)s") % {"judge": judge.name},
            x_label=_("Judge's probability of 1"),
            y_label=_("Share of human 1s"),
        ),
    }
    template = "evaluation/calibration.html#section" if request.htmx else "evaluation/calibration.html"
    return render(request, template, context)
