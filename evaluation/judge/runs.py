"""Judge runs: which units a run covers, claiming batches, calling the judge, storing judgments.

A run is split into one batch per answer (one prompt carries all the answer's sentences, so the
sources are sent once). A batch is claimed with a conditional UPDATE, judged outside any
transaction, and its judgments and the run's counters are written in one transaction that also
moves the batch from running to done, so a batch processed twice (a retried task, a worker killed
with kill -9 and restarted) still leaves exactly one judgment per (unit, criterion, judge).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from annotation.models import AnswerSource, Campaign, Criterion, CriterionVersion, Level, Unit
from evaluation.judge import bindings, prompts
from evaluation.judge.accounting import (
    BatchCallLog,
    batch_spend,
    judge_prices,
    record_replies,
    replies_of,
    spent_tokens,
    split,
    split_cost,
    sync_counters,
)
from evaluation.judge.client import (
    BudgetExceeded,
    JudgeClient,
    JudgeClientError,
    PermanentError,
    TokenBudget,
    TransientError,
)
from evaluation.judge.lexical import lexical_relevance, lexical_veracity
from evaluation.judge.parsing import Verdict, VerdictError, parse_verdicts
from evaluation.models import Judge, JudgeBatch, JudgeRun, Judgment

logger = logging.getLogger(__name__)

LEXICAL = "lexical"
IMPORTED = "imported"
# A reply whose verdicts do not fit is asked again this many times before the batch fails.
VERDICT_ATTEMPTS = 3
ACTIVE = (JudgeRun.Status.PENDING, JudgeRun.Status.RUNNING)
# A run's counters (and what other processes spent of its budget) are refreshed from its batches
# at most this often by each process working on it: live progress without a query per batch.
SYNC_INTERVAL_S = 1.0
# Judged batches stored together, in one transaction, by a run's storing thread.
STORE_GROUP = 50


class RunError(ValueError):
    """A run cannot be created or changed as asked (the message says why)."""


def get_or_create_judge(
    *,
    campaign: Campaign,
    name: str,
    model: str | None = None,
    prompt_version: str | None = None,
    language: str | None = None,
    base_url: str | None = None,
) -> Judge:
    """The campaign's judge called ``name``, created on first use.

    ``lexical`` is the built-in offline judge. Any other name is an OpenAI-compatible judge whose
    model defaults to ``OPENAI_JUDGE_MODEL``. An existing judge keeps its model and prompt
    version: asking for different ones is an error, since mixing them would corrupt comparisons.
    """
    if name == IMPORTED:
        raise RunError("judge 'imported' holds imported labels and cannot be run")
    if prompt_version is not None:
        try:
            prompts.check_version(prompt_version)
        except ValueError as exc:
            raise RunError(str(exc)) from None
    kind = Judge.Kind.LEXICAL if name == LEXICAL else Judge.Kind.OPENAI
    defaults = {
        "kind": kind,
        "model": "" if kind == Judge.Kind.LEXICAL else (model or settings.OPENAI_JUDGE_MODEL),
        "prompt_version": prompt_version or prompts.PROMPT_VERSION,
        "language": language or campaign.expected_language or "fr",
        "settings": {"base_url": base_url} if base_url else {},
    }
    judge, created = Judge.objects.get_or_create(campaign=campaign, name=name, defaults=defaults)
    if not created:
        if model and judge.model != model:
            raise RunError(f"judge {name!r} uses model {judge.model!r}; create a judge with another name")
        if prompt_version and judge.prompt_version != prompt_version:
            raise RunError(
                f"judge {name!r} uses prompt version {judge.prompt_version!r}; "
                "create a judge with another name"
            )
    return judge


def _check_prompt(*, judge: Judge, criterion: Criterion) -> None:
    """Bind the judge to its prompt for the criterion, or refuse (RunError) when it changed."""
    try:
        bindings.bind(judge=judge, criterion=criterion)
    except bindings.PromptChanged as exc:
        raise RunError(str(exc)) from None


def _units_in_scope(*, criterion: Criterion, judge: Judge, scope: str):
    units = Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level)
    judged = Judgment.objects.filter(unit=OuterRef("pk"), criterion=criterion, judge=judge)
    if scope == JudgeRun.Scope.MISSING:
        units = units.filter(~Exists(judged.filter(status=Judgment.Status.OK)))
    elif scope == JudgeRun.Scope.FAILED:
        units = units.filter(Exists(judged.filter(status=Judgment.Status.FAILED)))
    elif scope != JudgeRun.Scope.ALL:
        raise RunError(f"scope: {scope!r} is not one of all, missing, failed")
    return units


@transaction.atomic
def create_run(
    *,
    criterion: Criterion,
    judge: Judge,
    scope: str = JudgeRun.Scope.ALL,
    concurrency: int | None = None,
    token_budget: int | None = None,
    user=None,
) -> JudgeRun:
    """A new run of ``judge`` over the units of ``criterion`` in ``scope``, with its batches.

    Refuses a second active run of the same judge and criterion (they would race for the same
    units; a unique constraint on active runs settles two requests that arrive together), a
    judge of another campaign, and an LLM judge whose prompt for the criterion would differ from
    the one it is bound to (see ``evaluation.judge.bindings``).
    """
    if judge.campaign_id != criterion.campaign_id:
        raise RunError("the judge and the criterion belong to different campaigns")
    if judge.kind == Judge.Kind.IMPORTED:
        raise RunError("judge 'imported' holds imported labels and cannot be run")
    _check_prompt(judge=judge, criterion=criterion)
    try:
        with transaction.atomic():
            run = JudgeRun.objects.create(
                campaign_id=criterion.campaign_id,
                criterion=criterion,
                judge=judge,
                scope=scope,
                concurrency=concurrency or settings.JUDGE_CONCURRENCY,
                token_budget=token_budget,
                created_by=user,
            )
    except IntegrityError:
        raise RunError(f"judge {judge.name!r} already has an active run on {criterion.name!r}") from None
    by_answer: dict[int, list[int]] = {}
    for unit_id, answer_id in (
        _units_in_scope(criterion=criterion, judge=judge, scope=scope)
        .order_by("answer_id", "id")
        .values_list("id", "answer_id")
        .iterator(chunk_size=5000)
    ):
        by_answer.setdefault(answer_id, []).append(unit_id)
    JudgeBatch.objects.bulk_create(
        [JudgeBatch(run=run, answer_id=answer_id, unit_ids=ids) for answer_id, ids in by_answer.items()],
        batch_size=2000,
    )
    run.total_units = sum(len(ids) for ids in by_answer.values())
    if run.total_units == 0:
        run.status = JudgeRun.Status.DONE
        run.finished_at = timezone.now()
    run.save(update_fields=["total_units", "status", "finished_at"])
    return run


def pending_batch_chunks(*, run_id: int, chunk_size: int) -> list[list[int]]:
    """Ids of the run's pending batches, in chunks of ``chunk_size`` (one Celery task each)."""
    ids = list(
        JudgeBatch.objects.filter(run_id=run_id, status=JudgeBatch.Status.PENDING)
        .order_by("id")
        .values_list("id", flat=True)
    )
    return [ids[i : i + chunk_size] for i in range(0, len(ids), chunk_size)]


