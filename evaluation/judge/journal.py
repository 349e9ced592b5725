"""The call journal: the row of each call written to a file of the judging process before the
request leaves, so that the request does not wait for the database.

A process judging with several threads on PostgreSQL opens one journal (``CallJournal.create``)
in ``VAR_DIR/judge-journal/<database>/`` and holds an exclusive ``flock`` on it while it lives.
Each call's row (its id taken from ids reserved ahead, see ``evaluation.judge.accounting``) is
appended as one line with one ``write``: once ``write`` returns, the line is the kernel's, and a
process killed with ``kill -9`` an instant later leaves it in the file. The process's recorder
thread then inserts the rows into the database, a group at a time, and empties the journal when
everything in it is written; a journal whose rows are all written is removed when the process
finishes.

The kernel releases a dead process's ``flock``: a journal that can be locked belongs to nobody,
and ``dead_journals`` gives its rows to be inserted (again: the insert skips the ids already
there) before removing it. The stale-claim recovery replays them (``evaluation.judge.claims``),
so a worker that starts on the host, or a task that takes a dead worker's batches over, counts
the calls that the dead process sent in its last milliseconds. A line cut short by the kill (no
newline) is a request that never left, since its ``write`` had not returned: it is skipped.

The journal is a file on this host: the calls of a process killed on another host are counted
when a worker starts there, or at once when ``VAR_DIR`` is shared between hosts.
"""

from __future__ import annotations

import datetime
import fcntl
import hashlib
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection, transaction

logger = logging.getLogger(__name__)

SUFFIX = ".journal"
# A journal whose rows are all in the database is emptied once it is larger than this.
EMPTY_AFTER_BYTES = 1 << 20


def directory() -> Path:
    """The journals of this database: one directory per database, so that the journals of two
    databases (two deployments, two test runs) never mix."""
    config = connection.settings_dict
    where = f"{connection.vendor}:{config.get('HOST') or ''}:{config.get('PORT') or ''}:{config['NAME']}"
    name = f"{connection.vendor}-{hashlib.sha256(where.encode()).hexdigest()[:16]}"
    return Path(settings.VAR_DIR) / "judge-journal" / name


def encode(row: tuple) -> bytes:
    """One call's row as a journal line (ids, texts, numbers and a time)."""
    values = [value.isoformat() if isinstance(value, datetime.datetime) else value for value in row]
    return (json.dumps(values, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def decode(line: bytes) -> list:
    """A journal line's values (times as ISO strings, which the database reads)."""
    return json.loads(line)


class CallJournal:
    """The journal of one judging process, locked while it is open. Not thread-safe: its owner
    appends under its own lock."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd
        self._size = 0

    @classmethod
    def create(cls, folder: Path | None = None) -> CallJournal:
        folder = folder if folder is not None else directory()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}{SUFFIX}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BaseException:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        return cls(path, fd)

    def append(self, line: bytes) -> None:
        """Write the line; when this returns, a kill of the process leaves it in the file."""
        view = memoryview(line)
        while view:
            view = view[os.write(self._fd, view) :]
        self._size += len(line)

    def empty_if_large(self) -> None:
        """Empty the journal when it is large; call only when every row in it is in the database."""
        if self._size > EMPTY_AFTER_BYTES:
            os.ftruncate(self._fd, 0)
            self._size = 0

    def close(self, *, remove: bool) -> None:
        """Release the journal; ``remove`` when every row in it is in the database (else it stays
        for ``dead_journals``)."""
        if self._fd < 0:
            return
        try:
            if remove:
                self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)  # releases the lock
            self._fd = -1


def dead_journals(insert: Callable[[list[list]], object], folder: Path | None = None) -> int:
    """Hand the rows of every journal of a dead process to ``insert`` (which must skip the ids
    already in the database), then remove the journal; the number of rows handed over.

    A journal still locked belongs to a live process and is left alone. When ``insert`` raises a
    database error, the journal stays for the next recovery and the error is logged: one journal
    that cannot be written must not stop the recovery of the claims.
    """
    folder = folder if folder is not None else directory()
    if not folder.is_dir():
        return 0
    handed = 0
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # replayed and removed by another process meanwhile
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its process is alive
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue  # replayed and removed by another process before we got the lock
            rows = _complete_rows(path, data)
            if rows:
                try:
                    with transaction.atomic():  # a savepoint when the caller is in a transaction
                        insert(rows)
                except DatabaseError:
                    logger.exception("%s: its calls could not be written; kept for the next recovery", path)
                    continue
                handed += len(rows)
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)
    return handed


def _complete_rows(path: Path, data: bytes) -> list[list]:
    """The rows of the journal's complete lines; a last line without its newline was cut short by
    the kill, before its request could leave."""
    lines = data.split(b"\n")[:-1]
    rows = []
    for number, line in enumerate(lines, start=1):
        try:
            rows.append(decode(line))
        except ValueError:
            logger.warning("%s, line %d: not a journal line, skipped", path, number)
    return rows
