"""The annotators' page read from the database: per criterion, each person's figures per stage,
the blind pairs' agreement and the criterion's reliability (``evaluation.measures.annotator_stats``).

Human labels only: no judge output is read here. In ``evaluation`` rather than ``annotation``
because the rates' Wilson interval lives in ``inference.intervals`` (annotation never imports
evaluation). Five queries whatever the number of criteria, people and labels.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, Q

from annotation.models import AnnotationMode, Assignment, Campaign, Criterion, Label
from annotation.workflow.agreement import second_look
from annotation.workflow.state import campaign_unit_states
from evaluation.measures.annotator_stats import (
    PairAgreement,
    PersonStage,
    Reliability,
    blind_pairs,
    label_gaps,
    person_stages,
    reliability,
)


@dataclass(frozen=True)
class CriterionFigures:
    criterion: Criterion
    reliability: Reliability


@dataclass(frozen=True)
class AnnotatorsPage:
    """What the page shows: every criterion's reliability, and for ``criterion`` (None when the
    campaign has none) each person's rows and the blind pairs (empty in review mode)."""

    campaign: Campaign
    criteria: list[CriterionFigures]
    criterion: Criterion | None
    rows: list[PersonStage]
    pairs: list[PairAgreement]
    names: dict[int, str]

    @property
    def blind(self) -> bool:
        return self.campaign.annotation_mode == AnnotationMode.BLIND_DOUBLE

    @property
    def named_rows(self) -> list[tuple[str, PersonStage]]:
        """(username, row) for each person and stage."""
        return [(self.names.get(row.user_id, str(row.user_id)), row) for row in self.rows]

    @property
    def named_pairs(self) -> list[tuple[str, str, PairAgreement]]:
        """(username, username, agreement) for each blind pair."""
        return [
            (self.names.get(pair.a, str(pair.a)), self.names.get(pair.b, str(pair.b)), pair)
            for pair in self.pairs
        ]


def campaign_criteria(*, campaign: Campaign) -> list[Criterion]:
    """The campaign's criteria by name, each with ``has_human_labels`` (one query): the page's
    chooser defaults to the first that has some."""
    people = Label.objects.filter(criterion=OuterRef("pk"), user__isnull=False)
    return list(campaign.criteria.annotate(has_human_labels=Exists(people)).order_by("name"))


def annotators_page(
    *, campaign: Campaign, criteria: list[Criterion], chosen: Criterion | None, now: datetime
) -> AnnotatorsPage:
    """The page's figures for ``campaign`` (its ``criteria``, as :func:`campaign_criteria` gives
    them) with the detail of ``chosen``; leases are live at ``now``. Four queries."""
    states = campaign_unit_states(campaign=campaign, labelled_by_people=True)
    anchored = campaign.annotation_mode != AnnotationMode.BLIND_DOUBLE
    figures = []
    for criterion in criteria:
        pairs = [pair for state in states.get(criterion.pk, {}).values() if (pair := second_look(state))]
        figures.append(
            CriterionFigures(criterion=criterion, reliability=reliability(pairs=pairs, anchored=anchored))
        )
    rows: list[PersonStage] = []
    pairs_table: list[PairAgreement] = []
    if chosen is not None:
        chosen_states = states.get(chosen.pk, {})
        slots: dict[int, int] = {}
        leases: dict[tuple[int, str], int] = defaultdict(int)
        held = Assignment.objects.filter(criterion=chosen).filter(
            Q(label__isnull=False) | Q(label__isnull=True, expires_at__gt=now)
        )
        for user_id, stage, slot, label_id in held.values_list("user_id", "stage", "slot", "label_id"):
            if label_id is None:
                leases[(user_id, stage)] += 1
            else:
                slots[label_id] = slot
        timeline = (
            Label.objects.filter(criterion__campaign=campaign, user__isnull=False)
            .order_by("user_id", "created_at", "id")
            .values_list("user_id", "created_at", "criterion_id", "stage", "value")
        )
        gaps = [
            (user_id, stage, seconds)
            for criterion_id, user_id, stage, seconds in label_gaps(
                (user_id, created_at, criterion_id, stage, value is not None)
                for user_id, created_at, criterion_id, stage, value in timeline.iterator(chunk_size=10_000)
            )
            if criterion_id == chosen.pk
        ]
        rows = person_stages(
            mode=campaign.annotation_mode, states=chosen_states, slots=slots, leases=leases, gaps=gaps
        )
        if campaign.annotation_mode == AnnotationMode.BLIND_DOUBLE:
            pairs_table = blind_pairs(chosen_states.values())
    people = {row.user_id for row in rows} | {p for pair in pairs_table for p in (pair.a, pair.b)}
    names = dict(User.objects.filter(pk__in=people).values_list("pk", "username")) if people else {}
    return AnnotatorsPage(
        campaign=campaign, criteria=figures, criterion=chosen, rows=rows, pairs=pairs_table, names=names
    )
