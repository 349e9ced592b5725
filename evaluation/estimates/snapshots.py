"""Dated report snapshots: how the estimates moved as labels arrived, which numbers the report
page and its downloads show, and two campaigns compared.

Estimates are recomputed in the background after a judge run finishes, after human labels
change (a batch of reviews or adjudications) and on demand. Each recomputation stores, for every
judge that labeled the criterion and both methods, the report's JSON as it was, unless nothing
changed since the previous snapshot of the same kind; beside it, under ``BY_QUESTION``, its
overall estimates decomposed by question, from which two versions of the assistant are compared
question by question without reading their labels again (the overview's headline).

The report page and its downloads show the latest snapshot of their parameters when there is
one, and say how old it is and whether labels or judgments arrived since
(:func:`report_to_show`); other parameters are computed on demand, and say so.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.dispatch import Signal
from django.utils import timezone

from annotation.criteria.categories import is_categorical
from annotation.models import Criterion, Label
from evaluation.estimates import judge_choice
from evaluation.estimates.codec import report_as_json
from evaluation.estimates.params import METHODS, OVERALL
from evaluation.estimates.report import compute_report
from evaluation.models import EstimateSchedule, Judge, Judgment, ReportSnapshot

logger = logging.getLogger(__name__)

SNAPSHOT_ALPHA = 0.05
# The key of a snapshot's overall estimates decomposed by question (:func:`by_question`).
BY_QUESTION = "by_question"


# A schedule older than this is taken to have lost its task (a worker wiped with its queue).
STALE_SCHEDULE = timedelta(minutes=10)
HISTORY_LIMIT = 200


# Sent after the commit of a transaction that imported labels or judgments, with the keyword
# arguments ``criterion_ids`` and ``trigger``: the app schedules their recomputation (apps.py),
# as it does when the workflow sends ``labels_changed``, so that no domain module enqueues jobs.
estimates_moved = Signal()


def announce_estimates_moved(*, criterion_ids: list[int], trigger: str) -> None:
    """Send ``estimates_moved`` for ``criterion_ids`` when the current transaction commits; a
    failing listener (a broker down) is logged, never raised back into the import."""

    def send() -> None:
        for receiver, result in estimates_moved.send_robust(
            sender=Criterion, criterion_ids=list(criterion_ids), trigger=trigger
        ):
            if isinstance(result, Exception):
                logger.error("estimates_moved listener %r failed", receiver, exc_info=result)

    transaction.on_commit(send)


def schedule_refresh(*, criterion_id: int, trigger: str, delay_s: float) -> bool:
    """Mark the criterion's estimates as due in ``delay_s`` seconds.

    True when the caller must enqueue the recomputation; False when one is already due, so a
    burst of labels (an adjudication batch) costs one recomputation. Safe under concurrency:
    the due time is taken with a conditional UPDATE. One read when a recomputation is already
    due (every label of a burst after the first).
    """
    now = timezone.now()
    # In plain SQL, as it runs after every label: whether a recomputation is due and not stale.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT due_at IS NOT NULL AND due_at >= %s FROM {EstimateSchedule._meta.db_table}"
            " WHERE criterion_id = %s",
            [connection.ops.adapt_datetimefield_value(now - STALE_SCHEDULE), criterion_id],
        )
        due = cursor.fetchone()
    if due is not None and due[0]:
        return False
    if due is None:
        EstimateSchedule.objects.get_or_create(criterion_id=criterion_id)
    free = EstimateSchedule.objects.filter(
        Q(due_at__isnull=True) | Q(due_at__lt=now - STALE_SCHEDULE), criterion_id=criterion_id
    )
    return bool(free.update(due_at=now + timedelta(seconds=delay_s), trigger=trigger))


def record_snapshots(
    *, criterion: Criterion, trigger: str, alpha: float = SNAPSHOT_ALPHA
) -> list[ReportSnapshot]:
    """Compute and store the estimates of ``criterion`` for every candidate judge
    (``judge_choice.candidates``: those that labeled it), with both methods; a snapshot
    identical to the latest of its judge and method is not stored again, unless labels or
    judgments were recorded after that one (a label withdrawn before it became final changes no
    number, yet the latest snapshot must stop looking stale). Returns the snapshots stored (none
    for a categorical criterion, whose report is computed when read).

    A snapshot's ``created_at`` is when its computation started: every label and judgment
    recorded before it is in its numbers, so one recorded after it makes it stale.
    """
    stored: list[ReportSnapshot] = []
    if is_categorical(criterion):
        # Its estimates are per category (evaluation.estimates.categorical), computed when asked for.
        return stored
    for judge in judge_choice.candidates(criterion=criterion):
        for method in METHODS:
            as_of = timezone.now()
            report = compute_report(criterion=criterion, judge=judge, alpha=alpha, method=method)
            data = report_as_json(report=report)
            data[BY_QUESTION] = by_question(criterion=criterion, judge=judge, method=method, alpha=alpha)
            latest = (
                ReportSnapshot.objects.filter(criterion=criterion, judge=judge, method=method, alpha=alpha)
                .only("data", "created_at")
                .first()
            )
            if (
                latest is not None
                and latest.data == data
                and not labels_since(criterion=criterion, as_of=latest.created_at)
                and not judgments_since(criterion=criterion, judge_id=judge.pk, as_of=latest.created_at)
            ):
                continue
            stored.append(
                ReportSnapshot.objects.create(
                    campaign_id=criterion.campaign_id,
                    criterion=criterion,
                    judge=judge,
                    method=method,
                    alpha=alpha,
                    trigger=trigger,
                    n_human=report.overall.n_human,
                    n_judge=report.overall.n_judge,
                    data=data,
                    created_at=as_of,
                )
            )
    return stored


def by_question(*, criterion: Criterion, judge: Judge, method: str, alpha: float) -> dict:
    """The overall estimates decomposed by question that a snapshot keeps (``BY_QUESTION``), so
    that two versions' snapshots give their difference paired by question, as the compare page
    computes it (``measures.comparison.overall_by_question``), without reading a label again."""
    # A measure built on these estimates: imported where it is used.
    from evaluation.measures import comparison

    linears = comparison.overall_by_question(criterion=criterion, judge=judge, method=method, alpha=alpha)
    return comparison.linears_as_json(linears)


def refreshes_due() -> list[int]:
    """The criteria whose recomputation is due and not yet done (its job may never have reached
    the broker): their ids. Running it again is safe (:func:`run_scheduled_refresh`)."""
    due = EstimateSchedule.objects.filter(due_at__lte=timezone.now()).order_by("criterion_id")
    return list(due.values_list("criterion_id", flat=True))


def run_scheduled_refresh(*, criterion_id: int) -> list[ReportSnapshot]:
    """Recompute and snapshot the estimates of a criterion (the background job's body), under
    the trigger that scheduled it.

    The schedule is released first, so labels that arrive during the computation schedule the
    next one. Safe to run twice: the second run finds nothing new and stores nothing.
    """
    schedule = EstimateSchedule.objects.filter(criterion_id=criterion_id)
    with transaction.atomic():
        trigger = schedule.select_for_update().values_list("trigger", flat=True).first()
        schedule.update(due_at=None, trigger="")
    criterion = Criterion.objects.filter(pk=criterion_id).first()
    if criterion is None:  # deleted since the job was enqueued
        return []
    return record_snapshots(criterion=criterion, trigger=trigger or ReportSnapshot.Trigger.MANUAL)


def history(*, criterion: Criterion, judge: Judge, method: str, alpha: float) -> list[ReportSnapshot]:
    """The snapshots of one criterion x judge x method x alpha, oldest first (the latest
    ``HISTORY_LIMIT``)."""
    rows = ReportSnapshot.objects.filter(criterion=criterion, judge=judge, method=method, alpha=alpha)[
        :HISTORY_LIMIT
    ]
    return list(reversed(rows))


def latest_snapshot(
    *, criterion: Criterion, judge: Judge, method: str, alpha: float
) -> ReportSnapshot | None:
    """The newest snapshot of one criterion x judge x method x alpha, or None."""
    kept = ReportSnapshot.objects.filter(criterion=criterion, judge=judge, method=method, alpha=alpha)
    return kept.first()


def latest_snapshots(
    *, pairs: Sequence[tuple[Criterion, Judge]], method: str, alpha: float
) -> dict[tuple[int, int], ReportSnapshot]:
    """The newest snapshot of each (criterion, judge) of ``pairs`` at ``method`` and ``alpha``, by
    (criterion id, judge id), those without one left out: :func:`latest_snapshot` of them all in
    one query, whatever their number."""
    if not pairs:
        return {}
    wanted = Q()
    for criterion, judge in pairs:
        wanted |= Q(criterion_id=criterion.pk, judge_id=judge.pk)
    newer = ReportSnapshot.objects.filter(
        criterion_id=OuterRef("criterion_id"),
        judge_id=OuterRef("judge_id"),
        method=method,
        alpha=alpha,
        created_at__gt=OuterRef("created_at"),
    )
    found: dict[tuple[int, int], ReportSnapshot] = {}
    for snapshot in ReportSnapshot.objects.filter(wanted, method=method, alpha=alpha).exclude(Exists(newer)):
        # Two snapshots of one moment: the later id, as ``latest_snapshot`` orders them.
        key = (snapshot.criterion_id, snapshot.judge_id)
        if key not in found or snapshot.pk > found[key].pk:
            found[key] = snapshot
    return found


def labels_since(*, criterion: Criterion, as_of: datetime) -> bool:
    return Label.objects.filter(criterion=criterion, created_at__gt=as_of).exists()


def judgments_since(*, criterion: Criterion, judge_id: int, as_of: datetime) -> bool:
    # Failed judgments move no number; a retry that succeeds updates its row (updated_at).
    ok = Judgment.objects.filter(criterion=criterion, judge_id=judge_id, status=Judgment.Status.OK)
    return ok.filter(updated_at__gt=as_of).exists()


@dataclass(frozen=True)
class HistoryRow:
    """One snapshot and its groups' JSON, one per column of its table (None: the theme was not
    in that snapshot)."""

    snapshot: ReportSnapshot
    groups: list[dict | None]


@dataclass(frozen=True)
class HistoryTable:
    """Snapshots as a table: ``themes`` of any of them by name, then overall, as ``columns``;
    ``rows`` oldest first."""

    themes: list[str]
    rows: list[HistoryRow]

    @property
    def columns(self) -> list[str]:
        return [*self.themes, OVERALL]

    @property
    def newest_first(self) -> list[HistoryRow]:
        return list(reversed(self.rows))


def history_table(*, kept: list[ReportSnapshot]) -> HistoryTable:
    """The snapshots ``kept`` (oldest first, as :func:`history` returns them) as a table of
    their groups per theme and overall."""
    themes = sorted({g["theme"] for snap in kept for g in snap.data.get("themes", [])})
    rows = []
    for snap in kept:
        groups = {g["theme"]: g for g in snap.data.get("themes", [])}
        groups[OVERALL] = snap.data.get("overall")
        rows.append(HistoryRow(snapshot=snap, groups=[groups.get(theme) for theme in [*themes, OVERALL]]))
    return HistoryTable(themes=themes, rows=rows)
