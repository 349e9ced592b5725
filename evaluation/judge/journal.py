"""The call journal: the row of each call written to a file of the judging process before the
request leaves, so that the request does not wait for the database.

A process judging with several threads on PostgreSQL opens a journal (``CallJournal.create``) in
``VAR_DIR/judge-journal/<database>/`` and holds an exclusive ``flock`` on it while it lives. Each
call's row (its id taken from ids reserved ahead, see ``evaluation.judge.accounting``) is appended
as one line: once ``write`` returns, the line is the kernel's, and a process killed with ``kill
-9`` an instant later leaves it in the file. The process's recorder thread then inserts the rows
into the database a group at a time. A journal grown past ``ROTATE_AFTER_BYTES`` is retired for a
new one and removed once every row in it is written; the last one is removed when the process
finishes its batches with every row written.

The kernel releases a dead process's ``flock``: a journal that can be locked belongs to nobody,
and ``dead_journals`` gives its rows to be inserted (again: the insert skips the ids already
there) before removing it. The stale-claim recovery replays them (``evaluation.judge.claims``),
so a worker that starts on the host, or a task that takes a dead worker's batches over, counts
the calls that the dead process sent in its last milliseconds. A line cut short by the kill (no
newline) is a request that never left, since its ``write`` had not returned: it is skipped.

Limits: the journal is a file on this host, so the calls of a process killed on another host are
counted when a worker starts there, or at once when ``VAR_DIR`` is shared between hosts; the
database's directory is named after its settings as written (host, port, name), so processes
must reach it under the same ones; nothing is synced to the disk, so a crash of the host itself
(not of a process) can lose the lines of its last seconds; a child forked without ``exec`` shares
the lock, so a journal is replayed only once such children are gone too.
"""

from __future__ import annotations

import datetime
import fcntl
import functools
import hashlib
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

logger = logging.getLogger(__name__)

SUFFIX = ".journal"
# A journal larger than this is retired: its process goes on in a new one, and removes the old
# one once every row in it is in the database.
ROTATE_AFTER_BYTES = 1 << 20


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
    """One journal file of a judging process, locked while it is open. Not thread-safe: its owner
    appends under its own lock."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd
        self.size = 0

    @classmethod
    def create(cls, folder: Path | None = None) -> CallJournal:
        """A new journal, locked before it can be seen: it is made under a name the recovery does
        not read, locked, then renamed (else a recovery could take it for a dead one)."""
        folder = folder if folder is not None else directory()
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}{SUFFIX}"
        making = folder / f".{name}.new"
        fd = os.open(making, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(making, folder / name)
        except BaseException:
            os.close(fd)
            making.unlink(missing_ok=True)
            raise
        return cls(folder / name, fd)

    def append(self, line: bytes) -> None:
        """Write the line; when this returns, a kill of the process leaves it in the file. On an
        error (a full disk) the file is cut back to its previous end, so that no partial line is
        left for the next one to be appended to, and the error propagates."""
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except BaseException:
            os.ftruncate(self._fd, self.size)
            raise
        self.size += len(line)

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


def dead_journals(insert: Callable[[list[list]], object], *, width: int, folder: Path | None = None) -> int:
    """Hand the rows of every journal of a dead process to ``insert`` (which must skip the ids
    already in the database), then remove the journal; the number of rows handed over.

    Rows are lists of ``width`` values, the call's id first; when an id has several lines, the last
    one is its row (a call's outcome appended after its row). A journal still locked belongs to a
    live process and is left alone. A journal that cannot be read or written (``insert`` raised)
    stays for the next recovery and the error is logged: one journal must not stop the recovery of
    the claims. Called within a transaction, a journal is removed only once it commits.
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
        except OSError:
            logger.exception("%s: cannot be read; kept", path)
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its process is alive
            if os.fstat(fd).st_nlink == 0:
                continue  # replayed and removed by another process before we got the lock
            rows = _complete_rows(path, path.read_bytes(), width=width)
            if rows:
                with transaction.atomic():  # a savepoint when the caller is in a transaction
                    insert(rows)
            handed += len(rows)
            if connection.in_atomic_block:
                transaction.on_commit(functools.partial(path.unlink, missing_ok=True))
            else:
                path.unlink(missing_ok=True)
        except Exception:
            logger.exception("%s: its calls could not be written; kept for the next recovery", path)
        finally:
            os.close(fd)
    return handed


def _complete_rows(path: Path, data: bytes, *, width: int) -> list[list]:
    """The rows of the journal's complete lines, the last line of each id; a last line without its
    newline was cut short by the kill, before its request could leave."""
    rows: dict[object, list] = {}
    for number, line in enumerate(data.split(b"\n")[:-1], start=1):
        try:
            row = decode(line)
        except ValueError:
            row = None
        if not isinstance(row, list) or len(row) != width or not isinstance(row[0], int):
            logger.warning("%s, line %d: not a journal line, skipped", path, number)
            continue
        rows[row[0]] = row
    return list(rows.values())
