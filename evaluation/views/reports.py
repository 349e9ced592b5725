"""The estimates report of one criterion: human vs judge vs PPI++ per theme, agreement, planner.

Managers and analysts only: the page shows the judge's labels, which annotators, reviewers and
adjudicators must never see.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotation.access import get_campaign_for, may_refresh_estimates
from annotation.models import Campaign, Criterion, Role
from evaluation import estimators, planning, snapshots
from evaluation.charts import interval_chart
from evaluation.estimates import METHODS, GroupEstimate, Report, pick_default_judge
from evaluation.models import Judge

VIEWERS = [Role.MANAGER, Role.ANALYST]
DEFAULT_ALPHA = 0.05
DEFAULT_TARGET = 0.05
CURVE_AGREEMENTS = [0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99]
CURVE_SEED = 0
CURVE_REPS = 200


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _pct(value: float | None) -> str:
    return f"{value * 100:.1f}%" if _finite(value) else "—"


def _interval(interval: estimators.Interval) -> str:
    if not _finite(interval.mean):
        return "—"
    if math.isinf(interval.lo) or math.isinf(interval.hi):
        return "unbounded"
    return f"[{_pct(interval.lo)}, {_pct(interval.hi)}]"


def _halfwidth(interval: estimators.Interval) -> str:
    half = interval.halfwidth
    if not _finite(interval.mean) or math.isnan(half):
        return "—"
    return "∞" if math.isinf(half) else f"±{half * 100:.1f} pts"


def _number(value: float | None, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if _finite(value) else "—"


def _parse_float(
    raw: str | None, *, field: str, default: float, low: float, high: float, errors: list[str]
) -> float:
    if raw in (None, ""):
        return default
    try:
        value = float(raw)
    except ValueError:
        errors.append(f"{field}: {raw!r} is not a number")
        return default
    if not (low < value < high):
        errors.append(f"{field}: must be strictly between {low:g} and {high:g}, got {raw}")
        return default
    return value


@dataclass(frozen=True)
class ReportParams:
    """The GET parameters every report view reads, checked; ``errors`` name what was wrong."""

    judge: Judge | None
    method: str
    alpha: float
    target: float
    errors: list[str]
    # Why there is no judge when ``judge`` is None and no name was given: none yet, or several.
    no_judge: str = ""


def report_params(*, request: HttpRequest, judges: list[Judge], prefix: str = "") -> ReportParams:
    """The GET parameters of a report view, checked.

    ``judge``: a name; by default :func:`~evaluation.estimates.pick_default_judge`'s choice, and
    none when several judges were run (``no_judge`` says why: the reader picks one). ``method``:
    robust or study. ``alpha`` and the planner's ``target``: strictly between 0 and 1.
    ``prefix`` reads ``<prefix>judge`` instead of ``judge`` (the other campaign of a comparison).
    """
    errors: list[str] = []
    method = request.GET.get("method") or "robust"
    if method not in METHODS:
        errors.append(f"method: {method!r} is not one of {', '.join(METHODS)}")
        method = "robust"
    alpha = _parse_float(
        request.GET.get("alpha"), field="alpha", default=DEFAULT_ALPHA, low=0, high=1, errors=errors
    )
    target = _parse_float(
        request.GET.get("target"), field="target", default=DEFAULT_TARGET, low=0, high=1, errors=errors
    )
    field = f"{prefix}judge"
    judge_name = request.GET.get(field) or ""
    judge = (
        next((j for j in judges if j.name == judge_name), None) if judge_name else pick_default_judge(judges)
    )
    names = ", ".join(j.name for j in judges) or "none"
    if judge_name and judge is None:
        errors.append(f"{field}: {judge_name!r} is not a judge of this campaign (judges: {names})")
    no_judge = ""
    if judge is None and not judge_name:
        no_judge = (
            f"several judges have labeled this campaign: choose one ({names})"
            if judges
            else "no judge has labeled this campaign yet"
        )
    return ReportParams(
        judge=judge, method=method, alpha=alpha, target=target, errors=errors, no_judge=no_judge
    )


def criterion_page(
    *, request: HttpRequest, slug: str, criterion: str
) -> tuple[Campaign, set[str], Criterion, list[Judge]]:
    """The campaign (403 unless the user is its manager or analyst), the user's roles, the
    criterion by name (404) and the campaign's judges by name: what every report page reads."""
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    criterion_obj = get_object_or_404(Criterion, campaign=campaign, name=criterion)
    return campaign, roles, criterion_obj, campaign_judges(campaign=campaign)


