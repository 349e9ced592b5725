"""The call journal: a call's row is the process's before its request leaves, without waiting for
the database, and the rows of a process killed with kill -9 are written by the recovery."""

from __future__ import annotations

import json
import os
import signal

import psycopg
import pytest
from django.db import connection, transaction

from annotation.models import Criterion
from evaluation.judge import accounting, claims, journal, runs
from evaluation.judge import recorder as recording
from evaluation.models import JudgeRun, LLMCall
from tests.factories import make_answer

postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the journal is PostgreSQL's (SQLite waits for each row)"
)
pytestmark = pytest.mark.django_db(transaction=True)

MESSAGES = [{"role": "user", "content": "x" * 40}]


@pytest.fixture(autouse=True)
def _no_journal_left():
    """Each test starts and ends with no journal of its database (a kept one would be replayed
    by the next test's recovery)."""
    for path in _journals():
        path.unlink()
    yield
    for path in _journals():
        path.unlink()


def _run(campaign, answers: int = 1) -> JudgeRun:
    for _ in range(answers):
        make_answer(campaign=campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    return runs.create_run(criterion=relevance, judge=runs.get_or_create_judge(campaign=campaign, name="gpt"))


def _log(run: JudgeRun, recorder: recording.CallRecorder, *, owner: str = "test") -> accounting.BatchCallLog:
    batch = run.batches.order_by("id").first()
    assert batch is not None
    return accounting.BatchCallLog(
        run_id=run.pk, batch_id=batch.pk, owner=owner, messages=MESSAGES, recorder=recorder
    )


class _TableLocked:
    """Another session holds LLMCall's table in exclusive mode: inserts wait, reads and the
    sequence do not."""

    def __enter__(self) -> _TableLocked:
        config = connection.settings_dict
        self.session = psycopg.connect(
            dbname=config["NAME"], user=config["USER"], host=config["HOST"], port=config["PORT"] or 5432
        )
        self.session.execute(f"LOCK TABLE {LLMCall._meta.db_table} IN EXCLUSIVE MODE")
        return self

    def end_waits(self) -> None:
        """End the sessions waiting for the table (a dead process's INSERT, sent before its kill,
        would else go through once the lock is released)."""
        self.session.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
        )

    def __exit__(self, *exc) -> None:
        self.session.rollback()
        self.session.close()


def _journals() -> list:
    folder = journal.directory()
    return sorted(folder.glob(f"*{journal.SUFFIX}")) if folder.is_dir() else []


@postgresql
def test_a_request_leaves_once_its_row_is_in_the_journal_and_the_row_is_written_after(campaign):
    run = _run(campaign)
    recorder = recording.CallRecorder(journal=True)
    try:
        with _TableLocked():
            # The database cannot take the row: the call is recorded all the same, in the journal.
            call_id = _log(run, recorder).sent()
            [path] = _journals()
            lines = path.read_bytes().split(b"\n")
            assert [journal.decode(line)[0] for line in lines[:-1]] == [call_id]
            assert not LLMCall.objects.filter(pk=call_id).exists()
        recorder.flush()  # the storing thread's wait: the row is in the database once it returns
        call = LLMCall.objects.get(pk=call_id)
        assert (call.run_id, call.owner, call.outcome, call.used, call.estimated_prompt_tokens) == (
            run.pk,
            "test",
            LLMCall.Outcome.SENT,
            False,
            10,
        )
    finally:
        recorder.close()
    assert _journals() == []  # every row written: the journal is removed


@postgresql
def test_the_calls_of_a_process_killed_before_its_rows_were_written_are_written_by_the_recovery(campaign):
    run = _run(campaign)
    batch_id = run.batches.get().pk
    read, write = os.pipe()
    with _TableLocked() as locked:
        pid = os.fork()
        if pid == 0:  # the judging process (no query in this thread): three calls, then kill -9
            try:
                recorder = recording.CallRecorder(journal=True)
                logs = [
                    accounting.BatchCallLog(
                        run_id=run.pk, batch_id=batch_id, owner="killed", messages=MESSAGES, recorder=recorder
                    )
                    for _ in range(3)
                ]
                os.write(write, json.dumps([log.sent() for log in logs]).encode())
            finally:
                os.kill(os.getpid(), signal.SIGKILL)
        os.close(write)
        with os.fdopen(read) as pipe:
            ids = json.loads(pipe.read())
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        assert not LLMCall.objects.filter(pk__in=ids).exists()
        assert len(_journals()) == 1
        locked.end_waits()
    # A worker starting, or a task taking the run's batches over: the calls are counted.
    claims.recover_run(run_id=run.pk)
    assert sorted(LLMCall.objects.filter(run=run, owner="killed").values_list("id", flat=True)) == sorted(ids)
    assert _journals() == []
    run = accounting.sync_counters(run_id=run.pk)
    assert (run.calls, run.unused_calls, run.prompt_tokens) == (3, 3, 30)
    claims.recover_run(run_id=run.pk)  # nothing twice
    assert LLMCall.objects.filter(run=run).count() == 3


