"""Inclusion probabilities of human samples that follow the judge's confidence, and of several
samples taken together.

**The confidence-driven design.** Within one group (a theme), unit i goes to the humans with
probability pi_i proportional to sqrt(c_i (1 - c_i)), where c_i is the judge's probability that
the label is 1: the standard deviation of the human label around the judge's guess when that
guess is calibrated. Spending labels in proportion to it minimises the variance of the
inverse-probability PPI estimator (``inference/estimators/weighted_ppi.py``) among designs with the same
expected number of labels (Zrnic and Candès 2024, *Active statistical inference*; Gligorić et
al. 2024, *Can unconfident LLM annotations be used for confident conclusions?*). A floor keeps
every unit drawable (``floor`` times the uniform rate budget / N), and no probability exceeds 1
(the excess goes to the other units). The draw is **Poisson sampling**: each unit independently,
so the sample size is random with expectation the budget, and each unit's probability is exactly
the pi_i recorded (``poisson_draw``).

A judge whose confidence is badly calibrated only misplaces labels: the estimator weights each
label by 1 / pi_i, whatever pi_i was, so the estimate stays unbiased and the interval honest; it
is wider than it would have been (see ``bench/efficiency_bench.py``).

**Several samples.** Units labeled because one of several independent samples drew them (a
K-means sample and a confidence-driven top-up, say) were drawn with probability
1 - prod_k (1 - pi_k,i) (``union_inclusion_probabilities``); weighting by that keeps the
estimates unbiased when the samples are pooled.

**Whole clusters drawn.** A judge run on a random share of the answers is a Poisson sample of
clusters: answer a drawn with probability q_a, every unit of a drawn answer judged. The Hajek
mean of its values (sum_D f / q / sum_D 1 / q) has the linearised variance::

    V = sum_a (1 - q_a) / q_a E_a^2 / N^2,    E_a = sum_{i in a} (f_i - mean f)

(``poisson_cluster_variance``; Särndal, Swensson and Wretman 1992, 4.3 and 5.7): the between-
answer variance of the residuals' per-answer totals. Units of an answer are alike, so E_a^2 runs
above the sum of its units' squares; at one rate q the ratio of the two sums is the **design
effect** (``cluster_design_effect``), the factor by which drawing whole answers multiplies the
variance (1 - q) / (q N) Var(f) of units drawn one by one.

No database: plain numpy on arrays parallel to the group's units.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

# No unit's probability falls below this share of the uniform rate budget / N. At 0.2 an
# overconfident judge's sure-and-wrong units got so few labels that intervals covered 89-90%
# in bench/efficiency_bench.py; at 0.5 calibrated designs lost almost no width (docs/statistics.md).
DEFAULT_FLOOR = 0.5
# The judge's probability of a 1 on a unit it gave no confidence on (for the design) or did not
# label (for the estimators): the most uncertain.
UNKNOWN = 0.5
_BISECTIONS = 64


def _confidences(values: ArrayLike) -> np.ndarray:
    array = np.asarray(values, dtype=float).ravel()
    if array.size == 0:
        raise ValueError("confidence: no units")
    if not np.all(np.isfinite(array)) or np.any(array < 0) or np.any(array > 1):
        raise ValueError("confidence: every value must be a probability in [0, 1]")
    return array


def spread(*, confidence: ArrayLike) -> np.ndarray:
    """sqrt(c (1 - c)) per unit: the standard deviation of a 0/1 label whose probability of being
    1 is c. The residual the human label corrects, when the judge's confidence is calibrated."""
    c = _confidences(confidence)
    return np.sqrt(c * (1 - c))


def proportional_probabilities(
    *, scores: ArrayLike, budget: float, floor: float = DEFAULT_FLOOR
) -> np.ndarray:
    """Inclusion probabilities min(1, max(floor * budget / N, t * score_i)) with t set so that
    they sum to ``budget`` (the expected number of labels).

    ``scores`` are non-negative; ``budget`` in (0, N]; ``floor`` in [0, 1]: 0 lets a unit with a
    zero score never be drawn, 1 gives the uniform design budget / N. All scores zero: uniform.
    Raises ValueError on bad input.
    """
    s = np.asarray(scores, dtype=float).ravel()
    N = s.size
    if N == 0:
        raise ValueError("scores: no units")
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError("scores must be finite and non-negative")
    if not (0 < budget <= N):
        raise ValueError(f"budget must be in (0, {N}], got {budget}")
    if not (0 <= floor <= 1):
        raise ValueError(f"floor must be in [0, 1], got {floor}")
    uniform = budget / N
    if budget == N:
        return np.ones(N)
    if s.max() <= 0 or floor == 1:
        return np.full(N, uniform)
    low = floor * uniform

    def total(t: float) -> float:
        return float(np.minimum(1.0, np.maximum(low, t * s)).sum())

    # total(t) rises from N * low <= budget (t = 0) to the number of positive scores plus the
    # floor of the others; with floor 0 and too few positive scores to reach the budget, the
    # floor of the zero scores is raised to what it takes.
    reachable = float(np.count_nonzero(s > 0) + low * np.count_nonzero(s == 0))
    if reachable < budget:
        zeros = s == 0
        p = np.where(zeros, (budget - np.count_nonzero(~zeros)) / np.count_nonzero(zeros), 1.0)
        return np.minimum(1.0, p)
    lo, hi = 0.0, 1.0
    while total(hi) < budget:
        hi *= 2
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2
        if total(mid) < budget:
            lo = mid
        else:
            hi = mid
    p = np.minimum(1.0, np.maximum(low, hi * s))
    # The bisection leaves the sum within rounding of the budget; the units strictly between the
    # floor and 1 absorb what is left, so the probabilities sum to the budget exactly.
    free = (p > low) & (p < 1)
    if free.any():
        p[free] *= 1 + (budget - p.sum()) / p[free].sum()
    return np.clip(p, 0.0, 1.0)


