"""The work queue stored: the open slots of a criterion's current sample and its progress counts.

Handing out the next unit and showing progress after every label must cost the same whatever the
size of the sample, so neither may test or count every unit of it. Two derived tables make that
possible (see ``docs/architecture.md``, "The work queue"):

- ``OpenSlot``: one row per slot no label fills yet (first-stage slots of every unit of the
  sample without an imported label, a review slot once the first label is in, an adjudication
  slot once two labels disagree), in the queue's order by an index, with the time its live
  lease ends (``held_until``). The next unit is the first row of that index whose lease is over,
  read with ``FOR UPDATE SKIP LOCKED``: concurrent requests take different rows without waiting.
- ``QueueTally``: per person and stage, the slots they filled and the units their labels
  settled; for the sample, its size, the units settled when the counts were set, and the units
  with an imported label. Progress sums a few rows.

Both are derived from the sample items, the slots (``Assignment``) and the labels, and are set in
one pass whenever the current sample changes or an import writes labels (:func:`rebuild`, after
which PostgreSQL's statistics of the open slots are refreshed), then kept in step by each write
on one unit (:func:`sync_unit`, :func:`count_write`), inside the write's transaction, with the
unit's row locked. ``tests/annotation/workflow/test_open_slots.py``
checks, after random sequences of every write, that the stored rows equal a rebuild from scratch.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from datetime import datetime

from django.db import connection, transaction
from django.db.models import QuerySet

from annotation.models import (
    AnnotationMode,
    Assignment,
    Criterion,
    Label,
    OpenSlot,
    QueueTally,
    SampleItem,
    Stage,
)
from annotation.sampling.current import CURRENT_SAMPLE_SQL
from annotation.workflow.rules import capacity, stages_for

_A, _L, _SI = Assignment._meta.db_table, Label._meta.db_table, SampleItem._meta.db_table
_OS, _QT = OpenSlot._meta.db_table, QueueTally._meta.db_table


def slots_of(*, mode: str) -> list[tuple[str, int]]:
    """Every (stage, slot) a unit has in this annotation mode."""
    return [
        (stage, n) for stage in stages_for(mode=mode) for n in range(1, capacity(mode=mode, stage=stage) + 1)
    ]


def second_slot(*, mode: str) -> tuple[str, int]:
    """The slot whose label is compared with the first one: the other blind label, or the review."""
    return (Stage.LABEL, 2) if mode == AnnotationMode.BLIND_DOUBLE else (Stage.REVIEW, 1)


def is_settled(*, mode: str, filled: Mapping[tuple[str, int], int]) -> bool:
    """Whether a unit is done given its filled slots' values, as :func:`settled_sql` counts it:
    both blind labels given (whatever their values: their agreement is no business of the people
    labelling), or, in review mode, a review that confirms the first label or an adjudication."""
    if mode == AnnotationMode.BLIND_DOUBLE:
        return (Stage.LABEL, 1) in filled and (Stage.LABEL, 2) in filled
    if (Stage.ADJUDICATION, 1) in filled:
        return True
    first, review = filled.get((Stage.LABEL, 1)), filled.get((Stage.REVIEW, 1))
    return first is not None and first == review


def _value(unit: str, stage: str, slot: int) -> str:
    return (
        f"(SELECT la.value FROM {_A} a JOIN {_L} la ON la.id = a.label_id WHERE a.unit_id = {unit}"
        f" AND a.criterion_id = %(criterion)s AND a.stage = '{stage}' AND a.slot = {slot:d})"
    )


@functools.cache
def _derived_sql(*, mode: str, one_unit: bool) -> str:
    """SELECT of the open slots of the current sample (of one unit: ``%(unit)s``), as rows of
    ``OpenSlot``: the one definition of which slots are open."""
    stages = " UNION ALL ".join(
        f"SELECT '{stage}' AS stage, {slot:d} AS slot" for stage, slot in slots_of(mode=mode)
    )
    first, second = _value("si.unit_id", Stage.LABEL.value, 1), _value("si.unit_id", *second_slot(mode=mode))
    prerequisite = (
        f"(s.stage = '{Stage.LABEL.value}'"
        f" OR (s.stage = '{Stage.REVIEW.value}' AND {first} IS NOT NULL)"
        f" OR (s.stage = '{Stage.ADJUDICATION.value}' AND {first} <> {second}))"
    )
    return (
        "SELECT %(criterion)s AS criterion_id, s.stage, s.slot, si.unit_id, si.theme, si.cluster, si.rank,"
        f" (SELECT h.expires_at FROM {_A} h WHERE h.unit_id = si.unit_id AND h.criterion_id = %(criterion)s"
        " AND h.stage = s.stage AND h.slot = s.slot AND h.label_id IS NULL) AS held_until"
        f" FROM {_SI} si CROSS JOIN ({stages}) s"
        f" WHERE si.sample_id = {CURRENT_SAMPLE_SQL}"
        + (" AND si.unit_id = %(unit)s" if one_unit else "")
        + f" AND NOT EXISTS (SELECT 1 FROM {_L} i WHERE i.unit_id = si.unit_id"
        " AND i.criterion_id = %(criterion)s AND i.stage = %(imported)s)"
        f" AND NOT EXISTS (SELECT 1 FROM {_A} f WHERE f.unit_id = si.unit_id"
        " AND f.criterion_id = %(criterion)s AND f.stage = s.stage AND f.slot = s.slot"
        " AND f.label_id IS NOT NULL)"
        f" AND {prerequisite}"
    )


_COLUMNS = "criterion_id, stage, slot, unit_id, theme, cluster, rank, held_until"


@functools.cache
def _insert_sql(*, mode: str, one_unit: bool) -> str:
    """INSERT of the open slots :func:`_derived_sql` finds and the table lacks."""
    derived = _derived_sql(mode=mode, one_unit=one_unit)
    # "WHERE true" tells SQLite's parser that ON CONFLICT belongs to the INSERT.
    return (
        f"INSERT INTO {_OS} ({_COLUMNS}) SELECT {_COLUMNS} FROM ({derived}) d"
        " WHERE true ON CONFLICT DO NOTHING"
    )


@functools.cache
def _delete_closed_sql(*, mode: str) -> str:
    """DELETE of the unit's stored open slots that are open no more."""
    derived = _derived_sql(mode=mode, one_unit=True)
    return (
        f"DELETE FROM {_OS} WHERE criterion_id = %(criterion)s AND unit_id = %(unit)s"
        f" AND (stage, slot) NOT IN (SELECT d.stage, d.slot FROM ({derived}) d)"
    )


