"""The work queue: which unit a person gets next at a stage, under a lease that expires.

The queue of a criterion is the items of its most recent sample that has items (a sample being
drawn or topped up keeps serving its previous items). A unit is handed out at a stage when one of
its slots there is free (no label, no live lease), the stage's prerequisite holds (a first label
to review, a disagreement to adjudicate), it has no imported label, and the person holds nothing
on it at another stage nor the other blind slot. A person asking again gets their own live lease
back first; units they skipped come after all the others. Order: theme, cluster, rank, unit id.

The slots that are open are stored (``annotation.workflow.open_slots``), in the queue's order by
an index, so that the next unit is read at the front of that index: the cost of a request does
not grow with the number of units waiting, and progress is read from counts kept with each label.

Two people never hold the same slot: the open slot is read with ``FOR UPDATE SKIP LOCKED`` on
PostgreSQL, so concurrent requests take different slots without waiting, and its lease mirror
(``held_until``) is set before the transaction ends, so a request that reads it afterwards skips
it; the slot's row (unique per unit, criterion, stage and slot) is the last guard. SQLite runs
every transaction as IMMEDIATE, which serialises them. Writers take a unit's locks in one order
(the unit, its open slots, its slot rows), so they never wait on each other in a circle.

Its length is one protocol of row locks: the claim under a lease, its fallbacks and the progress
counts it keeps in step.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

import annotation.workflow.open_slots as open_slots
from annotation import plain_rows
from annotation.access import roles_of
from annotation.models import (
    AnnotationMode,
    Answer,
    Assignment,
    Campaign,
    Criterion,
    Label,
    OpenSlot,
    Question,
    QueueTally,
    Sentence,
    Stage,
    Unit,
)
from annotation.workflow.rules import STAGE_ROLE, capacity, require_stage_role, stages_for
from annotation.workflow.state import previous_value

# A claim loses only to a label written without a lease in the same slot (the open slots are
# row-locked with SKIP LOCKED, so two claims never collide): look again a few times.
CLAIM_ATTEMPTS = 20


def lease_end(*, campaign: Campaign, now: datetime) -> datetime:
    """When a lease taken at ``now`` expires."""
    return now + timedelta(minutes=campaign.lease_minutes)


_A, _OS, _QT = Assignment._meta.db_table, OpenSlot._meta.db_table, QueueTally._meta.db_table
_FREE = "(q.held_until IS NULL OR q.held_until <= %(now)s)"
# The user's live lease at the stage on a slot still open (a first label withdrawn closes its
# review), latest first (the unit an undo gave back, then the one on screen): its open slot is
# held longer in the same statement (open slot first, then the slot row, the order every writer
# takes them in). A partial index on open leases serves it.
_MY_LEASE_SQL = (
    f"UPDATE {_OS} SET held_until = %(until)s WHERE id = ("
    f"SELECT q.id FROM {_A} a JOIN {_OS} q ON q.criterion_id = a.criterion_id AND q.unit_id = a.unit_id"
    " AND q.stage = a.stage AND q.slot = a.slot"
    " WHERE a.criterion_id = %(criterion)s AND a.stage = %(stage)s AND a.user_id = %(user)s"
    " AND a.label_id IS NULL AND a.expires_at > %(now)s{after}"
    " ORDER BY a.updated_at DESC, a.id DESC LIMIT 1) RETURNING unit_id, slot"
)
# Units the user may not be handed at the stage: labelled by them (at any stage, or the other
# blind slot), held by them under a live lease (at another stage, or the other blind slot: their
# own lease on this slot comes back by _MY_LEASE_SQL); with ``{skipped}``, also those they skipped
# here. A lease or label of theirs not yet committed is invisible here: the index of one slot per
# person and stage (``assignment_one_slot_per_person``) refuses the second claim, which looks again.
# Checked for each open slot the scan reads (a few), on that index (unit, criterion, then the user):
# "OFFSET 0" keeps PostgreSQL from turning the check into an anti-join, which it plans, whenever
# its statistics count few rows for the person (a new one, or a table analyzed before their day),
# as a read of all the person's slots on every claim (1,201 rows after 1,200 labels: see
# docs/queue.md).
_NOT_MINE = (
    f"NOT EXISTS (SELECT 1 FROM {_A} m WHERE m.unit_id = q.unit_id AND m.criterion_id = %(criterion)s"
    " AND m.user_id = %(user)s AND (m.label_id IS NOT NULL"
    " OR m.expires_at > %(now)s{skipped}) LIMIT 1 OFFSET 0)"
)
# The front of the stage's queue: the first free open slot in the queue's order (theme, cluster,
# rank, unit, slot) the user may take. Only rows under a live lease and the user's own units
# are read past, so the cost does not grow with the queue.
_FRONT_SQL = (
    f"SELECT q.id, q.unit_id, q.slot, q.held_until FROM {_OS} q"
    f" WHERE q.criterion_id = %(criterion)s AND q.stage = %(stage)s AND {_FREE}{{after}} AND "
    + _NOT_MINE.format(skipped=" OR (m.stage = %(stage)s AND m.skipped_at IS NOT NULL)")
    + " ORDER BY q.theme, q.cluster, q.rank, q.unit_id, q.slot LIMIT 1{lock}"
)
# Then the units the user skipped at the stage, in the order they skipped them, each on the slot
# they skipped (their row there: one slot per person and stage).
_SKIPPED_SQL = (
    f"SELECT q.id, q.unit_id, q.slot, q.held_until FROM {_A} k JOIN {_OS} q"
    " ON q.criterion_id = k.criterion_id AND q.unit_id = k.unit_id AND q.stage = k.stage"
    " AND q.slot = k.slot"
    " WHERE k.criterion_id = %(criterion)s AND k.stage = %(stage)s AND k.user_id = %(user)s"
    f" AND k.label_id IS NULL AND k.skipped_at IS NOT NULL AND {_FREE}{{after}} AND "
    + _NOT_MINE.format(skipped="")
    + " ORDER BY k.skipped_at, q.theme, q.cluster, q.rank, q.unit_id, q.slot LIMIT 1{lock}"
)
# Where rows can be locked (PostgreSQL), either of them is held until the new lease's end in the
# same statement (one round trip): it returns the unit, the slot, and the hold it had before (not
# None: a lease row is there, expired, to take over). SQLite, which cannot return a joined
# table's columns from an UPDATE, reads the row and then updates it.
_HOLD_SQL = (
    "WITH picked AS ({pick}) UPDATE " + _OS + " SET held_until = %(until)s FROM picked"
    f" WHERE {_OS}.id = picked.id RETURNING picked.unit_id, picked.slot, picked.held_until"
)


# A person's own lease extended; a slot's expired lease taken over; a slot's row inserted. In SQL,
# as the other statements of the claim: Django took ten times longer to build them (0.35 ms each)
# than the database to run them, on every label.
_SLOT = "unit_id = %(unit)s AND criterion_id = %(criterion)s AND stage = %(stage)s AND slot = %(slot)s"
_EXTEND_SQL = (
    f"UPDATE {_A} SET expires_at = %(until)s, updated_at = %(now)s"
    f" WHERE {_SLOT} AND user_id = %(user)s AND label_id IS NULL"
)
_TAKE_OVER_SQL = (
    f"UPDATE {_A} SET user_id = %(user)s, label_id = %(label)s, expires_at = %(expires)s,"
    f" skipped_at = NULL, updated_at = %(now)s WHERE {_SLOT} AND label_id IS NULL AND expires_at <= %(now)s"
)
_INSERT_SQL = (
    f"INSERT INTO {_A} (unit_id, criterion_id, stage, slot, user_id, label_id, expires_at, skipped_at,"
    " updated_at) VALUES (%(unit)s, %(criterion)s, %(stage)s, %(slot)s, %(user)s, %(label)s, %(expires)s,"
    " NULL, %(now)s)"
)


@functools.cache
def _sql(template: str, *, after: bool, lock: bool) -> str:
    pick = template.format(
        after=" AND q.unit_id <> %(after)s" if after else "",
        lock=" FOR UPDATE OF q SKIP LOCKED" if lock else "",
    )
    return _HOLD_SQL.format(pick=pick) if lock else pick


def _params(*, user: User, criterion: Criterion, stage: str, now: datetime, **more: object) -> dict:
    adapt = connection.ops.adapt_datetimefield_value
    return {
        "criterion": criterion.pk,
        "stage": stage,
        "user": user.pk,
        "now": adapt(now),
        **{name: adapt(value) if isinstance(value, datetime) else value for name, value in more.items()},
    }


def _take(
    *, user: User, criterion: Criterion, stage: str, now: datetime, until: datetime, after: int | None
) -> tuple[int, bool] | None:
    """The unit to hand ``user`` now, leased to them (see :func:`next_unit`), and whether it is one
    they skipped coming back; None when none is left."""
    params = _params(user=user, criterion=criterion, stage=stage, now=now, until=until, after=after)
    lock = connection.features.has_select_for_update_skip_locked
    with connection.cursor() as cursor:
        cursor.execute(_MY_LEASE_SQL.format(after=" AND a.unit_id <> %(after)s" if after else ""), params)
        mine = cursor.fetchone()
        if mine is not None:
            cursor.execute(_EXTEND_SQL, {**params, "unit": mine[0], "slot": mine[1]})
            return mine[0], False
        row = None
        for template in (_FRONT_SQL, _SKIPPED_SQL):
            cursor.execute(_sql(template, after=after is not None, lock=lock), params)
            if (row := cursor.fetchone()) is not None:
                break
    if row is None:
        return None
    skipped = template is _SKIPPED_SQL
    if lock:
        unit_id, slot, held_until = row
    else:
        open_id, unit_id, slot, held_until = row
        OpenSlot.objects.filter(pk=open_id).update(held_until=until)
    # A slot with a lease row (expired: it was free) is taken over; one without gets its row.
    claim_slot(
        user=user,
        unit_id=unit_id,
        criterion=criterion,
        stage=stage,
        slot=slot,
        now=now,
        until=until,
        has_row=held_until is not None,
    )
    return unit_id, skipped


def available_count(*, user: User, criterion: Criterion, stage: str, now: datetime) -> int:
    """How many units ``next_unit`` could hand ``user`` at ``stage`` now (their own leases included).

    Counts the stage's open slots (linear in them: for pages that list queues, not for the label
    path, which never counts). :func:`available_counts` of one queue.
    """
    return available_counts(user=user, criteria=[criterion], stages=[stage], now=now).get(
        (criterion.pk, stage), 0
    )


def available_counts(
    *, user: User, criteria: Sequence[Criterion], stages: Collection[str], now: datetime
) -> dict[tuple[int, str], int]:
    """:func:`available_count` of every criterion of ``criteria`` at every stage of ``stages``
    (of any campaigns), in one query whatever their number: ``{(criterion id, stage): units}``,
    the pairs with no unit for ``user`` left out. For pages that list many queues at once.

    A unit counts when one of its open slots at the stage is free or held by the person (a unit
    they opened and have not labelled yet still waits for them), and they neither labelled it
    (at any stage) nor hold it at another stage or in the other blind slot."""
    if not criteria or not stages:
        return {}
    params: dict[str, Any] = {"user": user.pk, "now": connection.ops.adapt_datetimefield_value(now)}
    params.update({f"c{n}": criterion.pk for n, criterion in enumerate(criteria)})
    params.update({f"s{n}": stage for n, stage in enumerate(stages)})
    sql = (
        f"SELECT q.criterion_id, q.stage, COUNT(DISTINCT q.unit_id) FROM {_OS} q"
        f" WHERE q.criterion_id IN ({', '.join(f'%(c{n})s' for n in range(len(criteria)))})"
        f" AND q.stage IN ({', '.join(f'%(s{n})s' for n in range(len(stages)))}) AND ({_FREE}"
        f" OR EXISTS (SELECT 1 FROM {_A} h WHERE h.unit_id = q.unit_id AND h.criterion_id = q.criterion_id"
        " AND h.stage = q.stage AND h.slot = q.slot AND h.user_id = %(user)s AND h.label_id IS NULL))"
        f" AND NOT EXISTS (SELECT 1 FROM {_A} m WHERE m.unit_id = q.unit_id"
        " AND m.criterion_id = q.criterion_id AND m.user_id = %(user)s AND (m.label_id IS NOT NULL"
        " OR (m.expires_at > %(now)s AND NOT (m.stage = q.stage AND m.slot = q.slot))))"
        " GROUP BY q.criterion_id, q.stage"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {(criterion_id, stage): count for criterion_id, stage, count in cursor.fetchall()}


def next_unit(
    *,
    user: User,
    criterion: Criterion,
    stage: str,
    after: int | None = None,
    roles: Collection[str] | None = None,
) -> Unit | None:
    """The unit ``user`` works on next at ``stage`` for ``criterion``, leased to them; None when done.

    ``after`` leaves that unit out: the page prefetches the unit following the one on screen, so
    the person then holds two leases (never more: asking again returns the same prefetched one).

    The user's own live lease comes back first (and is extended), so asking again never loses
    it. Otherwise the first free open slot of the stage's queue (see the module docstring and
    :mod:`annotation.workflow.open_slots`) is leased for the campaign's ``lease_minutes``; an
    expired lease frees its slot for anyone; units the user skipped come after all the others.
    The unit comes with its answer, question and sentence loaded, and says what the person did
    with it before: ``previous_value``, the answer they gave at this stage and withdrew (None when
    they gave none), and ``came_back_skipped``, whether it is a unit they skipped coming back (in
    the same query). Raises PermissionDenied without
    the stage's role and WorkflowError for a stage the campaign's mode does not have (``roles``:
    the user's roles already read in this request, see :func:`require_stage_role`). A constant
    number of queries, whatever the size of the campaign; None only when no open slot is left
    for the user.
    """
    return _hand_out(user=user, criterion=criterion, stage=stage, after=after, shown=None, roles=roles)[0]


def next_unit_after_shown(
    *,
    user: User,
    criterion: Criterion,
    stage: str,
    shown: int,
    roles: Collection[str] | None = None,
) -> tuple[Unit | None, bool]:
    """After a label given while the page already shows ``shown`` (the unit it prefetched): the
    unit that follows it, and whether it does follow it.

    When ``shown`` is still the person's current unit (their latest live lease, extended as
    :func:`next_unit` would), the unit after it is leased to them too, as ``next_unit(after=shown)``
    would, and comes with True (None and True when none follows): the page keeps ``shown`` and
    holds that one for the next label, and nobody renders ``shown`` a second time. Otherwise
    (the lease expired and someone took the unit, an undo gave another back) it is what
    :func:`next_unit` hands them now, with False. In one transaction; the same queries as
    ``next_unit`` plus the two of the lease on ``shown`` extended.
    """
    return _hand_out(user=user, criterion=criterion, stage=stage, after=None, shown=shown, roles=roles)


def _hand_out(
    *,
    user: User,
    criterion: Criterion,
    stage: str,
    after: int | None,
    shown: int | None,
    roles: Collection[str] | None,
) -> tuple[Unit | None, bool]:
    campaign = criterion.campaign
    require_stage_role(user=user, campaign=campaign, stage=stage, roles=roles)
    for _ in range(CLAIM_ATTEMPTS):
        now = timezone.now()
        until = lease_end(campaign=campaign, now=now)
        try:
            with transaction.atomic():
                taken = _take(user=user, criterion=criterion, stage=stage, now=now, until=until, after=after)
                follows = shown is not None and taken is not None and taken[0] == shown
                if follows:
                    taken = _take(
                        user=user, criterion=criterion, stage=stage, now=now, until=until, after=shown
                    )
                if taken is None:
                    return None, follows
                unit_id, skipped = taken
                unit = _unit_handed_out(unit_id=unit_id, user=user, criterion=criterion, stage=stage)
                unit.came_back_skipped = skipped  # type: ignore[attr-defined]
                return unit, follows
        except IntegrityError:
            # A label written without a lease filled the slot meanwhile: look again.
            continue
    return None, False


@functools.cache
def _unit_sql() -> str:
    """A unit with its answer, question and sentence; then, appended by the caller, the answer
    its person gave before (``previous_value``)."""
    unit, answer, question, sentence = (model._meta.db_table for model in (Unit, Answer, Question, Sentence))
    return (
        f"SELECT {plain_rows.columns(Unit, unit)}, {plain_rows.columns(Answer, 'a')},"
        f" {plain_rows.columns(Question, 'q')}, {plain_rows.columns(Sentence, 's')}, ({{previous}})"
        f" FROM {unit} JOIN {answer} a ON a.id = {unit}.answer_id JOIN {question} q ON q.id = a.question_id"
        f" LEFT JOIN {sentence} s ON s.id = {unit}.sentence_id WHERE {unit}.id = %s"
    )


def _unit_handed_out(*, unit_id: int, user: User, criterion: Criterion, stage: str) -> Unit:
    """The unit handed out, with its answer, question and sentence, and ``previous_value``: in
    plain SQL (``plain_rows``), as it is read on every label."""
    previous = previous_value(user_id=user.pk, criterion=criterion, stage=stage)
    with connection.cursor() as cursor:
        cursor.execute(_unit_sql().format(previous=previous.sql), [*previous.params, unit_id])
        row = cursor.fetchone()
    if row is None:
        raise Unit.DoesNotExist(f"No unit {unit_id}.")
    unit, answer, question, sentence = plain_rows.instances(row, Unit, Answer, Question, Sentence)
    assert isinstance(unit, Unit) and isinstance(answer, Answer)
    answer.question = question  # type: ignore[assignment]
    unit.answer = answer
    unit.sentence = sentence  # type: ignore[assignment]
    unit.previous_value = row[-1]  # type: ignore[attr-defined]
    return unit


def claim_slot(
    *,
    user: User,
    unit_id: int,
    criterion: Criterion,
    stage: str,
    slot: int,
    now: datetime,
    until: datetime,
    label: Label | None = None,
    has_row: bool = True,
) -> None:
    """Take a free slot for ``user``: lease it until ``until``, or fill it with ``label``.

    An expired lease in the slot is taken over by a conditional update, else the slot's row is
    inserted (``has_row`` False skips the update when the caller knows there is no row). Raises
    IntegrityError when someone else holds or filled the slot meanwhile (the caller's transaction
    is then unusable and must be rolled back). Call inside a transaction.
    """
    params = _params(
        user=user,
        criterion=criterion,
        stage=stage,
        now=now,
        unit=unit_id,
        slot=slot,
        label=label.pk if label else None,
        expires=None if label else until,
    )
    with connection.cursor() as cursor:
        if has_row:
            cursor.execute(_TAKE_OVER_SQL, params)
            if cursor.rowcount:
                return
        cursor.execute(_INSERT_SQL, params)


def skip(
    *,
    user: User,
    criterion: Criterion,
    stage: str,
    unit_id: int,
    roles: Collection[str] | None = None,
) -> bool:
    """Give back ``user``'s lease on the unit; it comes back to them only after every other unit.

    Others may take the unit at once. False when the user held no live lease on it (already
    skipped, expired or labelled): nothing changes then. ``roles`` as in :func:`next_unit`.
    """
    require_stage_role(user=user, campaign=criterion.campaign, stage=stage, roles=roles)
    now = timezone.now()
    mine = Assignment.objects.filter(
        unit_id=unit_id,
        criterion=criterion,
        stage=stage,
        user_id=user.pk,
        label__isnull=True,
        expires_at__gt=now,
    )
    with transaction.atomic():
        for slot in mine.values_list("slot", flat=True):
            open_slots.hold(criterion=criterion, unit_id=unit_id, stage=stage, slot=slot, until=now)
        released = mine.update(expires_at=now, skipped_at=now, updated_at=now)
    return bool(released)


@dataclass(frozen=True)
class StageProgress:
    """Where a stage stands on the current sample: the user's labels, everyone's, and the total,
    and what accounts for the rest of the total: slots held by others under a live lease (until
    ``held_until`` at the latest), units already final by an imported label, and the slots left
    for others (see :attr:`left_for_others`)."""

    stage: str
    mine: int
    filled: int
    total: int | None
    sample_size: int
    held: int = 0
    held_until: datetime | None = None
    imported: int = 0

    @property
    def percent(self) -> int | None:
        if not self.total:
            return None
        return min(100, round(100 * self.filled / self.total))

    @property
    def by_others(self) -> int:
        return self.filled - self.mine

    @property
    def imported_slots(self) -> int:
        """Slots of the total that imported labels make final (the first stage only: later stages
        count only units that have a first label, which imported units never get)."""
        if self.total is None or self.stage != Stage.LABEL or not self.sample_size:
            return 0
        return self.imported * (self.total // self.sample_size)

    @property
    def left_for_others(self) -> int | None:
        """Slots neither filled, held nor imported: units still open, to this person or to others
        (the second blind label of a unit they labelled, a unit they worked on at another stage)."""
        if self.total is None:
            return None
        return max(0, self.total - self.filled - self.held - self.imported_slots)


# The counts of the criterion (a few rows: see annotation.workflow.open_slots), and the open
# slots of the stage others hold under a live lease, read from the partial index on open leases.
_PROGRESS_SQL = (
    f"SELECT kind, user_id, filled, settled, NULL FROM {_QT} WHERE criterion_id = %(criterion)s"
    " UNION ALL SELECT 'held', NULL, COUNT(*), 0, MAX(a.expires_at)"
    f" FROM {_A} a JOIN {_OS} q ON q.criterion_id = a.criterion_id AND q.unit_id = a.unit_id"
    " AND q.stage = a.stage AND q.slot = a.slot"
    " WHERE a.criterion_id = %(criterion)s AND a.stage = %(stage)s AND a.label_id IS NULL"
    " AND a.expires_at > %(now)s AND a.user_id <> %(user)s"
)


def _moment(value: object) -> datetime | None:
    """A time read by a raw query: SQLite gives a naive UTC string, PostgreSQL an aware datetime."""
    if value is None:
        return None
    moment = parse_datetime(value) if isinstance(value, str) else value
    if not isinstance(moment, datetime):
        return None
    return timezone.make_aware(moment, UTC) if timezone.is_naive(moment) else moment


@dataclass(frozen=True)
class CriterionProgress:
    """Where the whole criterion stands on its current sample, every stage and person counted."""

    settled: int
    total: int
    blind: bool

    @property
    def percent(self) -> int | None:
        if not self.total:
            return None
        return min(100, round(100 * self.settled / self.total))


def _progress(
    *, user: User, criterion: Criterion, stage: str, rows: list[tuple]
) -> tuple[StageProgress, CriterionProgress]:
    mode = criterion.campaign.annotation_mode
    size = imported = mine = filled = first = settled = held = 0
    held_until = None
    for kind, user_id, count, done, moment in rows:
        count, done = int(count), int(done)
        settled += done
        if kind == QueueTally.SAMPLE:
            size = count
        elif kind == QueueTally.IMPORTED:
            imported = count
        elif kind == "held":
            held, held_until = count, _moment(moment)
        else:
            first += count if kind == Stage.LABEL else 0
            filled += count if kind == stage else 0
            mine += count if kind == stage and user_id == user.pk else 0
    if stage == Stage.LABEL:
        total: int | None = size * capacity(mode=mode, stage=stage)
    elif stage == Stage.REVIEW:
        total = first
    else:
        total = None
    progress = StageProgress(
        stage=stage,
        mine=mine,
        filled=filled,
        total=total,
        sample_size=size,
        held=held,
        held_until=held_until,
        imported=imported,
    )
    blind = mode == AnnotationMode.BLIND_DOUBLE
    return progress, CriterionProgress(settled=settled, total=size, blind=blind)


def work_progress(*, user: User, criterion: Criterion, stage: str) -> tuple[StageProgress, CriterionProgress]:
    """Progress of ``stage`` on the criterion's current sample, and of the whole criterion, in one
    query of a few rows whatever the size of the sample.

    The stage: ``mine``, slots the user filled; ``filled``, slots filled by anyone; ``total``, the
    slots the stage will have (sample size x slots for the first stage, one review per first
    label), None for adjudication (it depends on disagreements still to come); ``held``, slots
    others hold under a live lease, the last of which expires at ``held_until``; ``imported``,
    units of the sample with an imported (final) label. The criterion: units settled (a final
    label in review mode; both labels given in blind double mode, whose agreement is no business
    of the people labelling) out of the sample's size.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            _PROGRESS_SQL, _params(user=user, criterion=criterion, stage=stage, now=timezone.now())
        )
        rows = cursor.fetchall()
    return _progress(user=user, criterion=criterion, stage=stage, rows=rows)


