"""Budget planning: what more human labels buy, and how good the judge must be.

The judge labels every unit of a group once; labeling a unit moves it from the unlabeled pool to
the labeled set, so with T = n + N units in the group, n' labels leave N' = T - n' unlabeled.

``ppi_py.ppi_mean_power`` answers another question (the cheapest pair of labeled and unlabeled
sample sizes when both can grow, from costs); here N is the rest of a fixed group, so the
projections use the closed form of the study PPI++ variance instead, with the variances and
covariance estimated on the current arrays:

    Var(n') = lam^2 Var(Yhat_unl) / N' + (Var(Y) - 2 lam Cov(Y, Yhat) + lam^2 Var(Yhat)) / n'
    lam(n') = Cov(Y, Yhat) / ((1 + n'/N') Var(Yhat over all units)), clipped to [0, 1]

the very formulas ``ppi_py.ppi_mean_ci(lam=None)`` applies, so the projection at the current n is
the study interval's half-width (up to rounding).

The robust interval the page shows by default is not that one: design weights, answers as
clusters, a t quantile and variance floors (no observed disagreement, labels all equal) can make
it several times wider; a theme at +/- 20.7 points was told it needed 0 more labels for +/- 5
because the study formula, with no disagreement and no variance, projected a zero half-width.
So the report's planner (``plan_theme``) anchors the projection on the interval shown: the
projected curve is scaled so that at the current n it equals the shown half-width (or, when the
study formula projects nothing to scale, the shown half-width shrinks as 1 / sqrt(n)). A theme
whose shown half-width exceeds the target therefore always needs at least one more label.

**Small pilots.** A pilot of 30 labels from a judge that agrees 95% of the time sees one or two
disagreements, often none: the plug-in moments then understate the residual's variance more
often than not, and the projection promised too few labels (-13% and -21% against simulated
campaigns in ``bench/efficiency_bench.py``, median over pilots). :func:`labels_needed` projects
from the moments with half a pseudo-observation spread over the four cells of the (human,
judge) 2 x 2 table (``PILOT_PSEUDO`` = 1/8 each, Jeffreys-like smoothing of the disagreement
rates): within 6% in all seven designs of that bench; at 1/4 per cell it overshoots by up to 19%
at 95% agreement. The moments of the interval shown are unchanged (``ppi_halfwidths`` without
``pseudo``), and an anchored projection still equals the shown half-width at the current n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from evaluation import page_cache
from evaluation.estimates.report import GroupEstimate, Report
from inference.intervals import TINY, check_alpha, quantile
from inference.numbers import is_finite

# ceil() of a sample size computed in floating point: 100.00000000001 is 100.
_SLACK = 1e-9
# The projection's pseudo-observations per cell of the (human, judge) 2 x 2 table: half an
# observation in all, an eighth in each cell (see the module).
PILOT_PSEUDO = 0.125


def _as_array(values: ArrayLike) -> np.ndarray:
    return np.asarray(values, dtype=float).ravel()


def _check_target(target_halfwidth: float) -> None:
    if not (target_halfwidth > 0 and math.isfinite(target_halfwidth)):
        raise ValueError(f"target_halfwidth must be positive and finite, got {target_halfwidth}")


def _moments(
    *, y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, pseudo: float = 0.0
) -> dict[str, float]:
    """Current estimates with ppi_py's conventions: population (ddof 0) moments on each set, and
    the variance of the judge over every unit with ddof 1 in lambda's denominator.

    ``pseudo`` > 0 adds that weight of pseudo-observations to each of the four cells (y, yhat) in
    {0, 1}^2 of the labeled moments (:data:`PILOT_PSEUDO`): what a projection from a small pilot
    reads. The judge's pool stays the real units."""
    var_pool = float(np.var(np.concatenate([yhat, yhat_unlabeled]), ddof=1))
    weights = np.ones(y.size)
    if pseudo > 0:
        weights = np.concatenate([weights, np.full(4, pseudo)])
        y = np.concatenate([y, [0.0, 0.0, 1.0, 1.0]])
        yhat = np.concatenate([yhat, [0.0, 1.0, 0.0, 1.0]])
    my, mh = np.average(y, weights=weights), np.average(yhat, weights=weights)
    return {
        "var_y": float(np.average((y - my) ** 2, weights=weights)),
        "var_yhat": float(np.average((yhat - mh) ** 2, weights=weights)),
        "cov": float(np.average((y - my) * (yhat - mh), weights=weights)),
        "var_unlabeled": float(np.var(yhat_unlabeled)) if yhat_unlabeled.size else 0.0,
        "var_pool": var_pool,
    }


