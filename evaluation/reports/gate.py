"""The release gate: does a campaign's PPI++ estimate of a criterion clear a threshold, and has
it not dropped significantly against a baseline campaign (the previous version of the
assistant)?

The gate reads the estimates as every reader does (``evaluation.reports.read``: the latest
snapshot of the parameters when there is one, else computed now; the judge by
``judge_choice``'s rule), with one stricter rule: a snapshot after which labels, judgments, units
or the current sample changed is not trusted with a release, and the estimates are computed now
instead (``computed_because`` "stale"). A fresh snapshot holds the numbers a computation would
give, at the cost of a dozen small queries.

Checked groups: every theme and the overall estimate, or the groups named in ``themes``
(``"overall"`` names the overall estimate). A checked group fails

- when its PPI++ lower bound, as shown by the report (inside [0, 1]), is below ``min_lower``,
  or when it has no lower bound (no paired units, or a single answer under the robust method:
  an interval without a lower bound clears no threshold);
- with a baseline, when the estimate dropped: the difference ``campaign - baseline`` of the
  PPI++ estimates as the compare page computes it (by question, ``comparison.compare_versions``,
  when the campaigns share question ids; else as independent samples,
  ``comparison.compare_reports``, Welch's t), its one-sided p-value of a drop adjusted over the
  checked groups compared (Holm's by default, Bonferroni's as an option) and below ``alpha``:
  the chance that a release that did not drop fails for a drop in any group is at most
  ``alpha``, however many groups are checked. A group the baseline lacks, or whose difference
  cannot be computed (an estimate missing on either side), is shown and not compared.

The lower bounds need no such adjustment: a release passes only when every checked group clears
the threshold, so it passes wrongly (a group below the threshold whose lower bound is above it)
with at most the chance one group has, alpha / 2.

With ``refuse_judge_drift`` (off by default), the gate also fails when the judge it reads drifted
(``evaluation.measures.judge_alignment``): its agreement with the final human labels changed
between two periods of its judged units, or from the previous prompt version of its model to it,
with an interval of the change that excludes 0 at ``alpha``. A change either way fails: the
judge's labels do not mean the same thing throughout.

The failures are listed lower bounds first, then drops, then the judge's drifts, each in the
report's order (themes by name, then overall); the first is the gate's ``reason``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from annotation.criteria.categories import is_categorical
from annotation.models import Campaign, Criterion
from evaluation.errors import EstimateError
from evaluation.estimates import judge_choice
from evaluation.estimates.params import OVERALL
from evaluation.estimates.report import GroupEstimate, Report
from evaluation.measures import comparison, judge_alignment
from evaluation.models import Judge
from evaluation.reports import read
from evaluation.reports.lookups import find_criterion
from evaluation.reports.read import Provenance
from inference import intervals, paired
from inference.numbers import finite


@dataclass(frozen=True)
class Drop:
    """``campaign - baseline`` in one group: the difference, its two-sided 1 - alpha interval,
    and the one-sided p-value that it is a drop (NaN when it has none: no width); ``by_question``
    whether it was compared by question."""

    estimate: float
    lo: float
    hi: float
    p_value: float
    by_question: bool

    @classmethod
    def of_paired(cls, difference: paired.PairedDifference) -> Drop:
        return cls(
            estimate=difference.estimate,
            lo=difference.lo,
            hi=difference.hi,
            p_value=math.nan
            if difference.degenerate
            else paired.one_sided_p(estimate=difference.estimate, se=difference.se, df=difference.df),
            by_question=True,
        )

    @classmethod
    def of_interval(cls, difference: intervals.Interval) -> Drop:
        se = intervals.standard_error(difference)
        return cls(
            estimate=difference.mean,
            lo=difference.lo,
            hi=difference.hi,
            p_value=paired.one_sided_p(estimate=difference.mean, se=se, df=difference.df)
            if se > 0
            else math.nan,
            by_question=False,
        )


def drops(*, report: Report, baseline: Report, versions: comparison.Comparison | None) -> dict[str, Drop]:
    """Each group's difference ``report - baseline`` of the PPI++ estimates: by question from
    ``versions`` (the two campaigns compared by question, baseline on the left) when given, else
    as independent samples from the two reports."""
    if versions is not None:
        return {
            row.theme: Drop.of_paired(row.difference)
            for row in versions.rows_of(comparison.PPI)
            if row.difference is not None
        }
    return {
        row.theme: Drop.of_interval(row.difference)
        for row in comparison.compare_reports(left=baseline, right=report)
        if row.difference is not None
    }


def adjusted_drops(*, differences: dict[str, Drop], adjustment: str = paired.HOLM) -> dict[str, float]:
    """The one-sided p-values of the drops of the groups checked and compared (``differences``),
    adjusted over them all (``paired.adjusted``): what a gate at alpha compares with alpha."""
    groups = list(differences)
    values = paired.adjusted([differences[group].p_value for group in groups], method=adjustment)
    return dict(zip(groups, values, strict=True))


def is_drop(difference: Drop, *, p_adjusted: float, alpha: float) -> bool:
    """A significant drop: a difference below 0 whose adjusted one-sided p-value is below alpha."""
    return difference.estimate < 0 and p_adjusted < alpha


@dataclass(frozen=True)
class GroupFigures:
    """One group's figures as the gate read them (None: not computable): the PPI++ estimate and
    its interval as the report shows it, the labels behind it, and with a baseline the
    baseline's estimate and the difference ``campaign - baseline`` with its interval.
    ``failures``: this group's failed conditions (empty when it passes or is not checked)."""

    group: str
    checked: bool
    estimate: float | None
    lower: float | None
    upper: float | None
    n_human: int
    n_paired: int
    size: int
    notes: tuple[str, ...] = ()
    in_baseline: bool = False
    baseline_estimate: float | None = None
    baseline_lower: float | None = None
    baseline_upper: float | None = None
    difference: float | None = None
    difference_lower: float | None = None
    difference_upper: float | None = None
    drop_p: float | None = None
    drop_p_adjusted: float | None = None
    # Both adjustments of the drop's p-value over the checked groups, side by side
    # (``drop_p_adjusted`` is the one the gate decides with).
    drop_p_holm: float | None = None
    drop_p_bonferroni: float | None = None
    failures: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "checked": self.checked,
            "ppi_mean": self.estimate,
            "ppi_lower": self.lower,
            "ppi_upper": self.upper,
            "n_human": self.n_human,
            "n_paired": self.n_paired,
            "size": self.size,
            "notes": list(self.notes),
            "in_baseline": self.in_baseline,
            "baseline_ppi_mean": self.baseline_estimate,
            "baseline_ppi_lower": self.baseline_lower,
            "baseline_ppi_upper": self.baseline_upper,
            "difference": self.difference,
            "difference_lower": self.difference_lower,
            "difference_upper": self.difference_upper,
            "drop_p": self.drop_p,
            "drop_p_adjusted": self.drop_p_adjusted,
            "drop_p_holm": self.drop_p_holm,
            "drop_p_bonferroni": self.drop_p_bonferroni,
            "failures": list(self.failures),
        }


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict: ``passed``, ``reason`` (one line: the first failure, or what passed),
    every failure in order, and the ``figures`` of every group read (themes by name, then
    overall; ``checked`` says which ones the gate checked)."""

    passed: bool
    reason: str
    failures: tuple[str, ...]
    figures: tuple[GroupFigures, ...]
    campaign: str
    criterion: str
    judge: str
    method: str
    alpha: float
    min_lower: float
    source: Provenance
    adjustment: str = paired.HOLM
    by_question: bool = False
    baseline: str | None = None
    baseline_source: Provenance | None = None
    baseline_judge: str | None = None
    # With the drift option: the judge's flagged drifts (``drift_as_dict``); None when not asked.
    judge_drift: tuple[dict[str, Any], ...] | None = None

    @property
    def line(self) -> str:
        """``PASS: ...`` or ``FAIL: <reason>``."""
        return f"{'PASS' if self.passed else 'FAIL'}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data (missing numbers are None)."""
        return {
            "passed": self.passed,
            "reason": self.reason,
            "line": self.line,
            "failures": list(self.failures),
            "campaign": self.campaign,
            "criterion": self.criterion,
            "judge": self.judge,
            "method": self.method,
            "alpha": self.alpha,
            "min_lower": self.min_lower,
            "adjustment": self.adjustment,
            "compared_by": ("question" if self.by_question else "independent samples")
            if self.baseline
            else None,
            "estimates": {"campaign": self.campaign, "judge": self.judge, **self.source.as_data()},
            "baseline": self.baseline,
            "baseline_estimates": (
                {"campaign": self.baseline, "judge": self.baseline_judge, **self.baseline_source.as_data()}
                if self.baseline_source
                else None
            ),
            "groups": [figures.as_dict() for figures in self.figures],
            "judge_drift": None if self.judge_drift is None else list(self.judge_drift),
        }


