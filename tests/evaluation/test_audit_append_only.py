"""What was spent and what was reported stays as recorded: judge runs, their batches and calls,
and report snapshots are read-only in the admin, and on PostgreSQL a trigger refuses to rewrite
them (evaluation/0008_audit_append_only): a snapshot is never updated, a call that ended is
final, a run's or batch's spend never goes down. A run still counts as it goes."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.db.models import F

from annotation.models import Criterion
from evaluation.estimates.snapshots import record_snapshots
from evaluation.judge import runs
from evaluation.judge.accounting import BatchCallLog, sync_counters
from evaluation.models import JudgeBatch, JudgeRun, LLMCall, ReportSnapshot
from tests.annotation.workflow.test_append_only import needs_trigger
from tests.evaluation.judge.test_runs import _corpus, _llm_judge
from tests.factories import make_user
from tests.llm_server import ScriptedLLMServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def spent(campaign):
    """A finished LLM run (its batches and calls) and the snapshots of its criterion."""
    _corpus(campaign, answers=2)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    with ScriptedLLMServer() as server:
        judge = _llm_judge(campaign, server)
        judge.settings.update({"price_per_1k_prompt": 0.01, "price_per_1k_completion": 0.03})
        judge.save()
        run = runs.run_inline(run_id=runs.create_run(criterion=veracity, judge=judge, concurrency=1).pk)
    assert run.status == JudgeRun.Status.DONE and run.prompt_tokens > 0 and run.cost > 0
    record_snapshots(criterion=veracity, trigger="test")
    return run, ReportSnapshot.objects.filter(criterion=veracity).first()


def _refused(operation) -> str:
    with pytest.raises(IntegrityError) as error, transaction.atomic():
        operation()
    return str(error.value)


@pytest.mark.parametrize("model", [JudgeRun, JudgeBatch, LLMCall, ReportSnapshot])
def test_a_superuser_reads_but_cannot_change_or_delete_them_in_the_admin(model, spent, client):
    client.force_login(make_user(superuser=True))
    run, snapshot = spent
    row = {
        JudgeRun: run,
        JudgeBatch: run.batches.first(),
        LLMCall: LLMCall.objects.filter(run=run).first(),
        ReportSnapshot: snapshot,
    }[model]
    base = f"/admin/evaluation/{model._meta.model_name}/"
    page = client.get(f"{base}{row.pk}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert client.post(f"{base}{row.pk}/change/", {"cost": "0.01"}).status_code == 403
    assert client.get(f"{base}add/").status_code == 403
    assert client.post(f"{base}{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert model.objects.filter(pk=row.pk).exists()


@needs_trigger
def test_postgresql_refuses_to_rewrite_a_snapshot_a_finished_call_or_a_smaller_spend(spent):
    run, snapshot = spent
    assert snapshot is not None
    message = _refused(lambda: ReportSnapshot.objects.filter(pk=snapshot.pk).update(n_human=0))
    assert "report snapshots are kept as they were" in message
    call = LLMCall.objects.filter(run=run, outcome=LLMCall.Outcome.REPLIED).first()
    assert "is final" in _refused(lambda: LLMCall.objects.filter(pk=call.pk).update(prompt_tokens=1))
    # The finding this answers: a run's cost of 13.14 rewritten as 0.01.
    for model, row in ((JudgeRun, run), (JudgeBatch, run.batches.first())):
        assert "spend only grows" in _refused(
            lambda m=model, r=row: m.objects.filter(pk=r.pk).update(cost=0.0)
        )
        for column in ("prompt_tokens", "completion_tokens", "calls"):
            rewrite = {column: 0}
            assert "spend only grows" in _refused(
                lambda m=model, r=row, c=rewrite: m.objects.filter(pk=r.pk).update(**c)
            )
    # What a run does as it counts: more spend, and its other columns, are written.
    JudgeRun.objects.filter(pk=run.pk).update(cost=F("cost") + 1, status=JudgeRun.Status.DONE)
    assert JudgeRun.objects.get(pk=run.pk).cost == pytest.approx(run.cost + 1)
    # A campaign deleted takes them with it.
    run.campaign.delete()
    assert not JudgeRun.objects.exists() and not ReportSnapshot.objects.exists()


@needs_trigger
def test_the_recount_alone_lowers_a_runs_spend_when_a_call_in_flight_is_refused(spent):
    """A call in flight counts at its estimate; once the server refuses it, it counts nothing. The
    recount writes that lower total (the judge's own accounting), any other UPDATE is refused."""
    run, _ = spent
    before = JudgeRun.objects.get(pk=run.pk)
    log = BatchCallLog(
        run_id=run.pk,
        batch_id=run.batches.first().pk,
        owner="test",
        messages=[{"role": "user", "content": "x" * 4000}],
    )
    call_id = log.sent()
    in_flight = sync_counters(run_id=run.pk)
    assert in_flight.prompt_tokens == before.prompt_tokens + log.estimate
    assert in_flight.calls == before.calls + 1
    log.refused(call_id, error="HTTP 429")
    recounted = sync_counters(run_id=run.pk)
    assert (recounted.prompt_tokens, recounted.calls) == (before.prompt_tokens, before.calls)
    stored = JudgeRun.objects.get(pk=run.pk)
    assert (stored.prompt_tokens, stored.calls) == (before.prompt_tokens, before.calls)
    # Outside the recount's transaction, the same lower total is still refused.
    assert "spend only grows" in _refused(lambda: JudgeRun.objects.filter(pk=run.pk).update(calls=0))
