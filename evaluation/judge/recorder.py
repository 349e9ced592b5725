"""Recording each call to the LLM server before its request leaves: the ``LLMCall`` row of a
call about to be sent, written by the thread about to send it or, with several judging threads,
by one recorder thread for all of them (``CallRecorder``), through the process's call journal on
PostgreSQL (``evaluation.judge.journal``), and the rows of dead processes' journals written by the
recovery (``write_replayed``). What the rows are for, and how they are counted, is
``evaluation.judge.accounting``'s.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from evaluation.judge.journal import ROTATE_AFTER_BYTES, CallJournal, encode
from evaluation.models import JudgeBatch, LLMCall

logger = logging.getLogger(__name__)

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


def sent_row(
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
    """A call's row waiting to be written, without a journal: the request waits for its id or the
    error that stopped it. (With a journal, a row is queued as the tuple itself: nothing waits.)"""

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
        self._waiting: queue.SimpleQueue[tuple | _Waiting | _Mark | None] = queue.SimpleQueue()
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
        """Record the call's row (``sent_row``); its id. With a journal, the row is in the
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
            self._waiting.put((call_id, *row))
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
                rows = [item for item in items if not isinstance(item, _Mark)]
                if rows and self._journal is not None:
                    self._write_journaled(rows, cursor=cursor)
                elif rows:
                    self._write_waiting(rows, error=error)
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

    def _next_items(self) -> list[tuple | _Waiting | _Mark] | None:
        """The rows waiting (at most ``GROUP``), up to and with the first mark; None once ``close``
        was called and everything before it written. With a journal, nothing waits for the rows:
        they are gathered for up to ``GATHER_S`` (a mark ends the wait), so that one statement
        writes many."""
        if self._stopping or (first := self._waiting.get()) is None:
            return None
        items = [first]
        rows = int(not isinstance(first, _Mark))
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
            rows += not isinstance(more, _Mark)
        return items

    def _write_journaled(self, rows: list, *, cursor: object) -> None:
        if self._failure is not None:
            return  # they stay in the journal, for the recovery
        try:
            _insert_journaled(rows, cursor=cursor)
        except BaseException as exc:
            self._fail(exc)
            return
        with self._lock:
            self._written += len(rows)
            # Rows are written in the order they were appended: a retired journal whose last row
            # is written holds nothing the database lacks.
            while self._retired and self._retired[0][1] <= self._written:
                self._retired.pop(0)[0].close(remove=True)

    def _write_waiting(self, group: list, *, error: BaseException | None) -> None:
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


# The values of a journaled row: the call's id, then the columns.
ROW_WIDTH = 1 + len(_COLUMNS.split(","))


def insert_call(row: tuple) -> int:
    """Write one call's row (``sent_row``) in the calling thread, committed; its id. A plain INSERT
    ... RETURNING: the ORM's save machinery costs a judging thread more interpreter time than the
    statement itself."""
    asynchronous = connection.vendor == "postgresql" and not connection.in_atomic_block
    with connection.cursor() as cursor:
        cursor.execute(_INSERT_ASYNC_SQL if asynchronous else _INSERT_SQL, row)
        return cursor.fetchone()[0]


def write_replayed(rows: list[list]) -> None:
    """Write journaled rows read back by the recovery (PostgreSQL): in one statement, else one by
    one, leaving out, with an error in the log, a row the database refuses (a bug), so that it does
    not keep the others out."""
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
