"""Judge runs: start one, follow its progress live, cancel, resume."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from annotation.access import AppRequest, get_campaign_for
from annotation.forms import add_domain_error
from annotation.models import Criterion, Role
from evaluation.forms.runs import JudgeRunForm, ResumeForm
from evaluation.jobs import cancel_judge_run, resume_judge_run, start_requested_run
from evaluation.judge import accounting, bindings, runs
from evaluation.models import Judge, JudgeRun

VIEWERS = [Role.MANAGER, Role.ANALYST]
OPERATORS = [Role.MANAGER]


@login_required
@require_http_methods(["GET", "POST"])
def run_list(request: AppRequest, slug: str) -> HttpResponse:
    """The campaign's judge runs (managers and analysts); a manager's POST starts one
    (:class:`~evaluation.forms.runs.JudgeRunForm`) and goes to it, or gives 400 naming the fields."""
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    errors: list[str] = []
    if request.method == "POST":
        campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=OPERATORS)
        form = JudgeRunForm(request.POST, campaign=campaign)
        if form.is_valid():
            try:
                run = start_requested_run(campaign=campaign, request=form.cleaned_data, user=request.user)
            except runs.RunError as exc:
                add_domain_error(form, exc)
            else:
                return redirect("evaluation:run_detail", slug=campaign.slug, run_id=run.pk)
        errors = form.messages()
    context = {
        "campaign": campaign,
        "roles": roles,
        "can_operate": bool(roles.intersection(OPERATORS)),
        "runs": JudgeRun.objects.filter(campaign=campaign).select_related("judge", "criterion")[:100],
        "criteria": Criterion.objects.filter(campaign=campaign),
        "judges": Judge.objects.filter(campaign=campaign),
        "scopes": JudgeRun.Scope.choices,
        "confidence_sources": JudgeRunForm.CONFIDENCE_SOURCES,
        "errors": errors,
        # A refused form shows what was sent, so that a person corrects it rather than types it again.
        "sent": request.POST if errors else {},
    }
    return render(request, "evaluation/runs.html", context, status=400 if errors else 200)


def _run_context(*, campaign, roles, run: JudgeRun) -> dict:
    return {
        "campaign": campaign,
        "run": run,
        "stats": accounting.run_stats(run=run),
        "binding": bindings.binding_of(judge=run.judge, criterion=run.criterion),
        "reasons": runs.failure_reasons(run=run),
        "can_operate": bool(roles.intersection(OPERATORS)),
    }


@login_required
@require_GET
def run_detail(request: AppRequest, slug: str, run_id: int) -> HttpResponse:
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    run = get_object_or_404(
        JudgeRun.objects.select_related("judge", "criterion"), pk=run_id, campaign=campaign
    )
    context = _run_context(campaign=campaign, roles=roles, run=run)
    if request.htmx:
        response = render(request, "evaluation/run_detail.html#progress", context)
        if not run.is_active:
            # 286 tells htmx to stop polling; the final state is in this last fragment.
            stop = HttpResponseStopPolling(response.content)
            return stop
        return response
    return render(request, "evaluation/run_detail.html", context)


@login_required
@require_POST
def run_cancel(request: AppRequest, slug: str, run_id: int) -> HttpResponse:
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=OPERATORS)
    run = get_object_or_404(JudgeRun, pk=run_id, campaign=campaign)
    try:
        cancel_judge_run(run_id=run.pk)
        messages.success(request, gettext("Run %(number)s cancelled.") % {"number": run.pk})
    except runs.RunError as exc:
        messages.error(request, str(exc))
    return redirect("evaluation:run_detail", slug=campaign.slug, run_id=run.pk)


@login_required
@require_POST
def run_resume(request: AppRequest, slug: str, run_id: int) -> HttpResponse:
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=OPERATORS)
    run = get_object_or_404(JudgeRun, pk=run_id, campaign=campaign)
    form = ResumeForm(request.POST)
    if not form.is_valid():
        messages.error(request, "; ".join(form.messages()))
    else:
        try:
            resume_judge_run(run_id=run.pk, token_budget=form.cleaned_data["token_budget"])
            messages.success(request, gettext("Run %(number)s resumed.") % {"number": run.pk})
        except runs.RunError as exc:
            messages.error(request, str(exc))
    return redirect("evaluation:run_detail", slug=campaign.slug, run_id=run.pk)
