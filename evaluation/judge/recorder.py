"""Recording each call to the LLM server before its request leaves: the ``LLMCall`` row of a
call about to be sent, committed in the database by the thread about to send it or, with several
judging threads, by one recorder thread for all of them (``CallRecorder``). What the rows are for,
and how they are counted, is ``evaluation.judge.accounting``'s.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from evaluation.models import LLMCall

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
    """A call's row waiting to be written: its request waits for its id or the error that stopped
    it."""

    row: tuple
    written: threading.Event = field(default_factory=threading.Event)
    call_id: int | None = None
    error: BaseException | None = None


class CallsNotRecorded(RuntimeError):
    """The recorder could not write the calls' rows: no request should leave until they can be."""


class CallRecorder:
    """Records the calls that many judging threads are about to send, with one thread of its own
    that writes the rows of every call waiting in one multi-row INSERT (one transaction):
    ``record`` returns once its row is committed, so the requests that leave at the same time
    share one statement and one commit instead of a round trip and a transaction each.

    ``close`` writes what is waiting, stops the thread and closes its connection; ``record``
    raises ``CallsNotRecorded`` after it.
    """

    # Rows written by one statement at most (a bound on its size; 64 threads send ~64 at once).
    GROUP = 256

    def __init__(self) -> None:
        self._waiting: queue.SimpleQueue[_Waiting | None] = queue.SimpleQueue()
        self._stopping = False
        self._thread = threading.Thread(target=self._work, name="judge-calls", daemon=True)
        self._thread.start()

    def record(self, row: tuple) -> int:
        """Record the call's row (``sent_row``); its id, once the row is committed. Raises what
        stopped the write (``CallsNotRecorded`` once the recorder is closed)."""
        waiting = _Waiting(row=row)
        self._waiting.put(waiting)
        if not self._thread.is_alive():
            self._drop_waiting()  # closed before: nothing will write it
        waiting.written.wait()
        if waiting.error is not None:
            raise waiting.error
        assert waiting.call_id is not None
        return waiting.call_id

    def close(self) -> None:
        """Write the rows waiting, then stop (idempotent)."""
        if self._thread.is_alive():
            self._waiting.put(None)
            self._thread.join()
        self._drop_waiting()

    def _work(self) -> None:
        try:
            while (group := self._next_group()) is not None:
                self._write(group)
        finally:
            self._drop_waiting()
            connection.close()

    def _drop_waiting(self) -> None:
        """Release whatever still waits in the queue once the thread stops (after ``close``, or a
        failure of the thread itself): its requests hear that it stopped."""
        while True:
            try:
                item = self._waiting.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                item.error = CallsNotRecorded("the calls could not be recorded: the recorder is closed")
                item.written.set()

    def _next_group(self) -> list[_Waiting] | None:
        """The rows waiting (at most ``GROUP``); None once ``close`` was called and everything
        before it written."""
        if self._stopping or (first := self._waiting.get()) is None:
            return None
        group = [first]
        while len(group) < self.GROUP:
            try:
                more = self._waiting.get_nowait()
            except queue.Empty:
                break
            if more is None:
                self._stopping = True
                break
            group.append(more)
        return group

    def _write(self, group: list[_Waiting]) -> None:
        try:
            ids = _insert_rows([waiting.row for waiting in group])
            for waiting, call_id in zip(group, ids, strict=True):
                waiting.call_id = call_id
        except BaseException as exc:  # every waiting thread hears of it
            for waiting in group:
                waiting.error = exc
        finally:
            for waiting in group:
                waiting.written.set()


def _insert_rows(rows: list[tuple]) -> list[int]:
    """Insert call rows in one statement, in autocommit; their ids, in the order of ``rows``
    (PostgreSQL and SQLite return the rows of one INSERT in the order given, as Django's
    ``bulk_create`` relies on)."""
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s)"] * len(rows))
    with connection.cursor() as django_cursor:
        django_cursor.execute(
            f"INSERT INTO {LLMCall._meta.db_table} ({_COLUMNS}) VALUES {values} RETURNING id",
            [value for row in rows for value in row],
        )
        return [row[0] for row in django_cursor.fetchall()]


def insert_call(row: tuple) -> int:
    """Write one call's row (``sent_row``) in the calling thread, committed; its id. A plain INSERT
    ... RETURNING: the ORM's save machinery costs a judging thread more interpreter time than the
    statement itself."""
    asynchronous = connection.vendor == "postgresql" and not connection.in_atomic_block
    with connection.cursor() as cursor:
        cursor.execute(_INSERT_ASYNC_SQL if asynchronous else _INSERT_SQL, row)
        return cursor.fetchone()[0]
