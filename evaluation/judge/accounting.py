"""What judge runs spend: every call recorded when sent, the batches' tallies, the runs' totals.

Every HTTP request to the LLM server is an ``LLMCall`` row, written (autocommit, outside the
transaction that stores results) before the request goes out. When a reply comes back and its
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
import logging
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F, FloatField, Min, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from evaluation.judge.client import estimate_tokens
from evaluation.judge.journal import ROTATE_AFTER_BYTES, CallJournal, dead_journals, encode
from evaluation.models import Judge, JudgeBatch, JudgeRun, LLMCall

logger = logging.getLogger(__name__)


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


_COLUMNS = "run_id, batch_id, owner, prompt_sha256, estimated_prompt_tokens, outcome, used, error, sent_at"
_INSERT_SQL = (
    f"INSERT INTO {LLMCall._meta.db_table} ({_COLUMNS}) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)
# PostgreSQL, in autocommit: the same INSERT committed asynchronously (its own transaction only).
# A synchronous commit waits for the WAL to reach the disk: 3 ms per call on the project's
# machines against 0.15 ms, on every request of every judging thread. An asynchronous commit is
# visible at once and survives the worker (what the row is for: a worker killed mid-call); only a
# crash of the database server itself within a fraction of a second could lose it.
_INSERT_ASYNC_SQL = (
    f"INSERT INTO {LLMCall._meta.db_table} ({_COLUMNS}) "
    "SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s "
    "FROM (SELECT set_config('synchronous_commit', 'off', true)) AS local_setting RETURNING id"
)


def _sent_row(
    *,
    run_id: int,
    batch_id: int,
    owner: str,
    sha256: str,
    estimate: int,
    outcome: str = LLMCall.Outcome.SENT.value,
    error: str = "",
) -> tuple:
    return (
        run_id,
        batch_id,
        owner,
        sha256,
        estimate,
        outcome,
        False,
        error,
        connection.ops.adapt_datetimefield_value(timezone.now()),
    )


@dataclass
class _Waiting:
    """A call's row waiting to be written; without a journal, the request waits for its id or the
    error that stopped it."""

    row: tuple
    written: threading.Event = field(default_factory=threading.Event)
    call_id: int | None = None
    error: BaseException | None = None


@dataclass
class _Mark:
    """Put in the recorder's queue after rows: it is done once the rows before it are written
    (``flush``), and, with ``reserve``, once more ids are reserved. ``written``: it was reached by
    the recorder, not dropped because the recorder stopped."""

    reserve: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    written: bool = False


class CallsNotRecorded(RuntimeError):
    """The recorder could not write the calls' rows: no request should leave until they can be."""


