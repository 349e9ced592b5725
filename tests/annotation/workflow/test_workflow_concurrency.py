"""Eight people labelling at once on PostgreSQL: no slot handed out twice, no label lost.

Each thread has its own database connection (Django opens one per thread), so the row locks,
``SKIP LOCKED`` and the unique slot rows are exercised for real. SQLite serialises every
transaction, so there is nothing to prove there.
"""

from __future__ import annotations

import multiprocessing
import threading
import uuid
from collections import Counter, defaultdict

import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Q

from annotation.models import (
    AnnotationMode,
    Answer,
    Assignment,
    Criterion,
    Label,
    Question,
    Role,
    Stage,
    Unit,
)
from annotation.workflow import WorkflowError, final_labels, next_unit, submit_label
from tests.factories import add_member, make_answers, make_campaign, make_user, sample_units

THREADS = 8
UNITS = 40

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        "postgresql" not in settings.DATABASES["default"]["ENGINE"], reason="needs PostgreSQL row locks"
    ),
]


def build(*, mode: str, lease_minutes: int = 15, roles: tuple[str, ...] = (Role.ANNOTATOR,)):
    campaign = make_campaign(name=f"Concurrent {uuid.uuid4().hex[:8]}", annotation_mode=mode)
    campaign.lease_minutes = lease_minutes
    campaign.save()
    make_answers(campaign=campaign, about=[("Finance", "simple")] * UNITS, sentences=[])
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")
    units = list(Unit.objects.filter(campaign=campaign, level="answer").order_by("pk"))
    sample_units(criterion=criterion, units=units)
    users = []
    for _ in range(THREADS):
        user = make_user()
        add_member(campaign=campaign, user=user, roles=list(roles))
        users.append(user)
    return criterion, units, users


def run_threads(*, users, criterion, stage: str):
    """Every user labels at ``stage`` until the queue is empty; what they were handed and stored."""
    handed: list[tuple[int, int]] = []
    stored: list[int] = []
    refused: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(users))

    def work(user):
        try:
            start.wait()
            while (unit := next_unit(user=user, criterion=criterion, stage=stage)) is not None:
                handed.append((user.pk, unit.pk))
                key = uuid.uuid4().hex
                kwargs = {"user": user, "unit_id": unit.pk, "criterion": criterion, "stage": stage}
                try:
                    label = submit_label(**kwargs, value=unit.pk % 2, comment="revu", request_key=key)
                except WorkflowError as exc:
                    refused.append(exc.code)
                    continue
                # A double click: the same request again must give the same row.
                assert (
                    submit_label(**kwargs, value=unit.pk % 2, comment="revu", request_key=key).pk == label.pk
                )
                stored.append(label.pk)
        except BaseException as exc:  # the main thread reports it
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return handed, stored, refused


@pytest.mark.django_db(transaction=True)
def test_review_mode_each_unit_is_handed_to_one_labeller_and_then_one_other_reviewer():
    criterion, units, users = build(mode=AnnotationMode.REVIEW, roles=(Role.ANNOTATOR, Role.REVIEWER))
    handed, stored, refused = run_threads(users=users, criterion=criterion, stage=Stage.LABEL)
    per_unit = defaultdict(set)
    for user_id, unit_id in handed:
        per_unit[unit_id].add(user_id)
    assert all(len(people) == 1 for people in per_unit.values())
    assert len(handed) == UNITS and refused == []
    assert sorted(stored) == sorted(Label.objects.filter(stage=Stage.LABEL).values_list("pk", flat=True))
    assert Counter(Label.objects.values_list("unit_id", flat=True)) == {u.pk: 1 for u in units}

    handed, stored, refused = run_threads(users=users, criterion=criterion, stage=Stage.REVIEW)
    assert len(handed) == UNITS and refused == []
    labeller = dict(Label.objects.filter(stage=Stage.LABEL).values_list("unit_id", "user_id"))
    reviewer = dict(Label.objects.filter(stage=Stage.REVIEW).values_list("unit_id", "user_id"))
    assert len(reviewer) == Label.objects.filter(stage=Stage.REVIEW).count() == UNITS
    assert all(reviewer[unit_id] != labeller[unit_id] for unit_id in reviewer)
    assert len(final_labels(criterion=criterion)) == UNITS


