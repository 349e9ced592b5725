"""Starting, cancelling and resuming background jobs; enqueued after the transaction commits."""

from __future__ import annotations

import functools

from django.db import transaction

from annotation import broker
from annotation.models import Criterion
from evaluation import page_warming
from evaluation.designs import judge_shares
from evaluation.designs.judge_plan import JudgePlan
from evaluation.estimates import snapshots
from evaluation.judge import preflight, runs
from evaluation.models import Judge, JudgeRun, JudgeShare, ReportSnapshot
from evaluation.tasks import dispatch_run, refresh_estimates_task, send_page_warming


def start_judge_run(
    *,
    criterion: Criterion,
    judge: Judge,
    scope: str = JudgeRun.Scope.ALL,
    concurrency: int | None = None,
    token_budget: int | None = None,
    user=None,
) -> JudgeRun:
    """Create a run and hand its batches to the workers once the run is committed."""
    with transaction.atomic():
        run = runs.create_run(
            criterion=criterion,
            judge=judge,
            scope=scope,
            concurrency=concurrency,
            token_budget=token_budget,
            user=user,
        )
        if run.is_active:
            broker.send_on_commit(dispatch_run, run.pk)
    return run


def draw_shares_and_run(*, plan: JudgePlan, seed: int, user=None) -> tuple[list[JudgeShare], list[JudgeRun]]:
    """The planner's button: draw the plan's judge shares (``judge_shares.draw_planned``) and
    start each judge it names, all or nothing (EstimateError or RunError: nothing drawn or
    started)."""
    with transaction.atomic():
        drawn = judge_shares.draw_planned(plan=plan, seed=seed, user=user)
        started = [
            start_judge_run(criterion=plan.criterion, judge=judge, scope=scope, user=user)
            for judge, scope in drawn.runs
        ]
    return drawn.shares, started


def start_requested_run(*, campaign, request: dict, user=None) -> JudgeRun:
    """Start the run a valid ``JudgeRunForm`` asks for (its ``cleaned_data``): the judge named,
    made with ``model`` when new, on the criterion, scope, concurrency and budget given. The runs
    page and the API both start runs through it. Raises RunError as the run's creation does, and
    when an LLM judge's server cannot serve it (``preflight.check_judge``: a judge refused so is
    not made)."""
    judge = runs.get_or_create_judge(
        campaign=campaign,
        name=request["judge"],
        model=request["model"] or None,
        confidence_source=request.get("confidence") or None,
        check=preflight.check_judge,
    )
    return start_judge_run(
        criterion=request["criterion"],
        judge=judge,
        scope=request["scope"],
        concurrency=request["concurrency"],
        token_budget=request["token_budget"],
        user=user,
    )


def cancel_judge_run(*, run_id: int) -> JudgeRun:
    """Cancel a run (pending batches stop; batches being judged finish)."""
    return runs.cancel_run(run_id=run_id)


def resume_judge_run(*, run_id: int, token_budget: int | None = None) -> JudgeRun:
    """Resume a cancelled, budget-stopped, failed or partly failed run and dispatch its work
    again; RunError when an LLM judge's server cannot serve it (``preflight.check_judge``)."""
    preflight.check_judge(Judge.objects.get(runs__pk=run_id))
    with transaction.atomic():
        run = runs.resume_run(run_id=run_id, token_budget=token_budget)
        broker.send_on_commit(dispatch_run, run.pk)
    return run


def request_estimates_refresh(*, criterion: Criterion) -> bool:
    """Recompute the criterion's estimates now, in the background (the report page's button);
    False when a recomputation is already due."""
    return enqueue_refresh(criterion_id=criterion.pk, trigger=ReportSnapshot.Trigger.MANUAL)


def enqueue_refresh(*, criterion_id: int, trigger: str, delay_s: float = 0.0) -> bool:
    """Have a worker recompute the criterion's estimates in ``delay_s`` seconds, once the
    current transaction commits; False (nothing enqueued) when a recomputation is already due,
    which it then covers."""
    if not snapshots.schedule_refresh(criterion_id=criterion_id, trigger=trigger, delay_s=delay_s):
        return False
    broker.send_on_commit(refresh_estimates_task, criterion_id, countdown=delay_s)
    return True


def request_page_warming(*, campaign_id: int, criterion_ids: list[int] | None = None) -> None:
    """Have a worker compute the campaign's heavy pages ahead of their visit once the current
    transaction commits (``tasks.warm_pages``; ``criterion_ids``: only those criteria's reports),
    where that reaches the pages (``page_warming.enabled``; nothing is scheduled otherwise)."""
    if page_warming.enabled():
        transaction.on_commit(functools.partial(send_page_warming, campaign_id, criterion_ids))
