"""A report as JSON: what ``manage.py report --format json``, the API, the snapshots and the
ARES export read (NaN and infinities become None; intervals as shown, inside [0, 1]). Its
arguments are ``evaluation.estimates.report``' GroupEstimate and Report, read by their attributes (that
module imports this one)."""

from __future__ import annotations

import math
from typing import Any

from evaluation.estimates.params import ANSWER
from evaluation.estimates.report import GroupEstimate, Report
from inference import intervals
from inference.estimators.shrinkage import PPI_SHRUNK
from inference.numbers import finite
from inference.reliability.agreement import RESAMPLES as KAPPA_RESAMPLES
from inference.reliability.agreement import Agreement, KappaInterval

# Kappa's bootstrap interval is at 95%, whatever the report's alpha (as alpha's on the annotators' page).
KAPPA_LEVEL = 0.95


def _bounds(interval: intervals.Interval) -> list[float | None]:
    """An interval's bounds as shown: in [0, 1] (``Interval.shown_lo`` / ``shown_hi``)."""
    return [finite(interval.shown_lo), finite(interval.shown_hi)]


def group_as_json(*, group: Any) -> dict[str, Any]:
    """One group as a JSON-ready dict (NaN and infinities become None). Intervals are given as
    shown, inside [0, 1]; one whose computed bounds left [0, 1] (the study method keeps ppi_py's)
    also has them under ``<name>_ci_raw``. ``ppi_se`` is the PPI++ standard error when the
    interval is not mean -/+ q se (robust, widened to stay in [0, 1])."""
    agreement = group.agreement
    data: dict[str, Any] = {
        "theme": group.theme,
        "n_human": group.n_human,
        "n_judge": group.n_judge,
        "human_mean": finite(group.human.shown_mean),
        "human_ci": _bounds(group.human),
        "judge_mean": finite(group.judge.shown_mean),
        "judge_ci": _bounds(group.judge),
        "ppi_mean": finite(group.ppi.shown_mean),
        "ppi_ci": _bounds(group.ppi),
        "lambda": finite(group.ppi.lam),
        "observed_agreement": finite(agreement.observed) if agreement else None,
        "chance_agreement": finite(agreement.chance) if agreement else None,
        "kappa": finite(agreement.kappa) if agreement else None,
        "kappa_ci": (
            [agreement.kappa_interval.lo, agreement.kappa_interval.hi]
            if agreement and agreement.kappa_interval
            else None
        ),
        # How the interval was drawn: resamples, and those without a kappa (left out).
        "kappa_bootstrap": (
            {
                "level": agreement.kappa_interval.level,
                "resamples": agreement.kappa_interval.resamples,
                "undefined": agreement.kappa_interval.undefined,
            }
            if agreement and agreement.kappa_interval
            else None
        ),
        "effective_n": finite(group.effective_n),
        "method": group.method,
        "difficulty": group.difficulty,
        "size": group.size,
        "n_paired": group.n_paired,
        "human_method": group.human.method,
        "judge_method": group.judge.method,
        "ppi_method": group.ppi.method,
        "ppi_df": finite(group.ppi.df),
        "weighted": group.weighted,
        "confusion": dict(agreement.confusion) if agreement else None,
        "n_missing_judgments": len(group.missing_judgments),
        "missing_judgments": list(group.missing_judgments),
        "notes": list(group.notes),
    }
    if group.difficulty is None:
        del data["difficulty"]
    for name, interval in (("human", group.human), ("judge", group.judge), ("ppi", group.ppi)):
        if interval.clipped:
            data[f"{name}_ci_raw"] = [finite(interval.lo), finite(interval.hi)]
            if interval.mean != interval.shown_mean:
                data[f"{name}_mean_raw"] = finite(interval.mean)
    if group.ppi.se is not None and math.isfinite(group.ppi.se):
        data["ppi_se"] = group.ppi.se
    return data


def report_as_json(*, report: Any) -> dict[str, Any]:
    """The report as a JSON-ready dict: campaign, criterion, judge, alpha, one object per theme
    under ``themes`` and the stratified combination under ``overall`` (NaN becomes None)."""
    data: dict[str, Any] = {
        "campaign": report.campaign,
        "criterion": report.criterion,
        "judge": report.judge,
        "alpha": report.alpha,
        "method": report.method,
        "level": report.level,
        "sample_id": report.sample_id,
        "themes": [group_as_json(group=group) for group in report.themes],
        "overall": group_as_json(group=report.overall),
        "versions": report.versions,
        "clusters": report.clusters,
    }
    if report.calibration is not None:
        data["calibration"] = report.calibration
    if report.by_difficulty is not None:
        data["by_difficulty"] = [group_as_json(group=group) for group in report.by_difficulty]
    return data


