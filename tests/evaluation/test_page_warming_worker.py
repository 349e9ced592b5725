"""A real worker computes an imported campaign's pages ahead of their visit, into the cache the
web processes read (Redis, as in production), and the first visit reads them."""

from __future__ import annotations

import re
import shutil

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Campaign
from evaluation.imports.campaign_file import import_file
from evaluation.measures import automatic
from tests.ingest_files import RECORDS, write_jsonl
from tests.worker import Worker, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

# The cache both processes use: Redis beside the broker, a database of its own.
CACHE_URL = "redis://127.0.0.1:6379/12"


def _answer_queries(campaign: Campaign) -> int:
    """The queries of answers the automatic metrics of the campaign run when read (none when the
    page cache holds their counts)."""
    with CaptureQueriesContext(connection) as queries:
        automatic.compute_metrics(campaign=Campaign.objects.get(pk=campaign.pk))
    return sum("annotation_answer" in query["sql"] for query in queries.captured_queries)


def test_a_worker_computes_an_imported_campaigns_pages_into_the_shared_cache(tmp_path, settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    }
    settings.PAGE_WARMING = True
    worker = Worker(tmp_path=tmp_path, env={"CACHE_URL": CACHE_URL})
    worker.configure_producer()
    try:
        worker.start()
        answers = write_jsonl(tmp_path / "answers.jsonl", [dict(r, labels={}) for r in RECORDS])
        campaign = import_file(path=answers, campaign_name="Warmed by a worker").campaign
        wait_for(
            lambda: re.search(r"Task evaluation\.warm_pages\[[^]]+\] succeeded", worker.log()) is not None,
            timeout=60,
            what=worker.log,
        )
        # Kept by the worker: read here without a query of the answers (computed here, they
        # would be counted).
        assert _answer_queries(campaign) == 0
    finally:
        worker.stop()
        worker.restore_producer()
        shutil.rmtree(tmp_path / "var", ignore_errors=True)
