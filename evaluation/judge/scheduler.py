"""Working through a run's batches in this process: claims taken a chunk at a time, judging
threads, one storing thread, the run's counters, cancel and budget.

The calling thread claims and loads the batches, hands them to a pool of judging threads
(``concurrent.futures``) and hands what they judged to a one-thread pool that stores it, a group
of batches per transaction: with many threads calling the judge, each one writing its own
judgments would queue for the database and, between round trips, for the interpreter lock, and
the calls in flight would drop below the run's concurrency. For the same reason the rows that
record each call before it is sent are written by one recorder thread for all the judging threads
(``evaluation.judge.recorder.CallRecorder``): a request leaves once its row is committed, and the
requests leaving together share one statement and one commit. A batch handed over stays claimed
(``running``) until it is stored, so a process killed meanwhile leaves it to the stale-claim
recovery (``evaluation.judge.claims``) like a batch cut off mid-call. With one thread (the lexical
judge, a concurrency of 1) everything happens in the calling thread, each batch stored as soon as
it is judged.

Its length is one concurrency protocol's: the claims, the judging threads, the storing thread,
cancel and budget read best together.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from annotation.criteria.categories import allowed_values
from annotation.models import CriterionVersion
from evaluation.judge import bindings, storage
from evaluation.judge.accounting import BatchCallLog, recounting, run_totals, spent_tokens, sync_counters
from evaluation.judge.claims import ACTIVE, claim, unclaim, worker_name
from evaluation.judge.client import JudgeClient, JudgeClientError, TokenBudget
from evaluation.judge.inputs import BatchInput, load_batches
from evaluation.judge.judging import Outcome, client_for, judge_lexically, judge_with_llm
from evaluation.judge.recorder import CallRecorder
from evaluation.models import Judge, JudgeBatch, JudgeRun

# A run's counters (and what other processes spent of its budget) are refreshed from its batches
# at most this often by each process working on it: live progress without a query per batch.
SYNC_INTERVAL_S = 1.0
# Batches submitted per judging thread (one being judged, the others waiting): enough for the
# threads to go from one call to the next while the calling thread claims and loads the next chunk
# or refreshes the run's counters, which takes a tenth of a second or more when 64 threads share
# the interpreter with it.
AHEAD_PER_THREAD = 4
# Judged batches stored together, in one transaction, by a run's storing thread.
STORE_GROUP = 50
# A judged batch waits at most this long for others to be stored with (unless nothing else is
# being judged): a transaction per few batches costs the storing thread and the database several
# times what one per group does, and the judging threads share their interpreter with it.
STORE_WAIT_S = 0.25


def process_batches(
    *,
    run_id: int,
    batch_ids: Iterable[int],
    concurrency: int | None = None,
    progress: Callable[[JudgeRun], None] | None = None,
    load_size: int | None = None,
    token: str | None = None,
) -> int:
    """Judge the given batches of a run with bounded concurrency; the number this call stored.

    Safe to call twice with the same ids, from any number of processes: the pending batches are
    claimed with a conditional UPDATE, so each is judged by one caller. Batches are claimed and
    loaded ``load_size`` at a time (a bound on memory and on what a dead process holds), while the
    threads keep working. LLM calls happen outside any transaction. The run's counters are
    refreshed while it works (``SYNC_INTERVAL_S``) and ``progress`` is called with the refreshed
    run. On any exception (a soft time limit included) the batches claimed but not started are
    returned to pending at once, those being judged are finished and stored (given back to pending
    after a failure to store), then it propagates. ``token``: the claims' token
    (``claims.worker_name``), a task's id so that its next attempt can take back what a lost
    database kept this one from giving back.
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
            client = client_for(run.judge, budget=budget, labels=allowed_values(run.criterion))
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
    monitor = _RunMonitor(run_id, budget=budget, progress=progress)
    recorder: CallRecorder | None = None
    claims: _ClaimsAhead | None = None
    try:
        if client is not None and workers > 1:
            # Several judging threads: their calls' rows are recorded together by one thread.
            recorder = CallRecorder()
        judging = _BatchJudging(
            run=run, owner=worker_name(token), client=client, texts=texts, recorder=recorder
        )
        claims = _ClaimsAhead(
            judging=judging, batch_ids=ids, chunk_size=max(1, load_size or max(200, 8 * workers))
        )
        if workers == 1:
            stored = _judge_inline(judging=judging, claims=claims, monitor=monitor)
        else:
            stored = _JudgingPools(judging=judging, claims=claims, monitor=monitor, workers=workers).run()
    finally:
        # Claims no thread started on go back to the queue, whatever stopped us (an error, a soft
        # time limit): left 'running', they would wait for a recovery.
        try:
            if claims is not None:
                claims.give_back()
        finally:
            if recorder is not None:
                recorder.close()  # after the judging threads: none is waiting for it
            if client is not None:
                client.close()
    # The last progress (and budget) report; ending the run refreshes its counters again.
    monitor.sync()
    _finish_if_complete(run_id)
    return stored


