from __future__ import annotations

import io
import json
import os
import socket
import threading
import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, OperationalError, transaction
from django.db.backends.signals import connection_created
from django.utils import timezone, translation

from annotation.models import Criterion, Unit
from evaluation.judge import claims, runs, scheduler, storage
from evaluation.judge.judging import Outcome
from evaluation.judge.parsing import Verdict
from evaluation.models import Judge, JudgeBatch, JudgeRun, Judgment
from tests.factories import make_answer
from tests.llm_server import RateLimited, Reply, ScriptedLLMServer

pytestmark = pytest.mark.django_db


def _corpus(campaign, answers: int = 3):
    for i in range(answers):
        make_answer(
            campaign=campaign,
            theme=["Finance", "RH"][i % 2],
            text=f"Le chiffre d'affaires est de {10 + i} M€ [^c1^]. Il progresse [^c2^]. Merci.",
            sentences=[
                (f"Le chiffre d'affaires est de {10 + i} M€ [^c1^].", ["c1"]),
                ("Il progresse [^c2^].", ["c2"]),
                ("Merci.", []),
            ],
        )


def _llm_judge(campaign, server: ScriptedLLMServer, name: str = "gpt") -> Judge:
    judge = runs.get_or_create_judge(campaign=campaign, name=name, model="scripted", base_url=server.base_url)
    judge.settings.update({"timeout_s": 2.0, "max_attempts": 3, "backoff_base_s": 0.01})
    judge.save()
    return judge


def _calls(run: JudgeRun) -> list[SimpleNamespace]:
    """Every reply the run's batches kept, in batch order."""
    return [
        SimpleNamespace(**call)
        for calls in run.batches.order_by("id").values_list("llm_calls", flat=True)
        for call in calls
    ]


def _ok_counts(criterion, judge) -> tuple[int, int]:
    ok = Judgment.objects.filter(criterion=criterion, judge=judge, status=Judgment.Status.OK)
    return ok.count(), ok.values("unit").distinct().count()


def test_lexical_run_judges_every_unit_exactly_once(campaign):
    _corpus(campaign)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.create_run(criterion=veracity, judge=judge)
    assert run.total_units == 9
    assert run.batches.count() == 3  # one batch per answer
    run = runs.run_inline(run_id=run.pk)
    assert run.status == JudgeRun.Status.DONE
    assert (run.done_units, run.failed_units) == (9, 0)
    assert _ok_counts(veracity, judge) == (9, 9)


def test_rerunning_all_updates_in_place_and_missing_finds_nothing(campaign):
    _corpus(campaign, answers=2)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
    again = runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
    assert again.done_units == 2
    assert _ok_counts(relevance, judge) == (2, 2)
    missing = runs.create_run(criterion=relevance, judge=judge, scope=JudgeRun.Scope.MISSING)
    assert missing.total_units == 0
    assert missing.status == JudgeRun.Status.DONE


@pytest.mark.django_db(transaction=True)
def test_llm_run_sends_one_prompt_per_answer_with_all_its_sentences(campaign):
    _corpus(campaign)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    with ScriptedLLMServer(labeler=lambda index, request: 0 if index == 0 else 1) as server:
        judge = _llm_judge(campaign, server)
        run = runs.run_inline(run_id=runs.create_run(criterion=veracity, judge=judge, concurrency=2).pk)
        assert len(server.requests) == 3
    assert run.status == JudgeRun.Status.DONE
    assert run.calls == 3
    assert run.prompt_tokens > 0
    values = dict(
        Judgment.objects.filter(judge=judge, criterion=veracity).values_list(
            "unit__sentence__position", "value"
        )
    )
    assert values == {0: 0, 1: 1, 2: 1}
    judgment = Judgment.objects.filter(judge=judge).first()
    assert judgment.raw_response  # kept for audit
    assert judgment.reasoning


def test_transient_faults_are_retried_and_every_unit_ends_judged_once(campaign):
    _corpus(campaign)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    with ScriptedLLMServer() as server:
        judge = _llm_judge(campaign, server)
        server.enqueue("429", "500", "fenced", "invalid_json")
        run = runs.run_inline(run_id=runs.create_run(criterion=veracity, judge=judge, concurrency=1).pk)
    assert run.status == JudgeRun.Status.DONE
    assert (run.done_units, run.failed_units) == (9, 0)
    assert _ok_counts(veracity, judge) == (9, 9)


