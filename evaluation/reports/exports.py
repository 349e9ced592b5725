"""Reports as files: an XLSX workbook for analysts, CSV of one criterion, a text table.

The workbook is written in openpyxl's write-only mode, so a campaign of a million units streams
to disk instead of being held in memory as cell objects.
"""

from __future__ import annotations

import csv
import datetime as dt
import importlib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, is_dataclass
from typing import Any, Protocol

from django.utils import timezone
from django.utils.text import slugify
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.chart import BarChart, Reference
from openpyxl.chart.data_source import NumDataSource, NumRef
from openpyxl.chart.error_bar import ErrorBars
from openpyxl.styles import Font

from annotation.models import Campaign, Criterion, Unit
from annotation.spreadsheets import neutralise, neutralise_row
from annotation.workflow import final_labels
from annotation.workflow.history import CSV_HEADER, history_rows
from evaluation.estimates.report import GroupEstimate, Report
from evaluation.estimates.small_themes import ShrunkTheme, SmallThemes
from evaluation.models import Judge, Judgment
from evaluation.reports.read import Provenance
from inference.numbers import decimal, finite, percent

PERCENT = "0.0%"
DECIMAL = "0.000"
INTEGER = "0"
UNIT_CHUNK = 5000
EXCEL_TEXT_LIMIT = 32767


class Writable(Protocol):
    """Where CSV goes: an open text file, or an HttpResponse."""

    def write(self, text: str, /) -> object: ...


def _clipped(group: GroupEstimate) -> str:
    """Which intervals have a computed bound outside [0, 1], shown clipped (the study method
    keeps ppi_py's bounds; old snapshots may hold such bounds): ``human judge ppi``, or empty."""
    named = (("human", group.human), ("judge", group.judge), ("ppi", group.ppi))
    return " ".join(name for name, interval in named if interval.clipped)


def _confusion(group: GroupEstimate, key: str) -> int | None:
    return group.agreement.confusion[key] if group.agreement else None


def _agreement(group: GroupEstimate, attr: str) -> float | None:
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
    ("observed_agreement", lambda g: _agreement(g, "observed"), PERCENT),
    ("chance_agreement", lambda g: _agreement(g, "chance"), PERCENT),
    ("kappa", lambda g: _agreement(g, "kappa"), DECIMAL),
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
_INDEX = {header: position for position, header in enumerate(HEADERS, start=1)}


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


def report_filename(*, campaign: Campaign, report: Report, extension: str) -> str:
    """A download's file name: ``<campaign>-<criterion>-<judge>-<method>.<extension>``."""
    return f"{campaign.slug}-{slugify(report.criterion)}-{slugify(report.judge)}-{report.method}.{extension}"


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
            "criterion",
            "judge",
            "alpha",
            "human_guidelines",
            "judge_prompt",
            *SOURCE_HEADERS,
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


def _text(value: Any) -> str:
    text = neutralise(ILLEGAL_CHARACTERS_RE.sub("", str(value)))
    return text[:EXCEL_TEXT_LIMIT]


def _cell(ws, value: Any, number_format: str | None = None, bold: bool = False) -> WriteOnlyCell:
    if isinstance(value, float) and not math.isfinite(value):
        value = None
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = timezone.make_naive(value, dt.UTC)
    text = isinstance(value, str)
    cell = WriteOnlyCell(ws, value=_text(value) if text else value)
    if text:
        # Untrusted text (answers, LLM output) must never become a formula: a string cell, and
        # neutralised by _text for the spreadsheets that re-read strings (and CSV round trips).
        cell.data_type = "s"
    if number_format and not text:
        cell.number_format = number_format
    if bold:
        cell.font = Font(bold=True)
    return cell


def _header(ws, headers: Sequence[str]) -> list[WriteOnlyCell]:
    return [_cell(ws, header, bold=True) for header in headers]


_SHEET_FORBIDDEN = re.compile(r"[\[\]:*?/\\]")


def _sheet_title(name: str, taken: set[str]) -> str:
    base = _SHEET_FORBIDDEN.sub("-", name)[:28] or "criterion"
    title, n = base, 2
    while title.lower() in taken:
        title, n = f"{base[:25]} ({n})", n + 1
    taken.add(title.lower())
    return title


