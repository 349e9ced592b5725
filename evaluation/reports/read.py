"""One road to a report: a request parsed and checked once (:func:`report_request`), read by one
function (:func:`read_report`) that every reader calls: the report page and its downloads, the
``report``, ``export_campaign`` and ``gate`` commands, the API, the comparison of two campaigns.

A report is the latest snapshot of its parameters when there is one (snapshots are kept at
``SNAPSHOT_ALPHA``, per theme, for every candidate judge and both methods of a binary
criterion), with what was recorded since; otherwise it is computed now, and its provenance says
why: no snapshot yet, parameters that are not snapshotted (another alpha, rows per difficulty, a
criterion with categories, whose estimates are computed when read), or, for a reader that may
not act on stale numbers (the release gate), a snapshot that something recorded since may have
moved. Citation support adds citation recall beside it; ``shrinkage`` adds each theme's
estimate shrunk toward the judge; ``combine`` adds the estimate of several judges combined
(``evaluation.estimates.multi_judge``, computed when read), beside the one judge's report that
stays the default. :func:`report_as_data` is the one JSON of a report.

Its length is the one road's: the request, the provenance, the read, citation recall beside
precision and the one JSON belong together, so that no reader rebuilds a piece of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from annotation.criteria.categories import is_categorical
from annotation.models import Criterion, Level, Sample, Unit
from annotation.sampling.current import current_sample_id
from evaluation import page_cache
from evaluation.errors import EstimateError
from evaluation.estimates import judge_choice, small_themes
from evaluation.estimates.categorical import CategoricalReport, compute_categorical_report
from evaluation.estimates.codec import (
    categorical_report_as_json,
    group_as_json,
    report_as_json,
    report_from_json,
    with_shrinkage,
)
from evaluation.estimates.multi_judge import CombinedReport, combined_as_data, compute_combined
from evaluation.estimates.params import ANSWER, check_alpha, check_clusters, check_method
from evaluation.estimates.report import GroupEstimate, Report, compute_report
from evaluation.estimates.snapshots import (
    BY_QUESTION,
    SNAPSHOT_ALPHA,
    STALE_SCHEDULE,
    judgments_since,
    labels_since,
    latest_snapshot,
    latest_snapshots,
)
from evaluation.measures.citations import CITATION_SUPPORT, SENTENCE_SUPPORT, AlceMeasures, alce_measures
from evaluation.models import EstimateSchedule, Judge, ReportSnapshot

DEFAULT_METHOD = "robust"
DEFAULT_ALPHA = SNAPSHOT_ALPHA

# Why a report was computed now rather than read from a snapshot.
NO_SNAPSHOT = "no_snapshot"
PARAMETERS = "parameters"
CATEGORIES = "categories"
STALE = "stale"

# The criteria of the app's two citation rates: the citation support rate (citations) and the
# sentence support rate (veracity's sentences); ALCE's two measures read both.
PRECISION, RECALL = "citation_support", "veracity"


def iso(moment: datetime) -> str:
    """A time as the JSON of reports and gates writes it: ISO 8601 in UTC, to the second."""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


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

    @property
    def stale_since(self) -> tuple[str, ...]:
        """What was recorded since, in words (English: the JSON's and the commands')."""
        return tuple(
            what
            for what, moved in (
                ("human labels", self.labels),
                ("judgments", self.judgments),
                ("units", self.units),
                ("another current sample", self.sample),
            )
            if moved
        )


@dataclass(frozen=True)
class Provenance:
    """Where a report's numbers come from: a stored snapshot (``source`` "snapshot", with the
    ``trigger`` that recomputed it and what ``changes`` were recorded since) or a computation
    (``source`` "computed", and why: ``computed_because``), and as of when. A snapshot read while
    stale is still a snapshot; a reader that refused it computed now (``computed_because``
    "stale", ``changes`` what made it stale)."""

    source: str
    as_of: datetime
    trigger: str = ""
    computed_because: str = ""
    changes: Changes | None = None

    SNAPSHOT = "snapshot"
    COMPUTED = "computed"

    @property
    def from_snapshot(self) -> bool:
        return self.source == self.SNAPSHOT

    def as_data(self) -> dict[str, Any]:
        """The provenance as JSON-ready data (the ``estimates_source`` of a report's JSON)."""
        changes = self.changes
        return {
            "source": self.source,
            "as_of": iso(self.as_of),
            "trigger": self.trigger,
            "computed_because": self.computed_because,
            "stale_since": list(changes.stale_since) if changes is not None else [],
            "refresh_due": bool(changes and changes.refresh_due),
        }

    def describe(self) -> str:
        """One line for the commands' output (English)."""
        if self.from_snapshot:
            after = {
                "judge_run": "a judge run",
                "labels": "human labels",
                "import": "an import",
                "manual": "on demand",
            }.get(self.trigger, self.trigger.replace("_", " "))
            trigger = f", after {after}" if after else ""
            since = self.changes.stale_since if self.changes is not None else ()
            recorded = f"{', '.join(since)} recorded since" if since else "nothing recorded since"
            return f"snapshot of {iso(self.as_of)}{trigger}; {recorded}"
        why = {
            NO_SNAPSHOT: "no snapshot of these parameters yet",
            PARAMETERS: "these parameters are not snapshotted",
            CATEGORIES: "a criterion with categories is computed when read",
            STALE: "the latest snapshot is stale: "
            + ", ".join(self.changes.stale_since if self.changes else ())
            + " recorded since",
        }.get(self.computed_because, self.computed_because)
        return f"computed now ({why})"


@dataclass(frozen=True)
class ReportRequest:
    """A report asked for, checked: criterion, judge (and how it was chosen: ``judge_choice``'s
    ``NAMED``, ``PRIMARY``, ``ONLY``, ``ONLY_RUN``), method, alpha, rows per theme x difficulty,
    the small themes' shrinkage toward the judge, the robust method's clusters (what its
    intervals are about: this campaign's answers, or the assistant asked these questions again),
    and the judges combined in one estimate beside the report (``combine``: none by default)."""

    criterion: Criterion
    judge: Judge
    method: str = DEFAULT_METHOD
    alpha: float = DEFAULT_ALPHA
    by_difficulty: bool = False
    shrinkage: bool = False
    judge_choice: str = judge_choice.NAMED
    clusters: str = ANSWER
    combine: tuple[Judge, ...] = ()

    @property
    def categorical(self) -> bool:
        return is_categorical(self.criterion)

    @property
    def snapshotted(self) -> bool:
        """Whether snapshots hold these parameters (binary criteria, per theme, at SNAPSHOT_ALPHA)."""
        return (
            not self.categorical
            and not self.by_difficulty
            and self.alpha == SNAPSHOT_ALPHA
            and self.clusters == ANSWER
        )


def report_request(
    *,
    criterion: Criterion,
    judge: str = "",
    method: str = DEFAULT_METHOD,
    alpha: float = DEFAULT_ALPHA,
    by_difficulty: bool = False,
    shrinkage: bool = False,
    judges: list[Judge] | None = None,
    clusters: str = ANSWER,
    combine: Sequence[str] = (),
) -> ReportRequest:
    """The request, each parameter checked once: ``method`` and ``alpha``, the ``judge`` named
    (a candidate of ``judge_choice``) or the default one, ``shrinkage`` where it is offered,
    ``combine`` (the names of at least two candidates to combine in one estimate, beside the
    report; the robust method and a binary criterion). EstimateError on the field at fault
    (``method``, ``alpha``, ``judge``, ``shrinkage``, ``combine``): the judge's when none is
    named and there is no default, saying why. ``judges``: the criterion's candidates when the
    caller has read them already."""
    method = check_method(method)
    alpha = check_alpha(float(alpha))
    clusters = check_clusters(clusters)
    judges = judge_choice.candidates(criterion=criterion) if judges is None else judges
    chosen, how = judge_choice.pick(criterion=criterion, name=judge, judges=judges)
    if chosen is None:
        raise EstimateError(judge_choice.no_choice(criterion=criterion, judges=judges), field="judge")
    if shrinkage:
        small_themes.check_shrinkage(method=method, categorical=is_categorical(criterion))
    combined: tuple[Judge, ...] = ()
    if any(combine):
        combined = judge_choice.pick_several(criterion=criterion, names=combine, judges=judges)
        check_combination(method=method, categorical=is_categorical(criterion))
    return ReportRequest(
        criterion=criterion,
        judge=chosen,
        method=method,
        alpha=alpha,
        by_difficulty=by_difficulty,
        shrinkage=shrinkage,
        judge_choice=how,
        clusters=clusters,
        combine=combined,
    )


def check_combination(*, method: str, categorical: bool) -> None:
    """EstimateError on field ``combine`` unless several judges can be combined: the robust
    method (the combination is its estimator, with design weights and clusters), a binary
    criterion (a category's rate would get coefficients of its own, and the categories' rates
    would no longer sum to one)."""
    if categorical:
        raise EstimateError(
            _("several judges are combined on a binary criterion only: this one has categories"),
            field="combine",
        )
    if method != DEFAULT_METHOD:
        raise EstimateError(
            _("several judges are combined under the robust method only (method=robust)"), field="combine"
        )


@dataclass(frozen=True)
class CitationRow:
    """One theme (or the overall row): the app's two citation rates, None when the criterion has
    no unit in the theme: ``precision``, citation support's estimates (the citation support rate:
    citations whose chunk supports at least part of their sentence, pooled over citations), and
    ``recall``, veracity's (the sentence support rate, pooled over sentences). ALCE's citation
    precision and recall, per answer, are ``ShownReport.alce`` (``evaluation.measures.citations``)."""

    theme: str
    precision: GroupEstimate | None
    recall: GroupEstimate | None


@dataclass(frozen=True)
class ShownReport:
    """A report as every reader gets it: the request, the numbers (a ``Report``, or a
    ``CategoricalReport`` for a criterion with categories), their provenance, and what the
    request added: the small themes' shrinkage, and for citation support the app's two citation
    rates side by side (``citation_rows``) and ALCE's citation recall and precision on the
    report's judge's verdicts (``alce``)."""

    request: ReportRequest
    report: Report | CategoricalReport
    provenance: Provenance
    small_themes: small_themes.SmallThemes | None = None
    citation_rows: list[CitationRow] | None = None
    alce: AlceMeasures | None = None
    combined: CombinedReport | None = None

    @property
    def binary(self) -> Report:
        """The report of a binary criterion (AssertionError for one with categories)."""
        assert isinstance(self.report, Report)
        return self.report


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
        labels=labels_since(criterion=criterion, as_of=as_of),
        judgments=judgments_since(criterion=criterion, judge_id=snapshot.judge_id, as_of=as_of),
        units=size != (data.get("overall") or {}).get("size"),
        sample=sample_moved,
        refresh_due=due,
    )