def test_persistent_bad_replies_fail_the_batch_with_a_reason_then_only_failed_recovers(campaign):
    _corpus(campaign, answers=2)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    with ScriptedLLMServer() as server:
        judge = _llm_judge(campaign, server)
        server.enqueue("wrong_count", "truncated", "wrong_count")
        run = runs.run_inline(run_id=runs.create_run(criterion=veracity, judge=judge, concurrency=1).pk)
        assert (run.done_units, run.failed_units) == (3, 3)
        (reason,) = runs.failure_reasons(run=run)
        assert reason.count == len(reason.units) == 3
        assert "invalid verdicts" in reason.error
        assert run.status == JudgeRun.Status.DONE and run.status_text == "Done with 3 failures"
        retry = runs.run_inline(
            run_id=runs.create_run(criterion=veracity, judge=judge, scope=JudgeRun.Scope.FAILED).pk
        )
    assert (retry.total_units, retry.done_units, retry.failed_units) == (3, 3, 0)
    assert _ok_counts(veracity, judge) == (6, 6)
    assert not Judgment.objects.filter(judge=judge, status=Judgment.Status.FAILED).exists()


def test_server_that_always_times_out_records_failures(campaign):
    _corpus(campaign, answers=1)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    with ScriptedLLMServer(latency_s=1.0) as server:
        judge = _llm_judge(campaign, server)
        judge.settings.update({"timeout_s": 0.2, "max_attempts": 2})
        judge.save()
        run = runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
    assert (run.done_units, run.failed_units) == (0, 1)
    assert "TransientError" in runs.failure_reasons(run=run)[0].error
    assert run.status == JudgeRun.Status.FAILED


