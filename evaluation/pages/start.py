"""What a person's start page shows: the units waiting for them in every campaign, and for the
campaigns they manage, where the setup stands (import, sample, team, judge).

Here rather than in ``annotation`` because the setup includes the judge; the queues themselves
are the annotation workflow's. The number of queries does not grow with the number of units:
three, plus one per queue (criterion x stage the person works in).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from annotation.models import Answer, Campaign, Criterion, Membership, Role, Sample, Stage
from annotation.workflow import STAGE_ROLE, stages_for
from annotation.workflow.queue import available_count
from evaluation.models import JudgeRun

# Verbs, told apart from the nouns "Label" and "Review" of other pages by their context.
STAGE_ACTIONS: dict[str, str | Promise] = {
    Stage.LABEL: pgettext_lazy("start page action", "Label"),
    Stage.REVIEW: pgettext_lazy("start page action", "Review"),
    Stage.ADJUDICATION: pgettext_lazy("start page action", "Adjudicate"),
}


@dataclass(frozen=True)
class WaitingQueue:
    """A criterion x stage the person works in, and how many units ``next_unit`` could hand them."""

    criterion: Criterion
    stage: str
    available: int

    @property
    def action(self) -> str | Promise:
        """What the person does in this queue, as a button says it."""
        return STAGE_ACTIONS.get(self.stage, self.stage)


@dataclass(frozen=True)
class SetupStep:
    """One step of a campaign's setup: ``key`` (import, sample, team, judge), whether it is done."""

    key: str
    title: str | Promise
    done: bool


@dataclass(frozen=True)
class CampaignStart:
    """One campaign of the start page: its queues for this person; its setup for a manager."""

    campaign: Campaign
    queues: list[WaitingQueue]
    setup: list[SetupStep] | None

    @property
    def waiting(self) -> int:
        return sum(queue.available for queue in self.queues)

    @property
    def next_step(self) -> SetupStep | None:
        """The first step not done yet (None when the setup is complete or not shown)."""
        return next((step for step in self.setup or [] if not step.done), None)


@dataclass(frozen=True)
class StartPage:
    campaigns: list[CampaignStart]

    @property
    def waiting(self) -> int:
        """Units waiting for the person, all campaigns together."""
        return sum(entry.waiting for entry in self.campaigns)

    @property
    def manages(self) -> bool:
        return any(entry.setup is not None for entry in self.campaigns)


def _roles_by_campaign(*, user: User) -> dict[int, set[str]]:
    if user.is_superuser:
        every = {role.value for role in Role}
        return {pk: set(every) for pk in Campaign.objects.values_list("pk", flat=True)}
    held: dict[int, set[str]] = {}
    for campaign_id, role in Membership.objects.filter(user=user).values_list("campaign_id", "role"):
        held.setdefault(campaign_id, set()).add(role)
    return held


def _setup(campaign: Campaign) -> list[SetupStep]:
    return [
        SetupStep("import", _("Import the answers"), campaign.has_answers),  # type: ignore[attr-defined]
        SetupStep("sample", _("Draw a sample for the humans"), campaign.has_sample),  # type: ignore[attr-defined]
        SetupStep("team", _("Give people the labelling roles"), campaign.has_labellers),  # type: ignore[attr-defined]
        SetupStep("judge", _("Run the LLM judge"), campaign.has_judged),  # type: ignore[attr-defined]
    ]


def start_for(*, user: User) -> StartPage:
    """Every campaign of ``user`` by name, with the queues their roles open (units waiting for them
    counted as on the work page) and, where they manage, the campaign's setup steps."""
    held = _roles_by_campaign(user=user)
    campaigns = list(
        Campaign.objects.filter(pk__in=held)
        .annotate(
            has_answers=Exists(Answer.objects.filter(campaign=OuterRef("pk"))),
            has_sample=Exists(Sample.objects.filter(campaign=OuterRef("pk"), status=Sample.Status.DONE)),
            has_labellers=Exists(Membership.objects.filter(campaign=OuterRef("pk"), role=Role.ANNOTATOR)),
            has_judged=Exists(JudgeRun.objects.filter(campaign=OuterRef("pk"), status=JudgeRun.Status.DONE)),
        )
        .order_by("name")
    )
    criteria: dict[int, list[Criterion]] = {}
    for criterion in Criterion.objects.filter(campaign_id__in=held).order_by("name"):
        criteria.setdefault(criterion.campaign_id, []).append(criterion)
    now = timezone.now()
    pages = []
    for campaign in campaigns:
        roles = held[campaign.pk]
        stages = [stage for stage in stages_for(mode=campaign.annotation_mode) if STAGE_ROLE[stage] in roles]
        queues = []
        for criterion in criteria.get(campaign.pk, []):
            criterion.campaign = campaign
            for stage in stages:
                count = available_count(user=user, criterion=criterion, stage=stage, now=now)
                queues.append(WaitingQueue(criterion=criterion, stage=stage, available=count))
        setup = _setup(campaign) if Role.MANAGER in roles else None
        pages.append(CampaignStart(campaign=campaign, queues=queues, setup=setup))
    return StartPage(campaigns=pages)