def _computed(request: ReportRequest) -> Report | CategoricalReport:
    """The report computed now, kept in the page cache (``evaluation.page_cache``) under what it
    is computed from (``page_cache.estimates_key``, three queries) and its parameters: another
    alpha or a criterion with categories, read again and again, is computed once per change."""
    compute = compute_categorical_report if request.categorical else compute_report

    def computed() -> Report | CategoricalReport:
        return compute(
            criterion=request.criterion,
            judge=request.judge,
            alpha=request.alpha,
            method=request.method,
            by_difficulty=request.by_difficulty,
            **({} if request.categorical else {"clusters": request.clusters}),
        )

    parameters = (request.categorical, request.method, request.alpha, request.by_difficulty, request.clusters)
    with page_cache.one_read():
        key = page_cache.estimates_key(criterion=request.criterion, judge=request.judge)
        return page_cache.cached("report", None if key is None else [*key, parameters], computed)


def _numbers(
    request: ReportRequest, *, recompute_stale: bool
) -> tuple[Report | CategoricalReport, Provenance]:
    if not request.snapshotted:
        why = CATEGORIES if request.categorical else PARAMETERS
        now = timezone.now()  # before computing, as a snapshot is dated
        return _computed(request), Provenance(source=Provenance.COMPUTED, as_of=now, computed_because=why)
    snapshot = latest_snapshot(
        criterion=request.criterion, judge=request.judge, method=request.method, alpha=request.alpha
    )
    if snapshot is None:
        now = timezone.now()
        return _computed(request), Provenance(
            source=Provenance.COMPUTED, as_of=now, computed_because=NO_SNAPSHOT
        )
    changes = changes_since(snapshot=snapshot, criterion=request.criterion)
    if recompute_stale and changes.stale:
        now = timezone.now()
        return _computed(request), Provenance(
            source=Provenance.COMPUTED, as_of=now, computed_because=STALE, changes=changes
        )
    provenance = Provenance(
        source=Provenance.SNAPSHOT, as_of=snapshot.created_at, trigger=snapshot.trigger, changes=changes
    )
    return report_from_json(data=snapshot.data), provenance


