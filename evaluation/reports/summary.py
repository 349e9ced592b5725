"""A report as an analyst reads it, top down: the answer (each theme's PPI++ estimate, the overall
one, the change against the previous version of the assistant), how sure it is (the labels it
rests on, counted by where they stand), and the method's notes said once each.

Nothing here computes an estimate: every number comes from the report read by
:mod:`evaluation.reports.read` (the page, its print and its PDF read the same one), or, for the
change against the previous version, from :func:`evaluation.measures.comparison.compare_versions`
(the compare page's paired comparison by question). Formatting is the templates' (the filters of
``evaluation.templatetags.report_extras``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from annotation.models import Campaign, Criterion
from evaluation.errors import ComparisonError
from evaluation.estimates.params import OVERALL
from evaluation.estimates.report import Report
from evaluation.measures import comparison
from evaluation.measures.calibration import judge_calibration
from evaluation.reports import charts
from inference import notes
from inference.reliability.calibration import MIN_LABELS

# What a technical note says, in a few plain words (the kinds ``report_extras.note_kind``
# translates): every template of ``inference.notes`` belongs to one.
WILSON, BOUNDS, FLOOR, EQUAL_WEIGHTS, POOLED_WEIGHTS = "wilson", "bounds", "floor", "equal_weights", "pooled"
MISSING, NO_ESTIMATE, HUMAN_ONLY, CONFIDENCE, CLUSTERS, COMBINED, OTHER = (
    "missing",
    "no_estimate",
    "human_only",
    "confidence",
    "clusters",
    "combined",
    "other",
)
KINDS: dict[str, str] = {
    notes.WILSON: WILSON,
    notes.FEW_EVENTS: WILSON,
    notes.PAST_BOUND: WILSON,
    notes.CUT: BOUNDS,
    notes.CLIPPED: BOUNDS,
    notes.FLOORED: FLOOR,
    notes.SMOOTHED: FLOOR,
    notes.CONFIDENCE_FLOOR: FLOOR,
    notes.ZERO_WIDTH: FLOOR,
    notes.NOT_ALL_SAMPLED: EQUAL_WEIGHTS,
    notes.NO_SAMPLE: EQUAL_WEIGHTS,
    notes.POOLED_SAMPLES: POOLED_WEIGHTS,
    notes.MISSING_JUDGMENTS: MISSING,
    notes.NO_LABELED_UNITS: NO_ESTIMATE,
    notes.NO_UNLABELED_UNITS: NO_ESTIMATE,
    notes.NO_JUDGE_LABELS: NO_ESTIMATE,
    notes.ONE_LABEL: NO_ESTIMATE,
    notes.ONE_JUDGE_LABEL: NO_ESTIMATE,
    notes.ONE_CLUSTER: NO_ESTIMATE,
    notes.NO_GROUPS: NO_ESTIMATE,
    notes.GROUPS_WITHOUT_ESTIMATE: NO_ESTIMATE,
    notes.GROUP_WITHOUT_VARIANCE: NO_ESTIMATE,
    notes.JUDGE_CONSTANT: HUMAN_ONLY,
    notes.HUMAN_ONLY: HUMAN_ONLY,
    notes.CONFIDENCE_PPI: CONFIDENCE,
    notes.RECALIBRATED: CONFIDENCE,
    notes.NOT_RECALIBRATED: CONFIDENCE,
    notes.DESIGN_BASED: CONFIDENCE,
    notes.BY_QUESTION: CLUSTERS,
    notes.SHARE_TERM: COMBINED,
    notes.NO_RECORDED_SHARE: COMBINED,
    notes.JUDGE_ABSENT: COMBINED,
    notes.NOT_EVERY_JUDGE: COMBINED,
}
# The order the kinds are listed in: what moves an interval first, what explains it after.
ORDER: tuple[str, ...] = (WILSON, FLOOR, BOUNDS, EQUAL_WEIGHTS, POOLED_WEIGHTS, MISSING, NO_ESTIMATE)
ORDER += (HUMAN_ONLY, CONFIDENCE, CLUSTERS, COMBINED, OTHER)


def leaves(note: str, *, estimator: str = "") -> list[tuple[str, str]]:
    """``note`` (one of a group's notes, English) as its single notes, each with the estimator it
    is about (``human``, ``judge``, ``PPI++``, or "" for the group): ``"PPI++: a; b"`` is
    ``[("PPI++", "a"), ("PPI++", "b")]``; ``"overall a"`` (the overall row's) is ``a``. The
    structure is ``inference.notes``' templates."""
    overall = notes.OVERALL.replace("%(note)s", "")
    if note.startswith(overall):  # the overall row's own notes: listed with the overall row
        return leaves(note[len(overall) :], estimator=estimator)
    for name, template in notes.OF_ESTIMATOR.items():
        prefix = template.replace("%(note)s", "")
        if note.startswith(prefix):
            return leaves(note[len(prefix) :], estimator=name)
    if notes.SEPARATOR in note:
        return [leaf for part in note.split(notes.SEPARATOR) for leaf in leaves(part, estimator=estimator)]
    return [(estimator, note)]


def kind_of(leaf: str) -> str:
    """The plain kind of one single note (``KINDS``), ``other`` for a text no template makes."""
    template = notes.template_of(leaf)
    return KINDS.get(template, OTHER) if template is not None else OTHER


@dataclass(frozen=True)
class NoteGroup:
    """One kind of note, said once: the groups (theme names, ``params.OVERALL``) it applies to,
    and each distinct technical note of that kind (English, as the exports keep it) with its
    groups."""

    kind: str
    themes: list[str]
    notes: list[tuple[str, list[str]]] = field(default_factory=list)


def grouped_notes(report: Report) -> list[NoteGroup]:
    """Every note of the report's themes and overall row, said once: by kind (``ORDER``), each
    with the groups it applies to in the report's order ("Wilson widening: Finance, RH")."""
    by_note: dict[str, list[str]] = {}
    for group in [*report.themes, report.overall]:
        for text in group.notes:
            for estimator, leaf in leaves(text):
                key = notes.OF_ESTIMATOR[estimator] % {"note": leaf} if estimator else leaf
                themes = by_note.setdefault(key, [])
                if group.theme not in themes:
                    themes.append(group.theme)
    kinds: dict[str, NoteGroup] = {}
    for key, themes in by_note.items():
        kind = kind_of(leaves(key)[0][1])
        found = kinds.setdefault(kind, NoteGroup(kind=kind, themes=[]))
        found.notes.append((key, themes))
        found.themes.extend(theme for theme in themes if theme not in found.themes)
    order = [group.theme for group in [*report.themes, report.overall]]
    for found in kinds.values():
        found.themes.sort(key=order.index)
    return [kinds[kind] for kind in ORDER if kind in kinds]


@dataclass(frozen=True)
class LabelAccount:
    """The human labels a report rests on: ``labels`` given by people or imported (every stage,
    withdrawn ones aside), the ``units`` they fall on, and those units by where they stand: the
    estimates read the ``final`` ones only."""

    labels: int
    units: int
    final: int
    needs_review: int
    needs_adjudication: int
    needs_label: int

    @property
    def waiting(self) -> int:
        """Labelled units the estimates do not read yet."""
        return self.needs_review + self.needs_adjudication + self.needs_label


def label_account(report: Any) -> LabelAccount | None:
    """The report's :class:`LabelAccount` (from its ``versions``: ``inputs.text_versions``), or
    None for a snapshot stored before the report counted its units by state."""
    versions = report.versions or {}
    states = versions.get("label_states")
    if not isinstance(states, dict):
        return None
    labels = sum(int(row.get("labels") or 0) for row in versions.get("human_labels") or [])
    counts = {name: int(states.get(name) or 0) for name in ("final", "needs_review", "needs_adjudication")}
    needs_label = int(states.get("needs_label") or 0)
    return LabelAccount(
        labels=labels, units=sum(counts.values()) + needs_label, needs_label=needs_label, **counts
    )


def previous_version(
    *, campaign: Campaign, criterion: Criterion, candidates: Sequence[Campaign]
) -> Campaign | None:
    """The previous version of the assistant for this campaign's report of ``criterion``
    (``comparison.previous_versions``: among ``candidates``, the campaigns the reader may compare
    with, the latest created before ``campaign`` that shares a question id with it and has a
    criterion of the same name); None when there is none. Two queries."""
    earlier = [c for c in candidates if c.created_at < campaign.created_at]
    if not earlier:
        return None
    names: dict[int, set[str]] = {campaign.pk: {criterion.name}}
    for campaign_id, name in Criterion.objects.filter(campaign__in=earlier, name=criterion.name).values_list(
        "campaign_id", "name"
    ):
        names.setdefault(campaign_id, set()).add(name)
    found = comparison.previous_versions(campaigns=[campaign], candidates=earlier, criteria=names)
    return found.get((campaign.pk, criterion.name))


@dataclass(frozen=True)
class VersionChange:
    """This report's PPI++ estimates against the previous version's, by question: one row per
    theme of either version, then overall (``comparison.Row``: ``difference`` right - left, the
    previous version on the left); ``shared``: question ids in common. ``error``: why it could not
    be compared (no judge to choose on the previous version's side, say), then no rows."""

    previous: Campaign
    judge: str = ""
    shared: int = 0
    rows: list[comparison.Row] = field(default_factory=list)
    error: str = ""

    @property
    def overall(self) -> comparison.Row | None:
        return next((row for row in self.rows if row.theme == OVERALL), None)

    @property
    def themes(self) -> list[comparison.Row]:
        return [row for row in self.rows if row.theme != OVERALL]


def version_change(
    *, campaign: Campaign, criterion: Criterion, judge: Any, method: str, alpha: float, previous: Campaign
) -> VersionChange:
    """The change of ``criterion``'s PPI++ estimates from ``previous`` to ``campaign`` (judged by
    ``judge``; the previous version by its default judge), compared by question as the compare
    page compares them (the same method and alpha, Holm's adjustment over one pair: none)."""
    try:
        versions = comparison.versions_for(
            campaigns=[previous, campaign], criterion=criterion.name, judges=[None, judge]
        )
        compared = comparison.compare_versions(versions=versions, alpha=alpha, method=method, metrics=False)
    except ComparisonError as error:
        return VersionChange(previous=previous, error=error.message)
    return VersionChange(
        previous=previous,
        judge=versions[0].judge.name,
        shared=sum(compared.shared_questions.values()),
        rows=compared.rows_of(comparison.PPI),
    )


def change_against_previous(
    *,
    campaign: Campaign,
    criterion: Criterion,
    judge: Any,
    method: str,
    alpha: float,
    candidates: Sequence[Campaign],
) -> VersionChange | None:
    """The change against the previous version of the assistant (:func:`previous_version` among
    ``candidates``, :func:`version_change`), or None when there is no previous version."""
    previous = previous_version(campaign=campaign, criterion=criterion, candidates=candidates)
    if previous is None:
        return None
    return version_change(
        campaign=campaign, criterion=criterion, judge=judge, method=method, alpha=alpha, previous=previous
    )


def calibration_context(*, criterion: Criterion, judge: Any) -> dict[str, Any]:
    """What the calibration section shows of ``judge`` on ``criterion`` (a binary criterion):
    its reliability against the final human labels (``measures.calibration``) and the diagrams,
    labelled in the reader's language. Reads every label: the report page loads it apart."""
    judged = judge_calibration(criterion=criterion, judge=judge)
    title = _("Reliability of %(judge)s") % {"judge": judge.name}
    return {
        "judge": judge,
        "calibration": judged,
        "calibration_chart": charts.reliability_chart(
            points=[(b.mean_probability, b.observed, b.count) for b in judged.bins],
            title=title,
            x_label=_("Judge's probability of 1"),
            y_label=_("Share of human 1s"),
        ),
        "recalibrated_chart": charts.reliability_chart(
            points=[(b.mean_probability, b.observed, b.count) for b in judged.after.bins],
            title=title,
            x_label=_("Recalibrated probability of 1"),
            y_label=_("Share of human 1s"),
        )
        if judged.after is not None
        else None,
        "least_labels": MIN_LABELS,
    }
