"""The work queue: which unit a person gets next at a stage, under a lease that expires.

The queue of a criterion is the items of its most recent sample that has items (a sample being
drawn or topped up keeps serving its previous items). A unit is handed out at a stage when one of
its slots there is free (no label, no live lease), the stage's prerequisite holds (a first label
to review, a disagreement to adjudicate), it has no imported label, and the person holds nothing
on it at another stage nor the other blind slot. A person asking again gets their own live lease
back first; units they skipped come after all the others. Order: theme, cluster, rank, unit id.

Two people never hold the same slot: a lease is taken by inserting the slot's row (unique per
unit, criterion, stage and slot) or by a conditional update of an expired one, and the candidate
row is read with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL so concurrent requests pick different
units instead of colliding. SQLite runs every transaction as IMMEDIATE, which serialises them.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.access import roles_of
from annotation.current_sample import CURRENT_SAMPLE_SQL
from annotation.models import (
    AnnotationMode,
    Assignment,
    Campaign,
    Criterion,
    Label,
    SampleItem,
    Stage,
    Unit,
)
from annotation.workflow.rules import STAGE_ROLE, capacity, require_stage_role, stages_for

CLAIM_ATTEMPTS = 5


def lease_end(*, campaign: Campaign, now: datetime) -> datetime:
    """When a lease taken at ``now`` expires."""
    return now + timedelta(minutes=campaign.lease_minutes)


# The queue is one hand-written query: it runs on every label, and building the equivalent ORM
# expression cost more Python time than the database spent answering it. Every per-person and
# per-slot condition is an uncorrelated ``IN`` list, which both databases evaluate once and hash,
# so its cost stays linear in the sample whatever the table statistics say.
_A, _L = Assignment._meta.db_table, Label._meta.db_table
_SI = SampleItem._meta.db_table
_TAKEN = "(label_id IS NOT NULL OR expires_at > %(now)s)"
_AT_STAGE = f"SELECT unit_id FROM {_A} WHERE criterion_id = %(criterion)s AND stage = %(stage)s"
_MINE = _AT_STAGE + " AND user_id = %(user)s"
_LIVE_MINE = _MINE + " AND label_id IS NULL AND expires_at > %(now)s"


def _mine_latest(column: str) -> str:
    return (
        f"(SELECT MAX(m.{column}) FROM {_A} m WHERE m.unit_id = si.unit_id"
        " AND m.criterion_id = %(criterion)s AND m.stage = %(stage)s AND m.user_id = %(user)s)"
    )


def _taken_slot(slot: int) -> str:
    return f"{_AT_STAGE} AND slot = {slot:d} AND {_TAKEN}"


@functools.cache
def _where(*, mode: str, stage: str) -> str:
    """The conditions that make a sample item eligible (see the module docstring)."""
    free = " OR ".join(
        f"si.unit_id NOT IN ({_taken_slot(n)})" for n in range(1, capacity(mode=mode, stage=stage) + 1)
    )
    conditions = [
        f"si.sample_id = {CURRENT_SAMPLE_SQL}",
        f"si.unit_id NOT IN (SELECT unit_id FROM {_L}"
        " WHERE criterion_id = %(criterion)s AND stage = %(imported)s)",
        f"si.unit_id NOT IN (SELECT unit_id FROM {_A} WHERE criterion_id = %(criterion)s"
        f" AND user_id = %(user)s AND stage <> %(stage)s AND {_TAKEN})",
        f"si.unit_id NOT IN ({_MINE} AND label_id IS NOT NULL)",
        f"(si.unit_id IN ({_LIVE_MINE}) OR {free})",
    ]
    # "IS TRUE" keeps a prerequisite an IN list: PostgreSQL would turn a bare top-level IN into a
    # semi-join, whose plan turns quadratic while the table statistics lag behind a new campaign.
    if stage == Stage.REVIEW:
        conditions.append(
            f"(si.unit_id IN (SELECT unit_id FROM {_A} WHERE criterion_id = %(criterion)s"
            " AND stage = %(first)s AND slot = 1 AND label_id IS NOT NULL)) IS TRUE"
        )
    elif stage == Stage.ADJUDICATION:
        second_stage, second_slot = (
            (Stage.LABEL, 2) if mode == AnnotationMode.BLIND_DOUBLE else (Stage.REVIEW, 1)
        )
        conditions.append(
            f"(si.unit_id IN (SELECT a.unit_id FROM {_A} a JOIN {_L} la ON la.id = a.label_id"
            f" JOIN {_A} b ON b.unit_id = a.unit_id AND b.criterion_id = a.criterion_id"
            f" AND b.stage = '{second_stage.value}' AND b.slot = {second_slot:d}"
            f" JOIN {_L} lb ON lb.id = b.label_id"
            " WHERE a.criterion_id = %(criterion)s AND a.stage = %(first)s AND a.slot = 1"
            " AND la.value <> lb.value)) IS TRUE"
        )
    return " AND ".join(conditions)


@functools.cache
def _candidate_sql(*, mode: str, stage: str, lock: bool, skip_one: bool = False) -> str:
    slots = capacity(mode=mode, stage=stage)
    free_slot = "1" if slots == 1 else f"CASE WHEN si.unit_id IN ({_taken_slot(1)}) THEN 2 ELSE 1 END"
    # Whether the free slot already has a row (an expired lease to take over) or needs an insert.
    has_row = " ".join(
        f"WHEN {free_slot} = {n:d} THEN"
        f" CASE WHEN si.unit_id IN ({_AT_STAGE} AND slot = {n:d}) THEN 1 ELSE 0 END"
        for n in range(1, slots + 1)
    )
    where = _where(mode=mode, stage=stage) + (" AND si.unit_id <> %(after)s" if skip_one else "")
    sql = (
        "SELECT si.unit_id,"
        f" CASE WHEN si.unit_id IN ({_LIVE_MINE}) THEN {_mine_latest('updated_at')} END AS mine_at,"
        f" CASE WHEN si.unit_id IN ({_MINE} AND skipped_at IS NOT NULL) THEN {_mine_latest('skipped_at')}"
        f" END AS my_skip, {free_slot} AS free_slot, CASE {has_row} END AS has_row"
        f" FROM {_SI} si WHERE {where}"
        # The unit given back by an undo, then the one on screen, then the queue; skipped ones last.
        " ORDER BY mine_at DESC NULLS LAST, my_skip ASC NULLS FIRST,"
        " si.theme, si.cluster, si.rank, si.unit_id"
        " LIMIT 1"
    )
    return sql + (" FOR UPDATE OF si SKIP LOCKED" if lock else "")


def _params(*, user: User, criterion: Criterion, stage: str, now: datetime, after: int | None = None) -> dict:
    return {
        "after": after,
        "criterion": criterion.pk,
        "stage": stage,
        "user": user.pk,
        "now": connection.ops.adapt_datetimefield_value(now),
        "imported": Stage.IMPORTED.value,
        "first": Stage.LABEL.value,
    }


def _candidate(
    *, user: User, criterion: Criterion, stage: str, now: datetime, after: int | None = None
) -> tuple | None:
    """(unit id, my live lease's time, my skip's time, free slot, whether that slot has a row) of
    the first eligible unit other than ``after``, row-locked on PostgreSQL."""
    lock = connection.features.has_select_for_update_skip_locked
    sql = _candidate_sql(
        mode=criterion.campaign.annotation_mode, stage=stage, lock=lock, skip_one=after is not None
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, _params(user=user, criterion=criterion, stage=stage, now=now, after=after))
        return cursor.fetchone()


def available_count(*, user: User, criterion: Criterion, stage: str, now: datetime) -> int:
    """How many units ``next_unit`` could hand ``user`` at ``stage`` now (their own leases included)."""
    where = _where(mode=criterion.campaign.annotation_mode, stage=stage)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM {_SI} si WHERE {where}",
            _params(user=user, criterion=criterion, stage=stage, now=now),
        )
        return cursor.fetchone()[0]


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
    it. Otherwise the first eligible unit (see the module docstring) is leased for the campaign's
    ``lease_minutes``; an expired lease frees its slot for anyone. The unit comes with its answer,
    question and sentence loaded. Raises PermissionDenied without the stage's role and
    WorkflowError for a stage the campaign's mode does not have (``roles``: the user's roles
    already read in this request, see :func:`require_stage_role`). A constant number of queries,
    whatever the size of the campaign.
    """
    campaign = criterion.campaign
    require_stage_role(user=user, campaign=campaign, stage=stage, roles=roles)
    for _ in range(CLAIM_ATTEMPTS):
        now = timezone.now()
        until = lease_end(campaign=campaign, now=now)
        try:
            with transaction.atomic():
                row = _candidate(user=user, criterion=criterion, stage=stage, now=now, after=after)
                if row is None:
                    return None
                unit_id, mine_at, _, free_slot, has_row = row
                if mine_at is not None:
                    Assignment.objects.filter(
                        unit_id=unit_id, criterion=criterion, stage=stage, user_id=user.pk, label__isnull=True
                    ).update(expires_at=until, updated_at=now)
                else:
                    claim_slot(
                        user=user,
                        unit_id=unit_id,
                        criterion=criterion,
                        stage=stage,
                        slot=free_slot,
                        now=now,
                        until=until,
                        has_row=bool(has_row),
                    )
                return Unit.objects.select_related("answer__question", "sentence").get(pk=unit_id)
        except IntegrityError:
            # Someone took the slot between the read and the insert: look again.
            continue
    return None


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
    fields: dict[str, object] = {"user_id": user.pk, "skipped_at": None, "updated_at": now}
    if label:
        fields.update(label=label, expires_at=None)
    else:
        fields.update(expires_at=until)
    if has_row:
        taken = Assignment.objects.filter(
            unit_id=unit_id,
            criterion=criterion,
            stage=stage,
            slot=slot,
            label__isnull=True,
            expires_at__lte=now,
        ).update(**fields)
        if taken:
            return
    Assignment.objects.create(unit_id=unit_id, criterion=criterion, stage=stage, slot=slot, **fields)


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
    released = Assignment.objects.filter(
        unit_id=unit_id,
        criterion=criterion,
        stage=stage,
        user_id=user.pk,
        label__isnull=True,
        expires_at__gt=now,
    ).update(expires_at=now, skipped_at=now, updated_at=now)
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