def campaign_judges(*, campaign: Campaign) -> list[Judge]:
    return list(Judge.objects.filter(campaign=campaign).order_by("name"))


def _arrays(group: GroupEstimate) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Arrays with the group's counts: the planner only reads means, variances and the
    covariance of 0/1 labels, which the confusion counts and the judge's totals determine."""
    if group.agreement is None or not _finite(group.judge.mean):
        return None
    c = group.agreement.confusion
    y = np.repeat([1.0, 0.0, 1.0, 0.0], [c["tp"], c["fp"], c["fn"], c["tn"]])
    yhat = np.repeat([1.0, 1.0, 0.0, 0.0], [c["tp"], c["fp"], c["fn"], c["tn"]])
    n_unlabeled = group.n_judge - group.n_paired
    ones = round(group.judge.mean * group.n_judge) - (c["tp"] + c["fp"])
    if n_unlabeled < 0 or not (0 <= ones <= n_unlabeled):
        return None
    return y, yhat, np.repeat([1.0, 0.0], [ones, n_unlabeled - ones])


def _plan(*, group: GroupEstimate, target: float, alpha: float) -> dict[str, Any]:
    arrays = _arrays(group)
    if arrays is None:
        return {
            "theme": group.theme,
            "n": group.n_paired,
            "needed": None,
            "classical": None,
            "reachable": False,
        }
    y, yhat, unlabeled = arrays
    needed = planning.labels_needed(
        y=y, yhat=yhat, yhat_unlabeled=unlabeled, target_halfwidth=target, alpha=alpha
    )
    return {
        "theme": group.theme,
        "n": group.n_paired,
        "N": unlabeled.size,
        "needed": needed,
        "classical": planning.classical_labels_needed(y=y, target_halfwidth=target, alpha=alpha),
        "reachable": needed <= unlabeled.size,
    }


def _row(group: GroupEstimate) -> dict[str, Any]:
    agreement = group.agreement
    return {
        "theme": group.theme,
        "size": group.size,
        "n_human": group.n_human,
        "n_paired": group.n_paired,
        "n_judge": group.n_judge,
        "human": _pct(group.human.mean),
        "human_ci": _interval(group.human),
        "human_method": group.human.method,
        "judge": _pct(group.judge.mean),
        "judge_ci": _interval(group.judge),
        "ppi": _pct(group.ppi.mean),
        "ppi_ci": _interval(group.ppi),
        "ppi_half": _halfwidth(group.ppi),
        "ppi_method": group.ppi.method,
        "ppi_df": group.ppi.df,
        "lam": _number(group.ppi.lam),
        "observed": _pct(agreement.observed) if agreement else "—",
        "chance": _pct(agreement.chance) if agreement else "—",
        "kappa": _number(agreement.kappa) if agreement else "—",
        "n_eff": _number(group.effective_n, 0),
        "weighted": group.weighted,
        "notes": group.notes,
    }


def _chart(report: Report) -> str:
    rows = [
        {
            "label": group.theme,
            "estimates": [
                (name, interval.mean, interval.lo, interval.hi)
                for name, interval in (("Human", group.human), ("Judge", group.judge), ("PPI++", group.ppi))
            ],
        }
        for group in [*report.themes, report.overall]
    ]
    level = f"{(1 - report.alpha) * 100:g}%"
    return interval_chart(rows=rows, title=f"{report.criterion}: estimates with {level} intervals")