def _ppi_halfwidths(*, moments: dict[str, float], n_labeled: np.ndarray, total: int, z: float) -> np.ndarray:
    n_new = n_labeled.astype(float)
    n_unl = total - n_new
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = moments["cov"] / ((1 + n_new / n_unl) * moments["var_pool"])
        lam = np.where((moments["var_pool"] > TINY) & (n_unl > 0), np.clip(lam, 0.0, 1.0), 0.0)
        imputed = np.where(n_unl > 0, lam**2 * moments["var_unlabeled"] / n_unl, 0.0)
    rectifier = (moments["var_y"] - 2 * lam * moments["cov"] + lam**2 * moments["var_yhat"]) / n_new
    return z * np.sqrt(np.maximum(imputed + rectifier, 0.0))


def ppi_halfwidths(
    *,
    y: ArrayLike,
    yhat: ArrayLike,
    yhat_unlabeled: ArrayLike,
    n_labeled: ArrayLike,
    alpha: float,
    pseudo: float = 0.0,
) -> np.ndarray:
    """Projected half-width of the study PPI++ interval with ``n_labeled`` human labels in total
    (each between 1 and n + N), the judge's pool staying n + N units and the variances staying
    those estimated on the current arrays (at least 2 labels needed to estimate them), with
    ``pseudo`` pseudo-observations per cell (:func:`_moments`; 0: the interval's own moments)."""
    y_arr, yhat_arr, unl_arr = _as_array(y), _as_array(yhat), _as_array(yhat_unlabeled)
    if y_arr.size < 2 or yhat_arr.size != y_arr.size:
        raise ValueError("need at least 2 labeled units with a judge label each")
    total = y_arr.size + unl_arr.size
    counts = np.atleast_1d(np.asarray(n_labeled, dtype=float))
    if np.any(counts < 1) or np.any(counts > total):
        raise ValueError(f"n_labeled must be between 1 and {total}")
    moments = _moments(y=y_arr, yhat=yhat_arr, yhat_unlabeled=unl_arr, pseudo=pseudo)
    return _ppi_halfwidths(
        moments=moments, n_labeled=counts, total=total, z=quantile(alpha=check_alpha(alpha), df=None)
    )


def _anchored(*, projected: np.ndarray, counts: np.ndarray, current: float | None) -> np.ndarray:
    """``projected`` half-widths at totals ``counts`` (``counts[0]`` the current n), scaled so
    that the first equals ``current``, the half-width of the interval shown; when the projection
    there is zero (no variance seen), ``current * sqrt(n / n')``. Unchanged without a finite,
    positive ``current``."""
    if current is None or not (math.isfinite(current) and current > 0):
        return projected
    if projected[0] > TINY:
        return projected * (current / projected[0])
    return current * np.sqrt(counts[0] / counts)


def _at_least_one(needed: int, *, current: float | None, target: float) -> int:
    """A group whose shown interval is wider than the target needs at least one more label
    (an infinite interval included)."""
    if current is not None and not math.isnan(current) and current > target * (1 + _SLACK):
        return max(1, needed)
    return needed


def classical_labels_needed(
    *, y: ArrayLike, target_halfwidth: float, alpha: float, current_halfwidth: float | None = None
) -> int:
    """Additional human labels the classical normal interval (human labels only) needs to reach
    ``target_halfwidth``: ceil(z^2 Var(Y) / h^2) - n, at least 0. With fewer than 2 labels the
    variance is taken at its worst case, 1/4.

    ``current_halfwidth``: the half-width of the human-only interval shown for these n labels
    (the robust one, say); the count then follows it as 1 / sqrt(n): ceil(n (h_now / h)^2) - n,
    at least 1 when h_now exceeds the target."""
    _check_target(target_halfwidth)
    y_arr = _as_array(y)
    current = current_halfwidth
    if y_arr.size >= 1 and current is not None and math.isfinite(current) and current > 0:
        needed = math.ceil(y_arr.size * (current / target_halfwidth) ** 2 - _SLACK) - int(y_arr.size)
        return _at_least_one(max(0, needed), current=current, target=target_halfwidth)
    variance = float(np.var(y_arr)) if y_arr.size >= 2 else 0.25
    needed = math.ceil(
        quantile(alpha=check_alpha(alpha), df=None) ** 2 * variance / target_halfwidth**2 - _SLACK
    )
    return _at_least_one(max(0, needed - int(y_arr.size)), current=current, target=target_halfwidth)