def _summary(
    wb: Workbook, campaign: Campaign, reports: Sequence[Report], provenances: Sequence[Provenance | None]
) -> None:
    ws = wb.create_sheet("Summary")
    ws.freeze_panes = "A4"
    ws.append([_cell(ws, "Campaign", bold=True), _cell(ws, campaign.name)])
    ws.append([_cell(ws, "Generated", bold=True), _cell(ws, timezone.now(), "yyyy-mm-dd hh:mm")])
    headers = [
        "criterion", "level", "judge", "method", "alpha", "N", "n_human", "n_judge",
        "human_mean", "judge_mean", "ppi_mean", "ppi_lo", "ppi_hi", "kappa", "effective_n",
        "missing_judgments", "human_guidelines", "judge_prompt", *SOURCE_HEADERS,
    ]  # fmt: skip
    ws.append(_header(ws, headers))
    for report, provenance in zip(reports, provenances, strict=True):
        overall = report.overall
        ws.append(
            [
                _cell(ws, report.criterion),
                _cell(ws, report.level),
                _cell(ws, report.judge),
                _cell(ws, report.method),
                _cell(ws, report.alpha, "0.00"),
                _cell(ws, overall.size, INTEGER),
                _cell(ws, overall.n_human, INTEGER),
                _cell(ws, overall.n_judge, INTEGER),
                _cell(ws, finite(overall.human.shown_mean), PERCENT),
                _cell(ws, finite(overall.judge.shown_mean), PERCENT),
                _cell(ws, finite(overall.ppi.shown_mean), PERCENT),
                _cell(ws, finite(overall.ppi.shown_lo), PERCENT),
                _cell(ws, finite(overall.ppi.shown_hi), PERCENT),
                _cell(ws, _agreement(overall, "kappa"), DECIMAL),
                _cell(ws, finite(overall.effective_n), "0.0"),
                _cell(ws, len(overall.missing_judgments), INTEGER),
                _cell(ws, guidelines_text(report.versions)),
                _cell(ws, prompt_text(report.versions)),
                *(_cell(ws, value) for value in source_values(provenance)),
            ]
        )


def _flat(row: Any) -> dict[str, Any]:
    """A metrics row as flat columns; an interval pair ``ci`` becomes ``ci_lo`` and ``ci_hi``."""
    data = asdict(row) if is_dataclass(row) and not isinstance(row, type) else dict(row)
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, list | tuple) and len(value) == 2:
            flat[f"{key}_lo"], flat[f"{key}_hi"] = value
        elif isinstance(value, list | tuple | dict):
            flat[key] = str(value)
        else:
            flat[key] = value
    return flat


def _metrics(wb: Workbook, campaign: Campaign) -> None:
    ws = wb.create_sheet("Automatic metrics")
    ws.freeze_panes = "A2"
    try:
        metrics = importlib.import_module("evaluation.measures.automatic")
        compute_metrics = metrics.compute_metrics
    except (ImportError, AttributeError):
        ws.append(_header(ws, ["note"]))
        ws.append([_cell(ws, "Automatic metrics are not available in this installation.")])
        return
    results = list(compute_metrics(campaign=campaign))
    overall = getattr(metrics, "overall_metrics", None)
    if overall is not None:
        results += list(overall(rows=results))
    rows = [_flat(result) for result in results]
    headers: list[str] = []
    for row in rows:
        headers.extend(key for key in row if key not in headers)
    ws.append(_header(ws, headers or ["note"]))
    if not rows:
        ws.append([_cell(ws, "No automatic metrics for this campaign.")])
    for row in rows:
        cells = []
        for key in headers:
            value = row.get(key)
            number_format = None
            if isinstance(value, float):
                number_format = PERCENT if key in ("rate", "ci_lo", "ci_hi") else DECIMAL
            elif isinstance(value, int) and not isinstance(value, bool):
                number_format = INTEGER
            cells.append(_cell(ws, value, number_format))
        ws.append(cells)


def _criterion_sheet(wb: Workbook, report: Report, taken: set[str], small: SmallThemes | None) -> None:
    ws = wb.create_sheet(_sheet_title(report.criterion, taken))
    groups = report_groups(report=report)
    ws.freeze_panes = "B2"
    ws.append(_header(ws, [*HEADERS, *(SHRUNK_HEADERS if small is not None else [])]))
    for group, row in zip(groups, shrunk_rows(report=report, small=small), strict=True):
        cells = [_cell(ws, value(group), fmt) for _, value, fmt in COLUMNS]
        if small is not None:
            cells += [_cell(ws, value(row), fmt) for _, value, fmt in SHRUNK_COLUMNS]
        ws.append(cells)
    # The chart shows themes and overall (not the difficulty cells), with PPI++ error bars.
    rows = [row for row, group in enumerate(groups, start=2) if group.difficulty is None]
    chart = BarChart()
    chart.type = "col"
    chart.title = f"{report.criterion}: PPI++ estimate per theme ({100 * (1 - report.alpha):g}% CI)"
    chart.y_axis.title = "rate"
    chart.y_axis.number_format = PERCENT
    chart.y_axis.scaling.min = 0
    chart.y_axis.scaling.max = 1
    last = max(rows) if rows else 2
    mean_col = _INDEX["ppi_mean"]
    chart.add_data(Reference(ws, min_col=mean_col, min_row=1, max_row=last), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=_INDEX["theme"], min_row=2, max_row=last))

    def ref(column: str) -> NumDataSource:
        return NumDataSource(numRef=NumRef(f=Reference(ws, min_col=_INDEX[column], min_row=2, max_row=last)))

    chart.series[0].errBars = ErrorBars(
        errDir="y", errBarType="both", errValType="cust", plus=ref("ppi_plus"), minus=ref("ppi_minus")
    )
    chart.width, chart.height = 22, 11
    ws.add_chart(chart, f"A{len(groups) + 4}")