def _curve(*, report: Report) -> dict[str, Any] | None:
    overall = report.overall
    n, N = overall.n_paired, overall.n_judge - overall.n_paired
    prevalence = overall.ppi.mean if _finite(overall.ppi.mean) else overall.human.mean
    if n < 2 or N < 1 or not _finite(prevalence):
        return None
    rows = planning.agreement_curve(
        n=n,
        N=N,
        prevalence=min(1.0, max(0.0, prevalence)),
        agreements=CURVE_AGREEMENTS,
        alpha=report.alpha,
        seed=CURVE_SEED,
        reps=CURVE_REPS,
    )
    return {
        "n": n,
        "N": N,
        "prevalence": _pct(prevalence),
        "rows": [
            {
                "agreement": _pct(row["agreement"]),
                "halfwidth": f"±{row['halfwidth'] * 100:.1f} pts",
                "classical": f"±{row['classical_halfwidth'] * 100:.1f} pts",
                "n_eff": _number(row["effective_n_median"], 0),
                "lam": _number(row["lam"]),
                "coverage": _pct(row["coverage"]),
            }
            for row in rows
        ],
    }


def _comparison(rows: list[tuple[Judge, GroupEstimate]]) -> list[dict]:
    return [
        {
            "judge": judge.name,
            "kind": judge.get_kind_display(),
            "n_paired": overall.n_paired,
            "agreement": _pct(overall.agreement.observed) if overall.agreement else "—",
            "kappa": _number(overall.agreement.kappa) if overall.agreement else "—",
            "ppi_half": _halfwidth(overall.ppi),
            "ppi_method": overall.ppi.method,
            "n_eff": _number(overall.effective_n, 0),
        }
        for judge, overall in rows
    ]


@login_required
@require_GET
def report(request: HttpRequest, slug: str, criterion: str) -> HttpResponse:
    """The report of ``criterion`` for managers and analysts (403 for any other role).

    GET parameters as in :func:`report_params`; with several judges and none named, the page
    asks which (the command refuses the same way). A bad parameter gives 400 with a message
    naming it. An htmx request gets the results region only, with status 200 even when
    it shows errors: htmx does not swap 4xx responses, and the region is where they belong.
    """
    campaign, roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    params = report_params(request=request, judges=judges)
    judge, method, alpha, target = params.judge, params.method, params.alpha, params.target
    context: dict[str, Any] = {
        "campaign": campaign,
        "roles": roles,
        "criterion": criterion_obj,
        "criteria": campaign.criteria.order_by("name"),
        "judges": judges,
        "judge": judge,
        "method": method,
        "methods": METHODS,
        "alpha": alpha,
        "confidence": f"{(1 - alpha) * 100:g}%",
        "target": target,
        "target_points": f"{target * 100:g}",
        "errors": params.errors,
        "no_judge": params.no_judge,
        "method_notes": estimators.METHODS,
        "query": request.GET.urlencode(),
    }
    status = 400 if params.errors else 200
    if not params.errors and judge is not None:
        shown = snapshots.report_to_show(criterion=criterion_obj, judge=judge, method=method, alpha=alpha)
        result = shown.report
        context.update(
            report=result,
            shown=shown,
            may_refresh=may_refresh_estimates(roles=roles) and shown.computed_because != "parameters",
            chart=_chart(result),
            rows=[_row(group) for group in result.themes],
            overall=_row(result.overall),
            plans=[_plan(group=group, target=target, alpha=alpha) for group in result.themes],
            curve=_curve(report=result),
            used_methods=sorted(
                {g.human.method for g in result.themes}
                | {g.ppi.method for g in result.themes}
                | {result.overall.judge.method}
            ),
        )
        if len(judges) > 1:
            context["comparison"] = _comparison(
                snapshots.overall_by_judge(
                    criterion=criterion_obj, judges=judges, shown=shown, method=method, alpha=alpha
                )
            )
    if request.htmx:
        return render(request, "evaluation/report.html#results", context)
    return render(request, "evaluation/report.html", context, status=status)
