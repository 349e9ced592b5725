"""Template filters and tags of the evidence page: a mean with its bootstrap interval, and the
two charts (coverage by budget, category shares along the sorted scores)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from annotation.workbench import shown_title
from evaluation.measures.evidence import OVERALL, Calibration, EvidenceReport
from evaluation.reports.charts import grouped_bar_chart
from evaluation.templatetags.report_extras import DASH, _bounds, number, pct, theme_name
from inference.estimators.bootstrap import Mean

register = template.Library()


@register.filter
def mean_pct(value: Mean | None) -> str:
    """A mean of a rate as a percentage, ``48.2%`` (a dash without one)."""
    return DASH if value is None or value.mean is None else pct(value.mean)


@register.filter
def mean_bounds(value: Mean | None) -> str:
    """Its bootstrap interval, ``[40.1%, 55.0%]`` (a dash without one)."""
    if value is None or value.lo is None or value.hi is None:
        return DASH
    return _bounds(pct(value.lo), pct(value.hi))


@register.filter
def share_range(low: float, high: float) -> str:
    return f"{number(low)}–{number(high)}"


@register.filter
def overall_coverage(report: EvidenceReport, index: int) -> Mean | None:
    """The report's overall coverage at its ``index``-th budget (None without gold passages)."""
    means = report.coverage.get(OVERALL, [])
    return means[index] if 0 <= index < len(means) else None


@register.filter
def overall_metric(report: EvidenceReport, name: str) -> Mean | None:
    """The report's overall mean of the ranking metric ``name`` (None without gold chunk ids)."""
    return report.retrieval.get(OVERALL, {}).get(name)


@register.simple_tag
def coverage_chart(report: EvidenceReport) -> SafeString:
    """Mean coverage per budget (groups) and theme (bars), with bootstrap intervals (SVG)."""
    groups = [f"N={budget}" for budget in report.budgets]
    series = [theme_name(theme) for theme in report.coverage]
    values = {
        (groups[i], theme_name(theme)): (m.mean, m.lo, m.hi) if m.mean is not None else None
        for theme, means in report.coverage.items()
        for i, m in enumerate(means)
    }
    return grouped_bar_chart(
        groups=groups,
        series=series,
        values=values,  # type: ignore[arg-type]
        title=_("Evidence coverage by token budget"),
    )


@register.simple_tag
def side_by_side_chart(reports: list[EvidenceReport]) -> SafeString:
    """Overall mean coverage per budget (groups) and campaign (bars), with intervals (SVG)."""
    groups = [f"N={budget}" for budget in reports[0].budgets]
    values = {}
    for report in reports:
        for i, m in enumerate(report.coverage.get(OVERALL, [])):
            if m.mean is not None:
                values[(groups[i], report.campaign.name)] = (m.mean, m.lo, m.hi)
    return grouped_bar_chart(
        groups=groups,
        series=[report.campaign.name for report in reports],
        values=values,  # type: ignore[arg-type]
        title=_("Evidence coverage by token budget, campaign by campaign"),
    )


@register.simple_tag
def shares_chart(calibration: Calibration) -> SafeString:
    """The share of each category in bins of answers along the sorted scores (SVG)."""
    # Numbered: bins of equal scores would otherwise share a name.
    groups = [f"{i}. {number(b.low)}–{number(b.high)}" for i, b in enumerate(calibration.bins, start=1)]
    # The categories' titles the conventions give, in the reader's language (as everywhere else).
    names = {value: shown_title(name) for value, name in calibration.categories}
    values = {
        (group, names[value]): (share, share, share)
        for group, b in zip(groups, calibration.bins, strict=True)
        for value, share in b.shares.items()
    }
    return grouped_bar_chart(
        groups=groups,
        series=[names[value] for value, _name in calibration.categories],
        values=values,
        title=_("Share of each category along the sorted scores (N=%(budget)s)")
        % {"budget": calibration.budget},
    )