def read_report(request: ReportRequest, *, recompute_stale: bool = False) -> ShownReport:
    """The report of ``request`` (see the module's docstring): the latest snapshot of its
    parameters when they are snapshotted and one exists, else computed now. ``recompute_stale``:
    a snapshot after which labels, judgments, units or the current sample changed is not used,
    the numbers are computed now (the release gate's rule). EstimateError on field
    ``shrinkage`` when the report has fewer than two themes to shrink."""
    report, provenance = _numbers(request, recompute_stale=recompute_stale)
    small = None
    rows = None
    alce = None
    if isinstance(report, Report):
        if request.shrinkage:
            small = small_themes.shrink_report(report=report)
        # Citation support's report shows veracity's beside it: its criterion read once for both.
        veracity = recall_criterion(criterion=request.criterion)
        rows = _citation_rows(
            request=request, precision=report, veracity=veracity, recompute_stale=recompute_stale
        )
        if veracity is not None:
            (alce,) = alce_measures(
                support=request.criterion, veracity=veracity, judge=request.judge, alpha=request.alpha
            )
    combined = (
        compute_combined(
            criterion=request.criterion,
            judges=request.combine,
            alpha=request.alpha,
            clusters=request.clusters,
        )
        if request.combine
        else None
    )
    return ShownReport(
        request=request,
        report=report,
        provenance=provenance,
        small_themes=small,
        citation_rows=rows,
        alce=alce,
        combined=combined,
    )


