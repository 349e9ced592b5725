"""A report as tables for people, outside the workbook: its columns (one definition, which the
workbook's estimates sheet shares), the CSV of one criterion with where its numbers come from,
and the plain-text table the ``report`` command prints.
"""

from __future__ import annotations

import csv
import datetime as dt
from collections.abc import Callable
from typing import Any

from django.utils import timezone

from annotation.spreadsheets import Writable, neutralise_row
from evaluation.estimates.multi_judge import CombinedReport
from evaluation.estimates.report import GroupEstimate, Report
from evaluation.estimates.small_themes import ShrunkTheme, SmallThemes
from evaluation.reports.read import Provenance
from inference.numbers import decimal, finite, percent

# Number formats of the columns, as a spreadsheet reads them.
PERCENT = "0.0%"
DECIMAL = "0.000"
INTEGER = "0"


def _clipped(group: GroupEstimate) -> str:
    """Which intervals have a computed bound outside [0, 1], shown clipped (the study method
    keeps ppi_py's bounds; old snapshots may hold such bounds): ``human judge ppi``, or empty."""
    named = (("human", group.human), ("judge", group.judge), ("ppi", group.ppi))
    return " ".join(name for name, interval in named if interval.clipped)


def _confusion(group: GroupEstimate, key: str) -> int | None:
    return group.agreement.confusion[key] if group.agreement else None


def agreement_of(group: GroupEstimate, attr: str) -> float | None:
    return finite(getattr(group.agreement, attr)) if group.agreement else None


# (header, value of a group, number format or None for text)
COLUMNS: list[tuple[str, Callable[[GroupEstimate], Any], str | None]] = [
    ("theme", lambda g: g.theme, None),
    ("difficulty", lambda g: g.difficulty or "", None),
    ("method", lambda g: g.method, None),
    ("N", lambda g: g.size, INTEGER),
    ("n_human", lambda g: g.n_human, INTEGER),
    ("n_paired", lambda g: g.n_paired, INTEGER),
    ("n_judge", lambda g: g.n_judge, INTEGER),
    ("human_mean", lambda g: finite(g.human.shown_mean), PERCENT),
    ("human_lo", lambda g: finite(g.human.shown_lo), PERCENT),
    ("human_hi", lambda g: finite(g.human.shown_hi), PERCENT),
    ("judge_mean", lambda g: finite(g.judge.shown_mean), PERCENT),
    ("judge_lo", lambda g: finite(g.judge.shown_lo), PERCENT),
    ("judge_hi", lambda g: finite(g.judge.shown_hi), PERCENT),
    ("ppi_mean", lambda g: finite(g.ppi.shown_mean), PERCENT),
    ("ppi_lo", lambda g: finite(g.ppi.shown_lo), PERCENT),
    ("ppi_hi", lambda g: finite(g.ppi.shown_hi), PERCENT),
    ("ppi_minus", lambda g: finite(g.ppi.shown_mean - g.ppi.shown_lo), PERCENT),
    ("ppi_plus", lambda g: finite(g.ppi.shown_hi - g.ppi.shown_mean), PERCENT),
    ("lambda", lambda g: finite(g.ppi.lam), DECIMAL),
    ("observed_agreement", lambda g: agreement_of(g, "observed"), PERCENT),
    ("chance_agreement", lambda g: agreement_of(g, "chance"), PERCENT),
    ("kappa", lambda g: agreement_of(g, "kappa"), DECIMAL),
    ("effective_n", lambda g: finite(g.effective_n), "0.0"),
    ("tp", lambda g: _confusion(g, "tp"), INTEGER),
    ("fp", lambda g: _confusion(g, "fp"), INTEGER),
    ("fn", lambda g: _confusion(g, "fn"), INTEGER),
    ("tn", lambda g: _confusion(g, "tn"), INTEGER),
    ("missing_judgments", lambda g: len(g.missing_judgments), INTEGER),
    ("missing_unit_ids", lambda g: " ".join(map(str, g.missing_judgments)), None),
    ("ppi_method", lambda g: g.ppi.method, None),
    ("notes", lambda g: "; ".join(g.notes), None),
    ("clipped", lambda g: _clipped(g), None),
]


HEADERS = [header for header, _, _ in COLUMNS]


def _shrunk(row: ShrunkTheme | None, pick: Callable[[ShrunkTheme], Any]) -> Any:
    return None if row is None else pick(row)


