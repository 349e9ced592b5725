"""Fast inserts of many rows of one model, returning their new ids in row order.

Django's bulk_create spends most of an import's time building model instances and preparing
every value of every field. Imports write tens of rows per answer, so rows come here as plain
tuples: on PostgreSQL they are streamed with COPY (ids drawn from the table's sequence first),
elsewhere they go as multi-row INSERT ... RETURNING statements. Columns left out get the
field's default, and auto_now / auto_now_add fields the current time, as the ORM would.

Ids can also be drawn ahead (``draw_ids``) and given with the rows: rows that point at one
another (an answer's sentences, their units) are then built whole before any is written. Rows
are made ready (``prepare_rows``: on PostgreSQL encoded as COPY data) apart from their writing
(``write_rows``), which lets an import build a batch's rows beside the writing of the batch
before.
"""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import connection, models, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone
from psycopg import Copy
from psycopg.copy import FileWriter

# Field types whose Python values go to the database as they are (no conversion needed).
_PLAIN_TYPES = {
    "AutoField",
    "BigAutoField",
    "BigIntegerField",
    "BooleanField",
    "CharField",
    "FloatField",
    "ForeignKey",
    "IntegerField",
    "OneToOneField",
    "PositiveBigIntegerField",
    "PositiveIntegerField",
    "PositiveSmallIntegerField",
    "SlugField",
    "SmallIntegerField",
    "TextField",
}


def _field(model: type[models.Model], column: str) -> models.Field:
    for field in model._meta.concrete_fields:
        if column in (field.attname, field.name):
            return field
    raise ValueError(f"{model.__name__} has no column {column!r}")


def _filled_columns(model: type[models.Model], columns: Sequence[str]) -> tuple[list[str], list[object]]:
    """The db columns not given, with the value the ORM would store for them."""
    given = {_field(model, column).attname for column in columns}
    now = timezone.now()
    names, values = [], []
    for field in model._meta.concrete_fields:
        if field.primary_key or field.attname in given:
            continue
        auto = getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
        # get_default() is what the ORM stores for a field left out ("" for text, None if nullable).
        value = now if auto else field.get_default()
        names.append(field.column)
        values.append(field.get_db_prep_save(value, connection))
    return names, values


def _plain_json(field: models.Field) -> bool:
    return isinstance(field, models.JSONField) and field.encoder is None


def _max_params() -> int:
    if connection.vendor == "sqlite":
        try:
            return connection.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        except AttributeError:  # not connected yet
            pass
    return connection.features.max_query_params or 65535


# (database alias, table, column) -> the sequence its ids are drawn from, on PostgreSQL.
_SEQUENCES: dict[tuple[str, str, str], str] = {}


def _sequence(cursor: CursorWrapper, *, table: str, column: str) -> str:
    """The sequence ``table``'s ``column`` takes its default from, asked once per process."""
    key = (connection.alias, table, column)
    if key not in _SEQUENCES:
        cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [table, column])
        _SEQUENCES[key] = cursor.fetchone()[0]
    return _SEQUENCES[key]


def draw_ids(*, model: type[models.Model], count: int) -> list[int]:
    """``count`` new primary keys for ``model``'s rows, drawn as the database draws them for a
    row inserted without one, on the connection of the calling thread.

    On PostgreSQL from the table's sequence, which no transaction rolls back: a thread beside
    the one writing draws on a connection of its own, without waiting for the writes. On SQLite
    by moving the table's AUTOINCREMENT counter (``sqlite_sequence``), in the caller's
    transaction: only the thread that writes can draw. Either way an id drawn is never drawn
    again, used or not.
    """
    if count <= 0:
        return []
    table, pk = model._meta.db_table, model._meta.pk.column
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # One row holding them all: a row per id costs as much again to send and read. The
            # sequence is named once: looked up in the catalogue for each id, it cost five
            # times the drawing.
            cursor.execute(
                "SELECT array_agg(nextval(%s::regclass)) FROM generate_series(1, %s)",
                [_sequence(cursor, table=table, column=pk), count],
            )
            return cursor.fetchone()[0]
    if connection.vendor != "sqlite":
        raise NotImplementedError(f"draw_ids on {connection.vendor}")
    # The counter holds the largest id the table ever had (a table that never had a row has none
    # yet); the table's largest id is read too, for a counter reset under its rows. Moved then
    # read in one transaction, which holds SQLite's write lock from the move (SQLite before
    # 3.35 has no RETURNING).
    quote = connection.ops.quote_name
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO sqlite_sequence (name, seq) SELECT %s, 0 "
            "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = %s)",
            [table, table],
        )
        cursor.execute(
            f"UPDATE sqlite_sequence SET seq = max(seq, (SELECT coalesce(max({quote(pk)}), 0) "
            f"FROM {quote(table)})) + %s WHERE name = %s",
            [count, table],
        )
        cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
        last = cursor.fetchone()[0]
    return list(range(last - count + 1, last + 1))


@dataclass(frozen=True)
class PreparedRows:
    """Rows of one model made ready by ``prepare_rows`` and written by ``write_rows``: on
    PostgreSQL as the data of a COPY, elsewhere as the values of INSERTs."""

    model: type[models.Model]
    # Database columns, the primary key first when the rows bring theirs.
    names: list[str]
    count: int
    copy_data: bytes | None = None
    values: list[tuple] | None = None