@dataclass(frozen=True)
class Latest:
    """A report read by :func:`read_latest`, with what its snapshot keeps besides the report: its
    overall estimates decomposed by question (``snapshots.BY_QUESTION``), None when the report
    was computed now or its snapshot was stored before snapshots kept them."""

    shown: ShownReport
    by_question: dict[str, Any] | None = None


def read_latest(requests: Sequence[ReportRequest], *, compute: bool = True) -> list[Latest | None]:
    """Each of ``requests`` read as :func:`read_report` reads it, in their order, for a page that
    shows many reports' overall figures at once: the snapshotted ones from their latest
    snapshots, read in one query per method and alpha whatever their number, without looking for
    what was recorded since (their provenance's ``changes`` is None: the report page says it);
    the others (not snapshotted, or without a snapshot yet) read by :func:`read_report`, one by
    one, or, with ``compute`` False, left to the caller (None). Neither shrinkage nor citation
    recall is added."""
    found: dict[tuple[int, int, str, float], ReportSnapshot] = {}
    kinds = {(request.method, request.alpha) for request in requests if request.snapshotted}
    for method, alpha in sorted(kinds):
        pairs = [
            (request.criterion, request.judge)
            for request in requests
            if request.snapshotted and (request.method, request.alpha) == (method, alpha)
        ]
        latest = latest_snapshots(pairs=pairs, method=method, alpha=alpha)
        for (criterion_id, judge_id), stored in latest.items():
            found[(criterion_id, judge_id, method, alpha)] = stored
    read: list[Latest | None] = []
    for request in requests:
        snapshot = found.get((request.criterion.pk, request.judge.pk, request.method, request.alpha))
        if snapshot is None or not request.snapshotted:
            read.append(Latest(shown=read_report(replace(request, shrinkage=False))) if compute else None)
            continue
        provenance = Provenance(
            source=Provenance.SNAPSHOT, as_of=snapshot.created_at, trigger=snapshot.trigger
        )
        report = report_from_json(data=snapshot.data)
        shown = ShownReport(request=request, report=report, provenance=provenance)
        read.append(Latest(shown=shown, by_question=snapshot.data.get(BY_QUESTION)))
    return read


def recall_criterion(*, criterion: Criterion) -> Criterion | None:
    """The campaign's sentence-level veracity criterion when ``criterion`` is its citation
    support (whose report then shows both measures); None otherwise."""
    if criterion.name != PRECISION or criterion.level != Level.CITATION:
        return None
    return Criterion.objects.filter(
        campaign_id=criterion.campaign_id, name=RECALL, level=Level.SENTENCE
    ).first()


