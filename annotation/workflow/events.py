"""What the workflow tells the layers above it, once the change is committed.

``annotation`` must not import ``evaluation``, yet the estimates above it depend on the final
labels recorded here: the upper layer listens to this signal (it only schedules a background
recomputation) instead of the workflow calling up into it.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.dispatch import Signal

from annotation.models import Criterion

logger = logging.getLogger(__name__)

# Sent after the commit of a transaction that added a label or withdrew one, with the keyword
# arguments ``criterion_id`` and ``stage``. Never sent for a rolled-back or replayed request.
labels_changed = Signal()


def announce_labels_changed(*, criterion: Criterion, stage: str) -> None:
    """Send ``labels_changed`` for ``criterion`` when the current transaction commits, once
    whatever the number of labels it records at ``stage`` (the demo's load records hundreds in
    one). An announcement made in a savepoint rolled back since is made again."""
    criterion_id = criterion.pk
    key = (criterion_id, stage)
    # Django's callbacks to run on commit, as (savepoint ids, callback, robust): those of a
    # savepoint rolled back are gone from it.
    if any(
        getattr(entry[1], "announces", None) == key for entry in transaction.get_connection().run_on_commit
    ):
        return

    def send() -> None:
        # The labels are committed: a failing listener (a broker down) is logged, never raised
        # back into the request that recorded them.
        for receiver, result in labels_changed.send_robust(
            sender=Criterion, criterion_id=criterion_id, stage=stage
        ):
            if isinstance(result, Exception):
                logger.error("labels_changed listener %r failed", receiver, exc_info=result)

    send.announces = key  # type: ignore[attr-defined]
    transaction.on_commit(send)