def test_processing_the_same_batches_twice_stores_each_judgment_once(campaign):
    _corpus(campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.create_run(criterion=relevance, judge=judge)
    ids = list(run.batches.values_list("id", flat=True))
    assert scheduler.process_batches(run_id=run.pk, batch_ids=ids) == 3
    assert scheduler.process_batches(run_id=run.pk, batch_ids=ids) == 0
    run.refresh_from_db()
    assert run.done_units == 3
    assert _ok_counts(relevance, judge) == (3, 3)


def test_a_dead_workers_claim_is_recovered_and_judged_once(campaign):
    _corpus(campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.create_run(criterion=relevance, judge=judge)
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
    batch = run.batches.first()
    # A process id that cannot exist on this host: the claim of a worker killed with kill -9.
    JudgeBatch.objects.filter(pk=batch.pk).update(
        status=JudgeBatch.Status.RUNNING, claimed_by=f"{socket.gethostname()}:99999999"
    )
    assert scheduler.process_batches(run_id=run.pk, batch_ids=[batch.pk]) == 0  # still claimed
    assert claims.recover_stale_batches() == [run.pk]
    run = runs.run_inline(run_id=run.pk)
    assert run.status == JudgeRun.Status.DONE
    assert _ok_counts(relevance, judge) == (3, 3)


def test_cancel_then_resume_finishes_the_run(campaign):
    _corpus(campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.create_run(criterion=relevance, judge=judge)
    first = run.batches.order_by("id").first()
    scheduler.process_batches(run_id=run.pk, batch_ids=[first.pk])
    runs.cancel_run(run_id=run.pk)
    all_ids = list(run.batches.values_list("id", flat=True))
    assert scheduler.process_batches(run_id=run.pk, batch_ids=all_ids) == 0
    assert run.batches.filter(status=JudgeBatch.Status.CANCELLED).count() == 2
    with pytest.raises(runs.RunError):
        runs.cancel_run(run_id=run.pk)
    runs.resume_run(run_id=run.pk)
    run = runs.run_inline(run_id=run.pk)
    assert run.status == JudgeRun.Status.DONE
    assert run.done_units == 3
    assert _ok_counts(relevance, judge) == (3, 3)


def test_token_budget_stops_the_run_and_resume_with_more_budget_finishes(campaign):
    _corpus(campaign, answers=4)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    with ScriptedLLMServer() as server:
        judge = _llm_judge(campaign, server)
        run = runs.run_inline(
            run_id=runs.create_run(criterion=relevance, judge=judge, token_budget=1, concurrency=1).pk
        )
        assert run.status == JudgeRun.Status.BUDGET
        assert run.done_units < 4
        runs.resume_run(run_id=run.pk, token_budget=10**9)
        run = runs.run_inline(run_id=run.pk)
    assert run.status == JudgeRun.Status.DONE
    assert _ok_counts(relevance, judge) == (4, 4)


def test_a_second_active_run_of_the_same_judge_is_refused(campaign):
    _corpus(campaign, answers=1)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    runs.create_run(criterion=relevance, judge=judge)
    with pytest.raises(runs.RunError, match="already has an active run"):
        runs.create_run(criterion=relevance, judge=judge)


def test_existing_judge_refuses_another_model(campaign):
    runs.get_or_create_judge(campaign=campaign, name="gpt", model="m1")
    with pytest.raises(runs.RunError, match="uses model"):
        runs.get_or_create_judge(campaign=campaign, name="gpt", model="m2")


def test_judge_command_runs_with_the_lexical_judge_and_reports(campaign, capsys):
    _corpus(campaign, answers=2)
    call_command("judge", campaign=campaign.name, criterion="veracity", judge="lexical")
    out = capsys.readouterr().out
    assert "done: 6 judged, 0 failed of 6 units" in out
    call_command("judge", campaign=campaign.name, criterion="veracity", judge="lexical", only_missing=True)
    assert "0 judged, 0 failed of 0 units" in capsys.readouterr().out
    assert Judgment.objects.count() == 6
    assert Unit.objects.filter(level="sentence").count() == 6


def test_judge_command_names_an_unknown_criterion(campaign):
    with pytest.raises(CommandError, match="criterion 'nope' does not exist"):
        call_command("judge", campaign=campaign.name, criterion="nope", judge="lexical")


def test_an_error_mid_run_returns_the_claimed_batches_to_pending(campaign, monkeypatch):
    _corpus(campaign)
    monkeypatch.setattr(scheduler, "SYNC_INTERVAL_S", 0.0)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.create_run(criterion=relevance, judge=judge)
    calls = []

    def interrupted(refreshed: JudgeRun) -> None:
        calls.append(refreshed.done_units)
        if len(calls) == 2:  # say, Ctrl-C or a soft time limit after the first batch
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runs.run_inline(run_id=run.pk, progress=interrupted)
    assert not run.batches.filter(status=JudgeBatch.Status.RUNNING).exists()
    assert run.batches.filter(status=JudgeBatch.Status.PENDING).count() == 2
    run = runs.run_inline(run_id=run.pk)
    assert run.status == JudgeRun.Status.DONE
    assert _ok_counts(relevance, judge) == (3, 3)


@pytest.mark.django_db(transaction=True)
def test_an_error_in_one_thread_returns_every_unstarted_claim(campaign, monkeypatch):
    _corpus(campaign, answers=8)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    monkeypatch.setattr(scheduler, "SYNC_INTERVAL_S", 0.0)
    with ScriptedLLMServer(latency_s=0.05) as server:
        judge = _llm_judge(campaign, server)
        run = runs.create_run(criterion=relevance, judge=judge, concurrency=2)

        def interrupted(refreshed: JudgeRun) -> None:
            if refreshed.done_units >= 2:
                raise RuntimeError("interrupted")

        with pytest.raises(RuntimeError, match="interrupted"):
            runs.run_inline(run_id=run.pk, progress=interrupted)
        assert not run.batches.filter(status=JudgeBatch.Status.RUNNING).exists()
        run = runs.run_inline(run_id=run.pk)
    assert run.status == JudgeRun.Status.DONE
    assert _ok_counts(relevance, judge) == (8, 8)


@pytest.mark.django_db(transaction=True)
def test_cancelling_a_run_while_its_threads_judge_cancels_every_batch_not_started(campaign, monkeypatch):
    _corpus(campaign, answers=12)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    monkeypatch.setattr(scheduler, "SYNC_INTERVAL_S", 0.0)
    with ScriptedLLMServer() as server:
        judge = _llm_judge(campaign, server)
        run = runs.create_run(criterion=relevance, judge=judge, concurrency=2)
        # From the fourth request on, replies wait until the cancel has been made: however slow
        # the machine, the cancel comes while batches are still to be sent.
        server.hold(from_request=4)

        def cancel_midway(refreshed: JudgeRun) -> None:
            if refreshed.is_active and refreshed.done_units >= 2:
                runs.cancel_run(run_id=run.pk)
                server.release()

        run = runs.run_inline(run_id=run.pk, progress=cancel_midway)
        assert run.status == JudgeRun.Status.CANCELLED
        statuses = list(run.batches.values_list("status", flat=True))
        assert JudgeBatch.Status.RUNNING not in statuses and JudgeBatch.Status.PENDING not in statuses
        # The batches being judged when the cancel was seen finished; no other was sent.
        done = statuses.count(JudgeBatch.Status.DONE)
        assert 2 <= done < 12
        assert len(server.requests) == done
        assert Judgment.objects.filter(judge=judge).count() == done
        runs.resume_run(run_id=run.pk)
        run = runs.run_inline(run_id=run.pk)
    assert run.status == JudgeRun.Status.DONE
    assert _ok_counts(relevance, judge) == (12, 12)


@pytest.mark.django_db(transaction=True)
def test_the_judging_and_storing_threads_close_their_database_connections(campaign):
    _corpus(campaign, answers=8)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    opened = []

    def record(sender, connection, **kwargs) -> None:
        if threading.current_thread().name.startswith("judge"):
            opened.append(connection)

    connection_created.connect(record)
    try:
        with ScriptedLLMServer(latency_s=0.02) as server:
            judge = _llm_judge(campaign, server)
            run = runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge, concurrency=4).pk)
    finally:
        connection_created.disconnect(record)
    assert run.status == JudgeRun.Status.DONE
    assert len(opened) >= 2  # judging threads and the storing thread
    assert all(wrapper.connection is None for wrapper in opened)


def test_resume_returns_claims_older_than_the_time_limit(campaign):
    _corpus(campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.create_run(criterion=relevance, judge=judge)
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
    stale, live = run.batches.order_by("id")[:2]
    # A worker on another machine that died long ago, and one of this process still working.
    JudgeBatch.objects.filter(pk=stale.pk).update(
        status=JudgeBatch.Status.RUNNING,
        claimed_by="elsewhere:123:abcd",
        claimed_at=timezone.now() - timedelta(hours=2),
    )
    JudgeBatch.objects.filter(pk=live.pk).update(
        status=JudgeBatch.Status.RUNNING,
        claimed_by=f"{socket.gethostname()}:{os.getpid()}:live",
        claimed_at=timezone.now(),
    )
    runs.resume_run(run_id=run.pk)
    assert JudgeBatch.objects.get(pk=stale.pk).status == JudgeBatch.Status.PENDING
    assert JudgeBatch.objects.get(pk=live.pk).status == JudgeBatch.Status.RUNNING
    runs.run_inline(run_id=run.pk)
    assert JudgeBatch.objects.get(pk=live.pk).status == JudgeBatch.Status.RUNNING
    assert _ok_counts(relevance, judge) == (2, 2)


@pytest.mark.django_db(transaction=True)
def test_token_budget_is_checked_between_attempts_at_the_verdicts(campaign):
    _corpus(campaign, answers=2)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    with ScriptedLLMServer() as server:
        judge = _llm_judge(campaign, server)
        server.enqueue("wrong_count", "wrong_count")
        run = runs.run_inline(
            run_id=runs.create_run(criterion=relevance, judge=judge, token_budget=10, concurrency=1).pk
        )
        assert len(server.requests) == 1  # the rejected reply spent the budget: no second attempt
    assert run.status == JudgeRun.Status.BUDGET
    assert run.calls == 1
    assert run.prompt_tokens + run.completion_tokens > 10
    (call,) = _calls(run)
    assert not call.accepted
    assert "invalid verdicts" in call.error
    assert not Judgment.objects.filter(judge=judge).exists()
    assert set(run.batches.values_list("status", flat=True)) == {JudgeBatch.Status.CANCELLED}


@pytest.mark.django_db(transaction=True)
def test_token_budget_overshoots_by_at_most_one_call_per_thread(campaign):
    _corpus(campaign, answers=24)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    threads, budget = 4, 2000
    with ScriptedLLMServer(latency_s=0.05) as server:
        judge = _llm_judge(campaign, server)
        run = runs.run_inline(
            run_id=runs.create_run(
                criterion=relevance, judge=judge, token_budget=budget, concurrency=threads
            ).pk
        )
        requests = len(server.requests)
    assert run.status == JudgeRun.Status.BUDGET
    spent = run.prompt_tokens + run.completion_tokens
    per_call = [c.prompt_tokens + c.completion_tokens for c in _calls(run)]
    assert len(per_call) == run.calls == requests
    assert sum(per_call) == spent
    assert budget <= spent < budget + threads * max(per_call)
    assert 0 < run.done_units < 24
    assert _ok_counts(relevance, judge) == (run.done_units, run.done_units)
    assert run.batches.filter(status=JudgeBatch.Status.CANCELLED).count() == 24 - run.done_units


def test_the_database_refuses_two_active_runs_of_one_judge_on_one_criterion(campaign):
    _corpus(campaign, answers=1)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    first = runs.create_run(criterion=relevance, judge=judge)
    with pytest.raises(IntegrityError), transaction.atomic():
        JudgeRun.objects.create(campaign=campaign, criterion=relevance, judge=judge)
    runs.cancel_run(run_id=first.pk)
    second = runs.create_run(criterion=relevance, judge=judge)
    with pytest.raises(runs.RunError, match="already has an active run"):
        runs.resume_run(run_id=first.pk)
    first.refresh_from_db()
    assert first.status == JudgeRun.Status.CANCELLED
    assert second.is_active


@pytest.mark.django_db(transaction=True)
def test_every_reply_is_kept_and_judgments_share_the_spend_exactly(campaign):
    _corpus(campaign)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    with ScriptedLLMServer() as server:
        judge = _llm_judge(campaign, server)
        judge.settings.update({"price_per_1k_prompt": 0.7, "price_per_1k_completion": 2.1})
        judge.save()
        server.enqueue("wrong_count")
        run = runs.run_inline(run_id=runs.create_run(criterion=veracity, judge=judge, concurrency=1).pk)
    assert (run.status, run.done_units, run.calls) == (JudgeRun.Status.DONE, 9, 4)
    calls = _calls(run)
    assert [c.accepted for c in calls] == [False, True, True, True]
    assert "invalid verdicts" in calls[0].error
    assert calls[0].raw_response["choices"][0]["message"]["content"]
    assert all(c.latency_ms >= 0 and c.http_attempts == 1 for c in calls)
    assert sum(c.prompt_tokens for c in calls) == run.prompt_tokens
    assert sum(c.completion_tokens for c in calls) == run.completion_tokens
    assert sum(c.cost for c in calls) == pytest.approx(run.cost, rel=1e-12)
    judgments = Judgment.objects.filter(judge=judge, criterion=veracity)
    assert sum(j.prompt_tokens for j in judgments) == run.prompt_tokens
    assert sum(j.completion_tokens for j in judgments) == run.completion_tokens
    assert sum(j.cost for j in judgments) == pytest.approx(run.cost, rel=1e-12)
    assert run.cost > 0


@pytest.mark.django_db(transaction=True)
def test_replies_slower_than_the_timeout_are_retried_and_every_unit_judged_once(campaign):
    _corpus(campaign, answers=4)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    with ScriptedLLMServer(slow_s=1.0) as server:
        judge = _llm_judge(campaign, server)
        judge.settings.update({"timeout_s": 0.3})
        judge.save()
        server.enqueue("slow", "slow")
        run = runs.run_inline(run_id=runs.create_run(criterion=veracity, judge=judge, concurrency=2).pk)
        faults = [call.fault for call in server.calls]
    assert faults.count("slow") == 2
    assert len(faults) == 6
    # The two replies the client gave up on were generated all the same: they count as calls
    # whose replies were not used.
    assert (run.status, run.done_units, run.failed_units, run.calls) == (JudgeRun.Status.DONE, 12, 0, 6)
    assert run.unused_calls == 2
    assert sum(c.http_attempts for c in _calls(run)) == 6
    assert _ok_counts(veracity, judge) == (12, 12)


@pytest.mark.django_db(transaction=True)
def test_429_with_retry_after_at_concurrency_4_judges_every_unit_once(campaign):
    _corpus(campaign, answers=8)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    with ScriptedLLMServer(latency_s=0.02) as server:
        judge = _llm_judge(campaign, server)
        # Our own backoff is 10 ms: only the server's Retry-After can make the run last 0.4 s.
        judge.settings.update({"max_attempts": 6})
        judge.save()
        server.enqueue(*[RateLimited(retry_after_s=0.4)] * 4)
        started = time.monotonic()
        run = runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge, concurrency=4).pk)
        elapsed = time.monotonic() - started
        calls = server.calls
    assert 2 <= server.max_in_flight <= 4
    assert [c.fault for c in calls] == ["429"] * 4 + [None] * 8
    assert elapsed >= 0.4
    assert (run.status, run.done_units, run.failed_units) == (JudgeRun.Status.DONE, 8, 0)
    assert _ok_counts(relevance, judge) == (8, 8)


