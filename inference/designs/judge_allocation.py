"""Which judges to run on which share of a theme's units and how many human labels to draw, at the
least cost for a target half-width: the planner of several judges on one ledger.

A theme of N units. Human labels cost ``c_h`` each and are drawn at random; judge k costs ``c_k``
per unit and is run on a random share s_k of the units (0: not run, 1: every unit), and on the
labeled units too (the combination needs its prediction there). The estimate is
``inference.estimators.multi_ppi``'s, whose coefficients minimise its variance; before drawing, its variance
is projected from the moments of the labels and predictions at hand (a pilot)::

    V(n, s) = min over lam in [0, 1]^K of
              (1/n - 1/N) (v_Y - 2 lam' c + lam' S lam) + sum_k lam_k^2 d_k (1 - s_k) / (s_k N) S_kk

with v_Y = Var(Y), c = Cov(f, Y), S = Var(f): the rectifier's variance under simple random
sampling with its finite-population correction, plus each share's Poisson design variance of
its judge's mean. A share draws whole answers, whose units are alike: d_k is judge k's design
effect (``inclusion.cluster_design_effect``, read on units it judged answer by answer; 1 when
units are drawn one by one, the default), which makes the term the variance of a Poisson
sample of answers (``inclusion.poisson_cluster_variance``). The cost still to spend is::

    C(n, s) = c_h max(0, n - n_0) + sum_{k: s_k > 0} c_k max(0, s_k N + (1 - s_k) n - J_k)

n_0 the labels already made, J_k the units judge k judged already (a judge that judged every unit
costs nothing more, and is then used at share 1).

**The rule.** For every choice of shares on the grid ``SHARES`` (each judge: not run, or one of
the shares; 14^K choices, K judges), the fewest labels n with z sqrt(V(n, s)) <= the target (V
falls as n grows, so a bisection finds it; n = N always reaches it, every unit labeled), and its
cost; the plan is the cheapest (among equal costs, the fewest judges, then the smallest shares).
A small exhaustive search rather than a closed form: the coefficients couple the judges (a
strong judge on a small share is worth less next to a cheap one on everything than alone), and
the grid keeps the answer to shares a person can run.

The moments read half a pseudo-observation spread over the 2^(K+1) cells of the (human, judges)
table (``PSEUDO``; one judge: the single-judge planner's ``PILOT_PSEUDO`` of 1/8 per cell), so a
small pilot that saw no disagreement does not promise a perfect judge. The projection is a normal
approximation without clusters among the human labels, floors or t quantiles: the interval
after drawing is somewhat wider at small n (``bench/multi_judge_bench.py`` measures it). No database.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from inference.estimators.multi_ppi import box_minimum
from inference.intervals import check_alpha, quantile

SHARES = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
# Half a pseudo-observation in all, spread over the cells of the (human, judges) 0/1 table.
PSEUDO = 0.5
LEAST_LABELS = 2


@dataclass(frozen=True)
class Moments:
    """Var(Y) (``var_y``), Cov(f_k, Y) (``cov``, K) and Var(f) (``var_f``, K x K) of the labels
    and the judges' predictions on the units both have, and how many units (``n``)."""

    var_y: float
    cov: tuple[float, ...]
    var_f: tuple[tuple[float, ...], ...]
    n: int


