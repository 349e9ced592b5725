"""What annotation tells the layers above it, once the change is committed.

``annotation`` must not import ``evaluation``, yet the estimates above it depend on the final
labels recorded here, and the pages' figures on the campaign's content: the upper layer listens to
these signals (it only schedules background work) instead of annotation calling up into it.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.dispatch import Signal

from annotation.models import Campaign, Criterion

logger = logging.getLogger(__name__)

# Sent after the commit of a transaction that added a label or withdrew one, with the keyword
# arguments ``criterion_id`` and ``stage``. Never sent for a rolled-back or replayed request.
labels_changed = Signal()

# Sent after the commit of a transaction that changed a campaign's content (an import, a row
# saved or deleted by hand: ``annotation.corpus.campaigns.content_changed``), with the keyword
# argument ``campaign_id``.
content_changed = Signal()


def announce_labels_changed(*, criterion: Criterion, stage: str) -> None:
    """Send ``labels_changed`` for ``criterion`` when the current transaction commits, once
    whatever the number of labels it records at ``stage`` (the demo's load records hundreds in
    one). An announcement made in a savepoint rolled back since is made again."""
    _announce_once(labels_changed, "labels_changed", sender=Criterion, criterion_id=criterion.pk, stage=stage)


def announce_content_changed(*, campaign_id: int) -> None:
    """Send ``content_changed`` for the campaign when the current transaction commits, once
    whatever the number of rows it changes."""
    _announce_once(content_changed, "content_changed", sender=Campaign, campaign_id=campaign_id)


def _announce_once(signal: Signal, name: str, *, sender: type, **arguments: Any) -> None:
    key = (name, *sorted(arguments.items()))
    # Django's callbacks to run on commit, as (savepoint ids, callback, robust): those of a
    # savepoint rolled back are gone from it.
    if any(
        getattr(entry[1], "announces", None) == key for entry in transaction.get_connection().run_on_commit
    ):
        return

    def send() -> None:
        # The change is committed: a failing listener (a broker down) is logged, never raised
        # back into the request that made it.
        for receiver, result in signal.send_robust(sender=sender, **arguments):
            if isinstance(result, Exception):
                logger.error("%s listener %r failed", name, receiver, exc_info=result)

    send.announces = key  # type: ignore[attr-defined]
    transaction.on_commit(send)