# The shrinkage toward the judge (``evaluation.estimates.small_themes``), after COLUMNS when asked for:
# theme rows only (empty on the difficulty cells and overall).
SHRUNK_COLUMNS: list[tuple[str, Callable[[ShrunkTheme | None], Any], str | None]] = [
    (
        "ppi_shrunk_mean",
        lambda r: _shrunk(r, lambda t: finite(t.shrunk.shown_mean) if t.shrunk else None),
        PERCENT,
    ),
    ("ppi_shrunk_lo", lambda r: _shrunk(r, lambda t: finite(t.shrunk.lo) if t.shrunk else None), PERCENT),
    ("ppi_shrunk_hi", lambda r: _shrunk(r, lambda t: finite(t.shrunk.hi) if t.shrunk else None), PERCENT),
    ("ppi_shrunk_weight", lambda r: _shrunk(r, lambda t: finite(t.weight)), DECIMAL),
    ("ppi_se", lambda r: _shrunk(r, lambda t: finite(t.standard_error)), "0.0000"),
    ("ppi_shrunk_note", lambda r: _shrunk(r, lambda t: str(t.reason)), None),
]


SHRUNK_HEADERS = [header for header, _, _ in SHRUNK_COLUMNS]


def shrunk_rows(*, report: Report, small: SmallThemes | None) -> list[ShrunkTheme | None]:
    """Per row of :func:`report_groups`, the theme's shrinkage (None on the other rows)."""
    groups = report_groups(report=report)
    if small is None:
        return [None] * len(groups)
    themes = [small.of(group.theme) for group in report.themes]
    return [*themes, *[None] * (len(groups) - len(themes))]


def report_groups(*, report: Report) -> list[GroupEstimate]:
    """The report's rows in display order: themes, theme x difficulty cells, overall."""
    return [*report.themes, *(report.by_difficulty or []), report.overall]


def guidelines_text(versions: dict[str, Any]) -> str:
    """The guidelines versions of a report's human labels, as text: ``v1 (12 labels); v2 (3
    labels)`` (``unknown`` for imported labels); ``none`` without labels."""
    parts = [
        f"{'v' + str(row['guidelines_version']) if row['guidelines_version'] else 'unknown'} "
        f"({row['labels']} labels)"
        for row in versions.get("human_labels", [])
    ]
    return "; ".join(parts) or "none"


def prompt_text(versions: dict[str, Any]) -> str:
    """The prompt a report's judge labels rest on, as text: ``guidelines v1, sha256 <hex>``;
    ``none`` for a judge that sends no prompt."""
    prompt = versions.get("judge_prompt")
    if not prompt:
        return "none"
    return f"guidelines v{prompt['guidelines_version']}, sha256 {prompt['sha256']}"


SOURCE_HEADERS = ["estimates_source", "estimates_as_of", "snapshot_trigger"]
# What every row of a report's CSV starts with: which report, and where its numbers come from.
REPORT_HEADERS = ["criterion", "judge", "alpha", "human_guidelines", "judge_prompt", *SOURCE_HEADERS]


def source_values(provenance: Provenance | None) -> list[str]:
    """Where the numbers come from, as the three ``SOURCE_HEADERS`` values: ``snapshot`` (with
    the snapshot's time and trigger) or ``computed`` (now, when ``provenance`` is None), the
    time in ISO 8601 UTC."""
    if provenance is None:
        provenance = Provenance(source=Provenance.COMPUTED, as_of=timezone.now())
    as_of = provenance.as_of.astimezone(dt.UTC).isoformat(timespec="seconds")
    return [provenance.source, as_of, provenance.trigger]


def write_csv(
    *,
    report: Report,
    stream: Writable,
    provenance: Provenance | None = None,
    small: SmallThemes | None = None,
) -> None:
    """Write one criterion's estimates to ``stream`` as CSV: a header row (``HEADERS`` after the
    criterion, the judge, alpha, the texts the numbers rest on and where the numbers come from,
    ``SOURCE_HEADERS``), then one row per theme, per theme x difficulty cell when present, and
    overall. Rates are fractions (0.5, not 50); a missing number is an empty field. Without
    ``provenance`` the report was computed now. With ``small`` (the report's shrinkage toward the
    judge) the ``SHRUNK_HEADERS`` columns follow, filled on the theme rows."""
    writer = csv.writer(stream)
    writer.writerow(
        [
            *REPORT_HEADERS,
            *HEADERS,
            *(SHRUNK_HEADERS if small is not None else []),
        ]
    )
    texts = [guidelines_text(report.versions), prompt_text(report.versions), *source_values(provenance)]
    shrunk = shrunk_rows(report=report, small=small)
    for group, row in zip(report_groups(report=report), shrunk, strict=True):
        values = [value(group) for _, value, _ in COLUMNS]
        if small is not None:
            values += [value(row) for _, value, _ in SHRUNK_COLUMNS]
        writer.writerow(
            neutralise_row(
                [
                    report.criterion,
                    report.judge,
                    report.alpha,
                    *texts,
                    *("" if v is None else v for v in values),
                ]
            )
        )


def _ci(interval: Any) -> str:
    """``mean [lo, hi]`` in percent, bounds in [0, 100], ``*`` after a bound shown clipped."""
    mark = "*" if interval.clipped else ""
    mean, lo, hi = (
        percent(value, sign="").rjust(5)
        for value in (interval.shown_mean, interval.shown_lo, interval.shown_hi)
    )
    return f"{mean} [{lo}, {hi}]{mark}"


