"""What judge runs spend: every call recorded when sent, the batches' tallies, the runs' totals.

Every HTTP request to the LLM server is an ``LLMCall`` row, recorded (outside the transaction that
stores results) before the request goes out (``evaluation.judge.recorder``). When a reply comes back and its
batch is stored, the storing transaction writes the reply's usage on the row and marks it used:
its tokens are then in the batch's tallies, like before. A row never marked used is a call whose
reply was not used: a reply that came after the client's timeout, a call in flight when its worker
was killed, a reply whose batch was taken over. A run's totals are its batches' tallies plus those
calls, counted as:

- the server's usage, when the reply reached us;
- else the usage of a reply to the same prompt (same SHA-256 of the messages) in the same run:
  at temperature 0 the server generated the same reply, and a batch cut off is sent again with the
  same prompt when its run goes on;
- else an estimate: the prompt's characters / 4 (the client's rule for servers that omit usage)
  and no completion tokens.

A request the server answered with an error status (429, 5xx, 4xx) generated nothing and counts
nothing. The token budget counts the whole run, so also calls still in flight (at their estimate).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, FloatField, Min, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.text import clean_text
from evaluation.judge.client import estimate_tokens
from evaluation.judge.recorder import CallRecorder, insert_call, sent_row
from evaluation.models import Judge, JudgeBatch, JudgeRun, LLMCall


def judge_prices(judge: Judge) -> tuple[float, float]:
    """The judge's prices per 1,000 prompt and completion tokens (its settings, else the site's)."""
    return (
        float(judge.settings.get("price_per_1k_prompt", settings.JUDGE_PRICE_PER_1K_PROMPT)),
        float(judge.settings.get("price_per_1k_completion", settings.JUDGE_PRICE_PER_1K_COMPLETION)),
    )


def prompt_sha256(messages: list[dict]) -> str:
    """The SHA-256 of the messages as sent (a call's prompt, to find replies to the same one)."""
    text = json.dumps(messages, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class BatchCallLog:
    """The ``CallLog`` of one batch's requests (see ``evaluation.judge.client.CallLog``).

    ``sent`` records the call's row before the request: the only write on the hot path, and it
    cannot wait for the storing thread's writes, since a row written after the request went out
    would miss the calls of a worker killed meanwhile. With a ``recorder`` (several judging
    threads) the row goes to it, committed together with the rows of other threads' requests;
    without one, by one INSERT in autocommit in the calling thread, on PostgreSQL committed
    asynchronously (``recorder.insert_call``). Either way the request leaves once its row is
    committed: a worker killed at any moment after leaves the row for the run's totals.
    """

    def __init__(
        self,
        *,
        run_id: int,
        batch_id: int,
        owner: str,
        messages: list[dict],
        recorder: CallRecorder | None = None,
    ) -> None:
        self.run_id = run_id
        self.batch_id = batch_id
        self.owner = owner
        self.sha256 = prompt_sha256(messages)
        self.estimate = estimate_tokens(messages)
        self.recorder = recorder

    def sent(self) -> int:
        row = self._row()
        return self.recorder.record(row) if self.recorder is not None else insert_call(row)

    def _row(self, **ended: str) -> tuple:
        return sent_row(
            run_id=self.run_id,
            batch_id=self.batch_id,
            owner=self.owner,
            sha256=self.sha256,
            estimate=self.estimate,
            **ended,
        )

    def refused(self, call_id: int, *, error: str) -> None:
        self._ended(call_id, outcome=LLMCall.Outcome.REFUSED, error=error, tokens=0)

    def lost(self, call_id: int, *, error: str) -> None:
        self._ended(call_id, outcome=LLMCall.Outcome.LOST, error=error)

    def _ended(self, call_id: int, *, outcome: str, error: str, tokens: int | None = None) -> None:
        """Write how a call without a usable reply ended on its row."""
        error = clean_text(error)  # a server's words: the rule on control characters
        changes: dict = {"outcome": outcome, "error": error[:2000]}
        if tokens is not None:
            changes.update(prompt_tokens=tokens, completion_tokens=tokens)
        LLMCall.objects.filter(pk=call_id).update(**changes)


def record_replies(*, replies: list[tuple[int, int, int, bool]]) -> None:
    """Write the usage of replies (call id, prompt tokens, completion tokens, used) on their calls.

    Called by the transaction that stores their batches, so ``used`` is true exactly when the
    reply's tokens went into a batch's tallies. One statement per call, sent together.
    """
    if not replies:
        return
    table = connection.ops.quote_name(LLMCall._meta.db_table)
    sql = (
        f"UPDATE {table} SET outcome = %s, prompt_tokens = %s, completion_tokens = %s, used = %s "
        "WHERE id = %s"
    )
    with connection.cursor() as cursor:
        cursor.executemany(
            sql,
            [
                (LLMCall.Outcome.REPLIED.value, prompt, completion, used, call_id)
                for call_id, prompt, completion, used in replies
            ],
        )


def replies_of(log: list[dict], *, used: bool) -> list[tuple[int, int, int, bool]]:
    """``record_replies`` rows for the entries of a batch's ``llm_calls`` that name their call."""
    return [
        (entry["call_id"], entry["prompt_tokens"], entry["completion_tokens"], used)
        for entry in log
        if entry.get("call_id")
    ]


def unused_spend(*, run_id: int) -> dict:
    """Calls of the run whose replies were not used: {"calls", "prompt", "completion"}, counted as
    the module says (the server's usage, else a reply to the same prompt, else the estimate).

    The reply to the same prompt is the first (by id) that has a usage. It is looked up once per
    prompt, not once per call: the calls in flight are many at a high concurrency, and a run whose
    prompts repeat has many replies to each.
    """
    refused = LLMCall.Outcome.REFUSED
    unused = list(
        LLMCall.objects.filter(run_id=run_id, used=False)
        .exclude(outcome=refused)
        .values_list("prompt_sha256", "prompt_tokens", "completion_tokens", "estimated_prompt_tokens")
    )
    missing = {sha for sha, prompt, completion, _ in unused if prompt is None or completion is None}
    same_prompt: dict[str, tuple[int | None, int | None]] = {}
    if missing:
        first_replies = (
            LLMCall.objects.filter(run_id=run_id, prompt_sha256__in=missing, prompt_tokens__isnull=False)
            .exclude(outcome=refused)
            .values("prompt_sha256")
            .annotate(first=Min("id"))
            .values("first")
        )
        same_prompt = {
            sha: (prompt, completion)
            for sha, prompt, completion in LLMCall.objects.filter(id__in=Subquery(first_replies)).values_list(
                "prompt_sha256", "prompt_tokens", "completion_tokens"
            )
        }
    total_prompt = total_completion = 0
    for sha, prompt, completion, estimate in unused:
        reply = same_prompt.get(sha)
        if prompt is None:
            prompt = reply[0] if reply is not None and reply[0] is not None else estimate
        if completion is None:
            completion = reply[1] if reply is not None and reply[1] is not None else 0
        total_prompt += prompt
        total_completion += completion
    return {"calls": len(unused), "prompt": total_prompt, "completion": total_completion}


def run_totals(*, run: JudgeRun) -> dict:
    """The run's counters: its batches' tallies plus the calls whose replies were not used."""
    totals = JudgeBatch.objects.filter(run_id=run.pk).aggregate(
        done=Coalesce(Sum("done_units"), 0),
        failed=Coalesce(Sum("failed_units"), 0),
        prompt=Coalesce(Sum("prompt_tokens"), 0),
        completion=Coalesce(Sum("completion_tokens"), 0),
        cost=Coalesce(Sum("cost"), 0.0, output_field=FloatField()),
        calls=Coalesce(Sum("calls"), 0),
    )
    unused = unused_spend(run_id=run.pk)
    price_prompt, price_completion = judge_prices(run.judge)
    unused_cost = (unused["prompt"] * price_prompt + unused["completion"] * price_completion) / 1000
    return {
        "done_units": totals["done"],
        "failed_units": totals["failed"],
        "prompt_tokens": totals["prompt"] + unused["prompt"],
        "completion_tokens": totals["completion"] + unused["completion"],
        "cost": totals["cost"] + unused_cost,
        "calls": totals["calls"] + unused["calls"],
        "unused_calls": unused["calls"],
        "unused_prompt_tokens": unused["prompt"],
        "unused_completion_tokens": unused["completion"],
        "unused_cost": unused_cost,
    }


@contextmanager
def _recount() -> Iterator[None]:
    """A transaction in which PostgreSQL lets a run's spend go down, and only that: the setting is
    turned off again before it ends, so that an enclosing transaction does not keep it (on an
    error, the rollback of the block undoes it)."""
    with transaction.atomic():
        if connection.vendor != "postgresql":
            yield
            return
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('attest.recount', 'on', true)")
            yield
            cursor.execute("SELECT set_config('attest.recount', 'off', true)")


def sync_counters(*, run_id: int) -> JudgeRun:
    """Refresh the run's totals from its batches and calls; the refreshed run.

    The totals may go down: a call in flight counts at its estimate until the server's usage
    replaces it (or nothing, for a request refused), and a store committed between the two reads
    of ``run_totals`` is seen by one of them only until the next recount. The recount is the one
    writer PostgreSQL lets lower a run's spend (migration ``evaluation/0008_audit_append_only``).
    The run's row is locked while it is recounted (``recounting``).
    """
    with recounting(run_id=run_id) as run:
        totals = run_totals(run=run)
        JudgeRun.objects.filter(pk=run_id).update(**totals)
    for name, value in totals.items():
        setattr(run, name, value)
    return run


@contextmanager
def recounting(*, run_id: int) -> Iterator[JudgeRun]:
    """A transaction that may lower the run's spend (``_recount``), holding the run's row locked
    (PostgreSQL; SQLite's transactions take the write lock when they begin): two processes
    refreshing its counters, or one refreshing them while another ends the run, write one after
    the other, so the last write is made from every batch stored before it and stale totals never
    land over fresh ones. Yields the run."""
    with _recount():
        yield (
            JudgeRun.objects.select_for_update(of=("self",))
            .select_related("judge", "criterion")
            .get(pk=run_id)
        )


def spent_tokens(*, run: JudgeRun) -> int:
    """Every token the run spent so far, calls in flight and replies never used included."""
    totals = run_totals(run=run)
    return totals["prompt_tokens"] + totals["completion_tokens"]


def split(total: int, parts: int) -> list[int]:
    """``total`` in ``parts`` whole shares that differ by at most one and sum to ``total``."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def split_cost(total: float, parts: int) -> list[float]:
    """``total`` in ``parts`` equal shares, the last taking the rounding, so they sum to ``total``."""
    share = total / parts
    return [share] * (parts - 1) + [total - share * (parts - 1)]


def batch_spend(*, prompt_tokens: int, completion_tokens: int, cost: float, calls: int) -> dict:
    """The batch-row changes that add what one attempt at it spent to its tallies."""
    return {
        "prompt_tokens": F("prompt_tokens") + prompt_tokens,
        "completion_tokens": F("completion_tokens") + completion_tokens,
        "cost": F("cost") + cost,
        "calls": F("calls") + calls,
    }


def run_stats(*, run: JudgeRun) -> dict:
    """Throughput and totals for the run page."""
    elapsed = None
    if run.started_at:
        end = run.finished_at or timezone.now()
        elapsed = max((end - run.started_at).total_seconds(), 1e-9)
    done = run.done_units + run.failed_units
    return {
        "elapsed_s": elapsed,
        "units_per_s": (done / elapsed) if elapsed else None,
        "tokens": run.prompt_tokens + run.completion_tokens,
        "unused_tokens": run.unused_prompt_tokens + run.unused_completion_tokens,
        "remaining": max(0, run.total_units - done),
        "eta_s": ((run.total_units - done) / (done / elapsed)) if elapsed and done else None,
    }
