"""Handing jobs to the workers through the broker (Redis in production): the one place the app
sends a job from, and what a person is told when the broker does not answer.

A job is sent once the transaction that recorded its work commits. When the broker does not
answer (Celery retries the send for about a second first), the work stays recorded as pending
(a judge run, a sample, a batch of answers, a due recomputation of the estimates) and
:class:`QueueDown` is raised: the page answers 503 saying so, the API a JSON 503. Every worker,
each time it connects to the broker (at its start and after an outage), sends the recovery jobs
(``config.celery.RECOVERY_TASKS``) that find such work and send it again: nothing stays pending
for ever.
"""

from __future__ import annotations

import functools
import logging

from django.db import transaction
from django.utils.translation import gettext_lazy as _
from kombu.exceptions import OperationalError

logger = logging.getLogger(__name__)

QUEUE_DOWN = _(
    "The job queue does not answer, so this cannot start now. What you asked for is recorded and "
    "starts by itself as soon as the queue is back; nothing needs to be done again."
)
# Seconds a client is told to wait before trying again (the Retry-After of the 503).
RETRY_AFTER_S = 30


class QueueDown(Exception):
    """The broker did not take a job; its work is recorded and will be picked up (see above)."""

    def __init__(self) -> None:
        super().__init__(str(QUEUE_DOWN))


def send(task, *args, countdown: float | None = None) -> None:
    """Send ``task(*args)`` to the workers, in ``countdown`` seconds when given; QueueDown when
    the broker does not take it."""
    try:
        task.apply_async(args, countdown=countdown or None)
    except OperationalError as exc:
        logger.error("the broker did not take %s%r: %s", task.name, args, exc)
        raise QueueDown from exc


def send_on_commit(task, *args, countdown: float | None = None) -> None:
    """:func:`send` once the current transaction commits (at once outside one)."""
    transaction.on_commit(functools.partial(send, task, *args, countdown=countdown))