class CallRecorder:
    """Records the calls that many judging threads are about to send, with one thread of its own
    that writes the rows of every call waiting in one multi-row INSERT (one transaction).

    With a journal (``journal=True``, PostgreSQL): ``record`` gives the call an id among ids
    reserved ahead from the table's sequence, appends its row to the process's journal
    (``evaluation.judge.journal``) and returns at once: the request leaves without waiting for
    the database, and a worker killed at any moment still leaves every request it sent in the
    journal, which the stale-claim recovery inserts. The recorder thread inserts the rows a group
    at a time (ids given, an id already there skipped), and removes a journal retired for being
    large once every row in it is in. Whatever reads the rows of calls this process sent (the
    storing transaction writing their replies, a refusal or a loss written on its call) first
    calls ``flush``. Once a write fails, every ``record`` and ``flush`` raises
    ``CallsNotRecorded``: the rows stay in the journal for the recovery.

    Without a journal (SQLite): ``record`` returns once its row is committed, so the requests that
    leave at the same time share one statement and one commit instead of a round trip and a
    transaction each.

    ``close`` writes what is waiting, stops the thread, closes its connection and removes the
    journal when every row in it is in the database (else it stays for the recovery); ``record``
    and ``flush`` raise after it.
    """

    # Rows written by one statement at most (a bound on its size; 64 threads send ~64 at once).
    GROUP = 256
    # Ids reserved from the sequence at a time, asked for once fewer than GROUP are left.
    RESERVE = 1024
    # With a journal, rows are gathered this long before they are written (unless a mark asks for
    # them): a statement per few rows would cost the judging threads' interpreter more time.
    GATHER_S = 0.1

    def __init__(self, *, journal: bool = False) -> None:
        self._waiting: queue.SimpleQueue[_Waiting | _Mark | None] = queue.SimpleQueue()
        self._stopping = False
        # The journal's order is the queue's: a row is appended and queued under this lock.
        self._lock = threading.Lock()
        self._ids_ready = threading.Condition(self._lock)
        self._ids: deque[int] = deque()
        self._reserving = False
        self._appended = self._written = 0
        # Journals retired for their size, each with the count of rows appended up to its end.
        self._retired: list[tuple[CallJournal, int]] = []
        self._failure: BaseException | None = None
        self._stopped = False  # the recorder thread ended: nothing more is written
        self._journal = CallJournal.create() if journal else None
        self._thread = threading.Thread(target=self._work, name="judge-calls", daemon=True)
        self._thread.start()
        if self._journal is not None:
            with self._lock:
                self._ask_for_ids()

    def record(self, row: tuple) -> int:
        """Record the call's row (``_sent_row``); its id. With a journal, the row is in the
        journal when this returns; else it is committed. Raises what stopped the write
        (``CallsNotRecorded`` with a journal, or once the recorder is closed)."""
        if self._journal is None:
            waiting = _Waiting(row=row)
            self._waiting.put(waiting)
            waiting.written.wait()
            if waiting.error is not None:
                raise waiting.error
            assert waiting.call_id is not None
            return waiting.call_id
        with self._lock:
            while not self._ids and self._failure is None and not self._stopped:
                self._ask_for_ids()
                self._ids_ready.wait()
            self._raise_failure()
            call_id = self._ids.popleft()
            self._journal.append(encode((call_id, *row)))
            self._appended += 1
            self._waiting.put(_Waiting(row=(call_id, *row)))
            if len(self._ids) < self.GROUP:
                self._ask_for_ids()
            if self._journal.size > ROTATE_AFTER_BYTES:
                self._retired.append((self._journal, self._appended))
                self._journal = CallJournal.create(self._journal.path.parent)
        return call_id

    def amend(self, row: tuple) -> None:
        """Append a call's row again, with how it ended, for the recovery (``record``'s row being
        only in the journal once a write failed): the last line of an id is its row."""
        if self._journal is None:
            return
        with self._lock:
            if not self._stopped:
                self._journal.append(encode(row))

    def flush(self) -> None:
        """Return once every row recorded before is in the database (at once without a journal:
        ``record`` waited for it). Raises ``CallsNotRecorded`` when they could not be written."""
        if self._journal is None:
            return
        mark = _Mark()
        self._waiting.put(mark)
        while not mark.done.wait(timeout=1.0):
            if not self._thread.is_alive():
                break  # stopped before reaching the mark
        with self._lock:
            self._raise_failure()
        if not mark.written:
            raise CallsNotRecorded("the calls could not be recorded: the recorder is closed")

    def close(self) -> None:
        """Write the rows waiting, then stop (idempotent)."""
        if self._thread.is_alive():
            self._waiting.put(None)
            self._thread.join()
        if self._journal is not None:
            with self._lock:
                complete = self._failure is None and self._written == self._appended
                for retired, _ in self._retired:
                    retired.close(remove=complete)
                self._retired.clear()
                self._journal.close(remove=complete)

    def _ask_for_ids(self) -> None:
        # Under the lock.
        if not self._reserving:
            self._reserving = True
            self._waiting.put(_Mark(reserve=True))

    def _raise_failure(self) -> None:
        # Under the lock.
        if self._failure is not None:
            raise CallsNotRecorded(f"the calls could not be recorded: {self._failure}") from self._failure
        if self._stopped:
            raise CallsNotRecorded("the calls could not be recorded: the recorder is closed")

    def _fail(self, exc: BaseException) -> None:
        with self._lock:
            if self._failure is None:
                self._failure = exc
            self._ids_ready.notify_all()

    def _work(self) -> None:
        cursor, error = None, None
        try:
            if self._journal is not None:
                # This thread's own connection, which only ever writes these rows, through
                # psycopg's cursor, kept (the statements are prepared once, as the site's other
                # statements are), without Django's wrapper around every execute. The judging
                # threads never wait for its commits, which are synchronous: a row the journal
                # no longer holds survives a crash of the database server.
                connection.ensure_connection()
                cursor = connection.connection.cursor()
        except BaseException as exc:  # the waiting threads hear of it, none waits for ever
            error = exc
            self._fail(exc)
        try:
            while (items := self._next_items()) is not None:
                group = [item for item in items if isinstance(item, _Waiting)]
                if group:
                    self._write(group, cursor=cursor, error=error)
                for mark in items:
                    if isinstance(mark, _Mark):
                        if mark.reserve:
                            self._reserve(cursor=cursor)
                        mark.written = True
                        mark.done.set()
        except BaseException as exc:  # a bug here must not leave threads waiting for ever
            self._fail(exc)
            raise
        finally:
            with self._lock:
                self._stopped = True
                self._ids_ready.notify_all()
            self._drop_waiting()
            connection.close()

    def _drop_waiting(self) -> None:
        """Release whatever still waits in the queue once the thread stops (after ``close``, or a
        failure of the thread itself): without a journal, its requests hear that it stopped."""
        while True:
            try:
                item = self._waiting.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Mark):
                item.done.set()
            elif isinstance(item, _Waiting) and self._journal is None:
                item.error = CallsNotRecorded("the calls could not be recorded: the recorder is closed")
                item.written.set()

    def _next_items(self) -> list[_Waiting | _Mark] | None:
        """The rows waiting (at most ``GROUP``), up to and with the first mark; None once ``close``
        was called and everything before it written. With a journal, nothing waits for the rows:
        they are gathered for up to ``GATHER_S`` (a mark ends the wait), so that one statement
        writes many."""
        if self._stopping or (first := self._waiting.get()) is None:
            return None
        items = [first]
        rows = int(isinstance(first, _Waiting))
        until = time.monotonic() + (self.GATHER_S if self._journal is not None else 0.0)
        while rows < self.GROUP and not isinstance(items[-1], _Mark):
            try:
                more = self._waiting.get(timeout=max(0.0, until - time.monotonic()))
            except queue.Empty:
                break
            if more is None:
                self._stopping = True
                break
            items.append(more)
            rows += isinstance(more, _Waiting)
        return items

    def _write(self, group: list[_Waiting], *, cursor: object, error: BaseException | None) -> None:
        if self._journal is not None:
            if self._failure is not None:
                return  # they stay in the journal, for the recovery
            try:
                _insert_journaled([waiting.row for waiting in group], cursor=cursor)
            except BaseException as exc:
                self._fail(exc)
                return
            with self._lock:
                self._written += len(group)
                # Rows are written in the order they were appended: a retired journal whose last
                # row is written holds nothing the database lacks.
                while self._retired and self._retired[0][1] <= self._written:
                    self._retired.pop(0)[0].close(remove=True)
            return
        try:
            if error is not None:
                raise error
            ids = _insert_rows([waiting.row for waiting in group])
            for waiting, call_id in zip(group, ids, strict=True):
                waiting.call_id = call_id
        except BaseException as exc:  # every waiting thread hears of it
            for waiting in group:
                waiting.error = exc
        finally:
            for waiting in group:
                waiting.written.set()

    def _reserve(self, *, cursor: Any) -> None:
        try:
            with connection.wrap_database_errors:
                cursor.execute(_RESERVE_SQL, [LLMCall._meta.db_table, self.RESERVE], prepare=_PREPARE)
                ids = [row[0] for row in cursor.fetchall()]
        except BaseException as exc:
            self._fail(exc)
            return
        with self._lock:
            self._ids.extend(ids)
            self._reserving = False
            self._ids_ready.notify_all()


