"""PPI++ with several judges in one estimate: each judge's predictions a control variate with a
coefficient of its own, fitted by cross-fitting; judges that labeled every unit or a random share
of them.

One group (a theme) of units. The humans labeled n of them (design weights ``w``, clusters: the
answers, or the questions); judge k gave its prediction f_k on every labeled unit and on the units
of its **term**: every unit (a census, the judge run on everything) or a random share drawn with
known inclusion probabilities q (a judge run on a random share of the answers, every unit of a
drawn answer judged). With coefficients lam = (lam_1 .. lam_K)::

    theta = sum_k lam_k T_k + mean_w(Y - sum_k lam_k f_k)

T_k the judge's mean over its term: its plain mean over every unit, or the Hajek mean
sum_D f / q / sum_D 1 / q over its share D. The rectifier's weighted mean corrects the judges'
terms, so the estimate is unbiased for any fixed lam (control variates); each single judge, and
the human labels alone, are the special cases with the other coefficients at 0.

**Coefficients.** lam minimises the estimate's variance,
``a (lam' S lam - 2 lam' c) + lam' V lam`` with S = Var(f), c = Cov(f, Y) (the rectifier's
variance per label, a = (1 - n / population) / n), and V the covariance of the terms T_k (zero for
a census, whose term has no sampling error; the Poisson design's for a share): a judge on a small
share costs variance through its term, and gets a smaller coefficient. Each coefficient lies in
[0, 1] as the single judge's lambda does; the box holds every single judge's lambda, so the
optimum over it is never worse than the best single judge's, asymptotically. With one judge on
every unit it is exactly ``ppi.crossfit_lambdas``: Cov / Var clipped to [0, 1]. Cross-fitted as
that one: the labeled units of each cluster get the lam fitted without that cluster (S also reads
the units outside the labels that every judge predicted, which carry no human label to overfit).

**Variance.** About this campaign's units (``finite``, the default): the rectifier's
cluster-robust variance with the finite-population correction and its floor, as
``ppi.robust_ppi`` (the floor read on the combined prediction g = sum lam f / sum lam as one
judge's), plus the shares' design variance: independent Poisson draws of clusters (answers),
the draws independent of the human sample, so the variances add (two-phase sampling with
independent phases; Särndal, Swensson and Wretman 1992, 9.3 and 5.7)::

    V = (1 - n / population) max(V_rect, floor) + lam' V_draw lam
    V_draw[k, l] = A / (A - 1) sum_{a in D} (1 - q_a) E_k,a E_l,a
    E_k,a = sum_{j in a} (f_kj - T_k) / q_a / sum_{j in D} 1 / q_j

over the A drawn clusters of a draw (two judges drawn together covary; drawn apart, 0). About
the process the units come from (``finite=False``, questions as clusters): no correction, and
every term's contributions summed per question with the labeled units', as ``robust_ppi`` does
for its one judge. t quantile: G - 1 degrees of freedom (G labeled clusters), Satterthwaite's
with a share's A - 1 where it adds variance. Kept in [0, 1] as every robust interval.

No database: arrays in, an ``intervals.Interval`` out, with the coefficients and what each judge
brings (the variance without it, the others' coefficients fitted again).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from inference import notes
from inference.estimators.means import (
    cluster_codes,
    hajek_mean,
    least_labels,
    linearised_variance,
    positive_weights,
    vector,
)
from inference.estimators.ppi import PPI_MULTI
from inference.intervals import (
    TINY,
    Interval,
    check_alpha,
    from_variance,
    nan_interval,
    quantile,
    smoothed_variance,
    unbounded_interval,
)


@dataclass(frozen=True)
class JudgeTerm:
    """A judge's term over a group: its predictions ``values`` on the units its mean is taken
    over. ``weights`` None: every unit of the group (a census); else 1 / q of each unit, q the
    probability that the random share drew it, with ``clusters`` the draw's sampling units (the
    answers: every unit of a drawn answer is judged) and ``draw`` the draw's key (judges drawn
    together share it and their terms covary; different keys are independent draws).
    ``questions``: each unit's question, read when the interval is about the process
    (``finite=False``)."""

    values: ArrayLike
    weights: ArrayLike | None = None
    clusters: ArrayLike | None = None
    draw: str = ""
    questions: ArrayLike | None = None

    @property
    def census(self) -> bool:
        return self.weights is None


@dataclass(frozen=True)
class Combination:
    """The estimate of several judges combined: its ``interval``, each judge's coefficient
    (``coefficients``, the weighted mean of the cross-fitted ones, in the order of the judges),
    its ``variance``, the variance of the combination without each judge (``without``, the other
    coefficients fitted again), with no judge at all (``human_only``), and what the judges'
    random shares add (``draw_variance``)."""

    interval: Interval
    coefficients: tuple[float, ...]
    variance: float
    without: tuple[float, ...]
    human_only: float
    draw_variance: float

    def reduction(self, k: int) -> float:
        """The share of the variance judge ``k`` takes off beyond the others: 1 - V / V without
        it (0 when it adds nothing; NaN without variances to compare)."""
        before = self.without[k]
        if not (math.isfinite(before) and math.isfinite(self.variance)) or before <= 0:
            return math.nan
        return max(0.0, 1.0 - self.variance / before)


@dataclass(frozen=True)
class _Term:
    values: np.ndarray
    weights: np.ndarray
    census: bool
    draw_codes: np.ndarray
    draws: int
    draw: str
    mean: float
    questions: np.ndarray | None


def _term(term: JudgeTerm, *, k: int) -> _Term:
    values = vector(term.values, name=f"terms[{k}].values")
    m = values.shape[0]
    if m == 0:
        raise ValueError(f"terms[{k}] has no values: a judge's term needs the units it judged")
    census = term.census
    weights = np.ones(m) if census else positive_weights(term.weights, name=f"terms[{k}].weights", length=m)
    assert weights is not None
    if not census and np.any(weights < 1 - 1e-12):
        raise ValueError(f"terms[{k}].weights are 1 / q and q is a probability: each must be at least 1")
    if census or term.clusters is None:
        codes, draws = np.arange(m), m
    else:
        codes, draws = cluster_codes(term.clusters, length=m)
    questions = None
    if term.questions is not None:
        questions = np.asarray(term.questions).ravel()
        if questions.shape[0] != m:
            raise ValueError(f"terms[{k}].questions has {questions.shape[0]} values, expected {m}")
    return _Term(
        values=values,
        weights=weights,
        census=census,
        draw_codes=codes,
        draws=draws,
        draw=term.draw if not census else f"census-{k}",
        mean=float(np.sum(weights * values) / np.sum(weights)),
        questions=questions,
    )


def _draw_covariance(terms: list[_Term]) -> tuple[np.ndarray, int]:
    """The Poisson design's covariance of the shares' terms T_k (zero rows for a census), and the
    fewest degrees of freedom of a draw that adds variance (A - 1; 0 when none does)."""
    K = len(terms)
    V = np.zeros((K, K))
    df = 0
    groups: dict[str, list[int]] = {}
    for k, term in enumerate(terms):
        if not term.census:
            groups.setdefault(term.draw, []).append(k)
    for members in groups.values():
        first = terms[members[0]]
        for k in members[1:]:
            if terms[k].values.shape != first.values.shape or not np.array_equal(
                terms[k].weights, first.weights
            ):
                raise ValueError("judges drawn together need their values on the same units, in one order")
        A = first.draws
        if A < 2:
            continue
        total = float(np.sum(first.weights))
        keep = 1.0 - 1.0 / np.bincount(first.draw_codes, weights=first.weights, minlength=A) * np.bincount(
            first.draw_codes, minlength=A
        )
        E = np.vstack(
            [
                np.bincount(
                    first.draw_codes,
                    weights=terms[k].weights * (terms[k].values - terms[k].mean) / total,
                    minlength=A,
                )
                for k in members
            ]
        )
        block = A / (A - 1) * (E * keep) @ E.T
        V[np.ix_(members, members)] = block
        df = A - 1 if df == 0 else min(df, A - 1)
    return V, df


def _process_covariance(terms: list[_Term]) -> np.ndarray:
    """What the shares' terms vary by when the units are a sample of a process (questions as
    clusters): their contributions summed per question, G / (G - 1) sum; a census's row is zero
    for the choice of the coefficients (its term over every unit varies by 1 / (its units) of the
    labels' variance, as ``ppi.robust_ppi`` leaves it out of its lambda)."""
    K = len(terms)
    V = np.zeros((K, K))
    drawn = [k for k, term in enumerate(terms) if not term.census and term.questions is not None]
    if not drawn:
        return V
    everything = np.concatenate([_questions(terms[k]) for k in drawn])
    _, codes_all = np.unique(everything, return_inverse=True)
    G = int(codes_all.max()) + 1 if codes_all.size else 0
    if G < 2:
        return V
    rows = []
    start = 0
    for k in drawn:
        term = terms[k]
        m = term.values.shape[0]
        codes = codes_all[start : start + m]
        start += m
        rows.append(
            np.bincount(
                codes, weights=term.weights * (term.values - term.mean) / np.sum(term.weights), minlength=G
            )
        )
    block = G / (G - 1) * np.vstack(rows) @ np.vstack(rows).T
    V[np.ix_(drawn, drawn)] = block
    return V


def _questions(term: _Term) -> np.ndarray:
    if term.questions is None:
        raise ValueError("a share's questions are needed when the interval is about the process")
    return term.questions


def box_minimum(*, H: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The x in [0, 1]^K that minimises x' H x - 2 b' x (H symmetric, positive semi-definite):
    every split of the coordinates into those at 0, at 1 and free (3^K of them, K judges) is
    tried, the free ones solving their linear system, and the feasible one with the least value
    kept (the first in that order among equals: 0 before 1 before free). With one coordinate:
    b / H clipped to [0, 1], 0 when H is 0 (``ppi.crossfit_lambdas``'s rule). ``H`` (G x K x K)
    and ``b`` (G x K) solve G problems at once, (K x K) and (K,) one."""
    if b.ndim == 1:
        return box_minimum(H=H[np.newaxis], b=b[np.newaxis])[0]
    G, K = b.shape
    if K == 1:
        h = H[:, 0, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.clip(b[:, 0] / h, 0.0, 1.0)
        return np.where(h > TINY, ratio, 0.0)[:, np.newaxis]
    best = np.zeros((G, K))
    best_value = np.zeros(G)
    for states in itertools.product((0.0, 1.0, None), repeat=K):
        x = np.tile(np.array([0.0 if state is None else state for state in states]), (G, 1))
        free = [i for i, state in enumerate(states) if state is None]
        feasible = np.ones(G, dtype=bool)
        if free:
            fixed = [i for i, state in enumerate(states) if state is not None]
            block = H[:, free][:, :, free]
            rhs = b[:, free] - np.einsum("gij,gj->gi", H[:, free][:, :, fixed], x[:, fixed])
            solvable = np.abs(np.linalg.det(block)) > TINY
            solution = np.zeros((G, len(free)))
            if solvable.any():
                solution[solvable] = np.linalg.solve(block[solvable], rhs[solvable][..., np.newaxis])[..., 0]
            feasible = solvable & np.all(solution >= -1e-12, axis=1) & np.all(solution <= 1 + 1e-12, axis=1)
            x[:, free] = np.clip(solution, 0.0, 1.0)
        value = np.einsum("gi,gij,gj->g", x, H, x) - 2 * np.einsum("gi,gi->g", b, x)
        better = feasible & (value < best_value - 1e-15)
        best[better] = x[better]
        best_value[better] = value[better]
    return best


def crossfit_coefficients(
    *,
    y: np.ndarray,
    preds: np.ndarray,
    w: np.ndarray | None,
    codes: np.ndarray,
    G: int,
    pool: np.ndarray,
    pool_weights: np.ndarray | None,
    term_covariance: np.ndarray,
    scale: float,
) -> np.ndarray:
    """The coefficient vector of each labeled unit (n x K): for the unit's cluster g, the box
    minimum of ``scale`` (lam' S lam - 2 lam' c) + lam' V lam with c = Cov(Y, f) on the labeled
    units of the other clusters, S = Var(f) on those and on ``pool`` (the units outside the
    labels that every judge predicted, (M x K), ``pool_weights`` 1 / their probability of being
    there), V = ``term_covariance``. Moments weighted as ``ppi.crossfit_lambdas`` weights them
    (each set's weights normalised to mean 1). Zeros below two clusters."""
    n, K = preds.shape
    if n == 0 or G < 2:
        return np.zeros((n, K))
    v = np.ones(n) if w is None else w / w.mean()
    M = pool.shape[0]
    vu = np.ones(M) if pool_weights is None or M == 0 else pool_weights / pool_weights.mean()

    def out(values: np.ndarray) -> np.ndarray:
        return float(values.sum()) - np.bincount(codes, weights=values, minlength=G)

    s_w, s_y = out(v), out(v * y)
    s_f = np.stack([out(v * preds[:, k]) for k in range(K)], axis=1)  # G x K
    s_yf = np.stack([out(v * y * preds[:, k]) for k in range(K)], axis=1)
    s_ff = np.stack(
        [np.stack([out(v * preds[:, k] * preds[:, m]) for m in range(K)], axis=1) for k in range(K)], axis=1
    )  # G x K x K
    # Column by column: one judge's sums then equal ``ppi.crossfit_lambdas``'s to the last digit.
    u_w = float(vu.sum())
    u_f = np.array([float(np.sum(vu * pool[:, k])) for k in range(K)])
    u_ff = np.array([[float(np.sum(vu * pool[:, k] * pool[:, m])) for m in range(K)] for k in range(K)])
    mean_y = s_y / s_w
    mean_f = s_f / s_w[:, np.newaxis]
    cov = s_yf / s_w[:, np.newaxis] - mean_y[:, np.newaxis] * mean_f
    pooled_w = s_w + u_w
    pooled_mean = (s_f + u_f) / pooled_w[:, np.newaxis]
    var = (s_ff + u_ff) / pooled_w[:, np.newaxis, np.newaxis] - np.einsum(
        "gi,gj->gij", pooled_mean, pooled_mean
    )
    fits = box_minimum(H=scale * var + term_covariance, b=scale * cov)
    return fits[codes]


def _floor(*, y: np.ndarray, preds: np.ndarray, lam: np.ndarray, alpha: float, G: int) -> float:
    """``intervals.rectifier_floor`` of the combined prediction g = sum lam f / sum lam read as
    one judge's: ((1 - s)^2 v_Y + s^2 v_D) / G with s = sum lam and v_D the smoothed variance of
    the disagreement d = Y - g read through its moments: m2 - m1^2 with m2 and m1 the means of
    d^2 and |d| each given z^2 / 2 pseudo-observations at 1 and as many at 0 (Agresti and
    Coull's smoothing). For a 0/1 prediction d^2 = |d| and v_D is the single judge's
    m1 (1 - m1); for a prediction between 0 and 1 (two judges that disagree), the variance of a
    fractional disagreement, which m1 (1 - m1) would overstate (that is a Bernoulli's, the
    largest of any variable in [0, 1] with that mean)."""
    n = y.shape[0]
    s = float(np.sum(lam))
    v_labels = smoothed_variance(count=float(np.sum(y)), n=n, alpha=alpha)
    if s <= 0:
        return v_labels / G
    d = np.abs(y - preds @ lam / s)
    if np.all((d == 0) | (d == 1)):
        v_disagreements = smoothed_variance(count=float(np.sum(d)), n=n, alpha=alpha)
        return ((1 - s) ** 2 * v_labels + s**2 * v_disagreements) / G
    z2 = quantile(alpha=alpha, df=None) ** 2
    m1 = (float(np.sum(d)) + z2 / 2) / (n + z2)
    m2 = (float(np.sum(d * d)) + z2 / 2) / (n + z2)
    v_disagreements = max(m2 - m1 * m1, 0.0)
    return ((1 - s) ** 2 * v_labels + s**2 * v_disagreements) / G


@dataclass(frozen=True)
class _Fit:
    interval: Interval
    lam: np.ndarray
    variance: float
    draw_variance: float


def _estimate(
    *,
    y: np.ndarray,
    preds: np.ndarray,
    w: np.ndarray | None,
    raw_clusters: np.ndarray,
    terms: list[_Term],
    pool: np.ndarray,
    pool_weights: np.ndarray | None,
    population: int,
    alpha: float,
    finite: bool,
    coefficients: np.ndarray | None,
) -> _Fit:
    n, K = preds.shape
    codes, G = cluster_codes(raw_clusters, length=n)
    parts: list[str] = []
    draw_cov, draw_df = _draw_covariance(terms) if finite else (np.zeros((K, K)), 0)
    choice_cov = draw_cov if finite else _process_covariance(terms)
    if K == 0 or population <= n:
        lam_i = np.zeros((n, K))
        if K:
            parts.append(notes.HUMAN_ONLY)
    elif coefficients is not None:
        lam_i = np.tile(np.clip(coefficients, 0.0, 1.0), (n, 1))
    else:
        scale = (1.0 - n / population) / n if finite else 1.0 / n
        if not np.any(np.abs(choice_cov) > 0):
            scale = 1.0  # only the rectifier varies: its scale changes nothing (one judge: Cov / Var)
        lam_i = crossfit_coefficients(
            y=y,
            preds=preds,
            w=w,
            codes=codes,
            G=G,
            pool=pool,
            pool_weights=pool_weights,
            term_covariance=choice_cov,
            scale=scale,
        )
    share = np.full(n, 1 / n) if w is None else w / np.sum(w)
    lam_bar = np.array(
        [
            float(lam_i[0, k]) if np.all(lam_i[:, k] == lam_i[0, k]) else float(np.sum(share * lam_i[:, k]))
            for k in range(K)
        ]
    )
    rectifier = y - np.sum(lam_i * preds, axis=1) if K else y.copy()
    judged = float(sum(lam_bar[k] * terms[k].mean for k in range(K)))
    mean = judged + hajek_mean(rectifier, w)
    if G == 1:
        interval = unbounded_interval(
            mean=mean,
            method=PPI_MULTI,
            alpha=alpha,
            n=n,
            N=max(population - n, 0),
            df=0,
            note=notes.joined([*parts, notes.ONE_CLUSTER]),
        )
        return _Fit(interval=interval, lam=lam_bar, variance=math.inf, draw_variance=0.0)
    rectifier_variance = linearised_variance(values=rectifier, w=w, codes=codes, G=G)
    floor = _floor(y=y, preds=preds, lam=lam_bar, alpha=alpha, G=G)
    if floor > rectifier_variance:
        parts.append(notes.FLOORED)
    drawn = float(lam_bar @ draw_cov @ lam_bar) if K else 0.0
    if finite:
        factor = 1.0 - n / population if population else 1.0
        rect = factor * max(rectifier_variance, floor)
        variance = rect + drawn
    else:
        factor = 1.0
        rect = max(rectifier_variance, floor)
        drawn = _process_terms_variance(
            rectifier=rectifier, share=share, raw_clusters=raw_clusters, terms=terms, lam=lam_bar
        )
        variance = rect + drawn
    df = G - 1
    if finite and drawn > 0 and draw_df > 0:
        ratio = variance**2 / (rect**2 / (G - 1) + drawn**2 / draw_df) if rect > 0 else draw_df
        df = max(1, min(G - 1 + draw_df, math.floor(ratio)))
    interval = from_variance(
        mean=mean,
        variance=max(variance, 0.0),
        alpha=alpha,
        df=df,
        method=PPI_MULTI,
        n=n,
        N=max(population - n, 0),
        note=notes.joined(parts),
        bounded=True,
        least_n=least_labels(codes=codes, G=G, w=w, factor=factor),
    )
    return _Fit(interval=interval, lam=lam_bar, variance=max(variance, 0.0), draw_variance=drawn)


def _process_terms_variance(
    *, rectifier: np.ndarray, share: np.ndarray, raw_clusters: np.ndarray, terms: list[_Term], lam: np.ndarray
) -> float:
    """What the judges' terms add to the rectifier's variance when the units are a sample of a
    process (``ppi._judge_term_variance`` with several judges): every term's contributions
    lam_k w_j (f_kj - T_k) / sum w summed per question with the labeled units' rectifier part R,
    sum_g (2 R_g J_g + J_g^2) with the labeled clusters' factor G / (G - 1)."""
    n = rectifier.shape[0]
    rectifier_part = share * (rectifier - float(np.sum(share * rectifier)))
    labeled_codes, labeled_G = cluster_codes(raw_clusters, length=n)
    factor = labeled_G / (labeled_G - 1)
    pieces = [raw_clusters]
    weights = [np.zeros(n)]
    for k, term in enumerate(terms):
        if term.questions is None:
            raise ValueError(f"terms[{k}].questions: needed when the interval is about the process")
        pieces.append(term.questions)
        weights.append(lam[k] * term.weights * (term.values - term.mean) / float(np.sum(term.weights)))
    everything = np.concatenate(pieces)
    _, codes = np.unique(everything, return_inverse=True)
    G = int(codes.max()) + 1
    R = np.bincount(codes[:n], weights=rectifier_part, minlength=G)
    J = np.bincount(codes, weights=np.concatenate(weights), minlength=G)
    return factor * float(np.sum(2 * R * J + J**2))


def _pool_matrix(pool: ArrayLike | None, *, K: int) -> np.ndarray:
    """The pool as M x K; a 1-d pool is one judge's column. Without judges the pool keeps its M
    rows and no column (``reshape(-1, 0)`` cannot tell M)."""
    if pool is None:
        return np.zeros((0, K))
    raw = np.asarray(pool, dtype=float)
    rows = raw.shape[0] if raw.ndim == 2 else (raw.size // K if K else 0)
    if raw.size != rows * K:
        raise ValueError(f"pool must be M x {K} (units x judges), got {raw.shape}")
    return raw.reshape(rows, K)


def multi_ppi(
    *,
    y: ArrayLike,
    preds: ArrayLike,
    terms: Sequence[JudgeTerm],
    alpha: float,
    population: int,
    w: ArrayLike | None = None,
    clusters: ArrayLike | None = None,
    pool: ArrayLike | None = None,
    pool_weights: ArrayLike | None = None,
    finite: bool = True,
    coefficients: ArrayLike | None = None,
) -> Combination:
    """PPI++ with several judges (see the module): ``y`` the n human labels, ``preds`` (n x K)
    each judge's prediction on them, ``terms`` each judge's term (K of them, in the columns'
    order), ``population`` the group's units (the finite-population correction's), ``w`` the
    labels' design weights, ``clusters`` their clusters (answers; questions with ``finite`` off),
    ``pool`` (M x K) the judges' predictions on units outside the labels that every judge
    predicted and ``pool_weights`` 1 / their probability of being there (for the coefficients'
    Var(f)); ``coefficients`` given: used for every unit instead of fitted. Method
    ``ppi++-multi``.

    No labels: NaN. One cluster: the estimate with an infinite interval. Every unit labeled: the
    coefficients are 0 (human labels only), with a note. No judges (``terms`` empty, ``preds``
    n x 0): the human labels' estimate alone, no coefficient. Raises ValueError on inconsistent
    arrays.
    """
    alpha = check_alpha(alpha)
    labels = vector(y, name="y")
    n = labels.shape[0]
    K = len(terms)
    matrix = np.asarray(preds, dtype=float)
    if matrix.size == 0:
        matrix = np.zeros((n, K))
    if matrix.shape != (n, K):
        raise ValueError(f"preds must be {n} x {K} (labels x judges), got {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise ValueError("preds contains NaN or infinite values")
    if n == 0:
        interval = nan_interval(method=PPI_MULTI, alpha=alpha, n=0, N=population, note=notes.NO_LABELED_UNITS)
        nan = math.nan
        return Combination(
            interval=interval,
            coefficients=(nan,) * K,
            variance=nan,
            without=(nan,) * K,
            human_only=nan,
            draw_variance=nan,
        )
    weights = positive_weights(w, name="w", length=n)
    parsed = [_term(term, k=k) for k, term in enumerate(terms)]
    pool_matrix = _pool_matrix(pool, K=K)
    pool_w = (
        None
        if pool_weights is None
        else positive_weights(pool_weights, name="pool_weights", length=pool_matrix.shape[0])
    )
    if population < n:
        raise ValueError(f"population has {population} units, fewer than the {n} labels")
    fixed = None if coefficients is None else vector(coefficients, name="coefficients", length=K)
    raw_clusters = np.arange(n) if clusters is None else np.asarray(clusters).ravel()
    if raw_clusters.shape[0] != n:
        raise ValueError(f"clusters has {raw_clusters.shape[0]} values, expected {n}")

    def run(preds: np.ndarray, judges: list[_Term], pooled: np.ndarray, given: np.ndarray | None) -> _Fit:
        return _estimate(
            y=labels,
            preds=preds,
            w=weights,
            raw_clusters=raw_clusters,
            terms=judges,
            pool=pooled,
            pool_weights=pool_w,
            population=population,
            alpha=alpha,
            finite=finite,
            coefficients=given,
        )

    fit = run(matrix, parsed, pool_matrix, fixed)
    without = []
    for k in range(K):
        keep = [m for m in range(K) if m != k]
        given = None if fixed is None else fixed[keep]
        without.append(run(matrix[:, keep], [parsed[m] for m in keep], pool_matrix[:, keep], given).variance)
    nobody = run(np.zeros((n, 0)), [], np.zeros((pool_matrix.shape[0], 0)), None)
    return Combination(
        interval=fit.interval,
        coefficients=tuple(float(value) for value in fit.lam),
        variance=fit.variance,
        without=tuple(without),
        human_only=nobody.variance,
        draw_variance=fit.draw_variance,
    )
