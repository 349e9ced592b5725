"""Answer records posted to the API, imported exactly as an import file is.

The records are the rows of the import format (docs/import-format.md). They are written as a
JSONL file, record n on line n, and handed to ``evaluation.imports.campaign_file.import_file``: the same
validation, the same all-or-nothing transaction and the same errors, whose ``row`` is then the
record's 1-based position in the batch. A batch of more than ``API_SYNC_MAX_RECORDS`` records
is kept under ``VAR_DIR/api-batches/`` (which the web hosts and the workers must share) and
imported by a worker (``AnswerBatch``); its status says what the import wrote, or its errors.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone

from annotation import ingest
from annotation.ingest import formats
from annotation.models import Campaign
from api.models import AnswerBatch
from evaluation.imports.campaign_file import ImportSummary, import_file

logger = logging.getLogger(__name__)

# How errors name the batch (the "file" of each row error).
BATCH_NAME = "records.jsonl"


def summary_as_json(summary: ImportSummary) -> dict:
    """What an import wrote, as the API answers it."""
    return {
        "campaign": summary.campaign.slug,
        "answers_created": summary.answers_created,
        "answers_replaced": summary.answers_replaced,
        "questions_created": summary.questions_created,
        "chunks_created": summary.chunks_created,
        "sentences": summary.sentences,
        "units": summary.units,
        "labels": summary.labels,
        "judgments": summary.judgments,
        "warnings": list(summary.warnings),
    }


def errors_as_json(errors: Iterable[ingest.RowError]) -> list[dict]:
    """Row errors as ``{"file", "row", "field", "message"}``."""
    return [
        {"file": error.file, "row": error.row, "field": error.field, "message": str(error.message)}
        for error in errors
    ]


def _write_jsonl(*, records: list, path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False))
            out.write("\n")


def import_records(*, campaign: Campaign, records: list, update: bool = False) -> ImportSummary:
    """Import ``records`` (rows of the import format) into ``campaign`` now.

    Raises ``annotation.ingest.ImportFailed`` with the import's own errors, and then nothing is
    written."""
    with tempfile.TemporaryDirectory(prefix="api-batch-") as directory:
        path = Path(directory) / "records.jsonl"
        _write_jsonl(records=records, path=path)
        return import_file(
            path=path, name=BATCH_NAME, campaign_name=campaign.name, update=update, format=formats.ATTEST
        )


def batch_path(batch_id: int) -> Path:
    """Where the records of a background batch wait for their worker."""
    return Path(settings.VAR_DIR) / "api-batches" / f"{batch_id}.jsonl"


def create_pending_batch(
    *, campaign: Campaign, records: list, update: bool, user: User | None
) -> AnswerBatch:
    """Record a batch for a worker to import (``run_batch``) and keep its records; the caller
    (``api.jobs``) enqueues it after commit."""
    batch = AnswerBatch.objects.create(
        campaign=campaign, created_by=user, records=len(records), update=update
    )
    path = batch_path(batch.pk)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_jsonl(records=records, path=path)
    return batch


def batches_to_import() -> list[int]:
    """The pending batches, waiting for a worker (their job may never have reached the broker);
    their ids. Sending their import again is safe: :func:`run_batch` claims a batch once."""
    pending = AnswerBatch.objects.filter(status=AnswerBatch.Status.PENDING).order_by("pk")
    return list(pending.values_list("pk", flat=True))


def run_batch(*, batch_id: int) -> AnswerBatch:
    """Import a pending background batch and record the outcome; a batch already taken or
    finished is returned as it is (running this twice is safe)."""
    claimed = AnswerBatch.objects.filter(pk=batch_id, status=AnswerBatch.Status.PENDING).update(
        status=AnswerBatch.Status.RUNNING
    )
    batch = AnswerBatch.objects.select_related("campaign").get(pk=batch_id)
    if not claimed:
        return batch
    path = batch_path(batch.pk)
    try:
        summary = import_file(
            path=path,
            name=BATCH_NAME,
            campaign_name=batch.campaign.name,
            update=batch.update,
            format=formats.ATTEST,
        )
    except ingest.ImportFailed as exc:
        batch.status = AnswerBatch.Status.FAILED
        batch.errors = errors_as_json(exc.errors)
        batch.more_errors = exc.more
    except Exception:
        logger.exception("answer batch %s failed", batch.pk)
        batch.status = AnswerBatch.Status.FAILED
        batch.errors = [{"file": BATCH_NAME, "row": None, "field": "records", "message": "the import failed"}]
    else:
        batch.status = AnswerBatch.Status.DONE
        batch.summary = summary_as_json(summary)
    batch.finished_at = timezone.now()
    batch.save(update_fields=["status", "errors", "more_errors", "summary", "finished_at"])
    path.unlink(missing_ok=True)
    return batch
