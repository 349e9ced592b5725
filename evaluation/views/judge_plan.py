"""The planner of several judges on a criterion (``evaluation.designs.judge_plan``): per theme, the
cheapest plan beside the best single judge and human labels alone, priced on the criterion's
ledger (``evaluation.measures.costs``); the campaign's hourly rate of labelling; and the button that
draws the shares and runs the judges (``evaluation.designs.judge_shares``); the plan's CSV and JSON.

Managers and analysts see the page (it shows the judges' figures: ``evaluation.views.reports.
VIEWERS``); managers alone set the rate and draw (403 for the others, 404 for outsiders).
"""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from annotation.access import AppRequest
from annotation.errors import FieldError
from annotation.models import Role
from evaluation import jobs
from evaluation.designs import judge_plan
from evaluation.forms.designs import HourlyRateForm, JudgePlanForm, ShareDrawForm
from evaluation.measures import costs
from evaluation.reports import measure_tables
from evaluation.views.downloads import measure_file
from evaluation.views.reports import criterion_page


def _may_manage(*, request: AppRequest, roles: set[str]) -> bool:
    return Role.MANAGER in roles or request.user.is_superuser


def _computed(request: AppRequest, slug: str, criterion: str) -> tuple[dict[str, Any], bool]:
    campaign, roles, criterion_obj, candidates = criterion_page(
        request=request, slug=slug, criterion=criterion
    )
    form = JudgePlanForm(request.GET, candidates=candidates)
    valid = form.is_valid()
    target, alpha, judges = form.params()
    minutes = form.given_minutes()
    plan = judge_plan.compute_plan(
        criterion=criterion_obj, judges=judges, target=target, alpha=alpha, minutes=minutes
    )
    context: dict[str, Any] = {
        "campaign": campaign,
        "roles": roles,
        "criterion": criterion_obj,
        "candidates": candidates,
        "chosen": {judge.name for judge in judges},
        "form": form,
        "target": target,
        "alpha": alpha,
        "minutes": minutes,
        "errors": form.messages(),
        "plan": plan,
        "may_manage": _may_manage(request=request, roles=roles),
        "seed": secrets.randbelow(2**31),
        "min_pilot": judge_plan.MIN_PILOT,
    }
    return context, valid


@login_required
@require_GET
def judge_plan_page(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The plan of ``criterion`` for the form's target, alpha and judges (400 with the form's
    messages, and the defaults' plan, for a bad parameter)."""
    context, valid = _computed(request, slug, criterion)
    return render(request, "evaluation/judge_plan.html", context, status=200 if valid else 400)


def _download(request: AppRequest, slug: str, criterion: str, *, extension: str) -> HttpResponse:
    context, valid = _computed(request, slug, criterion)
    if not valid:
        return HttpResponse(
            "\n".join(context["errors"]), status=400, content_type="text/plain; charset=utf-8"
        )
    data = judge_plan.plan_as_json(context["plan"])
    return measure_file(
        name=slugify(f"{context['campaign'].slug}-{context['criterion'].name}-judge-plan"),
        extension=extension,
        rows=lambda: measure_tables.judge_plan_csv_rows(data=data),
        data=lambda: data,
    )


@login_required
@require_GET
def judge_plan_csv(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """One row per theme and the totals, then the ledger with its sources, as CSV, formulas
    neutralised; the page's GET parameters."""
    return _download(request, slug, criterion, extension="csv")


@login_required
@require_GET
def judge_plan_json(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """The plan, its totals and its ledger as JSON (``judge_plan.plan_as_json``: the command's
    and the API's); the page's GET parameters."""
    return _download(request, slug, criterion, extension="json")


def _manager_page(request: AppRequest, slug: str, criterion: str):
    campaign, roles, criterion_obj, candidates = criterion_page(
        request=request, slug=slug, criterion=criterion
    )
    if not _may_manage(request=request, roles=roles):
        raise PermissionDenied("Only the campaign's managers may do this.")
    return campaign, criterion_obj, candidates


@login_required
@require_POST
def judge_plan_rate(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """Set the campaign's hourly rate of labelling (managers), back to the planner."""
    campaign, criterion_obj, _candidates = _manager_page(request, slug, criterion)
    form = HourlyRateForm(request.POST)
    if form.is_valid():
        costs.set_hourly_rate(campaign=campaign, rate=form.cleaned_data["rate"])
        messages.success(request, _("The hourly rate of labelling is saved."))
    else:
        messages.error(request, "; ".join(str(error) for error in form.errors.get("rate", [])))
    return redirect(reverse("evaluation:judge_plan", args=[campaign.slug, criterion_obj.name]))


@login_required
@require_POST
def judge_plan_draw(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """Draw the shares of the plan the form's parameters give and start the judges' runs
    (managers); to the runs' page when done, back to the planner with the reason when refused."""
    campaign, criterion_obj, candidates = _manager_page(request, slug, criterion)
    form = ShareDrawForm(request.POST, candidates=candidates)
    back = reverse("evaluation:judge_plan", args=[campaign.slug, criterion_obj.name])
    if not form.is_valid():
        messages.error(request, "; ".join(form.messages()))
        return redirect(back)
    target, alpha, judges = form.params()
    seed = form.cleaned_data.get("seed")
    plan = judge_plan.compute_plan(
        criterion=criterion_obj, judges=judges, target=target, alpha=alpha, minutes=form.given_minutes()
    )
    try:
        shares, started = jobs.draw_shares_and_run(
            plan=plan, seed=secrets.randbelow(2**31) if seed is None else seed, user=request.user
        )
    except FieldError as exc:
        messages.error(request, str(exc.reason))
        return redirect(back)
    messages.success(
        request,
        _("Shares drawn: %(shares)s; judge runs started: %(runs)s.")
        % {"shares": len(shares), "runs": len(started)},
    )
    return redirect(reverse("evaluation:run_list", args=[campaign.slug]))