def confidence_probabilities(
    *, confidence: ArrayLike, budget: float, floor: float = DEFAULT_FLOOR
) -> np.ndarray:
    """Inclusion probabilities of the confidence-driven design in one group: proportional to
    ``spread(confidence)``, at least ``floor`` times budget / N, at most 1, summing to
    ``budget`` (see :func:`proportional_probabilities`)."""
    return proportional_probabilities(scores=spread(confidence=confidence), budget=budget, floor=floor)


def grouped_confidence_probabilities(
    *,
    confidence: ArrayLike,
    groups: Sequence[str] | np.ndarray,
    budgets: dict[str, float],
    floor: float = DEFAULT_FLOOR,
) -> np.ndarray:
    """:func:`confidence_probabilities` within each group (theme): ``groups`` parallel to
    ``confidence``, ``budgets`` the expected labels per group (every group present needs one)."""
    c = _confidences(confidence)
    keys = np.asarray(groups)
    if keys.shape[0] != c.shape[0]:
        raise ValueError(f"groups has {keys.shape[0]} values, expected {c.shape[0]}")
    out = np.empty_like(c)
    for group in np.unique(keys):
        if group not in budgets:
            raise ValueError(f"budgets: no budget for group {group!r}")
        rows = keys == group
        out[rows] = confidence_probabilities(confidence=c[rows], budget=budgets[group], floor=floor)
    return out


def poisson_draw(*, probabilities: ArrayLike, seed: int) -> np.ndarray:
    """Poisson sampling: unit i drawn with probability p_i independently of the others. Returns
    a boolean mask. Seeded: the same probabilities and seed give the same mask."""
    p = np.asarray(probabilities, dtype=float).ravel()
    if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise ValueError("probabilities must be in [0, 1]")
    return np.random.default_rng(seed).random(p.shape[0]) < p


def union_inclusion_probabilities(*, probabilities: Sequence[ArrayLike]) -> np.ndarray:
    """Probability that each unit was drawn by at least one of several independent samples:
    1 - prod_k (1 - p_k,i), where ``probabilities[k]`` holds sample k's inclusion probabilities
    of every unit (0 for a unit it could not draw). Independent means each sample's randomness
    ignores the others' outcome (a fixed-size sample within itself is fine)."""
    if len(probabilities) == 0:
        raise ValueError("probabilities: no samples")
    rows = [np.asarray(p, dtype=float).ravel() for p in probabilities]
    size = rows[0].shape[0]
    for k, row in enumerate(rows):
        if row.shape[0] != size:
            raise ValueError(f"probabilities[{k}] has {row.shape[0]} values, expected {size}")
        if not np.all(np.isfinite(row)) or np.any(row < 0) or np.any(row > 1):
            raise ValueError(f"probabilities[{k}] must be in [0, 1]")
    return 1 - np.prod(1 - np.vstack(rows), axis=0)


def _cluster_totals(
    values: ArrayLike, clusters: ArrayLike | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The residuals f_i - mean f, each unit's cluster code and the residuals' per-cluster totals
    (each unit its own cluster without ``clusters``)."""
    f = np.asarray(values, dtype=float).ravel()
    if f.shape[0] == 0 or not np.all(np.isfinite(f)):
        raise ValueError("values must be finite, at least one")
    if clusters is None:
        codes = np.arange(f.shape[0])
    else:
        raw = np.asarray(clusters).ravel()
        if raw.shape[0] != f.shape[0]:
            raise ValueError(f"clusters has {raw.shape[0]} values, expected {f.shape[0]}")
        codes = np.unique(raw, return_inverse=True)[1].ravel()
    residuals = f - f.mean()
    return residuals, codes, np.bincount(codes, weights=residuals)


def poisson_cluster_variance(
    *, values: ArrayLike, probabilities: ArrayLike, clusters: ArrayLike | None = None
) -> float:
    """The linearised variance of the Hajek mean of ``values`` (every unit of the group) when
    whole ``clusters`` are drawn by Poisson sampling, unit i's cluster with probability
    ``probabilities[i]`` (one number: every cluster's; equal within a cluster). See the module.
    Without ``clusters`` each unit is its own: (1 - q) / (q N) Var(f) at one rate."""
    residuals, codes, totals = _cluster_totals(values, clusters)
    N = residuals.shape[0]
    q = (
        np.broadcast_to(np.asarray(probabilities, dtype=float), (N,))
        if np.ndim(probabilities) == 0
        else (np.asarray(probabilities, dtype=float).ravel())
    )
    if q.shape[0] != N:
        raise ValueError(f"probabilities has {q.shape[0]} values, expected {N}")
    if not np.all(np.isfinite(q)) or np.any(q <= 0) or np.any(q > 1):
        raise ValueError("probabilities must be in (0, 1]")
    per_cluster = np.zeros(totals.shape[0])
    per_cluster[codes] = q
    if not np.allclose(per_cluster[codes], q):
        raise ValueError("probabilities must be equal within a cluster")
    return float(np.sum((1 - per_cluster) / per_cluster * totals**2) / N**2)


def cluster_design_effect(*, values: ArrayLike, clusters: ArrayLike | None = None) -> float:
    """How many times the variance of a share's Hajek mean grows when whole ``clusters`` are
    drawn instead of units one by one, at the same rate: sum_a E_a^2 / sum_i (f_i - mean f)^2
    (see the module). 1 when every unit is its own cluster, or when the values do not vary."""
    residuals, _, totals = _cluster_totals(values, clusters)
    spread = float(np.sum(residuals**2))
    if spread <= 0:
        return 1.0
    return float(np.sum(totals**2) / spread)