def moments(*, y: ArrayLike, preds: ArrayLike, pseudo: float = PSEUDO) -> Moments:
    """The moments of the human labels ``y`` (n) and the judges' predictions ``preds`` (n x K) on
    the same units, with ``pseudo`` pseudo-observations spread evenly over the 2^(K+1) cells of
    the 0/1 table (population moments, ddof 0)."""
    labels = np.asarray(y, dtype=float).ravel()
    n = labels.shape[0]
    matrix = np.asarray(preds, dtype=float).reshape(n, -1)
    K = matrix.shape[1]
    weights = np.ones(n)
    if pseudo > 0:
        cells = np.array(list(itertools.product((0.0, 1.0), repeat=K + 1)))
        labels = np.concatenate([labels, cells[:, 0]])
        matrix = np.vstack([matrix, cells[:, 1:]])
        weights = np.concatenate([weights, np.full(cells.shape[0], pseudo / cells.shape[0])])
    if weights.sum() <= 0:
        raise ValueError("moments: no units")
    my = np.average(labels, weights=weights)
    mf = np.average(matrix, axis=0, weights=weights)
    dy, df = labels - my, matrix - mf
    return Moments(
        var_y=float(np.average(dy * dy, weights=weights)),
        cov=tuple(float(value) for value in np.average(df * dy[:, None], axis=0, weights=weights)),
        var_f=tuple(
            tuple(float(value) for value in row) for row in (df * weights[:, None]).T @ df / weights.sum()
        ),
        n=n,
    )


@dataclass(frozen=True)
class Option:
    """One design: each judge's share (0: not run), the human labels in all, its projected
    half-width and coefficients, and the cost still to spend (humans, then each judge)."""

    shares: tuple[float, ...]
    labels: int
    halfwidth: float
    coefficients: tuple[float, ...]
    human_cost: float
    judge_costs: tuple[float, ...]

    @property
    def cost(self) -> float:
        return self.human_cost + sum(self.judge_costs)

    @property
    def judges(self) -> int:
        return sum(1 for share in self.shares if share > 0)


@dataclass(frozen=True)
class ThemePlan:
    """The cheapest design for a theme (``best``), and beside it the best design with one judge
    run on every unit (``single``, None without a judge) and with human labels alone
    (``human_only``)."""

    size: int
    target: float
    best: Option
    single: Option | None
    human_only: Option


