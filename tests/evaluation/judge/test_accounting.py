"""Every paid token is counted: calls recorded before they are sent, replies never used included."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.db import IntegrityError, connection
from django.urls import reverse
from django.utils import timezone

from annotation.models import Criterion
from evaluation.judge import accounting, inputs, runs
from evaluation.judge import recorder as recording
from evaluation.models import Judge, JudgeBatch, JudgeRun, LLMCall
from tests.factories import make_answer
from tests.llm_server import RateLimited, ScriptedLLMServer, Slow
from tests.worker import wait_for

pytestmark = pytest.mark.django_db


def _answers(campaign, n: int) -> Criterion:
    for i in range(n):
        make_answer(campaign=campaign, theme=["Finance", "RH"][i % 2])
    return Criterion.objects.get(campaign=campaign, name="relevance")


def _judge(campaign, server: ScriptedLLMServer, **settings) -> Judge:
    judge = runs.get_or_create_judge(
        campaign=campaign, name="gpt", model="scripted", base_url=server.base_url
    )
    judge.settings.update({"timeout_s": 2.0, "max_attempts": 3, "backoff_base_s": 0.01, **settings})
    judge.save()
    return judge


def _messages(run: JudgeRun, batch: JudgeBatch) -> list[dict]:
    data = inputs.load_batches(batch_ids=[batch.pk], criterion=run.criterion)[batch.pk]
    return inputs.build_messages(data=data, criterion=run.criterion, judge=run.judge)


def test_a_reply_after_the_client_timeout_counts_with_the_usage_of_the_same_prompt(campaign):
    relevance = _answers(campaign, 2)
    with ScriptedLLMServer() as server:
        judge = _judge(campaign, server, timeout_s=0.3, price_per_1k_prompt=1.0)
        server.enqueue(Slow(seconds=0.8))
        run = runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge, concurrency=1).pk)
        # The server finishes the reply the client gave up on, and bills it.
        wait_for(lambda: server.in_flight == 0, timeout=5)
        served = server.served_tokens
    run = accounting.sync_counters(run_id=run.pk)
    calls = list(LLMCall.objects.filter(run=run).order_by("id"))
    assert [c.outcome for c in calls] == ["lost", "replied", "replied"]
    assert [c.used for c in calls] == [False, True, True]
    assert (run.prompt_tokens, run.completion_tokens) == served
    assert (run.calls, run.unused_calls) == (3, 1)
    # The lost call is counted as the reply the retry got to the very same prompt.
    assert run.unused_prompt_tokens == calls[1].prompt_tokens
    assert run.unused_completion_tokens == calls[1].completion_tokens
    assert run.unused_cost == pytest.approx(calls[1].prompt_tokens / 1000)
    assert run.cost == pytest.approx(run.prompt_tokens / 1000)


def test_a_request_the_server_refuses_counts_nothing(campaign):
    relevance = _answers(campaign, 1)
    with ScriptedLLMServer() as server:
        judge = _judge(campaign, server)
        server.enqueue(RateLimited(retry_after_s=0.01))
        run = runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
        served = server.served_tokens
    refused, replied = LLMCall.objects.filter(run=run).order_by("id")
    assert (refused.outcome, refused.prompt_tokens, refused.completion_tokens) == ("refused", 0, 0)
    assert "HTTP 429" in refused.error
    assert replied.used
    assert (run.prompt_tokens, run.completion_tokens) == served
    assert run.unused_calls == 0


def test_a_call_cut_off_is_estimated_from_its_prompt_until_the_same_prompt_gets_a_reply(campaign):
    relevance = _answers(campaign, 1)
    with ScriptedLLMServer() as server:
        judge = _judge(campaign, server)
        run = runs.create_run(criterion=relevance, judge=judge)
        batch = run.batches.get()
        messages = _messages(run, batch)
        # What a worker killed mid-call leaves: the call it recorded, and nothing else.
        log = accounting.BatchCallLog(run_id=run.pk, batch_id=batch.pk, owner="gone:1:x", messages=messages)
        log.sent()
        run = accounting.sync_counters(run_id=run.pk)
        estimate = sum(len(m["content"]) for m in messages) // 4
        assert (run.unused_calls, run.unused_prompt_tokens, run.unused_completion_tokens) == (1, estimate, 0)
        assert run.prompt_tokens == estimate
        run = runs.run_inline(run_id=run.pk)
        served = server.served_tokens
    # The batch sent the same prompt again: the call cut off is counted as that reply.
    assert (run.prompt_tokens, run.completion_tokens) == (2 * served[0], 2 * served[1])
    assert run.unused_calls == 1


def test_the_token_budget_counts_calls_whose_replies_were_not_used(campaign):
    relevance = _answers(campaign, 2)
    with ScriptedLLMServer() as server:
        judge = _judge(campaign, server)
        run = runs.create_run(criterion=relevance, judge=judge, token_budget=100)
        batch = run.batches.first()
        log = accounting.BatchCallLog(
            run_id=run.pk, batch_id=batch.pk, owner="gone:1:x", messages=[{"content": "x" * 800}]
        )
        log.sent()  # 200 tokens estimated, more than the budget
        run = runs.run_inline(run_id=run.pk)
        assert server.calls == []
    assert run.status == JudgeRun.Status.BUDGET
    assert run.prompt_tokens == 200


@pytest.mark.django_db(transaction=True)
def test_calls_are_recorded_before_they_are_sent(campaign):
    relevance = _answers(campaign, 1)
    seen: list[int] = []

    def labeler(index: int, body: dict) -> int:
        # The server, answering, already finds the call's row, committed.
        seen.append(LLMCall.objects.count())
        connection.close()  # the server's thread: no session left behind
        return 1

    with ScriptedLLMServer(labeler=labeler) as server:
        judge = _judge(campaign, server)
        runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
    assert seen == [1]


@pytest.mark.django_db(transaction=True)
def test_calls_of_concurrent_threads_are_recorded_before_they_are_sent(campaign):
    relevance = _answers(campaign, 12)
    behind: list[tuple[int, int]] = []  # (requests received, calls recorded), as the server saw

    def labeler(index: int, body: dict) -> int:
        behind.append((len(server.calls), LLMCall.objects.filter(run=run).count()))
        connection.close()  # the server's thread: no session left behind
        return 1

    with ScriptedLLMServer(labeler=labeler, latency_s=0.02) as server:
        run = runs.create_run(criterion=relevance, judge=_judge(campaign, server), concurrency=4)
        run = runs.run_inline(run_id=run.pk)
    assert run.status == JudgeRun.Status.DONE
    assert len(behind) == 12
    assert all(rows >= received for received, rows in behind)
    assert LLMCall.objects.filter(run=run, used=True).count() == 12


@pytest.mark.skipif(connection.vendor != "postgresql", reason="another session locks the table")
@pytest.mark.django_db(transaction=True)
def test_a_request_of_several_threads_waits_until_its_row_is_committed(campaign):
    relevance = _answers(campaign, 1)
    run = runs.create_run(criterion=relevance, judge=runs.get_or_create_judge(campaign=campaign, name="gpt"))
    log = accounting.BatchCallLog(
        run_id=run.pk,
        batch_id=run.batches.get().pk,
        owner="waiting",
        messages=[{"role": "user", "content": "x" * 40}],
        recorder=(recorder := recording.CallRecorder()),
    )
    sent: list[int] = []
    config = connection.settings_dict
    try:
        with psycopg.connect(
            dbname=config["NAME"], user=config["USER"], host=config["HOST"], port=config["PORT"] or 5432
        ) as other:
            other.execute(f"LOCK TABLE {LLMCall._meta.db_table} IN EXCLUSIVE MODE")
            thread = threading.Thread(target=lambda: sent.append(log.sent()))
            thread.start()
            thread.join(timeout=0.5)
            assert thread.is_alive() and sent == []  # the database cannot take the row: no request
            other.rollback()
        thread.join(timeout=10)
        assert LLMCall.objects.filter(pk__in=sent, owner="waiting", outcome=LLMCall.Outcome.SENT).count() == 1
    finally:
        recorder.close()


@pytest.mark.django_db(transaction=True)
def test_the_call_recorder_gives_each_thread_its_row_and_each_failure_to_its_thread(campaign):
    relevance = _answers(campaign, 1)
    run = runs.create_run(criterion=relevance, judge=runs.get_or_create_judge(campaign=campaign, name="gpt"))
    batch = run.batches.get()
    messages = [{"role": "user", "content": "x" * 40}]
    recorder = recording.CallRecorder()
    ids: dict[int, int] = {}

    def send(i: int) -> None:
        log = accounting.BatchCallLog(
            run_id=run.pk, batch_id=batch.pk, owner=f"thread-{i}", messages=messages, recorder=recorder
        )
        ids[i] = log.sent()

    try:
        threads = [threading.Thread(target=send, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        orphan = accounting.BatchCallLog(
            run_id=run.pk, batch_id=batch.pk + 1000, owner="orphan", messages=messages, recorder=recorder
        )
        with pytest.raises(IntegrityError):
            orphan.sent()  # no such batch: the write fails, in the thread that asked for it
        after = accounting.BatchCallLog(
            run_id=run.pk, batch_id=batch.pk, owner="after", messages=messages, recorder=recorder
        ).sent()
    finally:
        recorder.close()
    with pytest.raises(recording.CallsNotRecorded):  # closed: no request leaves, none waits for ever
        accounting.BatchCallLog(
            run_id=run.pk, batch_id=batch.pk, owner="closed", messages=messages, recorder=recorder
        ).sent()
    rows = dict(LLMCall.objects.filter(run=run).values_list("id", "owner"))
    assert rows == {**{call_id: f"thread-{i}" for i, call_id in ids.items()}, after: "after"}
    assert set(LLMCall.objects.values_list("estimated_prompt_tokens", "outcome", "used")) == {
        (10, LLMCall.Outcome.SENT, False)
    }


def test_the_run_page_shows_the_spend_on_replies_not_used_in_english_and_french(
    client_for, manager, campaign
):
    relevance = _answers(campaign, 1)
    judge = runs.get_or_create_judge(
        campaign=campaign, name="gpt", model="m", base_url="http://127.0.0.1:9/v1"
    )
    run = runs.create_run(criterion=relevance, judge=judge)
    LLMCall.objects.create(
        run=run,
        batch=run.batches.get(),
        owner="gone:1:x",
        prompt_sha256="0" * 64,
        estimated_prompt_tokens=321,
        sent_at=timezone.now(),
    )
    accounting.sync_counters(run_id=run.pk)
    url = reverse("evaluation:run_detail", args=[campaign.slug, run.pk])
    page = client_for(manager).get(url).content.decode()
    assert "Spent on calls whose replies were not used" in page
    assert ">321<" in page and "1 call" in page
    french = client_for(manager).get(url, headers={"accept-language": "fr"}).content.decode()
    assert "Dépensé pour des appels dont la réponse n’a pas servi" in french
    assert "1 appel" in french


@pytest.mark.parametrize("judged", [True, False])
def test_a_run_read_as_ended_counts_the_batch_another_process_stored_last(campaign, judged):
    """Two processes share a run: the first one refreshed the counters before the second stored
    the last batch; whichever ends the run writes the counters with the status."""
    from evaluation.judge import scheduler, storage
    from evaluation.judge.claims import claim
    from evaluation.judge.judging import Outcome
    from evaluation.judge.parsing import Verdict

    relevance = _answers(campaign, 2)
    judge = Judge.objects.create(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    run = runs.create_run(criterion=relevance, judge=judge)
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
    first, last = run.batches.order_by("id")

    def store(batch: JudgeBatch) -> None:
        (batch_id,) = claim(run_id=run.pk, batch_ids=[batch.pk], owner="w:1:x")
        units = batch.unit_ids
        outcome = (
            Outcome(
                verdicts={unit: Verdict(index=i, label=1, reasoning="") for i, unit in enumerate(units)},
                failures={},
            )
            if judged
            else Outcome(verdicts={}, failures=dict.fromkeys(units, "unreachable"))
        )
        assert storage.store_batch(run=run, batch_id=batch_id, owner="w:1:x", outcome=outcome)

    store(first)
    seen = accounting.sync_counters(run_id=run.pk)
    assert (seen.done_units, seen.failed_units) == ((1, 0) if judged else (0, 1))
    store(last)  # by the other process, which has not refreshed the counters yet
    scheduler._finish_if_complete(run.pk)
    run.refresh_from_db()
    assert run.status == (JudgeRun.Status.DONE if judged else JudgeRun.Status.FAILED)
    assert run.finished_at is not None
    assert (run.done_units, run.failed_units) == ((2, 0) if judged else (0, 2))