def insert_rows(
    *,
    model: type[models.Model],
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    returning: bool = True,
    ids: Sequence[int] | None = None,
) -> list[int]:
    """Insert ``rows`` (tuples of values in ``columns`` order) into ``model``'s table.

    Returns the new primary keys in the order of ``rows`` (an empty list when ``returning`` is
    False): ``ids`` when given (drawn with ``draw_ids``, one per row), else the database's. Values
    of JSON, date and other non-plain fields are prepared by their field; the rest are stored
    as given. Runs in the caller's transaction; no signals, no save().
    """
    if not rows:
        return []
    if ids is None and returning and connection.vendor == "postgresql":
        ids = draw_ids(model=model, count=len(rows))
    prepared = prepare_rows(model=model, columns=columns, rows=rows, ids=ids)
    new = write_rows(prepared, returning=returning and ids is None)
    if ids is not None:
        return list(ids) if returning else []
    return new


def prepare_rows(
    *,
    model: type[models.Model],
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    ids: Sequence[int] | None = None,
) -> PreparedRows:
    """``rows`` (as ``insert_rows`` takes them) made ready to write, with ``ids`` as their
    primary keys when given (else the column's default gives them when written).

    Runs no statement: on PostgreSQL the rows are encoded as COPY data with the adapters of the
    calling thread's connection, so a thread beside the one that writes can prepare them.
    """
    if ids is not None and len(ids) != len(rows):
        raise ValueError(f"{len(ids)} ids for {len(rows)} rows")
    connection.ensure_connection()
    fields = [_field(model, column) for column in columns]
    prepare = [
        (index, field) for index, field in enumerate(fields) if field.get_internal_type() not in _PLAIN_TYPES
    ]
    if prepare:
        prepared = [list(row) for row in rows]
        for index, field in prepare:
            if connection.vendor == "postgresql" and _plain_json(field):
                # JSON text, as COPY takes it (the ORM's way, a Jsonb wrapper per value through
                # Django's field API, costs ten times more).
                for values in prepared:
                    if values[index] is not None:
                        values[index] = json.dumps(values[index])
                continue
            for values in prepared:
                values[index] = field.get_db_prep_save(values[index], connection)
        rows = prepared
    extra_names, extra_values = _filled_columns(model, columns)
    names = [field.column for field in fields] + extra_names
    extra = tuple(extra_values)
    if ids is not None:
        names = [model._meta.pk.column, *names]
        full = [(pk, *row, *extra) for pk, row in zip(ids, rows, strict=True)]
    else:
        full = [(*row, *extra) for row in rows]
    if connection.vendor != "postgresql":
        return PreparedRows(model=model, names=names, count=len(full), values=full)
    buffer = io.BytesIO()
    with connection.cursor() as cursor, Copy(cursor.cursor, binary=False, writer=FileWriter(buffer)) as copy:
        for row in full:
            copy.write_row(row)
    return PreparedRows(model=model, names=names, count=len(full), copy_data=buffer.getvalue())


def write_rows(prepared: PreparedRows, *, returning: bool = False) -> list[int]:
    """Write rows ``prepare_rows`` made ready, in the caller's transaction; with ``returning``
    (rows without ids, not on PostgreSQL) the ids the database gave them, in row order."""
    if not prepared.count:
        return []
    quote = connection.ops.quote_name
    table = quote(prepared.model._meta.db_table)
    columns = ", ".join(quote(name) for name in prepared.names)
    if prepared.copy_data is not None:
        if returning:
            raise ValueError("COPY returns no ids: draw them first")
        statement = f"COPY {table} ({columns}) FROM STDIN"
        with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
            copy.write(prepared.copy_data)
        return []
    assert prepared.values is not None
    width = len(prepared.names)
    per_statement = max(1, min(1000, _max_params() // width))
    placeholder = "(" + ", ".join(["%s"] * width) + ")"
    head = f"INSERT INTO {table} ({columns}) VALUES "
    tail = f" RETURNING {quote(prepared.model._meta.pk.column)}" if returning else ""
    new: list[int] = []
    with connection.cursor() as cursor:
        for start in range(0, prepared.count, per_statement):
            chunk = prepared.values[start : start + per_statement]
            params = [value for row in chunk for value in row]
            cursor.execute(head + ", ".join([placeholder] * len(chunk)) + tail, params)
            if returning:
                new.extend(row[0] for row in cursor.fetchall())
    return new


@contextmanager
def foreign_keys_checked_by_statement() -> Iterator[None]:
    """Inside, on PostgreSQL, the foreign keys of the rows written are checked as each statement
    ends (SET CONSTRAINTS ALL IMMEDIATE), then deferred again as Django declares them.

    Django's foreign keys are checked at commit: after an import's last write the database
    would check tens of rows per answer alone, while nothing else can run. Checked by statement,
    the same work is spread over the writes, beside the reading and the text work. It is the
    same check: a row that breaks a key still fails, and the transaction with it.
    """
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    yield
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
