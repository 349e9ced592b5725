"""Recording labels: submit one, undo my last one. Every write appends a Label row.

All label writes on a unit lock the unit's row first, so the checks below read a state no other
submit or undo can change before this transaction commits (leases taken concurrently by
``next_unit`` are caught by the slot's unique row instead).

Its length is one lock's: submit, skip and undo all take the unit's row first and check the same
slots, and read best side by side.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

import annotation.workflow.open_slots as open_slots
from annotation.criteria.guidelines import current_version
from annotation.errors import refusal
from annotation.models import (
    Assignment,
    Criterion,
    CriterionVersion,
    Label,
    OpenSlot,
    SampleItem,
    Stage,
    Unit,
)
from annotation.sampling.current import CURRENT_SAMPLE_SQL
from annotation.workflow.events import announce_labels_changed
from annotation.workflow.queue import claim_slot, lease_end
from annotation.workflow.rules import (
    WorkflowError,
    capacity,
    check_request_key,
    check_value,
    later_stages,
    require_stage_role,
)

TAKEN = _("Someone else is labelling this unit at this stage now; here is another one.")


@dataclass(frozen=True)
class _Slot:
    """A slot row of the unit, as the locking query read it; ``counts``: filled or leased now."""

    pk: int
    stage: str
    slot: int
    user_id: int
    label_id: int | None
    value: int | None
    counts: bool


_UNIT, _A, _L, _SI, _OS = (
    Unit._meta.db_table,
    Assignment._meta.db_table,
    Label._meta.db_table,
    SampleItem._meta.db_table,
    OpenSlot._meta.db_table,
)
# One round trip: lock the unit, say whether it has an imported label and whether it is in the
# criterion's current sample, read its slots.
_LOCK_SQL = (
    "SELECT u.level,"
    f" EXISTS (SELECT 1 FROM {_L} i WHERE i.unit_id = u.id AND i.criterion_id = %(criterion)s"
    " AND i.stage = %(imported)s),"
    f" EXISTS (SELECT 1 FROM {_SI} x WHERE x.unit_id = u.id AND x.sample_id = {CURRENT_SAMPLE_SQL}),"
    " a.id, a.stage, a.slot, a.user_id, a.label_id, la.value,"
    " CASE WHEN a.label_id IS NOT NULL OR a.expires_at > %(now)s THEN 1 ELSE 0 END"
    f" FROM {_UNIT} u LEFT JOIN {_A} a ON a.unit_id = u.id AND a.criterion_id = %(criterion)s"
    f" LEFT JOIN {_L} la ON la.id = a.label_id"
    " WHERE u.id = %(unit)s AND u.campaign_id = %(campaign)s"
)


@dataclass(frozen=True)
class _Locked:
    """What the locking query read of a unit: whether it has an imported label, whether it is in
    the criterion's current sample, and its slots for the criterion."""

    imported: bool
    in_sample: bool
    slots: list[_Slot]

    def filled(self) -> dict[tuple[str, int], int]:
        """The values of the filled slots, by (stage, slot)."""
        return {(s.stage, s.slot): s.value for s in self.slots if s.label_id and s.value is not None}


_LOCK_OPEN_SQL = f"SELECT id FROM {_OS} WHERE criterion_id = %(criterion)s AND unit_id = %(unit)s"
# The person's lease (even expired) filled with their label, in SQL as the claim's statements are
# (annotation.workflow.queue): the ORM took ten times longer to build it than to run it.
_FILL_SQL = (
    f"UPDATE {_A} SET label_id = %(label)s, expires_at = NULL, skipped_at = NULL, updated_at = %(now)s"
    " WHERE id = %(row)s AND user_id = %(user)s AND label_id IS NULL"
)