def labels_needed(
    *,
    y: ArrayLike,
    yhat: ArrayLike,
    yhat_unlabeled: ArrayLike,
    target_halfwidth: float,
    alpha: float,
    current_halfwidth: float | None = None,
) -> int:
    """Additional human labels the study PPI++ interval needs to reach ``target_halfwidth``:
    the smallest total n' whose projected half-width (``ppi_halfwidths``) is at most the target,
    minus the current n, at least 0.

    With fewer than 2 labels nothing is known of the judge's agreement, so the answer is
    ``classical_labels_needed`` at the worst-case variance. When no n' within the group reaches
    the target the judge cannot help there either, and the classical count is returned: a number
    above the unlabeled pool means the target is out of reach for this group.

    ``current_halfwidth``: the half-width of the PPI++ interval shown for the current n (the
    robust one, say): the projection is anchored on it (``_anchored``), so a group whose shown
    interval is wider than the target never needs 0 more labels.
    """
    _check_target(target_halfwidth)
    y_arr, yhat_arr, unl_arr = _as_array(y), _as_array(yhat), _as_array(yhat_unlabeled)
    n = y_arr.size
    current = current_halfwidth
    if n < 2:
        needed = classical_labels_needed(y=y_arr, target_halfwidth=target_halfwidth, alpha=alpha)
        return _at_least_one(needed, current=current, target=target_halfwidth)
    if yhat_arr.size != n:
        raise ValueError(f"yhat has {yhat_arr.size} values, expected {n}")
    total = n + unl_arr.size
    candidates = np.arange(n, total + 1)
    halfwidths = ppi_halfwidths(
        y=y_arr, yhat=yhat_arr, yhat_unlabeled=unl_arr, n_labeled=candidates, alpha=alpha, pseudo=PILOT_PSEUDO
    )
    halfwidths = _anchored(projected=halfwidths, counts=candidates.astype(float), current=current)
    reached = np.flatnonzero(halfwidths <= target_halfwidth * (1 + _SLACK))
    if reached.size:
        return _at_least_one(int(candidates[reached[0]]) - n, current=current, target=target_halfwidth)
    needed = classical_labels_needed(
        y=y_arr, target_halfwidth=target_halfwidth, alpha=alpha, current_halfwidth=current
    )
    # Beyond the pool: the target is out of reach, which a count above the pool says.
    return max(needed, int(unl_arr.size) + 1) if current is not None and math.isfinite(current) else needed


