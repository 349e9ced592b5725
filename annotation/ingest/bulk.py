"""Fast inserts of many rows of one model, returning their new ids in row order.

Django's bulk_create spends most of an import's time building model instances and preparing
every value of every field. Imports write tens of rows per answer, so rows come here as plain
tuples: on PostgreSQL they are streamed with COPY (ids drawn from the table's sequence first),
elsewhere they go as multi-row INSERT ... RETURNING statements. Columns left out get the
field's default, and auto_now / auto_now_add fields the current time, as the ORM would.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection, models
from django.utils import timezone

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


def insert_rows(
    *,
    model: type[models.Model],
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    returning: bool = True,
) -> list[int]:
    """Insert ``rows`` (tuples of values in ``columns`` order) into ``model``'s table.

    Returns the new primary keys in the order of ``rows`` (an empty list when ``returning`` is
    False). Values of JSON, date and other non-plain fields are prepared by their field; the
    rest are stored as given. Runs in the caller's transaction; no signals, no save().
    """
    if not rows:
        return []
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
    table = model._meta.db_table
    quote = connection.ops.quote_name
    if connection.vendor == "postgresql":
        return _copy(table=table, pk=model._meta.pk.column, names=names, rows=rows, extra=extra_values)
    width = len(names)
    per_statement = max(1, min(1000, _max_params() // width))
    placeholder = "(" + ", ".join(["%s"] * width) + ")"
    head = f"INSERT INTO {quote(table)} ({', '.join(quote(name) for name in names)}) VALUES "
    tail = f" RETURNING {quote(model._meta.pk.column)}" if returning else ""
    ids: list[int] = []
    extra = tuple(extra_values)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            params = [value for row in chunk for value in (*row, *extra)]
            cursor.execute(head + ", ".join([placeholder] * len(chunk)) + tail, params)
            if returning:
                ids.extend(row[0] for row in cursor.fetchall())
    return ids


def _copy(*, table: str, pk: str, names: list[str], rows: Sequence, extra: list[object]) -> list[int]:
    quote = connection.ops.quote_name
    extra_values = tuple(extra)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [table, pk, len(rows)],
        )
        ids = [row[0] for row in cursor.fetchall()]
        columns = ", ".join(quote(name) for name in [pk, *names])
        with cursor.cursor.copy(f"COPY {quote(table)} ({columns}) FROM STDIN") as copy:
            for pk_value, row in zip(ids, rows, strict=True):
                copy.write_row((pk_value, *row, *extra_values))
    return ids


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
