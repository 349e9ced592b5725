"""Celery tasks: thin, take ids, safe to run twice (batches are claimed with a conditional UPDATE)."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from evaluation.estimates import snapshots
from evaluation.judge import claims, runs, scheduler
from evaluation.models import JudgeRun, ReportSnapshot

logger = logging.getLogger(__name__)

# Batches per task: enough to keep a worker's threads busy, small enough to spread over workers.
BATCHES_PER_TASK_FACTOR = 4


@shared_task(acks_late=True, name="evaluation.dispatch_run")
def dispatch_run(run_id: int) -> int:
    """Fan a run's pending batches out into tasks of bounded size; how many tasks were sent.

    Batches left claimed by dead workers are returned to pending first, so they are sent too."""
    claims.recover_run(run_id=run_id)
    run = JudgeRun.objects.get(pk=run_id)
    chunks = runs.pending_batch_chunks(
        run_id=run_id, chunk_size=max(1, run.concurrency * BATCHES_PER_TASK_FACTOR)
    )
    for chunk in chunks:
        judge_batches.delay(run_id, chunk)
    return len(chunks)


@shared_task(
    acks_late=True,
    name="evaluation.judge_batches",
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def judge_batches(run_id: int, batch_ids: list[int]) -> int:
    """Judge these batches of the run; batches already claimed or done are skipped. Batches of
    the run left claimed by dead workers (a prefork child killed mid-task) are taken over. The
    task that finds the run over says the estimates moved (the app then has them recomputed)."""
    recovered = claims.recover_run(run_id=run_id)
    mine = set(batch_ids)
    stored = scheduler.process_batches(
        run_id=run_id, batch_ids=list(batch_ids) + [b for b in recovered if b not in mine]
    )
    over = JudgeRun.objects.filter(pk=run_id).exclude(status__in=claims.ACTIVE)
    criterion_id = over.values_list("criterion_id", flat=True).first()
    if criterion_id is not None:
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
    """Recompute the criterion's estimates and store the snapshots that changed; how many."""
    return len(snapshots.run_scheduled_refresh(criterion_id=criterion_id))


@shared_task(acks_late=True, name="evaluation.recover_runs")
def recover_runs() -> list[int]:
    """Return dead workers' claims to the queue and re-dispatch every active run with work left."""
    run_ids = claims.recover_stale_batches()
    for run_id in run_ids:
        dispatch_run.delay(run_id)
    return run_ids


@worker_ready.connect
def _recover_on_start(sender=None, **kwargs) -> None:  # pragma: no cover - runs in the worker
    # A worker killed with kill -9 leaves batches claimed by a process that no longer exists and
    # may lose the messages it had prefetched: a starting worker puts that work back.
    try:
        recover_runs.delay()
    except Exception:  # the worker must start even if the broker hiccups
        logger.exception("could not enqueue the recovery of judge runs")
