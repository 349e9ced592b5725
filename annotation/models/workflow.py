"""The human work on a criterion: labels (append-only), the leases on units (assignments),
and the stored queue (open slots and their tallies)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.campaigns import (
    Stage,
)
from annotation.models.corpus import Unit
from annotation.models.criteria import Criterion, CriterionVersion


class Label(models.Model):
    """A human label. Append-only: a correction is a new row; the final label is derived."""

    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="labels")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="labels")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="labels"
    )
    stage = models.CharField(max_length=20, choices=Stage.choices)
    # None withdraws the same person's earlier label at this stage (undo).
    value = models.PositiveSmallIntegerField(null=True, blank=True)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The guidelines its author was shown (None: an imported label, written outside Attest).
    guidelines_version = models.ForeignKey(
        CriterionVersion, on_delete=models.RESTRICT, null=True, blank=True, related_name="+"
    )
    # A client-generated key: a retried or double-clicked submit is stored once.
    request_key = models.CharField(max_length=64, null=True, blank=True, unique=True)
    # Imported labels only (Label Studio, Argilla): the seconds their author spent on the unit
    # and when the source tool last saw the label edited (None: unknown, or made in Attest).
    seconds_spent = models.FloatField(null=True, blank=True)
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            # 0/1 for a binary criterion, a category's value (1..20) for a categorical one; which
            # values a criterion takes is checked where labels are made (annotation.criteria.categories).
            models.CheckConstraint(
                condition=Q(value__gte=0, value__lte=20) | Q(value__isnull=True), name="label_value_range"
            ),
        ]
        indexes = [
            models.Index(fields=["criterion", "unit", "stage"]),
            models.Index(fields=["user", "created_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.stage} {self.value} on unit {self.unit_id}"


class Assignment(models.Model):
    """One label slot of a unit at a stage for a criterion: held under a lease, or filled by a label.

    A stage has one slot (two for the first stage in blind double mode). The unique slot is what
    keeps two people from being handed the same unit at the same stage: a lease is taken by
    inserting the row or by a conditional update of an expired one. Filling the slot links the
    label; withdrawing that label turns the row back into a lease held by the same person.
    """

    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="assignments")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="assignments")
    stage = models.CharField(max_length=20, choices=Stage.choices)
    slot = models.PositiveSmallIntegerField(default=1)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    # Deleting a label (never done by the workflow) frees its slot.
    label = models.OneToOneField(
        Label, on_delete=models.CASCADE, null=True, blank=True, related_name="assignment"
    )
    # The lease ends at this time; None once the slot is filled.
    expires_at = models.DateTimeField(null=True, blank=True)
    # Set when the holder skipped the unit: it comes back to them after the others.
    skipped_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["unit_id", "criterion_id", "stage", "slot"]
        constraints = [
            models.UniqueConstraint(
                fields=["unit", "criterion", "stage", "slot"], name="assignment_unique_slot"
            ),
            # One slot of a unit at a stage per person: the two blind slots never go to one person,
            # whatever two of their requests race (a submit and a prefetch, a double press); the
            # loser's claim fails on this index and looks further (annotation.workflow.queue).
            models.UniqueConstraint(
                fields=["unit", "criterion", "stage", "user"], name="assignment_one_slot_per_person"
            ),
            models.CheckConstraint(condition=Q(slot__gte=1) & Q(slot__lte=2), name="assignment_slot_range"),
            models.CheckConstraint(
                condition=Q(label__isnull=True, expires_at__isnull=False)
                | Q(label__isnull=False, expires_at__isnull=True),
                name="assignment_leased_or_filled",
            ),
        ]
        indexes = [
            models.Index(fields=["criterion", "stage", "user"]),
            # Leases (live, expired or skipped), never the filled slots: a person's own lease and
            # the slots others hold are read from it on every label, whatever the labels done.
            models.Index(
                fields=["criterion", "stage", "user"],
                condition=Q(label__isnull=True),
                name="assignment_open_lease",
            ),
        ]

    def __str__(self) -> str:
        state = "filled" if self.label_id else "leased"
        return f"{self.stage} slot {self.slot} of unit {self.unit_id} {state} by {self.user_id}"


class OpenSlot(models.Model):
    """A slot of the criterion's current sample that no label fills yet: the work queue, stored.

    Rows are derived from the sample, the slots and the labels (``annotation.workflow.open_slots``
    keeps them in step with every write), so that handing out the next unit reads the front of
    one index instead of testing every unit of the sample. A slot opens at a stage once its
    prerequisite holds (a first label to review, a disagreement to adjudicate) and closes when a
    label fills it; ``held_until`` mirrors the live lease on it, if any.
    """

    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="+", db_index=False)
    stage = models.CharField(max_length=20, choices=Stage.choices)
    slot = models.PositiveSmallIntegerField(default=1)
    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="+")
    theme = models.CharField(max_length=200)
    cluster = models.IntegerField()
    rank = models.PositiveIntegerField()
    held_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["criterion", "unit", "stage", "slot"], name="openslot_unique_slot"
            ),
        ]
        indexes = [
            # The queue's order: the front of a stage's queue is the first free row of this index.
            models.Index(
                fields=["criterion", "stage", "theme", "cluster", "rank", "unit", "slot"],
                name="openslot_queue_order",
            )
        ]

    def __str__(self) -> str:
        return f"open {self.stage} slot {self.slot} of unit {self.unit_id}"


class QueueTally(models.Model):
    """Counts of a criterion's current sample, set when the sample changes and then moved by each
    label, so that progress is read from a few rows instead of counted over the sample.

    ``kind`` is a stage (one row per person: the slots they filled there, and the units their
    labels settled, net of undos), ``sample`` (no person: the sample's size, and the units
    settled when the counts were last set) or ``imported`` (no person: units with an imported
    label, final from the start).
    """

    SAMPLE, IMPORTED = "sample", "imported"

    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="+", db_index=False)
    kind = models.CharField(max_length=20)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    filled = models.IntegerField(default=0)
    settled = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["criterion", "kind", "user"], name="queuetally_unique_row"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} of {self.user_id}: {self.filled} filled, {self.settled} settled"