@dataclass(frozen=True)
class _BatchJudging:
    """Judging and storing one claimed batch of a run, from any thread."""

    run: JudgeRun
    owner: str
    client: JudgeClient | None
    texts: CriterionVersion | None  # the guidelines version the judge is bound to
    recorder: CallRecorder | None = None  # writes the calls' rows of several threads together

    def judge(self, *, batch_id: int, data: BatchInput) -> Outcome | None:
        """What the judge says of the batch; None when the token budget stopped the run first (the
        batch is then cancelled). On any exception the batch goes back to pending."""
        try:
            if self.run.judge.kind == Judge.Kind.LEXICAL:
                return judge_lexically(data=data, criterion=self.run.criterion)
            assert self.client is not None
            outcome = judge_with_llm(
                data=data,
                criterion=self.run.criterion,
                judge=self.run.judge,
                client=self.client,
                texts=self.texts,
                calls=lambda messages: BatchCallLog(
                    run_id=self.run.pk,
                    batch_id=batch_id,
                    owner=self.owner,
                    messages=messages,
                    recorder=self.recorder,
                ),
            )
            if outcome.budget_stopped:
                self.release(
                    batch_id, status=JudgeBatch.Status.CANCELLED, outcome=outcome, kept=data.llm_calls
                )
                _stop_for_budget(self.run.pk)
                return None
            return outcome
        except BaseException:
            # A bug, a database error or an interruption must not strand the batch in 'running'.
            self.release(batch_id, status=JudgeBatch.Status.PENDING)
            raise

    def store_group(self, judged: list[storage.Judged]) -> set[int]:
        """Store judged batches together (the storing thread); the ids stored."""
        return storage.store_batches(run=self.run, owner=self.owner, judged=judged)

    def release(
        self, batch_id: int, *, status: str, outcome: Outcome | None = None, kept: list[dict] | None = None
    ) -> None:
        storage.release(batch_id=batch_id, owner=self.owner, status=status, outcome=outcome, kept=kept)


class _ClaimsAhead:
    """The batches this call claims, a chunk at a time, held loaded until they are started."""

    def __init__(self, *, judging: _BatchJudging, batch_ids: list[int], chunk_size: int) -> None:
        self.run = judging.run
        self.owner = judging.owner
        self._chunks = deque(batch_ids[i : i + chunk_size] for i in range(0, len(batch_ids), chunk_size))
        self._ready: deque[tuple[int, BatchInput]] = deque()

    def next(self) -> tuple[int, BatchInput] | None:
        """The next claimed batch to start, claiming and loading the next chunk when none is
        ready; None when every chunk was tried (a batch claimed elsewhere is skipped)."""
        while not self._ready and self._chunks:
            claimed = claim(run_id=self.run.pk, batch_ids=self._chunks.popleft(), owner=self.owner)
            try:
                inputs = load_batches(batch_ids=claimed, criterion=self.run.criterion)
            except BaseException:
                unclaim(batch_ids=claimed, owner=self.owner)
                raise
            self._ready.extend((batch_id, inputs[batch_id]) for batch_id in claimed)
        return self._ready.popleft() if self._ready else None

    def give_back(self, *, status: str = JudgeBatch.Status.PENDING) -> None:
        """Give the batches claimed but not started back (pending, or cancelled)."""
        batch_ids = [batch_id for batch_id, _ in self._ready]
        self._ready.clear()
        unclaim(batch_ids=batch_ids, owner=self.owner, status=status)


