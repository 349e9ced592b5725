"""The stored queue (open slots and counts) stays what a rebuild from scratch would make, and hands
out exactly the units the queue's rules allow, after random sequences of every write."""

from __future__ import annotations

import contextlib
import random
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from annotation.models import (
    AnnotationMode,
    Assignment,
    Criterion,
    Label,
    OpenSlot,
    QueueTally,
    Role,
    SampleItem,
    Stage,
    Unit,
)
from annotation.sampling.current import CURRENT_SAMPLE_SQL
from annotation.workflow import next_unit, open_slots, skip
from annotation.workflow.labels import submit_label, undo_last
from annotation.workflow.queue import work_progress
from annotation.workflow.rules import WorkflowError, capacity, stages_for
from tests.factories import expire_leases, import_label, make_answer, member, sample_units

pytestmark = pytest.mark.django_db

# The rules of the queue written as one query over the sample, as they were before the queue was
# stored: the reference the stored queue must agree with (its first unit for a person and stage).
_A, _L, _SI = Assignment._meta.db_table, Label._meta.db_table, SampleItem._meta.db_table
_TAKEN = "(label_id IS NOT NULL OR expires_at > %(now)s)"
_AT_STAGE = f"SELECT unit_id FROM {_A} WHERE criterion_id = %(criterion)s AND stage = %(stage)s"
_MINE = _AT_STAGE + " AND user_id = %(user)s"
_LIVE_MINE = _MINE + " AND label_id IS NULL AND expires_at > %(now)s"


def _reference_sql(*, mode: str, stage: str) -> str:
    taken = f"{_AT_STAGE} AND slot = {{n}} AND {_TAKEN}"
    free = " OR ".join(
        f"si.unit_id NOT IN ({taken.format(n=n)})" for n in range(1, capacity(mode=mode, stage=stage) + 1)
    )
    conditions = [
        f"si.sample_id = {CURRENT_SAMPLE_SQL}",
        f"si.unit_id NOT IN (SELECT unit_id FROM {_L}"
        " WHERE criterion_id = %(criterion)s AND stage = 'imported')",
        f"si.unit_id NOT IN (SELECT unit_id FROM {_A} WHERE criterion_id = %(criterion)s"
        f" AND user_id = %(user)s AND stage <> %(stage)s AND {_TAKEN})",
        f"si.unit_id NOT IN ({_MINE} AND label_id IS NOT NULL)",
        f"(si.unit_id IN ({_LIVE_MINE}) OR {free})",
    ]
    if stage == Stage.REVIEW:
        conditions.append(
            f"si.unit_id IN (SELECT unit_id FROM {_A} WHERE criterion_id = %(criterion)s"
            " AND stage = 'label' AND slot = 1 AND label_id IS NOT NULL)"
        )
    elif stage == Stage.ADJUDICATION:
        second, slot = ("label", 2) if mode == AnnotationMode.BLIND_DOUBLE else ("review", 1)
        conditions.append(
            f"si.unit_id IN (SELECT a.unit_id FROM {_A} a JOIN {_L} la ON la.id = a.label_id"
            f" JOIN {_A} b ON b.unit_id = a.unit_id AND b.criterion_id = a.criterion_id"
            f" AND b.stage = '{second}' AND b.slot = {slot} JOIN {_L} lb ON lb.id = b.label_id"
            " WHERE a.criterion_id = %(criterion)s AND a.stage = 'label' AND a.slot = 1"
            " AND la.value <> lb.value)"
        )

    def latest(column: str) -> str:
        return (
            f"(SELECT MAX(m.{column}) FROM {_A} m WHERE m.unit_id = si.unit_id"
            " AND m.criterion_id = %(criterion)s AND m.stage = %(stage)s AND m.user_id = %(user)s)"
        )

    return (
        f"SELECT si.unit_id,"
        f" CASE WHEN si.unit_id IN ({_LIVE_MINE}) THEN {latest('updated_at')} END AS mine_at,"
        f" CASE WHEN si.unit_id IN ({_MINE} AND skipped_at IS NOT NULL) THEN {latest('skipped_at')} END"
        f" AS my_skip FROM {_SI} si WHERE {' AND '.join(conditions)}"
        " ORDER BY mine_at DESC NULLS LAST, my_skip ASC NULLS FIRST,"
        " si.theme, si.cluster, si.rank, si.unit_id"
    )


def _reference_units(*, user, criterion, stage: str) -> list[int]:
    params = {
        "criterion": criterion.pk,
        "stage": stage,
        "user": user.pk,
        "now": connection.ops.adapt_datetimefield_value(timezone.now()),
    }
    with connection.cursor() as cursor:
        cursor.execute(_reference_sql(mode=criterion.campaign.annotation_mode, stage=stage), params)
        return [row[0] for row in cursor.fetchall()]


def _stored(criterion) -> tuple[set, set, int]:
    """The open slots and what the tallies say, which every figure of ``work_progress`` is read
    from: the slots filled per stage and person, the sample's size, the units settled (kept on
    the row of the label that settled them, put on the sample's row by a rebuild)."""
    rows = set(
        OpenSlot.objects.filter(criterion=criterion).values_list("stage", "slot", "unit_id", "held_until")
    )
    tallies = list(
        QueueTally.objects.filter(criterion=criterion).values_list("kind", "user_id", "filled", "settled")
    )
    filled = {(kind, user, count) for kind, user, count, _ in tallies if count}
    return rows, filled, sum(settled for *_, settled in tallies)


