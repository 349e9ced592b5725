"""Background jobs of the annotation app: thin callers of domain functions, given ids only."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from annotation.models import Sample
from annotation.sampling import run_sample

logger = logging.getLogger(__name__)


@shared_task(
    name="annotation.draw_sample",
    acks_late=True,
    serializer="json",
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def draw_sample_task(sample_id: int) -> None:
    """Compute the pending sample ``sample_id`` (a draw or a top-up); a no-op unless it is pending."""
    try:
        run_sample(sample_id=sample_id)
    except Sample.DoesNotExist:
        # Deleted between the request and the worker: nothing is left to compute.
        logger.warning("sample %s no longer exists", sample_id)