def test_a_criterion_of_the_campaign_is_judged_with_its_own_guidelines_and_prompt(campaign):
    _corpus(campaign, answers=1)
    tone = Criterion.objects.create(
        campaign=campaign,
        name="tone",
        title="Ton professionnel",
        level="sentence",
        guidelines="1 : ton neutre et professionnel. 0 : familiarité.",
        judge_prompt="Tu relis le ton des phrases d'un assistant pour un cabinet d'avocats.",
    )
    language = Criterion.objects.create(
        campaign=campaign, name="politeness", title="Politesse", level="answer", guidelines="1 : poli."
    )
    with ScriptedLLMServer() as server:
        judge = _llm_judge(campaign, server)
        runs.run_inline(run_id=runs.create_run(criterion=tone, judge=judge).pk)
        runs.run_inline(run_id=runs.create_run(criterion=language, judge=judge).pk)
        tone_system, language_system = (r["messages"][0]["content"] for r in server.requests)
        tone_user = server.requests[0]["messages"][1]["content"]
    assert tone_system.startswith("Tu relis le ton des phrases")
    assert "1 : ton neutre et professionnel." in tone_system
    assert "véracité" not in tone_system.lower()
    assert "INDICES: [0, 1, 2]" in tone_user
    assert "« Politesse »" in language_system
    assert "1 : poli." in language_system
    assert "pertinence" not in language_system.lower()
    assert Judgment.objects.filter(judge=judge, criterion=tone, status="ok").count() == 3
    assert Judgment.objects.filter(judge=judge, criterion=language, status="ok").count() == 1


