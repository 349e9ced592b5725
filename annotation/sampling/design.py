"""Stratified K-means sampling of units for human annotation.

The design: within each theme, K-means on the units' embeddings makes K clusters; in each cluster
a seeded random permutation of its unit ids is drawn and its first m units go to the humans. A unit
of a cluster of size N is then drawn with probability m / N (1 when N <= m), so the sample needs
design weights N / m (:func:`design_weights`); an unweighted mean would be biased.

Everything here is plain numpy/scikit-learn on ids, theme names and arrays; no database: the caller
stores the draws (one row per ``Draw``, keyed by unit id). The typical sequence::

    k = allocate_clusters(theme_sizes=sizes, budget=140, per_cluster=3)
    draws = draw_stratified(unit_ids=ids, themes=themes, embeddings=vectors,
                            k_per_theme=k, per_cluster=3, seed=seed)
    # later, with a larger budget (or a larger m):
    k2 = allocate_clusters(theme_sizes=sizes, budget=300, per_cluster=3)
    everything = redraw_with_keep(previous=draws, ..., k_per_theme=k2, per_cluster=3, seed=seed)
    added = top_up(previous=draws, ..., k_per_theme=k2, per_cluster=3, seed=seed)

Reproducibility: the same ids, themes, embeddings, K, m and seed give the same draws, whatever the
order of the inputs. Each theme's randomness derives from (seed, theme) only, so adding or removing
a theme, or changing another theme's K, leaves a theme's draws unchanged. K-means itself is
deterministic for a given random state on one machine; bit-for-bit equality across machines or
BLAS builds is not promised by scikit-learn.

Its length is one design's: K-means within themes, the draws, the inclusion probabilities and
the top-ups share their arrays; no database.
"""

from __future__ import annotations

import hashlib
import math
import operator
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from django.utils.translation import gettext_lazy as _
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.exceptions import ConvergenceWarning

from annotation.errors import FieldError, refusal

# Above this many units in a theme, MiniBatchKMeans: full K-means then takes tens of seconds for a few
# hundred clusters, and the sample only needs clusters of similar units, not the best inertia.
MINIBATCH_ABOVE = 20_000
KMEANS_N_INIT = 3
MINIBATCH_SIZE = 4096


@dataclass(frozen=True)
class Draw:
    """One unit of the sample: its theme, cluster, the cluster's size and its inclusion probability.

    ``rank`` is the unit's order of drawing within its cluster (0-based).
    """

    unit_id: int
    theme: str
    cluster: int
    cluster_size: int
    inclusion_probability: float
    rank: int