@functools.cache
def settled_sql(*, mode: str) -> str:
    """SELECT of the current sample's size and how many of its units are settled (see
    :func:`is_settled`; a unit with an imported label is settled too)."""

    # One pass over the criterion's filled slots grouped by unit, joined to the sample by hash.
    def value(stage: str, slot: int) -> str:
        return f"MAX(CASE WHEN a.stage = '{stage}' AND a.slot = {slot} THEN la.value END)"

    label, review, adjudication = Stage.LABEL.value, Stage.REVIEW.value, Stage.ADJUDICATION.value
    if mode == AnnotationMode.BLIND_DOUBLE:
        done = f"COUNT(DISTINCT CASE WHEN a.stage = '{label}' THEN a.slot END) = 2"
    else:
        done = (
            f"COUNT(CASE WHEN a.stage = '{adjudication}' THEN 1 END) > 0"
            f" OR {value(label, 1)} = {value(review, 1)}"
        )
    settled = (
        f"SELECT a.unit_id FROM {_A} a JOIN {_L} la ON la.id = a.label_id"
        f" WHERE a.criterion_id = %(criterion)s GROUP BY a.unit_id HAVING {done}"
        f" UNION SELECT unit_id FROM {_L} WHERE criterion_id = %(criterion)s AND stage = %(imported)s"
    )
    return (
        "SELECT COUNT(*), COUNT(d.unit_id)"
        f" FROM {_SI} si LEFT JOIN ({settled}) d ON d.unit_id = si.unit_id"
        f" WHERE si.sample_id = {CURRENT_SAMPLE_SQL}"
    )


_IN_SAMPLE = f"unit_id IN (SELECT unit_id FROM {_SI} WHERE sample_id = {CURRENT_SAMPLE_SQL})"
_FILLED_TALLY_SQL = (
    f"INSERT INTO {_QT} (criterion_id, kind, user_id, filled, settled)"
    f" SELECT %(criterion)s, stage, user_id, COUNT(*), 0 FROM {_A}"
    f" WHERE criterion_id = %(criterion)s AND label_id IS NOT NULL AND {_IN_SAMPLE}"
    " GROUP BY stage, user_id"
)
_IMPORTED_TALLY_SQL = (
    f"INSERT INTO {_QT} (criterion_id, kind, user_id, filled, settled)"
    f" SELECT %(criterion)s, '{QueueTally.IMPORTED}', NULL, COUNT(DISTINCT unit_id), 0 FROM {_L}"
    f" WHERE criterion_id = %(criterion)s AND stage = %(imported)s AND {_IN_SAMPLE}"
)
_COUNT_SQL = (
    f"INSERT INTO {_QT} (criterion_id, kind, user_id, filled, settled)"
    " VALUES (%(criterion)s, %(stage)s, %(user)s, %(filled)s, %(settled)s)"
    " ON CONFLICT (criterion_id, kind, user_id) DO UPDATE"
    f" SET filled = {_QT}.filled + excluded.filled, settled = {_QT}.settled + excluded.settled"
)


