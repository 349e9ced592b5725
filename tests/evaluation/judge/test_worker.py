"""A real Celery worker judges a run, is killed with kill -9 mid-run, restarts, and finishes."""

from __future__ import annotations

import shutil

import pytest

from annotation.models import Criterion, Unit
from evaluation.jobs import start_judge_run
from evaluation.judge import accounting, runs
from evaluation.models import JudgeRun, Judgment, LLMCall
from tests.factories import make_answer
from tests.llm_server import ScriptedLLMServer
from tests.worker import Worker, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(tmp_path):
    w = Worker(tmp_path=tmp_path)
    w.configure_producer()
    yield w
    w.stop()
    w.restore_producer()
    shutil.rmtree(tmp_path / "var", ignore_errors=True)


def test_worker_killed_mid_run_then_restarted_judges_every_unit_exactly_once(campaign, worker):
    for i in range(12):
        make_answer(campaign=campaign, theme=["Finance", "RH", "IT"][i % 3])
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    with ScriptedLLMServer(latency_s=0.25) as server:
        judge = runs.get_or_create_judge(
            campaign=campaign, name="gpt", model="scripted", base_url=server.base_url
        )
        run = start_judge_run(criterion=relevance, judge=judge, concurrency=1)
        worker.start()

        def progressed() -> bool:
            run.refresh_from_db()
            return run.done_units >= 2

        wait_for(progressed, timeout=20, what=lambda: f"the first judgments (worker log:\n{worker.log()})")
        worker.kill()
        run.refresh_from_db()
        assert run.done_units < run.total_units, "the run finished before the worker could be killed"

        worker.start()

        def finished() -> bool:
            run.refresh_from_db()
            return run.status == JudgeRun.Status.DONE

        wait_for(finished, timeout=90, what=lambda: f"the run to finish (worker log:\n{worker.log()})")
    units = Unit.objects.filter(campaign=campaign, level="answer")
    ok = Judgment.objects.filter(judge=judge, criterion=relevance, status=Judgment.Status.OK)
    assert ok.count() == units.count() == 12
    assert ok.values("unit").distinct().count() == 12
    assert run.done_units == 12
    assert run.failed_units == 0


def test_after_a_kill_9_mid_call_the_tokens_recorded_equal_the_tokens_the_server_served(campaign, worker):
    for i in range(24):
        make_answer(campaign=campaign, theme=["Finance", "RH", "IT"][i % 3])
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    with ScriptedLLMServer(latency_s=0.3) as server:
        judge = runs.get_or_create_judge(
            campaign=campaign, name="gpt", model="scripted", base_url=server.base_url
        )
        # The first 8 calls are answered; every later one is held, so each of the four threads
        # ends up waiting for a reply that cannot come before the kill.
        server.hold(from_request=9)
        run = start_judge_run(criterion=relevance, judge=judge, concurrency=4)
        worker.start()

        def cut_off_mid_call() -> bool:
            # Four calls held at the server, and the reply of every other call stored.
            unused = LLMCall.objects.filter(run=run, used=False).count()
            return server.in_flight == 4 and unused == 4

        def state() -> str:
            calls = list(LLMCall.objects.filter(run=run).values_list("outcome", "used", "error"))
            return f"held calls: {server.in_flight} in flight; calls {calls} ({worker.log()})"

        wait_for(cut_off_mid_call, timeout=30, interval=0.01, what=state)
        worker.kill()
        requests_at_kill = len(server.calls)
        # The provider still answers (and bills) the calls whose client died.
        server.release()
        worker.start()

        def finished() -> bool:
            run.refresh_from_db()
            return run.status == JudgeRun.Status.DONE

        wait_for(finished, timeout=90, what=lambda: f"the run to finish (worker log:\n{worker.log()})")
        # The replies to the calls cut off are generated (and billed) all the same.
        wait_for(lambda: server.in_flight == 0, timeout=10, what=lambda: "the last replies")
        served = server.served_tokens
        requests = len(server.calls)
    run = accounting.sync_counters(run_id=run.pk)
    assert requests > requests_at_kill
    # Every request the server got was recorded before it was sent, and nothing else was.
    assert LLMCall.objects.filter(run=run).count() == requests
    assert run.unused_calls == 4
    assert run.unused_prompt_tokens > 0 and run.unused_completion_tokens > 0
    assert (run.prompt_tokens, run.completion_tokens) == served
    ok = Judgment.objects.filter(judge=judge, criterion=relevance, status=Judgment.Status.OK)
    assert ok.count() == 24
    print(
        f"\nkill -9 mid-run: {requests} requests, {run.unused_calls} cut off; tokens recorded "
        f"{run.prompt_tokens}+{run.completion_tokens}, served {served[0]}+{served[1]}; "
        f"{run.unused_prompt_tokens + run.unused_completion_tokens} on replies not used"
    )