def _progress_of(criterion) -> dict:
    people = {row.user for row in Assignment.objects.filter(criterion=criterion).select_related("user")}
    figures = {}
    for user in people:
        for stage in stages_for(mode=criterion.campaign.annotation_mode):
            progress, overall = work_progress(user=user, criterion=criterion, stage=stage)
            figures[(user.pk, stage)] = (
                progress.mine,
                progress.filled,
                progress.total,
                progress.imported,
                progress.held,
                overall.settled,
                overall.total,
            )
    return figures


def _check(criterion) -> None:
    stored = _stored(criterion)
    open_slots.rebuild(criterion=criterion)
    assert _stored(criterion) == stored


def _one_step(rng: random.Random, *, criterion, people: dict, units: list[Unit]) -> str:
    mode = criterion.campaign.annotation_mode
    stage = rng.choice(stages_for(mode=mode))
    user = rng.choice(people[stage])
    action = rng.choices(
        ["next", "submit", "undo", "skip", "expire", "import", "redraw"], [8, 8, 2, 2, 1, 1, 1]
    )[0]
    if action == "next":
        after = rng.choice([None, *[u.pk for u in units]]) if rng.random() < 0.3 else None
        expected = [pk for pk in _reference_units(user=user, criterion=criterion, stage=stage) if pk != after]
        unit = next_unit(user=user, criterion=criterion, stage=stage, after=after)
        assert (unit.pk if unit else None) == (expected[0] if expected else None)
    elif action == "submit":
        unit = next_unit(user=user, criterion=criterion, stage=stage)
        if unit is not None:
            with contextlib.suppress(WorkflowError):
                submit_label(
                    user=user,
                    unit_id=unit.pk,
                    criterion=criterion,
                    stage=stage,
                    value=rng.randint(0, 1),
                    comment="because",
                )
    elif action == "undo":
        with contextlib.suppress(WorkflowError):
            undo_last(user=user, criterion=criterion, stage=stage)
    elif action == "skip":
        held = Assignment.objects.filter(
            criterion=criterion, stage=stage, user=user, label=None, expires_at__gt=timezone.now()
        ).first()
        if held is not None:
            skip(user=user, criterion=criterion, stage=stage, unit_id=held.unit_id)
    elif action == "expire":
        expire_leases(at=timezone.now() - timedelta(seconds=1))
    elif action == "import":
        free = [u for u in units if not Label.objects.filter(unit=u, criterion=criterion).exists()]
        if free:
            import_label(unit=rng.choice(free), criterion=criterion, value=rng.randint(0, 1))
    elif action == "redraw":
        kept = rng.sample(units, k=max(1, len(units) - 2))
        sample_units(criterion=criterion, units=sorted(kept, key=lambda u: u.pk))
    return f"{action} {stage} {user.pk}"


@pytest.mark.parametrize("mode", [AnnotationMode.REVIEW, AnnotationMode.BLIND_DOUBLE])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_stored_queue_equals_a_rebuild_and_the_rules_after_random_writes(campaign, mode, seed):
    campaign.annotation_mode = mode
    campaign.save()
    rng = random.Random(seed)
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")
    for theme in ("Finance", "IT", "Finance", "RH", "IT", "Finance", "RH", "IT", "Finance", "IT"):
        make_answer(campaign=campaign, theme=theme)
    units = list(Unit.objects.filter(campaign=campaign, level=criterion.level).order_by("pk"))
    sample_units(criterion=criterion, units=rng.sample(units, k=len(units)))
    both = member(campaign, Role.ANNOTATOR, Role.REVIEWER)
    people = {
        Stage.LABEL: [member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR), both],
        Stage.REVIEW: [member(campaign, Role.REVIEWER), both],
        Stage.ADJUDICATION: [member(campaign, Role.ADJUDICATOR)],
    }
    done = []
    for _ in range(150):
        done.append(_one_step(rng, criterion=criterion, people=people, units=units))
        _check(criterion)
    # What people read of their progress, the same from the rows kept and from a rebuild.
    progress = _progress_of(criterion)
    open_slots.rebuild(criterion=criterion)
    assert _progress_of(criterion) == progress
    # The run went through every stage the mode has (else the seed tells too little).
    stages = set(Label.objects.filter(criterion=criterion).values_list("stage", flat=True))
    assert set(stages_for(mode=mode)) <= stages, (stages, done)
    assert QueueTally.objects.filter(criterion=criterion, kind=QueueTally.SAMPLE).exists()


def test_a_label_on_a_unit_outside_the_current_sample_moves_no_count(campaign, annotator):
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")
    for _ in range(3):
        make_answer(campaign=campaign)
    units = list(Unit.objects.filter(campaign=campaign, level=criterion.level).order_by("pk"))
    sample_units(criterion=criterion, units=units)
    held = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    sample_units(criterion=criterion, units=[u for u in units if u != held])
    submit_label(user=annotator, unit_id=held.pk, criterion=criterion, stage=Stage.LABEL, value=1)
    progress, overall = work_progress(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert (progress.mine, progress.total, overall.total) == (0, 2, 2)
    _check(criterion)
