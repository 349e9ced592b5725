"""Working through a run's batches in this process: claims taken a chunk at a time, judging
threads, one storing thread, the run's counters, cancel and budget.

The judging threads hand what they judged to one storing thread, which stores it up to
``STORE_GROUP`` batches per transaction: with many threads calling the judge, each one writing its
own judgments would queue for the database and, between round trips, for the interpreter lock,
and the calls in flight would drop below the run's concurrency. A batch handed over stays claimed
(``running``) until it is stored, so a process killed meanwhile leaves it to the stale-claim
recovery (``evaluation.judge.claims``) like a batch cut off mid-call. With one thread (the lexical
judge, a concurrency of 1) everything happens in the calling thread, each batch stored as soon as
it is judged.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable

from django.db import connection, transaction
from django.utils import timezone

from annotation.models import CriterionVersion
from evaluation.judge import bindings, storage
from evaluation.judge.accounting import BatchCallLog, spent_tokens, sync_counters
from evaluation.judge.claims import ACTIVE, claim, unclaim, worker_name
from evaluation.judge.client import JudgeClient, JudgeClientError, TokenBudget
from evaluation.judge.inputs import BatchInput, load_batches
from evaluation.judge.judging import Outcome, client_for, judge_lexically, judge_with_llm
from evaluation.models import Judge, JudgeBatch, JudgeRun

# A run's counters (and what other processes spent of its budget) are refreshed from its batches
# at most this often by each process working on it: live progress without a query per batch.
SYNC_INTERVAL_S = 1.0
# Judged batches stored together, in one transaction, by a run's storing thread.
STORE_GROUP = 50


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
        self._items: deque[tuple[int, Outcome, list[dict]]] = deque()
        self._ready = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="judge-store", daemon=True)
        self._thread.start()

    def put(self, *, batch_id: int, outcome: Outcome, kept: list[dict]) -> bool:
        """Hand a judged batch over; False (the batch given back as pending) once storing failed."""
        with self._ready:
            if self.error is None:
                self._items.append((batch_id, outcome, kept))
                self._ready.notify()
                return True
        storage.release(batch_id=batch_id, owner=self.owner, status=JudgeBatch.Status.PENDING)
        return False

    def _take(self) -> list[tuple[int, Outcome, list[dict]]]:
        with self._ready:
            while not self._items and not self._closed:
                self._ready.wait()
            return [self._items.popleft() for _ in range(min(STORE_GROUP, len(self._items)))]

    def _work(self) -> None:
        try:
            while judged := self._take():
                try:
                    self.stored += len(storage.store_batches(run=self.run, owner=self.owner, judged=judged))
                except BaseException as exc:
                    with self._ready:
                        self.error = exc
                        left = [item[0] for item in judged] + [item[0] for item in self._items]
                        self._items.clear()
                    for batch_id in left:
                        storage.release(batch_id=batch_id, owner=self.owner, status=JudgeBatch.Status.PENDING)
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
    data: BatchInput,
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
            storage.release(batch_id=batch_id, owner=owner, status=JudgeBatch.Status.CANCELLED)
            return False
        if run.judge.kind == Judge.Kind.LEXICAL:
            outcome = judge_lexically(data=data, criterion=run.criterion)
        else:
            assert client is not None
            outcome = judge_with_llm(
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
                storage.release(
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
        return storage.store_batch(
            run=run, batch_id=batch_id, owner=owner, outcome=outcome, kept=data.llm_calls
        )
    except BaseException:
        # A bug, a database error or an interruption must not strand the batch in 'running'.
        storage.release(batch_id=batch_id, owner=owner, status=JudgeBatch.Status.PENDING)
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
            client = client_for(run.judge, budget=budget)
        except JudgeClientError as exc:
            _fail_pending_batches(run_id=run_id, reason=str(exc))
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
    queue: deque[tuple[int, BatchInput]] = deque()
    stop = threading.Event()
    errors: list[BaseException] = []

    def refill() -> None:
        # Called with ``loading`` held: claim and load chunks until the queue has a batch per thread.
        # The chunk leaves ``chunks`` only once its batches are queued: a thread that finds both
        # empty may stop.
        while chunks and len(queue) < workers and not stop.is_set():
            claimed = claim(run_id=run_id, batch_ids=chunks[0], owner=owner)
            try:
                inputs = load_batches(batch_ids=claimed, criterion=run.criterion)
            except BaseException:
                unclaim(batch_ids=claimed, owner=owner)
                raise
            with lock:
                queue.extend((batch_id, inputs[batch_id]) for batch_id in claimed)
                chunks.popleft()

    def next_batch() -> tuple[int, BatchInput] | None:
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
        unclaim(batch_ids=leftover, owner=owner)
        if client is not None:
            client.close()
        if store is not None:
            store.close()
            stored += store.stored
    _finish_if_complete(run_id)
    monitor.sync()
    return stored


def _fail_pending_batches(*, run_id: int, reason: str) -> None:
    """A judge that cannot be called at all: every pending batch fails with the reason."""
    run = JudgeRun.objects.get(pk=run_id)
    owner = worker_name()
    pending = list(
        JudgeBatch.objects.filter(run_id=run_id, status=JudgeBatch.Status.PENDING).values_list(
            "id", flat=True
        )
    )
    for batch_id in claim(run_id=run_id, batch_ids=pending, owner=owner):
        unit_ids = JudgeBatch.objects.values_list("unit_ids", flat=True).get(pk=batch_id)
        storage.store_batch(
            run=run,
            batch_id=batch_id,
            owner=owner,
            outcome=Outcome(verdicts={}, failures=dict.fromkeys(unit_ids, reason)),
        )
    sync_counters(run_id=run_id)
    _finish_if_complete(run_id)
