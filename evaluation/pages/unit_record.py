"""One unit, whole: its text and sources, every human label row, the final label and the judges.

The record of a unit for each criterion of its level: every label row in the order written (who,
stage, value, comment, time, and whether it was a first label, a change or a withdrawal), the
labels in force and the final label as :mod:`annotation.workflow.state` derives them, and, only
when asked (``with_judges``: managers and analysts), each judge's label, status and reasoning.

Also the units where the final human label and a judge's label differ, for one criterion.

A constant number of queries whatever the number of labels and judgments: the unit (1), its
sources (1), the criteria with their labels and, when shown, judgments prefetched (2 or 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Prefetch
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.models import Campaign, Criterion, Label, Unit
from annotation.workbench import UnitView, unit_view, value_names
from annotation.workflow import state as workflow_state
from evaluation.models import Judge, Judgment

STATUS_NAMES = {
    workflow_state.Status.NEEDS_LABEL: _("waits for a label"),
    workflow_state.Status.NEEDS_REVIEW: _("waits for a review"),
    workflow_state.Status.NEEDS_ADJUDICATION: _("waits for an adjudication"),
    workflow_state.Status.FINAL: _("final"),
}


@dataclass(frozen=True)
class LabelRow:
    """One label row as the history tells it: ``action`` is label, change or withdrawal."""

    label: Label
    action: str
    previous: int | None = None


@dataclass
class CriterionRecord:
    """A unit's labels for one criterion, its status, its final label and (maybe) its judgments."""

    criterion: Criterion
    rows: list[LabelRow]
    state: workflow_state.UnitState
    value_names: dict[int, str | Promise]
    judgments: list[Judgment] = field(default_factory=list)

    @property
    def final(self) -> int | None:
        return self.state.final

    @property
    def status_name(self) -> str:
        return str(STATUS_NAMES[self.state.status])

    @property
    def in_force(self) -> set[int]:
        """Ids of the label rows in force (the latest of each person at each stage, not withdrawn)."""
        current = (*self.state.first, self.state.review, self.state.adjudication, self.state.imported)
        return {label.label_id for label in current if label is not None}


@dataclass
class UnitRecord:
    unit: Unit
    view: UnitView
    criteria: list[CriterionRecord]
    with_judges: bool


def _rows(labels: Sequence[Label]) -> list[LabelRow]:
    before: dict[tuple[int | None, str], Label] = {}
    rows = []
    for label in labels:
        key = (label.user_id, label.stage)
        previous = before.get(key)
        action = "withdrawal" if label.value is None else "change" if previous is not None else "label"
        rows.append(LabelRow(label=label, action=action, previous=previous.value if previous else None))
        before[key] = label
    return rows


def unit_record(*, campaign: Campaign, unit_id: int, with_judges: bool) -> UnitRecord | None:
    """The record of the campaign's unit ``unit_id`` (None when it has no such unit).

    ``with_judges`` False leaves every judgment out (nothing of the judge is read): for people
    who label. Four queries, five with the judges, however many labels and judgments.
    """
    unit = (
        Unit.objects.select_related("answer__question", "sentence")
        .filter(campaign=campaign, pk=unit_id)
        .first()
    )
    if unit is None:
        return None
    view = unit_view(unit=unit, campaign=campaign)
    prefetches: list[Prefetch] = [
        Prefetch(
            "labels",
            queryset=Label.objects.filter(unit_id=unit.pk).select_related("user").order_by("id"),
            to_attr="unit_labels",
        )
    ]
    if with_judges:
        prefetches.append(
            Prefetch(
                "judgments",
                queryset=Judgment.objects.filter(unit_id=unit.pk)
                .select_related("judge")
                .order_by("judge__name"),
                to_attr="unit_judgments",
            )
        )
    criteria = (
        Criterion.objects.filter(campaign=campaign, level=unit.level)
        .order_by("name")
        .prefetch_related(*prefetches)
    )
    records = []
    for criterion in criteria:
        labels: list[Label] = criterion.unit_labels  # type: ignore[attr-defined]  # prefetched
        state = workflow_state.derive(
            unit_id=unit.pk,
            mode=campaign.annotation_mode,
            rows=[(x.pk, x.unit_id, x.user_id, x.stage, x.value, x.comment, x.created_at) for x in labels],
        )
        records.append(
            CriterionRecord(
                criterion=criterion,
                rows=_rows(labels),
                state=state,
                value_names=value_names(criterion),
                judgments=list(getattr(criterion, "unit_judgments", [])),
            )
        )
    return UnitRecord(unit=unit, view=view, criteria=records, with_judges=with_judges)


@dataclass(frozen=True)
class Disagreement:
    """A unit whose final human label differs from ``judgment``'s label."""

    unit: Unit
    final: int
    judgment: Judgment


def disagreeing_unit_ids(*, criterion: Criterion, judge: Judge, theme: str | None = None) -> list[int]:
    """Ids of the units (in id order) whose final human label differs from ``judge``'s label.

    Failed judgments and units without a final label are left out. Three queries (the campaign's
    mode, the labels, the judgments), one more per 5,000 labelled units.
    """
    judged = Judgment.objects.filter(criterion=criterion, judge=judge, status=Judgment.Status.OK)
    if theme:
        judged = judged.filter(unit__theme=theme)
    verdicts = dict(judged.values_list("unit_id", "value"))
    finals = workflow_state.final_labels(criterion=criterion, unit_ids=verdicts) if verdicts else {}
    return sorted(unit_id for unit_id, final in finals.items() if verdicts[unit_id] != final)


def disagreements(*, criterion: Criterion, judge: Judge, unit_ids: Sequence[int]) -> list[Disagreement]:
    """The disagreements of ``unit_ids`` (a page of :func:`disagreeing_unit_ids`), in that order.

    Three queries: the judgments with their units, the criterion's mode and the labels.
    """
    judgments = {
        j.unit_id: j
        for j in Judgment.objects.filter(
            criterion=criterion, judge=judge, unit_id__in=unit_ids
        ).select_related("unit__answer", "unit__sentence")
    }
    finals = workflow_state.final_labels(criterion=criterion, unit_ids=unit_ids) if unit_ids else {}
    return [
        Disagreement(unit=judgments[pk].unit, final=finals[pk], judgment=judgments[pk])
        for pk in unit_ids
        if pk in judgments and pk in finals
    ]