def drift_as_dict(drift: judge_alignment.Drift) -> dict[str, Any]:
    """A flagged drift as the gate's JSON gives it."""
    return {
        "kind": drift.kind,
        "judge": drift.judge,
        "before": drift.before,
        "after": drift.after,
        "change": finite(drift.change.mean),
        "change_lower": finite(drift.change.lo),
        "change_upper": finite(drift.change.hi),
        "n": drift.n,
    }


def drift_failure(drift: judge_alignment.Drift) -> str:
    """One line: which judge drifted, between what, by how much."""
    if drift.kind == judge_alignment.PROMPT:
        between = f"prompt version {drift.before} -> {drift.judge}"
    elif drift.kind == judge_alignment.HALF:
        between = "first half -> second half of its judged units"
    else:
        between = f"{drift.before} -> {drift.after}"
    change = drift.change
    return (
        f"judge {drift.judge} drifted: agreement with the human labels {between}: "
        f"{change.mean:+.3f} [{change.lo:+.3f}, {change.hi:+.3f}]"
    )


def judge_drifts(*, criterion: Criterion, judge: Judge, alpha: float) -> list[judge_alignment.Drift]:
    """The flagged drifts of ``judge`` on ``criterion``: between its periods, and from the
    previous prompt version of its model to it."""
    return [
        drift
        for drift in judge_alignment.drifted(criterion=criterion, alpha=alpha)
        if drift.judge == judge.name
    ]