def _citation_rows(
    *, request: ReportRequest, precision: Report, veracity: Criterion | None, recompute_stale: bool
) -> list[CitationRow] | None:
    """Citation precision (``precision``, citation support's report) beside citation recall,
    the report of ``veracity`` (``recall_criterion``'s) read the same way for the same judge,
    method and alpha; None for any other criterion."""
    if request.criterion.name != PRECISION or request.criterion.level != Level.CITATION:
        return None
    if veracity is None:
        return citation_rows(precision=precision, recall=None)
    recall_request = ReportRequest(
        criterion=veracity,
        judge=request.judge,
        method=request.method,
        alpha=request.alpha,
        by_difficulty=request.by_difficulty,
        clusters=request.clusters,
    )
    recall = _numbers(recall_request, recompute_stale=recompute_stale)[0]
    assert isinstance(recall, Report)
    return citation_rows(precision=precision, recall=recall)


def citation_rows(*, precision: Report, recall: Report | None) -> list[CitationRow]:
    """Per theme (sorted), then overall: the two reports' estimates side by side."""
    by_precision = {group.theme: group for group in precision.themes}
    by_recall = {group.theme: group for group in recall.themes} if recall is not None else {}
    themes = sorted(set(by_precision) | set(by_recall))
    rows = [CitationRow(theme, by_precision.get(theme), by_recall.get(theme)) for theme in themes]
    rows.append(CitationRow(precision.overall.theme, precision.overall, recall.overall if recall else None))
    return rows


def report_as_data(shown: ShownReport) -> dict[str, Any]:
    """The one JSON of a report (``manage.py report --format json``, the API's estimates): the
    report's numbers (``estimates.codec``), how its judge was chosen (``judge_choice``), where
    they come from (``estimates_source``), with ``shrinkage`` asked for the shrunk estimates, and
    for citation support ``citation_measures``: the app's citation support rate
    (``citation_support``) and sentence support rate (``sentence_support``, veracity's) per theme,
    and ``alce_citation_measures``: ALCE's citation recall and precision on the judge's verdicts;
    with ``combine``, ``combined``: the judges' combination (``multi_judge.combined_as_data``)."""
    if isinstance(shown.report, CategoricalReport):
        data = categorical_report_as_json(report=shown.report)
    else:
        data = report_as_json(report=shown.report)
        if shown.small_themes is not None:
            data = with_shrinkage(data=data, small=shown.small_themes)
        if shown.citation_rows is not None:
            data["citation_measures"] = [
                {
                    "theme": row.theme,
                    CITATION_SUPPORT: group_as_json(group=row.precision)
                    if row.precision is not None
                    else None,
                    SENTENCE_SUPPORT: group_as_json(group=row.recall) if row.recall is not None else None,
                }
                for row in shown.citation_rows
            ]
            if shown.alce is not None:
                data["alce_citation_measures"] = shown.alce.as_data()
    if shown.combined is not None:
        data["combined"] = combined_as_data(shown.combined)
    data["judge_choice"] = shown.request.judge_choice
    data["estimates_source"] = shown.provenance.as_data()
    return data


def overall_by_judge(*, shown: ShownReport, judges: list[Judge]) -> list[tuple[Judge, GroupEstimate]]:
    """The overall estimates of every candidate judge of the shown report's criterion, best
    agreement with the humans first (then by name), each from its latest snapshot of the shown
    parameters when there is one (one query each), else computed now. The shown report's judge
    reuses its numbers."""
    rows: list[tuple[Judge, GroupEstimate]] = []
    request = shown.request
    for judge in judges:
        if judge.pk == request.judge.pk:
            overall = shown.binary.overall
        else:
            other = ReportRequest(
                criterion=request.criterion, judge=judge, method=request.method, alpha=request.alpha
            )
            snapshot = (
                latest_snapshot(
                    criterion=other.criterion, judge=judge, method=other.method, alpha=other.alpha
                )
                if other.snapshotted
                else None
            )
            numbers = report_from_json(data=snapshot.data) if snapshot is not None else _computed(other)
            assert isinstance(numbers, Report)
            overall = numbers.overall
        rows.append((judge, overall))
    rows.sort(key=lambda row: (-(row[1].agreement.observed if row[1].agreement else -1.0), row[0].name))
    return rows