def test_an_unknown_prompt_version_is_refused_naming_the_known_ones(campaign):
    with pytest.raises(CommandError, match="prompt version 'v9' is unknown; known versions: v1"):
        call_command("judge", campaign=campaign.name, criterion="veracity", judge="gpt", prompt_version="v9")
    assert runs.get_or_create_judge(campaign=campaign, name="gpt", prompt_version="v1").prompt_version == "v1"


def test_storing_judged_batches_together_writes_only_those_still_claimed(campaign):
    _corpus(campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.create_run(criterion=relevance, judge=judge)
    batches = list(run.batches.order_by("id"))
    claimed = claims.claim(run_id=run.pk, batch_ids=[b.pk for b in batches], owner="me")
    assert claimed == [b.pk for b in batches]
    # The last claim was taken over meanwhile (as a stale one would be).
    JudgeBatch.objects.filter(pk=batches[2].pk).update(claimed_by="someone-else")
    verdict = Verdict(index=0, label=1, reasoning="ok")
    judged = [
        (
            batch.pk,
            Outcome(
                verdicts={batch.unit_ids[0]: verdict},
                failures={},
                prompt_tokens=10 + i,
                completion_tokens=3,
                cost=0.5,
                calls=1,
                log=[{"accepted": True, "call": i}],
            ),
            [{"accepted": False, "earlier": True}],
        )
        for i, batch in enumerate(batches)
    ]
    stored = storage.store_batches(run=run, owner="me", judged=judged)
    assert stored == {batches[0].pk, batches[1].pk}
    rows = {b.pk: b for b in JudgeBatch.objects.filter(run=run)}
    for i in (0, 1):
        row = rows[batches[i].pk]
        assert row.status == JudgeBatch.Status.DONE
        assert (row.done_units, row.failed_units, row.prompt_tokens, row.calls) == (1, 0, 10 + i, 1)
        assert row.llm_calls == [{"accepted": False, "earlier": True}, {"accepted": True, "call": i}]
        assert row.finished_at is not None
    assert rows[batches[2].pk].status == JudgeBatch.Status.RUNNING
    assert rows[batches[2].pk].done_units == 0
    judged_units = set(Judgment.objects.filter(judge=judge).values_list("unit_id", flat=True))
    assert judged_units == {batches[0].unit_ids[0], batches[1].unit_ids[0]}


@pytest.mark.django_db(transaction=True)
def test_a_database_error_while_storing_gives_every_judged_batch_back(campaign, monkeypatch):
    _corpus(campaign, answers=12)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    real_store = storage.store_batches
    stores = []

    def failing_store(**kwargs):
        stores.append(len(kwargs["judged"]))
        if len(stores) == 2:
            raise OperationalError("connection lost")
        return real_store(**kwargs)

    monkeypatch.setattr(storage, "store_batches", failing_store)
    with ScriptedLLMServer(latency_s=0.02) as server:
        judge = _llm_judge(campaign, server)
        run = runs.create_run(criterion=relevance, judge=judge, concurrency=4)
        with pytest.raises(OperationalError, match="connection lost"):
            runs.run_inline(run_id=run.pk)
        assert not run.batches.filter(status=JudgeBatch.Status.RUNNING).exists()
        stored_first = stores[0]
        assert run.batches.filter(status=JudgeBatch.Status.DONE).count() == stored_first
        assert Judgment.objects.filter(judge=judge).count() == stored_first
        monkeypatch.setattr(storage, "store_batches", real_store)
        run = runs.run_inline(run_id=run.pk)
    assert run.status == JudgeRun.Status.DONE
    assert (run.done_units, run.failed_units) == (12, 0)
    assert _ok_counts(relevance, judge) == (12, 12)


@pytest.mark.django_db(transaction=True)
def test_judged_batches_are_stored_a_group_at_a_time(campaign, monkeypatch):
    _corpus(campaign, answers=16)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    groups: list[int] = []
    store_batches = storage.store_batches

    def counted(*, run, owner, judged):
        groups.append(len(judged))
        return store_batches(run=run, owner=owner, judged=judged)

    monkeypatch.setattr(storage, "store_batches", counted)
    monkeypatch.setattr(scheduler, "STORE_WAIT_S", 60.0)  # a group is complete, or the run over
    with ScriptedLLMServer(latency_s=0.01) as server:
        judge = _llm_judge(campaign, server)
        run = runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge, concurrency=4).pk)
    assert run.status == JudgeRun.Status.DONE
    assert _ok_counts(relevance, judge) == (16, 16)
    # As many batches as there are judging threads per transaction, the last group excepted.
    assert sum(groups) == 16
    assert all(size >= 4 for size in groups[:-1])