class _RunMonitor:
    """What the process working on a run learns from the database, at most once per
    ``SYNC_INTERVAL_S``: it refreshes the run's counters from the batches (live progress), reads
    whether the run is still active (cancel), and raises the token budget's count to what the whole
    run has spent (other processes included). Used by the calling thread only."""

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
        self._checked = float("-inf")
        self._active = True

    def sync(self) -> None:
        """Refresh now."""
        self._checked = time.monotonic()
        run = sync_counters(run_id=self.run_id)
        self._active = run.is_active
        if self.budget is not None:
            self.budget.observe(run.prompt_tokens + run.completion_tokens)
        if self.progress is not None:
            self.progress(run)

    def tick(self) -> None:
        """Refresh when the last refresh is older than ``SYNC_INTERVAL_S``."""
        if time.monotonic() - self._checked >= SYNC_INTERVAL_S:
            self.sync()

    def active(self) -> bool:
        """Whether the run was still active at the last refresh (refreshed first when due)."""
        self.tick()
        return self._active


def _judge_inline(*, judging: _BatchJudging, claims: _ClaimsAhead, monitor: _RunMonitor) -> int:
    """Judge the batches one after the other in the calling thread; the number stored. A model's
    batch is stored once judged. A lexical judge's take microseconds where a transaction takes
    milliseconds: they are stored ``STORE_GROUP`` at a time, or what was judged within
    ``STORE_WAIT_S``. What was judged is stored before an error is raised; a group whose store
    fails goes back to pending."""
    group_size = STORE_GROUP if judging.run.judge.kind == Judge.Kind.LEXICAL else 1
    stored = 0
    waiting: list[storage.Judged] = []
    since = 0.0

    def store_waiting() -> int:
        nonlocal waiting
        group, waiting = waiting, []
        try:
            return len(judging.store_group(group))
        except BaseException:
            for batch_id, _, _ in group:
                judging.release(batch_id, status=JudgeBatch.Status.PENDING)
            raise

    try:
        while True:
            if not monitor.active():
                claims.give_back(status=JudgeBatch.Status.CANCELLED)
            if (item := claims.next()) is None:
                break
            batch_id, data = item
            outcome = judging.judge(batch_id=batch_id, data=data)
            if outcome is not None:
                if not waiting:
                    since = time.monotonic()
                waiting.append((batch_id, outcome, data.llm_calls))
                if len(waiting) >= group_size or time.monotonic() - since >= STORE_WAIT_S:
                    stored += store_waiting()
            monitor.tick()
    finally:
        if waiting:
            stored += store_waiting()
    return stored


