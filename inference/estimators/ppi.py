"""PPI++ means of one 0/1 criterion in one group of units (a theme, a cell, or everything), and
the lambdas they use; the descriptions of every interval method (``METHODS``).

Arrays, all 0/1:

- ``y``: final human labels on the n labeled units;
- ``yhat``: the judge's labels on those same units;
- ``yhat_unlabeled``: the judge's labels on the N units without a human label.

Two families, each interval naming its own ``method`` (see ``METHODS``; the human-only and
judge-only means are in ``inference.estimators.means``):

- **study**: exactly ``ppi_py`` 0.2.3 (simple random sample, normal quantile, power-tuned lambda
  fitted on the labels themselves), as in the due-diligence study. Numbers equal ``ppi_py``'s on
  the same arrays to the last digit.
- **robust**: design weights (1 / inclusion probability, Hajek means), a cluster-robust
  (linearisation) variance with answers as clusters, a Student t quantile with G - 1 degrees of
  freedom (G labeled clusters), and a lambda that is not fitted on the labels it is applied to.

Every rate lies in [0, 1], and so does every interval shown. The robust estimators (and the
judge-only interval under the robust method) keep their normal or t interval while it stays in
[0, 1]; where it leaves (few labels, a rate near 0 or 1) they give that interval cut at the bound,
widened to the Wilson score interval at the effective sample size p (1 - p) / variance where
Wilson's reaches further (``inference.intervals.inside_unit``), and ``note`` says so. The study
estimators keep ``ppi_py``'s numbers in ``lo`` and ``hi``; ``shown_lo`` / ``shown_hi`` clip them
to [0, 1] for every page and export, and ``clipped`` says when that cut something.

``ppi_py`` returns shape-(1,) arrays and defaults to ``alpha=0.1``: every call here passes alpha
and converts to ``float``. Degenerate inputs never raise: no labels gives a NaN interval, one
label or one cluster gives a point estimate with an infinite interval, and ``note`` says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

# A private function of ppi_py, called by ``study_lambda`` alone: no public function returns the
# lambda that ``ppi_mean_ci(lam=None)`` uses. tests/test_private_library_uses.py pins the version.
from ppi_py.ppi import _calc_lam_glm
from ppi_py.utils import construct_weight_vector, reshape_to_2d

from inference import notes
from inference.estimators.means import (
    CLASSICAL,
    CLASSICAL_ROBUST,
    JUDGE_ONLY,
    cluster_codes,
    hajek_mean,
    least_labels,
    linearised_variance,
    positive_weights,
    vector,
)
from inference.intervals import (
    TINY,
    Interval,
    check_alpha,
    from_variance,
    nan_interval,
    rectifier_floor,
    unbounded_interval,
)

PPI = "ppi++"
PPI_ROBUST_CROSSFIT = "ppi++-robust-crossfit"
PPI_ROBUST_POOLED = "ppi++-robust-pooled"
PPI_ROBUST_FIXED = "ppi++-robust-fixed"
# inference.estimators.weighted_ppi's method: a sample drawn by the judge's confidence.
PPI_CONFIDENCE = "ppi++-confidence"
# inference.estimators.multi_ppi's method: several judges in one estimate.
PPI_MULTI = "ppi++-multi"
# The ppi_py whose private ``_calc_lam_glm`` (its arguments, and that ``ppi_mean_pointestimate``
# and ``ppi_mean_ci`` call it so with ``lam=None``) ``study_lambda`` was written against.
PPI_PY_VERSION = "0.2.3"
METHODS: dict[str, str] = {
    CLASSICAL: "Human labels only; normal interval, simple random sample (ppi_py.classical_mean_ci).",
    CLASSICAL_ROBUST: "Human labels only; design-weighted mean, cluster-robust variance, t interval "
    "(Wilson score interval at the effective sample size where the t interval leaves [0, 1]).",
    JUDGE_ONLY: "Judge labels only, on every unit; normal interval (robust method: Wilson score interval "
    "where the normal one leaves [0, 1]). Says nothing about the judge's bias.",
    PPI: "PPI++ exactly as ppi_py (simple random sample, normal interval, lambda fitted on the labels).",
    PPI_ROBUST_CROSSFIT: "PPI++ with design weights, cluster-robust variance, t interval (Wilson score "
    "interval at the effective sample size where it leaves [0, 1]) and a lambda cross-fitted by "
    "leaving each answer out.",
    PPI_ROBUST_POOLED: "PPI++ with design weights, cluster-robust variance, t interval (Wilson score "
    "interval at the effective sample size where it leaves [0, 1]) and one lambda pooled across groups.",
    PPI_ROBUST_FIXED: "PPI++ with design weights, cluster-robust variance, t interval (Wilson score "
    "interval at the effective sample size where it leaves [0, 1]) and a given lambda.",
    PPI_CONFIDENCE: "Inverse-probability PPI++ on the judge's confidence, for a sample drawn by it: "
    "the judge's mean probability of a 1 plus the design-weighted mean residual, lambda 1, variance "
    "of the Poisson design, t interval.",
    PPI_MULTI: "PPI++ with several judges: each judge's labels a control variate with a coefficient of "
    "its own in [0, 1], cross-fitted by leaving each answer out; a judge run on a random share of the "
    "answers enters through its inverse-probability mean, with that draw's variance; design weights, "
    "cluster-robust variance, t interval.",
}


LAM_METHODS = ("crossfit", "pooled", "fixed")


def study_lambda(*, y: ArrayLike, yhat: ArrayLike, yhat_unlabeled: ArrayLike) -> float:
    """The power-tuning lambda ``ppi_py.ppi_mean_ci(lam=None)`` uses, computed the way it does:
    Cov(Y, Yhat) / ((1 + n/N) Var(Yhat over labeled and unlabeled)), clipped to [0, 1]. NaN when
    the judge's labels are all equal (0 / 0)."""
    y2 = reshape_to_2d(vector(y, name="y"))
    yhat2 = reshape_to_2d(vector(yhat, name="yhat", length=y2.shape[0]))
    unl2 = reshape_to_2d(vector(yhat_unlabeled, name="yhat_unlabeled"))
    w = construct_weight_vector(y2.shape[0], None, vectorized=True)
    w_unl = construct_weight_vector(unl2.shape[0], None, vectorized=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        pointest = ppi_mean_pointestimate(y2, yhat2, unl2, lam=1, w=w, w_unlabeled=w_unl)
        lam = _calc_lam_glm(
            w * (y2 - pointest),
            w * (yhat2 - pointest),
            w_unl * (unl2 - pointest),
            np.eye(1),
            coord=None,
            clip=True,
            optim_mode="overall",
        )
    return float(lam)


def joint_study_lambda(*, y: ArrayLike, yhat: ArrayLike, yhat_unlabeled: ArrayLike) -> float:
    """The one lambda ``ppi_py.ppi_mean_ci(lam=None)`` uses for a d-dimensional mean (here the
    one-hot (n x K) arrays of a categorical criterion's labels): the trace of Cov(Y, Yhat) over
    (1 + n/N) times the trace of Var(Yhat over labeled and unlabeled), clipped to [0, 1], which
    minimises the sum of the K variances. NaN when the judge gives one category only (0 / 0)."""
    y2 = np.asarray(y, dtype=float)
    yhat2 = np.asarray(yhat, dtype=float)
    unl2 = np.asarray(yhat_unlabeled, dtype=float)
    if y2.ndim != 2 or yhat2.shape != y2.shape or unl2.ndim != 2 or unl2.shape[1] != y2.shape[1]:
        raise ValueError("joint_study_lambda needs (n, K), (n, K) and (N, K) arrays")
    n, d, N = y2.shape[0], y2.shape[1], unl2.shape[0]
    if n == 0 or N == 0:
        return math.nan
    pool = np.concatenate([yhat2, unl2])
    if np.all(pool == pool[0]):
        return math.nan
    w = construct_weight_vector(n, None, vectorized=True)
    w_unl = construct_weight_vector(N, None, vectorized=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        pointest = ppi_mean_pointestimate(y2, yhat2, unl2, lam=1, w=w, w_unlabeled=w_unl)
        lam = _calc_lam_glm(
            w * (y2 - pointest),
            w * (yhat2 - pointest),
            w_unl * (unl2 - pointest),
            np.eye(d),
            coord=None,
            clip=True,
            optim_mode="overall",
        )
    return float(lam)


def study_ppi(
    *, y: ArrayLike, yhat: ArrayLike, yhat_unlabeled: ArrayLike, alpha: float, lam: float | None = None
) -> Interval:
    """PPI++ mean exactly as ``ppi_py``: ``ppi_mean_pointestimate`` and ``ppi_mean_ci`` with
    ``lam=None``; ``lam`` reports the lambda they use. Method ``ppi++``. A given ``lam`` (the
    joint lambda of a categorical criterion's indicators) is passed to them instead; NaN stands
    for a judge with one category only and gives lambda 0 with a note.

    Departures, each with a note: no labeled or no unlabeled units give NaN; a single label gives
    the point estimate with an infinite interval; when the judge's labels are all equal ppi_py's
    lambda is 0/0 or rounding noise, so lambda 0 is used (any lambda gives the same estimate then,
    up to rounding).
    """
    alpha = check_alpha(alpha)
    labels = vector(y, name="y")
    n = labels.shape[0]
    preds = vector(yhat, name="yhat", length=n)
    unlabeled = vector(yhat_unlabeled, name="yhat_unlabeled")
    N = unlabeled.shape[0]
    if n == 0:
        return nan_interval(method=PPI, alpha=alpha, n=0, N=N, note=notes.NO_LABELED_UNITS)
    if N == 0:
        return nan_interval(method=PPI, alpha=alpha, n=n, N=0, note=notes.NO_UNLABELED_UNITS)
    given = lam is not None
    if lam is None:
        pool = np.concatenate([preds, unlabeled])
        constant_judge = bool(np.all(pool == pool[0]))
        lam = math.nan if constant_judge else study_lambda(y=labels, yhat=preds, yhat_unlabeled=unlabeled)
    note = ""
    if math.isfinite(lam):
        mean = ppi_mean_pointestimate(labels, preds, unlabeled, lam=lam if given else None)
        lo, hi = ppi_mean_ci(labels, preds, unlabeled, alpha=alpha, lam=lam if given else None)
    else:
        lam, note = 0.0, notes.JUDGE_CONSTANT
        mean = ppi_mean_pointestimate(labels, preds, unlabeled, lam=lam)
        lo, hi = ppi_mean_ci(labels, preds, unlabeled, alpha=alpha, lam=lam)
    mean = float(np.asarray(mean).ravel()[0])
    if n == 1:
        return unbounded_interval(mean=mean, method=PPI, alpha=alpha, n=1, N=N, lam=lam, note=notes.ONE_LABEL)
    lo, hi = float(np.asarray(lo).ravel()[0]), float(np.asarray(hi).ravel()[0])
    # ppi_py computes the estimate and the interval apart: with no variance they may differ by
    # rounding alone (0.9999999999999999 against [1.0, 1.0]); the interval then takes it in.
    rounding = 1e-12 * max(1.0, abs(mean))
    if lo - rounding <= mean < lo:
        lo = mean
    if hi < mean <= hi + rounding:
        hi = mean
    return Interval(
        mean=mean,
        lo=lo,
        hi=hi,
        method=PPI,
        alpha=alpha,
        n=n,
        N=N,
        lam=lam,
        note=note,
    )


def _ppi_lambda(*, cov: np.ndarray, var: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = cov / var
    return np.where(var > TINY, np.clip(lam, 0.0, 1.0), 0.0)


def crossfit_lambdas(
    *,
    y: ArrayLike,
    yhat: ArrayLike,
    yhat_unlabeled: ArrayLike,
    w: ArrayLike | None = None,
    w_unlabeled: ArrayLike | None = None,
    clusters: ArrayLike | None = None,
) -> np.ndarray:
    """Lambda applied to each labeled unit: for the unit's cluster g, Cov(Y, Yhat) / Var(Yhat)
    computed without cluster g, clipped to [0, 1] (0 when Var(Yhat) is 0, when no other cluster
    exists, or when N is 0). With the judge's term taken over every judged unit (``robust_ppi``),
    this slope minimises the variance: Var(mean(Y) - lam (mean(Yhat) - mean_all(Yhat))) is
    smallest at Cov / Var, with no (1 + n/N) factor (that one belongs to ppi_py's term over the
    unlabeled units alone).

    Moments are weighted (weights normalised to mean 1 within the labeled and within the unlabeled
    set); Cov uses the labeled units of the other clusters, Var(Yhat) the judge's labels on the
    other clusters and on every unlabeled unit, which carry no human label to overfit.
    """
    labels = vector(y, name="y")
    n = labels.shape[0]
    preds = vector(yhat, name="yhat", length=n)
    unlabeled = vector(yhat_unlabeled, name="yhat_unlabeled")
    N = unlabeled.shape[0]
    weights = positive_weights(w, name="w", length=n)
    weights_unl = positive_weights(w_unlabeled, name="w_unlabeled", length=N)
    codes, G = cluster_codes(clusters, length=n)
    if n == 0 or N == 0 or G < 2:
        return np.zeros(n)
    v = np.ones(n) if weights is None else weights / weights.mean()
    vu = np.ones(N) if weights_unl is None else weights_unl / weights_unl.mean()

    def out_of_cluster(values: np.ndarray) -> np.ndarray:
        return float(values.sum()) - np.bincount(codes, weights=values, minlength=G)

    s_w, s_y, s_h = out_of_cluster(v), out_of_cluster(v * labels), out_of_cluster(v * preds)
    s_yh, s_hh = out_of_cluster(v * labels * preds), out_of_cluster(v * preds * preds)
    u_w, u_h, u_hh = float(vu.sum()), float(np.sum(vu * unlabeled)), float(np.sum(vu * unlabeled**2))
    cov = s_yh / s_w - (s_y / s_w) * (s_h / s_w)
    pooled_w = s_w + u_w
    var = (s_hh + u_hh) / pooled_w - ((s_h + u_h) / pooled_w) ** 2
    return _ppi_lambda(cov=cov, var=var)[codes]


def pooled_lambda(*, groups: Sequence[tuple[ArrayLike, ArrayLike, ArrayLike]]) -> float:
    """One lambda for several groups, each given as ``(y, yhat, yhat_unlabeled)``:
    sum_k n_k Cov_k(Y, Yhat) / sum_k n_k (1 + n_k/N_k) Var_k(Yhat), clipped to [0, 1], with
    moments taken within each group (its own means) and Var_k over the group's labeled and
    unlabeled judge labels. This minimises sum_k n_k^2 Var(theta_k) over a common lambda, so no
    small group's labels tune the coefficient applied to them. 0 when no group has both labeled
    and unlabeled units or every Var_k is 0."""
    numerator = denominator = 0.0
    for y, yhat, yhat_unlabeled in groups:
        labels = vector(y, name="y")
        n = labels.shape[0]
        preds = vector(yhat, name="yhat", length=n)
        unlabeled = vector(yhat_unlabeled, name="yhat_unlabeled")
        N = unlabeled.shape[0]
        if n == 0 or N == 0:
            continue
        numerator += n * float(np.mean((labels - labels.mean()) * (preds - preds.mean())))
        denominator += n * (1 + n / N) * float(np.var(np.concatenate([preds, unlabeled])))
    if denominator <= TINY:
        return 0.0
    return float(np.clip(numerator / denominator, 0.0, 1.0))


def joint_lambda(
    *, y: list[int], yhat: list[int], unlabeled: Mapping[int, int], categories: tuple[int, ...], method: str
) -> float:
    """One lambda for every category of a group of units, so that the categories' PPI++
    estimates sum to 1 (and a group's equals the sum of its categories'). ``y`` and ``yhat``:
    the human and judge labels (category values) of the paired units; ``unlabeled``: the judge's
    labels on the other units, counted by value.

    Study method: ppi_py's own power tuning on the one-hot (n x K) arrays, which minimises the
    total variance over the K coordinates (``joint_study_lambda``; NaN when the judge gives one
    category only, then ``study_ppi`` uses 0). Robust method: ``pooled_lambda`` over the K
    indicators (the same trace criterion, unweighted)."""
    spread = [value for value in categories for _ in range(max(0, unlabeled.get(value, 0)))]
    if method == "study":
        return joint_study_lambda(
            y=one_hot(y, categories),
            yhat=one_hot(yhat, categories),
            yhat_unlabeled=one_hot(spread, categories),
        )
    labels, preds, rest = (one_hot(values, categories) for values in (y, yhat, spread))
    return pooled_lambda(groups=[(labels[:, k], preds[:, k], rest[:, k]) for k in range(len(categories))])


def one_hot(values: Sequence[int], categories: Sequence[int]) -> np.ndarray:
    """The (len(values), K) matrix of the indicators of the category values ``categories``, one
    column each in their order."""
    matrix = np.zeros((len(values), len(categories)))
    column = {value: index for index, value in enumerate(categories)}
    for row, value in enumerate(values):
        matrix[row, column[value]] = 1.0
    return matrix


def robust_ppi(
    *,
    y: ArrayLike,
    yhat: ArrayLike,
    yhat_unlabeled: ArrayLike,
    alpha: float,
    w: ArrayLike | None = None,
    clusters: ArrayLike | None = None,
    unlabeled_clusters: ArrayLike | None = None,
    lam: float | None = None,
    lam_method: str = "crossfit",
    finite: bool = True,
) -> Interval:
    """PPI++ mean for a stratified, clustered sample of human labels.

    theta = lam_bar * mean(Yhat over every judged unit, labeled ones included) + mean_w(Y -
    lam_i * Yhat) with Hajek (weighted) means. The judge's term is over all n + N units: over the
    unlabeled ones alone (ppi_py's form) it is biased when the labels were drawn with unequal
    probabilities, since the units most likely drawn are then the least represented among the
    rest (+0.8 points in one simulated design with many labels).

    ``finite`` (the default): the rate of these n + N units, this campaign's. The judge labeled
    every one of them, so its term has no sampling error; the rectifier's cluster-robust
    variance (``clusters``, answers, as clusters, G / (G - 1) factor) takes the finite-population
    correction 1 - n / (n + N). Otherwise the rate of the process the units come from (the
    assistant asked again): no correction, and the judge's term adds its own variance, its units'
    contributions lam_bar (Yhat_j - mean) / (n + N) summed per cluster with the labeled ones'
    (``unlabeled_clusters``, the unlabeled units' clusters; each its own cluster without them).
    t quantile with G - 1 degrees of freedom (G labeled clusters; G = n without clusters).

    Lambda: a given ``lam`` is clipped to [0, 1] and used for every unit (``lam_method``
    ``"pooled"`` when it came from ``pooled_lambda``, else ``"fixed"``). Without ``lam``,
    ``"crossfit"`` gives each cluster the lambda of ``crossfit_lambdas``; ``lam`` on the result
    is their weighted mean lam_bar, the coefficient of the judge's term.

    Degenerate cases, with a note: n = 0 gives NaN; N = 0 uses lambda 0 (human labels only);
    G = 1 gives the point estimate with an infinite interval (df 0). The interval is kept in
    [0, 1] and widened near a bound as every rate's (``inference.intervals.inside_unit``).
    """
    alpha = check_alpha(alpha)
    if lam_method not in LAM_METHODS:
        raise ValueError(f"unknown lam_method {lam_method!r}; expected one of {', '.join(LAM_METHODS)}")
    if lam is None and lam_method != "crossfit":
        raise ValueError(f"lam_method {lam_method!r} needs a lam (see pooled_lambda)")
    if lam is not None and not math.isfinite(float(lam)):
        raise ValueError(f"lam must be finite, got {lam}")
    if lam is not None and lam_method == "crossfit":
        lam_method = "fixed"
    method = {"crossfit": PPI_ROBUST_CROSSFIT, "pooled": PPI_ROBUST_POOLED, "fixed": PPI_ROBUST_FIXED}[
        lam_method
    ]
    labels = vector(y, name="y")
    n = labels.shape[0]
    preds = vector(yhat, name="yhat", length=n)
    unlabeled = vector(yhat_unlabeled, name="yhat_unlabeled")
    N = unlabeled.shape[0]
    weights = positive_weights(w, name="w", length=n)
    if n == 0:
        return nan_interval(method=method, alpha=alpha, n=0, N=N, note=notes.NO_LABELED_UNITS)
    raw_clusters = np.arange(n) if clusters is None else np.asarray(clusters).ravel()
    if raw_clusters.shape[0] != n:
        raise ValueError(f"clusters has {raw_clusters.shape[0]} values, expected {n}")
    if unlabeled_clusters is not None and np.asarray(unlabeled_clusters).ravel().shape[0] != N:
        raise ValueError(f"unlabeled_clusters has {np.asarray(unlabeled_clusters).size} values, expected {N}")
    codes, G = cluster_codes(raw_clusters, length=n)

    parts: list[str] = []
    if N == 0:
        lam_i = np.zeros(n)
        parts.append(notes.HUMAN_ONLY)
    elif lam is not None:
        lam_i = np.full(n, float(np.clip(float(lam), 0.0, 1.0)))
    else:
        lam_i = crossfit_lambdas(y=labels, yhat=preds, yhat_unlabeled=unlabeled, w=weights, clusters=codes)
    share = np.full(n, 1 / n) if weights is None else weights / np.sum(weights)
    lam_bar = float(lam_i[0]) if np.all(lam_i == lam_i[0]) else float(np.sum(share * lam_i))
    rectifier = labels - lam_i * preds
    total = n + N
    judged_mean = (float(np.sum(preds)) + float(np.sum(unlabeled))) / total
    mean = lam_bar * judged_mean + hajek_mean(rectifier, weights)
    note = notes.joined(parts)
    if G == 1:
        note = notes.joined([*parts, notes.ONE_CLUSTER])
        return unbounded_interval(
            mean=mean, method=method, alpha=alpha, n=n, N=N, lam=lam_bar, df=0, note=note
        )
    rectifier_variance = linearised_variance(values=rectifier, w=weights, codes=codes, G=G)
    floor = rectifier_floor(labels=labels, preds=preds, lam=lam_bar, alpha=alpha, G=G)
    if floor > rectifier_variance:
        note = notes.joined([*parts, notes.FLOORED])
    if finite:
        factor = 1.0 - n / total
        variance = factor * max(rectifier_variance, floor)
    else:
        factor = 1.0
        variance = max(rectifier_variance, floor) + _judge_term_variance(
            rectifier=rectifier,
            share=share,
            preds=preds,
            unlabeled=unlabeled,
            labeled_clusters=raw_clusters,
            unlabeled_clusters=unlabeled_clusters,
            lam=lam_bar,
            judged_mean=judged_mean,
        )
    return from_variance(
        mean=mean,
        variance=variance,
        alpha=alpha,
        df=G - 1,
        method=method,
        n=n,
        N=N,
        lam=lam_bar,
        note=note,
        bounded=True,
        least_n=least_labels(codes=codes, G=G, w=weights, factor=factor),
    )


def _judge_term_variance(
    *,
    rectifier: np.ndarray,
    share: np.ndarray,
    preds: np.ndarray,
    unlabeled: np.ndarray,
    labeled_clusters: np.ndarray,
    unlabeled_clusters: ArrayLike | None,
    lam: float,
    judged_mean: float,
) -> float:
    """What the judge's term adds to the rectifier's cluster-robust variance when the units are a
    sample of a larger population. Every judged unit contributes J = lam (Yhat_j - mean) / (n + N)
    beside the labeled units' rectifier part R; summed per cluster, sum_g (R_g + J_g)^2 =
    sum_g R_g^2 + sum_g (2 R_g J_g + J_g^2), the first the rectifier's own variance (which keeps
    its floor), the second returned here with the labeled clusters' small-sample factor
    G / (G - 1). It can be negative: the labeled units' judge part moves against their
    rectifier, whose lam Yhat it cancels; the total stays the variance of every contribution."""
    total = preds.shape[0] + unlabeled.shape[0]
    rectifier_part = share * (rectifier - float(np.sum(share * rectifier)))
    labeled_judge = lam * (preds - judged_mean) / total
    unlabeled_judge = lam * (unlabeled - judged_mean) / total
    labeled_codes, labeled_G = cluster_codes(labeled_clusters, length=preds.shape[0])
    factor = labeled_G / (labeled_G - 1)
    if unlabeled_clusters is None:
        # Each unlabeled unit its own cluster: its contribution adds its square.
        R = np.bincount(labeled_codes, weights=rectifier_part, minlength=labeled_G)
        J = np.bincount(labeled_codes, weights=labeled_judge, minlength=labeled_G)
        return factor * float(np.sum(2 * R * J + J**2) + np.sum(unlabeled_judge**2))
    everything = np.concatenate([labeled_clusters, np.asarray(unlabeled_clusters).ravel()])
    codes, G = cluster_codes(everything, length=everything.shape[0])
    R = np.bincount(codes[: preds.shape[0]], weights=rectifier_part, minlength=G)
    J = np.bincount(codes, weights=np.concatenate([labeled_judge, unlabeled_judge]), minlength=G)
    return factor * float(np.sum(2 * R * J + J**2))
