"""Label rows are never rewritten: on PostgreSQL a trigger refuses UPDATE and DELETE of them.

A correction is a new row (``annotation.workflow``), so the label history is the whole story.
The trigger (migration ``annotation/0007_label_append_only``, which reads the setting below)
holds against every road into the database: the admin, a shell, a bug in our own code, a
hand-written ``UPDATE``. Deleting label rows is allowed in two deliberate, visible cases only,
each inside a transaction that says so with :func:`label_deletion_allowed`: an import with
``--update`` that replaces answers whose only labels were imported (the summary counts them),
and deleting a campaign or part of one in the admin (its confirmation page lists the labels that
go). An UPDATE is refused even then.

SQLite has no session variables and rebuilds a table (dropping its triggers) on most schema
changes, so there the guarantee is the code's and the read-only admin's alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connections, transaction

# The transaction-local PostgreSQL setting the trigger reads.
DELETE_SETTING = "attest.label_delete"


@contextmanager
def label_deletion_allowed(*, using: str = "default") -> Iterator[None]:
    """Let the current transaction delete label rows until the block ends (never update them).

    Must run inside ``transaction.atomic``: the permission is transaction-local, so it cannot
    leak to another request that reuses the connection. Does nothing on SQLite.
    """
    connection = connections[using]
    if connection.vendor != "postgresql":
        yield
        return
    if not transaction.get_connection(using).in_atomic_block:
        raise RuntimeError("label_deletion_allowed() needs a transaction (transaction.atomic)")
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config(%s, 'allowed', true)", [DELETE_SETTING])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config(%s, '', true)", [DELETE_SETTING])