class _JudgingPools:
    """``workers`` judging threads and one storing thread, fed by the calling thread.

    The calling thread keeps ``AHEAD_PER_THREAD`` batches per judging thread submitted (one being
    judged, the others waiting), so that a thread goes from one call to the next at once, and hands
    judged batches to the storing thread a group at a time (see ``_group_ready``). On an
    error (in a judging thread, in the calling thread: a soft time limit, Ctrl-C, a failing
    ``progress``) the batches not started are given back at once, those being judged finish and
    are stored, then the error is raised. After a failure to store, the batches judged and not
    stored go back to pending, and nothing more is stored.
    """

    def __init__(
        self, *, judging: _BatchJudging, claims: _ClaimsAhead, monitor: _RunMonitor, workers: int
    ) -> None:
        self.judging = judging
        self.claims = claims
        self.monitor = monitor
        self.workers = workers
        self.judges = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge")
        self.storer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-store")
        self.judging_now: dict[Future, tuple[int, BatchInput]] = {}
        # Every future, once done, is put here by its done-callback: the calling thread wakes on
        # this queue alone. ``concurrent.futures.wait`` over the futures in flight would instead
        # lock and hook every one of them at each wake-up, hundreds of times a second at a
        # concurrency of 64: the calling thread would spend more interpreter time than it feeds.
        self.finished: queue.SimpleQueue[Future] = queue.SimpleQueue()
        self.waiting: list[storage.Judged] = []  # judged, to be stored
        self.waiting_since = 0.0  # when the first of them was judged
        self.storing: tuple[Future, list[storage.Judged]] | None = None
        self.stored = 0
        self.error: BaseException | None = None
        self.store_failed = False

    def run(self) -> int:
        """Judge and store every batch the claims give; the number stored."""
        try:
            # Every judging thread is started now, so that each can be told to close its database
            # connection at the end (see ``_on_every_thread``).
            _on_every_thread(self.judges, self.workers, _nothing)
            while self._turn():
                pass
        finally:
            # Each thread kept one database connection for all its batches (a new connection per
            # batch costs more than the batch itself); it closes it now.
            try:
                _on_every_thread(self.judges, self.workers, _close_connection)
                self.storer.submit(_close_connection).result()
            finally:
                self.judges.shutdown()
                self.storer.shutdown()
        if self.error is not None:
            raise self.error
        return self.stored

    def _turn(self) -> bool:
        """Submit, store, wait for the next batch judged or stored; False once all is done."""
        try:
            if self.error is None:
                self._submit()
            if self.storing is None and self._group_ready():
                group, self.waiting = self.waiting[:STORE_GROUP], self.waiting[STORE_GROUP:]
                self.waiting_since = time.monotonic()
                future = self.storer.submit(self.judging.store_group, group)
                self.storing = (future, group)
                future.add_done_callback(self.finished.put)
            if not self.judging_now and self.storing is None:
                return False
            # Everything finished meanwhile is collected at one wake-up.
            try:
                self._collect(self.finished.get(timeout=STORE_WAIT_S if self.waiting else None))
            except queue.Empty:
                return True  # time to store what waits
            while True:
                try:
                    future = self.finished.get_nowait()
                except queue.Empty:
                    break
                self._collect(future)
            if self.error is None:
                self.monitor.tick()
        except BaseException as exc:
            self._stop(exc)
        return True

    def _group_ready(self) -> bool:
        """Whether the judged batches waiting should be stored now: a group (as many as there are
        judging threads, at most ``STORE_GROUP``), nothing else being judged (or an error: no more
        will come), or the first has waited ``STORE_WAIT_S``."""
        if not self.waiting:
            return False
        return (
            len(self.waiting) >= min(STORE_GROUP, self.workers)
            or not self.judging_now
            or self.error is not None
            or time.monotonic() - self.waiting_since >= STORE_WAIT_S
        )

    def _submit(self) -> None:
        while len(self.judging_now) < AHEAD_PER_THREAD * self.workers:
            if not self.monitor.active():
                self._withdraw(status=JudgeBatch.Status.CANCELLED)
            if (item := self.claims.next()) is None:
                return
            batch_id, data = item
            future = self.judges.submit(self.judging.judge, batch_id=batch_id, data=data)
            self.judging_now[future] = item
            future.add_done_callback(self.finished.put)

    def _collect(self, future: Future) -> None:
        if future not in self.judging_now and (self.storing is None or future is not self.storing[0]):
            return  # withdrawn before it started (cancelled): already given back
        if self.storing is not None and future is self.storing[0]:
            group = self.storing[1]
            self.storing = None
            try:
                self.stored += len(future.result())
            except BaseException:
                self.store_failed = True
                for batch_id, _, _ in [*group, *self.waiting]:
                    self.judging.release(batch_id, status=JudgeBatch.Status.PENDING)
                self.waiting.clear()
                raise
            return
        batch_id, data = self.judging_now.pop(future)
        outcome = future.result()  # an exception: the batch is already back to pending
        if outcome is None:
            return
        if self.store_failed:
            self.judging.release(batch_id, status=JudgeBatch.Status.PENDING)
        else:
            if not self.waiting:
                self.waiting_since = time.monotonic()
            self.waiting.append((batch_id, outcome, data.llm_calls))

    def _stop(self, error: BaseException) -> None:
        """Submit nothing more and give back the batches not started; the first error is raised
        once the batches being judged are done."""
        if self.error is None:
            self.error = error
        self._withdraw(status=JudgeBatch.Status.PENDING)

    def _withdraw(self, *, status: str) -> None:
        """Give back (pending, or cancelled) the batches claimed or submitted but not started."""
        withdrawn = []
        for future, (batch_id, _) in list(self.judging_now.items()):
            if future.cancel():
                del self.judging_now[future]
                withdrawn.append(batch_id)
        unclaim(batch_ids=withdrawn, owner=self.judging.owner, status=status)
        self.claims.give_back(status=status)


