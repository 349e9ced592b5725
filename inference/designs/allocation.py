"""Split a human budget across themes, and across the judge's verdict within a theme, where the
labels buy most; and the half-widths the split should give.

A **stratum** is a set of units sampled at random within itself: a theme and a judge verdict (the
units the judge called 1, those it called 0), or a whole theme under the confidence-driven design.
Its ``spread`` S_h is the standard deviation of the residual the human labels correct:

- verdict strata: within a verdict the judge's label is constant, so the PPI++ residual is the
  human label itself and S_h = sqrt(d_h (1 - d_h)), d_h the pilot's disagreement rate in the
  stratum, smoothed as Agresti and Coull smooth a proportion (:func:`disagreement_spread`): no
  disagreement seen in a small pilot is not a perfect judge;
- a theme under the confidence-driven design: the mean of sqrt(c_i (1 - c_i)) over its units
  (``inclusion.spread``), which makes the projection below an upper bound when the confidence is
  calibrated (the design's variance is (mean s)^2 / n - mean(s^2) / N, at most the formula's).

With n_h labels in stratum h of size N_h, theme t (size N_t) gets the stratified variance
V_t = sum_h (N_h / N_t)^2 S_h^2 (1 / n_h - 1 / N_h), and the overall rate (themes weighted by size)
V = sum_t (N_t / N)^2 V_t. The split (:func:`split_budget`) is greedy: every label goes where it
lowers the objective most, the **overall** variance (optimal for that separable convex objective:
Neyman allocation in integers) or the **largest per-theme** variance (each label to the theme
whose variance is largest, in its most useful stratum). Each stratum gets at least ``minimum``
labels (never more than its size), so every unit can be drawn and every stratum's variance can be
estimated. Expected half-widths are z sqrt(V): normal quantile, before floors and t quantiles,
so the intervals shown after drawing are somewhat wider at small n.

Source: Neyman (1934); for PPI with strata and budgets split across them, Fisch et al. 2024
(*Stratified prediction-powered inference for hybrid language model evaluation*).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

from inference.intervals import quantile

OVERALL = "overall"
LARGEST_THEME = "largest-theme"
OBJECTIVES = (OVERALL, LARGEST_THEME)


@dataclass(frozen=True)
class Stratum:
    """A set of units of one theme sampled at random within itself: ``size`` units, ``spread``
    the standard deviation of the residual there."""

    theme: str
    key: str
    size: int
    spread: float


@dataclass(frozen=True)
class Split:
    """Labels per stratum (keyed (theme, key)) and per theme, and the expected half-widths per
    theme and overall at level 1 - alpha."""

    labels: dict[tuple[str, str], int]
    per_theme: dict[str, int]
    halfwidths: dict[str, float]
    overall_halfwidth: float
    objective: str


def disagreement_spread(*, disagreements: int, labels: int, alpha: float = 0.05) -> float:
    """sqrt(d (1 - d)) with d = (disagreements + z^2/2) / (labels + z^2): the smoothed
    disagreement rate of a verdict stratum's pilot labels."""
    if labels < 0 or not (0 <= disagreements <= labels):
        raise ValueError(f"need 0 <= disagreements <= labels, got {disagreements} and {labels}")
    z2 = quantile(alpha=alpha, df=None) ** 2
    rate = (disagreements + z2 / 2) / (labels + z2)
    return math.sqrt(rate * (1 - rate))


def verdict_strata(
    *, theme: str, judged: dict[str, int], pilot: dict[str, tuple[int, int]], alpha: float = 0.05
) -> list[Stratum]:
    """The verdict strata of one theme: ``judged`` maps a verdict (``"1"``, ``"0"``) to the number
    of the theme's units the judge gave it, ``pilot`` maps it to (disagreements, labels) among
    the pilot's human labels of those units. Spread from :func:`disagreement_spread` (a verdict
    the pilot did not reach gets the smoothed rate of 0 labels, 0.5: the worst case). Verdicts
    with no unit are left out."""
    strata = []
    for verdict, size in sorted(judged.items()):
        if size < 0:
            raise ValueError(f"judged[{verdict!r}] must be >= 0, got {size}")
        if size == 0:
            continue
        disagreements, labels = pilot.get(verdict, (0, 0))
        spread = disagreement_spread(disagreements=disagreements, labels=labels, alpha=alpha)
        strata.append(Stratum(theme=theme, key=f"judge {verdict}", size=size, spread=spread))
    return strata