def _baseline_request(
    *, criterion: Criterion, name: str | None, judge: Judge, method: str, alpha: float
) -> read.ReportRequest:
    """The baseline's report request: its judge the one named, else the baseline's candidate of
    the same name as the gate's judge, else its default (``judge_choice``)."""
    if not name:
        judges = judge_choice.candidates(criterion=criterion)
        name = judge.name if any(other.name == judge.name for other in judges) else ""
    return read.report_request(criterion=criterion, judge=name, method=method, alpha=alpha)


def _bound_text(value: float, *, threshold: float) -> str:
    """``value`` with three decimals, more when rounding would hide which side of ``threshold``
    it lies on (a lower bound of 0.8497 is not "0.850 < 0.85")."""
    below = value < threshold
    for places in range(3, 10):
        text = f"{value:.{places}f}"
        if (float(text) < threshold) == below:
            return text
    return repr(value)


def _group_name(group: str) -> str:
    # Themes come from imported files: a line break in one must not split the one-line reason.
    if group == OVERALL:
        return "overall"
    return f"theme {group if group.isprintable() else repr(group)}"


def decide(
    *,
    report: Report,
    baseline: Report | None,
    checked: set[str],
    min_lower: float,
    baseline_name: str,
    differences: dict[str, Drop] | None = None,
    alpha: float = 0.05,
    adjustment: str = paired.HOLM,
) -> tuple[list[GroupFigures], tuple[str, ...]]:
    """The gate's figures and failures on the reports it read (no database): every group of
    ``report`` (themes, then overall), those in ``checked`` checked against ``min_lower`` and,
    with a ``baseline`` report, against a drop: ``differences`` (by group, :func:`drops`; the
    two reports' as independent samples when not given), whose one-sided p-values are adjusted
    (``adjustment``) over the checked groups compared and a drop where the adjusted one is below
    ``alpha``. Failures: lower bounds first, then drops."""
    if baseline is not None and differences is None:
        differences = drops(report=report, baseline=baseline, versions=None)
    differences = differences or {}
    bases = {group.theme: group for group in baseline.themes} if baseline is not None else {}
    if baseline is not None:
        bases[OVERALL] = baseline.overall
    order = [group.theme for group in [*report.themes, report.overall] if group.theme in checked]
    compared = {group: differences[group] for group in order if group in differences}
    by_method = {
        method: adjusted_drops(differences=compared, adjustment=method) for method in paired.ADJUSTMENTS
    }
    adjusted = by_method[adjustment]
    low: list[str] = []
    drop_failures: list[str] = []
    figures: list[GroupFigures] = []
    for group in [*report.themes, report.overall]:
        is_checked = group.theme in checked
        ppi = group.ppi
        lower, upper = finite(ppi.shown_lo), finite(ppi.shown_hi)
        failures: list[str] = []
        if is_checked:
            name = _group_name(group.theme)
            if math.isnan(ppi.mean):
                failures.append(f"{name}: no PPI++ estimate ({group.n_paired} paired units)")
            elif lower is None:
                failures.append(f"{name}: no PPI++ lower bound ({group.n_paired} paired units)")
            elif lower < min_lower:
                failures.append(
                    f"{name}: PPI++ lower bound {_bound_text(lower, threshold=min_lower)} < {min_lower:.12g}"
                )
            low.extend(failures)
        base = bases.get(group.theme)
        diff = differences.get(group.theme)
        p_adjusted = adjusted.get(group.theme, math.nan)
        if is_checked and diff is not None and is_drop(diff, p_adjusted=p_adjusted, alpha=alpha):
            drop = (
                f"{_group_name(group.theme)}: significant drop against {baseline_name}: "
                f"{diff.estimate:+.3f} [{diff.lo:+.3f}, {diff.hi:+.3f}], "
                f"{adjustment}-adjusted one-sided p {p_adjusted:.3g} < {alpha:.12g}"
            )
            failures.append(drop)
            drop_failures.append(drop)
        figures.append(
            GroupFigures(
                group=group.theme,
                checked=is_checked,
                estimate=finite(ppi.shown_mean),
                lower=lower,
                upper=upper,
                n_human=group.n_human,
                n_paired=group.n_paired,
                size=group.size,
                notes=tuple(group.notes),
                in_baseline=base is not None,
                baseline_estimate=finite(base.ppi.shown_mean) if base is not None else None,
                baseline_lower=finite(base.ppi.shown_lo) if base is not None else None,
                baseline_upper=finite(base.ppi.shown_hi) if base is not None else None,
                difference=diff.estimate if diff is not None else None,
                difference_lower=diff.lo if diff is not None else None,
                difference_upper=diff.hi if diff is not None else None,
                drop_p=finite(diff.p_value) if diff is not None else None,
                drop_p_adjusted=finite(p_adjusted) if diff is not None else None,
                drop_p_holm=finite(by_method[paired.HOLM].get(group.theme, math.nan))
                if diff is not None
                else None,
                drop_p_bonferroni=(
                    finite(by_method[paired.BONFERRONI].get(group.theme, math.nan))
                    if diff is not None
                    else None
                ),
                failures=tuple(failures),
            )
        )

    return figures, tuple(low + drop_failures)