def _insert_rows(rows: list[tuple]) -> list[int]:
    """Insert call rows in one statement, in autocommit; their ids, in the order of ``rows``
    (SQLite returns the rows of one INSERT in the order given, as Django's ``bulk_create`` relies
    on)."""
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s)"] * len(rows))
    with connection.cursor() as django_cursor:
        django_cursor.execute(
            f"INSERT INTO {LLMCall._meta.db_table} ({_COLUMNS}) VALUES {values} RETURNING id",
            [value for row in rows for value in row],
        )
        return [row[0] for row in django_cursor.fetchall()]


# PostgreSQL, journaled rows (see CallRecorder), their ids given: one column array per column, so
# that the statement's text is the same whatever the number of rows (parsed once by psycopg,
# prepared once by the server). An id already there (a journal replayed twice) is skipped, unless
# the line says how a call still 'sent' ended (``CallRecorder.amend``); the row of a batch deleted
# since (its run deleted with its campaign) is skipped.
_INSERT_JOURNALED_SQL = (
    f"INSERT INTO {LLMCall._meta.db_table} (id, {_COLUMNS}) "
    "SELECT r.* FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[], %s::text[], %s::text[], "
    "%s::integer[], %s::text[], %s::boolean[], %s::text[], %s::timestamptz[]) "
    f"AS r(id, {_COLUMNS}) "
    f"WHERE EXISTS (SELECT 1 FROM {JudgeBatch._meta.db_table} AS b WHERE b.id = r.batch_id) "
    "ON CONFLICT (id) DO UPDATE SET outcome = EXCLUDED.outcome, error = EXCLUDED.error "
    f"WHERE {LLMCall._meta.db_table}.outcome = 'sent' AND EXCLUDED.outcome <> 'sent'"
)
# The statements of the recorder's own cursor are prepared as the site's others are (not through
# a transaction-pooling proxy, see DB_PREPARED_STATEMENTS in the settings).
_PREPARE = "prepare_threshold" in settings.DATABASES["default"].get("OPTIONS", {})
# Ids taken from the table's own sequence, for rows written later with their id.
_RESERVE_SQL = "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)"


