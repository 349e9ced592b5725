"""A report as JSON: what ``manage.py report --format json``, the API, the snapshots and the
ARES export read (NaN and infinities become None; intervals as shown, inside [0, 1]). Its
arguments are ``evaluation.estimates``' GroupEstimate and Report, read by their attributes (that
module imports this one)."""

from __future__ import annotations

import math
from typing import Any

from inference import intervals
from inference.shrinkage import PPI_SHRUNK


def _num(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _bounds(interval: intervals.Interval) -> list[float | None]:
    """An interval's bounds as shown: in [0, 1] (``Interval.shown_lo`` / ``shown_hi``)."""
    return [_num(interval.shown_lo), _num(interval.shown_hi)]


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
        "human_mean": _num(group.human.mean),
        "human_ci": _bounds(group.human),
        "judge_mean": _num(group.judge.mean),
        "judge_ci": _bounds(group.judge),
        "ppi_mean": _num(group.ppi.mean),
        "ppi_ci": _bounds(group.ppi),
        "lambda": _num(group.ppi.lam),
        "observed_agreement": _num(agreement.observed) if agreement else None,
        "chance_agreement": _num(agreement.chance) if agreement else None,
        "kappa": _num(agreement.kappa) if agreement else None,
        "effective_n": _num(group.effective_n),
        "method": group.method,
        "difficulty": group.difficulty,
        "size": group.size,
        "n_paired": group.n_paired,
        "human_method": group.human.method,
        "judge_method": group.judge.method,
        "ppi_method": group.ppi.method,
        "ppi_df": _num(group.ppi.df),
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
            data[f"{name}_ci_raw"] = [_num(interval.lo), _num(interval.hi)]
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
    }
    if report.by_difficulty is not None:
        data["by_difficulty"] = [group_as_json(group=group) for group in report.by_difficulty]
    return data


def with_shrinkage(*, data: dict[str, Any], small: Any) -> dict[str, Any]:
    """``data`` (:func:`report_as_json`'s) with the report's shrinkage toward the judge
    (``evaluation.small_themes.SmallThemes``): per theme ``ppi_shrunk_mean``, ``ppi_shrunk_ci``
    (inside [0, 1]), ``ppi_shrunk_weight`` (the weight on the theme's own PPI++ estimate),
    ``ppi_shrunk_se`` (the PPI++ standard error it used) and ``ppi_shrunk_note`` (why a theme
    was left as it is, else empty); under ``shrinkage``, its method, alpha, tau2, the guarantee
    (on average over the themes), the judge's overall agreement and whether it is below the
    bench's judges whose intervals held (``weak_judge``), and the bench's coverage figures. The
    PPI++ keys are unchanged."""
    for theme in data["themes"]:
        row = small.of(theme["theme"])
        shrunk = row.shrunk if row is not None else None
        theme["ppi_shrunk_mean"] = _num(shrunk.mean) if shrunk is not None else None
        theme["ppi_shrunk_ci"] = _bounds(shrunk) if shrunk is not None else [None, None]
        theme["ppi_shrunk_weight"] = _num(row.weight) if row is not None else None
        theme["ppi_shrunk_se"] = _num(row.standard_error) if row is not None else None
        theme["ppi_shrunk_note"] = str(row.reason) if row is not None else ""
    bench = small.bench
    data["shrinkage"] = {
        "method": PPI_SHRUNK,
        "alpha": small.alpha,
        "tau2": _num(small.tau2),
        "guarantee": "on average over the themes, not for each theme",
        "overall_agreement": _num(small.agreement),
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