def evaluate_gate(
    *,
    campaign: Campaign,
    criterion: Criterion,
    min_lower: float,
    themes: list[str] | None = None,
    baseline: Campaign | None = None,
    judge: str | None = None,
    baseline_judge: str | None = None,
    alpha: float = 0.05,
    method: str = "robust",
    adjustment: str = paired.HOLM,
    refuse_judge_drift: bool = False,
) -> GateResult:
    """Check ``campaign``'s PPI++ estimates of ``criterion`` against ``min_lower`` and, with a
    ``baseline`` campaign (its criterion of the same name), against a significant drop (p-values
    adjusted over the checked groups by ``adjustment``, ``paired.ADJUSTMENTS``); see the
    module's docstring for the groups checked, the conditions and where the numbers come from.

    ``judge``: a judge name, or None for the report's default (the only judge);
    ``baseline_judge``: the baseline's, by default its judge of the same name as ``judge``, else
    its only judge. ``refuse_judge_drift``: fail when the judge drifted (the module's docstring).
    Raises EstimateError (a FieldError) on ``min_lower``, ``method``, ``alpha``,
    ``judge``, ``baseline``, ``baseline_judge`` or ``theme`` when one is invalid or unknown, so
    that nothing is decided on a request that cannot be read.
    """
    if not (isinstance(min_lower, (int, float)) and 0 <= min_lower <= 1):
        raise EstimateError(f"must be a rate between 0 and 1, got {min_lower!r}", field="min_lower")
    if criterion.campaign_id != campaign.pk:
        raise EstimateError(f"{criterion.name!r} is not a criterion of {campaign.name!r}", field="criterion")
    if is_categorical(criterion):
        raise EstimateError(
            f"{criterion.name!r} has categories: the gate checks one rate per theme", field="criterion"
        )
    if adjustment not in paired.ADJUSTMENTS:
        raise EstimateError(
            f"must be one of {', '.join(paired.ADJUSTMENTS)}, got {adjustment!r}", field="adjustment"
        )
    request = read.report_request(criterion=criterion, judge=judge or "", method=method, alpha=alpha)
    baseline_request = None
    if baseline is not None:
        if baseline.pk == campaign.pk:
            raise EstimateError(f"{baseline.name!r} is the campaign itself", field="baseline")
        baseline_criterion = find_criterion(campaign=baseline, name=criterion.name, field="baseline")
        try:
            baseline_request = _baseline_request(
                criterion=baseline_criterion,
                name=baseline_judge,
                judge=request.judge,
                method=method,
                alpha=alpha,
            )
        except EstimateError as exc:
            raise EstimateError(exc.message, field="baseline_judge") from None

    shown = read.read_report(request, recompute_stale=True)
    report, source = shown.binary, shown.provenance
    groups: list[GroupEstimate] = [*report.themes, report.overall]
    known = [group.theme for group in report.themes]
    wanted = list(dict.fromkeys(themes)) if themes else None
    if wanted is not None:
        unknown = [name for name in wanted if name != OVERALL and name not in known]
        if unknown:
            raise EstimateError(
                f"{', '.join(repr(name) for name in unknown)} "
                f"{'is not a theme' if len(unknown) == 1 else 'are not themes'} of {campaign.name!r} "
                f"(themes: {', '.join(known) or 'none'}, and {OVERALL})",
                field="theme",
                missing=True,
            )
    checked = set(wanted) if wanted is not None else {group.theme for group in groups}

    baseline_source = None
    baseline_report = None
    differences = None
    if baseline_request is not None and baseline is not None:
        baseline_shown = read.read_report(baseline_request, recompute_stale=True)
        baseline_source = baseline_shown.provenance
        baseline_report = baseline_shown.binary
        versions = None
        if comparison.shares_questions(left=baseline, right=campaign):
            versions = comparison.compare_versions(
                versions=[
                    comparison.Version(
                        campaign=baseline, criterion=baseline_request.criterion, judge=baseline_request.judge
                    ),
                    comparison.Version(campaign=campaign, criterion=criterion, judge=request.judge),
                ],
                alpha=alpha,
                method=method,
            )
        differences = drops(report=report, baseline=baseline_report, versions=versions)
    figures, failures_all = decide(
        report=report,
        baseline=baseline_report,
        checked=checked,
        min_lower=min_lower,
        baseline_name=baseline.name if baseline is not None else "",
        differences=differences,
        alpha=alpha,
        adjustment=adjustment,
    )
    drifts = None
    if refuse_judge_drift:
        drifts = judge_drifts(criterion=criterion, judge=request.judge, alpha=alpha)
        failures_all = (*failures_all, *(drift_failure(drift) for drift in drifts))
    if failures_all:
        reason = failures_all[0]
        if len(failures_all) > 1:
            reason += f" (and {len(failures_all) - 1} more)"
    else:
        reason = _passed_reason(figures=figures, min_lower=min_lower, baseline=baseline)
        if drifts is not None:
            reason += f"; judge {request.judge.name} did not drift"
    return GateResult(
        passed=not failures_all,
        reason=reason,
        failures=failures_all,
        figures=tuple(figures),
        campaign=campaign.name,
        criterion=criterion.name,
        judge=request.judge.name,
        method=method,
        alpha=alpha,
        min_lower=float(min_lower),
        adjustment=adjustment,
        by_question=differences is not None
        and bool(differences)
        and all(d.by_question for d in differences.values()),
        source=source,
        baseline=baseline.name if baseline is not None else None,
        baseline_source=baseline_source,
        baseline_judge=baseline_request.judge.name if baseline_request is not None else None,
        judge_drift=None if drifts is None else tuple(drift_as_dict(drift) for drift in drifts),
    )