@postgresql
def test_a_live_journal_is_left_alone_and_a_dead_one_gives_its_complete_rows_once(campaign):
    run = _run(campaign)
    batch = run.batches.get()
    row = recording.sent_row(run_id=run.pk, batch_id=batch.pk, owner="j", sha256="a" * 64, estimate=7)
    with connection.cursor() as cursor:
        cursor.execute(recording._RESERVE_SQL, [LLMCall._meta.db_table, 4])
        ids = [r[0] for r in cursor.fetchall()]
    live = journal.CallJournal.create()
    live.append(journal.encode((ids[0], *row)))
    assert accounting.replay_journals() == 0  # its process holds it
    assert not LLMCall.objects.exists()
    # Its process ends without writing the row: the journal stays, and is no one's.
    live.close(remove=False)
    # Another process's journal, killed mid-line: the same call again, a call of a batch deleted
    # since, and a line cut short (its request never left).
    with open(journal.directory() / f"other{journal.SUFFIX}", "wb") as other:
        other.write(journal.encode((ids[0], *row)))
        other.write(journal.encode((ids[1], run.pk, batch.pk + 1000, *row[2:])))
        other.write(journal.encode((ids[2], *row))[:-5])
    assert accounting.replay_journals() == 3
    assert list(LLMCall.objects.values_list("id", "owner", "estimated_prompt_tokens")) == [(ids[0], "j", 7)]
    assert _journals() == []


@postgresql
def test_after_a_refused_write_no_request_leaves_and_the_recovery_writes_the_rows_it_can(campaign, caplog):
    run = _run(campaign)
    recorder = recording.CallRecorder(journal=True)
    try:
        with _TableLocked():  # the two rows are written together, once the lock is released
            bad = _log(run, recorder, owner="bad")
            bad.estimate = -1  # a row the table's check refuses
            bad.sent()
            good = _log(run, recorder, owner="good")
            good_id = good.sent()
        with pytest.raises(recording.CallsNotRecorded):
            recorder.flush()
        with pytest.raises(recording.CallsNotRecorded):
            _log(run, recorder).sent()  # no request leaves while its row cannot be written
        # The server refused the good call: its row being in the journal only, so is its outcome.
        good.refused(good_id, error="HTTP 429: slow down")
    finally:
        recorder.close()
    [path] = _journals()  # kept for the recovery
    assert len(path.read_bytes().split(b"\n")) - 1 == 3
    assert not LLMCall.objects.exists()
    # The recovery writes the row it can, as the call ended, and leaves the refused one out.
    assert accounting.replay_journals() == 2
    assert list(LLMCall.objects.values_list("id", "owner", "outcome", "error")) == [
        (good_id, "good", LLMCall.Outcome.REFUSED, "HTTP 429: slow down")
    ]
    assert "its journaled row cannot be written" in caplog.text
    assert _journals() == []
    run = accounting.sync_counters(run_id=run.pk)
    assert (run.calls, run.prompt_tokens) == (0, 0)  # a refused call generated nothing


@postgresql
def test_a_journal_is_removed_only_when_the_recovery_s_transaction_commits(campaign):
    run = _run(campaign)
    batch = run.batches.get()
    row = recording.sent_row(run_id=run.pk, batch_id=batch.pk, owner="j", sha256="a" * 64, estimate=7)
    dead = journal.CallJournal.create()
    dead.append(journal.encode((10**9, *row)))
    dead.close(remove=False)

    class Refused(Exception):
        pass

    with pytest.raises(Refused), transaction.atomic():
        claims.recover_run(run_id=run.pk)
        assert LLMCall.objects.filter(pk=10**9).exists()
        raise Refused  # the caller's transaction rolls back: the rows are gone, the journal stays
    assert not LLMCall.objects.exists()
    assert len(_journals()) == 1
    with transaction.atomic():
        claims.recover_run(run_id=run.pk)
    assert list(LLMCall.objects.values_list("id", flat=True)) == [10**9]
    assert _journals() == []


@postgresql
def test_a_large_journal_is_retired_for_a_new_one_and_removed_once_its_rows_are_written(
    campaign, monkeypatch
):
    monkeypatch.setattr(recording, "ROTATE_AFTER_BYTES", 300)
    run = _run(campaign)
    recorder = recording.CallRecorder(journal=True)
    try:
        with _TableLocked():
            ids = [_log(run, recorder).sent() for _ in range(8)]
            assert len(_journals()) >= 3  # the rows are not written yet: every journal stays
        recorder.flush()
        assert len(_journals()) == 1  # the current one
        assert sorted(LLMCall.objects.values_list("id", flat=True)) == sorted(ids)
    finally:
        recorder.close()
    assert _journals() == []


@postgresql
def test_a_closed_recorder_refuses_at_once_and_never_leaves_a_thread_waiting(campaign):
    run = _run(campaign)
    recorder = recording.CallRecorder(journal=True)
    call_id = _log(run, recorder).sent()
    recorder.close()
    assert LLMCall.objects.filter(pk=call_id).exists()
    with pytest.raises(recording.CallsNotRecorded):
        recorder.flush()
    with pytest.raises(recording.CallsNotRecorded):
        _log(run, recorder).sent()


def test_a_journal_line_cut_short_is_not_a_call(tmp_path):
    (tmp_path / f"dead{journal.SUFFIX}").write_bytes(journal.encode((1, "a")) + b'[2,"b"')
    handed: list = []
    assert journal.dead_journals(handed.extend, width=2, folder=tmp_path) == 1
    assert handed == [[1, "a"]]
    assert list(tmp_path.iterdir()) == []


def test_journals_of_two_databases_never_mix():
    first = journal.directory()
    original = dict(connection.settings_dict)
    try:
        connection.settings_dict["NAME"] = f"{original['NAME']}-other"
        assert journal.directory() != first
        assert journal.directory().parent == first.parent
    finally:
        connection.settings_dict.update(original)
