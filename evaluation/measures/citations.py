"""Citation precision and citation recall side by side, per theme (ALCE: Gao et al. 2023,
"Enabling Large Language Models to Generate Text with Citations").

*Citation precision* is the share of citations (a sentence and one retrieved chunk it cites)
whose chunk supports at least part of the sentence: the estimates of the built-in citation-level
criterion ``citation_support``. *Citation recall* is the share of sentences whose every piece of
information follows from the sources they cite: the estimates of the built-in sentence-level
criterion ``veracity``. Each keeps its own units, labels and intervals; this module only lays the
two reports of one judge, method and alpha side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotation.models import Criterion, Level
from evaluation.estimates import report
from evaluation.estimates.codec import group_as_json
from evaluation.estimates.report import GroupEstimate, Report
from evaluation.models import Judge
from evaluation.reports import read

PRECISION, RECALL = "citation_support", "veracity"


@dataclass(frozen=True)
class CitationRow:
    """One theme (or the overall row): its citation precision and recall estimates, None when
    the criterion has no unit in the theme."""

    theme: str
    precision: GroupEstimate | None
    recall: GroupEstimate | None


def recall_criterion(*, criterion: Criterion) -> Criterion | None:
    """The campaign's veracity criterion when ``criterion`` is its citation support (whose report
    then shows both measures); None otherwise, or when the campaign has no sentence-level
    veracity."""
    if criterion.name != PRECISION or criterion.level != Level.CITATION:
        return None
    return Criterion.objects.filter(
        campaign_id=criterion.campaign_id, name=RECALL, level=Level.SENTENCE
    ).first()


def citation_rows(*, precision: Report, recall: Report | None) -> list[CitationRow]:
    """Per theme (sorted), then overall: the two reports' estimates side by side."""
    by_precision = {group.theme: group for group in precision.themes}
    by_recall = {group.theme: group for group in recall.themes} if recall is not None else {}
    themes = sorted(set(by_precision) | set(by_recall))
    rows = [CitationRow(theme, by_precision.get(theme), by_recall.get(theme)) for theme in themes]
    rows.append(CitationRow(precision.overall.theme, precision.overall, recall.overall if recall else None))
    return rows


def rows_as_json(*, rows: list[CitationRow]) -> list[dict[str, Any]]:
    """The rows as JSON-ready dicts: ``theme``, ``precision`` and ``recall`` (each a group as
    ``estimates.group_as_json`` writes it, or None)."""
    return [
        {
            "theme": row.theme,
            "precision": group_as_json(group=row.precision) if row.precision is not None else None,
            "recall": group_as_json(group=row.recall) if row.recall is not None else None,
        }
        for row in rows
    ]


def rows_to_show(
    *, criterion: Criterion, judge: Judge, method: str, alpha: float, precision: Report
) -> list[CitationRow] | None:
    """The report page's citation table: ``precision`` (the citation support report shown) beside
    the veracity report the page would show for the same judge, method and alpha (its latest
    snapshot, or computed now). None when ``criterion`` is not citation support."""
    if criterion.name != PRECISION or criterion.level != Level.CITATION:
        return None
    veracity = recall_criterion(criterion=criterion)
    recall = None
    if veracity is not None:
        recall = read.report_to_show(criterion=veracity, judge=judge, method=method, alpha=alpha).report
    return citation_rows(precision=precision, recall=recall)


def with_citation_measures(
    *, data: dict[str, Any], criterion: Criterion, judge: Judge, precision: Report
) -> dict[str, Any]:
    """``data`` (``estimates.report_as_json`` of ``precision``) with, for citation support, the
    key ``citation_measures``: the rows of ``rows_as_json``, recall computed now with the same
    judge, method and alpha. Other criteria: ``data`` unchanged."""
    if criterion.name != PRECISION or criterion.level != Level.CITATION:
        return data
    veracity = recall_criterion(criterion=criterion)
    recall = None
    if veracity is not None:
        recall = report.compute_report(
            criterion=veracity, judge=judge, alpha=precision.alpha, method=precision.method
        )
    return {**data, "citation_measures": rows_as_json(rows=citation_rows(precision=precision, recall=recall))}