def confusion_as_json(*, confusion: Any) -> dict[str, Any]:
    return {
        "theme": confusion.theme,
        "values": confusion.values,
        "matrix": confusion.matrix,
        "n": confusion.n,
        "observed_agreement": finite(confusion.observed),
        "chance_agreement": finite(confusion.chance),
        "kappa": finite(confusion.kappa),
    }


def categorical_report_as_json(*, report: Any) -> dict[str, Any]:
    """The report as a JSON-ready dict: the criterion's categories and groups, under
    ``estimates`` one entry per category then per group (``name``, ``title``, ``kind``,
    ``values``, and its ``themes`` and ``overall`` as a binary report's), and under
    ``confusion`` the human x judge matrices per theme and overall (rows: human)."""
    entries = []
    for item in report.estimates:
        data = report_as_json(report=item.report)
        entry: dict[str, Any] = {
            "name": item.indicator.name,
            "title": item.indicator.title,
            "kind": item.indicator.kind,
            "values": sorted(item.indicator.values),
            "themes": data["themes"],
            "overall": data["overall"],
        }
        if "by_difficulty" in data:
            entry["by_difficulty"] = data["by_difficulty"]
        entries.append(entry)
    return {
        "campaign": report.campaign,
        "criterion": report.criterion,
        "kind": "categorical",
        "judge": report.judge,
        "alpha": report.alpha,
        "method": report.method,
        "level": report.level,
        "sample_id": report.sample_id,
        "categories": [
            {"value": c.value, "key": c.key, "name": c.name, "title": c.title} for c in report.categories
        ],
        "groups": report.groups,
        "estimates": entries,
        "confusion": [confusion_as_json(confusion=confusion) for confusion in report.confusion],
        "versions": report.versions,
    }


def with_shrinkage(*, data: dict[str, Any], small: Any) -> dict[str, Any]:
    """``data`` (:func:`report_as_json`'s) with the report's shrinkage toward the judge
    (``evaluation.estimates.small_themes.SmallThemes``): per theme ``ppi_shrunk_mean``, ``ppi_shrunk_ci``
    (inside [0, 1]), ``ppi_shrunk_weight`` (the weight on the theme's own PPI++ estimate),
    ``ppi_shrunk_se`` (the PPI++ standard error it used) and ``ppi_shrunk_note`` (why a theme
    was left as it is, else empty); under ``shrinkage``, its method, alpha, tau2, the guarantee
    (on average over the themes), the judge's overall agreement and whether it is below the
    bench's judges whose intervals held (``weak_judge``), and the bench's coverage figures. The
    PPI++ keys are unchanged."""
    for theme in data["themes"]:
        row = small.of(theme["theme"])
        shrunk = row.shrunk if row is not None else None
        theme["ppi_shrunk_mean"] = finite(shrunk.mean) if shrunk is not None else None
        theme["ppi_shrunk_ci"] = _bounds(shrunk) if shrunk is not None else [None, None]
        theme["ppi_shrunk_weight"] = finite(row.weight) if row is not None else None
        theme["ppi_shrunk_se"] = finite(row.standard_error) if row is not None else None
        theme["ppi_shrunk_note"] = str(row.reason) if row is not None else ""
    bench = small.bench
    data["shrinkage"] = {
        "method": PPI_SHRUNK,
        "alpha": small.alpha,
        "tau2": finite(small.tau2),
        "guarantee": "on average over the themes, not for each theme",
        "overall_agreement": finite(small.agreement),
        "weak_judge": small.weak_judge,
        "bench_coverage": {
            "designs": bench.designs,
            "replications": bench.replications,
            "average_lowest": bench.average_lowest,
            "average_highest": bench.average_highest,
            "worst_theme": bench.worst_theme,
            "weak_agreement": bench.weak_agreement,
            "agreement_floor": bench.agreement_floor,
            "lowest_above_floor": bench.lowest_above_floor,
        },
    }
    return data


def _interval_from_json(
    *,
    mean: Any,
    ci: Any,
    method: str,
    alpha: float,
    n: int,
    N: int = 0,
    lam: Any = None,
    df: Any = None,
    raw: Any = None,
    raw_mean: Any = None,
    se: Any = None,
) -> intervals.Interval:
    # JSON keeps NaN and infinities as None: a missing mean is NaN, a missing bound beside a mean
    # is the unbounded side of an interval (a single label, one answer under the robust method).
    # ``raw``: the computed bounds of an interval shown clipped to [0, 1] (``<name>_ci_raw``);
    # snapshots stored before it may hold bounds outside [0, 1] in ``ci``, which every page and
    # download clips (``Interval.shown_lo`` / ``shown_hi``).
    # ``raw_mean``: the computed estimate when it was shown clipped (``<name>_mean_raw``).
    # Snapshots stored before an interval could not be inverted may hold raw bounds that do not
    # surround their estimate: the shown ones then, widened to hold it.
    if mean is None:
        return intervals.Interval(
            mean=math.nan, lo=math.nan, hi=math.nan, method=method, alpha=alpha, n=n, N=N, lam=lam, df=df
        )
    estimate = float(raw_mean if raw_mean is not None else mean)
    lo, hi = (_bound(value, side) for value, side in zip(raw or ci or (None, None), (-1, 1), strict=True))
    if not lo <= estimate <= hi:
        lo, hi = (_bound(value, side) for value, side in zip(ci or (None, None), (-1, 1), strict=True))
        lo, hi = intervals.keep_around(estimate=estimate, lo=lo, hi=hi, bounds=(-math.inf, math.inf))
    return intervals.Interval(
        mean=estimate,
        lo=lo,
        hi=hi,
        method=method,
        alpha=alpha,
        n=n,
        N=N,
        lam=lam,
        df=df,
        se=None if se is None else float(se),
    )