def _insert_journaled(rows: list, *, cursor: Any = None) -> None:
    """Insert journaled call rows (id first) in one statement (PostgreSQL); ``cursor``: psycopg's
    own, else the thread's connection is used."""
    columns = [list(column) for column in zip(*rows, strict=True)]
    if cursor is not None:
        with connection.wrap_database_errors:
            cursor.execute(_INSERT_JOURNALED_SQL, columns, prepare=_PREPARE)
        return
    with connection.cursor() as django_cursor:
        django_cursor.execute(_INSERT_JOURNALED_SQL, columns)


def replay_journals() -> int:
    """Insert the calls that dead processes of this host journaled and never wrote (see
    ``evaluation.judge.journal``), then refresh the counters of their runs; the number of journal
    rows read. A row the database refuses (a bug) is left out with an error in the log, so that
    it does not keep the others out."""
    if connection.vendor != "postgresql":
        return 0  # only PostgreSQL journals
    run_ids: set[int] = set()

    def insert(rows: list[list]) -> None:
        try:
            with transaction.atomic():
                _insert_journaled(rows)
        except DatabaseError:
            for row in rows:
                try:
                    with transaction.atomic():
                        _insert_journaled([row])
                except DatabaseError:
                    logger.exception("call %s of run %s: its journaled row cannot be written", row[0], row[1])
        run_ids.update(row[1] for row in rows)

    handed = dead_journals(insert, width=1 + len(_COLUMNS.split(",")))
    for run_id in JudgeRun.objects.filter(pk__in=run_ids).values_list("pk", flat=True):
        sync_counters(run_id=run_id)
    return handed


class BatchCallLog:
    """The ``CallLog`` of one batch's requests (see ``evaluation.judge.client.CallLog``).

    ``sent`` records the call's row before the request: the only write on the hot path, and it
    cannot wait for the storing thread's writes, since a row written after the request went out
    would miss the calls of a worker killed meanwhile. With a ``recorder`` (several judging
    threads) the row goes to it: to the process's journal on PostgreSQL, else written together with
    the rows of other threads' requests; without one, by one INSERT in autocommit in the calling
    thread, on PostgreSQL committed asynchronously (see ``_INSERT_ASYNC_SQL``).
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
        row = _sent_row(
            run_id=self.run_id,
            batch_id=self.batch_id,
            owner=self.owner,
            sha256=self.sha256,
            estimate=self.estimate,
        )
        if self.recorder is not None:
            return self.recorder.record(row)
        # A plain INSERT ... RETURNING: the ORM's save machinery costs the judging threads more
        # interpreter time than the statement itself.
        asynchronous = connection.vendor == "postgresql" and not connection.in_atomic_block
        with connection.cursor() as cursor:
            cursor.execute(_INSERT_ASYNC_SQL if asynchronous else _INSERT_SQL, row)
            return cursor.fetchone()[0]

    def flush(self) -> None:
        """Return once the rows recorded so far are in the database (see ``CallRecorder.flush``)."""
        if self.recorder is not None:
            self.recorder.flush()

    def refused(self, call_id: int, *, error: str) -> None:
        self._ended(call_id, outcome=LLMCall.Outcome.REFUSED, error=error, tokens=0)

    def lost(self, call_id: int, *, error: str) -> None:
        self._ended(call_id, outcome=LLMCall.Outcome.LOST, error=error)

    def _ended(self, call_id: int, *, outcome: str, error: str, tokens: int | None = None) -> None:
        """Write how a call without a usable reply ended on its row; when its row could not be
        written (it is in the journal only), in the journal, for the recovery."""
        try:
            self.flush()
        except CallsNotRecorded:
            assert self.recorder is not None
            row = _sent_row(
                run_id=self.run_id,
                batch_id=self.batch_id,
                owner=self.owner,
                sha256=self.sha256,
                estimate=self.estimate,
                outcome=outcome,
                error=error[:2000],
            )
            self.recorder.amend((call_id, *row))
            return
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


def sync_counters(*, run_id: int) -> JudgeRun:
    """Refresh the run's totals from its batches and calls; the refreshed run."""
    run = JudgeRun.objects.select_related("judge", "criterion").get(pk=run_id)
    totals = run_totals(run=run)
    JudgeRun.objects.filter(pk=run_id).update(**totals)
    for name, value in totals.items():
        setattr(run, name, value)
    return run


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
