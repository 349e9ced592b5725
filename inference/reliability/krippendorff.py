"""Krippendorff's alpha for nominal data, and its bootstrap interval over units. Django-free.

alpha = 1 - D_o / D_e, written for nominal data (Krippendorff, "Computing Krippendorff's
Alpha-Reliability", 2011) as

    alpha = 1 - (n - 1) * sum_u D_u / (n^2 - sum_c n_c^2),   D_u = (m_u^2 - sum_c n_uc^2) / (m_u - 1)

over the *pairable* values: those of units holding at least two (m_u >= 2); n_uc counts the
values c of unit u, n_c = sum_u n_uc and n = sum_c n_c. Any number of raters per unit, missing
values allowed, no rater identity needed. As for Cohen's kappa (``inference.reliability.agreement``), alpha is
**undefined** (None, a dash on the pages) when the expected disagreement is 0: every pairable
value is one and the same, or there is no pairable value at all.

Hand-written rather than the ``krippendorff`` package: the nominal case is the few lines below,
the bootstrap needs the per-unit terms anyway, and the tests check it against the paper's worked
examples.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inference.estimators.bootstrap import pattern_resamples, percentile_bounds

# The bootstrap's defaults: resamples of the units, and the seed that makes a page reproducible.
RESAMPLES = 1000
SEED = 0
# The cost bound: resamples x distinct unit patterns stays under MAX_DRAWS, so with more
# patterns than MAX_DRAWS / RESAMPLES (20,000) fewer resamples are drawn, never fewer than
# MIN_RESAMPLES. Pairs of binary labels have three patterns, whatever the number of units.
MAX_DRAWS = 20_000_000
MIN_RESAMPLES = 200


@dataclass(frozen=True)
class AlphaInterval:
    """A bootstrap percentile interval of alpha: ``lo``, ``hi`` at ``level``, from ``resamples``
    resamples of the units, ``undefined`` of which gave no alpha (left out)."""

    lo: float
    hi: float
    level: float
    resamples: int
    undefined: int


def _patterns(units: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct pairable units, as rows [D_u, n_uc for each category c], and how many units
    share each. Units with the same values (in any order) have the same terms: counting them
    first keeps the arithmetic to a few rows whatever the number of units."""
    shared = Counter(tuple(sorted(values)) for values in units if len(values) >= 2)
    categories = sorted({value for values in shared for value in values})
    index = {value: i for i, value in enumerate(categories)}
    rows = []
    for values in shared:
        counts = np.zeros(len(categories))
        for value in values:
            counts[index[value]] += 1
        m = counts.sum()
        rows.append([(m * m - (counts * counts).sum()) / (m - 1), *counts])
    patterns = np.array(rows, dtype=float).reshape(len(rows), 1 + len(categories))
    return patterns, np.array(list(shared.values()), dtype=np.int64)


def _alpha_from_sums(sums: np.ndarray) -> np.ndarray:
    """alpha for each row of summed terms ([sum D_u, n_c...]); NaN where undefined."""
    observed = sums[:, 0]
    counts = sums[:, 1:]
    n = counts.sum(axis=1)
    expected = n * n - (counts * counts).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1 - (n - 1) * observed / expected
    return np.where(expected > 0, alpha, np.nan)


def nominal_alpha(units: Sequence[Sequence[int]]) -> float | None:
    """Krippendorff's alpha (nominal) of the values given to each unit (``units[u]`` lists the
    values unit u received, one per rater who rated it), or None when undefined."""
    return _alpha(*_patterns(units))


def _alpha(patterns: np.ndarray, counts: np.ndarray) -> float | None:
    if not len(patterns):
        return None
    alpha = float(_alpha_from_sums((counts @ patterns)[np.newaxis, :])[0])
    return None if np.isnan(alpha) else alpha


def bootstrap_alpha(
    units: Sequence[Sequence[int]],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = 0.95,
) -> AlphaInterval | None:
    """Percentile bootstrap interval of :func:`nominal_alpha`: the pairable units are drawn with
    replacement ``resamples`` times (seeded: the same data give the same interval), alpha is
    computed on each, and the interval is the middle ``level`` of the defined ones.

    Units with the same per-unit terms (the same counts of each value) are interchangeable, so a
    resample is drawn as how many times each distinct pattern comes up (a multinomial draw, the
    same law as drawing units with replacement): the cost is resamples x patterns, whatever the
    number of units, and fewer resamples are drawn when the patterns are many (``MAX_DRAWS``).
    None when alpha itself is undefined or fewer than two units are pairable.
    """
    patterns, counts = _patterns(units)
    size = int(counts.sum())
    if size < 2 or _alpha(patterns, counts) is None:
        return None
    drawn = pattern_resamples(
        counts, resamples=resamples, seed=seed, max_draws=MAX_DRAWS, min_resamples=MIN_RESAMPLES
    )
    every = _alpha_from_sums(drawn @ patterns)
    defined = every[~np.isnan(every)]
    if not len(defined):
        return None
    lo, hi = percentile_bounds(defined, level=level)
    return AlphaInterval(
        lo=lo, hi=hi, level=level, resamples=len(drawn), undefined=int(len(every) - len(defined))
    )