def stage_progress(*, user: User, criterion: Criterion, stage: str) -> StageProgress:
    """The stage's part of :func:`work_progress`."""
    return work_progress(user=user, criterion=criterion, stage=stage)[0]


def criterion_progress(*, criterion: Criterion) -> CriterionProgress:
    """The criterion's part of :func:`work_progress`: units of its current sample that are done."""
    rows = list(QueueTally.objects.filter(criterion=criterion).values_list("kind", "filled", "settled"))
    size = sum(filled for kind, filled, _ in rows if kind == QueueTally.SAMPLE)
    blind = criterion.campaign.annotation_mode == AnnotationMode.BLIND_DOUBLE
    return CriterionProgress(settled=sum(settled for *_, settled in rows), total=size, blind=blind)


def criteria_progress(*, criteria: Sequence[Criterion]) -> dict[int, CriterionProgress]:
    """:func:`criterion_progress` of each of ``criteria`` (their campaigns loaded), by criterion id,
    in one query whatever their number."""
    rows = QueueTally.objects.filter(criterion_id__in=[c.pk for c in criteria]).values_list(
        "criterion_id", "kind", "filled", "settled"
    )
    size: dict[int, int] = {}
    settled: dict[int, int] = {}
    for criterion_id, kind, filled, done in rows:
        settled[criterion_id] = settled.get(criterion_id, 0) + done
        if kind == QueueTally.SAMPLE:
            size[criterion_id] = size.get(criterion_id, 0) + filled
    return {
        c.pk: CriterionProgress(
            settled=settled.get(c.pk, 0),
            total=size.get(c.pk, 0),
            blind=c.campaign.annotation_mode == AnnotationMode.BLIND_DOUBLE,
        )
        for c in criteria
    }


@dataclass(frozen=True)
class Queue:
    """One queue a person can work in: criterion x stage, with what is left for them."""

    criterion: Criterion
    stage: str
    available: int
    progress: StageProgress


def my_queues(*, user: User, campaign: Campaign) -> list[Queue]:
    """Every criterion x stage of the campaign the user's roles allow, with units left for them.

    ``available`` counts the units ``next_unit`` could hand them now (their own leases included).
    Three queries per queue.
    """
    roles = roles_of(user=user, campaign=campaign)
    stages = [s for s in stages_for(mode=campaign.annotation_mode) if STAGE_ROLE[s] in roles]
    now = timezone.now()
    queues = []
    for criterion in campaign.criteria.order_by("name"):
        criterion.campaign = campaign
        for stage in stages:
            queues.append(
                Queue(
                    criterion=criterion,
                    stage=stage,
                    available=available_count(user=user, criterion=criterion, stage=stage, now=now),
                    progress=stage_progress(user=user, criterion=criterion, stage=stage),
                )
            )
    return queues
