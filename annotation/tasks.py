"""Background jobs of the annotation app: thin callers of domain functions, given ids only."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from annotation import broker
from annotation.models import Sample
from annotation.sampling.background import run_sample, samples_to_draw
from annotation.sampling.staleness import seconds_until_stale

logger = logging.getLogger(__name__)

# Each retry waits until the other run's claim is stale, when run_sample takes it over: a few
# are enough, unless someone keeps running the sample again by hand.
STALE_RETRIES = 3


@shared_task(
    bind=True,
    name="annotation.draw_sample",
    acks_late=True,
    serializer="json",
    max_retries=STALE_RETRIES,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def draw_sample_task(self, sample_id: int) -> None:
    """Compute the pending sample ``sample_id`` (a draw or a top-up); a no-op once it is finished.

    When another run holds the sample, this may be the message redelivered after that run's
    worker was killed: look again once its claim is stale, and take it over then.
    """
    try:
        sample = run_sample(sample_id=sample_id)
    except Sample.DoesNotExist:
        # Deleted between the request and the worker: nothing is left to compute.
        logger.warning("sample %s no longer exists", sample_id)
        return
    wait = seconds_until_stale(sample=sample)
    if wait is not None:
        raise self.retry(countdown=wait + 1)


@shared_task(acks_late=True, name="annotation.recover_samples")
def recover_samples() -> list[int]:
    """Send again the draw of every sample waiting for a worker (``samples_to_draw``)."""
    sample_ids = samples_to_draw()
    for sample_id in sample_ids:
        broker.send(draw_sample_task, sample_id)
    return sample_ids
