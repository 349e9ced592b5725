"""The numbers a report shows and where they come from: the latest snapshot of its parameters,
with what changed since, or the estimates computed now, and why."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from annotation.models import Criterion, Sample, Unit
from annotation.sampling.current import current_sample_id
from evaluation.estimates.codec import report_from_json
from evaluation.estimates.report import GroupEstimate, Report, compute_report
from evaluation.estimates.snapshots import (
    SNAPSHOT_ALPHA,
    STALE_SCHEDULE,
    _judgments_since,
    _labels_since,
    latest_snapshot,
)
from evaluation.models import EstimateSchedule, Judge, ReportSnapshot


@dataclass(frozen=True)
class Provenance:
    """Where a report's numbers come from: a stored snapshot (``source`` "snapshot", with the
    ``trigger`` that recomputed it) or a computation (``source`` "computed"), and as of when."""

    source: str
    as_of: datetime
    trigger: str = ""

    SNAPSHOT = "snapshot"
    COMPUTED = "computed"

    @property
    def from_snapshot(self) -> bool:
        return self.source == self.SNAPSHOT


@dataclass(frozen=True)
class Changes:
    """What happened after a snapshot was computed: each one may have moved its numbers.
    ``refresh_due``: a recomputation is already on its way to a worker."""

    labels: bool = False
    judgments: bool = False
    units: bool = False
    sample: bool = False
    refresh_due: bool = False

    @property
    def stale(self) -> bool:
        return self.labels or self.judgments or self.units or self.sample


@dataclass(frozen=True)
class ShownReport:
    """The numbers a report page or download shows, and where they come from.

    ``computed_because``: "" for a snapshot; "no_snapshot" when the snapshotted parameters have
    none yet; "parameters" when the parameters are not the snapshotted ones. ``changes``: what
    happened since the snapshot (None when computed now).
    """

    report: Report
    provenance: Provenance
    computed_because: str = ""
    changes: Changes | None = None


def changes_since(*, snapshot: ReportSnapshot, criterion: Criterion) -> Changes:
    """What happened after ``snapshot`` was computed that may have moved its numbers: human
    labels or successful judgments of its judge recorded since, units added or removed, another
    current sample (its design weights; robust method only), and whether a recomputation is
    due. Five queries, none reading a row into Python; the count of units and the look for a
    newer judgment read indexes that grow with the campaign."""
    as_of = snapshot.created_at
    data = snapshot.data
    sample_moved = False
    if snapshot.method == "robust":
        current = Sample.objects.filter(pk=current_sample_id(criterion=criterion))
        sample_moved = current.values_list("pk", flat=True).first() != data.get("sample_id")
    size = Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level).count()
    due = EstimateSchedule.objects.filter(
        criterion=criterion, due_at__isnull=False, due_at__gte=timezone.now() - STALE_SCHEDULE
    ).exists()
    return Changes(
        labels=_labels_since(criterion=criterion, as_of=as_of),
        judgments=_judgments_since(criterion=criterion, judge_id=snapshot.judge_id, as_of=as_of),
        units=size != (data.get("overall") or {}).get("size"),
        sample=sample_moved,
        refresh_due=due,
    )


def report_to_show(*, criterion: Criterion, judge: Judge, method: str, alpha: float) -> ShownReport:
    """The numbers the report page and its downloads show, one rule for both.

    The latest snapshot of these parameters when there is one (snapshots are kept at
    ``SNAPSHOT_ALPHA`` for every judge and both methods), with what happened since it; otherwise
    the estimates computed now, and why (no snapshot yet, or parameters that are not
    snapshotted).
    """
    snapshot = latest_snapshot(criterion=criterion, judge=judge, method=method, alpha=alpha)
    if snapshot is not None:
        return ShownReport(
            report=report_from_json(data=snapshot.data),
            provenance=Provenance(
                source=Provenance.SNAPSHOT, as_of=snapshot.created_at, trigger=snapshot.trigger
            ),
            changes=changes_since(snapshot=snapshot, criterion=criterion),
        )
    return ShownReport(
        report=compute_report(criterion=criterion, judge=judge, alpha=alpha, method=method),
        provenance=Provenance(source=Provenance.COMPUTED, as_of=timezone.now()),
        computed_because="no_snapshot" if alpha == SNAPSHOT_ALPHA else "parameters",
    )


def overall_by_judge(
    *, criterion: Criterion, judges: list[Judge], shown: ShownReport, method: str, alpha: float
) -> list[tuple[Judge, GroupEstimate]]:
    """The overall estimates of every judge of the criterion, best agreement with the humans
    first (then by name), read as the shown report was: from each judge's latest snapshot when
    the shown report is a snapshot (computed now for a judge that has none), computed now
    otherwise. The shown report's judge reuses its numbers."""
    rows: list[tuple[Judge, GroupEstimate]] = []
    for judge in judges:
        if judge.name == shown.report.judge:
            overall = shown.report.overall
        else:
            snapshot = (
                latest_snapshot(criterion=criterion, judge=judge, method=method, alpha=alpha)
                if shown.provenance.from_snapshot
                else None
            )
            if snapshot is not None:
                overall = report_from_json(data=snapshot.data).overall
            else:
                overall = compute_report(criterion=criterion, judge=judge, alpha=alpha, method=method).overall
        rows.append((judge, overall))
    rows.sort(key=lambda row: (-(row[1].agreement.observed if row[1].agreement else -1.0), row[0].name))
    return rows
