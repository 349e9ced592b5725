"""Model instances read by plain SQL, for the few reads that run on every label.

Django builds the SQL of a query with joined models (``select_related``) anew on each call: for
the criterion with its campaign and guidelines, the unit with its answer, question and sentence,
the answer's sources with their chunks, that took three to four times as long as running the
statement. Here the columns of each model are listed once per process, and a row's values go
through the converters Django's compiler applies (JSON, and on SQLite times and booleans) before
``Model.from_db``: the instances are the ORM's own, related ones attached as ``select_related``
attaches them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import connection, models

M = TypeVar("M", bound=models.Model)


@functools.cache
def columns(model: type[models.Model], alias: str) -> str:
    """The select list of ``model``'s concrete fields, in their order, from the table ``alias``."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(field.column)}" for field in model._meta.concrete_fields)


# Per field that needs it: its position, its column and its converters.
Converting = list[tuple[int, Any, list[Callable]]]


@functools.cache
def _loaders(model: type[models.Model], vendor: str) -> tuple[list[str], int, Converting]:
    """The attribute names of ``model``'s concrete fields, the position of its primary key and,
    for the fields that need them, the converters of their database values (the backend's, then
    the field's, as the compiler applies them to a column)."""
    fields = model._meta.concrete_fields
    converting = []
    for position, field in enumerate(fields):
        column = field.get_col(model._meta.db_table)
        found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if found:
            converting.append((position, column, found))
    return [field.attname for field in fields], fields.index(model._meta.pk), converting


def width(model: type[models.Model]) -> int:
    """How many values of a row :func:`columns` gives for ``model``."""
    return len(model._meta.concrete_fields)


def instance(model: type[M], row: Sequence[Any], start: int = 0) -> M | None:
    """``model``'s instance from the values of ``row`` from ``start`` on (as :func:`columns`
    lists them); None when its primary key is NULL (an outer join that found nothing)."""
    names, pk, converting = _loaders(model, connection.vendor)
    values = list(row[start : start + len(names)])
    if values[pk] is None:
        return None
    for position, column, converters in converting:
        for convert in converters:
            values[position] = convert(values[position], column, connection)
    return model.from_db(connection.alias, names, values)


def instances(row: Sequence[Any], *kinds: type[models.Model]) -> list[models.Model | None]:
    """The instances of the models ``kinds`` from ``row``, whose values come one model after the
    other as :func:`columns` lists them (None for a model an outer join did not find)."""
    found: list[models.Model | None] = []
    start = 0
    for model in kinds:
        found.append(instance(model, row, start))
        start += width(model)
    return found
