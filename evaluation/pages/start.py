"""What a person's start page shows: one section per role they hold, in any campaign, the most
actionable first.

- **Label, review, adjudicate** (annotators, reviewers, adjudicators): their queues with units
  waiting for them (criterion x stage, counted as on the work page), one Start button each; a
  section whose queues are all empty says so in one sentence, and comes last.
- **Manage** (managers): each campaign's progress (answers, units, and per criterion its sample
  settled, the human labels and the units judged that its report rests on) and the path
  import -> criteria -> sample -> judge -> label -> report, the steps done ticked and the next
  one's button.
- **Estimates** (analysts): each campaign's headline (``evaluation.reports.headline``): every
  criterion's overall estimate and its change against the previous version of the assistant.

Here rather than in ``annotation`` because the setup and the estimates include the judge; the
queues themselves are the annotation workflow's. The number of queries grows neither with the
units nor with the criteria nor with the campaigns: see :func:`start_for` (a criterion with
categories costs the computation of its report, as its report page does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db.models import Count, Exists, OuterRef
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from annotation.access import JUDGE_VIEWERS
from annotation.models import Campaign, Criterion, Membership, Role, Stage, Unit
from annotation.workflow import STAGE_ROLE, stages_for
from annotation.workflow.queue import CriterionProgress, available_counts, criteria_progress
from evaluation.reports.headline import NO_JUDGE_YET, Headline, Row, headlines, in_order

# Verbs, told apart from the nouns "Label" and "Review" of other pages by their context.
STAGE_ACTIONS: dict[str, str | Promise] = {
    Stage.LABEL: pgettext_lazy("start page action", "Label"),
    Stage.REVIEW: pgettext_lazy("start page action", "Review"),
    Stage.ADJUDICATION: pgettext_lazy("start page action", "Adjudicate"),
}
STAGES = (Stage.LABEL, Stage.REVIEW, Stage.ADJUDICATION)

# The sections of the page (``Section.kind``).
WORK, MANAGE, ESTIMATES = "work", "manage", "estimates"

# The manager's path, in order (``Step.key``).
IMPORT, CRITERIA, SAMPLE, JUDGE, LABEL, REPORT = "import", "criteria", "sample", "judge", "label", "report"
STEP_TITLES: dict[str, str | Promise] = {
    IMPORT: _("Import the answers"),
    CRITERIA: _("Define the criteria"),
    SAMPLE: _("Draw a sample for the humans"),
    JUDGE: _("Run the LLM judge"),
    LABEL: _("Have the sample labelled"),
    REPORT: _("Read the estimates"),
}


@dataclass(frozen=True)
class WaitingQueue:
    """A criterion x stage the person works in, and how many units ``next_unit`` could hand them."""

    criterion: Criterion
    stage: str
    available: int

    @property
    def campaign(self) -> Campaign:
        return self.criterion.campaign

    @property
    def action(self) -> str | Promise:
        """What the person does in this queue, as a button says it."""
        return STAGE_ACTIONS.get(self.stage, self.stage)


@dataclass(frozen=True)
class Step:
    """One step of a campaign's path: ``key`` (``IMPORT`` ... ``REPORT``), whether it is done,
    and for the label step whether someone holds the annotator role (else its button is the team
    page's)."""

    key: str
    done: bool
    labellers: bool = True

    @property
    def title(self) -> str | Promise:
        return STEP_TITLES[self.key]


@dataclass(frozen=True)
class CriterionProgressRow:
    """Where one criterion stands: its current sample (units settled, a final label or, blind,
    both labels, out of its size) and its report's figures (``row``: human labels and units
    judged by its judge, out of its units)."""

    criterion: Criterion
    sample: CriterionProgress
    row: Row

    @property
    def judged_share(self) -> float | None:
        counts = self.row.counts
        if counts is None or not counts.size:
            return None
        return counts.n_judge / counts.size


@dataclass(frozen=True)
class ManagedCampaign:
    """A campaign the person manages: its answers and units, each criterion's progress, its path."""

    campaign: Campaign
    answers: int
    units: int
    criteria: list[CriterionProgressRow]
    steps: list[Step]

    @property
    def next_step(self) -> Step:
        """The first step not done (the report once every other is)."""
        return next(step for step in self.steps if not step.done)


@dataclass(frozen=True)
class Section:
    """One section of the page: ``kind`` (``WORK``, ``MANAGE``, ``ESTIMATES``); a work section's
    ``stage`` and non-empty ``queues``; a manager's ``campaigns``; an analyst's ``headlines``."""

    kind: str
    stage: str = ""
    queues: list[WaitingQueue] = field(default_factory=list)
    campaigns: list[ManagedCampaign] = field(default_factory=list)
    headlines: list[Headline] = field(default_factory=list)

    @property
    def waiting(self) -> int:
        return sum(queue.available for queue in self.queues)

    @property
    def actionable(self) -> bool:
        """Whether the person has something to do here: units waiting, or a campaign whose next
        step is not reading its estimates."""
        if self.kind == WORK:
            return bool(self.queues)
        if self.kind == MANAGE:
            return any(entry.next_step.key != REPORT for entry in self.campaigns)
        return False


@dataclass(frozen=True)
class StartPage:
    sections: list[Section]
    member: bool

    @property
    def waiting(self) -> int:
        """Units waiting for the person, every queue of every campaign together."""
        return sum(section.waiting for section in self.sections)


def _roles_by_campaign(*, user: User) -> dict[int, set[str]]:
    if user.is_superuser:
        every = {role.value for role in Role}
        return {pk: set(every) for pk in Campaign.objects.values_list("pk", flat=True)}
    held: dict[int, set[str]] = {}
    for campaign_id, role in Membership.objects.filter(user=user).values_list("campaign_id", "role"):
        held.setdefault(campaign_id, set()).add(role)
    return held


def _work(*, user: User, campaigns: Sequence[Campaign], held: dict[int, set[str]]) -> list[Section]:
    """One section per stage whose role the person holds somewhere: its queues with units waiting."""
    stages_of = {
        c.pk: [s for s in stages_for(mode=c.annotation_mode) if STAGE_ROLE[s] in held[c.pk]]
        for c in campaigns
    }
    working = [c for c in campaigns if stages_of[c.pk]]
    if not working:
        return []
    by_pk = {c.pk: c for c in working}
    criteria = list(Criterion.objects.filter(campaign_id__in=by_pk))
    for criterion in criteria:
        criterion.campaign = by_pk[criterion.campaign_id]
    wanted = {stage for stages in stages_of.values() for stage in stages}
    counts = available_counts(user=user, criteria=criteria, stages=wanted, now=timezone.now())
    sections = []
    for stage in STAGES:
        if not any(stage in stages_of[c.pk] for c in working):
            continue
        queues = [
            WaitingQueue(criterion=criterion, stage=stage, available=counts[(criterion.pk, stage)])
            for campaign in working
            if stage in stages_of[campaign.pk]
            for criterion in in_order([c for c in criteria if c.campaign_id == campaign.pk])
            if counts.get((criterion.pk, stage))
        ]
        sections.append(Section(kind=WORK, stage=stage, queues=queues))
    return sections


def _steps(*, campaign: Campaign, rows: list[CriterionProgressRow]) -> list[Step]:
    """The path's steps. A campaign's criteria need not all be worked on (every import brings the
    built-in ones): a sample drawn and a judge run for one criterion are those steps done; the
    labelling is done when every sample drawn is settled."""
    sampled = [entry for entry in rows if entry.sample.total]
    return [
        Step(IMPORT, campaign.answer_count > 0),  # type: ignore[attr-defined]
        Step(CRITERIA, bool(rows)),
        Step(SAMPLE, bool(sampled)),
        Step(JUDGE, any(entry.row.no_judge != NO_JUDGE_YET for entry in rows)),
        Step(
            LABEL,
            bool(sampled) and all(entry.sample.settled >= entry.sample.total for entry in sampled),
            labellers=campaign.has_labellers,  # type: ignore[attr-defined]
        ),
        Step(REPORT, False),
    ]


def _managed(*, campaigns: Sequence[Campaign], found: dict[int, Headline]) -> list[ManagedCampaign]:
    if not campaigns:
        return []
    ids = [c.pk for c in campaigns]
    units = dict(
        Unit.objects.filter(campaign_id__in=ids).values_list("campaign_id").annotate(n=Count("id")).order_by()
    )
    rows = {row.criterion.pk: row for c in campaigns for row in found[c.pk].rows}
    progress = criteria_progress(criteria=[row.criterion for row in rows.values()])
    managed = []
    for campaign in campaigns:
        entries = [
            CriterionProgressRow(criterion=row.criterion, sample=progress[row.criterion.pk], row=row)
            for row in found[campaign.pk].rows
        ]
        managed.append(
            ManagedCampaign(
                campaign=campaign,
                answers=campaign.answer_count,  # type: ignore[attr-defined]
                units=units.get(campaign.pk, 0),
                criteria=entries,
                steps=_steps(campaign=campaign, rows=entries),
            )
        )
    return managed


def start_for(*, user: User) -> StartPage:
    """The start page of ``user`` (see the module's docstring): the work sections of the stages
    their roles open, the campaigns they manage, the estimates of those they analyse (superusers:
    every campaign in every role), the sections with something to do first.

    Queries: the roles, the campaigns, and for the work sections the criteria and the units
    waiting (one query for every queue); for managers and analysts the headlines' four, the
    samples' progress and the units; whatever the number of campaigns, criteria and units."""
    held = _roles_by_campaign(user=user)
    campaigns = list(
        Campaign.objects.filter(pk__in=held)
        .annotate(
            answer_count=Count("answers", distinct=True),
            has_labellers=Exists(Membership.objects.filter(campaign=OuterRef("pk"), role=Role.ANNOTATOR)),
        )
        .order_by("name")
    )
    work = _work(user=user, campaigns=campaigns, held=held)
    managed = [c for c in campaigns if Role.MANAGER in held[c.pk]]
    analysed = sorted(
        (c for c in campaigns if Role.ANALYST in held[c.pk]),
        key=lambda c: (c.created_at, c.name),
        reverse=True,
    )
    readers = [c for c in campaigns if held[c.pk] & JUDGE_VIEWERS]
    found = headlines(campaigns=readers, candidates=readers) if readers else {}
    sections = [section for section in work if section.actionable]
    manage = Section(kind=MANAGE, campaigns=_managed(campaigns=managed, found=found)) if managed else None
    if manage is not None and manage.actionable:
        sections.append(manage)
    if analysed:
        sections.append(Section(kind=ESTIMATES, headlines=[found[c.pk] for c in analysed]))
    if manage is not None and not manage.actionable:
        sections.append(manage)
    sections.extend(section for section in work if not section.actionable)
    return StartPage(sections=sections, member=bool(campaigns))
