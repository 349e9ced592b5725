"""Dated report snapshots: how the estimates moved as labels arrived, which numbers the report
page and its downloads show, and two campaigns compared.

Estimates are recomputed in the background after a judge run finishes, after human labels
change (a batch of reviews or adjudications) and on demand. Each recomputation stores, for every
judge that labeled the criterion and both methods, the report's JSON as it was, unless nothing
changed since the previous snapshot of the same kind.

The report page and its downloads show the latest snapshot of their parameters when there is
one, and say how old it is and whether labels or judgments arrived since
(:func:`report_to_show`); other parameters are computed on demand, and say so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.categories import is_categorical
from annotation.current_sample import current_sample_id
from annotation.models import Criterion, Label, Sample, Unit
from evaluation.estimates import (
    METHODS,
    OVERALL,
    GroupEstimate,
    Report,
    compute_report,
    report_as_json,
)
from evaluation.models import EstimateSchedule, Judge, Judgment, ReportSnapshot
from inference import intervals
from inference.agreement import Agreement

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
    again, unless labels or judgments were recorded after that one (a label withdrawn before it
    became final changes no number, yet the latest snapshot must stop looking stale). Returns
    the snapshots stored (none for a categorical criterion, whose report is computed when read).

    A snapshot's ``created_at`` is when its computation started: every label and judgment
    recorded before it is in its numbers, so one recorded after it makes it stale.
    """
    stored: list[ReportSnapshot] = []
    if is_categorical(criterion):
        # Its estimates are per category (evaluation.categorical), computed when asked for.
        return stored
    for judge in judges_of(criterion=criterion):
        for method in METHODS:
            as_of = timezone.now()
            report = compute_report(criterion=criterion, judge=judge, alpha=alpha, method=method)
            data = report_as_json(report=report)
            latest = (
                ReportSnapshot.objects.filter(criterion=criterion, judge=judge, method=method, alpha=alpha)
                .only("data", "created_at")
                .first()
            )
            if (
                latest is not None
                and latest.data == data
                and not _labels_since(criterion=criterion, as_of=latest.created_at)
                and not _judgments_since(criterion=criterion, judge_id=judge.pk, as_of=latest.created_at)
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


def _interval_from_json(
    *,
    mean: Any,
    ci: Any,
    method: str,
    alpha: float,
    n: int,
    N: int = 0,
    lam: Any = None,
    df: Any = None,
    raw: Any = None,
    se: Any = None,
) -> intervals.Interval:
    # JSON keeps NaN and infinities as None: a missing mean is NaN, a missing bound beside a mean
    # is the unbounded side of an interval (a single label, one answer under the robust method).
    # ``raw``: the computed bounds of an interval shown clipped to [0, 1] (``<name>_ci_raw``);
    # snapshots stored before it may hold bounds outside [0, 1] in ``ci``, which every page and
    # download clips (``Interval.shown_lo`` / ``shown_hi``).
    lo, hi = raw or ci or (None, None)
    if mean is None:
        return intervals.Interval(
            mean=math.nan, lo=math.nan, hi=math.nan, method=method, alpha=alpha, n=n, N=N, lam=lam, df=df
        )
    return intervals.Interval(
        mean=float(mean),
        lo=-math.inf if lo is None else float(lo),
        hi=math.inf if hi is None else float(hi),
        method=method,
        alpha=alpha,
        n=n,
        N=N,
        lam=lam,
        df=df,
        se=None if se is None else float(se),
    )


def group_from_json(*, data: dict[str, Any], alpha: float) -> GroupEstimate:
    """A group back from :func:`~evaluation.estimates.group_as_json` (a stored snapshot's):
    the same numbers, with NaN for a missing estimate and infinite bounds for an unbounded
    interval. The per-estimator notes come back merged, as ``notes``."""
    n_human, n_paired, n_judge = data["n_human"], data.get("n_paired", 0), data["n_judge"]
    method = data.get("method", "")
    confusion = data.get("confusion")
    agreement = None
    if confusion is not None:
        kappa = data.get("kappa")
        agreement = Agreement(
            observed=float(data["observed_agreement"]),
            chance=float(data["chance_agreement"]),
            kappa=math.nan if kappa is None else float(kappa),
            confusion=dict(confusion),
            n=n_paired,
        )
    effective_n = data.get("effective_n")
    return GroupEstimate(
        theme=data["theme"],
        difficulty=data.get("difficulty"),
        method=method,
        size=data.get("size", 0),
        n_human=n_human,
        n_paired=n_paired,
        n_judge=n_judge,
        human=_interval_from_json(
            mean=data["human_mean"],
            ci=data["human_ci"],
            raw=data.get("human_ci_raw"),
            method=data.get("human_method", ""),
            alpha=alpha,
            n=n_human,
        ),
        judge=_interval_from_json(
            mean=data["judge_mean"],
            ci=data["judge_ci"],
            raw=data.get("judge_ci_raw"),
            method=data.get("judge_method", ""),
            alpha=alpha,
            n=n_judge,
        ),
        ppi=_interval_from_json(
            mean=data["ppi_mean"],
            ci=data["ppi_ci"],
            raw=data.get("ppi_ci_raw"),
            se=data.get("ppi_se"),
            method=data.get("ppi_method", ""),
            alpha=alpha,
            n=n_paired,
            N=max(0, n_judge - n_paired),
            lam=data.get("lambda"),
            df=data.get("ppi_df"),
        ),
        agreement=agreement,
        effective_n=math.nan if effective_n is None else float(effective_n),
        missing_judgments=list(data.get("missing_judgments", [])),
        weighted=bool(data.get("weighted", False)),
        notes=list(data.get("notes", [])),
    )


def report_from_json(*, data: dict[str, Any]) -> Report:
    """A report back from :func:`~evaluation.estimates.report_as_json`: what a stored snapshot
    holds, as the pages and the downloads read it.
    ``report_as_json(report=report_from_json(data=d)) == d``."""
    alpha = float(data["alpha"])
    by_difficulty = data.get("by_difficulty")
    return Report(
        campaign=data["campaign"],
        criterion=data["criterion"],
        level=data.get("level", ""),
        judge=data["judge"],
        alpha=alpha,
        method=data["method"],
        sample_id=data.get("sample_id"),
        themes=[group_from_json(data=group, alpha=alpha) for group in data.get("themes", [])],
        overall=group_from_json(data=data["overall"], alpha=alpha),
        by_difficulty=(
            [group_from_json(data=group, alpha=alpha) for group in by_difficulty]
            if by_difficulty is not None
            else None
        ),
        versions=data.get("versions", {}),
    )


def latest_snapshot(
    *, criterion: Criterion, judge: Judge, method: str, alpha: float
) -> ReportSnapshot | None:
    """The newest snapshot of one criterion x judge x method x alpha, or None."""
    kept = ReportSnapshot.objects.filter(criterion=criterion, judge=judge, method=method, alpha=alpha)
    return kept.first()


def _labels_since(*, criterion: Criterion, as_of: datetime) -> bool:
    return Label.objects.filter(criterion=criterion, created_at__gt=as_of).exists()


def _judgments_since(*, criterion: Criterion, judge_id: int, as_of: datetime) -> bool:
    # Failed judgments move no number; a retry that succeeds updates its row (updated_at).
    ok = Judgment.objects.filter(criterion=criterion, judge_id=judge_id, status=Judgment.Status.OK)
    return ok.filter(updated_at__gt=as_of).exists()


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


def difference(*, left: intervals.Interval, right: intervals.Interval, alpha: float) -> Difference | None:
    """``right - left`` for two estimates from independent campaigns: the standard errors
    (half-width / the quantile each interval used) add in quadrature, with a normal quantile.
    None when either estimate is missing or unbounded."""
    if not all(math.isfinite(x) for x in (left.mean, left.halfwidth, right.mean, right.halfwidth)):
        return None
    estimate = right.mean - left.mean
    half = intervals.quantile(alpha=alpha, df=None) * math.hypot(
        intervals.standard_error(left), intervals.standard_error(right)
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
