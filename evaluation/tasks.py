"""Celery tasks: thin, take ids, safe to run twice (batches are claimed with a conditional UPDATE)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from annotation import broker
from annotation.models import Campaign, Criterion
from evaluation import page_warming
from evaluation.estimates import snapshots
from evaluation.judge import accounting, claims, runs, scheduler
from evaluation.models import JudgeRun, ReportSnapshot

logger = logging.getLogger(__name__)

# Batches per task: enough to keep a worker's threads busy, small enough to spread over workers.
BATCHES_PER_TASK_FACTOR = 4
# A judge run's tasks outlive a lost database: an attempt that loses its connection is tried
# again (Celery's Django fix-up closes the broken connection after it), 1, 2, 4... then every 60
# seconds, JUDGE_DB_RETRIES times (about half an hour by default).
DATABASE_LOST = (OperationalError, InterfaceError)
RETRY_ON_DATABASE_LOST = {
    "autoretry_for": DATABASE_LOST,
    "retry_backoff": 1,
    "retry_backoff_max": 60,
    "retry_jitter": False,
    "max_retries": settings.JUDGE_DB_RETRIES,
}


@shared_task(acks_late=True, name="evaluation.dispatch_run", **RETRY_ON_DATABASE_LOST)
def dispatch_run(run_id: int) -> int:
    """Fan a run's pending batches out into tasks of bounded size; how many tasks were sent.

    Batches left claimed by dead workers are returned to pending first, so they are sent too."""
    claims.recover_run(run_id=run_id)
    run = JudgeRun.objects.get(pk=run_id)
    chunks = runs.pending_batch_chunks(
        run_id=run_id, chunk_size=max(1, run.concurrency * BATCHES_PER_TASK_FACTOR)
    )
    for chunk in chunks:
        broker.send(judge_batches, run_id, chunk)
    return len(chunks)


@shared_task(
    bind=True,
    acks_late=True,
    name="evaluation.judge_batches",
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
    **RETRY_ON_DATABASE_LOST,
)
def judge_batches(self, run_id: int, batch_ids: list[int]) -> int:
    """Judge these batches of the run; batches already claimed or done are skipped. Batches of
    the run left claimed by dead workers (a prefork child killed mid-task), and those an earlier
    attempt of this task still holds (its database went away), are taken over. The task that
    finds the run over counts its totals and says the estimates moved (the app then has them
    recomputed)."""
    token = (self.request.id or "").replace("-", "")[:16] or None
    recovered = claims.recover_run(run_id=run_id)
    if token is not None:
        recovered += claims.return_own_claims(run_id=run_id, token=token)
    mine = set(batch_ids)
    stored = scheduler.process_batches(
        run_id=run_id,
        batch_ids=list(batch_ids) + [b for b in dict.fromkeys(recovered) if b not in mine],
        token=token,
    )
    over = JudgeRun.objects.filter(pk=run_id).exclude(status__in=claims.ACTIVE)
    criterion_id = over.values_list("criterion_id", flat=True).first()
    if criterion_id is not None:
        # The run's totals once more: an attempt that marked it done may have lost the database
        # before it counted its last batches.
        accounting.sync_counters(run_id=run_id)
        snapshots.announce_estimates_moved(
            criterion_ids=[criterion_id], trigger=ReportSnapshot.Trigger.JUDGE_RUN
        )
    return stored


@shared_task(
    acks_late=True,
    name="evaluation.refresh_estimates",
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def refresh_estimates_task(criterion_id: int) -> int:
    """Recompute the criterion's estimates and store the snapshots that changed; how many. The
    heavy pages of its campaign are then computed ahead of their visit (``warm_pages``)."""
    stored = len(snapshots.run_scheduled_refresh(criterion_id=criterion_id))
    if page_warming.enabled():
        campaign_id = Criterion.objects.filter(pk=criterion_id).values_list("campaign_id", flat=True).first()
        if campaign_id is not None:
            send_page_warming(campaign_id, [criterion_id])
    return stored


def send_page_warming(campaign_id: int, criterion_ids: list[int] | None = None) -> None:
    """Send ``warm_pages``; its callers send it only where its work reaches the pages
    (``page_warming.enabled``). A broker that does not answer is logged: the pages are then
    computed on their first visit, as without."""
    try:
        broker.send(warm_pages, campaign_id, criterion_ids)
    except broker.QueueDown:
        logger.warning(
            "the pages of campaign %s are not computed ahead: the broker did not answer", campaign_id
        )


@shared_task(
    acks_late=True,
    name="evaluation.warm_pages",
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def warm_pages(campaign_id: int, criterion_ids: list[int] | None = None) -> list[str]:
    """Compute the campaign's heavy pages into the page cache at their default parameters
    (``page_warming.warm_campaign``; ``criterion_ids``: only those criteria's reports); what
    was warmed. Nothing for a campaign deleted since."""
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return []
    criteria = (
        None if criterion_ids is None else campaign.criteria.filter(pk__in=criterion_ids).order_by("name")
    )
    return page_warming.warm_campaign(campaign=campaign, criteria=criteria)


@shared_task(acks_late=True, name="evaluation.recover_runs")
def recover_runs() -> list[int]:
    """Return dead workers' claims to the queue and re-dispatch every active run with work left."""
    run_ids = claims.recover_stale_batches()
    for run_id in run_ids:
        broker.send(dispatch_run, run_id)
    return run_ids


@shared_task(acks_late=True, name="evaluation.recover_refreshes")
def recover_refreshes() -> list[int]:
    """Send again the recomputation of every criterion whose estimates are due
    (``snapshots.refreshes_due``)."""
    criterion_ids = snapshots.refreshes_due()
    for criterion_id in criterion_ids:
        broker.send(refresh_estimates_task, criterion_id)
    return criterion_ids
