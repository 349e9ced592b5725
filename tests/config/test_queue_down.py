"""A broker that does not answer: pages answer 503 saying the work is recorded, the API a JSON
503; the recorded work (a run, a sample, a batch of answers, a recomputation) waits, pending, and
the recovery a connecting worker sends picks it up. Nothing stays pending for ever."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.models import Criterion, Sample
from annotation.tasks import recover_samples
from api.models import AnswerBatch
from api.tasks import recover_batches
from config.celery import app as celery_app
from evaluation.models import EstimateSchedule, JudgeBatch, JudgeRun, ReportSnapshot
from evaluation.tasks import recover_refreshes, recover_runs
from tests.factories import api_token, make_answer, member
from tests.ingest_files import RECORDS
from tests.worker import _reset_connections

pytestmark = pytest.mark.django_db(transaction=True)

# A port nothing listens on: every send is refused, as with Redis stopped.
NOWHERE = "redis://127.0.0.1:9/0"


@pytest.fixture
def broker_down(monkeypatch):
    conf = celery_app.conf
    saved = {"task_always_eager": conf.task_always_eager, "broker_url": conf.broker_url}
    conf.task_always_eager = False
    conf.broker_url = NOWHERE
    # Celery reads the variable before its setting.
    monkeypatch.setenv("CELERY_BROKER_URL", NOWHERE)
    _reset_connections()

    def back() -> None:
        monkeypatch.undo()
        for key, value in saved.items():
            setattr(conf, key, value)
        _reset_connections()

    yield back
    back()


@pytest.fixture
def answers(campaign):
    for theme in ("Finance", "RH", "Finance"):
        make_answer(campaign=campaign, theme=theme)


def test_a_run_started_while_the_queue_is_down_is_a_503_and_runs_once_it_is_back(
    client_for, manager, campaign, answers, broker_down
):
    url = reverse("evaluation:run_list", args=[campaign.slug])
    response = client_for(manager).post(url, {"criterion": "veracity", "judge": "lexical", "scope": "all"})
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    page = response.content.decode()
    assert "The job queue does not answer" in page and "starts by itself" in page
    run = JudgeRun.objects.get()
    assert run.status == JudgeRun.Status.PENDING
    assert not run.batches.exclude(status=JudgeBatch.Status.PENDING).exists()
    broker_down()  # the queue is back (eager: each job runs as it is sent)
    assert recover_runs() == [run.pk]
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.DONE and run.done_units == run.total_units > 0


def test_the_refusal_speaks_the_persons_language(client_for, manager, campaign, answers, broker_down):
    url = reverse("evaluation:run_list", args=[campaign.slug])
    response = client_for(manager).post(
        url, {"criterion": "veracity", "judge": "lexical", "scope": "all"}, HTTP_ACCEPT_LANGUAGE="fr"
    )
    assert response.status_code == 503
    assert "La file des tâches ne répond pas" in response.content.decode()


def test_a_sample_drawn_while_the_queue_is_down_waits_and_is_drawn_once_it_is_back(
    client_for, manager, campaign, answers, broker_down
):
    response = client_for(manager).post(
        reverse("annotation:sample_draw", args=[campaign.slug]),
        {"criterion": "relevance", "budget": "3", "per_cluster": "1", "seed": "0"},
    )
    assert response.status_code == 503
    sample = Sample.objects.get()
    assert sample.status == Sample.Status.PENDING
    broker_down()
    assert recover_samples() == [sample.pk]
    sample.refresh_from_db()
    assert sample.status == Sample.Status.DONE and sample.items.exists()


def test_a_refresh_asked_while_the_queue_is_down_is_done_once_it_is_back(
    client_for, manager, campaign, answers, broker_down
):
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    response = client_for(manager).post(
        reverse("evaluation:refresh_estimates", args=[campaign.slug, criterion.name])
    )
    assert response.status_code == 503
    assert EstimateSchedule.objects.get(criterion=criterion).due_at is not None
    broker_down()
    assert recover_refreshes() == [criterion.pk]
    assert EstimateSchedule.objects.get(criterion=criterion).due_at is None
    assert recover_refreshes() == []
    assert not ReportSnapshot.objects.exclude(criterion=criterion).exists()


def test_the_api_answers_json_503_and_its_batch_is_imported_once_the_queue_is_back(
    client, campaign, broker_down, settings, tmp_path
):
    settings.API_SYNC_MAX_RECORDS = 1
    # A batch's file is named by its id: each test process its own folder (ids repeat across
    # the processes' databases).
    settings.VAR_DIR = tmp_path
    token = api_token(member(campaign, "manager"))
    response = client.post(
        f"/api/v1/campaigns/{campaign.slug}/answers",
        data=json.dumps({"records": RECORDS}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/json")
    assert response["Retry-After"] == "30"
    body = response.json()
    assert body["detail"] == "the job queue does not answer" and body["errors"][0]["field"] == "body"
    batch = AnswerBatch.objects.get()
    assert batch.status == AnswerBatch.Status.PENDING
    broker_down()
    assert recover_batches() == [batch.pk]
    batch.refresh_from_db()
    assert batch.status == AnswerBatch.Status.DONE
    assert campaign.answers.count() == len(RECORDS)