def _passed_reason(*, figures: list[GroupFigures], min_lower: float, baseline: Campaign | None) -> str:
    checked = [row for row in figures if row.checked]
    lowest = min(checked, key=lambda row: row.lower if row.lower is not None else math.inf)
    count = f"{len(checked)} group{'s' if len(checked) != 1 else ''}"
    bound = _bound_text(lowest.lower or 0.0, threshold=min_lower)
    text = (
        f"{count} checked, lowest PPI++ lower bound {bound} ({_group_name(lowest.group)}) >= {min_lower:.12g}"
    )
    if baseline is not None:
        compared = sum(1 for row in checked if row.difference is not None)
        text += f"; no significant drop against {baseline.name} ({compared} compared)"
    return text


def _cell(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def text_lines(*, result: GateResult) -> list[str]:
    """The result as the command prints it: what was read and from where, one row per group
    (rates with three decimals, ``-`` for a missing number, ``*`` before a checked group), and
    last the ``PASS``/``FAIL`` line."""
    level = 100 * (1 - result.alpha)
    lines = [
        f"gate: {result.campaign} / {result.criterion} / judge {result.judge}: method {result.method}, "
        f"{level:g}% intervals, PPI++ lower bound >= {result.min_lower:.12g}",
        f"estimates: {result.source.describe()}",
    ]
    if result.baseline_source is not None:
        lines.append(
            f"baseline: {result.baseline} / judge {result.baseline_judge}: "
            f"{result.baseline_source.describe()}"
        )
    width = max([len("group"), *(len(row.group) for row in result.figures)]) + 2
    header = f"{'group':<{width}} {'PPI++':>7} {'lower':>7} {'upper':>7} {'labels':>7} {'paired':>7}"
    if result.baseline is not None:
        header += f" {'baseline':>9} {'diff':>7} {'diff_lo':>7} {'diff_hi':>7}"
    lines.append(header)
    for row in result.figures:
        mark = "* " if row.checked else "  "
        line = (
            f"{mark + row.group:<{width}} {_cell(row.estimate):>7} {_cell(row.lower):>7} "
            f"{_cell(row.upper):>7} {row.n_human:>7} {row.n_paired:>7}"
        )
        if result.baseline is not None:
            line += (
                f" {_cell(row.baseline_estimate):>9} {_cell(row.difference, signed=True):>7} "
                f"{_cell(row.difference_lower, signed=True):>7} {_cell(row.difference_upper, signed=True):>7}"
            )
        lines.append(line)
    lines.append("* checked; diff = campaign - baseline" if result.baseline is not None else "* checked")
    lines.append(result.line)
    return lines