def _bound(value: Any, side: int) -> float:
    """A stored bound: None is the unbounded side (-inf below, +inf above)."""
    return side * math.inf if value is None else float(value)


def group_from_json(*, data: dict[str, Any], alpha: float) -> GroupEstimate:
    """A group back from :func:`~evaluation.estimates.report.group_as_json` (a stored snapshot's):
    the same numbers, with NaN for a missing estimate and infinite bounds for an unbounded
    interval. The per-estimator notes come back merged, as ``notes``."""
    n_human, n_paired, n_judge = data["n_human"], data.get("n_paired", 0), data["n_judge"]
    method = data.get("method", "")
    confusion = data.get("confusion")
    agreement = None
    if confusion is not None:
        kappa = data.get("kappa")
        kappa_ci = data.get("kappa_ci")  # absent from snapshots stored before it was kept
        drawn = data.get("kappa_bootstrap") or {}
        agreement = Agreement(
            observed=float(data["observed_agreement"]),
            chance=float(data["chance_agreement"]),
            kappa=math.nan if kappa is None else float(kappa),
            confusion=dict(confusion),
            n=n_paired,
            kappa_interval=(
                KappaInterval(
                    lo=float(kappa_ci[0]),
                    hi=float(kappa_ci[1]),
                    level=float(drawn.get("level", KAPPA_LEVEL)),
                    resamples=int(drawn.get("resamples", KAPPA_RESAMPLES)),
                    undefined=int(drawn.get("undefined", 0)),
                )
                if kappa_ci
                else None
            ),
        )
    effective_n = data.get("effective_n")
    return GroupEstimate(
        theme=data["theme"],
        difficulty=data.get("difficulty"),
        method=method,
        size=data.get("size", 0),
        n_human=n_human,
        n_paired=n_paired,
        n_judge=n_judge,
        human=_interval_from_json(
            mean=data["human_mean"],
            ci=data["human_ci"],
            raw=data.get("human_ci_raw"),
            raw_mean=data.get("human_mean_raw"),
            method=data.get("human_method", ""),
            alpha=alpha,
            n=n_human,
        ),
        judge=_interval_from_json(
            mean=data["judge_mean"],
            ci=data["judge_ci"],
            raw=data.get("judge_ci_raw"),
            raw_mean=data.get("judge_mean_raw"),
            method=data.get("judge_method", ""),
            alpha=alpha,
            n=n_judge,
        ),
        ppi=_interval_from_json(
            mean=data["ppi_mean"],
            ci=data["ppi_ci"],
            raw=data.get("ppi_ci_raw"),
            raw_mean=data.get("ppi_mean_raw"),
            se=data.get("ppi_se"),
            method=data.get("ppi_method", ""),
            alpha=alpha,
            n=n_paired,
            N=max(0, n_judge - n_paired),
            lam=data.get("lambda"),
            df=data.get("ppi_df"),
        ),
        agreement=agreement,
        effective_n=math.nan if effective_n is None else float(effective_n),
        missing_judgments=list(data.get("missing_judgments", [])),
        weighted=bool(data.get("weighted", False)),
        notes=list(data.get("notes", [])),
    )


def report_from_json(*, data: dict[str, Any]) -> Report:
    """A report back from :func:`~evaluation.estimates.report.report_as_json`: what a stored snapshot
    holds, as the pages and the downloads read it.
    ``report_as_json(report=report_from_json(data=d)) == d``."""
    alpha = float(data["alpha"])
    by_difficulty = data.get("by_difficulty")
    return Report(
        campaign=data["campaign"],
        criterion=data["criterion"],
        level=data.get("level", ""),
        judge=data["judge"],
        alpha=alpha,
        method=data["method"],
        sample_id=data.get("sample_id"),
        themes=[group_from_json(data=group, alpha=alpha) for group in data.get("themes", [])],
        overall=group_from_json(data=data["overall"], alpha=alpha),
        by_difficulty=(
            [group_from_json(data=group, alpha=alpha) for group in by_difficulty]
            if by_difficulty is not None
            else None
        ),
        versions=data.get("versions", {}),
        calibration=data.get("calibration"),
        clusters=data.get("clusters", ANSWER),
    )
