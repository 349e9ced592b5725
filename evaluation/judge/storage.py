"""Storing what judging gave: judgments, the batches' tallies and replies, in raw SQL where the
ORM costs the storing thread more than the statements.

A batch is stored only while its claimant still holds it (``status = 'running' AND claimed_by =
owner``), in one transaction with its judgments, which are upserts unique per (unit, criterion,
judge): a batch processed twice (a retried task, a worker killed with kill -9 and restarted, a
claim taken over as stale) still leaves exactly one judgment per unit, criterion and judge.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.utils import timezone

from annotation import limits
from annotation.text import clean_text
from evaluation.judge.accounting import batch_spend, record_replies, replies_of, split, split_cost
from evaluation.judge.judging import Outcome
from evaluation.judge.parsing import Verdict
from evaluation.models import JudgeBatch, JudgeRun, Judgment

# A judged batch waiting to be stored: its id, what judging gave, and the replies kept from
# earlier attempts at it (JudgeBatch.llm_calls, read with the claim).
Judged = tuple[int, Outcome, list[dict]]


def store_batch(
    *, run: JudgeRun, batch_id: int, owner: str, outcome: Outcome, kept: list[dict] | None = None
) -> bool:
    """Write one batch's judgments, calls and counters, once: False when the claim was lost meanwhile."""
    return bool(store_batches(run=run, owner=owner, judged=[(batch_id, outcome, kept or [])]))


def store_batches(*, run: JudgeRun, owner: str, judged: list[Judged]) -> set[int]:
    """Write judged batches in one transaction: each batch moves from running to done or failed
    with its tallies and replies, and its judgments are written, only while ``owner`` still holds
    its claim. The ids stored."""
    if not judged:
        return set()
    with transaction.atomic():
        stored = _finish_batches(judged=judged, owner=owner)
        record_replies(
            replies=[
                reply
                for batch_id, outcome, _ in judged
                for reply in replies_of(outcome.log, used=batch_id in stored)
            ]
        )
        outcomes = [outcome for batch_id, outcome, _ in judged if batch_id in stored]
        unit_ids_without_verdict = [unit_id for outcome in outcomes for unit_id in outcome.failures]
        already_ok = (
            set(
                Judgment.objects.filter(
                    unit_id__in=unit_ids_without_verdict,
                    criterion_id=run.criterion_id,
                    judge_id=run.judge_id,
                    status=Judgment.Status.OK,
                ).values_list("unit_id", flat=True)
            )
            if unit_ids_without_verdict
            else set()
        )
        Judgment.objects.bulk_create(
            [
                row
                for outcome in outcomes
                for row in _judgment_rows(run=run, outcome=outcome, already_ok=already_ok)
            ],
            update_conflicts=True,
            unique_fields=["unit", "criterion", "judge"],
            update_fields=[
                "status",
                "value",
                "confidence",
                "reasoning",
                "raw_response",
                "error",
                "prompt_tokens",
                "completion_tokens",
                "cost",
                "latency_ms",
                "updated_at",
            ],
        )
    return stored


def _finish_batches(*, judged: list[Judged], owner: str) -> set[int]:
    """Move judged batches from running to done or failed, each with its own tallies and replies,
    only while ``owner`` holds the claim; the ids moved. One statement per batch, sent together
    (``executemany``: a single round trip on PostgreSQL)."""
    table = connection.ops.quote_name(JudgeBatch._meta.db_table)
    replies_field = JudgeBatch._meta.get_field("llm_calls")
    finished_at = timezone.now()
    sql = (
        f"UPDATE {table} SET status = %s, finished_at = %s, error = %s, done_units = %s, "
        "failed_units = %s, prompt_tokens = prompt_tokens + %s, "
        "completion_tokens = completion_tokens + %s, cost = cost + %s, calls = calls + %s, "
        "llm_calls = COALESCE(%s, llm_calls) WHERE id = %s AND status = %s AND claimed_by = %s"
    )
    stamp = JudgeBatch._meta.get_field("finished_at").get_db_prep_save(finished_at, connection)
    rows = [
        (
            JudgeBatch.Status.FAILED.value if outcome.failures else JudgeBatch.Status.DONE.value,
            stamp,
            "; ".join(sorted(set(outcome.failures.values())))[:2000],
            len(outcome.verdicts),
            len(outcome.failures),
            outcome.prompt_tokens,
            outcome.completion_tokens,
            outcome.cost,
            outcome.calls,
            replies_field.get_db_prep_save([*kept, *outcome.log], connection) if outcome.log else None,
            batch_id,
            JudgeBatch.Status.RUNNING.value,
            owner,
        )
        for batch_id, outcome, kept in judged
    ]
    ids = [batch_id for batch_id, _, _ in judged]
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)
        updated = cursor.rowcount
    if updated == len(ids):
        return set(ids)
    # Claims lost meanwhile (taken over as stale): the batches these statements finished.
    return set(
        JudgeBatch.objects.filter(id__in=ids, claimed_by=owner, finished_at=finished_at).values_list(
            "id", flat=True
        )
    )


def _judgment_rows(*, run: JudgeRun, outcome: Outcome, already_ok: set[int]) -> list[Judgment]:
    """One batch's judgments; its tokens and cost are shared among them so that they sum exactly
    to the batch (and so to the run)."""
    results: list[tuple[int, Verdict | None, str]] = [
        (unit_id, verdict, "") for unit_id, verdict in outcome.verdicts.items()
    ] + [(unit_id, None, reason) for unit_id, reason in outcome.failures.items()]
    n_units = max(1, len(results))
    prompt_shares = split(outcome.prompt_tokens, n_units)
    completion_shares = split(outcome.completion_tokens, n_units)
    cost_shares = split_cost(outcome.cost, n_units)
    return [
        Judgment(
            unit_id=unit_id,
            criterion_id=run.criterion_id,
            judge_id=run.judge_id,
            status=Judgment.Status.OK if verdict is not None else Judgment.Status.FAILED,
            value=verdict.label if verdict is not None else None,
            confidence=verdict.confidence if verdict is not None else None,
            # The reply's JSON may spell control characters as escapes: its text under the rule.
            reasoning=clean_text(verdict.reasoning)[: limits.JUDGE_REPLY] if verdict is not None else "",
            raw_response=outcome.raw[: limits.JUDGE_REPLY],
            error=clean_text(reason)[:2000],
            prompt_tokens=prompt_shares[i],
            completion_tokens=completion_shares[i],
            cost=cost_shares[i],
            latency_ms=outcome.latency_ms,
        )
        for i, (unit_id, verdict, reason) in enumerate(results)
        # A failure never overwrites a verdict the judge already gave.
        if verdict is not None or unit_id not in already_ok
    ]


def release(
    *,
    batch_id: int,
    owner: str,
    status: str,
    outcome: Outcome | None = None,
    kept: list[dict] | None = None,
) -> None:
    """Give a claimed batch up; what it spent before giving up stays counted and kept."""
    changes: dict = {}
    if outcome is not None:
        changes = batch_spend(
            prompt_tokens=outcome.prompt_tokens,
            completion_tokens=outcome.completion_tokens,
            cost=outcome.cost,
            calls=outcome.calls,
        )
        if outcome.log:
            changes["llm_calls"] = [*(kept or []), *outcome.log]
    with transaction.atomic():
        released = JudgeBatch.objects.filter(
            id=batch_id, claimed_by=owner, status=JudgeBatch.Status.RUNNING
        ).update(status=status, **changes)
        if outcome is not None:
            record_replies(replies=replies_of(outcome.log, used=bool(released)))