def cancel_run(*, run_id: int) -> JudgeRun:
    """Stop a run: pending batches are cancelled; a batch already being judged finishes."""
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run_id)
        if not run.is_active:
            raise RunError(f"run {run_id} is {run.status}, not active")
        JudgeBatch.objects.filter(run=run, status=JudgeBatch.Status.PENDING).update(
            status=JudgeBatch.Status.CANCELLED
        )
        run.status = JudgeRun.Status.CANCELLED
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "finished_at"])
    return run


def resume_run(*, run_id: int, token_budget: int | None = None) -> JudgeRun:
    """Put a cancelled or stopped run back to work: its unfinished batches become pending again.

    Failed batches are retried too, and batches left claimed by a dead worker are returned.
    ``token_budget`` raises the budget of a run stopped by it. Refused (RunError) when the judge's
    prompt for the criterion changed since it was bound.
    """
    run = JudgeRun.objects.select_related("judge", "criterion").get(pk=run_id)
    _check_prompt(judge=run.judge, criterion=run.criterion)
    recover_run(run_id=run_id)
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run_id)
        if (
            run.status == JudgeRun.Status.DONE
            and not run.batches.filter(status=JudgeBatch.Status.FAILED).exists()
        ):
            raise RunError(f"run {run_id} is done; start a run with scope 'failed' or 'missing' instead")
        reopened = JudgeBatch.objects.filter(
            run=run, status__in=[JudgeBatch.Status.CANCELLED, JudgeBatch.Status.FAILED]
        )
        # A failed batch keeps its tokens and cost; its units are judged again.
        reopened.update(status=JudgeBatch.Status.PENDING, error="", done_units=0, failed_units=0)
        if token_budget is not None:
            run.token_budget = token_budget
        run.status = JudgeRun.Status.RUNNING
        run.finished_at = None
        try:
            with transaction.atomic():
                run.save(update_fields=["token_budget", "status", "finished_at"])
        except IntegrityError:
            raise RunError(
                f"judge {run.judge.name!r} already has an active run on {run.criterion.name!r}"
            ) from None
    return sync_counters(run_id=run.pk)


