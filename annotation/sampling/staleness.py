"""When a pending or running sample's run has died, and a claim may be taken over.

Celery kills a task at its hard time limit, so a sample claimed longer ago than that (plus a
margin for clocks of different hosts) is no longer being computed.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from annotation.models import Sample

# Added to the task's hard time limit before a claim counts as dead: clocks of hosts differ.
STALE_MARGIN = timedelta(minutes=1)


def stale_after() -> timedelta:
    """How long after its claim a running sample is certainly no longer being computed."""
    return timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT) + STALE_MARGIN


def stale(now: datetime) -> Q:
    """Samples whose status is older than :func:`stale_after` (or of unknown age) at ``now``."""
    return Q(status_since__isnull=True) | Q(status_since__lte=now - stale_after())


def is_stale(*, sample: Sample, now: datetime | None = None) -> bool:
    """Whether ``sample`` is pending or running for longer than any run lasts: its run died.

    A pending one's task was lost, a running one's worker was killed; either may be run again.
    """
    if sample.status not in (Sample.Status.PENDING, Sample.Status.RUNNING):
        return False
    now = now or timezone.now()
    return sample.status_since is None or sample.status_since <= now - stale_after()


def seconds_until_stale(*, sample: Sample, now: datetime | None = None) -> float | None:
    """Seconds until a running sample's claim goes stale (0 when it is); None unless running."""
    if sample.status != Sample.Status.RUNNING:
        return None
    if sample.status_since is None:
        return 0.0
    now = now or timezone.now()
    return max(0.0, (sample.status_since + stale_after() - now).total_seconds())
