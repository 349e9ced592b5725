"""The annotation workflow: modes, final labels, the queue with leases, skip, undo, idempotent submits."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from annotation.models import (
    AnnotationMode,
    Assignment,
    Criterion,
    Label,
    Role,
    Sample,
    SampleItem,
    Stage,
    Unit,
)
from annotation.workflow import (
    Status,
    WorkflowError,
    final_labels,
    my_queues,
    next_unit,
    open_slots,
    skip,
    stage_progress,
    submit_label,
    undo_last,
    unit_state,
    unit_states,
)
from tests.factories import (
    FRONT_HELD_APART,
    expire_leases,
    import_label,
    label,
    make_answer,
    make_answers,
    member,
    sample_units,
    sampled,
)

pytestmark = pytest.mark.django_db


# Building blocks shared by the workflow test modules


def blind(campaign):
    campaign.annotation_mode = AnnotationMode.BLIND_DOUBLE
    campaign.save()
    return campaign


# Review mode and the final label


def test_review_that_confirms_makes_the_first_label_final(campaign, annotator, reviewer):
    criterion, units = sampled(campaign=campaign, answers=1)
    first = label(annotator, criterion, Stage.LABEL, 0)
    assert final_labels(criterion=criterion) == {}
    assert unit_state(unit_id=first.unit_id, criterion=criterion).status == Status.NEEDS_REVIEW
    label(reviewer, criterion, Stage.REVIEW, 0)
    assert final_labels(criterion=criterion) == {units[0].pk: 0}
    assert unit_state(unit_id=first.unit_id, criterion=criterion).status == Status.FINAL


def test_override_needs_adjudication_and_the_adjudicator_decides(campaign, annotator, reviewer, adjudicator):
    criterion, units = sampled(campaign=campaign, answers=1)
    label(annotator, criterion, Stage.LABEL, 1)
    label(reviewer, criterion, Stage.REVIEW, 0, comment="Hors sujet : parle des RH.")
    state = unit_state(unit_id=units[0].pk, criterion=criterion)
    assert state.status == Status.NEEDS_ADJUDICATION
    assert [(c.stage, c.value) for c in state.in_conflict] == [("label", 1), ("review", 0)]
    assert final_labels(criterion=criterion) == {}
    label(adjudicator, criterion, Stage.ADJUDICATION, 1, comment="La réponse reste dans le sujet.")
    assert final_labels(criterion=criterion) == {units[0].pk: 1}


def test_override_without_a_comment_is_refused_and_stores_nothing(campaign, annotator, reviewer):
    criterion, units = sampled(campaign=campaign, answers=1)
    label(annotator, criterion, Stage.LABEL, 1)
    unit = next_unit(user=reviewer, criterion=criterion, stage=Stage.REVIEW)
    with pytest.raises(WorkflowError) as error:
        submit_label(
            user=reviewer, unit_id=unit.pk, criterion=criterion, stage=Stage.REVIEW, value=0, comment=" "
        )
    assert error.value.code == "comment_required"
    assert not Label.objects.filter(stage=Stage.REVIEW).exists()
    # The lease survives the refusal: the reviewer gets the same unit back.
    assert next_unit(user=reviewer, criterion=criterion, stage=Stage.REVIEW) == unit


def test_adjudication_needs_a_reason_and_a_disagreement(campaign, annotator, reviewer, adjudicator):
    criterion, units = sampled(campaign=campaign, answers=2)
    label(annotator, criterion, Stage.LABEL, 1)
    label(annotator, criterion, Stage.LABEL, 1)
    label(reviewer, criterion, Stage.REVIEW, 1)
    label(reviewer, criterion, Stage.REVIEW, 0, comment="non")
    unit = next_unit(user=adjudicator, criterion=criterion, stage=Stage.ADJUDICATION)
    assert unit == units[1]
    with pytest.raises(WorkflowError) as error:
        submit_label(
            user=adjudicator, unit_id=unit.pk, criterion=criterion, stage=Stage.ADJUDICATION, value=0
        )
    assert error.value.code == "comment_required"
    with pytest.raises(WorkflowError) as error:
        label(adjudicator, criterion, Stage.ADJUDICATION, 0, unit=units[0], comment="rien à trancher")
    assert error.value.code == "changed"


def test_no_review_in_blind_mode_and_no_adjudication_before_a_disagreement(campaign, reviewer, adjudicator):
    criterion, _ = sampled(campaign=campaign, answers=1)
    assert next_unit(user=adjudicator, criterion=criterion, stage=Stage.ADJUDICATION) is None
    blind(criterion.campaign)
    with pytest.raises(WorkflowError) as error:
        next_unit(user=reviewer, criterion=criterion, stage=Stage.REVIEW)
    assert error.value.code == "stage"


# Blind double mode


def test_blind_two_agreeing_labels_are_final(campaign):
    blind(campaign)
    criterion, units = sampled(campaign=campaign, answers=1)
    first, second = member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR)
    label(first, criterion, Stage.LABEL, 1)
    assert final_labels(criterion=criterion) == {}
    label(second, criterion, Stage.LABEL, 1)
    assert final_labels(criterion=criterion) == {units[0].pk: 1}


def test_blind_differing_labels_go_to_adjudication(campaign, adjudicator):
    blind(campaign)
    criterion, units = sampled(campaign=campaign, answers=1)
    first, second = member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR)
    label(first, criterion, Stage.LABEL, 1)
    label(second, criterion, Stage.LABEL, 0)
    assert unit_state(unit_id=units[0].pk, criterion=criterion).status == Status.NEEDS_ADJUDICATION
    label(adjudicator, criterion, Stage.ADJUDICATION, 0, comment="chiffre absent de la source")
    assert final_labels(criterion=criterion) == {units[0].pk: 0}


def test_blind_slots_go_to_two_different_people(campaign):
    blind(campaign)
    criterion, units = sampled(campaign=campaign, answers=1)
    first, second = member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR)
    assert next_unit(user=first, criterion=criterion, stage=Stage.LABEL) == units[0]
    # The second slot is free while the first person holds the first one.
    assert next_unit(user=second, criterion=criterion, stage=Stage.LABEL) == units[0]
    label(first, criterion, Stage.LABEL, 1, unit=units[0])
    assert next_unit(user=first, criterion=criterion, stage=Stage.LABEL) is None
    with pytest.raises(WorkflowError) as error:
        label(first, criterion, Stage.LABEL, 0, unit=units[0])
    assert error.value.code == "done"
    third = member(campaign, Role.ANNOTATOR)
    assert next_unit(user=third, criterion=criterion, stage=Stage.LABEL) is None


# Never two stages of one unit


def test_a_person_with_two_roles_never_reviews_their_own_label(campaign, reviewer):
    both = member(campaign, Role.ANNOTATOR, Role.REVIEWER)
    criterion, units = sampled(campaign=campaign, answers=2)
    mine = label(both, criterion, Stage.LABEL, 1)
    assert next_unit(user=both, criterion=criterion, stage=Stage.REVIEW) is None
    with pytest.raises(WorkflowError) as error:
        label(both, criterion, Stage.REVIEW, 1, unit=Unit.objects.get(pk=mine.unit_id))
    assert error.value.code == "other_stage"
    assert next_unit(user=reviewer, criterion=criterion, stage=Stage.REVIEW).pk == mine.unit_id


def test_a_live_lease_at_one_stage_keeps_the_person_off_the_others(campaign, annotator):
    everything = member(campaign, Role.ANNOTATOR, Role.REVIEWER, Role.ADJUDICATOR)
    criterion, units = sampled(campaign=campaign, answers=1)
    label(annotator, criterion, Stage.LABEL, 1)
    assert next_unit(user=everything, criterion=criterion, stage=Stage.REVIEW) == units[0]
    label(everything, criterion, Stage.REVIEW, 0, unit=units[0], comment="non")
    assert next_unit(user=everything, criterion=criterion, stage=Stage.ADJUDICATION) is None


# Roles and values


def test_each_stage_needs_its_role(campaign, annotator, reviewer, analyst):
    criterion, units = sampled(campaign=campaign, answers=1)
    with pytest.raises(PermissionDenied):
        next_unit(user=reviewer, criterion=criterion, stage=Stage.LABEL)
    with pytest.raises(PermissionDenied):
        next_unit(user=annotator, criterion=criterion, stage=Stage.REVIEW)
    with pytest.raises(PermissionDenied):
        submit_label(user=analyst, unit_id=units[0].pk, criterion=criterion, stage=Stage.LABEL, value=1)
    assert not Assignment.objects.exists()


@pytest.mark.parametrize("value", [2, -1, None, "1", True])
def test_a_label_is_zero_or_one(campaign, annotator, value):
    criterion, units = sampled(campaign=campaign, answers=1)
    unit = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    with pytest.raises(WorkflowError) as error:
        submit_label(user=annotator, unit_id=unit.pk, criterion=criterion, stage=Stage.LABEL, value=value)
    assert error.value.code == "value"
    assert not Label.objects.exists()


def test_a_unit_of_another_level_or_campaign_is_refused(campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=1)
    sentence_unit = Unit.objects.filter(campaign=campaign, level="sentence").first()
    with pytest.raises(WorkflowError) as error:
        label(annotator, criterion, Stage.LABEL, 1, unit=sentence_unit)
    assert error.value.code == "unit"


# The queue and its leases


def test_queue_holds_only_the_latest_sample_with_items(campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=3)
    sample_units(criterion=criterion, units=[units[2], units[1]])
    Sample.objects.create(campaign=campaign, criterion=criterion)  # being drawn: no items yet
    seen = []
    while (unit := next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)) is not None:
        seen.append(unit)
        label(annotator, criterion, Stage.LABEL, 1, unit=unit)
    assert seen == [units[2], units[1]]


def test_units_without_a_sample_are_not_queued(campaign, annotator):
    make_answer(campaign=campaign)
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    assert next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL) is None


def test_queue_order_is_theme_then_cluster_then_rank(campaign, annotator):
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")
    answers = [make_answer(campaign=campaign, theme=t) for t in ("IT", "Finance", "IT", "Finance")]
    units = [Unit.objects.get(answer=a, level="answer") for a in answers]
    sample = Sample.objects.create(campaign=campaign, criterion=criterion, status=Sample.Status.DONE)
    for unit, (cluster, rank) in zip(units, [(0, 1), (1, 0), (0, 0), (0, 0)], strict=True):
        SampleItem.objects.create(
            sample=sample,
            unit=unit,
            theme=unit.theme,
            cluster=cluster,
            cluster_size=2,
            inclusion_probability=1,
            rank=rank,
        )
    open_slots.rebuild(criterion=criterion)
    order = []
    while (unit := next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)) is not None:
        order.append(unit)
        label(annotator, criterion, Stage.LABEL, 0, unit=unit)
    assert order == [units[3], units[1], units[2], units[0]]


def test_asking_again_returns_my_own_lease(campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=3)
    first = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL) == first
    assert Assignment.objects.filter(user=annotator).count() == 1


def test_next_unit_never_returns_a_unit_leased_by_someone_else(campaign, annotator):
    other = member(campaign, Role.ANNOTATOR)
    criterion, units = sampled(campaign=campaign, answers=2)
    mine = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    theirs = next_unit(user=other, criterion=criterion, stage=Stage.LABEL)
    assert {mine, theirs} == set(units)
    third = member(campaign, Role.ANNOTATOR)
    assert next_unit(user=third, criterion=criterion, stage=Stage.LABEL) is None


def test_an_expired_lease_returns_the_unit_to_the_queue(campaign, annotator):
    other = member(campaign, Role.ANNOTATOR)
    criterion, units = sampled(campaign=campaign, answers=1)
    assert next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL) == units[0]
    assert next_unit(user=other, criterion=criterion, stage=Stage.LABEL) is None
    expire_leases(at=timezone.now() - timedelta(seconds=1))
    assert next_unit(user=other, criterion=criterion, stage=Stage.LABEL) == units[0]
    # The first holder comes back too late: the slot is someone else's now.
    with pytest.raises(WorkflowError) as error:
        label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    assert error.value.code == "taken"
    assert not Label.objects.exists()
    label(other, criterion, Stage.LABEL, 0, unit=units[0])
    assert Label.objects.get().user == other


def test_an_expired_lease_nobody_took_can_still_be_submitted(campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=1)
    unit = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    expire_leases(at=timezone.now() - timedelta(minutes=1))
    stored = label(annotator, criterion, Stage.LABEL, 1, unit=unit)
    assert Assignment.objects.get().label == stored


def test_an_eligible_unit_can_be_labelled_without_a_lease_but_not_one_outside_the_sample(campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=1)
    label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    outside = Unit.objects.get(answer=make_answer(campaign=campaign), level="answer")
    with pytest.raises(WorkflowError) as error:
        label(annotator, criterion, Stage.LABEL, 1, unit=outside)
    assert error.value.code == "not_queued"


def test_a_unit_with_an_imported_label_is_final_and_never_queued(campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=2)
    import_label(unit=units[0], criterion=criterion, value=0)
    assert final_labels(criterion=criterion) == {units[0].pk: 0}
    assert next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL) == units[1]
    with pytest.raises(WorkflowError) as error:
        label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    assert error.value.code == "final"


# Skip


def test_a_skipped_unit_comes_back_after_the_others(campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=3)
    first = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert skip(user=annotator, criterion=criterion, stage=Stage.LABEL, unit_id=first.pk)
    order = []
    while (unit := next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)) is not None:
        order.append(unit)
        label(annotator, criterion, Stage.LABEL, 1, unit=unit)
    assert order == [units[1], units[2], units[0]]


def test_skipped_units_cycle_in_the_order_they_were_skipped(campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=2)
    order = []
    for _ in range(4):
        unit = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
        order.append(unit)
        skip(user=annotator, criterion=criterion, stage=Stage.LABEL, unit_id=unit.pk)
    assert order == [units[0], units[1], units[0], units[1]]


def test_a_skipped_unit_is_free_for_someone_else_at_once(campaign, annotator):
    other = member(campaign, Role.ANNOTATOR)
    criterion, units = sampled(campaign=campaign, answers=1)
    unit = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    skip(user=annotator, criterion=criterion, stage=Stage.LABEL, unit_id=unit.pk)
    assert next_unit(user=other, criterion=criterion, stage=Stage.LABEL) == unit
    assert not skip(user=annotator, criterion=criterion, stage=Stage.LABEL, unit_id=unit.pk)


# Idempotent submits


def test_submitting_the_same_request_twice_stores_one_label(campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=2)
    unit = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    kwargs = {"user": annotator, "unit_id": unit.pk, "criterion": criterion, "stage": Stage.LABEL}
    once = submit_label(**kwargs, value=1, request_key="click-1")
    twice = submit_label(**kwargs, value=1, request_key="click-1")
    assert once.pk == twice.pk
    assert Label.objects.count() == 1
    assert next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL) == units[1]


def test_a_request_key_of_another_person_is_refused(campaign, annotator):
    other = member(campaign, Role.ANNOTATOR)
    criterion, units = sampled(campaign=campaign, answers=2)
    label(annotator, criterion, Stage.LABEL, 1, key="shared")
    with pytest.raises(WorkflowError) as error:
        label(other, criterion, Stage.LABEL, 1, key="shared")
    assert error.value.code == "request_key"
    assert Label.objects.count() == 1


# Undo


def test_undo_appends_a_withdrawal_and_gives_the_unit_back(campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=2)
    first = label(annotator, criterion, Stage.LABEL, 1)
    withdrawal = undo_last(user=annotator, criterion=criterion, stage=Stage.LABEL, request_key="undo-1")
    assert (withdrawal.unit_id, withdrawal.value, withdrawal.user) == (first.unit_id, None, annotator)
    assert Label.objects.count() == 2
    assert unit_state(unit_id=first.unit_id, criterion=criterion).first == ()
    assert next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL).pk == first.unit_id
    corrected = label(annotator, criterion, Stage.LABEL, 0)
    assert corrected.unit_id == first.unit_id
    assert unit_state(unit_id=first.unit_id, criterion=criterion).first[0].value == 0


def test_undo_after_confirmation_is_refused_and_the_final_label_stays(campaign, annotator, reviewer):
    criterion, units = sampled(campaign=campaign, answers=1)
    label(annotator, criterion, Stage.LABEL, 1)
    label(reviewer, criterion, Stage.REVIEW, 1)
    with pytest.raises(WorkflowError) as error:
        undo_last(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert error.value.code == "built_on"
    assert final_labels(criterion=criterion) == {units[0].pk: 1}


def test_undoing_a_review_withdraws_the_final_label(campaign, annotator, reviewer):
    criterion, units = sampled(campaign=campaign, answers=1)
    label(annotator, criterion, Stage.LABEL, 1)
    label(reviewer, criterion, Stage.REVIEW, 1)
    undo_last(user=reviewer, criterion=criterion, stage=Stage.REVIEW)
    assert final_labels(criterion=criterion) == {}
    assert unit_state(unit_id=units[0].pk, criterion=criterion).status == Status.NEEDS_REVIEW


def test_undo_twice_with_the_same_key_withdraws_once(campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=2)
    label(annotator, criterion, Stage.LABEL, 1)
    label(annotator, criterion, Stage.LABEL, 0)
    undo_last(user=annotator, criterion=criterion, stage=Stage.LABEL, request_key="u")
    undo_last(user=annotator, criterion=criterion, stage=Stage.LABEL, request_key="u")
    assert Label.objects.filter(value__isnull=True).count() == 1
    assert final_labels(criterion=criterion) == {}
    assert [s.first[0].value for s in unit_states(criterion=criterion).values() if s.first] == [1]


def test_a_unit_handed_back_says_what_its_person_did_with_it_before(campaign, annotator, reviewer):
    criterion, units = sampled(campaign=campaign, answers=3)
    fresh = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert (fresh.previous_value, fresh.came_back_skipped) == (None, False)
    label(annotator, criterion, Stage.LABEL, 0, unit=fresh)
    label(annotator, criterion, Stage.LABEL, 1, unit=units[1])
    undo_last(user=annotator, criterion=criterion, stage=Stage.LABEL)
    undo_last(user=annotator, criterion=criterion, stage=Stage.LABEL)
    # Undo gives the units back with the answers withdrawn, latest undo first.
    back = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert (back.pk, back.previous_value, back.came_back_skipped) == (units[0].pk, 0, False)
    # Skipped, it comes back after the others, still with the answer it had; the others did not.
    skip(user=annotator, criterion=criterion, stage=Stage.LABEL, unit_id=back.pk)
    again = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert (again.pk, again.previous_value) == (units[1].pk, 1)
    label(annotator, criterion, Stage.LABEL, 1, unit=again)
    other = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert (other.pk, other.previous_value, other.came_back_skipped) == (units[2].pk, None, False)
    label(annotator, criterion, Stage.LABEL, 1, unit=other)
    last = next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert (last.pk, last.previous_value, last.came_back_skipped) == (units[0].pk, 0, True)
    # Only the person's own answer, at that stage: a reviewer sees none on a unit they never reviewed.
    label(annotator, criterion, Stage.LABEL, 1, unit=last)
    reviewed = next_unit(user=reviewer, criterion=criterion, stage=Stage.REVIEW)
    assert reviewed.previous_value is None


def test_nothing_to_undo(campaign, annotator):
    criterion, _ = sampled(campaign=campaign, answers=1)
    with pytest.raises(WorkflowError) as error:
        undo_last(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert error.value.code == "nothing"


def test_a_withdrawn_first_label_cannot_be_reviewed(campaign, annotator, reviewer):
    criterion, units = sampled(campaign=campaign, answers=1)
    label(annotator, criterion, Stage.LABEL, 1)
    unit = next_unit(user=reviewer, criterion=criterion, stage=Stage.REVIEW)
    undo_last(user=annotator, criterion=criterion, stage=Stage.LABEL)
    with pytest.raises(WorkflowError) as error:
        label(reviewer, criterion, Stage.REVIEW, 1, unit=unit)
    assert error.value.code == "changed"
    assert next_unit(user=reviewer, criterion=criterion, stage=Stage.REVIEW) is None


# Final labels over many units


def test_final_labels_takes_each_persons_latest_row_and_can_be_restricted(campaign, annotator, reviewer):
    criterion, units = sampled(campaign=campaign, answers=3)
    for unit, value in zip(units, (1, 0, 1), strict=True):
        label(annotator, criterion, Stage.LABEL, value, unit=unit)
        label(reviewer, criterion, Stage.REVIEW, value, unit=unit)
    assert final_labels(criterion=criterion) == {units[0].pk: 1, units[1].pk: 0, units[2].pk: 1}
    assert final_labels(criterion=criterion, unit_ids=[units[1].pk, units[2].pk]) == {
        units[1].pk: 0,
        units[2].pk: 1,
    }
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    assert final_labels(criterion=veracity) == {}


def test_final_labels_runs_in_two_queries_whatever_the_number_of_units(campaign, django_assert_num_queries):
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    make_answers(campaign=campaign, about=[("Finance", "simple")] * 30)
    units = list(Unit.objects.filter(campaign=campaign, level="answer"))
    Label.objects.bulk_create(
        Label(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=unit.pk % 2) for unit in units
    )
    criterion = Criterion.objects.get(pk=criterion.pk)
    with django_assert_num_queries(2):
        finals = final_labels(criterion=criterion)
    assert len(finals) == 30


# Progress and queues


def test_progress_counts_my_labels_and_everyones(campaign, annotator, reviewer):
    other = member(campaign, Role.ANNOTATOR)
    criterion, units = sampled(campaign=campaign, answers=4)
    label(annotator, criterion, Stage.LABEL, 1)
    label(annotator, criterion, Stage.LABEL, 1)
    label(other, criterion, Stage.LABEL, 0)
    progress = stage_progress(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert (progress.mine, progress.filled, progress.total, progress.sample_size) == (2, 3, 4, 4)
    assert progress.percent == 75
    review = stage_progress(user=reviewer, criterion=criterion, stage=Stage.REVIEW)
    assert (review.mine, review.filled, review.total) == (0, 0, 3)


def test_my_queues_follow_my_roles_and_count_what_is_left_for_me(campaign, annotator):
    both = member(campaign, Role.ANNOTATOR, Role.REVIEWER)
    criterion, units = sampled(campaign=campaign, answers=3)
    label(annotator, criterion, Stage.LABEL, 1)
    label(both, criterion, Stage.LABEL, 1)
    queues = {(q.criterion.name, q.stage): q for q in my_queues(user=both, campaign=campaign)}
    assert set(queues) == {
        ("citation_support", "label"),
        ("citation_support", "review"),
        ("relevance", "label"),
        ("relevance", "review"),
        ("veracity", "label"),
        ("veracity", "review"),
    }
    assert queues[("relevance", "label")].available == 1
    assert queues[("relevance", "review")].available == 1  # not the unit they labelled themselves
    assert queues[("relevance", "label")].progress.mine == 1
    assert queues[("veracity", "label")].available == 0  # no veracity sample


# Query counts do not grow with the campaign


@pytest.mark.parametrize("stage", [Stage.LABEL, Stage.REVIEW])
@pytest.mark.parametrize("answers", [2, 40])
def test_next_unit_and_submit_query_counts_do_not_grow_with_the_campaign(
    campaign, stage, answers, django_assert_num_queries
):
    criterion, units = sampled(campaign=campaign, answers=answers)
    annotator, reviewer = member(campaign, Role.ANNOTATOR), member(campaign, Role.REVIEWER)
    for unit in units[: len(units) // 2]:
        # Half the sample already done, so the queue has to look past finished units.
        label(annotator, criterion, Stage.LABEL, 1, unit=unit)
    # Loaded as the annotator's request loads it (annotation.access.get_criterion_for): with its
    # current guidelines version, which a label records without a query.
    criterion = Criterion.objects.select_related("campaign", "current_version").get(pk=criterion.pk)
    user = annotator if stage == Stage.LABEL else reviewer
    # roles, savepoint, my lease (none), front of the queue held (a second query on SQLite),
    # insert of the lease, unit, release
    with django_assert_num_queries(7 + FRONT_HELD_APART):
        unit = next_unit(user=user, criterion=criterion, stage=stage)
    # roles, savepoint, my lease's open slot held longer, the lease extended, unit, release
    with django_assert_num_queries(6):
        assert next_unit(user=user, criterion=criterion, stage=stage) == unit
    # roles, savepoint, unit lock with its slots, its open slots locked, label insert, slot
    # update, the unit's closed slots deleted and opened ones inserted, the author's counts, release
    with django_assert_num_queries(10):
        submit_label(user=user, unit_id=unit.pk, criterion=criterion, stage=stage, value=1, request_key="q")


def test_next_unit_query_count_is_exact(campaign, annotator, django_assert_num_queries):
    criterion, _ = sampled(campaign=campaign, answers=3)
    # roles, savepoint, my lease (none), front of the queue held (a second query on SQLite),
    # insert of the lease, unit, release
    with django_assert_num_queries(7 + FRONT_HELD_APART):
        assert next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL) is not None


def test_a_replayed_submit_after_the_review_returns_the_first_label(campaign, annotator, reviewer):
    criterion, units = sampled(campaign=campaign, answers=1)
    first = label(annotator, criterion, Stage.LABEL, 1, key="late-retry")
    label(reviewer, criterion, Stage.REVIEW, 1)
    again = submit_label(
        user=annotator,
        unit_id=units[0].pk,
        criterion=criterion,
        stage=Stage.LABEL,
        value=1,
        request_key="late-retry",
    )
    assert again.pk == first.pk
    assert Label.objects.filter(stage=Stage.LABEL).count() == 1


def test_the_unit_given_back_by_undo_comes_before_the_one_on_screen(campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=3)
    label(annotator, criterion, Stage.LABEL, 1)
    assert next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL) == units[1]
    undo_last(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL) == units[0]
    label(annotator, criterion, Stage.LABEL, 0, unit=units[0])
    assert next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL) == units[1]


def test_blind_queues_count_what_is_left_for_each_person(campaign, adjudicator):
    blind(campaign)
    first, second = member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR)
    criterion, units = sampled(campaign=campaign, answers=2)
    label(first, criterion, Stage.LABEL, 1, unit=units[0])
    label(second, criterion, Stage.LABEL, 0, unit=units[0])
    label(first, criterion, Stage.LABEL, 1, unit=units[1])
    mine = {(q.criterion.name, q.stage): q.available for q in my_queues(user=first, campaign=campaign)}
    theirs = {(q.criterion.name, q.stage): q.available for q in my_queues(user=second, campaign=campaign)}
    settling = {
        (q.criterion.name, q.stage): q.available for q in my_queues(user=adjudicator, campaign=campaign)
    }
    assert mine[("relevance", "label")] == 0
    assert theirs[("relevance", "label")] == 1
    assert settling == {
        ("citation_support", "adjudication"): 0,
        ("relevance", "adjudication"): 1,
        ("veracity", "adjudication"): 0,
    }
    progress = stage_progress(user=first, criterion=criterion, stage=Stage.LABEL)
    assert (progress.mine, progress.filled, progress.total) == (2, 3, 4)


# Progress of the whole criterion


def test_criterion_progress_counts_final_labels_in_review_mode(campaign, annotator, reviewer, adjudicator):
    from annotation.workflow.queue import criterion_progress

    criterion, units = sampled(campaign=campaign, answers=5)
    import_label(unit=units[4], criterion=criterion, value=1)
    assert (
        criterion_progress(criterion=criterion).settled,
        criterion_progress(criterion=criterion).total,
    ) == (
        1,
        5,
    )
    label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    label(annotator, criterion, Stage.LABEL, 1, unit=units[1])
    label(annotator, criterion, Stage.LABEL, 0, unit=units[2])
    assert criterion_progress(criterion=criterion).settled == 1  # first labels alone are not final
    label(reviewer, criterion, Stage.REVIEW, 1, unit=units[0])  # confirms: final
    label(reviewer, criterion, Stage.REVIEW, 0, unit=units[1], comment="Non.")  # overrides: not yet
    assert criterion_progress(criterion=criterion).settled == 2
    label(adjudicator, criterion, Stage.ADJUDICATION, 0, unit=units[1], comment="Le relecteur a raison.")
    progress = criterion_progress(criterion=criterion)
    assert (progress.settled, progress.total, progress.percent, progress.blind) == (3, 5, 60, False)
    assert len(final_labels(criterion=criterion)) == progress.settled


def test_criterion_progress_in_blind_mode_counts_pairs_whatever_their_values(campaign):
    from annotation.workflow.queue import criterion_progress

    blind(campaign)
    criterion, units = sampled(campaign=campaign, answers=3)
    first, second = member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR)
    label(first, criterion, Stage.LABEL, 1, unit=units[0])
    label(second, criterion, Stage.LABEL, 0, unit=units[0])  # a disagreement, still labelled twice
    label(first, criterion, Stage.LABEL, 1, unit=units[1])
    progress = criterion_progress(criterion=criterion)
    assert (progress.settled, progress.total, progress.blind) == (1, 3, True)


def test_work_progress_is_stage_and_criterion_progress_in_one_query(
    campaign, annotator, reviewer, adjudicator, django_assert_num_queries
):
    """The annotator page reads both figures with work_progress: the same as the two functions."""
    from annotation.workflow.queue import criterion_progress, work_progress

    criterion, units = sampled(campaign=campaign, answers=4)

    def check(user, stage) -> None:
        with django_assert_num_queries(1):
            together = work_progress(user=user, criterion=criterion, stage=stage)
        assert together == (
            stage_progress(user=user, criterion=criterion, stage=stage),
            criterion_progress(criterion=criterion),
        )

    check(annotator, Stage.LABEL)
    label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    label(annotator, criterion, Stage.LABEL, 1, unit=units[1])
    check(annotator, Stage.LABEL)
    check(reviewer, Stage.REVIEW)
    label(reviewer, criterion, Stage.REVIEW, 0, unit=units[1], comment="Non.")
    check(reviewer, Stage.REVIEW)
    check(adjudicator, Stage.ADJUDICATION)
    label(adjudicator, criterion, Stage.ADJUDICATION, 0, unit=units[1], comment="Le relecteur a raison.")
    check(adjudicator, Stage.ADJUDICATION)
    assert work_progress(user=annotator, criterion=criterion, stage=Stage.LABEL)[1].settled == 1


def test_work_progress_in_blind_mode_matches_the_two_functions(campaign):
    from annotation.workflow.queue import criterion_progress, work_progress

    blind(campaign)
    criterion, units = sampled(campaign=campaign, answers=3)
    first, second = member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR)
    label(first, criterion, Stage.LABEL, 1, unit=units[0])
    label(second, criterion, Stage.LABEL, 0, unit=units[0])
    label(first, criterion, Stage.LABEL, 1, unit=units[1])
    for user in (first, second):
        assert work_progress(user=user, criterion=criterion, stage=Stage.LABEL) == (
            stage_progress(user=user, criterion=criterion, stage=Stage.LABEL),
            criterion_progress(criterion=criterion),
        )
    assert work_progress(user=first, criterion=criterion, stage=Stage.LABEL)[1].settled == 1


def test_stage_progress_says_what_the_rest_of_the_total_is(campaign, annotator):
    other = member(campaign, Role.ANNOTATOR)
    criterion, units = sampled(campaign=campaign, answers=5)
    import_label(unit=units[4], criterion=criterion, value=1)
    label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    label(other, criterion, Stage.LABEL, 0, unit=units[1])
    before = timezone.now()
    held = next_unit(user=other, criterion=criterion, stage=Stage.LABEL)
    assert held is not None and held.pk == units[2].pk
    progress = stage_progress(user=annotator, criterion=criterion, stage=Stage.LABEL)
    assert (progress.mine, progress.by_others, progress.held, progress.imported) == (1, 1, 1, 1)
    assert progress.left_for_others == 1  # units[3]: 5 = 1 + 1 + 1 held + 1 imported + 1
    assert progress.held_until is not None
    lease = timedelta(minutes=campaign.lease_minutes)
    assert before + lease - timedelta(seconds=5) <= progress.held_until <= timezone.now() + lease
    # One's own lease is not "held by others".
    assert stage_progress(user=other, criterion=criterion, stage=Stage.LABEL).held == 0


def test_stage_progress_in_blind_mode_counts_imported_units_for_both_slots(campaign):
    blind(campaign)
    first = member(campaign, Role.ANNOTATOR)
    criterion, units = sampled(campaign=campaign, answers=3)
    import_label(unit=units[2], criterion=criterion, value=0)
    label(first, criterion, Stage.LABEL, 1, unit=units[0])
    progress = stage_progress(user=first, criterion=criterion, stage=Stage.LABEL)
    assert (progress.total, progress.filled, progress.imported_slots, progress.left_for_others) == (
        6,
        1,
        2,
        3,
    )


def test_campaign_unit_states_agree_with_each_criterions_states_in_one_query(
    campaign, annotator, reviewer, django_assert_num_queries
):
    from annotation.workflow.state import campaign_unit_states

    relevance, _ = sampled(campaign=campaign, answers=3)
    veracity = Criterion.objects.select_related("campaign").get(campaign=campaign, name="veracity")
    sample_units(criterion=veracity, units=list(Unit.objects.filter(campaign=campaign, level=veracity.level)))
    for value in (1, 0, 1):
        label(annotator, relevance, Stage.LABEL, value)
    label(annotator, veracity, Stage.LABEL, 0)
    label(reviewer, relevance, Stage.REVIEW, 1)
    with django_assert_num_queries(1):
        states = campaign_unit_states(campaign=campaign)
    assert set(states) == {relevance.pk, veracity.pk}
    assert states[relevance.pk] == unit_states(criterion=relevance)
    assert states[veracity.pk] == unit_states(criterion=veracity)
    assert len(states[relevance.pk]) == 3 and len(states[veracity.pk]) == 1


def test_campaign_unit_states_can_leave_out_units_nobody_labelled(campaign, annotator):
    from annotation.workflow.state import campaign_unit_states

    relevance, units = sampled(campaign=campaign, answers=2)
    label(annotator, relevance, Stage.LABEL, 1, unit=units[1])
    # Imported afterwards (the queue refuses units that already have an imported label).
    Label.objects.create(unit=units[0], criterion=relevance, stage=Stage.IMPORTED, value=1)
    Label.objects.create(unit=units[1], criterion=relevance, stage=Stage.IMPORTED, value=0)
    every = campaign_unit_states(campaign=campaign)[relevance.pk]
    people = campaign_unit_states(campaign=campaign, labelled_by_people=True)[relevance.pk]
    assert set(every) == {units[0].pk, units[1].pk}
    assert set(people) == {units[1].pk}
    assert people[units[1].pk].final == 0  # the imported label is final