def worker_name() -> str:
    """Who holds a claim: host, process id and a token of this call, so that a restarted worker
    can spot the claims of dead processes and two calls in one process never mix their claims."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _return_stale_batches(*, run_id: int | None, stale_after_s: float | None) -> list[int]:
    stale_after_s = stale_after_s if stale_after_s is not None else settings.CELERY_TASK_TIME_LIMIT
    cutoff = timezone.now() - timedelta(seconds=stale_after_s)
    host = socket.gethostname()
    running = JudgeBatch.objects.filter(status=JudgeBatch.Status.RUNNING, run__status__in=ACTIVE)
    if run_id is not None:
        running = running.filter(run_id=run_id)
    stale: list[tuple[int, str]] = []
    for batch_id, claimed_by, claimed_at in running.values_list("id", "claimed_by", "claimed_at"):
        owner_host, pid = (claimed_by.split(":") + ["", ""])[:2]
        dead_here = owner_host == host and pid.isdigit() and not _pid_alive(int(pid))
        if dead_here or (claimed_at is not None and claimed_at < cutoff):
            stale.append((batch_id, claimed_by))
    returned = []
    for batch_id, claimed_by in stale:
        # Conditional on the claim we judged stale: a claim renewed meanwhile is left alone.
        if JudgeBatch.objects.filter(
            id=batch_id, status=JudgeBatch.Status.RUNNING, claimed_by=claimed_by
        ).update(status=JudgeBatch.Status.PENDING, claimed_by=""):
            returned.append(batch_id)
    return returned


def recover_run(*, run_id: int, stale_after_s: float | None = None) -> list[int]:
    """Return the run's batches claimed by dead workers to pending; their ids.

    Stale as in ``recover_stale_batches``. Safe at any time: a live worker's claim is never taken,
    and a batch whose claim is taken anyway (past the time limit) is stored by one claimant only.
    """
    return _return_stale_batches(run_id=run_id, stale_after_s=stale_after_s)


def recover_stale_batches(*, stale_after_s: float | None = None) -> list[int]:
    """Return the claims of dead workers to the queue; the ids of the runs that have work again.

    A batch is stale when its claim comes from a process of this host that no longer exists (a
    worker killed with kill -9), or when it was claimed longer ago than the task time limit (a
    worker on another machine that died).
    """
    _return_stale_batches(run_id=None, stale_after_s=stale_after_s)
    return sorted(
        set(
            JudgeBatch.objects.filter(status=JudgeBatch.Status.PENDING, run__status__in=ACTIVE).values_list(
                "run_id", flat=True
            )
        )
    )


def _claim(*, run_id: int, batch_ids: list[int], owner: str) -> list[int]:
    """Claim the pending batches among ``batch_ids`` in one conditional UPDATE; the ids we got."""
    if not batch_ids:
        return []
    if not JudgeRun.objects.filter(pk=run_id, status__in=ACTIVE).exists():
        return []
    JudgeBatch.objects.filter(run_id=run_id, id__in=batch_ids, status=JudgeBatch.Status.PENDING).update(
        status=JudgeBatch.Status.RUNNING,
        claimed_by=owner,
        claimed_at=timezone.now(),
        attempts=F("attempts") + 1,
    )
    return list(
        JudgeBatch.objects.filter(
            run_id=run_id, id__in=batch_ids, status=JudgeBatch.Status.RUNNING, claimed_by=owner
        ).values_list("id", flat=True)
    )


@dataclass
class _Outcome:
    verdicts: dict[int, Verdict]  # unit id -> verdict
    failed: dict[int, str]  # unit id -> reason
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency_ms: int = 0
    calls: int = 0
    raw: str = ""
    # One entry per reply of the server, accepted or rejected (JudgeBatch.llm_calls).
    log: list[dict] = field(default_factory=list)
    # The token budget ran out before the batch could be judged.
    budget_stopped: bool = False


def _client_for(judge: Judge, *, budget: TokenBudget | None = None) -> JudgeClient:
    base_url = judge.settings.get("base_url") or settings.OPENAI_BASE_URL
    api_key = settings.OPENAI_API_KEY or ("not-needed" if base_url else "")
    if not api_key:
        raise PermanentError("OPENAI_API_KEY is not set: use the 'lexical' judge, or configure a server")
    prices = judge_prices(judge)
    return JudgeClient(
        base_url=base_url,
        api_key=api_key,
        model=judge.model,
        temperature=judge.temperature,
        timeout_s=float(judge.settings.get("timeout_s", settings.OPENAI_TIMEOUT_S)),
        max_attempts=int(judge.settings.get("max_attempts", settings.OPENAI_MAX_ATTEMPTS)),
        backoff_base_s=float(judge.settings.get("backoff_base_s", 0.5)),
        price_per_1k_prompt=prices[0],
        price_per_1k_completion=prices[1],
        budget=budget,
        shared=True,
    )


@dataclass
class _BatchInput:
    question: str
    answer: str
    items: list[dict]  # {"unit_id", "index", "text", "paragraph", "cited_ids"}
    sources: list[dict]  # cited sources in full: {"id", "title", "page", "text"}
    retrieved_ids: set[str]
    # Replies kept from earlier attempts at this batch (JudgeBatch.llm_calls), read with the claim.
    llm_calls: list[dict] = field(default_factory=list)


def load_batches(*, batch_ids: list[int], criterion: Criterion) -> dict[int, _BatchInput]:
    """What the prompts of these batches need, in three queries whatever their number."""
    batches = list(
        JudgeBatch.objects.filter(id__in=batch_ids).values_list(
            "id", "unit_ids", "answer_id", "answer__text", "answer__question__text", "llm_calls"
        )
    )
    items: dict[int, list[dict]] = {}
    if criterion.level == Level.SENTENCE:
        unit_to_batch = {uid: bid for bid, unit_ids, *_ in batches for uid in unit_ids}
        for unit_id, position, text, paragraph, cited in (
            Unit.objects.filter(id__in=list(unit_to_batch))
            .order_by("answer_id", "sentence__position")
            .values_list(
                "id", "sentence__position", "sentence__text", "sentence__paragraph", "sentence__cited_ids"
            )
        ):
            items.setdefault(unit_to_batch[unit_id], []).append(
                {
                    "unit_id": unit_id,
                    "index": position,
                    "text": text,
                    "paragraph": paragraph,
                    "cited_ids": cited,
                }
            )
    else:
        for bid, unit_ids, _, answer_text, _, _ in batches:
            items[bid] = [
                {"unit_id": unit_ids[0], "index": 0, "text": answer_text, "paragraph": "", "cited_ids": []}
            ]
    retrieved: dict[int, list[tuple]] = {}
    if criterion.level == Level.SENTENCE:
        # Relevance prompts carry the question and the answer only: no sources to fetch.
        for answer_id, ext_id, title, page, text in (
            AnswerSource.objects.filter(answer_id__in=[row[2] for row in batches])
            .order_by("answer_id", "rank")
            .values_list("answer_id", "chunk__external_id", "chunk__title", "chunk__page", "chunk__text")
        ):
            retrieved.setdefault(answer_id, []).append((ext_id, title, page, text))
    loaded = {}
    for bid, _, answer_id, answer_text, question_text, llm_calls in batches:
        batch_items = items.get(bid, [])
        cited_ids = {cid for item in batch_items for cid in item["cited_ids"]}
        chunks = retrieved.get(answer_id, [])
        loaded[bid] = _BatchInput(
            question=question_text,
            answer=answer_text,
            items=batch_items,
            sources=[
                {"id": ext_id, "title": title, "page": page, "text": text}
                for ext_id, title, page, text in chunks
                if ext_id in cited_ids
            ],
            retrieved_ids={chunk[0] for chunk in chunks},
            llm_calls=llm_calls or [],
        )
    return loaded


def build_messages(
    *, data: _BatchInput, criterion: Criterion, judge: Judge, texts: CriterionVersion | None = None
) -> list[dict]:
    """The chat messages for one batch: all of an answer's sentences, or the whole answer.

    Veracity and relevance get the built-in prompts of the judge's prompt version; any other
    criterion a generic prompt around its own guidelines. A criterion's ``judge_prompt``, when not
    blank, replaces the framing of either. ``texts``: the version of the criterion's guidelines and
    judge prompt to send (a run sends the one its judge is bound to); the criterion's current
    texts when None. The system message is ``prompts.system_prompt`` of the same arguments.
    """
    source = texts if texts is not None else criterion
    guidelines = source.guidelines or None
    instructions = source.judge_prompt.strip() or None
    version = judge.prompt_version or prompts.PROMPT_VERSION
    sentences = [{"index": i["index"], "text": i["text"], "paragraph": i["paragraph"]} for i in data.items]
    if prompts.BUILTIN_LEVELS.get(criterion.name) != criterion.level:
        return prompts.build_criterion_messages(
            title=criterion.title or criterion.name,
            level=criterion.level,
            question=data.question,
            answer=data.answer,
            sources=data.sources,
            sentences=sentences,
            guidelines=guidelines,
            instructions=instructions,
            language=judge.language,
            version=version,
        )
    if criterion.level == Level.SENTENCE:
        return prompts.build_veracity_messages(
            question=data.question,
            sources=data.sources,
            sentences=sentences,
            guidelines=guidelines,
            language=judge.language,
            version=version,
            instructions=instructions,
        )
    return prompts.build_relevance_messages(
        question=data.question,
        answer=data.answer,
        guidelines=guidelines,
        language=judge.language,
        version=version,
        instructions=instructions,
    )


def _judge_lexically(*, data: _BatchInput, criterion: Criterion) -> _Outcome:
    verdicts: dict[int, Verdict] = {}
    if criterion.level == Level.SENTENCE:
        texts = {s["id"]: s["text"] for s in data.sources}
        for item in data.items:
            label, reasoning = lexical_veracity(
                sentence=item["text"], sources=[texts[c] for c in item["cited_ids"] if c in texts]
            )
            verdicts[item["unit_id"]] = Verdict(index=item["index"], label=label, reasoning=reasoning)
    else:
        label, reasoning = lexical_relevance(question=data.question, answer=data.answer)
        verdicts[data.items[0]["unit_id"]] = Verdict(index=0, label=label, reasoning=reasoning)
    return _Outcome(verdicts=verdicts, failed={})


def _judge_with_llm(
    *,
    data: _BatchInput,
    criterion: Criterion,
    judge: Judge,
    client: JudgeClient,
    calls: Callable[[list[dict]], BatchCallLog] | None = None,
    texts: CriterionVersion | None = None,
) -> _Outcome:
    """Ask the judge about one batch, again when its verdicts do not fit. ``calls`` makes the log
    that records each request before it is sent; ``texts`` as for ``build_messages``."""
    messages = build_messages(data=data, criterion=criterion, judge=judge, texts=texts)
    log = calls(messages) if calls is not None else None
    expected = [item["index"] for item in data.items]
    outcome = _Outcome(verdicts={}, failed={})
    reason = ""
    for _ in range(VERDICT_ATTEMPTS):
        try:
            # The budget is checked before every request, so also between the attempts below.
            completion = client.complete(messages=messages, log=log)
        except BudgetExceeded:
            outcome.budget_stopped = True
            return outcome
        except (TransientError, PermanentError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            break
        cost = client.cost(completion)
        outcome.calls += 1
        outcome.prompt_tokens += completion.prompt_tokens
        outcome.completion_tokens += completion.completion_tokens
        outcome.cost += cost
        outcome.latency_ms += int(completion.latency_s * 1000)
        outcome.raw = completion.content
        call = {
            "accepted": False,
            "error": "",
            "finish_reason": completion.finish_reason or "",
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "cost": cost,
            "latency_ms": int(completion.latency_s * 1000),
            "http_attempts": completion.attempts,
            "raw_response": completion.raw,
            "call_id": completion.call_id,
        }
        outcome.log.append(call)
        try:
            verdicts = parse_verdicts(completion.content, expected_indices=expected)
        except VerdictError as exc:
            reason = f"invalid verdicts (finish_reason={completion.finish_reason}): {exc}"
            call["error"] = reason[:2000]
            continue
        call["accepted"] = True
        by_index = {v.index: v for v in verdicts}
        outcome.verdicts = {item["unit_id"]: by_index[item["index"]] for item in data.items}
        return outcome
    outcome.failed = {item["unit_id"]: reason or "no reply" for item in data.items}
    return outcome


def _store(
    *, run: JudgeRun, batch_id: int, owner: str, outcome: _Outcome, kept: list[dict] | None = None
) -> bool:
    """Write one batch's judgments, calls and counters, once: False when the claim was lost meanwhile."""
    return bool(_store_many(run=run, owner=owner, judged=[(batch_id, outcome, kept or [])]))