def agreement_curve(
    *,
    n: int,
    N: int,
    prevalence: float,
    agreements: list[float],
    alpha: float,
    seed: int,
    reps: int = 200,
) -> list[dict]:
    """Seeded simulation of how the study PPI++ interval depends on the judge's quality.

    For each agreement rate a: ``reps`` groups of n labeled and N unlabeled units with
    Y ~ Bernoulli(prevalence) and a judge that agrees with the human with probability a, errors
    symmetric. Each group's estimate and interval follow ``ppi_py.ppi_mean_ci(lam=None)``
    (vectorised; the unlabeled judge labels enter only through their count of ones, drawn as a
    binomial). One dict per agreement, in order: ``agreement``, ``halfwidth`` (mean PPI++
    half-width), ``effective_n`` (mean n_eff, groups with a zero half-width left out; heavy-tailed
    since n_eff grows as 1 / halfwidth^2) and ``effective_n_median``,
    ``classical_halfwidth`` (mean half-width of the human-only normal interval on the same
    labels), ``lam`` (mean lambda) and ``coverage`` (share of intervals containing
    ``prevalence``).
    """
    if n < 2 or N < 1 or reps < 1:
        raise ValueError("need n >= 2, N >= 1 and reps >= 1")
    if not (0 <= prevalence <= 1):
        raise ValueError(f"prevalence must be in [0, 1], got {prevalence}")
    z = quantile(alpha=check_alpha(alpha), df=None)
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    for rate in agreements:
        if not (0 <= rate <= 1):
            raise ValueError(f"agreement must be in [0, 1], got {rate}")
        y = (rng.random((reps, n)) < prevalence).astype(float)
        yhat = np.where(rng.random((reps, n)) < rate, y, 1 - y)
        judge_rate = prevalence * rate + (1 - prevalence) * (1 - rate)
        ones_unl = rng.binomial(N, judge_rate, size=reps).astype(float)
        mean_unl = ones_unl / N
        var_unl = mean_unl * (1 - mean_unl)

        y_bar, yhat_bar = y.mean(axis=1), yhat.mean(axis=1)
        cov = np.mean((y - y_bar[:, None]) * (yhat - yhat_bar[:, None]), axis=1)
        pool_ones = yhat.sum(axis=1) + ones_unl
        total = n + N
        var_pool = (pool_ones - pool_ones**2 / total) / (total - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = cov / ((1 + n / N) * var_pool)
        lam = np.where(var_pool > TINY, np.clip(lam, 0.0, 1.0), 0.0)

        rectifier = y - lam[:, None] * yhat
        theta = lam * mean_unl + rectifier.mean(axis=1)
        halfwidth = z * np.sqrt(lam**2 * var_unl / N + rectifier.var(axis=1) / n)
        classical = z * y.std(axis=1) / math.sqrt(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            n_eff = np.where(halfwidth > 0, z**2 * theta * (1 - theta) / halfwidth**2, np.nan)
        covered = np.abs(theta - prevalence) <= halfwidth
        rows.append(
            {
                "agreement": float(rate),
                "halfwidth": float(halfwidth.mean()),
                "effective_n": float(np.nanmean(n_eff)) if np.any(halfwidth > 0) else math.nan,
                "effective_n_median": float(np.nanmedian(n_eff)) if np.any(halfwidth > 0) else math.nan,
                "classical_halfwidth": float(classical.mean()),
                "lam": float(lam.mean()),
                "coverage": float(covered.mean()),
            }
        )
    return rows


# The report's planner: what more labels buy per theme, and what a better judge would buy.

CURVE_AGREEMENTS = [0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99]
CURVE_SEED = 0
CURVE_REPS = 200


@dataclass(frozen=True)
class ThemePlan:
    """Additional human labels one theme needs for a target PPI++ half-width.

    ``n``: labels paired with a judge label now; ``N``: the theme's judge-only units (None when
    unknown); ``needed`` and ``classical``: more labels for PPI++ and for human labels alone
    (None when the report lacks what the projection needs); ``reachable``: ``needed`` fits in
    the judge-only pool."""

    theme: str
    n: int
    N: int | None
    needed: int | None
    classical: int | None
    reachable: bool


@dataclass(frozen=True)
class AgreementCurve:
    """:func:`agreement_curve` at the report's sizes: ``n`` labeled and ``N`` judge-only units
    overall, the ``prevalence`` simulated, and one row per agreement rate."""

    n: int
    N: int
    prevalence: float
    rows: list[dict]


def group_arrays(*, group: GroupEstimate) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """0/1 arrays with a report group's counts (labels, judge labels on them, judge labels on the
    rest). The planner only reads means, variances and the covariance of 0/1 labels, which the
    confusion counts and the judge's totals determine. None when the group has no paired units
    or no judge estimate, or counts that do not add up."""
    if group.agreement is None or not is_finite(group.judge.mean):
        return None
    c = group.agreement.confusion
    y = np.repeat([1.0, 0.0, 1.0, 0.0], [c["tp"], c["fp"], c["fn"], c["tn"]])
    yhat = np.repeat([1.0, 1.0, 0.0, 0.0], [c["tp"], c["fp"], c["fn"], c["tn"]])
    n_unlabeled = group.n_judge - group.n_paired
    ones = round(group.judge.mean * group.n_judge) - (c["tp"] + c["fp"])
    if n_unlabeled < 0 or not (0 <= ones <= n_unlabeled):
        return None
    return y, yhat, np.repeat([1.0, 0.0], [ones, n_unlabeled - ones])


def plan_theme(*, group: GroupEstimate, target_halfwidth: float, alpha: float) -> ThemePlan:
    """What more human labels buy in one theme of a report: :func:`labels_needed` and
    :func:`classical_labels_needed` on the group's counts (see :func:`group_arrays`).

    Under the robust method both are anchored on the intervals the page shows (the PPI++ and the
    human-only half-widths), which the study formulas alone can understate many times over; under
    the study method the projection is that interval already. Either way a theme whose shown
    interval is wider than the target needs at least one more label."""
    arrays = group_arrays(group=group)
    if arrays is None:
        return ThemePlan(
            theme=group.theme, n=group.n_paired, N=None, needed=None, classical=None, reachable=False
        )
    y, yhat, unlabeled = arrays
    robust = group.method == "robust"
    ppi_now, human_now = group.ppi.halfwidth, group.human.halfwidth
    needed = labels_needed(
        y=y,
        yhat=yhat,
        yhat_unlabeled=unlabeled,
        target_halfwidth=target_halfwidth,
        alpha=alpha,
        current_halfwidth=ppi_now if robust else None,
    )
    needed = _at_least_one(needed, current=ppi_now, target=target_halfwidth)
    classical = classical_labels_needed(
        y=y,
        target_halfwidth=target_halfwidth,
        alpha=alpha,
        current_halfwidth=human_now if robust and group.human.n == y.size else None,
    )
    classical = _at_least_one(classical, current=human_now, target=target_halfwidth)
    return ThemePlan(
        theme=group.theme,
        n=group.n_paired,
        N=int(unlabeled.size),
        needed=needed,
        classical=classical,
        reachable=needed <= unlabeled.size,
    )


def report_curve(*, report: Report) -> AgreementCurve | None:
    """:func:`agreement_curve` at the report's overall sizes and prevalence (the PPI++ estimate,
    else the human one, clipped to [0, 1]), seeded; None with fewer than 2 paired units, no
    judge-only unit or no estimate."""
    overall = report.overall
    n, N = overall.n_paired, overall.n_judge - overall.n_paired
    prevalence = overall.ppi.mean if is_finite(overall.ppi.mean) else overall.human.mean
    if n < 2 or N < 1 or not is_finite(prevalence):
        return None
    prevalence = min(1.0, max(0.0, prevalence))
    rows = agreement_curve(
        n=n,
        N=N,
        prevalence=prevalence,
        agreements=CURVE_AGREEMENTS,
        alpha=report.alpha,
        seed=CURVE_SEED,
        reps=CURVE_REPS,
    )
    return AgreementCurve(n=n, N=N, prevalence=prevalence, rows=rows)


def _planned_numbers(group: GroupEstimate) -> tuple[Any, ...]:
    """Every number of ``group`` that :func:`plan_theme` and :func:`report_curve` read."""
    confusion = group.agreement.confusion if group.agreement is not None else None
    return (
        group.theme,
        group.method,
        group.n_paired,
        group.n_judge,
        sorted(confusion.items()) if confusion is not None else None,
        group.judge.mean,
        group.ppi.mean,
        group.ppi.halfwidth,
        group.human.mean,
        group.human.halfwidth,
        group.human.n,
    )


def report_planner(
    *, report: Report, target_halfwidth: float, alpha: float
) -> tuple[list[ThemePlan], AgreementCurve | None]:
    """The report page's planner: :func:`plan_theme` of each theme and :func:`report_curve`,
    kept in the page cache (``evaluation.page_cache``) under the numbers they read, the target
    and alpha (no query): the simulated curve and the projections cost about a second at a few
    thousand labels and a million units, and the same report is read again and again."""

    def plan() -> tuple[list[ThemePlan], AgreementCurve | None]:
        plans = [
            plan_theme(group=group, target_halfwidth=target_halfwidth, alpha=alpha) for group in report.themes
        ]
        return plans, report_curve(report=report)

    key = [
        [_planned_numbers(group) for group in report.themes],
        _planned_numbers(report.overall),
        report.alpha,
        target_halfwidth,
        alpha,
        CURVE_AGREEMENTS,
        CURVE_SEED,
        CURVE_REPS,
    ]
    return page_cache.cached("planner", key, plan)