def _params(criterion: Criterion, **more: object) -> dict:
    return {"criterion": criterion.pk, "imported": Stage.IMPORTED.value, **more}


# A rebuild that deletes and inserts at least this many open slots refreshes their statistics;
# fewer are left to autovacuum, whose threshold on the table is the same (migration 0021).
ANALYZE_AFTER_ROWS = 2000


def analyze_after_commit() -> None:
    """Refresh PostgreSQL's statistics of the open slots once the current transaction commits (at
    once outside one): a rebuild replaces a sample's worth of rows, which autovacuum would count
    only at its next round (see the migration ``0021_queue_tables_autovacuum``). Nothing on SQLite.
    """
    if connection.vendor != "postgresql":
        return

    def analyze() -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {_OS}")

    transaction.on_commit(analyze)


def rebuild(*, criterion: Criterion, analyze: bool = True) -> int:
    """Set the criterion's open slots and counts from its current sample, slots and labels, and
    return how many open slots it deleted and inserted. With ``analyze``, when they are
    ``ANALYZE_AFTER_ROWS`` or more, the open slots' statistics are refreshed after the commit
    (:func:`analyze_after_commit`).

    Call inside the transaction that changes the current sample (a draw, a top-up) or writes
    imported labels; linear in the sample, once.
    """
    mode = criterion.campaign.annotation_mode
    params = _params(criterion)
    # By id: the migration that first fills the tables passes its own historical Criterion.
    changed, _ = OpenSlot.objects.filter(criterion_id=criterion.pk).delete()
    QueueTally.objects.filter(criterion_id=criterion.pk).delete()
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(mode=mode, one_unit=False), params)
        changed += max(cursor.rowcount, 0)
        cursor.execute(settled_sql(mode=mode), params)
        size, settled = cursor.fetchone()
        QueueTally.objects.create(
            criterion_id=criterion.pk, kind=QueueTally.SAMPLE, filled=size, settled=settled
        )
        cursor.execute(_FILLED_TALLY_SQL, params)
        cursor.execute(_IMPORTED_TALLY_SQL, params)
    if analyze and changed >= ANALYZE_AFTER_ROWS:
        analyze_after_commit()
    return changed


def rebuild_all(*, criteria: Iterable[Criterion]) -> None:
    """:func:`rebuild` for each criterion (an import touches every criterion of its campaign), the
    statistics refreshed once after them all when they changed enough."""
    changed = sum(rebuild(criterion=criterion, analyze=False) for criterion in criteria)
    if changed >= ANALYZE_AFTER_ROWS:
        analyze_after_commit()


def sync_unit(*, criterion: Criterion, unit_id: int) -> None:
    """Make the unit's open slots match its slots and labels after a write on it (two queries):
    slots closed are deleted, slots opened inserted, and the others left alone, so that a request
    looking for a free slot meanwhile never skips one that stays open.

    Call inside the write's transaction, with the unit's row locked (every label write locks it).
    """
    params = _params(criterion, unit=unit_id)
    mode = criterion.campaign.annotation_mode
    with connection.cursor() as cursor:
        cursor.execute(_delete_closed_sql(mode=mode), params)
        cursor.execute(_insert_sql(mode=mode, one_unit=True), params)


def count_write(*, criterion: Criterion, stage: str, user_id: int, filled: int, settled: int) -> None:
    """Move the person's counts at ``stage`` by ``filled`` slots and ``settled`` units (one query).

    Only writes on units of the current sample count: the caller knows (the unit's lock reads it).
    """
    if not filled and not settled:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            _COUNT_SQL,
            _params(criterion, stage=stage, user=user_id, filled=filled, settled=settled),
        )


def hold(*, criterion: Criterion, unit_id: int, stage: str, slot: int, until: datetime) -> None:
    """Mirror a lease taken, extended or ended on the slot: it is held until ``until``."""
    OpenSlot.objects.filter(criterion=criterion, unit_id=unit_id, stage=stage, slot=slot).update(
        held_until=until
    )


def release(*, leases: QuerySet[Assignment], now: datetime) -> int:
    """End the live leases ``leases`` selects and free their open slots; how many ended."""
    rows = list(leases.values_list("pk", "criterion_id", "unit_id", "stage", "slot"))
    for _, criterion_id, unit_id, stage, slot in rows:
        OpenSlot.objects.filter(criterion_id=criterion_id, unit_id=unit_id, stage=stage, slot=slot).update(
            held_until=now
        )
    Assignment.objects.filter(pk__in=[row[0] for row in rows]).update(expires_at=now, updated_at=now)
    return len(rows)
