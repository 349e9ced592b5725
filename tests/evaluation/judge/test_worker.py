"""A real Celery worker judges a run, is killed with kill -9 mid-run, restarts, and finishes."""

from __future__ import annotations

import shutil
import time

import pytest
from django.db import connection

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


OTHER_SESSIONS = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"


def _terminate_other_sessions() -> int:
    """End every other session on the test database (the worker's, mid-run), as a database
    restart or a failover would; how many."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(pg_terminate_backend(pid)) {OTHER_SESSIONS}")
        return cursor.fetchone()[0]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="ends the worker's PostgreSQL sessions")
def test_a_run_whose_database_sessions_are_ended_twice_mid_run_finishes_with_every_unit_once(
    campaign, worker
):
    for i in range(24):
        make_answer(campaign=campaign, theme=["Finance", "RH", "IT"][i % 3])
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    with ScriptedLLMServer(latency_s=0.2) as server:
        judge = runs.get_or_create_judge(
            campaign=campaign, name="gpt", model="scripted", base_url=server.base_url
        )
        run = start_judge_run(criterion=relevance, judge=judge, concurrency=4)
        worker.start()
        ended = []
        for done in (4, 12):

            def progressed(done=done) -> bool:
                run.refresh_from_db()
                return run.done_units >= done

            wait_for(progressed, timeout=30, what=lambda: f"judgments (worker log:\n{worker.log()})")
            # The worker's sessions come and go between its tasks: end them once there are some.
            wait_for(
                lambda: ended.append(_terminate_other_sessions()) or ended[-1] > 0,
                timeout=30,
                interval=0.01,
                what=lambda: "a session of the worker",
            )
        run.refresh_from_db()
        assert run.done_units < run.total_units, "the run finished before its sessions were ended"

        def finished() -> bool:
            run.refresh_from_db()
            return run.status == JudgeRun.Status.DONE

        ended_at = time.monotonic()
        wait_for(finished, timeout=120, what=lambda: f"the run to finish (worker log:\n{worker.log()})")
        recovered_in = time.monotonic() - ended_at
    assert sum(count > 0 for count in ended) == 2, ended
    ok = Judgment.objects.filter(judge=judge, criterion=relevance, status=Judgment.Status.OK)
    assert ok.count() == ok.values("unit").distinct().count() == 24
    assert run.done_units == 24 and run.failed_units == 0
    assert "Retry in" in worker.log()
    print(
        f"\nsessions ended twice mid-run: {sum(ended)} sessions, "
        f"{worker.log().count('Retry in')} retries, the run done {recovered_in:.1f} s after the second"
    )


def test_work_recorded_while_no_job_reached_the_broker_is_done_when_a_worker_connects(campaign, worker):
    """A run and a sample recorded while the broker was down (pending, their jobs never sent):
    the worker that connects sends the recovery, and both get done."""
    from annotation.sampling.background import create_pending_sample

    for i in range(6):
        make_answer(campaign=campaign, theme=["Finance", "RH"][i % 2])
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.create_run(criterion=relevance, judge=judge)
    sample = create_pending_sample(criterion=relevance, budget=4, per_cluster=1)
    assert (run.status, sample.status) == ("pending", "pending")
    worker.start()

    def done() -> bool:
        run.refresh_from_db()
        sample.refresh_from_db()
        return run.status == JudgeRun.Status.DONE and sample.status == "done"

    wait_for(done, timeout=60, what=lambda: f"the recovered work (worker log:\n{worker.log()})")
    assert run.done_units == 6
    for name in ("evaluation.recover_runs", "annotation.recover_samples", "api.recover_batches"):
        assert f"Task {name}[" in worker.log()


@pytest.fixture
def own_redis(tmp_path, settings, monkeypatch):
    """A Redis of this test's own (Debian's redis-server on a free port) as the broker of this
    process and of the worker, that the test stops and starts again."""
    import socket
    import subprocess

    from config.celery import app as celery_app

    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("needs redis-server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]

    class Redis:
        url = f"redis://127.0.0.1:{port}/0"
        process: subprocess.Popen | None = None

        def start(self) -> None:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_for(self.answers, timeout=10, what=lambda: "redis-server to answer")

        def answers(self) -> bool:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as c:
                    c.sendall(b"PING\r\n")
                    return c.recv(16).startswith(b"+PONG")
            except OSError:
                return False

        def stop(self) -> None:
            if self.process is not None and self.process.poll() is None:
                self.process.terminate()
                self.process.wait(timeout=10)

    redis = Redis()
    redis.start()
    saved = celery_app.conf.broker_url
    settings.CELERY_BROKER_URL = celery_app.conf.broker_url = redis.url
    # Celery reads the environment's broker before its configuration's.
    monkeypatch.setenv("CELERY_BROKER_URL", redis.url)
    yield redis
    redis.stop()
    celery_app.conf.broker_url = saved


def test_redis_stopped_mid_work_then_started_again_loses_and_doubles_nothing(campaign, own_redis, tmp_path):
    """The broker stops while the worker waits for work: a run asked for meanwhile is recorded and
    refused as 503 (QueueDown); once Redis is back, the worker reconnects, sends the recovery, and
    the run is done with every unit judged once."""
    from annotation.broker import QueueDown

    w = Worker(tmp_path=tmp_path)
    w.configure_producer()
    try:
        for i in range(6):
            make_answer(campaign=campaign, theme=["Finance", "RH"][i % 2])
        relevance = Criterion.objects.get(campaign=campaign, name="relevance")
        judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
        w.start()
        wait_for(lambda: "ready" in w.log(), timeout=60, what=lambda: f"the worker (log:\n{w.log()})")
        own_redis.stop()
        with pytest.raises(QueueDown):
            start_judge_run(criterion=relevance, judge=judge)
        run = JudgeRun.objects.get(criterion=relevance, judge=judge)
        assert run.status == JudgeRun.Status.PENDING
        own_redis.start()
        back = time.monotonic()

        def done() -> bool:
            run.refresh_from_db()
            return run.status == JudgeRun.Status.DONE

        wait_for(done, timeout=90, what=lambda: f"the run once Redis is back (worker log:\n{w.log()})")
        recovered = time.monotonic() - back
        ok = Judgment.objects.filter(judge=judge, criterion=relevance, status=Judgment.Status.OK)
        assert ok.count() == ok.values("unit").distinct().count() == 6
        assert run.done_units == 6 and run.failed_units == 0
        assert "evaluation.recover_runs" in w.log()
        print(f"redis restarted: run done {recovered:.1f} s later")
    finally:
        w.stop()
        w.restore_producer()
