from __future__ import annotations

import socket

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Criterion, Unit
from evaluation.judge import runs
from evaluation.models import Judge, JudgeBatch, JudgeRun, Judgment
from tests.factories import make_answer
from tests.llm_server import ScriptedLLMServer

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
        failed = runs.failed_units(run=run)
        assert len(failed) == 3
        assert all("invalid verdicts" in row["error"] for row in failed)
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
    assert "TransientError" in runs.failed_units(run=run)[0]["error"]


def test_processing_the_same_batches_twice_stores_each_judgment_once(campaign):
    _corpus(campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.create_run(criterion=relevance, judge=judge)
    ids = list(run.batches.values_list("id", flat=True))
    assert runs.process_batches(run_id=run.pk, batch_ids=ids) == 3
    assert runs.process_batches(run_id=run.pk, batch_ids=ids) == 0
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
    assert runs.process_batches(run_id=run.pk, batch_ids=[batch.pk]) == 0  # still claimed
    assert runs.recover_stale_batches() == [run.pk]
    run = runs.run_inline(run_id=run.pk)
    assert run.status == JudgeRun.Status.DONE
    assert _ok_counts(relevance, judge) == (3, 3)


def test_cancel_then_resume_finishes_the_run(campaign):
    _corpus(campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.create_run(criterion=relevance, judge=judge)
    first = run.batches.order_by("id").first()
    runs.process_batches(run_id=run.pk, batch_ids=[first.pk])
    runs.cancel_run(run_id=run.pk)
    assert runs.process_batches(run_id=run.pk, batch_ids=list(run.batches.values_list("id", flat=True))) == 0
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