_IN_SAMPLE = f"(unit_id IN (SELECT unit_id FROM {_SI} WHERE sample_id = {CURRENT_SAMPLE_SQL})) IS TRUE"
_HELD_BY_OTHERS = (
    f" FROM {_A} WHERE criterion_id = %(criterion)s AND stage = %(stage)s AND label_id IS NULL"
    f" AND expires_at > %(now)s AND user_id <> %(user)s AND {_IN_SAMPLE}"
)
_PROGRESS_SQL = (
    "SELECT (SELECT COUNT(*) FROM " + _SI + " WHERE sample_id = " + CURRENT_SAMPLE_SQL + "),"
    " COALESCE(SUM(CASE WHEN a.stage = %(stage)s AND a.user_id = %(user)s THEN 1 ELSE 0 END), 0),"
    " COALESCE(SUM(CASE WHEN a.stage = %(stage)s THEN 1 ELSE 0 END), 0),"
    " COALESCE(SUM(CASE WHEN a.stage = %(first)s THEN 1 ELSE 0 END), 0),"
    f" (SELECT COUNT(*){_HELD_BY_OTHERS}), (SELECT MAX(expires_at){_HELD_BY_OTHERS}),"
    f" (SELECT COUNT(DISTINCT unit_id) FROM {_L} WHERE criterion_id = %(criterion)s"
    f" AND stage = %(imported)s AND {_IN_SAMPLE})"
    f" FROM {_A} a WHERE a.criterion_id = %(criterion)s AND a.label_id IS NOT NULL"
    f" AND (a.unit_id IN (SELECT unit_id FROM {_SI} WHERE sample_id = {CURRENT_SAMPLE_SQL})) IS TRUE"
)
_PROGRESS_COLUMNS = 7