@pytest.mark.django_db(transaction=True)
def test_blind_mode_each_unit_gets_two_labels_from_two_people():
    criterion, units, users = build(mode=AnnotationMode.BLIND_DOUBLE)
    handed, stored, refused = run_threads(users=users, criterion=criterion, stage=Stage.LABEL)
    assert refused == [] and len(handed) == 2 * UNITS
    assert len(set(handed)) == len(handed)  # nobody got the same unit twice
    people = defaultdict(list)
    for unit_id, user_id in Label.objects.values_list("unit_id", "user_id"):
        people[unit_id].append(user_id)
    assert len(people) == UNITS
    assert all(len(ids) == 2 and len(set(ids)) == 2 for ids in people.values())
    assert sorted(stored) == sorted(Label.objects.values_list("pk", flat=True))


@pytest.mark.django_db(transaction=True)
def test_leases_expiring_at_once_still_give_one_label_per_unit():
    # Leases of zero minutes expire as soon as they are taken: everyone fights for the same units.
    criterion, units, users = build(mode=AnnotationMode.REVIEW, lease_minutes=0)
    handed, stored, refused = run_threads(users=users, criterion=criterion, stage=Stage.LABEL)
    assert set(refused) <= {"taken"}
    assert len(stored) == UNITS
    assert sorted(stored) == sorted(Label.objects.values_list("pk", flat=True))
    assert sorted(Label.objects.values_list("unit_id", flat=True)) == sorted(u.pk for u in units)


PROCESSES = 8


def _bulk_sample(*, mode: str, units: int):
    """A campaign whose sample holds ``units`` sentence-free answer units, written in bulk."""
    campaign = make_campaign(name=f"Large {uuid.uuid4().hex[:8]}", annotation_mode=mode)
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")
    question = Question.objects.create(campaign=campaign, external_id="q", text="Q?", theme="Finance")
    answers = Answer.objects.bulk_create(
        Answer(campaign=campaign, question=question, external_id=f"a{i}", text=f"Answer {i}.")
        for i in range(units)
    )
    made = Unit.objects.bulk_create(
        Unit(campaign=campaign, level="answer", answer=answer, theme="Finance") for answer in answers
    )
    sample_units(criterion=criterion, units=made)
    return campaign, criterion


def _label_until_told_nothing_left(user_id: int, criterion_id: int, results) -> None:
    """A worker process: label until ``next_unit`` says nothing is left, then say how many units
    were still free (no label, no live lease) right after being told so."""
    from django.contrib.auth.models import User
    from django.db import connection as own
    from django.utils import timezone

    try:
        user = User.objects.get(pk=user_id)
        criterion = Criterion.objects.select_related("campaign").get(pk=criterion_id)
        done = 0
        while (unit := next_unit(user=user, criterion=criterion, stage=Stage.LABEL)) is not None:
            submit_label(user=user, unit_id=unit.pk, criterion=criterion, stage=Stage.LABEL, value=1)
            done += 1
        # Free for this person: a slot without a label or a live lease, on a unit they did not
        # label (the other blind slot of their own units is for someone else).
        mine = Assignment.objects.filter(criterion=criterion, user=user).values("unit_id")
        units = Unit.objects.filter(campaign=criterion.campaign).exclude(pk__in=mine)
        slots = 2 if criterion.campaign.annotation_mode == AnnotationMode.BLIND_DOUBLE else 1
        taken = (
            Assignment.objects.filter(criterion=criterion, stage=Stage.LABEL, unit__in=units)
            .filter(Q(label__isnull=False) | Q(expires_at__gt=timezone.now()))
            .count()
        )
        results.put((user_id, done, units.count() * slots - taken, ""))
    except BaseException as exc:  # the parent reports it
        results.put((user_id, 0, -1, repr(exc)))
    finally:
        own.close()


