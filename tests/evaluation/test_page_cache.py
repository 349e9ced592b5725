"""The page cache reads what changed: the campaign's content version moves with every change of
its questions, chunks or answers, including those an import makes in place (no new row, no
count that moves), and the figures kept under the former version are not read again."""

from __future__ import annotations

import pytest
from django.contrib.admin.sites import site
from django.core.cache import cache
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from annotation.ingest.errors import ImportFailed
from annotation.models import Answer, Campaign, Question, SourceChunk
from evaluation import page_cache
from evaluation.imports.campaign_file import import_file
from evaluation.measures.automatic import compute_metrics
from evaluation.reports import read
from tests.factories import make_user
from tests.ingest_files import JSONL, RECORDS, write_jsonl
from tests.judged import study_campaign

pytestmark = pytest.mark.django_db


def _responses(campaign: Campaign) -> int:
    """How many answers the automatic metrics count as answering (kept in the page cache)."""
    rows = compute_metrics(campaign=Campaign.objects.get(pk=campaign.pk))
    return sum(row.successes for row in rows if row.metric == "response" and row.difficulty is None)


def _version(campaign: Campaign) -> int:
    return Campaign.objects.values_list("content_version", flat=True).get(pk=campaign.pk)


def test_an_update_that_rewrites_answers_in_place_moves_the_cached_figures(tmp_path):
    campaign = import_file(path=JSONL, campaign_name="Cache").campaign
    first = _version(campaign)
    assert first >= 1
    answered = _responses(campaign)
    assert answered > 0
    answers = set(Answer.objects.filter(campaign=campaign).values_list("pk", flat=True))
    silent = [dict(r, answer="Je ne sais pas.") for r in RECORDS]
    import_file(path=write_jsonl(tmp_path / "silent.jsonl", silent), campaign_name="Cache", update=True)
    # The same answers, rewritten in place: no count and no id moved.
    assert set(Answer.objects.filter(campaign=campaign).values_list("pk", flat=True)) == answers
    assert _version(campaign) > first
    assert _responses(campaign) < answered


def test_a_refused_import_moves_nothing():
    campaign = import_file(path=JSONL, campaign_name="Cache").campaign
    before = _version(campaign)
    with pytest.raises(ImportFailed):  # the same answers again, without --update: refused whole
        import_file(path=JSONL, campaign_name="Cache")
    assert _version(campaign) == before


def test_a_row_saved_or_deleted_by_hand_moves_the_version():
    campaign = import_file(path=JSONL, campaign_name="Cache").campaign
    version = _version(campaign)
    question = Question.objects.filter(campaign=campaign).first()
    question.theme = "Banque"
    question.save()  # as the admin or a shell saves it
    assert _version(campaign) == version + 1
    assert "Banque" in {row.theme for row in compute_metrics(campaign=Campaign.objects.get(pk=campaign.pk))}
    admin = make_user(superuser=True)
    request = RequestFactory().post("/admin/")
    request.user = admin
    chunk = SourceChunk.objects.filter(campaign=campaign).first()
    site.get_model_admin(SourceChunk).delete_model(request, chunk)
    assert _version(campaign) == version + 2
    answer = Answer.objects.filter(campaign=campaign).first()
    site.get_model_admin(Answer).delete_queryset(request, Answer.objects.filter(pk=answer.pk))
    assert _version(campaign) == version + 3


def _versions_read(queries) -> int:
    """How many of ``queries`` read a judge's judgments' version (``page_cache.judgments_version``)."""
    return sum(
        'MAX("evaluation_judgment"."updated_at")' in query["sql"] for query in queries.captured_queries
    )


def test_a_report_computed_now_reads_the_judgments_version_once():
    _campaign, criterion, judge, _ = study_campaign(name="Versions")
    cache.clear()
    request = read.report_request(criterion=criterion, judge=judge.name, alpha=0.1)
    with CaptureQueriesContext(connection) as computed:
        read.read_report(request)
    # Its key and its counts' key share one read; kept, the next read is the key's alone.
    assert _versions_read(computed) == 1
    with CaptureQueriesContext(connection) as kept:
        read.read_report(request)
    assert _versions_read(kept) == 1
    # Outside such a read, each key reads it.
    with CaptureQueriesContext(connection) as apart:
        page_cache.estimates_key(criterion=criterion, judge=judge)
        page_cache.judge_counts_key(criterion=criterion, judge=judge)
    assert _versions_read(apart) == 2
