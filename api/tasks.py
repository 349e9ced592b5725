"""Background jobs of the API: thin callers of domain functions, given ids only."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from api.batches import run_batch


@shared_task(
    name="api.import_batch",
    acks_late=True,
    serializer="json",
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def import_batch_task(batch_id: int) -> str:
    """Import the pending answer batch ``batch_id``; a no-op once it is taken or finished."""
    return run_batch(batch_id=batch_id).status