def test_a_reply_with_nul_and_control_characters_is_stored_under_the_rule(campaign):
    # PostgreSQL refuses NUL in a text and in JSON: the judge's words come in as any text does.
    from tests.llm_server import Reply

    _corpus(campaign, answers=1)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    verdicts = [
        {"index": i, "reasoning": f"Phrase {i}\u0000 vérifiée\u001b.\u000c", "label": 1} for i in (0, 1, 2)
    ]
    with ScriptedLLMServer() as server:
        judge = _llm_judge(campaign, server)
        server.enqueue(Reply(content=json.dumps({"verdicts": verdicts})))
        run = runs.run_inline(run_id=runs.create_run(criterion=veracity, judge=judge, concurrency=1).pk)
    assert (run.status, run.done_units, run.failed_units) == (JudgeRun.Status.DONE, 3, 0)
    stored = Judgment.objects.filter(judge=judge).order_by("unit_id")
    assert [j.reasoning for j in stored] == [f"Phrase {i} vérifiée.\n" for i in (0, 1, 2)]
    # The reply itself is kept verbatim: in its JSON the characters are escapes, plain text.
    assert all(j.raw_response == json.dumps({"verdicts": verdicts}) for j in stored)


# How a run ends: failed when nothing was judged, done with its failures told otherwise.


