"""Cost on one ledger: what a judge's label and a human label of a criterion cost, in one unit, so
that the planner of several judges (``evaluation.designs.judge_plan``) can weigh them.

- **A judge's cost per unit**: what its runs on the criterion spent (``JudgeRun.cost``: every
  call recorded, replies lost included, priced by ``evaluation.judge.accounting.judge_prices``)
  divided by the units it judged successfully. None when it was never run on the criterion (an
  imported judge, or a judge not run yet): nothing measured.
- **A human label's cost**: the median seconds per label of the people who labelled in Attest
  (their pace, ``evaluation.measures.annotator_stats.pace``, breaks left out; imported labels'
  time stamps come from another tool and are left out of it) on this criterion, or on the
  campaign's criteria when nobody timed a label of this one; when nobody labelled in Attest, the
  median of the seconds imported labels recorded (``Label.seconds_spent``: Label Studio's
  ``lead_time``; over 10 minutes left out as breaks) on this criterion, else on the campaign's
  criteria; times the label rows a labelled
  unit took (a label, its review, an adjudication: the rows with a value per unit people
  labelled, 1 when none; a reader of the planner may give the minutes instead, to plan before
  anyone has labelled in Attest or to try another pace), times the hourly rate a manager set on the campaign
  (``Campaign.label_hourly_rate``) / 3600. None while the rate is unset or no label was timed.

The rate is in the unit the judges' prices are in (``JUDGE_PRICE_PER_1K_*`` or a judge's own
prices): the ledger converts nothing, so the two must be given in the same unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Count, FloatField, Sum
from django.db.models.functions import Coalesce

from annotation.models import Campaign, Criterion, Label, Stage
from evaluation.measures.annotator_stats import Pace, label_gaps, pace
from evaluation.models import Judge, JudgeRun, Judgment

# Where a human label's seconds come from.
CRITERION = "criterion"
CAMPAIGN = "campaign"
IMPORTED = "imported"  # seconds recorded by imported labels of this criterion
IMPORTED_CAMPAIGN = "imported_campaign"  # ... of the campaign's criteria
GIVEN = "given"


@dataclass(frozen=True)
class JudgeCost:
    """One judge on one criterion: its runs, what they spent, the units it judged successfully,
    and the cost per unit (None: never run on the criterion)."""

    judge: Judge
    runs: int
    spend: float
    judged: int

    @property
    def per_unit(self) -> float | None:
        if not self.runs:
            return None
        return self.spend / self.judged if self.judged else None


@dataclass(frozen=True)
class HumanCost:
    """A human label: the median seconds per label (None: no label timed) from ``timed`` gaps
    on the criterion or on the campaign, or from ``timed`` imported labels' recorded seconds
    (``source``), the label rows per labelled unit, and the campaign's hourly rate (None: unset)."""

    median_seconds: float | None
    timed: int
    source: str
    rows_per_unit: float
    hourly_rate: float | None

    @property
    def minutes(self) -> float | None:
        return None if self.median_seconds is None else self.median_seconds / 60

    @property
    def per_label(self) -> float | None:
        """What one final human label costs, in the rate's unit (None when unknown)."""
        if self.median_seconds is None or self.hourly_rate is None:
            return None
        return self.median_seconds * self.rows_per_unit * self.hourly_rate / 3600


@dataclass(frozen=True)
class Ledger:
    human: HumanCost
    judges: list[JudgeCost]

    def of(self, judge: Judge) -> JudgeCost:
        return next(cost for cost in self.judges if cost.judge.pk == judge.pk)


