"""The judge's Celery tasks, run in this process (eager): progress while a task works, recovery."""

from __future__ import annotations

import socket

import pytest
from django.db import connection

from annotation.models import Criterion
from evaluation import tasks
from evaluation.judge import runs, scheduler
from evaluation.models import JudgeBatch, JudgeRun, Judgment
from tests.factories import make_answer
from tests.llm_server import ScriptedLLMServer

pytestmark = pytest.mark.django_db

DEAD = f"{socket.gethostname()}:99999999:dead"  # a process id that cannot exist on this host


def _answers(campaign, n: int) -> Criterion:
    for i in range(n):
        make_answer(campaign=campaign, theme=["Finance", "RH"][i % 2])
    return Criterion.objects.get(campaign=campaign, name="relevance")


def _judged_once(criterion, judge) -> int:
    ok = Judgment.objects.filter(criterion=criterion, judge=judge, status=Judgment.Status.OK)
    assert ok.count() == ok.values("unit").distinct().count()
    return ok.count()


@pytest.mark.django_db(transaction=True)
def test_run_counters_move_while_a_task_is_judging_its_batches(campaign, monkeypatch):
    relevance = _answers(campaign, 4)
    monkeypatch.setattr(scheduler, "SYNC_INTERVAL_S", 0.0)
    seen: list[int] = []

    def labeler(index: int, request: dict) -> int:
        # What the run page would show while the server is answering this request.
        try:
            seen.append(JudgeRun.objects.get().done_units)
        finally:
            connection.close()
        return 1

    with ScriptedLLMServer(labeler=labeler) as server:
        judge = runs.get_or_create_judge(
            campaign=campaign, name="gpt", model="scripted", base_url=server.base_url
        )
        run = runs.create_run(criterion=relevance, judge=judge, concurrency=1)
        tasks.judge_batches(run.pk, list(run.batches.order_by("id").values_list("id", flat=True)))
    assert seen == [0, 1, 2, 3]
    run.refresh_from_db()
    assert (run.status, run.done_units) == (JudgeRun.Status.DONE, 4)


def _run_with_a_dead_claim(campaign, n: int = 3):
    relevance = _answers(campaign, n)
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.create_run(criterion=relevance, judge=judge)
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
    dead = run.batches.order_by("id").first()
    JudgeBatch.objects.filter(pk=dead.pk).update(status=JudgeBatch.Status.RUNNING, claimed_by=DEAD)
    return relevance, judge, run, dead


def test_a_new_dispatch_recovers_the_batches_of_a_dead_worker(campaign):
    relevance, judge, run, _ = _run_with_a_dead_claim(campaign)
    tasks.dispatch_run(run.pk)
    run.refresh_from_db()
    assert (run.status, run.done_units) == (JudgeRun.Status.DONE, 3)
    assert _judged_once(relevance, judge) == 3


def test_another_task_of_the_run_takes_over_a_dead_workers_batch(campaign):
    relevance, judge, run, dead = _run_with_a_dead_claim(campaign)
    others = list(run.batches.exclude(pk=dead.pk).values_list("id", flat=True))
    assert tasks.judge_batches(run.pk, others) == 3
    run.refresh_from_db()
    assert (run.status, run.done_units) == (JudgeRun.Status.DONE, 3)
    # The dead worker's task, delivered again, finds nothing left to do.
    assert tasks.judge_batches(run.pk, [dead.pk]) == 0
    assert _judged_once(relevance, judge) == 3


def test_a_redelivered_task_judges_the_batch_its_dead_worker_held(campaign):
    relevance, judge, run, dead = _run_with_a_dead_claim(campaign, n=1)
    assert tasks.judge_batches(run.pk, [dead.pk]) == 1
    assert tasks.judge_batches(run.pk, [dead.pk]) == 0
    assert _judged_once(relevance, judge) == 1
