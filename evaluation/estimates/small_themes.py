"""Small themes: a report's per-theme PPI++ estimates shrunk toward the judge (an option).

:func:`shrink_report` reads a :class:`~evaluation.estimates.report.Report` (computed now or read from a
snapshot: no query either way) and returns, per theme, the shrunk estimate of
:func:`inference.estimators.shrinkage.shrink_to_judge` on the report's own arrays: each theme's PPI++
estimate, its standard error (:func:`inference.intervals.standard_error`, the one the interval
was built with) and the judge's rate over every unit of the theme (the report's judge-only
estimate). It never replaces the PPI++ estimate: pages and files show both.

The guarantee of the shrunk intervals is on average over the themes, not per theme (see
``inference.estimators.shrinkage``); the figures measured by ``bench/efficiency_bench.py`` are here, so
the page and the files quote the same ones as docs/statistics.md. With the judge's 0/1 labels
the shrinkage leans on the judge's bias being alike across themes; with a judge agreeing with
the humans on 70% of units the bench's intervals covered only 91.5% of the themes on average,
so a report whose judge agrees less than the bench's 85% says so (``SmallThemes.weak_judge``).

Refused (``EstimateError`` on field ``shrinkage``): a criterion with categories (each
category's shrunk rates would no longer sum to 1 within a theme), a method whose per-theme
estimate is not PPI++, and fewer than two themes with a PPI++ estimate and a positive, finite
standard error. Themes without one stay as they are, with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from evaluation.errors import EstimateError
from evaluation.estimates.params import METHODS
from evaluation.estimates.report import GroupEstimate, Report
from inference import intervals
from inference.estimators.ppi import (
    PPI,
    PPI_CONFIDENCE,
    PPI_ROBUST_CROSSFIT,
    PPI_ROBUST_FIXED,
    PPI_ROBUST_POOLED,
)
from inference.estimators.shrinkage import PPI_SHRUNK, shrink_to_judge

FIELD = "shrinkage"
# The report methods whose per-theme estimate is PPI++ (ppi_py's, or the robust one); the
# intervals below are the PPI++ ones those methods give a theme.
SHRINKABLE_METHODS = ("robust", "study")
PPI_INTERVALS = frozenset(
    {
        PPI,
        PPI_ROBUST_CROSSFIT,
        PPI_ROBUST_POOLED,
        PPI_ROBUST_FIXED,
        PPI_CONFIDENCE,
    }
)
MIN_THEMES = 2


@dataclass(frozen=True)
class BenchCoverage:
    """Coverage of the 95% shrunk intervals measured by ``python bench/efficiency_bench.py
    --themes`` (method ``shrinkage K-means``: today's robust PPI++ on a K-means sample shrunk
    toward the judge's rate, as this module does; seed 20261124): over the themes, in the
    lowest and the highest design, in the worst single theme of any design; the agreement of
    the judge of the lowest design, and the lowest average where the judge agreed at least
    ``agreement_floor``."""

    designs: int
    replications: int
    average_lowest: float
    average_highest: float
    worst_theme: float
    weak_agreement: float
    agreement_floor: float
    lowest_above_floor: float


BENCH = BenchCoverage(
    designs=7,
    replications=1000,
    average_lowest=0.915,
    average_highest=1.0,
    worst_theme=0.866,
    weak_agreement=0.70,
    agreement_floor=0.85,
    lowest_above_floor=0.990,
)

NO_ESTIMATE = _("no PPI++ estimate to shrink")
NO_STANDARD_ERROR = _("its PPI++ standard error is zero or unbounded: nothing to weigh")


@dataclass(frozen=True)
class ShrunkTheme:
    """One theme: ``shrunk`` (an interval of method ``ppi++-shrunk``, None when the theme is
    left as it is), ``weight`` on the theme's own PPI++ estimate (the rest goes to the judge's
    rate), the standard error and judge rate it was computed from, and ``reason`` why a theme
    was left out."""

    theme: str
    shrunk: intervals.Interval | None
    weight: float | None
    standard_error: float | None
    judge_mean: float | None
    reason: str | Promise = ""


@dataclass(frozen=True)
class SmallThemes:
    """The shrinkage of one report: ``tau2`` (the spread of the judge's bias across themes),
    ``alpha`` and one :class:`ShrunkTheme` per theme of the report, in its order."""

    alpha: float
    tau2: float
    themes: list[ShrunkTheme]
    # The judge's overall agreement with the final human labels (None: no paired unit).
    agreement: float | None = None
    bench: BenchCoverage = BENCH

    @property
    def weak_judge(self) -> bool:
        """The judge agrees with the humans less than the bench's judges whose shrunk intervals
        covered 95% of the themes on average: the page and the files say so."""
        return self.agreement is not None and self.agreement < self.bench.agreement_floor

    @property
    def tau(self) -> float:
        return math.sqrt(self.tau2)

    def of(self, theme: str) -> ShrunkTheme | None:
        return next((row for row in self.themes if row.theme == theme), None)

    @property
    def shrunk_count(self) -> int:
        return sum(1 for row in self.themes if row.shrunk is not None)


def check_shrinkage(*, method: str, categorical: bool) -> None:
    """Refuse (EstimateError on field ``shrinkage``) what shrinkage is never offered for: a
    criterion with categories, a method whose per-theme estimate is not PPI++. Reads nothing."""
    if categorical:
        raise EstimateError(
            _(
                "not offered for a criterion with categories: each category would be shrunk "
                "toward the judge by its own weight, and a theme's shrunk rates would no longer "
                "sum to one"
            ),
            field=FIELD,
        )
    if method not in SHRINKABLE_METHODS:
        raise EstimateError(
            refusal(
                _(
                    "offered only with a method whose per-theme estimate is PPI++ (%(methods)s), "
                    "not %(method)s: the shrinkage pulls a PPI++ estimate toward the judge by its "
                    "standard error"
                ),
                methods=", ".join(m for m in METHODS if m in SHRINKABLE_METHODS),
                method=repr(method),
            ),
            field=FIELD,
        )


def _inputs(group: GroupEstimate) -> tuple[float, float, float] | str | Promise:
    """The theme's PPI++ estimate, standard error and judge rate, or why it cannot be shrunk."""
    ppi = group.ppi
    if ppi.method not in PPI_INTERVALS or not math.isfinite(ppi.mean) or not math.isfinite(group.judge.mean):
        return NO_ESTIMATE
    se = intervals.standard_error(ppi)
    if not (math.isfinite(se) and se > 0):
        return NO_STANDARD_ERROR
    # The study method's PPI++ mean may leave [0, 1] (ppi_py does not clip); the shrunk centre
    # and its interval are kept inside, as the robust method's are.
    return min(1.0, max(0.0, ppi.mean)), se, group.judge.mean


def shrink_report(*, report: Report) -> SmallThemes:
    """Every theme of ``report`` shrunk toward the judge's rate (``shrink_to_judge`` at the
    report's alpha, over the themes that have a PPI++ estimate and a positive, finite standard
    error). EstimateError on field ``shrinkage`` for a method whose per-theme estimate is not
    PPI++, or when fewer than two themes qualify. No database access."""
    check_shrinkage(method=report.method, categorical=False)
    found = [(group, _inputs(group)) for group in report.themes]
    usable = [(group, values) for group, values in found if isinstance(values, tuple)]
    if len(usable) < MIN_THEMES:
        raise EstimateError(
            refusal(
                _(
                    "needs at least %(needed)s themes with a PPI++ estimate and a positive "
                    "standard error; this report has %(count)s"
                ),
                needed=MIN_THEMES,
                count=len(usable),
            ),
            field=FIELD,
            conflict=True,
        )
    shrunk = shrink_to_judge(
        estimates=[values[0] for _group, values in usable],
        standard_errors=[values[1] for _group, values in usable],
        judge_means=[values[2] for _group, values in usable],
        alpha=report.alpha,
    )
    by_theme = {group.theme: (values, s) for (group, values), s in zip(usable, shrunk, strict=True)}
    rows: list[ShrunkTheme] = []
    for group, values in found:
        if group.theme not in by_theme:
            rows.append(
                ShrunkTheme(
                    theme=group.theme,
                    shrunk=None,
                    weight=None,
                    standard_error=None,
                    judge_mean=None,
                    reason=values if not isinstance(values, tuple) else "",
                )
            )
            continue
        (_mean, se, judge_mean), s = by_theme[group.theme]
        rows.append(
            ShrunkTheme(
                theme=group.theme,
                shrunk=intervals.Interval(
                    mean=s.mean,
                    lo=s.lo,
                    hi=s.hi,
                    method=PPI_SHRUNK,
                    alpha=report.alpha,
                    n=group.ppi.n,
                    N=group.ppi.N,
                ),
                weight=s.weight,
                standard_error=se,
                judge_mean=judge_mean,
            )
        )
    agreement = report.overall.agreement
    return SmallThemes(
        alpha=report.alpha,
        tau2=shrunk[0].tau2,
        themes=rows,
        agreement=agreement.observed if agreement is not None and math.isfinite(agreement.observed) else None,
    )