@pytest.mark.parametrize(
    ("mode", "size"), [(AnnotationMode.REVIEW, 2_000), (AnnotationMode.BLIND_DOUBLE, 1_000)]
)
@pytest.mark.django_db(transaction=True)
def test_eight_processes_on_a_large_queue_are_told_nothing_left_only_when_it_is_true(mode, size):
    campaign, criterion = _bulk_sample(mode=mode, units=size)
    users = [make_user() for _ in range(PROCESSES)]
    for user in users:
        add_member(campaign=campaign, user=user, roles=[Role.ANNOTATOR])
    connection.close()  # each process opens its own connection
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    workers = [
        context.Process(target=_label_until_told_nothing_left, args=(user.pk, criterion.pk, results))
        for user in users
    ]
    for worker in workers:
        worker.start()
    reports = [results.get(timeout=600) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    assert [error for *_, error in reports if error] == []
    # Free slots only ever decrease here (no lease expires, nothing is undone), so one still free
    # after a person was told "nothing left" was free when they were told, except the slots
    # another person was taking at that instant: their lease, not yet committed, is invisible
    # to the count, and each other person takes at most one slot at a time. (Before the queue
    # was stored, people were sent away with thousands of free slots left.)
    assert all(0 <= free < PROCESSES for _, _, free, _ in reports), reports
    slots = 2 if mode == AnnotationMode.BLIND_DOUBLE else 1
    assert sum(done for _, done, _, _ in reports) == size * slots
    assert Label.objects.filter(criterion=criterion).count() == size * slots
    assert all(done > 0 for _, done, _, _ in reports)


@pytest.mark.django_db(transaction=True)
def test_one_persons_racing_requests_never_hand_them_both_blind_slots_of_a_unit():
    """The page's own pattern: a key pressed while the prefetch of the unit after next is in
    flight, and a submit sent twice at once. Four people, each with three requests racing (the
    submit of the unit on screen, two prefetches), until the queue is empty: nobody ever holds two
    slots of one unit, and every unit ends with two labels from two people (no lease stuck)."""
    criterion, units, users = build(mode=AnnotationMode.BLIND_DOUBLE)
    users = users[:4]
    errors: list[BaseException] = []
    refused: list[str] = []

    def person(user):
        try:
            for _ in range(3 * UNITS):
                unit = next_unit(user=user, criterion=criterion, stage=Stage.LABEL)
                if unit is None:
                    break
                go = threading.Barrier(3)

                def submit(unit=unit, go=go):
                    try:
                        go.wait()
                        submit_label(
                            user=user,
                            unit_id=unit.pk,
                            criterion=criterion,
                            stage=Stage.LABEL,
                            value=1,
                            request_key=uuid.uuid4().hex,
                        )
                    except WorkflowError as exc:
                        refused.append(exc.code)
                    finally:
                        connection.close()

                def prefetch(unit=unit, go=go):
                    try:
                        go.wait()
                        next_unit(user=user, criterion=criterion, stage=Stage.LABEL, after=unit.pk)
                    finally:
                        connection.close()

                racers = [
                    threading.Thread(target=submit),
                    threading.Thread(target=prefetch),
                    threading.Thread(target=prefetch),
                ]
                for racer in racers:
                    racer.start()
                for racer in racers:
                    racer.join(timeout=60)
        except BaseException as exc:  # the main thread reports it
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=person, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    per_person = Counter(
        Assignment.objects.filter(criterion=criterion).values_list("unit_id", "stage", "user_id")
    )
    assert max(per_person.values()) == 1
    people = defaultdict(set)
    for unit_id, user_id in Label.objects.filter(criterion=criterion).values_list("unit_id", "user_id"):
        people[unit_id].add(user_id)
    assert len(people) == UNITS and all(len(ids) == 2 for ids in people.values())
    assert set(refused) <= {"taken", "done"}


@pytest.mark.django_db
def test_the_database_refuses_a_second_slot_of_a_unit_to_one_person():
    from django.db import IntegrityError, transaction
    from django.utils import timezone

    criterion, units, users = build(mode=AnnotationMode.BLIND_DOUBLE)
    later = timezone.now() + timezone.timedelta(minutes=5)
    Assignment.objects.create(
        unit=units[0], criterion=criterion, stage=Stage.LABEL, slot=1, user=users[0], expires_at=later
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(
            unit=units[0], criterion=criterion, stage=Stage.LABEL, slot=2, user=users[0], expires_at=later
        )