def _moment(value: object) -> datetime | None:
    """A time read by a raw query: SQLite gives a naive UTC string, PostgreSQL an aware datetime."""
    if value is None:
        return None
    moment = parse_datetime(value) if isinstance(value, str) else value
    if not isinstance(moment, datetime):
        return None
    return timezone.make_aware(moment, UTC) if timezone.is_naive(moment) else moment


def _stage_progress(*, criterion: Criterion, stage: str, row: tuple) -> StageProgress:
    mode = criterion.campaign.annotation_mode
    size, mine, filled, first, held = (int(n) for n in row[:5])
    imported = int(row[6])
    if stage == Stage.LABEL:
        total: int | None = size * capacity(mode=mode, stage=stage)
    elif stage == Stage.REVIEW:
        total = first
    else:
        total = None
    return StageProgress(
        stage=stage,
        mine=mine,
        filled=filled,
        total=total,
        sample_size=size,
        held=held,
        held_until=_moment(row[5]),
        imported=imported,
    )


def stage_progress(*, user: User, criterion: Criterion, stage: str) -> StageProgress:
    """Progress of ``stage`` on the criterion's current sample, in one query.

    ``mine``: slots the user filled at the stage; ``filled``: slots filled by anyone; ``total``:
    the slots the stage will have (sample size x slots for the first stage, one review per first
    label), None for adjudication (it depends on disagreements still to come); ``held``: slots
    others hold under a live lease, the last of which expires at ``held_until``; ``imported``:
    units of the sample with an imported (final) label.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            _PROGRESS_SQL, _params(user=user, criterion=criterion, stage=stage, now=timezone.now())
        )
        row = cursor.fetchone()
    return _stage_progress(criterion=criterion, stage=stage, row=row)


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


@functools.cache
def _settled_sql(*, mode: str) -> str:
    # One pass over the criterion's filled slots grouped by unit, joined to the sample by hash:
    # linear whatever the planner believes. (Membership tests built from self-joins of the slot
    # table took 28 s per page on a fresh 200,000-sentence campaign whose statistics were stale.)
    def value(stage: str, slot: int) -> str:
        return f"MAX(CASE WHEN a.stage = '{stage}' AND a.slot = {slot} THEN la.value END)"

    label, review, adjudication = Stage.LABEL.value, Stage.REVIEW.value, Stage.ADJUDICATION.value
    if mode == AnnotationMode.BLIND_DOUBLE:
        # Both blind labels given, whatever their values: counting agreements would tell whoever
        # gave the second label what the first one was.
        done = f"COUNT(DISTINCT CASE WHEN a.stage = '{label}' THEN a.slot END) = 2"
    else:
        # The filled slots hold the labels in force (an undo empties its slot): a review that
        # agrees with the first label, or an adjudication, makes a final label.
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


def _criterion_progress(*, criterion: Criterion, row: tuple) -> CriterionProgress:
    total, settled = (int(n) for n in row)
    blind = criterion.campaign.annotation_mode == AnnotationMode.BLIND_DOUBLE
    return CriterionProgress(settled=settled, total=total, blind=blind)


def criterion_progress(*, criterion: Criterion) -> CriterionProgress:
    """Units of the criterion's current sample that are done, and the sample's size.

    Done: a final label in review mode; both labels given in blind double mode (their agreement
    is no business of the people labelling). One query whatever the size of the campaign.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            _settled_sql(mode=criterion.campaign.annotation_mode),
            {"criterion": criterion.pk, "imported": Stage.IMPORTED.value},
        )
        row = cursor.fetchone()
    return _criterion_progress(criterion=criterion, row=row)


def work_progress(*, user: User, criterion: Criterion, stage: str) -> tuple[StageProgress, CriterionProgress]:
    """:func:`stage_progress` and :func:`criterion_progress` together, in one round trip (the
    annotator page shows both after every label)."""
    settled = _settled_sql(mode=criterion.campaign.annotation_mode)
    sql = f"SELECT * FROM ({_PROGRESS_SQL}) p CROSS JOIN ({settled}) d"
    with connection.cursor() as cursor:
        cursor.execute(sql, _params(user=user, criterion=criterion, stage=stage, now=timezone.now()))
        row = cursor.fetchone()
    return (
        _stage_progress(criterion=criterion, stage=stage, row=row[:_PROGRESS_COLUMNS]),
        _criterion_progress(criterion=criterion, row=row[_PROGRESS_COLUMNS:]),
    )


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
