"""The report pages' SVG charts as template tags: the estimates per theme, their history, two
campaigns side by side, and stability across repetitions (drawn by ``evaluation.reports.charts``,
labelled in the reader's language)."""

from __future__ import annotations

import math

from django import template
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from evaluation.estimates.report import Report
from evaluation.estimates.snapshots import HistoryTable
from evaluation.measures.comparison import ThemeComparison
from evaluation.measures.stability import Stability
from evaluation.reports.charts import interval_chart, line_chart
from evaluation.templatetags.report_extras import confidence, theme_name
from inference import intervals

register = template.Library()

# Snapshots drawn in the history chart (the table lists them all).
CHART_SNAPSHOTS = 20


# The report's answer chart drawn for a phone: 360 pixels wide, so that its 12-pixel text stays
# 12 pixels on a 390-pixel screen (the 720-pixel chart scaled down would show it at 6).
NARROW = 360


@register.simple_tag
def report_chart(report: Report, estimates: str = "all", width: int = 720) -> SafeString:
    """The estimates per theme and overall with their intervals (SVG): human, judge and PPI++
    (``estimates`` "all"), or PPI++ alone ("ppi": the report's answer); ``width`` in pixels,
    ``NARROW`` for phones (narrower row labels)."""
    rows = [
        {
            "label": theme_name(group.theme),
            "estimates": [
                (name, value.mean, value.shown_lo, value.shown_hi)
                for name, value in (
                    (_("Human"), group.human),
                    (_("Judge"), group.judge),
                    ("PPI++", group.ppi),
                )
                if estimates == "all" or value is group.ppi
            ],
        }
        for group in [*report.themes, report.overall]
    ]
    title = (
        _("%(criterion)s: estimates with %(confidence)s intervals")
        if estimates == "all"
        else _("PPI++ estimate per theme (%(confidence)s intervals)")
    )
    return interval_chart(
        rows=rows,
        title=title % {"criterion": report.criterion, "confidence": confidence(report.alpha)},
        width=width,
        label_width=160.0 if width > NARROW else 112.0,
    )


@register.simple_tag
def history_chart(table: HistoryTable, criterion: str, alpha: float) -> SafeString:
    """The PPI++ interval of every theme and overall in the latest snapshots (SVG)."""
    rows = []
    for row in table.rows[-CHART_SNAPSHOTS:]:
        estimates = []
        for theme, group in zip(table.columns, row.groups, strict=True):
            if group is not None:
                lo, hi = group.get("ppi_ci") or (None, None)
                estimates.append(
                    (theme, group.get("ppi_mean"), intervals.clip_bound(lo), intervals.clip_bound(hi))
                )
        snapshot = row.snapshot
        rows.append(
            {"label": f"{snapshot.created_at:%Y-%m-%d %H:%M} · n={snapshot.n_human}", "estimates": estimates}
        )
    return interval_chart(
        rows=rows,
        title=_("%(criterion)s: PPI++ per theme over time (%(confidence)s intervals)")
        % {"criterion": criterion, "confidence": confidence(alpha)},
    )


@register.simple_tag
def comparison_chart(compared: list[ThemeComparison], criterion: str, left: str, right: str) -> SafeString:
    """Two campaigns' PPI++ intervals side by side, per theme and overall (SVG); ``left`` and
    ``right`` are the campaigns' names."""
    names = (left, right)
    rows = [
        {
            "label": theme_name(row.theme),
            "estimates": [
                (name, group.ppi.shown_mean, group.ppi.shown_lo, group.ppi.shown_hi)
                for name, group in zip(names, (row.left, row.right), strict=True)
                if group is not None and math.isfinite(group.ppi.mean)
            ],
        }
        for row in compared
    ]
    return interval_chart(
        rows=rows,
        title=_("%(criterion)s: PPI++ per theme, %(left)s vs %(right)s")
        % {"criterion": criterion, "left": left, "right": right},
    )


@register.simple_tag
def stability_chart(result: Stability) -> SafeString:
    """The width of the overall interval against the repetitions used per question: measured by
    subsampling, and as the design effect predicts it (SVG)."""
    return line_chart(
        series=[
            (_("Measured (mean over draws)"), [(p.r, p.mean_width) for p in result.widths]),
            (_("Predicted by the design effect"), [(p.r, p.predicted_width) for p in result.widths]),
        ],
        title=_("Width of the %(confidence)s interval against repetitions per question")
        % {"confidence": confidence(result.alpha)},
        x_label=_("Repetitions per question"),
        y_label=_("Width (points)"),
    )