def allocate_clusters(
    *,
    theme_sizes: Mapping[str, int],
    budget: int,
    per_cluster: int = 3,
    per_theme_budget: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """K (number of clusters) per theme for a human budget of ``budget`` labels, m = ``per_cluster``.

    Returns a dict with every theme of ``theme_sizes`` (sorted), 0 for an empty theme. Rules:

    - Without ``per_theme_budget``, ``budget // m`` clusters are split across the non-empty themes
      in proportion to their sizes, rounded by largest remainder, so ``sum(K) * m <= budget``.
    - Every non-empty theme gets at least one cluster.
    - K never exceeds ceil(size / m): with that many clusters drawing m per cluster already takes
      about the whole theme, so more clusters would buy nothing. When every theme reaches that
      ceiling the allocation spends less than the budget.
    - Between those bounds the split is proportional (the clusters a bounded theme does not take go
      to the others, in proportion to their sizes).
    - ``per_theme_budget`` gives some themes (or all) their own budget: K = min(ceil(size / m),
      budget_t // m), 0 when budget_t is 0. What ``budget`` leaves after them is split as above
      among the other non-empty themes.

    Raises ValueError when m < 1, the budget is below m, a size or budget is negative, a theme of
    ``per_theme_budget`` is unknown or has a budget below m (and above 0), the explicit budgets
    exceed ``budget``, what is left cannot give one cluster to each remaining non-empty theme, or
    there is nothing to sample.
    """
    per_cluster = _count(per_cluster, "per_cluster", minimum=1)
    budget = _count(budget, "budget")
    if budget < per_cluster:
        raise FieldError(
            "budget",
            refusal(
                _("budget: %(budget)s is below per_cluster = %(per_cluster)s, not enough for one cluster"),
                budget=repr(budget),
                per_cluster=per_cluster,
            ),
        )
    theme_sizes = {theme: _count(size, f"theme_sizes[{theme!r}]") for theme, size in theme_sizes.items()}
    explicit = {
        theme: _count(value, f"per_theme_budget[{theme!r}]")
        for theme, value in (per_theme_budget or {}).items()
    }
    unknown = sorted(set(explicit) - set(theme_sizes))
    if unknown:
        raise FieldError(
            "per_theme_budget",
            refusal(_("per_theme_budget: unknown themes %(themes)s"), themes=", ".join(map(repr, unknown))),
        )
    caps = {theme: math.ceil(size / per_cluster) for theme, size in theme_sizes.items()}
    allocation = {theme: 0 for theme in theme_sizes}

    for theme, theme_budget in explicit.items():
        if 0 < theme_budget < per_cluster:
            raise FieldError(
                "per_theme_budget",
                refusal(
                    _(
                        "per_theme_budget[%(theme)s]: %(budget)s is below per_cluster = %(per_cluster)s, "
                        "not enough for one cluster (give 0 to leave the theme out)"
                    ),
                    theme=repr(theme),
                    budget=theme_budget,
                    per_cluster=per_cluster,
                ),
            )
        allocation[theme] = min(caps[theme], theme_budget // per_cluster)
    left = budget - sum(explicit.values())
    if left < 0:
        raise FieldError(
            "per_theme_budget",
            refusal(
                _(
                    "per_theme_budget: the themes' budgets add up to %(total)s, "
                    "more than the budget %(budget)s"
                ),
                total=budget - left,
                budget=budget,
            ),
        )

    others = {t: size for t, size in theme_sizes.items() if t not in explicit and size > 0}
    if others:
        clusters = left // per_cluster
        if clusters < len(others):
            raise FieldError(
                "budget",
                refusal(
                    _(
                        "budget: %(left)s labels for the %(themes)s non-empty themes without their own "
                        "budget; each needs at least %(per_cluster)s (one cluster), so at least %(needed)s"
                    )
                    if explicit
                    else _(
                        "budget: %(left)s labels for the %(themes)s non-empty themes; each needs at least "
                        "%(per_cluster)s (one cluster), so at least %(needed)s"
                    ),
                    left=left,
                    themes=len(others),
                    per_cluster=per_cluster,
                    needed=len(others) * per_cluster,
                ),
            )
        allocation.update(_proportional(sizes=others, total=clusters, caps=caps))
    if not any(allocation.values()):
        raise ValueError("nothing to sample: every theme is empty or has a budget of 0")
    return {theme: allocation[theme] for theme in sorted(allocation)}


def _proportional(*, sizes: Mapping[str, int], total: int, caps: Mapping[str, int]) -> dict[str, int]:
    """Split ``total`` (>= number of themes) in proportion to ``sizes`` within [1, cap] per theme."""
    if sum(caps[t] for t in sizes) <= total:
        return {t: caps[t] for t in sizes}

    def quotas(scale: float) -> dict[str, float]:
        return {t: min(float(caps[t]), max(1.0, scale * size)) for t, size in sizes.items()}

    # The bounded quotas grow continuously with the scale: bisect for the one that spends `total`.
    low, high = 0.0, max(caps[t] / size for t, size in sizes.items())
    for _step in range(200):
        middle = (low + high) / 2
        if sum(quotas(middle).values()) <= total:
            low = middle
        else:
            high = middle
    exact = quotas(low)
    allocation = {t: min(caps[t], max(1, math.floor(q))) for t, q in exact.items()}
    left = total - sum(allocation.values())
    order = sorted(sizes, key=lambda t: (-(exact[t] - math.floor(exact[t])), -sizes[t], t))
    while left > 0:
        for theme in order:
            if left and allocation[theme] < caps[theme]:
                allocation[theme] += 1
                left -= 1
    return allocation


def draw_stratified(
    *,
    unit_ids: Sequence[int],
    themes: Sequence[str],
    embeddings: np.ndarray,
    k_per_theme: Mapping[str, int],
    per_cluster: int,
    seed: int,
) -> list[Draw]:
    """Draw ``per_cluster`` units at random from each of the K K-means clusters of every theme.

    ``unit_ids``, ``themes`` and the rows of ``embeddings`` are parallel; ids must be unique. Every
    theme present needs an entry in ``k_per_theme`` (0 leaves the theme out); K may not exceed the
    theme's number of units. Per theme, in sorted theme order:

    - K-means (``MiniBatchKMeans`` above ``MINIBATCH_ABOVE`` units) with a random state derived
      from (seed, theme); clusters are numbered 0..K-1 by their smallest unit id. When the theme
      has fewer distinct embeddings than K, K-means finds fewer clusters and fewer are numbered.
    - In each cluster, a permutation of its unit ids seeded by (seed, theme, cluster); its first
      ``per_cluster`` units are drawn, with ranks 0, 1, ... in that order.
    - Each draw records its cluster, the cluster's size N and inclusion probability
      min(per_cluster, N) / N.

    Returns the draws sorted by theme, cluster and rank. The same arguments give the same list,
    whatever the order of the units, and a larger ``per_cluster`` extends each cluster's draws
    with the next units of the same permutation. Raises ValueError on inconsistent inputs.
    """
    return redraw_with_keep(
        previous=[],
        unit_ids=unit_ids,
        themes=themes,
        embeddings=embeddings,
        k_per_theme=k_per_theme,
        per_cluster=per_cluster,
        seed=seed,
    )


def redraw_with_keep(
    *,
    previous: Sequence[Draw],
    unit_ids: Sequence[int],
    themes: Sequence[str],
    embeddings: np.ndarray,
    k_per_theme: Mapping[str, int],
    per_cluster: int,
    seed: int,
) -> list[Draw]:
    """The full sample after a top-up: every unit of ``previous`` kept, fresh draws where needed.

    Clusters exactly as :func:`draw_stratified` does with these arguments, then, in each cluster,
    walks the same seeded permutation: the previously drawn units of the cluster come first (ranks
    0, 1, ... in permutation order), then units not drawn before, until the cluster holds
    ``per_cluster`` units (or all of them). A cluster that already holds ``per_cluster`` or more
    previous units gets no fresh draw. Every draw's inclusion probability is n / N, where n is the
    number of units the cluster now holds and N its size.

    Two cases, decided by the data rather than by a flag:

    - Same embeddings, same seed and the same K for a theme, larger ``per_cluster`` (m -> m'): the
      clustering is reproduced, the previous units are the first m of each permutation and the fresh
      ones are ranks m..m'-1. The result equals ``draw_stratified`` with m', and the probabilities
      m' / N are exact for every unit, old and new. Only the probabilities of previous draws change.
    - Any other change (usually a larger K): the theme is re-clustered and previous units are
      recorded in their new clusters, with new sizes and ranks. Their probabilities n / N are then
      approximate, and so are those of the fresh units sharing a cluster with them: they are
      conditional on the new clustering, as if the previous units had been drawn inside it, which
      they were not. n / N keeps each cluster's design weights adding up to its size. Keeping the
      previous units spends no label twice, at that cost. A new cluster may hold more than
      ``per_cluster`` previous units; all stay, so the sample can exceed K * m.

    ``previous`` units must still be among ``unit_ids``, with the same theme, and their theme must
    have K >= 1. Returns the full list, sorted like :func:`draw_stratified`; store it in place of
    the previous one (units keyed by id). Raises ValueError on inconsistent inputs.
    """
    per_cluster = _count(per_cluster, "per_cluster", minimum=1)
    ids, theme_of, vectors = _prepare(unit_ids=unit_ids, themes=themes, embeddings=embeddings)
    members_by_theme: dict[str, list[int]] = {}
    for row, theme in enumerate(theme_of):
        members_by_theme.setdefault(theme, []).append(row)
    k_per_theme = {theme: _count(k, f"k_per_theme[{theme!r}]") for theme, k in k_per_theme.items()}
    _check_k(k_per_theme=k_per_theme, sizes={t: len(rows) for t, rows in members_by_theme.items()})
    kept = _check_previous(previous=previous, ids=ids, theme_of=theme_of, k_per_theme=k_per_theme)

    draws: list[Draw] = []
    for theme in sorted(members_by_theme):
        k = k_per_theme[theme]
        if k == 0:
            continue
        rows = np.asarray(members_by_theme[theme])
        draws.extend(
            _draw_theme(
                theme=theme,
                ids=ids[rows],
                vectors=vectors[rows],
                k=k,
                per_cluster=per_cluster,
                entropy=_theme_entropy(seed=seed, theme=theme),
                kept=kept,
            )
        )
    return draws


def top_up(
    *,
    previous: Sequence[Draw],
    unit_ids: Sequence[int],
    themes: Sequence[str],
    embeddings: np.ndarray,
    k_per_theme: Mapping[str, int],
    per_cluster: int,
    seed: int,
) -> list[Draw]:
    """Only the units a top-up adds to ``previous``: :func:`redraw_with_keep` minus previous units.

    With the same K and a larger ``per_cluster`` these are the next ranks of each cluster's
    permutation; with a larger K they fill the new clusters that hold fewer than ``per_cluster``
    previous units. The returned draws carry the probabilities of the updated sample, but the
    previous draws' records change too (probability, and after a re-cluster cluster, size and
    rank): a store of the sample must refresh them from :func:`redraw_with_keep`.
    """
    drawn = {draw.unit_id for draw in previous}
    everything = redraw_with_keep(
        previous=previous,
        unit_ids=unit_ids,
        themes=themes,
        embeddings=embeddings,
        k_per_theme=k_per_theme,
        per_cluster=per_cluster,
        seed=seed,
    )
    return [draw for draw in everything if draw.unit_id not in drawn]


def design_weights(*, inclusion_probabilities: Sequence[float] | np.ndarray) -> np.ndarray:
    """Design weights 1 / p for the given inclusion probabilities (each in (0, 1]), as float64.

    Raises ValueError on a probability outside (0, 1] or not finite.
    """
    probabilities = np.asarray(inclusion_probabilities, dtype=np.float64)
    bad = ~np.isfinite(probabilities) | (probabilities <= 0) | (probabilities > 1)
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        raise FieldError(
            "inclusion_probabilities",
            refusal(
                _("inclusion_probabilities[%(position)s]: %(value)s is not in (0, 1]"),
                position=position,
                value=repr(probabilities.flat[position]),
            ),
        )
    return 1.0 / probabilities


MUST_BE_AN_INTEGER = _("%(name)s: must be an integer, got %(value)s")


def _count(value: object, name: str, *, minimum: int = 0) -> int:
    """``value`` as an int (numpy integers accepted) of at least ``minimum``, else ValueError."""
    if isinstance(value, bool):
        raise FieldError(name, refusal(MUST_BE_AN_INTEGER, name=name, value=repr(value)))
    try:
        number = operator.index(value)  # type: ignore[arg-type]  # any object: TypeError says no
    except TypeError:
        raise FieldError(name, refusal(MUST_BE_AN_INTEGER, name=name, value=repr(value))) from None
    if number < minimum:
        raise FieldError(
            name,
            refusal(
                _("%(name)s: must be at least %(minimum)s, got %(value)s"),
                name=name,
                minimum=minimum,
                value=number,
            ),
        )
    return number


def _prepare(
    *, unit_ids: Sequence[int], themes: Sequence[str], embeddings: np.ndarray
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Validate the parallel inputs and return them sorted by unit id."""
    ids = np.asarray(unit_ids, dtype=np.int64).reshape(-1)
    vectors = np.asarray(embeddings)
    if vectors.dtype not in (np.float32, np.float64):
        vectors = vectors.astype(np.float64)
    if len(themes) != ids.shape[0]:
        raise FieldError(
            "themes",
            refusal(
                _("themes: %(themes)s themes for %(units)s unit ids"), themes=len(themes), units=ids.shape[0]
            ),
        )
    if vectors.ndim != 2 or vectors.shape[0] != ids.shape[0]:
        raise FieldError(
            "embeddings",
            refusal(
                _("embeddings: shape %(shape)s, expected (%(units)s, dimensions)"),
                shape=vectors.shape,
                units=ids.shape[0],
            ),
        )
    if not np.isfinite(vectors).all():
        raise FieldError("embeddings", _("embeddings: contain NaN or infinite values"))
    order = np.argsort(ids, kind="stable")
    ids = ids[order]
    duplicates = ids[1:][ids[1:] == ids[:-1]]
    if duplicates.size:
        raise FieldError(
            "unit_ids", refusal(_("unit_ids: %(unit)s appears more than once"), unit=int(duplicates[0]))
        )
    theme_of = [themes[i] for i in order]
    for theme in theme_of:
        if not isinstance(theme, str):
            raise FieldError(
                "themes", refusal(_("themes: expected strings, got %(type)s"), type=type(theme).__name__)
            )
    return ids, theme_of, vectors[order]


def _check_k(*, k_per_theme: Mapping[str, int], sizes: Mapping[str, int]) -> None:
    missing = sorted(set(sizes) - set(k_per_theme))
    if missing:
        raise FieldError(
            "k_per_theme",
            refusal(
                _("k_per_theme: no K for themes %(themes)s (give 0 to leave a theme out)"),
                themes=", ".join(map(repr, missing)),
            ),
        )
    for theme, k in k_per_theme.items():
        if k > sizes.get(theme, 0):
            raise FieldError(
                "k_per_theme",
                refusal(
                    _("k_per_theme[%(theme)s]: %(k)s clusters for %(units)s units"),
                    theme=repr(theme),
                    k=k,
                    units=sizes.get(theme, 0),
                ),
            )


def _check_previous(
    *, previous: Sequence[Draw], ids: np.ndarray, theme_of: list[str], k_per_theme: Mapping[str, int]
) -> set[int]:
    current_theme = dict(zip(ids.tolist(), theme_of, strict=True))
    kept: set[int] = set()
    for draw in previous:
        if draw.unit_id in kept:
            raise FieldError("previous", refusal(_("previous: unit %(unit)s drawn twice"), unit=draw.unit_id))
        if draw.unit_id not in current_theme:
            raise FieldError(
                "previous", refusal(_("previous: unit %(unit)s is not among unit_ids"), unit=draw.unit_id)
            )
        if current_theme[draw.unit_id] != draw.theme:
            raise FieldError(
                "previous",
                refusal(
                    _("previous: unit %(unit)s was drawn in theme %(theme)s, now in %(now)s"),
                    unit=draw.unit_id,
                    theme=repr(draw.theme),
                    now=repr(current_theme[draw.unit_id]),
                ),
            )
        if k_per_theme[draw.theme] == 0:
            raise FieldError(
                "k_per_theme",
                refusal(
                    _("k_per_theme[%(theme)s]: 0 but the theme has previous draws to keep"),
                    theme=repr(draw.theme),
                ),
            )
        kept.add(draw.unit_id)
    return kept


def _theme_entropy(*, seed: int, theme: str) -> int:
    """A 128-bit seed from (seed, theme) alone, so one theme's draws never depend on the others."""
    digest = hashlib.sha256(f"{int(seed)}\x1f{theme}".encode()).digest()
    return int.from_bytes(digest[:16], "big")


def _cluster(*, vectors: np.ndarray, k: int, entropy: int) -> np.ndarray:
    """Cluster labels 0..k'-1 (k' <= k), numbered in order of each cluster's first row."""
    n = vectors.shape[0]
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    if k == n:
        return np.arange(n, dtype=np.int64)
    random_state = int(np.random.SeedSequence(entropy).generate_state(1)[0])
    if n > MINIBATCH_ABOVE:
        model = MiniBatchKMeans(
            n_clusters=k, n_init=KMEANS_N_INIT, batch_size=MINIBATCH_SIZE, random_state=random_state
        )
    else:
        model = KMeans(n_clusters=k, n_init=KMEANS_N_INIT, random_state=random_state)
    with warnings.catch_warnings():
        # Fewer distinct points than k (duplicate or blank texts): handled by the renumbering below.
        warnings.simplefilter("ignore", ConvergenceWarning)
        labels = model.fit_predict(vectors)
    # Rows are sorted by unit id, so a cluster's first row holds its smallest unit id.
    found, first_rows = np.unique(labels, return_index=True)
    renumber = np.empty(int(found.max()) + 1, dtype=np.int64)
    renumber[found[np.argsort(first_rows)]] = np.arange(found.shape[0])
    return renumber[labels]


def _draw_theme(
    *,
    theme: str,
    ids: np.ndarray,
    vectors: np.ndarray,
    k: int,
    per_cluster: int,
    entropy: int,
    kept: set[int],
) -> list[Draw]:
    labels = _cluster(vectors=vectors, k=k, entropy=entropy)
    order = np.argsort(labels, kind="stable")
    boundaries = np.flatnonzero(np.diff(labels[order])) + 1
    draws: list[Draw] = []
    for cluster, rows in enumerate(np.split(order, boundaries)):
        members = ids[rows]
        rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(cluster,)))
        permutation = rng.permutation(members).tolist()
        if kept:
            previous = [unit for unit in permutation if unit in kept]
            missing = max(0, min(per_cluster, len(members)) - len(previous))
            chosen = previous + [unit for unit in permutation if unit not in kept][:missing]
        else:
            chosen = permutation[:per_cluster]
        probability = len(chosen) / len(members)
        draws.extend(
            Draw(
                unit_id=int(unit),
                theme=theme,
                cluster=cluster,
                cluster_size=len(members),
                inclusion_probability=probability,
                rank=rank,
            )
            for rank, unit in enumerate(chosen)
        )
    return draws