def test_a_run_whose_every_call_fails_ends_failed_with_one_reason_for_all_its_units(campaign, settings):
    settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = "", None
    _corpus(campaign)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    judge = runs.get_or_create_judge(campaign=campaign, name="gpt")  # made before the key went away
    run = runs.run_inline(run_id=runs.create_run(criterion=veracity, judge=judge).pk)
    assert (run.status, run.done_units, run.failed_units) == (JudgeRun.Status.FAILED, 0, 9)
    assert not run.is_active and run.finished_at is not None
    assert run.status_text == "Failed: 9 of 9 units"
    assert run.status_tone == "bad"
    assert run.shares == (0.0, 100.0)
    (reason,) = runs.failure_reasons(run=run, units=4)
    assert reason.error.startswith("OPENAI_API_KEY is not set")
    assert (reason.count, len(reason.units), reason.more) == (9, 4, 5)
    first = Unit.objects.filter(level="sentence").order_by("id")[:4]
    assert [u["unit_id"] for u in reason.units] == [u.pk for u in first]
    with translation.override("fr"):
        assert run.status_text == "En échec\u00a0: 9 unités sur 9"
    # A failed run resumes as any ended run with failures: its batches are pending again.
    resumed = runs.resume_run(run_id=run.pk)
    assert resumed.status == JudgeRun.Status.RUNNING
    assert not run.batches.exclude(status=JudgeBatch.Status.PENDING).exists()


