"""Confidence intervals of rates: the ``Interval`` every estimator returns, and how one is built
from a variance and kept inside [0, 1].

A rate's interval never leaves [0, 1] where the app builds it from a variance (``bounded``): the
normal interval is cut at the bound and widened to the Wilson score interval at the effective
sample size (:func:`inside_unit`). Intervals computed elsewhere (ppi_py's, old snapshots) keep
their raw bounds in ``lo`` and ``hi`` and are shown clipped (``shown_lo``, ``shown_hi``,
``clipped``). Also the floors a variance may not go under when a few labels show no 0 or no
disagreement (:func:`smoothed_variance`, :func:`rectifier_floor`), and intervals combined over
strata. No database: plain numbers and scipy's quantiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from inference import notes

# Notes of intervals made to respect [0, 1] (shown next to the interval on the page and exports).
WILSON_NOTE = notes.WILSON
CUT_NOTE = notes.CUT
CLIPPED_NOTE = notes.CLIPPED
PAST_NOTE = notes.PAST_BOUND
FEW_EVENTS_NOTE = notes.FEW_EVENTS
# Fewer expected events than this on the near side of a rate's estimate (n_eff min(p, 1 - p)),
# and its normal interval is widened to contain Wilson's (``inside_unit``).
WILSON_EVENTS = 10
# Below this, a variance of 0/1 labels is zero up to rounding.
TINY = 1e-12
# Degrees of freedom past which a t quantile is the normal one.
NORMAL_DF = 10**6


@dataclass(frozen=True)
class Interval:
    """A point estimate and its 1 - alpha confidence interval.

    ``n`` labeled units, ``N`` unlabeled units (0 when the method uses none), ``lam`` the PPI++
    coefficient (None when not applicable), ``df`` the t degrees of freedom (None for a normal
    quantile), ``note`` why an estimate is NaN or an interval infinite or degenerate or how it
    was kept in [0, 1], ``se`` the standard error behind a variance-based interval (None when
    the interval is not mean -/+ q se: ppi_py's, or rebuilt from stored bounds).
    """

    mean: float
    lo: float
    hi: float
    method: str
    alpha: float
    n: int
    N: int = 0
    lam: float | None = None
    df: int | None = None
    note: str = ""
    se: float | None = None
    # What the estimand can be: a rate lies in [0, 1], a difference of two rates in [-1, 1].
    bounds: tuple[float, float] = (0.0, 1.0)

    def __post_init__(self) -> None:
        # The contract every estimator, comparison and gate relies on: an interval is never
        # inverted and holds its estimate (infinite bounds are no bound; NaN, no interval). The
        # shown interval (``shown_*``: clipped to [0, 1]) then holds the shown estimate too.
        if any(math.isnan(value) for value in (self.mean, self.lo, self.hi)):
            return
        if not self.lo <= self.mean <= self.hi:
            raise ValueError(
                f"{self.method}: the interval [{self.lo!r}, {self.hi!r}] does not hold its estimate "
                f"{self.mean!r}"
            )

    @property
    def halfwidth(self) -> float:
        return (self.hi - self.lo) / 2

    @property
    def shown_mean(self) -> float:
        """The estimate within ``bounds`` (ppi_py's study estimate of a rate may fall just
        outside [0, 1]; the rate cannot). NaN stays NaN."""
        return clip_bound(self.mean, self.bounds)

    @property
    def shown_lo(self) -> float:
        """``lo`` within ``bounds`` (NaN and infinities kept: no interval is no interval)."""
        return clip_bound(self.lo, self.bounds)

    @property
    def shown_hi(self) -> float:
        """``hi`` within ``bounds`` (NaN and infinities kept)."""
        return clip_bound(self.hi, self.bounds)

    def excludes(self, value: float) -> bool:
        """Whether the interval lies wholly on one side of ``value`` (0 for a difference: the
        two estimates differ at its level)."""
        return self.lo > value or self.hi < value

    @property
    def clipped(self) -> bool:
        """A finite bound or the estimate lies outside [0, 1] and is shown clipped (study method:
        ppi_py's raw numbers stay in ``mean``, ``lo`` and ``hi``)."""
        return self.shown_lo != self.lo or self.shown_hi != self.hi or not _same(self.shown_mean, self.mean)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def clip_bound(value: float | None, bounds: tuple[float, float] = (0.0, 1.0)) -> float:
    """A rate's interval bound as shown: a finite value clipped to ``bounds`` ([0, 1]); None
    becomes NaN; NaN and infinities are kept (an infinite interval is shown as none)."""
    if value is None:
        return math.nan
    value = float(value)
    if not math.isfinite(value):
        return value
    return min(bounds[1], max(bounds[0], value))


def wilson(*, p: float, n: float, q: float) -> tuple[float, float]:
    """Wilson score interval of a proportion ``p`` observed on ``n`` (possibly effective,
    fractional) units with quantile ``q``: (p + q^2/2n -/+ q sqrt(p(1-p)/n + q^2/4n^2)) /
    (1 + q^2/n). Always inside [0, 1] for p in [0, 1]."""
    p = min(1.0, max(0.0, float(p)))
    q2n = q * q / n
    centre = (p + q2n / 2) / (1 + q2n)
    half = q / (1 + q2n) * math.sqrt(p * (1 - p) / n + q2n / (4 * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def quantile(*, alpha: float, df: float | None) -> float:
    """The two-sided 1 - alpha quantile: Student's t with ``df`` degrees of freedom, the normal
    one without (or past ``NORMAL_DF``, where they agree to six digits and scipy's t takes no
    integer that large); infinite with no degree of freedom. The one quantile of the app.

    Remembered per (alpha, df): a page asks for the same few again and again (a report with
    categories some 200 times), and scipy takes some 40 microseconds each."""
    return _quantile(float(alpha), None if df is None else float(df))


@lru_cache(maxsize=4096)
def _quantile(alpha: float, df: float | None) -> float:
    if df is None or df > NORMAL_DF:
        return float(norm.ppf(1 - alpha / 2))
    if df <= 0:
        return math.inf
    return float(student_t.ppf(1 - alpha / 2, df))


def standard_error(interval: Interval) -> float:
    """The standard error behind an interval: ``se`` when the interval carries it (a Wilson
    interval's half-width is not q se), else its half-width over the quantile it was built with
    (its own alpha and degrees of freedom)."""
    if interval.se is not None:
        return interval.se
    return interval.halfwidth / quantile(alpha=interval.alpha, df=interval.df)


def nan_interval(*, method: str, alpha: float, n: int, N: int = 0, note: str) -> Interval:
    nan = math.nan
    return Interval(mean=nan, lo=nan, hi=nan, method=method, alpha=alpha, n=n, N=N, note=note)


def unbounded_interval(*, mean: float, method: str, alpha: float, n: int, N: int = 0, **extra) -> Interval:
    return Interval(mean=mean, lo=-math.inf, hi=math.inf, method=method, alpha=alpha, n=n, N=N, **extra)


def from_variance(
    *,
    mean: float,
    variance: float,
    alpha: float,
    df: int | None,
    method: str,
    n: int,
    N: int,
    bounded: bool = False,
    least_n: float | None = None,
    note: str = "",
    **extra,
) -> Interval:
    """mean -/+ q sqrt(variance). ``bounded``: a rate, whose interval :func:`inside_unit` keeps
    inside [0, 1] and widens where the normal approximation fails near a bound, with ``least_n``
    (default ``n``) the fewest labels the estimate is worth (:func:`effective_count`)."""
    q = quantile(alpha=alpha, df=df)
    half = q * math.sqrt(variance)
    lo, hi = mean - half, mean + half
    if bounded:
        least = n if least_n is None else least_n
        mean, lo, hi, why = inside_unit(mean=mean, variance=variance, q=q, n=least)
        note = notes.joined([part for part in (note, why) if part])
    return Interval(
        mean=mean,
        lo=lo,
        hi=hi,
        method=method,
        alpha=alpha,
        n=n,
        N=N,
        df=df,
        note=note,
        se=math.sqrt(variance),
        **extra,
    )


def effective_count(*, codes: np.ndarray, G: int, w: np.ndarray | None = None) -> float:
    """Kish's effective number of independent labels of a weighted, clustered sample: (sum_g
    W_g)^2 / sum_g W_g^2 over the clusters' total weights W_g (their sizes without weights). The
    number of labels with equal weights and one label per cluster; never more than the G
    clusters, since the labels of one answer are not independent."""
    totals = np.bincount(codes, weights=None if w is None else w, minlength=G)
    squares = float(np.sum(totals**2))
    return float(np.sum(totals)) ** 2 / squares if squares > 0 else 0.0


def honest_df(*, pieces: np.ndarray, deviations: np.ndarray, limit: int) -> int:
    """Degrees of freedom of a variance estimated as sum_i a_i e_i^2 (``pieces`` a_i, the design's
    weight of each squared deviation e_i: one per unit, or per cluster with the cluster's total),
    by Satterthwaite's rule with the deviations' own fourth moment: 2 V^2 / Var(V), Var(V)
    estimated as sum_i a_i^2 (e_i^4 - s^4), s^2 = V / sum_i a_i. For normal deviations it is
    Kish's effective number of the a_i; a few large deviations (a judge sure and wrong, drawn at
    the floor rate with a weight of hundreds; two questions carrying most of a difference) make
    the variance estimate itself unsure, and the t quantile takes it into account. At most
    ``limit``, at least 1."""
    V = float(np.sum(pieces * deviations**2))
    if V <= 0:
        return max(1, limit)
    s2 = V / float(np.sum(pieces))
    spread = float(np.sum(pieces**2 * (deviations**4 - s2**2)))
    if spread <= 0:
        return max(1, limit)
    return int(max(1, min(limit, math.floor(2 * V**2 / spread))))


def keep_around(
    *, estimate: float, lo: float, hi: float, bounds: tuple[float, float] = (0.0, 1.0)
) -> tuple[float, float]:
    """``[lo, hi]`` cut to ``bounds`` and never on one side of ``estimate`` (itself within
    ``bounds``): the one rule that keeps an interval from inverting when an estimate past a
    bound pulls it outside (1.3 -/+ 0.2 cut to [0, 1] would be [1.1, 1.0])."""
    low, high = bounds
    return max(low, min(lo, estimate)), min(high, max(hi, estimate))


def inside_unit(*, mean: float, variance: float, q: float, n: float = 0) -> tuple[float, float, float, str]:
    """(mean, lo, hi, note) of a rate's interval from its estimate and variance: the normal (or
    t) interval mean -/+ q sqrt(variance), made honest near the bounds of [0, 1] (note "" when it
    is left as it is).

    The estimate is clipped to [0, 1] (a PPI++ estimate may fall just outside; the rate cannot)
    and the interval cut at the bounds, which covers exactly when the normal one does. The normal
    interval is too short on the inner side near a bound, where its variance p (1 - p) is
    estimated too small whenever the rare events happened to be few: it is widened to contain
    the Wilson score interval at the effective sample size n_eff = p (1 - p) / variance, the
    number of simple-random-sample labels with that variance (the Kish design-effect reading),
    when it leaves [0, 1] or when fewer than ``WILSON_EVENTS`` events are expected on the near
    side (n_eff min(p, 1 - p) < 10, the usual rule for the normal approximation of a
    proportion). Wilson's alone would pull the outer bound in and miss a truth that a biased
    estimate (a PPI++ judge's bias the floors make room for) leaves near the bound: 89% instead
    of 100% coverage in bench/coverage_bench.py --extreme; the union of the two covers whenever
    either does. Without the near-side rule, human-only intervals at 300 labels and a 5% rate
    covered 92.5-94.4% in bench/coverage_grid.py; with it 95.8-97.6%, while the width at a 50%
    rate moved by less than 1%.

    ``n``, the fewest labels the estimate is worth (``effective_count``: the labels, or their
    clusters), is the least n_eff taken: very near a bound p (1 - p) shrinks faster than a
    variance held up by a floor, and n_eff would fall toward 0 with Wilson's interval toward
    [0, 1] (0.9998 with 20 agreeing labels gave [0.014, 1]). At exactly 0 or 1 (every label at
    the bound) p (1 - p) is 0 and says nothing of n_eff: Wilson's interval at ``n`` itself, whose
    far bound q^2 / (n + q^2) is the rule of three's (0 of 60 labels: [0, 6%], where the floored
    variance alone gave [0, 4.5%] and covered 17% of such samples)."""
    p = min(1.0, max(0.0, mean))
    half = q * math.sqrt(variance)
    if mean - half > 1 or mean + half < 0:
        # The whole normal interval lies past a bound (an estimate far past it with a small
        # variance): cut, it would be empty. Centred on the clipped estimate instead, and no
        # narrower than Wilson's at the labels it rests on: never [100%, 100%].
        lo, hi = keep_around(estimate=p, lo=p - half, hi=p + half)
        if n >= 1:
            wilson_lo, wilson_hi = wilson(p=p, n=n, q=q)
            lo, hi = min(lo, wilson_lo), max(hi, wilson_hi)
        return p, lo, hi, PAST_NOTE
    lo, hi = keep_around(estimate=p, lo=mean - half, hi=mean + half)
    left = mean - half < 0 or mean + half > 1
    n_eff = max(p * (1 - p) / variance, n) if 0 < p < 1 and variance > 0 else float(n)
    few = n_eff * min(p, 1 - p) < WILSON_EVENTS
    if (left or few) and n_eff >= 1:
        wilson_lo, wilson_hi = wilson(p=p, n=n_eff, q=q)
        widened = wilson_lo < lo or wilson_hi > hi
        lo, hi = min(lo, wilson_lo), max(hi, wilson_hi)
        if left:
            return p, lo, hi, WILSON_NOTE
        return p, lo, hi, FEW_EVENTS_NOTE if widened else ""
    return p, lo, hi, CUT_NOTE if left else ""


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float; ValueError unless it lies strictly between 0 and 1."""
    alpha = float(alpha)
    if not (0 < alpha < 1):
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha}")
    return alpha


def wald_interval(*, successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The Wald interval p +- z_(1-alpha/2) sqrt(p(1-p)/n), clipped to [0, 1].

    Its known weakness: at p = 0 or p = 1 the estimated variance is 0 and the interval
    collapses to the single point p, although the true rate may well differ (with n = 20 and no
    failure observed, a rate as low as ~0.83 is still plausible at 95%). Coverage is also poor
    for small n or p near the bounds. Raises ValueError when n < 1, successes is outside [0, n]
    or alpha is outside (0, 1).
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    if not 0 <= successes <= n:
        raise ValueError("successes must lie between 0 and n")
    check_alpha(alpha)
    p = successes / n
    z = quantile(alpha=alpha, df=None)
    half = z * math.sqrt(p * (1 - p) / n)
    return (max(0.0, p - half), min(1.0, p + half))


def smoothed_variance(*, count: float, n: int, alpha: float) -> float:
    """p (1 - p) of a 0/1 variable seen ``count`` times in ``n``, with p smoothed as Agresti and
    Coull smooth a proportion (z^2 / 2 pseudo-successes and as many pseudo-failures)."""
    z2 = quantile(alpha=alpha, df=None) ** 2
    rate = (count + z2 / 2) / (n + z2)
    return rate * (1 - rate)


def rectifier_floor(*, labels: np.ndarray, preds: np.ndarray, lam: float, alpha: float, G: int) -> float:
    """The least variance the labeled rectifier ``Y - lam * Yhat = (1 - lam) Y + lam (Y - Yhat)``
    may claim: ((1 - lam)^2 v_Y + lam^2 v_D) / G, with v_Y and v_D the smoothed variances of the
    human labels and of the human/judge disagreements.

    With ~30 labels a judge that errs 8% of the time agrees with all of them about one time in
    ten; the rectifier then has no variance, the interval shrinks to the judge-only one and misses
    the judge's bias (28% coverage in bench/coverage_bench.py). Likewise a theme whose ~12 labels
    are all 1 is not a theme where the rate is surely 100%. Zero observed disagreements (or
    zeros) do not show a perfect judge (or a perfect theme), only a rare event: the floor gives
    them the width of one."""
    n = labels.shape[0]
    v_labels = smoothed_variance(count=float(np.sum(labels)), n=n, alpha=alpha)
    v_disagreements = smoothed_variance(count=float(np.sum(labels != preds)), n=n, alpha=alpha)
    return ((1 - lam) ** 2 * v_labels + lam**2 * v_disagreements) / G


def effective_n(*, theta: float, halfwidth: float, alpha: float, reference: Interval | None = None) -> float:
    """Human labels a human-only interval would need for the same half-width.

    Without ``reference`` (the study's formula): z^2 theta (1 - theta) / halfwidth^2, z the
    1 - alpha/2 normal quantile. With ``reference``, the human-only interval shown next to the
    PPI++ one (robust method): n_ref (halfwidth_ref / halfwidth)^2, a half-width shrinking as
    1 / sqrt(n). The study's formula reads theta (1 - theta) where the human-only interval has
    its own variance (design effect, t quantile, floors): near 0 or 1 it could call an interval
    narrower than the human-only one worth fewer labels than it used; this one cannot (a narrower
    interval is worth more than n_ref labels). When the reference has no finite positive
    half-width, the formula. NaN when the half-width is 0 or NaN; 0 when it is infinite."""
    alpha = check_alpha(alpha)
    if math.isnan(halfwidth) or halfwidth == 0:
        return math.nan
    if (
        reference is not None
        and reference.n
        and math.isfinite(reference.halfwidth)
        and reference.halfwidth > 0
    ):
        return reference.n * (reference.halfwidth / halfwidth) ** 2
    z = quantile(alpha=alpha, df=None)
    return z**2 * theta * (1 - theta) / halfwidth**2


def stratified_combine(
    *, parts: list[tuple[Interval, int]], alpha: float, method: str, bounded: bool = False
) -> Interval:
    """Stratified estimate from per-group intervals and group sizes N_k: mean sum_k (N_k/N)
    mean_k, variance sum_k (N_k/N)^2 var_k with var_k = (halfwidth_k / q_k)^2, q_k the quantile of
    part k at its own alpha and df. Groups of size 0 are left out.

    Quantile: normal when no part has df; otherwise t with Satterthwaite degrees of freedom
    (sum a_k var_k)^2 / sum (a_k var_k)^2 / df_k, normal parts counting as infinite df, rounded
    down (conservative, and df stays an integer). ``method`` is the result's method label, ``n``
    and ``N`` are summed. Any part without an estimate makes the result NaN, with a note.
    ``bounded`` (the robust method): an interval leaving [0, 1] becomes Wilson's at the effective
    sample size, as for one group.
    """
    alpha = check_alpha(alpha)
    kept = [(part, size) for part, size in parts if size > 0]
    n = sum(part.n for part, _ in kept)
    N = sum(part.N for part, _ in kept)
    if not kept:
        return nan_interval(method=method, alpha=alpha, n=n, N=N, note=notes.NO_GROUPS)
    missing = sum(1 for part, _ in kept if math.isnan(part.mean) or math.isnan(part.halfwidth))
    if missing:
        return nan_interval(
            method=method,
            alpha=alpha,
            n=n,
            N=N,
            note=notes.GROUPS_WITHOUT_ESTIMATE % {"missing": missing, "groups": len(kept)},
        )
    total = sum(size for _, size in kept)
    shares = [size / total for _, size in kept]
    mean = sum(share * part.mean for share, (part, _) in zip(shares, kept, strict=True))
    if any(math.isinf(part.halfwidth) for part, _ in kept):
        return unbounded_interval(
            mean=mean, method=method, alpha=alpha, n=n, N=N, note=notes.GROUP_WITHOUT_VARIANCE
        )
    terms = [share**2 * standard_error(part) ** 2 for share, (part, _) in zip(shares, kept, strict=True)]
    variance = sum(terms)
    with_df = [(term, part.df) for term, (part, _) in zip(terms, kept, strict=True) if part.df is not None]
    denominator = sum(term**2 / df for term, df in with_df)
    # A part's variance so small that its square is subnormal makes the ratio overflow: those
    # parts weigh nothing, and the degrees of freedom are then infinite (the normal quantile).
    ratio = variance**2 / denominator if denominator > 0 else math.nan
    if math.isfinite(ratio):
        df: int | None = max(1, math.floor(ratio))
    elif variance == 0 and with_df:
        df = min(df for _, df in with_df)
    else:
        # Only normal parts carry variance: infinite degrees of freedom.
        df = None
    return from_variance(
        mean=mean, variance=variance, alpha=alpha, df=df, method=method, n=n, N=N, bounded=bounded
    )