def _variances(
    *, m: Moments, shares: np.ndarray, labels: np.ndarray, size: int, effects: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """V(n, s) and the coefficients for each row of ``shares`` (C x K) at ``labels`` (C), each
    judge's share variance multiplied by its design effect (``effects``, K)."""
    C, K = shares.shape
    S = np.array(m.var_f)
    c = np.array(m.cov)
    a = np.maximum(1 / labels - 1 / size, 0.0)
    used = shares > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        draw = np.where(used, (1 - shares) / (shares * size), 0.0) * np.diag(S) * effects
    H = a[:, None, None] * S + np.einsum("ck,kl->ckl", draw, np.eye(K))
    b = a[:, None] * c
    # A judge not run has no prediction: its coefficient is held at 0.
    H = np.where(used[:, :, None] & used[:, None, :], H, 0.0) + np.einsum(
        "ck,kl->ckl", (~used).astype(float), np.eye(K)
    )
    b = np.where(used, b, 0.0)
    lam = box_minimum(H=H, b=b) if K else np.zeros((C, 0))
    lam = np.where(used, lam, 0.0)
    rectifier = m.var_y - 2 * lam @ c + np.einsum("ck,kl,cl->c", lam, S, lam)
    variance = a * np.maximum(rectifier, 0.0) + np.sum(lam * lam * draw, axis=1)
    return variance, lam


def _fewest_labels(
    *, m: Moments, shares: np.ndarray, size: int, target: float, z: float, least: int, effects: np.ndarray
) -> np.ndarray:
    """The fewest labels (between ``least`` and ``size``) whose projected half-width reaches the
    target, for each row of ``shares``: a bisection, the variance falling as labels grow."""
    C = shares.shape[0]
    lo = np.full(C, least, dtype=np.int64)
    hi = np.full(C, size, dtype=np.int64)
    variance, _ = _variances(m=m, shares=shares, labels=lo.astype(float), size=size, effects=effects)
    done = z * np.sqrt(variance) <= target
    hi = np.where(done, lo, hi)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        variance, _ = _variances(m=m, shares=shares, labels=mid.astype(float), size=size, effects=effects)
        ok = z * np.sqrt(variance) <= target
        hi = np.where((lo < hi) & ok, mid, hi)
        lo = np.where((lo < hi) & ~ok, mid + 1, lo)
    return hi


def _options(
    *,
    m: Moments,
    shares: np.ndarray,
    size: int,
    target: float,
    z: float,
    human_cost: float,
    judge_costs: Sequence[float],
    labeled: int,
    judged: Sequence[int],
    effects: np.ndarray,
) -> list[Option]:
    least = min(size, max(LEAST_LABELS, 1))
    labels = _fewest_labels(m=m, shares=shares, size=size, target=target, z=z, least=least, effects=effects)
    variance, lam = _variances(m=m, shares=shares, labels=labels.astype(float), size=size, effects=effects)
    options = []
    for row in range(shares.shape[0]):
        n = int(labels[row])
        costs = tuple(
            judge_costs[k] * max(0.0, shares[row, k] * size + (1 - shares[row, k]) * n - judged[k])
            if shares[row, k] > 0
            else 0.0
            for k in range(shares.shape[1])
        )
        options.append(
            Option(
                shares=tuple(float(value) for value in shares[row]),
                labels=n,
                halfwidth=float(z * math.sqrt(max(variance[row], 0.0))),
                coefficients=tuple(float(value) for value in lam[row]),
                human_cost=human_cost * max(0, n - labeled),
                judge_costs=costs,
            )
        )
    return options


def plan_theme(
    *,
    m: Moments,
    size: int,
    target: float,
    human_cost: float,
    judge_costs: Sequence[float],
    alpha: float = 0.05,
    labeled: int = 0,
    judged: Sequence[int] | None = None,
    shares: Sequence[float] = SHARES,
    design_effects: Sequence[float] | None = None,
) -> ThemePlan:
    """The cheapest design of a theme of ``size`` units for a ``target`` half-width at level
    1 - ``alpha`` (see the module): ``m`` the pilot's moments (K judges), ``human_cost`` a human
    label's cost, ``judge_costs`` each judge's cost per unit, ``labeled`` the labels made already,
    ``judged`` the units each judge judged already, ``shares`` the grid, ``design_effects`` each
    judge's design effect when its share draws whole answers (``inclusion.cluster_design_effect``;
    None: 1 each, units drawn one by one). Raises ValueError on bad input."""
    alpha = check_alpha(alpha)
    K = len(m.cov)
    if len(judge_costs) != K:
        raise ValueError(f"judge_costs has {len(judge_costs)} values, expected {K}")
    if size < 1 or not (0 < target < 1) or human_cost < 0 or any(cost < 0 for cost in judge_costs):
        raise ValueError("size must be positive, target in (0, 1), costs non-negative")
    grid = sorted({float(share) for share in shares} | {0.0})
    if any(not (0 <= share <= 1) for share in grid):
        raise ValueError("shares must lie in [0, 1]")
    judged = [0] * K if judged is None else list(judged)
    effects = np.ones(K) if design_effects is None else np.asarray(design_effects, dtype=float).ravel()
    if effects.shape[0] != K or not np.all(np.isfinite(effects)) or np.any(effects <= 0):
        raise ValueError(f"design_effects must be {K} positive numbers, one per judge")
    z = quantile(alpha=alpha, df=None)
    combos = np.array(list(itertools.product(grid, repeat=K)), dtype=float).reshape(-1, K)
    options = _options(
        m=m,
        shares=combos,
        size=size,
        target=target,
        z=z,
        human_cost=human_cost,
        judge_costs=judge_costs,
        labeled=labeled,
        judged=judged,
        effects=effects,
    )
    best = min(options, key=lambda option: (round(option.cost, 9), option.judges, option.shares))
    singles = [option for option in options if option.judges == 1 and max(option.shares) == 1.0]
    human_only = next(option for option in options if option.judges == 0)
    return ThemePlan(
        size=size,
        target=target,
        best=best,
        single=min(singles, key=lambda option: (round(option.cost, 9), option.shares)) if singles else None,
        human_only=human_only,
    )