def _nothing() -> None:
    pass


def _close_connection() -> None:
    # ``connection`` stands for the calling thread's connection: looked up in the thread itself.
    connection.close()


def _on_every_thread(pool: ThreadPoolExecutor, threads: int, fn: Callable[[], object]) -> None:
    """Call ``fn`` once in each of the ``threads`` threads of an idle ``pool``.

    Each call waits at a barrier until all have started, so that no thread takes two. The first
    call on a new pool starts all its threads (a pool starts a thread per task submitted while
    none is idle); the pool then holds exactly ``threads`` threads, each of which takes one call
    at every later round.
    """
    barrier = threading.Barrier(threads)
    for future in [pool.submit(_call_then_wait, fn, barrier) for _ in range(threads)]:
        future.result()


def _call_then_wait(fn: Callable[[], object], barrier: threading.Barrier) -> None:
    try:
        fn()
    finally:
        barrier.wait()


def _finish_if_complete(run_id: int) -> None:
    """End the run once none of its batches is pending or running: failed when no unit was judged
    and some failed (a judge that cannot be called), done otherwise (its failures, if any, told
    beside: ``JudgeRun.status_text``). Its counters are refreshed in the same statement, the run's
    row locked (``recounting``): whoever reads it ended reads every unit its batches judged, even
    when another process stored the last batch."""
    with recounting(run_id=run_id) as run:
        unfinished = [JudgeBatch.Status.PENDING, JudgeBatch.Status.RUNNING]
        if run.status != JudgeRun.Status.RUNNING or run.batches.filter(status__in=unfinished).exists():
            return
        totals = run_totals(run=run)
        failed = totals["done_units"] == 0 and totals["failed_units"] > 0
        JudgeRun.objects.filter(pk=run_id).update(
            status=JudgeRun.Status.FAILED if failed else JudgeRun.Status.DONE,
            finished_at=timezone.now(),
            **totals,
        )


def _stop_for_budget(run_id: int) -> None:
    """Stop a run whose token budget ran out: its pending batches are cancelled (a resume with a
    larger budget reopens them)."""
    with transaction.atomic():
        JudgeBatch.objects.filter(run_id=run_id, status=JudgeBatch.Status.PENDING).update(
            status=JudgeBatch.Status.CANCELLED
        )
        JudgeRun.objects.filter(pk=run_id, status__in=ACTIVE).update(
            status=JudgeRun.Status.BUDGET, finished_at=timezone.now()
        )
    sync_counters(run_id=run_id)


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
