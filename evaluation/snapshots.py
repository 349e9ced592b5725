"""Dated report snapshots: how the estimates moved as labels arrived, and two campaigns compared.

Estimates are recomputed in the background after a judge run finishes, after human labels
change (a batch of reviews or adjudications) and on demand. Each recomputation stores, for every
judge that labeled the criterion and both methods, the report's JSON as it was, unless nothing
changed since the previous snapshot of the same kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import Criterion
from evaluation import estimators
from evaluation.estimates import METHODS, GroupEstimate, Report, compute_report, report_as_json
from evaluation.models import EstimateSchedule, Judge, Judgment, ReportSnapshot

SNAPSHOT_ALPHA = 0.05
# A schedule older than this is taken to have lost its task (a worker wiped with its queue).
STALE_SCHEDULE = timedelta(minutes=10)
HISTORY_LIMIT = 200


def schedule_refresh(*, criterion_id: int, trigger: str, delay_s: float) -> bool:
    """Mark the criterion's estimates as due in ``delay_s`` seconds.

    True when the caller must enqueue the recomputation; False when one is already due, so a
    burst of labels (an adjudication batch) costs one recomputation. Safe under concurrency:
    the due time is taken with a conditional UPDATE. One read when a recomputation is already
    due (every label of a burst after the first).
    """
    now = timezone.now()
    due = list(EstimateSchedule.objects.filter(criterion_id=criterion_id).values_list("due_at", flat=True))
    if due and due[0] is not None and due[0] >= now - STALE_SCHEDULE:
        return False
    if not due:
        EstimateSchedule.objects.get_or_create(criterion_id=criterion_id)
    free = EstimateSchedule.objects.filter(
        Q(due_at__isnull=True) | Q(due_at__lt=now - STALE_SCHEDULE), criterion_id=criterion_id
    )
    return bool(free.update(due_at=now + timedelta(seconds=delay_s), trigger=trigger))


def judges_of(*, criterion: Criterion) -> list[Judge]:
    """The judges with at least one successful judgment of ``criterion``, by name."""
    judged = Judgment.objects.filter(criterion=criterion, status=Judgment.Status.OK).values("judge_id")
    return list(Judge.objects.filter(pk__in=judged).order_by("name"))


def record_snapshots(
    *, criterion: Criterion, trigger: str, alpha: float = SNAPSHOT_ALPHA
) -> list[ReportSnapshot]:
    """Compute and store the estimates of ``criterion`` for every judge that labeled it, with
    both methods; a snapshot identical to the latest of its judge and method is not stored
    again. Returns the snapshots stored."""
    stored: list[ReportSnapshot] = []
    for judge in judges_of(criterion=criterion):
        for method in METHODS:
            report = compute_report(criterion=criterion, judge=judge, alpha=alpha, method=method)
            data = report_as_json(report=report)
            latest = (
                ReportSnapshot.objects.filter(criterion=criterion, judge=judge, method=method, alpha=alpha)
                .only("data")
                .first()
            )
            if latest is not None and latest.data == data:
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
                )
            )
    return stored


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


@dataclass(frozen=True)
class Difference:
    """``right - left`` of two independent estimates, with a normal-approximation interval."""

    estimate: float
    lo: float
    hi: float

    @property
    def excludes_zero(self) -> bool:
        return self.lo > 0 or self.hi < 0


@dataclass(frozen=True)
class ThemeComparison:
    theme: str
    left: GroupEstimate | None
    right: GroupEstimate | None
    difference: Difference | None


def difference(*, left: estimators.Interval, right: estimators.Interval, alpha: float) -> Difference | None:
    """``right - left`` for two estimates from independent campaigns: the standard errors
    (half-width / the quantile each interval used) add in quadrature, with a normal quantile.
    None when either estimate is missing or unbounded."""
    if not all(math.isfinite(x) for x in (left.mean, left.halfwidth, right.mean, right.halfwidth)):
        return None
    estimate = right.mean - left.mean
    half = estimators.quantile(alpha=alpha, df=None) * math.hypot(
        estimators.standard_error(left), estimators.standard_error(right)
    )
    return Difference(estimate=estimate, lo=estimate - half, hi=estimate + half)


def compare_reports(*, left: Report, right: Report) -> list[ThemeComparison]:
    """The two reports' PPI++ estimates theme by theme (themes of either, by name), then overall."""
    if left.alpha != right.alpha:
        raise ValueError("the two reports must use the same alpha")
    lefts = {group.theme: group for group in left.themes}
    rights = {group.theme: group for group in right.themes}
    rows: list[ThemeComparison] = []
    pairs = [(theme, lefts.get(theme), rights.get(theme)) for theme in sorted(set(lefts) | set(rights))]
    pairs.append(("overall", left.overall, right.overall))
    for theme, a, b in pairs:
        diff = difference(left=a.ppi, right=b.ppi, alpha=left.alpha) if a and b else None
        rows.append(ThemeComparison(theme=theme, left=a, right=b, difference=diff))
    return rows
