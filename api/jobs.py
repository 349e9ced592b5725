"""Starting the API's background jobs; enqueued after the transaction commits."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from annotation import broker
from annotation.models import Campaign
from api.batches import create_pending_batch
from api.models import AnswerBatch
from api.tasks import import_batch_task


def queue_records(*, campaign: Campaign, records: list, update: bool, user: User | None) -> AnswerBatch:
    """Keep ``records`` and have a worker import them into ``campaign``; return the pending batch."""
    with transaction.atomic():
        batch = create_pending_batch(campaign=campaign, records=records, update=update, user=user)
        broker.send_on_commit(import_batch_task, batch.pk)
    return batch
