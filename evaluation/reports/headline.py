"""How good is the assistant: each criterion's overall estimate, and its change against the
previous version of the assistant, for the campaign overview and the analysts' start page.

Per campaign, its criteria in the order people read them (``conventions.criterion_order``), each
read as its report reads it with its default judge (``judge_choice``) and the default method and
alpha: its latest snapshot, all of them read together (``read.read_latest``), else computed now.
The figure shown is PPI++ where the report has human labels to correct the judge with, else the
judge-only estimate, said so. A criterion with categories shows its groups (else its categories).

The change against the previous version (``comparison.previous_versions``: the latest earlier
campaign the reader may compare with that shares question ids and has the criterion) is the
difference of the same estimate paired by question, as the compare page and the report compute
it, from what both versions' snapshots keep of their estimates decomposed by question
(``snapshots.BY_QUESTION``): no label is read again.

Queries: the criteria, their judges, the questions the campaigns share, the snapshots: four,
whatever the number of campaigns and criteria. A criterion whose figures have no snapshot (one
with categories, whose report is computed when read, or one not snapshotted yet) is not computed
with the page: its row is ``pending``, and the page loads its card afterwards
(``views.campaigns.headline_card``), so that the page stays as fast with ten criteria as with one.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from annotation.corpus.conventions import criterion_order
from annotation.criteria.categories import is_categorical
from annotation.models import Campaign, Criterion
from evaluation.estimates import judge_choice
from evaluation.estimates.categorical import CategoricalReport
from evaluation.estimates.report import GroupEstimate, Report
from evaluation.measures import comparison
from evaluation.models import Judge
from evaluation.reports import read
from inference.intervals import Interval
from inference.paired import PairedDifference

# Which estimate a figure is: PPI++ (human labels correct the judge) or the judge's alone.
PPI = comparison.PPI
JUDGE = comparison.JUDGE


def in_order(criteria: Sequence[Criterion]) -> list[Criterion]:
    """``criteria`` in the order people read them (``conventions.criterion_order``)."""
    return sorted(criteria, key=lambda c: criterion_order(name=c.name, level=c.level))


def shown_kind(group: GroupEstimate) -> str | None:
    """Which estimate of ``group`` to show: PPI++ when it has one (human labels paired with the
    judge's), else the judge's alone when it has one, else None."""
    if math.isfinite(group.ppi.mean):
        return PPI
    if math.isfinite(group.judge.mean):
        return JUDGE
    return None


def _of(group: GroupEstimate, kind: str | None) -> Interval | None:
    if kind == PPI:
        return group.ppi
    if kind == JUDGE:
        return group.judge
    return None


@dataclass(frozen=True)
class Part:
    """One category or group of a criterion with categories: its name and title, its overall
    estimates."""

    name: str
    title: str
    kind: str
    overall: GroupEstimate

    @property
    def shown(self) -> str | None:
        return shown_kind(self.overall)

    @property
    def estimate(self) -> Interval | None:
        return _of(self.overall, self.shown)


@dataclass(frozen=True)
class Change:
    """The change of a criterion's shown estimate (``kind``) from the ``previous`` version to this
    one, paired by question: ``difference`` (this - previous; None when it cannot be computed),
    and each side's estimate as the comparison reads it. ``missing``: why there is no difference
    (``previous`` has no such estimate, or its snapshot or this one keeps no decomposition)."""

    previous: Campaign
    kind: str
    before: float = math.nan
    after: float = math.nan
    difference: PairedDifference | None = None
    missing: str = ""


@dataclass(frozen=True)
class Row:
    """One criterion of the headline: its report's judge (None: no judge has labelled it yet, or
    several have and none is primary: ``no_judge`` says which), its overall estimates (a binary
    criterion) or its categories' and groups' (``parts``), where they come from, and the change
    against the previous version; ``pending``: its figures are computed when read, not read here
    (the page loads them afterwards)."""

    criterion: Criterion
    judge: Judge | None = None
    no_judge: str = ""
    overall: GroupEstimate | None = None
    parts: list[Part] = field(default_factory=list)
    provenance: read.Provenance | None = None
    change: Change | None = None
    pending: bool = False

    @property
    def shown(self) -> str | None:
        return shown_kind(self.overall) if self.overall is not None else None

    @property
    def estimate(self) -> Interval | None:
        return _of(self.overall, self.shown) if self.overall is not None else None

    @property
    def counts(self) -> GroupEstimate | None:
        """The group whose counts of human labels and judged units the row shows."""
        if self.overall is not None:
            return self.overall
        return self.parts[0].overall if self.parts else None


@dataclass(frozen=True)
class Headline:
    """One campaign's headline: its criteria in order, and its previous version (the one most of
    its criteria compare with, None without one)."""

    campaign: Campaign
    rows: list[Row]
    previous: Campaign | None = None
    alpha: float = read.DEFAULT_ALPHA

    @property
    def compared(self) -> Row | None:
        """The first criterion compared with the previous version (the compare page's link)."""
        return next((row for row in self.rows if row.change is not None and row.change.difference), None)

    @property
    def as_of(self) -> datetime | None:
        """When the newest figure shown was computed."""
        moments = [row.provenance.as_of for row in self.rows if row.provenance is not None]
        return max(moments) if moments else None


NO_JUDGE_YET = "none"
CHOOSE_JUDGE = "choose"
NO_BY_QUESTION = "no_by_question"
NO_ESTIMATE = "no_estimate"


def _request(criterion: Criterion, judges: list[Judge]) -> tuple[read.ReportRequest | None, str]:
    chosen, how = judge_choice.default_choice(judges=judges)
    if chosen is None:
        return None, CHOOSE_JUDGE if judges else NO_JUDGE_YET
    return read.ReportRequest(criterion=criterion, judge=chosen, judge_choice=how), ""


def _parts(report: CategoricalReport) -> list[Part]:
    groups = [item for item in report.estimates if item.indicator.kind == "group"]
    chosen = groups or list(report.estimates)
    return [
        Part(
            name=item.indicator.name,
            title=item.indicator.title,
            kind=item.indicator.kind,
            overall=item.report.overall,
        )
        for item in chosen
    ]


def _change(
    *,
    kind: str | None,
    previous: Campaign,
    mine: read.Latest | None,
    theirs: read.Latest | None,
    alpha: float,
) -> Change | None:
    if kind is None or mine is None:
        return None
    if theirs is None or not isinstance(theirs.shown.report, Report):
        return Change(previous=previous, kind=kind, missing=NO_ESTIMATE)
    if mine.by_question is None or theirs.by_question is None:
        return Change(previous=previous, kind=kind, missing=NO_BY_QUESTION)
    before = comparison.linears_from_json(theirs.by_question)[kind]
    after = comparison.linears_from_json(mine.by_question)[kind]
    if not (math.isfinite(before.estimate) and math.isfinite(after.estimate)):
        return Change(previous=previous, kind=kind, missing=NO_ESTIMATE)
    return Change(
        previous=previous,
        kind=kind,
        before=before.estimate,
        after=after.estimate,
        difference=comparison.version_difference(previous=before, current=after, alpha=alpha),
    )


def headlines(
    *,
    campaigns: Sequence[Campaign],
    candidates: Sequence[Campaign],
    only: str = "",
    compute: bool = False,
) -> dict[int, Headline]:
    """The headline of each of ``campaigns``, by campaign id (see the module's docstring).
    ``candidates``: the campaigns the reader may compare with (managed or analysed by them), among
    which the previous versions are found; ``only``: the criterion of that name alone.

    A figure read from a snapshot costs nothing more; one that must be computed (a criterion with
    categories, or one not snapshotted yet, on either version's side) is computed with
    ``compute``, else its row is ``pending``: the page loads it afterwards, asking for it alone
    (``only``, ``compute``). Without ``compute``, four queries whatever the number of campaigns
    and criteria."""
    if not campaigns:
        return {}
    known = {c.pk: c for c in [*campaigns, *candidates]}
    criteria = list(Criterion.objects.filter(campaign_id__in=known, **({"name": only} if only else {})))
    for criterion in criteria:
        criterion.campaign = known[criterion.campaign_id]
    names: dict[int, set[str]] = {}
    by_name: dict[tuple[int, str], Criterion] = {}
    for criterion in criteria:
        names.setdefault(criterion.campaign_id, set()).add(criterion.name)
        by_name[(criterion.campaign_id, criterion.name)] = criterion
    previous = comparison.previous_versions(campaigns=campaigns, candidates=candidates, criteria=names)
    mine = {campaign.pk for campaign in campaigns}
    shown = [c for c in criteria if c.campaign_id in mine]
    # The previous versions' criteria are read for their decomposition by question: binary ones
    # only (a criterion with categories is compared on its report, per category).
    earlier = [
        by_name[(prior.pk, name)]
        for (campaign_id, name), prior in previous.items()
        if not is_categorical(by_name[(campaign_id, name)]) and not is_categorical(by_name[(prior.pk, name)])
    ]
    needed = {c.pk: c for c in [*shown, *earlier]}
    judges = judge_choice.candidates_by_criterion(criteria=list(needed.values()))
    requests: dict[int, read.ReportRequest] = {}
    missing: dict[int, str] = {}
    for criterion_id, criterion in needed.items():
        request, why = _request(criterion, judges.get(criterion_id, []))
        if request is not None:
            requests[criterion_id] = request
        else:
            missing[criterion_id] = why
    order = list(requests)
    latest = dict(zip(order, read.read_latest([requests[pk] for pk in order], compute=compute), strict=True))
    found: dict[int, Headline] = {}
    for campaign in campaigns:
        rows = []
        for criterion in in_order([c for c in shown if c.campaign_id == campaign.pk]):
            request = requests.get(criterion.pk)
            if request is None:
                rows.append(Row(criterion=criterion, no_judge=missing.get(criterion.pk, NO_JUDGE_YET)))
                continue
            prior = previous.get((campaign.pk, criterion.name))
            earlier_pk = by_name[(prior.pk, criterion.name)].pk if prior is not None else None
            read_mine = latest.get(criterion.pk)
            read_theirs = latest.get(earlier_pk) if earlier_pk is not None else None
            if read_mine is None or (earlier_pk in requests and read_theirs is None):
                rows.append(Row(criterion=criterion, judge=request.judge, pending=True))
                continue
            report = read_mine.shown.report
            row = Row(criterion=criterion, judge=request.judge, provenance=read_mine.shown.provenance)
            if isinstance(report, CategoricalReport):
                rows.append(replace(row, parts=_parts(report)))
                continue
            overall = report.overall
            change = None
            if prior is not None:
                change = _change(
                    kind=shown_kind(overall),
                    previous=prior,
                    mine=read_mine,
                    theirs=read_theirs,
                    alpha=request.alpha,
                )
            rows.append(replace(row, overall=overall, change=change))
        priors = Counter(row.change.previous for row in rows if row.change is not None)
        found[campaign.pk] = Headline(
            campaign=campaign, rows=rows, previous=priors.most_common(1)[0][0] if priors else None
        )
    return found