def _units(wb: Workbook, campaign: Campaign, criteria: list[Criterion]) -> None:
    ws = wb.create_sheet("Units")
    ws.freeze_panes = "B2"
    judges = list(Judge.objects.filter(campaign=campaign).order_by("name"))
    finals = {criterion.pk: final_labels(criterion=criterion) for criterion in criteria}
    columns: list[tuple[Criterion, Judge | None]] = [(criterion, None) for criterion in criteria]
    columns += [(criterion, judge) for criterion in criteria for judge in judges]
    headers = ["unit", "level", "answer", "sentence", "theme", "difficulty", "text", "source"]
    headers += [f"{c.name}: human" if j is None else f"{c.name}: {j.name}" for c, j in columns]
    ws.append(_header(ws, headers))
    fields = (
        "id",
        "level",
        "answer__external_id",
        "sentence__position",
        "theme",
        "difficulty",
    )
    last = 0
    while True:
        chunk = list(
            Unit.objects.filter(campaign=campaign, pk__gt=last)
            .order_by("pk")
            .values(*fields, "answer__text", "sentence__text", "chunk__external_id")[:UNIT_CHUNK]
        )
        if not chunk:
            break
        first, last = chunk[0]["id"], chunk[-1]["id"]
        judged: dict[tuple[int, int, int], int | None] = {
            (unit_id, criterion_id, judge_id): value
            for unit_id, criterion_id, judge_id, value in Judgment.objects.filter(
                unit_id__gte=first,
                unit_id__lte=last,
                criterion__in=criteria,
                status=Judgment.Status.OK,
            ).values_list("unit_id", "criterion_id", "judge_id", "value")
        }
        for unit in chunk:
            text = unit["answer__text"] if unit["level"] == "answer" else unit["sentence__text"]
            row = [_cell(ws, unit[name]) for name in fields]
            row += [_cell(ws, text), _cell(ws, unit["chunk__external_id"])]
            for criterion, judge in columns:
                if judge is None:
                    value = finals[criterion.pk].get(unit["id"])
                else:
                    value = judged.get((unit["id"], criterion.pk, judge.pk))
                row.append(_cell(ws, value, INTEGER))
            ws.append(row)


def _history(wb: Workbook, campaign: Campaign) -> None:
    """The label history as its CSV gives it (``annotation.workflow.history``), one row per label
    row, oldest first."""
    ws = wb.create_sheet("Label history")
    ws.freeze_panes = "A2"
    ws.append(_header(ws, CSV_HEADER))
    formats = {"label_id": INTEGER, "time_utc": "yyyy-mm-dd hh:mm:ss", "value": INTEGER, "replaces": INTEGER}
    for row in history_rows(campaign=campaign):
        ws.append([_cell(ws, value, formats.get(name)) for name, value in zip(CSV_HEADER, row, strict=True)])


def build_workbook(
    *,
    campaign: Campaign,
    criteria_reports: Sequence[Report],
    path_or_buffer: Any,
    provenances: Sequence[Provenance | None] | None = None,
    shrinkages: Sequence[SmallThemes | None] | None = None,
) -> None:
    """Write the campaign's workbook to ``path_or_buffer`` (a path or a binary file object).

    ``provenances`` says, per report, where its numbers come from (a snapshot or a computation,
    as of when: the Summary's last columns); None for reports computed now. ``shrinkages``: per
    report, its shrinkage toward the judge (the ``SHRUNK_HEADERS`` columns of its sheet), or
    None. The other sheets (metrics, units, label history) are always read as the workbook is
    written.

    Sheets: Summary (overall figures per criterion), Automatic metrics (or a note when the
    metrics module is absent), one sheet per report (estimates and agreement per theme and
    overall, a bar chart with the PPI++ intervals as error bars), Units (every unit, its text,
    final human label and each judge's label per reported criterion) and Label history (every
    human label row). Numbers are numbers with formats, header rows are frozen.
    """
    wb = Workbook(write_only=True)
    taken = {"summary", "automatic metrics", "units", "label history"}
    _summary(wb, campaign, criteria_reports, provenances or [None] * len(criteria_reports))
    _metrics(wb, campaign)
    for report, small in zip(criteria_reports, shrinkages or [None] * len(criteria_reports), strict=True):
        _criterion_sheet(wb, report, taken, small)
    names = list(dict.fromkeys(report.criterion for report in criteria_reports))
    by_name = {c.name: c for c in Criterion.objects.filter(campaign=campaign, name__in=names)}
    _units(wb, campaign, [by_name[name] for name in names if name in by_name])
    _history(wb, campaign)
    wb.save(path_or_buffer)


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