def _term(stratum: Stratum, theme_size: int, n: int) -> float:
    if n >= stratum.size:
        return 0.0
    return (stratum.size / theme_size) ** 2 * stratum.spread**2 * (1 / n - 1 / stratum.size)


def expected_variances(*, strata: Sequence[Stratum], labels: dict[tuple[str, str], int]) -> dict[str, float]:
    """V_t per theme for the given labels per stratum (each at least 1)."""
    sizes: dict[str, int] = {}
    for stratum in strata:
        sizes[stratum.theme] = sizes.get(stratum.theme, 0) + stratum.size
    variances = dict.fromkeys(sizes, 0.0)
    for stratum in strata:
        n = labels[(stratum.theme, stratum.key)]
        if n < 1:
            raise ValueError(f"stratum {stratum.theme}/{stratum.key}: needs at least 1 label")
        variances[stratum.theme] += _term(stratum, sizes[stratum.theme], n)
    return variances


def split_budget(
    *,
    strata: Sequence[Stratum],
    budget: int,
    objective: str = OVERALL,
    alpha: float = 0.05,
    minimum: int = 2,
) -> Split:
    """Labels per stratum for a budget, minimising the ``objective`` (``"overall"``: the overall
    rate's variance; ``"largest-theme"``: the largest per-theme variance), each stratum getting
    at least min(``minimum``, size). The budget must cover those minimums; labels that would
    lower nothing (a full stratum, no spread) are not spent. Raises ValueError on bad input
    (empty or duplicate strata, negative sizes or spreads, an unknown objective)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if not strata:
        raise ValueError("strata: none given")
    keys = [(s.theme, s.key) for s in strata]
    if len(set(keys)) != len(keys):
        raise ValueError("strata: a (theme, key) appears twice")
    for s in strata:
        if s.size < 1 or not (s.spread >= 0 and math.isfinite(s.spread)):
            raise ValueError(f"stratum {s.theme}/{s.key}: size must be >= 1 and spread finite and >= 0")
    labels = {(s.theme, s.key): min(max(1, minimum), s.size) for s in strata}
    if sum(labels.values()) > budget:
        raise ValueError(
            f"budget {budget} is below the {sum(labels.values())} labels the strata's minimums take"
        )
    theme_size: dict[str, int] = {}
    for s in strata:
        theme_size[s.theme] = theme_size.get(s.theme, 0) + s.size
    total = sum(theme_size.values())
    by_key = {(s.theme, s.key): s for s in strata}

    def gain(key: tuple[str, str]) -> float:
        """What one more label in this stratum takes off its theme's variance."""
        s, n = by_key[key], labels[key]
        if n >= s.size:
            return -1.0
        return _term(s, theme_size[s.theme], n) - _term(s, theme_size[s.theme], n + 1)

    left = budget - sum(labels.values())
    if objective == OVERALL:
        # Max-heap of the overall variance's decrease; a stratum's gain falls as it gets labels.
        heap = [(-gain(k) * (theme_size[k[0]] / total) ** 2, k) for k in keys]
        heapq.heapify(heap)
        while left > 0 and heap:
            g, key = heapq.heappop(heap)
            if -g <= 0:
                break
            labels[key] += 1
            left -= 1
            heapq.heappush(heap, (-gain(key) * (theme_size[key[0]] / total) ** 2, key))
    else:
        variances = expected_variances(strata=strata, labels=labels)
        while left > 0:
            open_themes = [t for t in variances if any(gain(k) > 0 for k in keys if k[0] == t)]
            if not open_themes:
                break
            theme = max(open_themes, key=lambda t: (variances[t], t))
            key = max((k for k in keys if k[0] == theme), key=gain)
            variances[theme] -= gain(key)
            labels[key] += 1
            left -= 1
    variances = expected_variances(strata=strata, labels=labels)
    z = quantile(alpha=alpha, df=None)
    per_theme: dict[str, int] = {}
    for (theme, _), n in labels.items():
        per_theme[theme] = per_theme.get(theme, 0) + n
    overall = sum((theme_size[t] / total) ** 2 * v for t, v in variances.items())
    return Split(
        labels=labels,
        per_theme=per_theme,
        halfwidths={t: z * math.sqrt(v) for t, v in variances.items()},
        overall_halfwidth=z * math.sqrt(overall),
        objective=objective,
    )