def table_lines(*, report: Report, small: SmallThemes | None = None) -> list[str]:
    """The report as fixed-width text lines (rates in percent), one row per group; with
    ``small``, each theme's estimate shrunk toward the judge and its weight after the rest."""
    level = 100 * (1 - report.alpha)
    lines = [
        f"{report.campaign} / {report.criterion} / judge {report.judge}: "
        f"method {report.method}, {level:g}% intervals, rates in %",
        f"{'theme':<20} {'n_hum':>6} {'n_judge':>8} {'human':>22} {'judge':>22} {'PPI++':>22} "
        f"{'lambda':>6} {'agree':>6} {'kappa':>6} {'n_eff':>7} {'missing':>7}"
        + (f" {'shrunk to judge':>22} {'weight':>6}" if small is not None else ""),
    ]
    for group, row in zip(report_groups(report=report), shrunk_rows(report=report, small=small), strict=True):
        name = group.theme if group.difficulty is None else f"{group.theme}/{group.difficulty}"
        agreement = group.agreement
        lines.append(
            f"{name[:20]:<20} {group.n_human:>6} {group.n_judge:>8} {_ci(group.human):>22} "
            f"{_ci(group.judge):>22} {_ci(group.ppi):>22} {decimal(group.ppi.lam, digits=2):>6} "
            f"{percent(agreement.observed if agreement else None, sign='').rjust(5):>6} "
            f"{decimal(agreement.kappa if agreement else None, digits=2):>6} "
            f"{decimal(group.effective_n, digits=0):>7} {len(group.missing_judgments):>7}"
            + (_shrunk_text(row) if small is not None else "")
        )
    if any(_clipped(group) for group in report_groups(report=report)):
        lines[0] += "; * bound outside [0, 1] shown clipped to [0, 1]"
    if small is not None:
        lines.append(shrinkage_text(small=small))
    lines.append(
        f"human labels under guidelines {guidelines_text(report.versions)}; "
        f"judge prompt {prompt_text(report.versions)}"
    )
    return lines


def _shrunk_text(row: ShrunkTheme | None) -> str:
    if row is None or row.shrunk is None:
        return f" {'-':>22} {'-':>6}"
    return f" {_ci(row.shrunk):>22} {decimal(row.weight, digits=2):>6}"


def shrinkage_text(*, small: SmallThemes) -> str:
    """The shrinkage's caveat in one line: its guarantee is on average over the themes, with the
    bench's coverage figures, and a warning when the judge agrees with the humans less than the
    bench's judges whose intervals held (English: the command's and the files')."""
    bench = small.bench
    text = (
        f"shrunk to judge (PAS, robust empirical Bayes intervals, tau^2 = {small.tau2:.5f}): "
        f"{100 * (1 - small.alpha):g}% on average over the themes, not for each theme; a theme whose "
        f"judge bias differs from the others' may be covered much less often (bench, {bench.designs} "
        f"designs x {bench.replications} replications: {100 * bench.average_lowest:.1f}% to "
        f"{100 * bench.average_highest:.1f}% on average, {100 * bench.worst_theme:.1f}% in the worst theme; "
        f"the lowest with a judge agreeing {100 * bench.weak_agreement:.0f}%, at least "
        f"{100 * bench.lowest_above_floor:.1f}% from {100 * bench.agreement_floor:.0f}%)"
    )
    if small.weak_judge and small.agreement is not None:
        text += (
            f"; here the judge agrees {100 * small.agreement:.1f}%, "
            f"below {100 * bench.agreement_floor:.0f}%: rely on the PPI++ columns"
        )
    return text


def combined_lines(*, report: CombinedReport) -> list[str]:
    """The judges combined in one estimate, as fixed-width text lines: per theme then overall,
    the estimate and its interval beside the human labels alone, then each judge's coefficient,
    the share of the variance it takes off beyond the others and its share of the answers."""
    lines = [
        f"several judges combined ({', '.join(report.judges)}; PPI++ with a coefficient per judge):",
        f"{'theme':<16} {'n':>5} {'combined':>22} {'human only':>22} {'n_eff':>7}  judges (coefficient, "
        "variance taken off, share)",
    ]
    for group in [*report.themes, report.overall]:
        parts = ", ".join(
            f"{part.judge} {decimal(part.coefficient, digits=2)} {percent(part.reduction, digits=0)} "
            f"{'all' if part.share is None else percent(part.share, digits=0)}"
            for part in group.judges
        )
        lines.append(
            f"{group.theme[:16]:<16} {group.n_paired:>5} {_ci(group.estimate):>22} {_ci(group.human):>22} "
            f"{decimal(group.effective_n, digits=0):>7}  {parts}"
        )
    return lines