def test_a_run_with_some_failures_is_done_with_them_told(campaign):
    _corpus(campaign, answers=3)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    with ScriptedLLMServer() as server:
        judge = _llm_judge(campaign, server)
        server.enqueue("wrong_count", "wrong_count", "wrong_count")
        run = runs.run_inline(run_id=runs.create_run(criterion=veracity, judge=judge, concurrency=1).pk)
    assert (run.status, run.done_units, run.failed_units) == (JudgeRun.Status.DONE, 6, 3)
    assert run.status_text == "Done with 3 failures"
    assert run.status_tone == "warn"
    assert run.shares == (66.67, 33.33)
    with translation.override("fr"):
        assert run.status_text == "Terminé avec 3 échecs"


def test_one_failure_in_a_thousand_still_shows_on_the_bar():
    run = JudgeRun(status=JudgeRun.Status.DONE, total_units=1000, done_units=999, failed_units=1)
    assert run.shares == (99.5, 0.5)
    assert run.status_text == "Done with 1 failure"
    assert JudgeRun(status=JudgeRun.Status.DONE, total_units=4, done_units=4).status_tone == "good"
    assert JudgeRun(status=JudgeRun.Status.CANCELLED, total_units=4).status_text == "Cancelled"


def test_failure_reasons_come_most_frequent_first_in_two_queries(campaign, django_assert_num_queries):
    _corpus(campaign, answers=4)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.create_run(criterion=veracity, judge=judge)
    batches = list(run.batches.order_by("id"))
    owner = claims.worker_name()
    claims.claim(run_id=run.pk, batch_ids=[b.pk for b in batches], owner=owner)
    reasons = ["timeout", "timeout", "timeout", "refused"]
    for batch, reason in zip(batches, reasons, strict=True):
        failures = dict.fromkeys(batch.unit_ids, reason)
        if reason == "refused":
            failures = {batch.unit_ids[0]: reason}  # one unit failed, the others judged
        verdicts = {
            uid: Verdict(index=i, label=1, reasoning="ok")
            for i, uid in enumerate(batch.unit_ids)
            if uid not in failures
        }
        storage.store_batch(
            run=run, batch_id=batch.pk, owner=owner, outcome=Outcome(verdicts=verdicts, failures=failures)
        )
    run = runs.run_inline(run_id=run.pk)
    assert run.failed_units == 10
    with django_assert_num_queries(2):
        found = runs.failure_reasons(run=run, units=2)
    assert [(r.error, r.count, len(r.units), r.more) for r in found] == [
        ("timeout", 9, 2, 7),
        ("refused", 1, 1, 0),
    ]
    assert [r.error for r in runs.failure_reasons(run=run, reasons=1)] == ["timeout"]
    run.failed_units = 0
    with django_assert_num_queries(0):
        assert runs.failure_reasons(run=run) == []


def test_the_judge_command_groups_failures_and_fails_a_run_that_judged_nothing(campaign):
    _corpus(campaign, answers=1)
    with ScriptedLLMServer() as server:
        # The check before the run gets its reply; every prompt of the run then gets prose.
        server.enqueue(Reply("OK"), *["invalid_json"] * 3)
        out = io.StringIO()
        with pytest.raises(CommandError, match="^run [0-9]+ failed: none of its 1 units was judged$"):
            call_command(
                "judge",
                campaign=campaign.name,
                criterion="relevance",
                judge="gpt",
                base_url=server.base_url,
                stdout=out,
            )
    text = out.getvalue()
    assert "failed: 0 judged, 1 failed of 1 units (Failed: 1 of 1 units)" in text
    assert "  1 x " in text and "invalid verdicts" in text
    assert JudgeRun.objects.get().status == JudgeRun.Status.FAILED
