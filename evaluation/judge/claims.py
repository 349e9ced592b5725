"""Who holds which batch of a run: claims taken with a conditional UPDATE, given back, and the
claims of dead workers returned to the queue.

A batch is claimed (``running``, ``claimed_by`` its claimant) before it is judged and stays so
until it is stored, so that a process killed meanwhile leaves it to ``recover_run`` and
``recover_stale_batches``. Every write here is conditional on the claim it expects: a live claim
is never taken, and a batch is stored by its current claimant only.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from evaluation.models import JudgeBatch, JudgeRun

# A run's statuses in which its batches may be claimed (``JudgeRun.is_active``).
ACTIVE = (JudgeRun.Status.PENDING, JudgeRun.Status.RUNNING)


def worker_name(token: str | None = None) -> str:
    """Who holds a claim: host, process id and a token of this call, so that a restarted worker
    can spot the claims of dead processes and two calls in one process never mix their claims.
    ``token``: the caller's own (a task's id, the same on each of its attempts), else a new one."""
    return f"{socket.gethostname()}:{os.getpid()}:{token or uuid.uuid4().hex[:8]}"


def return_own_claims(*, run_id: int, token: str) -> list[int]:
    """Return to pending the run's batches an earlier attempt of the caller ``token`` still
    holds, in whatever process it ran: an attempt cut off by a lost database could not give them
    back, and no other caller holds that token. Their ids."""
    mine = JudgeBatch.objects.filter(
        run_id=run_id, status=JudgeBatch.Status.RUNNING, claimed_by__endswith=f":{token}"
    )
    ids = list(mine.values_list("id", flat=True))
    mine.update(status=JudgeBatch.Status.PENDING, claimed_by="")
    return ids


def claim(*, run_id: int, batch_ids: list[int], owner: str) -> list[int]:
    """Claim the pending batches among ``batch_ids`` in one conditional UPDATE; the ids we got.

    Nothing is claimed once the run is no longer active (cancelled, stopped by its budget, done).
    """
    if not batch_ids:
        return []
    if not JudgeRun.objects.filter(pk=run_id, status__in=ACTIVE).exists():
        return []
    JudgeBatch.objects.filter(run_id=run_id, id__in=batch_ids, status=JudgeBatch.Status.PENDING).update(
        status=JudgeBatch.Status.RUNNING,
        claimed_by=owner,
        claimed_at=timezone.now(),
        attempts=F("attempts") + 1,
    )
    return list(
        JudgeBatch.objects.filter(
            run_id=run_id, id__in=batch_ids, status=JudgeBatch.Status.RUNNING, claimed_by=owner
        ).values_list("id", flat=True)
    )


def unclaim(*, batch_ids: list[int], owner: str, status: str = JudgeBatch.Status.PENDING) -> None:
    """Give back batches ``owner`` claimed but never started: to the queue (pending), or
    ``cancelled`` when their run was cancelled meanwhile."""
    if batch_ids:
        JudgeBatch.objects.filter(
            id__in=batch_ids, claimed_by=owner, status=JudgeBatch.Status.RUNNING
        ).update(status=status, claimed_by="")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _return_stale_claims(*, run_id: int | None, stale_after_s: float | None) -> list[int]:
    stale_after_s = stale_after_s if stale_after_s is not None else settings.CELERY_TASK_TIME_LIMIT
    cutoff = timezone.now() - timedelta(seconds=stale_after_s)
    host = socket.gethostname()
    running = JudgeBatch.objects.filter(status=JudgeBatch.Status.RUNNING, run__status__in=ACTIVE)
    if run_id is not None:
        running = running.filter(run_id=run_id)
    stale: list[tuple[int, str]] = []
    for batch_id, claimed_by, claimed_at in running.values_list("id", "claimed_by", "claimed_at"):
        owner_host, pid = (claimed_by.split(":") + ["", ""])[:2]
        dead_here = owner_host == host and pid.isdigit() and not _pid_alive(int(pid))
        if dead_here or (claimed_at is not None and claimed_at < cutoff):
            stale.append((batch_id, claimed_by))
    returned = []
    for batch_id, claimed_by in stale:
        # Conditional on the claim we judged stale: a claim renewed meanwhile is left alone.
        if JudgeBatch.objects.filter(
            id=batch_id, status=JudgeBatch.Status.RUNNING, claimed_by=claimed_by
        ).update(status=JudgeBatch.Status.PENDING, claimed_by=""):
            returned.append(batch_id)
    return returned


def recover_run(*, run_id: int, stale_after_s: float | None = None) -> list[int]:
    """Return the run's batches claimed by dead workers to pending; their ids.

    Stale as in ``recover_stale_batches``. Safe at any time: a live worker's claim is never taken,
    and a batch whose claim is taken anyway (past the time limit) is stored by one claimant only.
    """
    return _return_stale_claims(run_id=run_id, stale_after_s=stale_after_s)


def recover_stale_batches(*, stale_after_s: float | None = None) -> list[int]:
    """Return the claims of dead workers to the queue; the ids of the runs that have work again.

    A batch is stale when its claim comes from a process of this host that no longer exists (a
    worker killed with kill -9), or when it was claimed longer ago than the task time limit (a
    worker on another machine that died).
    """
    _return_stale_claims(run_id=None, stale_after_s=stale_after_s)
    return sorted(
        set(
            JudgeBatch.objects.filter(status=JudgeBatch.Status.PENDING, run__status__in=ACTIVE).values_list(
                "run_id", flat=True
            )
        )
    )
