"""Background jobs of the API: thin callers of domain functions, given ids only."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from annotation import broker
from api.batches import batches_to_import, run_batch


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


@shared_task(acks_late=True, name="api.recover_batches")
def recover_batches() -> list[int]:
    """Send again the import of every pending batch of answers (``batches_to_import``)."""
    batch_ids = batches_to_import()
    for batch_id in batch_ids:
        broker.send(import_batch_task, batch_id)
    return batch_ids
