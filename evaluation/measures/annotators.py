"""The annotators' page read from the database: per criterion, each person's figures per stage,
the blind pairs' agreement and the criterion's reliability (``evaluation.measures.annotator_stats``).

Human labels only: no judge output is read here. In ``evaluation`` rather than ``annotation``
because the rates' Wilson interval lives in ``inference.intervals`` (annotation never imports
evaluation). A constant number of queries whatever the number of criteria, people and labels;
what the labels alone give is kept in the page cache, keyed on the campaign's labels.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef

from annotation.models import AnnotationMode, Assignment, Campaign, Criterion, Label
from annotation.workflow.agreement import second_look
from annotation.workflow.state import campaign_unit_states
from evaluation import page_cache
from evaluation.measures.annotator_stats import (
    PairAgreement,
    PersonStage,
    Reliability,
    blind_pairs,
    label_gaps,
    person_stages,
    reliability,
    with_leases,
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


@dataclass(frozen=True)
class _LabelledFigures:
    """What the page reads from the labels alone (cached on them): every criterion's reliability,
    and for the chosen one each person's rows without their live leases and the blind pairs."""

    criteria: list[CriterionFigures]
    rows: list[PersonStage]
    pairs: list[PairAgreement]


def _labelled_figures(
    *, campaign: Campaign, criteria: list[Criterion], chosen: Criterion | None
) -> _LabelledFigures:
    """Three queries: the label states, the slots of the chosen criterion's filled assignments,
    the campaign's label timeline."""
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
        # A filled assignment's slot is written with its label: the labels' version covers it.
        slots = dict(
            Assignment.objects.filter(criterion=chosen, label__isnull=False).values_list("label_id", "slot")
        )
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
            mode=campaign.annotation_mode, states=chosen_states, slots=slots, leases={}, gaps=gaps
        )
        if campaign.annotation_mode == AnnotationMode.BLIND_DOUBLE:
            pairs_table = blind_pairs(chosen_states.values())
    return _LabelledFigures(criteria=figures, rows=rows, pairs=pairs_table)


def annotators_page(
    *, campaign: Campaign, criteria: list[Criterion], chosen: Criterion | None, now: datetime
) -> AnnotatorsPage:
    """The page's figures for ``campaign`` (its ``criteria``, as :func:`campaign_criteria` gives
    them) with the detail of ``chosen``; leases are live at ``now``. What the labels alone give
    is kept in the page cache (``evaluation.page_cache``) under the campaign's labels: on a hit,
    three queries (the labels' version, the live leases, the names), six otherwise."""
    key = [
        *page_cache.campaign_key(campaign),
        page_cache.labels_version(campaign=campaign),
        [(criterion.pk, criterion.name) for criterion in criteria],
        chosen.pk if chosen is not None else None,
    ]
    labelled = page_cache.cached(
        "annotators", key, lambda: _labelled_figures(campaign=campaign, criteria=criteria, chosen=chosen)
    )
    # The cached criteria are copies: the page shows the ones it was given.
    figures = [
        CriterionFigures(criterion=criterion, reliability=figure.reliability)
        for criterion, figure in zip(criteria, labelled.criteria, strict=True)
    ]
    rows = labelled.rows
    if chosen is not None:
        leases: dict[tuple[int, str], int] = defaultdict(int)
        live = Assignment.objects.filter(criterion=chosen, label__isnull=True, expires_at__gt=now)
        for user_id, stage in live.values_list("user_id", "stage"):
            leases[(user_id, stage)] += 1
        rows = with_leases(rows=rows, leases=leases, mode=campaign.annotation_mode)
    pairs_table = labelled.pairs
    people = {row.user_id for row in rows} | {p for pair in pairs_table for p in (pair.a, pair.b)}
    names = dict(User.objects.filter(pk__in=people).values_list("pk", "username")) if people else {}
    return AnnotatorsPage(
        campaign=campaign, criteria=figures, criterion=chosen, rows=rows, pairs=pairs_table, names=names
    )