def _lock_unit(*, unit_id: int, criterion: Criterion, now: datetime) -> _Locked:
    """Lock the unit's row and read it (see :class:`_Locked`).

    Raises WorkflowError when the unit is not in the criterion's campaign or not of its level.
    """
    # NO KEY: label writes on the unit exclude each other, but rows that merely reference the unit
    # (a lease inserted by next_unit) do not wait for them.
    sql = _LOCK_SQL + (" FOR NO KEY UPDATE OF u" if connection.features.has_select_for_update_of else "")
    params: dict[str, Any] = {
        "criterion": criterion.pk,
        "imported": Stage.IMPORTED.value,
        "now": connection.ops.adapt_datetimefield_value(now),
        "unit": unit_id,
        "campaign": criterion.campaign_id,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows:
        raise WorkflowError(refusal(_("unit %(unit)s is not in this campaign"), unit=unit_id), code="unit")
    # Then its open slots, before any of its slot rows: next_unit locks an open slot before its
    # slot row, so taking them in the same order keeps the two from waiting on each other.
    with connection.cursor() as cursor:
        cursor.execute(
            _LOCK_OPEN_SQL + (" FOR UPDATE" if connection.features.has_select_for_update else ""), params
        )
    level, imported, in_sample = rows[0][0], bool(rows[0][1]), bool(rows[0][2])
    if level != criterion.level:
        raise WorkflowError(
            refusal(
                _("unit %(unit)s is %(level)s-level; %(criterion)s is %(criterion_level)s-level"),
                unit=unit_id,
                level=level,
                criterion=criterion.name,
                criterion_level=criterion.level,
            ),
            code="unit",
        )
    slots = [
        _Slot(
            pk=row[3],
            stage=row[4],
            slot=row[5],
            user_id=row[6],
            label_id=row[7],
            value=row[8],
            counts=bool(row[9]),
        )
        for row in rows
        if row[3] is not None
    ]
    return _Locked(imported=imported, in_sample=in_sample, slots=slots)


def _replayed(label: Label, *, user: User, unit_id: int, criterion: Criterion, stage: str) -> Label:
    if (label.user_id, label.unit_id, label.criterion_id, label.stage) != (
        user.pk,
        unit_id,
        criterion.pk,
        stage,
    ):
        raise WorkflowError(_("this request key belongs to another label"), code="request_key")
    return label


def submit_label(
    *,
    user: User,
    unit_id: int,
    criterion: Criterion,
    stage: str,
    value: int,
    comment: str = "",
    request_key: str | None = None,
    roles: Collection[str] | None = None,
    guidelines_version_id: int | None = None,
) -> Label:
    """Record ``user``'s label ``value`` (0 or 1) on the unit at ``stage``; return the Label row.

    The label records ``guidelines_version_id``, the version of the criterion's guidelines its
    author was shown (the page sends it), else the current one; a version of another criterion is
    refused (WorkflowError, code ``guidelines_version``).

    Idempotent by ``request_key``: a retried or double-clicked submit carrying the same key
    returns the row stored the first time and stores nothing. The user must hold the unit's lease
    at this stage, or the unit must be one ``next_unit`` could hand them (in the current sample, a
    slot free, the prerequisite met). Rules: a value is 0 or 1 (a category's value
    for a categorical criterion); nobody labels two stages of a unit
    (nor both blind slots); a review that overrides the first label needs a comment; an
    adjudication needs a reason (the comment) and a disagreement to settle. The lease becomes the
    filled slot. Raises WorkflowError (with a ``code``) when a rule refuses, PermissionDenied
    without the stage's role (``roles``: the user's roles already read in this request, see
    :func:`~annotation.workflow.rules.require_stage_role`); nothing is written then.
    """
    value = check_value(value, criterion=criterion)
    request_key = check_request_key(request_key)
    require_stage_role(user=user, campaign=criterion.campaign, stage=stage, roles=roles)
    version_id = _shown_version(criterion=criterion, version_id=guidelines_version_id)
    comment = (comment or "").strip()
    # A replayed request is recognised where it fails: on the filled slot, on a refused rule, or
    # on the key's unique index; the first submit pays no extra query for it.
    try:
        with transaction.atomic():
            label = _record(
                user=user,
                unit_id=unit_id,
                criterion=criterion,
                stage=stage,
                value=value,
                comment=comment,
                request_key=request_key,
                version_id=version_id,
            )
            announce_labels_changed(criterion=criterion, stage=stage)
            return label
    except IntegrityError:
        # The same key committed by a concurrent request (a double click), or a lost slot.
        if request_key and (done := Label.objects.filter(request_key=request_key).first()):
            return _replayed(done, user=user, unit_id=unit_id, criterion=criterion, stage=stage)
        raise WorkflowError(TAKEN, code="taken") from None
    except WorkflowError:
        if request_key and (done := Label.objects.filter(request_key=request_key).first()):
            return _replayed(done, user=user, unit_id=unit_id, criterion=criterion, stage=stage)
        raise


def _shown_version(*, criterion: Criterion, version_id: int | None) -> int:
    """The guidelines version a label records: the one its author was shown, checked to be the
    criterion's (no query when it is the current one), else the current one."""
    current = current_version(criterion=criterion)
    if version_id is None or version_id == current.pk:
        return current.pk
    if not CriterionVersion.objects.filter(pk=version_id, criterion=criterion).exists():
        raise WorkflowError(
            refusal(
                _("guidelines version %(version)s is not a version of %(criterion)s's guidelines"),
                version=version_id,
                criterion=criterion.name,
            ),
            code="guidelines_version",
        )
    return version_id


def _record(
    *,
    user: User,
    unit_id: int,
    criterion: Criterion,
    stage: str,
    value: int,
    comment: str,
    request_key: str | None,
    version_id: int,
) -> Label:
    mode = criterion.campaign.annotation_mode
    now = timezone.now()
    locked = _lock_unit(unit_id=unit_id, criterion=criterion, now=now)
    slots = locked.slots
    if locked.imported:
        raise WorkflowError(_("this unit already has an imported final label"), code="final")
    if any(s.user_id == user.pk and s.stage != stage and s.counts for s in slots):
        raise WorkflowError(_("you already work on another stage of this unit"), code="other_stage")
    if any(s.user_id == user.pk and s.stage == stage and s.label_id for s in slots):
        raise WorkflowError(_("you already labelled this unit at this stage; undo it first"), code="done")
    _check_prerequisite(slots=slots, mode=mode, stage=stage, value=value, comment=comment)

    mine = next((s for s in slots if s.user_id == user.pk and s.stage == stage and not s.label_id), None)
    label = Label(
        unit_id=unit_id,
        criterion=criterion,
        user=user,
        stage=stage,
        value=value,
        comment=comment,
        request_key=request_key,
        guidelines_version_id=version_id,
    )
    if mine is not None:
        # The user's lease, even expired: still theirs, so nobody took the slot over.
        label.save()
        with connection.cursor() as cursor:
            cursor.execute(
                _FILL_SQL,
                {
                    "label": label.pk,
                    "now": connection.ops.adapt_datetimefield_value(now),
                    "row": mine.pk,
                    "user": user.pk,
                },
            )
            kept = cursor.rowcount
        if not kept:
            # An expired lease taken over by someone else since it was read.
            raise WorkflowError(TAKEN, code="taken")
        _after_write(
            locked=locked, criterion=criterion, user=user, unit_id=unit_id, change=((stage, mine.slot), value)
        )
        return label
    if not locked.in_sample:
        raise WorkflowError(_("this unit is not in the criterion's current sample"), code="not_queued")
    taken = {s.slot for s in slots if s.stage == stage and s.counts}
    free = [n for n in range(1, capacity(mode=mode, stage=stage) + 1) if n not in taken]
    if not free:
        raise WorkflowError(TAKEN, code="taken")
    label.save()
    # A lease taken concurrently raises IntegrityError, which submit_label turns into "taken".
    claim_slot(
        user=user,
        unit_id=unit_id,
        criterion=criterion,
        stage=stage,
        slot=free[0],
        now=now,
        until=now,
        label=label,
    )
    _after_write(
        locked=locked, criterion=criterion, user=user, unit_id=unit_id, change=((stage, free[0]), value)
    )
    return label


def _after_write(
    *,
    locked: _Locked,
    criterion: Criterion,
    user: User,
    unit_id: int,
    change: tuple[tuple[str, int], int | None],
) -> None:
    """Keep the stored queue in step with a label written (value) or withdrawn (None) in a slot
    of the locked unit: its open slots, and the author's counts when the unit is in the sample."""
    open_slots.sync_unit(criterion=criterion, unit_id=unit_id)
    if not locked.in_sample:
        return
    (stage, slot), value = change
    mode = criterion.campaign.annotation_mode
    before = locked.filled()
    after = dict(before)
    if value is None:
        after.pop((stage, slot), None)
    else:
        after[(stage, slot)] = value
    settled = int(open_slots.is_settled(mode=mode, filled=after)) - int(
        open_slots.is_settled(mode=mode, filled=before)
    )
    open_slots.count_write(
        criterion=criterion,
        stage=stage,
        user_id=user.pk,
        filled=len(after) - len(before),
        settled=settled,
    )


def _check_prerequisite(*, slots: list[_Slot], mode: str, stage: str, value: int, comment: str) -> None:
    def filled(at: str, slot: int) -> _Slot | None:
        return next((s for s in slots if s.stage == at and s.slot == slot and s.label_id), None)

    if stage == Stage.LABEL:
        return
    first = filled(Stage.LABEL, 1)
    if stage == Stage.REVIEW:
        if first is None:
            raise WorkflowError(
                _("the first label of this unit was withdrawn; nothing to review"), code="changed"
            )
        if value != first.value and not comment:
            raise WorkflowError(
                _("overriding the first label needs a comment saying why"), code="comment_required"
            )
        return
    second = (
        filled(Stage.LABEL, 2) if capacity(mode=mode, stage=Stage.LABEL) == 2 else filled(Stage.REVIEW, 1)
    )
    if first is None or second is None or first.value == second.value:
        raise WorkflowError(_("this unit has no disagreement to settle"), code="changed")
    if not comment:
        raise WorkflowError(_("an adjudication needs a reason"), code="comment_required")


def undo_last(
    *,
    user: User,
    criterion: Criterion,
    stage: str,
    request_key: str | None = None,
    roles: Collection[str] | None = None,
) -> Label:
    """Withdraw ``user``'s most recent label at ``stage``; return the withdrawal row (value None).

    The withdrawn unit comes back to the user under a fresh lease, so ``next_unit`` hands it to
    them again. Refused (WorkflowError) when nothing is left to undo or when a later stage has
    already labelled the unit (a review of a first label, an adjudication). Idempotent by
    ``request_key`` like :func:`submit_label`. PermissionDenied without the stage's role
    (``roles`` as in :func:`submit_label`).
    """
    request_key = check_request_key(request_key)
    campaign = criterion.campaign
    require_stage_role(user=user, campaign=campaign, stage=stage, roles=roles)
    if request_key and (done := Label.objects.filter(request_key=request_key).first()):
        if done.user_id != user.pk or done.value is not None:
            raise WorkflowError(_("this request key belongs to another label"), code="request_key")
        return done
    try:
        with transaction.atomic():
            withdrawal = _withdraw(user=user, criterion=criterion, stage=stage, request_key=request_key)
            announce_labels_changed(criterion=criterion, stage=stage)
            return withdrawal
    except IntegrityError:
        if request_key and (done := Label.objects.filter(request_key=request_key).first()):
            return done
        raise


def _withdraw(*, user: User, criterion: Criterion, stage: str, request_key: str | None) -> Label:
    mine = Assignment.objects.filter(criterion=criterion, stage=stage, user_id=user.pk, label__isnull=False)
    last = mine.order_by("-label_id").values_list("unit_id", flat=True).first()
    if last is None:
        raise WorkflowError(_("nothing to undo"), code="nothing")
    locked = _lock_unit(unit_id=last, criterion=criterion, now=timezone.now())
    # Read again under the lock: a concurrent undo may have withdrawn this one already.
    found = mine.filter(unit_id=last).values_list("pk", "slot").first()
    if found is None:
        raise WorkflowError(_("nothing to undo"), code="nothing")
    row, slot = found
    later = later_stages(mode=criterion.campaign.annotation_mode, stage=stage)
    if Assignment.objects.filter(
        unit_id=last, criterion=criterion, stage__in=later, label__isnull=False
    ).exists():
        raise WorkflowError(_("this label was already built on by a later stage; it stays"), code="built_on")
    now = timezone.now()
    withdrawal = Label.objects.create(
        unit_id=last,
        criterion=criterion,
        user=user,
        stage=stage,
        value=None,
        request_key=request_key,
        guidelines_version=current_version(criterion=criterion),
    )
    Assignment.objects.filter(pk=row).update(
        label=None,
        expires_at=lease_end(campaign=criterion.campaign, now=now),
        skipped_at=None,
        updated_at=now,
    )
    _after_write(locked=locked, criterion=criterion, user=user, unit_id=last, change=((stage, slot), None))
    return withdrawal
