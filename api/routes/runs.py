"""Judge runs: start one and cancel it (managers), follow it (managers and analysts)."""

from __future__ import annotations

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import Router, Status
from ninja.responses import codes_4xx

from annotation.access import get_campaign_for
from annotation.models import Role
from api.errors import domain_refusal, form_refusal
from api.schemas import ErrorOut, RunIn, RunOut
from evaluation.forms.runs import JudgeRunForm
from evaluation.jobs import cancel_judge_run, start_requested_run
from evaluation.judge import runs
from evaluation.models import JudgeRun

router = Router(tags=["judge runs"])
VIEWERS = [Role.MANAGER, Role.ANALYST]
OPERATORS = [Role.MANAGER]
LISTED = 100


def run_out(run: JudgeRun) -> dict:
    return {
        "id": run.pk,
        "criterion": run.criterion.name,
        "judge": run.judge.name,
        "scope": run.scope,
        "status": run.status,
        "active": run.is_active,
        "total_units": run.total_units,
        "done_units": run.done_units,
        "failed_units": run.failed_units,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "cost": run.cost,
        "url": reverse("api-v1:run", kwargs={"slug": run.campaign.slug, "run_id": run.pk}),
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }


def _runs():
    return JudgeRun.objects.select_related("campaign", "criterion", "judge")


@router.get("/campaigns/{slug}/runs", response={200: list[RunOut], codes_4xx: ErrorOut}, url_name="runs")
def list_runs(request: HttpRequest, slug: str):
    """The campaign's judge runs, newest first (the last LISTED)."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    return [run_out(run) for run in _runs().filter(campaign=campaign)[:LISTED]]


@router.post("/campaigns/{slug}/runs", response={202: RunOut, codes_4xx: ErrorOut})
def start_run(request: HttpRequest, slug: str, data: RunIn):
    """Start a judge run as the runs page does (managers): a new judge name makes an LLM judge
    with ``model``; "lexical" is the offline judge."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=OPERATORS)
    form = JudgeRunForm(
        {key: "" if value is None else str(value) for key, value in data.dict().items()}, campaign=campaign
    )
    if not form.is_valid():
        raise form_refusal(form)
    try:
        run = start_requested_run(campaign=campaign, request=form.cleaned_data, user=request.user)
    except runs.RunError as exc:
        raise domain_refusal(exc) from None
    return Status(202, run_out(_runs().get(pk=run.pk)))


@router.get("/campaigns/{slug}/runs/{run_id}", response={200: RunOut, codes_4xx: ErrorOut}, url_name="run")
def run_status(request: HttpRequest, slug: str, run_id: int):
    """A run's status and progress; ``active`` turns false when it has ended."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    return run_out(get_object_or_404(_runs(), pk=run_id, campaign=campaign))


@router.post(
    "/campaigns/{slug}/runs/{run_id}/cancel",
    response={200: RunOut, codes_4xx: ErrorOut},
    url_name="run_cancel",
)
def cancel_run(request: HttpRequest, slug: str, run_id: int):
    """Cancel a run (managers): pending batches stop, batches being judged finish. A run that has
    ended already: 400."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=OPERATORS)
    run = get_object_or_404(JudgeRun, pk=run_id, campaign=campaign)
    try:
        cancel_judge_run(run_id=run.pk)
    except runs.RunError as exc:
        raise domain_refusal(exc, default_field="run_id") from None
    return run_out(_runs().get(pk=run.pk))
