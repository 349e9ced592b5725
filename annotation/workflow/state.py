"""What the append-only label history says about units: current labels, status and final label.

A person's current label at a stage is their latest row there; a row whose value is None
withdraws it (undo). From the current labels:

- an imported label is final;
- an adjudication is final;
- review mode: the review confirms (same value as the first label) -> final = that value; the
  review overrides -> the unit needs adjudication; no review yet -> no final label;
- blind double mode: two agreeing first labels -> final; two differing ones -> adjudication.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby

from django.db.models import Exists, IntegerField, OuterRef
from django.db.models.expressions import RawSQL

from annotation.models import AnnotationMode, Campaign, Criterion, Label, Stage, Unit

ID_CHUNK = 5000
_ROW_FIELDS = ("id", "unit_id", "user_id", "stage", "value", "comment", "created_at")


class Status(enum.StrEnum):
    NEEDS_LABEL = "needs_label"
    NEEDS_REVIEW = "needs_review"
    NEEDS_ADJUDICATION = "needs_adjudication"
    FINAL = "final"


@dataclass(frozen=True)
class CurrentLabel:
    """A person's label in force at a stage (or an imported label)."""

    label_id: int
    user_id: int | None
    stage: str
    value: int
    comment: str
    created_at: datetime


@dataclass(frozen=True)
class UnitState:
    """A unit's labels in force for one criterion, what it waits for and its final label."""

    unit_id: int
    mode: str
    first: tuple[CurrentLabel, ...] = ()
    review: CurrentLabel | None = None
    adjudication: CurrentLabel | None = None
    imported: CurrentLabel | None = None
    status: Status = Status.NEEDS_LABEL
    final: int | None = None

    @property
    def in_conflict(self) -> tuple[CurrentLabel, ...]:
        """The labels an adjudicator has to settle: the first label(s) and the overriding review."""
        if self.mode == AnnotationMode.REVIEW:
            return (*self.first[-1:], *([self.review] if self.review else []))
        return self.first[:2]

    @property
    def people(self) -> set[int]:
        """Ids of the people whose labels are in force on this unit."""
        current = (*self.first, self.review, self.adjudication)
        return {label.user_id for label in current if label is not None and label.user_id is not None}


def derive(*, unit_id: int, mode: str, rows: Iterable[tuple]) -> UnitState:
    """The state of one unit from its label rows (``_ROW_FIELDS`` tuples, in id order)."""
    latest: dict[tuple[str, int | None], tuple] = {}
    for row in rows:
        latest[(row[3], row[2])] = row
    current: dict[str, list[CurrentLabel]] = {}
    for label_id, _, user_id, stage, value, comment, created_at in sorted(latest.values()):
        if value is not None:
            current.setdefault(stage, []).append(
                CurrentLabel(label_id, user_id, stage, value, comment, created_at)
            )
    first = tuple(current.get(Stage.LABEL, ()))
    review = _last(current.get(Stage.REVIEW))
    adjudication = _last(current.get(Stage.ADJUDICATION))
    imported = _last(current.get(Stage.IMPORTED))
    status, final = _settle(
        mode=mode, first=first, review=review, adjudication=adjudication, imported=imported
    )
    return UnitState(
        unit_id=unit_id,
        mode=mode,
        first=first,
        review=review,
        adjudication=adjudication,
        imported=imported,
        status=status,
        final=final,
    )


def _last(labels: list[CurrentLabel] | None) -> CurrentLabel | None:
    return labels[-1] if labels else None


def _settle(
    *,
    mode: str,
    first: tuple[CurrentLabel, ...],
    review: CurrentLabel | None,
    adjudication: CurrentLabel | None,
    imported: CurrentLabel | None,
) -> tuple[Status, int | None]:
    if imported is not None:
        return Status.FINAL, imported.value
    if adjudication is not None:
        return Status.FINAL, adjudication.value
    if mode == AnnotationMode.BLIND_DOUBLE:
        if len(first) < 2:
            return Status.NEEDS_LABEL, None
        if first[0].value == first[1].value:
            return Status.FINAL, first[0].value
        return Status.NEEDS_ADJUDICATION, None
    if not first:
        return Status.NEEDS_LABEL, None
    if review is None:
        return Status.NEEDS_REVIEW, None
    if review.value == first[-1].value:
        return Status.FINAL, review.value
    return Status.NEEDS_ADJUDICATION, None


def _mode_of(criterion: Criterion) -> str:
    return criterion.campaign.annotation_mode


def _chunks(ids: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), ID_CHUNK):
        yield ids[start : start + ID_CHUNK]


def _rows(
    *, criterion: Criterion, unit_ids: Iterable[int] | None, human_only: bool = False
) -> Iterator[tuple]:
    """Label rows of ``criterion`` ordered by unit then id; one query (one per 5,000 unit ids)."""
    base = Label.objects.filter(criterion=criterion).order_by("unit_id", "id").values_list(*_ROW_FIELDS)
    if human_only:
        base = base.exclude(stage=Stage.IMPORTED)
    if unit_ids is None:
        yield from base.iterator(chunk_size=10_000)
        return
    for chunk in _chunks(sorted(set(unit_ids))):
        yield from base.filter(unit_id__in=chunk)