def judge_costs(*, criterion: Criterion, judges: Sequence[Judge]) -> list[JudgeCost]:
    """Each of ``judges`` on ``criterion``: runs, spend and units judged (two queries)."""
    spent = {
        row["judge_id"]: row
        for row in JudgeRun.objects.filter(criterion=criterion, judge__in=list(judges))
        .values("judge_id")
        .annotate(runs=Count("id"), spend=Coalesce(Sum("cost"), 0.0, output_field=FloatField()))
    }
    judged = dict(
        Judgment.objects.filter(criterion=criterion, judge__in=list(judges), status=Judgment.Status.OK)
        .values("judge_id")
        .annotate(units=Count("id"))
        .values_list("judge_id", "units")
    )
    return [
        JudgeCost(
            judge=judge,
            runs=spent.get(judge.pk, {}).get("runs", 0),
            spend=float(spent.get(judge.pk, {}).get("spend", 0.0)),
            judged=judged.get(judge.pk, 0),
        )
        for judge in judges
    ]


def human_cost(*, criterion: Criterion, campaign: Campaign, minutes: float | None = None) -> HumanCost:
    """A human label of ``criterion`` (see the module; two queries, a third when nobody timed a
    label in Attest). ``minutes``: a label's minutes as the planner's reader gives them, in place
    of the measured pace (source ``given``)."""
    timeline = (
        Label.objects.filter(criterion__campaign=campaign, user__isnull=False)
        .exclude(stage=Stage.IMPORTED)
        .order_by("user_id", "created_at", "id")
        .values_list("user_id", "created_at", "criterion_id", "stage", "value")
    )
    gaps = label_gaps(
        (user_id, created_at, criterion_id, stage, value is not None)
        for user_id, created_at, criterion_id, stage, value in timeline.iterator(chunk_size=10_000)
    )
    own = pace(seconds for criterion_id, _, _, seconds in gaps if criterion_id == criterion.pk)
    found, source = (
        (own, CRITERION) if own.median_seconds is not None else (pace(g[3] for g in gaps), CAMPAIGN)
    )
    if minutes is not None:
        found, source = Pace(timed=0, breaks=0, median_seconds=60 * minutes, per_hour=None), GIVEN
    elif found.median_seconds is None:
        found, source = _imported_pace(criterion=criterion, campaign=campaign)
    counts = Label.objects.filter(criterion=criterion, user__isnull=False, value__isnull=False).aggregate(
        rows=Count("id"), units=Count("unit_id", distinct=True)
    )
    return HumanCost(
        median_seconds=found.median_seconds,
        timed=found.timed,
        source=source if found.median_seconds is not None else "",
        rows_per_unit=counts["rows"] / counts["units"] if counts["units"] else 1.0,
        hourly_rate=campaign.label_hourly_rate,
    )


def _imported_pace(*, criterion: Criterion, campaign: Campaign) -> tuple[Pace, str]:
    """The seconds imported labels recorded, on ``criterion`` (source ``imported``), else on the
    campaign's criteria (``imported_campaign``); one query."""
    recorded = [
        (criterion_id, float(seconds or 0))
        for criterion_id, seconds in Label.objects.filter(
            criterion__campaign=campaign, stage=Stage.IMPORTED, seconds_spent__gt=0, value__isnull=False
        ).values_list("criterion_id", "seconds_spent")
    ]
    own = pace(seconds for criterion_id, seconds in recorded if criterion_id == criterion.pk)
    if own.median_seconds is not None:
        return own, IMPORTED
    return pace(seconds for _, seconds in recorded), IMPORTED_CAMPAIGN


def ledger(
    *, criterion: Criterion, campaign: Campaign, judges: Sequence[Judge], minutes: float | None = None
) -> Ledger:
    """The criterion's ledger: a human label's cost (``minutes`` given in place of the measured
    pace) and each judge's (four queries, five when nobody timed a label in Attest)."""
    return Ledger(
        human=human_cost(criterion=criterion, campaign=campaign, minutes=minutes),
        judges=judge_costs(criterion=criterion, judges=judges),
    )


def set_hourly_rate(*, campaign: Campaign, rate: float | None) -> Campaign:
    """Set (None: clear) what an hour of labelling costs on ``campaign``."""
    campaign.label_hourly_rate = rate
    campaign.save(update_fields=["label_hourly_rate"])
    return campaign