def _finish_batches(*, judged: list[tuple[int, _Outcome, list[dict]]], owner: str) -> set[int]:
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
            JudgeBatch.Status.FAILED.value if outcome.failed else JudgeBatch.Status.DONE.value,
            stamp,
            "; ".join(sorted(set(outcome.failed.values())))[:2000],
            len(outcome.verdicts),
            len(outcome.failed),
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


def _judgment_rows(*, run: JudgeRun, outcome: _Outcome, already_ok: set[int]) -> list[Judgment]:
    """One batch's judgments; its tokens and cost are shared among them so that they sum exactly
    to the batch (and so to the run)."""
    results: list[tuple[int, Verdict | None, str]] = [
        (unit_id, verdict, "") for unit_id, verdict in outcome.verdicts.items()
    ] + [(unit_id, None, reason) for unit_id, reason in outcome.failed.items()]
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
            reasoning=verdict.reasoning if verdict is not None else "",
            raw_response=outcome.raw,
            error=reason[:2000],
            prompt_tokens=prompt_shares[i],
            completion_tokens=completion_shares[i],
            cost=cost_shares[i],
            latency_ms=outcome.latency_ms,
        )
        for i, (unit_id, verdict, reason) in enumerate(results)
        # A failure never overwrites a verdict the judge already gave.
        if verdict is not None or unit_id not in already_ok
    ]