def unit_states(
    *, criterion: Criterion, unit_ids: Iterable[int] | None = None, human_only: bool = False
) -> dict[int, UnitState]:
    """State per unit id for ``criterion``, for the units that have at least one label row.

    ``unit_ids`` None: every labelled unit of the criterion. ``human_only`` leaves imported labels
    out (their units then look unlabelled): for questions about the people's own labels. Two
    queries (the campaign's mode and the labels; one more per 5,000 unit ids), whatever the
    number of units.
    """
    mode = _mode_of(criterion)
    rows = _rows(criterion=criterion, unit_ids=unit_ids, human_only=human_only)
    return {
        unit_id: derive(unit_id=unit_id, mode=mode, rows=unit_rows)
        for unit_id, unit_rows in groupby(rows, key=lambda r: r[1])
    }


def unit_state(*, unit_id: int, criterion: Criterion) -> UnitState:
    """The state of one unit for ``criterion`` (status ``needs_label`` when it has no label)."""
    rows = Label.objects.filter(criterion=criterion, unit_id=unit_id).order_by("id").values_list(*_ROW_FIELDS)
    return derive(unit_id=unit_id, mode=_mode_of(criterion), rows=rows)


def final_labels(*, criterion: Criterion, unit_ids: Iterable[int] | None = None) -> dict[int, int]:
    """Final human label (0 or 1) per unit id for ``criterion``; units without one are left out.

    Derived from the whole label history by the rule in this module's docstring. ``unit_ids``
    restricts the answer to those units. A constant number of queries (see :func:`unit_states`).
    """
    mode = _mode_of(criterion)
    finals: dict[int, int] = {}
    for unit_id, rows in groupby(_rows(criterion=criterion, unit_ids=unit_ids), key=lambda r: r[1]):
        state = derive(unit_id=unit_id, mode=mode, rows=rows)
        if state.final is not None:
            finals[unit_id] = state.final
    return finals


def status_counts(*, criterion: Criterion, states: dict[int, UnitState] | None = None) -> dict[str, int]:
    """How many labelled units of ``criterion`` stand at each :class:`Status` (``final``,
    ``needs_review``, ``needs_adjudication``, ``needs_label``: a blind unit with one label of two,
    or whose labels were all withdrawn), each present with 0 when none does: what a count of
    labels means for the estimates, which read the final ones only. ``states``: the criterion's
    :func:`unit_states` when read already; else the queries of :func:`unit_states`."""
    counts = dict.fromkeys((status.value for status in Status), 0)
    for state in (unit_states(criterion=criterion) if states is None else states).values():
        counts[state.status.value] += 1
    return counts


def campaign_unit_states(
    *, campaign: Campaign, labelled_by_people: bool = False
) -> dict[int, dict[int, UnitState]]:
    """State per unit id per criterion id, for every labelled unit of every criterion of
    ``campaign`` (imported labels included: they are final). ``labelled_by_people`` keeps only
    the units a person labelled for that criterion (an imported campaign's other units are not
    even read). One query, whatever the number of criteria and labels."""
    rows = (
        Label.objects.filter(criterion__campaign=campaign)
        .order_by("criterion_id", "unit_id", "id")
        .values_list("criterion_id", *_ROW_FIELDS)
    )
    if labelled_by_people:
        by_people = Label.objects.filter(
            criterion=OuterRef("criterion"), unit=OuterRef("unit"), user__isnull=False
        )
        rows = rows.filter(Exists(by_people))
    states: dict[int, dict[int, UnitState]] = {}
    # A row is (criterion id, *_ROW_FIELDS): the unit id is its third field.
    for (criterion_id, unit_id), unit_rows in groupby(
        rows.iterator(chunk_size=10_000), key=lambda r: (r[0], r[2])
    ):
        states.setdefault(criterion_id, {})[unit_id] = derive(
            unit_id=unit_id, mode=campaign.annotation_mode, rows=(row[1:] for row in unit_rows)
        )
    return states


def previous_value(*, user_id: int, criterion: Criterion, stage: str) -> RawSQL:
    """An expression for a query of units: the value of ``user_id``'s latest label with a value at
    ``stage`` on the unit, or None. On a unit handed to the person at that stage (where they hold
    no label in force) it is the answer they gave before and withdrew (undo).

    Written in SQL: it is part of every unit handed out, and Django took longer to build it as a
    subquery of the ORM (0.7 ms) than the whole unit's query took otherwise."""
    return RawSQL(
        f"SELECT l.value FROM {Label._meta.db_table} l WHERE l.unit_id = {Unit._meta.db_table}.id"
        " AND l.criterion_id = %s AND l.stage = %s AND l.user_id = %s AND l.value IS NOT NULL"
        " ORDER BY l.id DESC LIMIT 1",
        (criterion.pk, stage, user_id),
        output_field=IntegerField(),
    )
