"""Which of a criterion's samples is its current one: the rule the queue, the label check and
the estimates' design weights share, so that what people label and how it is weighted agree.

The current sample is the criterion's **newest sample that has items**, whatever its status.
Items are only ever written whole (a draw stores them in one transaction; a top-up keeps the
last successful items, with their inclusion probabilities, until it succeeds), so:

- a new draw being computed, or one that failed, has no items: the previous sample stays
  current;
- a sample being topped up, or whose top-up failed, keeps its last successful items: it stays
  current, with those items and their probabilities.

The same rule is given twice, as an ORM subquery and as SQL for the queue's hand-written
queries; ``tests/annotation/sampling/test_current.py`` checks that both pick the same sample in every state.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Subquery

from annotation.models import Criterion, Sample, SampleItem

_S, _SI = Sample._meta.db_table, SampleItem._meta.db_table

# The id of the current sample of criterion %(criterion)s, as a scalar subquery.
CURRENT_SAMPLE_SQL = (
    f"(SELECT s.id FROM {_S} s WHERE s.criterion_id = %(criterion)s"
    f" AND EXISTS (SELECT 1 FROM {_SI} x WHERE x.sample_id = s.id)"
    " ORDER BY s.created_at DESC, s.id DESC LIMIT 1)"
)


def current_sample_id(*, criterion: Criterion) -> Subquery:
    """A subquery: the id of the criterion's current sample (None when it has none)."""
    return Subquery(
        criterion.samples.filter(Exists(SampleItem.objects.filter(sample_id=OuterRef("pk"))))
        .order_by("-created_at", "-pk")
        .values("pk")[:1]
    )


def current_sample(*, criterion: Criterion) -> Sample | None:
    """The criterion's current sample, or None when no sample of it has items."""
    return Sample.objects.filter(pk=current_sample_id(criterion=criterion)).first()