def _store_many(*, run: JudgeRun, owner: str, judged: list[tuple[int, _Outcome, list[dict]]]) -> set[int]:
    """Write judged batches (id, outcome, replies kept from earlier attempts) in one transaction:
    each batch moves from running to done or failed with its tallies and replies, and its
    judgments are written, only while this caller still holds its claim. The ids stored."""
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
        kept = [(batch_id, outcome) for batch_id, outcome, _ in judged if batch_id in stored]
        failed_units = [unit_id for _, outcome in kept for unit_id in outcome.failed]
        already_ok = (
            set(
                Judgment.objects.filter(
                    unit_id__in=failed_units,
                    criterion_id=run.criterion_id,
                    judge_id=run.judge_id,
                    status=Judgment.Status.OK,
                ).values_list("unit_id", flat=True)
            )
            if failed_units
            else set()
        )
        Judgment.objects.bulk_create(
            [
                row
                for _, outcome in kept
                for row in _judgment_rows(run=run, outcome=outcome, already_ok=already_ok)
            ],
            update_conflicts=True,
            unique_fields=["unit", "criterion", "judge"],
            update_fields=[
                "status",
                "value",
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


def _finish_if_complete(run_id: int) -> None:
    open_batches = JudgeBatch.objects.filter(
        run_id=run_id, status__in=[JudgeBatch.Status.PENDING, JudgeBatch.Status.RUNNING]
    )
    if not open_batches.exists():
        JudgeRun.objects.filter(pk=run_id, status=JudgeRun.Status.RUNNING).update(
            status=JudgeRun.Status.DONE, finished_at=timezone.now()
        )


def _stop_for_budget(run_id: int) -> None:
    with transaction.atomic():
        JudgeBatch.objects.filter(run_id=run_id, status=JudgeBatch.Status.PENDING).update(
            status=JudgeBatch.Status.CANCELLED
        )
        JudgeRun.objects.filter(pk=run_id, status__in=ACTIVE).update(
            status=JudgeRun.Status.BUDGET, finished_at=timezone.now()
        )
    sync_counters(run_id=run_id)


class _RunMonitor:
    """What one process working on a run learns from the database, at most once per
    ``SYNC_INTERVAL_S``: it refreshes the run's counters from the batches (live progress), reads
    whether the run is still active (cancel), and raises the token budget's count to what the whole
    run has spent (other processes included)."""

    def __init__(
        self,
        run_id: int,
        *,
        budget: TokenBudget | None = None,
        progress: Callable[[JudgeRun], None] | None = None,
    ) -> None:
        self.run_id = run_id
        self.budget = budget
        self.progress = progress
        self._lock = threading.Lock()
        self._checked = float("-inf")
        self._active = True

    def sync(self) -> None:
        """Refresh now; one thread at a time, the others go on with what is known."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            self._checked = time.monotonic()
            run = sync_counters(run_id=self.run_id)
            self._active = run.is_active
            if self.budget is not None:
                self.budget.observe(run.prompt_tokens + run.completion_tokens)
            if self.progress is not None:
                self.progress(run)
        finally:
            self._lock.release()

    def tick(self) -> None:
        """Refresh when the last refresh is older than ``SYNC_INTERVAL_S``."""
        if time.monotonic() - self._checked >= SYNC_INTERVAL_S:
            self.sync()

    def active(self) -> bool:
        self.tick()
        return self._active


def _release(
    *,
    batch_id: int,
    owner: str,
    status: str,
    outcome: _Outcome | None = None,
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


def _unclaim(*, batch_ids: list[int], owner: str) -> None:
    """Return batches this caller claimed but never started to pending."""
    if batch_ids:
        JudgeBatch.objects.filter(
            id__in=batch_ids, claimed_by=owner, status=JudgeBatch.Status.RUNNING
        ).update(status=JudgeBatch.Status.PENDING, claimed_by="")


class _StoreQueue:
    """Stores judged batches from one thread of its own, in the order they were judged, up to
    ``STORE_GROUP`` per transaction (all that were waiting).

    With many threads calling the judge, each one writing its own judgments would queue for the
    database and, between round trips, for the interpreter lock: the calls in flight would drop
    below the run's concurrency. Here the threads hand their outcome over and go back to the judge
    at once. A batch handed over stays claimed ('running') until it is stored, so a process killed
    meanwhile leaves it to the stale-claim recovery like a batch cut off mid-call. ``close`` stores
    what is left and stops; after a database error the rest is given back as pending and the error
    is raised by ``close``.
    """

    def __init__(self, *, run: JudgeRun, owner: str) -> None:
        self.run = run
        self.owner = owner
        self.stored = 0
        self.error: BaseException | None = None
        self._items: deque[tuple[int, _Outcome, list[dict]]] = deque()
        self._ready = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="judge-store", daemon=True)
        self._thread.start()

    def put(self, *, batch_id: int, outcome: _Outcome, kept: list[dict]) -> bool:
        """Hand a judged batch over; False (the batch given back as pending) once storing failed."""
        with self._ready:
            if self.error is None:
                self._items.append((batch_id, outcome, kept))
                self._ready.notify()
                return True
        _release(batch_id=batch_id, owner=self.owner, status=JudgeBatch.Status.PENDING)
        return False

    def _take(self) -> list[tuple[int, _Outcome, list[dict]]]:
        with self._ready:
            while not self._items and not self._closed:
                self._ready.wait()
            return [self._items.popleft() for _ in range(min(STORE_GROUP, len(self._items)))]

    def _work(self) -> None:
        try:
            while judged := self._take():
                try:
                    self.stored += len(_store_many(run=self.run, owner=self.owner, judged=judged))
                except BaseException as exc:
                    with self._ready:
                        self.error = exc
                        left = [item[0] for item in judged] + [item[0] for item in self._items]
                        self._items.clear()
                    for batch_id in left:
                        _release(batch_id=batch_id, owner=self.owner, status=JudgeBatch.Status.PENDING)
                    return
        except BaseException as exc:  # a failure to give the batches back: they wait for recovery
            self.error = self.error or exc
        finally:
            connection.close()

    def close(self) -> None:
        """Store what is queued, stop the thread, and raise the error that stopped it, if any."""
        with self._ready:
            self._closed = True
            self._ready.notify()
        self._thread.join()
        if self.error is not None:
            raise self.error


def process_batch(
    *,
    run: JudgeRun,
    batch_id: int,
    data: _BatchInput,
    client: JudgeClient | None,
    owner: str,
    monitor: _RunMonitor,
    store: _StoreQueue | None = None,
    texts: CriterionVersion | None = None,
) -> bool:
    """Judge and store one batch this call has claimed; False when it was left undone.

    With ``store``, the outcome is handed over to it instead (True: handed over; it counts what
    it stores). ``texts``: the guidelines version the judge is bound to (what its prompt says).
    """
    try:
        if not monitor.active():
            _release(batch_id=batch_id, owner=owner, status=JudgeBatch.Status.CANCELLED)
            return False
        if run.judge.kind == Judge.Kind.LEXICAL:
            outcome = _judge_lexically(data=data, criterion=run.criterion)
        else:
            assert client is not None
            outcome = _judge_with_llm(
                data=data,
                criterion=run.criterion,
                judge=run.judge,
                client=client,
                texts=texts,
                calls=lambda messages: BatchCallLog(
                    run_id=run.pk, batch_id=batch_id, owner=owner, messages=messages
                ),
            )
            if outcome.budget_stopped:
                _release(
                    batch_id=batch_id,
                    owner=owner,
                    status=JudgeBatch.Status.CANCELLED,
                    outcome=outcome,
                    kept=data.llm_calls,
                )
                _stop_for_budget(run.pk)
                return False
        if store is not None:
            return store.put(batch_id=batch_id, outcome=outcome, kept=data.llm_calls)
        return _store(run=run, batch_id=batch_id, owner=owner, outcome=outcome, kept=data.llm_calls)
    except BaseException:
        # A bug, a database error or an interruption must not strand the batch in 'running'.
        _release(batch_id=batch_id, owner=owner, status=JudgeBatch.Status.PENDING)
        raise


def process_batches(
    *,
    run_id: int,
    batch_ids: Iterable[int],
    concurrency: int | None = None,
    progress: Callable[[JudgeRun], None] | None = None,
    load_size: int | None = None,
) -> int:
    """Judge the given batches of a run with bounded concurrency; the number this call stored.

    Safe to call twice with the same ids, from any number of processes: the pending batches are
    claimed with a conditional UPDATE, so each is judged by one caller. Batches are claimed and
    loaded ``load_size`` at a time (a bound on memory and on what a dead process holds), while the
    threads keep working. LLM calls happen outside any transaction. The run's counters are
    refreshed while it works (``SYNC_INTERVAL_S``) and ``progress`` is called with the refreshed
    run. On any exception (a soft time limit included) the batches claimed but not started are
    returned to pending before it propagates.
    """
    run = JudgeRun.objects.select_related("judge", "criterion").get(pk=run_id)
    if not run.is_active:
        return 0
    JudgeRun.objects.filter(pk=run_id, status=JudgeRun.Status.PENDING).update(
        status=JudgeRun.Status.RUNNING, started_at=timezone.now()
    )
    ids = list(batch_ids)
    workers = max(1, min(concurrency or run.concurrency, len(ids) or 1))
    client = budget = texts = None
    if run.judge.kind == Judge.Kind.OPENAI:
        if run.token_budget is not None:
            budget = TokenBudget(run.token_budget, spent=spent_tokens(run=run))
            if budget.remaining == 0:
                _stop_for_budget(run_id)
                return 0
        try:
            client = _client_for(run.judge, budget=budget)
        except JudgeClientError as exc:
            _fail_all(run_id=run_id, reason=str(exc))
            return 0
        # The bound texts, whatever the criterion says now: an edit made while the run works
        # must not change what its judge sends.
        binding = bindings.binding_of(judge=run.judge, criterion=run.criterion)
        texts = binding.version if binding is not None else None
    else:
        workers = 1  # nothing to wait for: threads would only contend for the interpreter lock
    if connection.vendor == "sqlite":
        workers = min(workers, 4)  # SQLite serialises writers; more threads only queue on its lock
    owner = worker_name()
    monitor = _RunMonitor(run_id, budget=budget, progress=progress)
    size = max(1, load_size or max(200, 8 * workers))
    chunks = deque(ids[i : i + size] for i in range(0, len(ids), size))

    stored = 0
    lock = threading.Lock()
    loading = threading.Lock()
    queue: deque[tuple[int, _BatchInput]] = deque()
    stop = threading.Event()
    errors: list[BaseException] = []

    def refill() -> None:
        # Called with ``loading`` held: claim and load chunks until the queue has a batch per thread.
        # The chunk leaves ``chunks`` only once its batches are queued: a thread that finds both
        # empty may stop.
        while chunks and len(queue) < workers and not stop.is_set():
            claimed = _claim(run_id=run_id, batch_ids=chunks[0], owner=owner)
            try:
                inputs = load_batches(batch_ids=claimed, criterion=run.criterion)
            except BaseException:
                _unclaim(batch_ids=claimed, owner=owner)
                raise
            with lock:
                queue.extend((batch_id, inputs[batch_id]) for batch_id in claimed)
                chunks.popleft()

    def next_batch() -> tuple[int, _BatchInput] | None:
        while True:
            with lock:
                if stop.is_set() or (not queue and not chunks):
                    return None
                low = len(queue) < workers and bool(chunks)
                if queue and not low:
                    return queue.popleft()
            # The queue runs low: one thread loads the next chunk while the others keep working.
            if low and loading.acquire(blocking=False):
                try:
                    refill()
                finally:
                    loading.release()
                continue
            with lock:
                if queue:
                    return queue.popleft()
            with loading:  # nothing queued: wait for the thread that is loading
                pass

    def work() -> None:
        nonlocal stored
        while (item := next_batch()) is not None:
            batch_id, data = item
            done = process_batch(
                run=run,
                batch_id=batch_id,
                data=data,
                client=client,
                owner=owner,
                monitor=monitor,
                store=store,
                texts=texts,
            )
            if store is None:
                with lock:
                    stored += done
            monitor.tick()

    def thread_work() -> None:
        # Each thread keeps one database connection for all its batches (a new connection per
        # batch costs more than the batch itself) and closes it when the queue is empty.
        try:
            work()
        except BaseException as exc:
            errors.append(exc)
            stop.set()
        finally:
            connection.close()

    # An LLM judge's threads hand their outcomes to one storing thread and go back to the judge.
    store = _StoreQueue(run=run, owner=owner) if client is not None and workers > 1 else None
    try:
        if workers == 1:
            work()
        else:
            threads = [threading.Thread(target=thread_work, name=f"judge-{i}") for i in range(workers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                raise errors[0]
    finally:
        # Claims no thread started on go back to the queue, whatever stopped us (an error, a soft
        # time limit): left 'running', they would wait for a recovery.
        stop.set()
        with loading, lock:
            leftover = [batch_id for batch_id, _ in queue]
            queue.clear()
        _unclaim(batch_ids=leftover, owner=owner)
        if client is not None:
            client.close()
        if store is not None:
            store.close()
            stored += store.stored
    _finish_if_complete(run_id)
    monitor.sync()
    return stored


def _fail_all(*, run_id: int, reason: str) -> None:
    """A judge that cannot be called at all: every pending batch fails with the reason."""
    run = JudgeRun.objects.get(pk=run_id)
    owner = worker_name()
    pending = list(
        JudgeBatch.objects.filter(run_id=run_id, status=JudgeBatch.Status.PENDING).values_list(
            "id", flat=True
        )
    )
    for batch_id in _claim(run_id=run_id, batch_ids=pending, owner=owner):
        unit_ids = JudgeBatch.objects.values_list("unit_ids", flat=True).get(pk=batch_id)
        _store(
            run=run,
            batch_id=batch_id,
            owner=owner,
            outcome=_Outcome(verdicts={}, failed=dict.fromkeys(unit_ids, reason)),
        )
    sync_counters(run_id=run_id)
    _finish_if_complete(run_id)


def run_inline(
    *, run_id: int, concurrency: int | None = None, progress: Callable[[JudgeRun], None] | None = None
) -> JudgeRun:
    """Process every pending batch of the run in this process (the shell command, the demo)."""
    process_batches(
        run_id=run_id,
        batch_ids=JudgeBatch.objects.filter(run_id=run_id, status=JudgeBatch.Status.PENDING)
        .order_by("id")
        .values_list("id", flat=True),
        concurrency=concurrency,
        progress=progress,
    )
    return sync_counters(run_id=run_id)


def failed_units(*, run: JudgeRun, limit: int = 200) -> list[dict]:
    """The run's failed units with their reasons, for the run page."""
    unit_ids = [
        uid
        for ids in JudgeBatch.objects.filter(run=run, status=JudgeBatch.Status.FAILED).values_list(
            "unit_ids", flat=True
        )
        for uid in ids
    ][:limit]
    return list(
        Judgment.objects.filter(
            unit_id__in=unit_ids, criterion=run.criterion, judge=run.judge, status=Judgment.Status.FAILED
        )
        .order_by("unit_id")
        .values("unit_id", "unit__answer__external_id", "unit__sentence__position", "error")
    )


__all__ = [
    "RunError",
    "cancel_run",
    "create_run",
    "failed_units",
    "get_or_create_judge",
    "pending_batch_chunks",
    "process_batches",
    "recover_stale_batches",
    "resume_run",
    "run_inline",
    "sync_counters",
]
