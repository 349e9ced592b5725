"""Answers: a batch of records in the import format, imported now or by a worker."""

from __future__ import annotations

from typing import cast

from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import Router, Status
from ninja.responses import codes_4xx

from annotation import ingest
from annotation.access import get_campaign_for
from annotation.models import Role
from api.batches import errors_as_json, import_records, summary_as_json
from api.errors import ApiError
from api.jobs import queue_records
from api.models import AnswerBatch
from api.schemas import AnswersIn, BatchOut, ErrorOut, ImportOut

router = Router(tags=["answers"])
MANAGERS = [Role.MANAGER]


def batch_out(batch: AnswerBatch) -> dict:
    return {
        "id": batch.pk,
        "status": batch.status,
        "records": batch.records,
        "url": reverse("api-v1:answer_batch", kwargs={"slug": batch.campaign.slug, "batch_id": batch.pk}),
        "created_at": batch.created_at,
        "finished_at": batch.finished_at,
        "summary": batch.summary or None,
        "errors": batch.errors,
        "more_errors": batch.more_errors,
    }


@router.post(
    "/campaigns/{slug}/answers",
    response={201: ImportOut, 202: BatchOut, codes_4xx: ErrorOut},
    url_name="answers",
)
def post_answers(request: HttpRequest, slug: str, data: AnswersIn):
    """Import records (docs/import-format.md) into the campaign (managers). Up to
    API_SYNC_MAX_RECORDS records: imported now (201, what was written); more: imported by a
    worker (202, the batch and its status URL). Refused records: 400 with the import's errors
    (row = the record's position, from 1), and nothing is written."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=MANAGERS)
    if len(data.records) > settings.API_SYNC_MAX_RECORDS:
        # The token's person: the bearer check has set request.user to them.
        user = cast(User, request.user)
        batch = queue_records(campaign=campaign, records=data.records, update=data.update, user=user)
        return Status(202, batch_out(batch))
    try:
        summary = import_records(campaign=campaign, records=data.records, update=data.update)
    except ingest.ImportFailed as exc:
        raise ApiError(400, "import refused", errors_as_json(exc.errors), more=exc.more) from None
    return Status(201, summary_as_json(summary))


@router.get(
    "/campaigns/{slug}/answers/batches/{batch_id}",
    response={200: BatchOut, codes_4xx: ErrorOut},
    url_name="answer_batch",
)
def answer_batch(request: HttpRequest, slug: str, batch_id: int):
    """A background batch: pending, running, done (with what was written) or failed (with the
    import's errors)."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=MANAGERS)
    batch = get_object_or_404(AnswerBatch.objects.select_related("campaign"), pk=batch_id, campaign=campaign)
    return batch_out(batch)
