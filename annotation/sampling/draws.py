"""Draw and top up a criterion's stratified sample inline, and store its items.

Loads the units of the criterion's level, embeds their texts (:mod:`annotation.sampling.embeddings`), runs
the design (:mod:`annotation.sampling.design`) and writes one
:class:`~annotation.models.SampleItem` per drawn unit in one transaction: nothing is written when
a draw raises. The worker's road to the same computation is :mod:`annotation.sampling.background`.

Its length is one transaction's: drawing, topping up and storing share the loading of the units
and the rows they write; the design's arithmetic is in ``design.py``.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, refusal
from annotation.models import Criterion, Level, Sample, SampleItem, Unit
from annotation.sampling.design import MUST_BE_AN_INTEGER, Draw, allocate_clusters, redraw_with_keep
from annotation.sampling.embeddings import BACKENDS, embed_texts
from annotation.sampling.staleness import is_stale
from annotation.workflow import open_slots

logger = logging.getLogger(__name__)

Progress = Callable[[float], None]

# TF-IDF + SVD dimensions: enough to separate topics within a theme, small enough for K-means on 100k.
EMBEDDING_DIMENSIONS = 64
MAX_SEED = 2**31 - 1
# Share of the progress bar spent before clustering starts (loading and embedding the texts).
EMBEDDED_AT = 0.5
FINISHED = (Sample.Status.DONE, Sample.Status.FAILED)


@dataclass(frozen=True)
class Design:
    """What a draw or a top-up will compute: K per theme, m, and the budget to record."""

    budget: int
    per_cluster: int
    k_per_theme: dict[str, int]


def draw_sample(
    *,
    criterion: Criterion,
    budget: int,
    seed: int = 0,
    per_cluster: int = 3,
    per_theme_budget: Mapping[str, int] | None = None,
    backend: str | None = None,
    user=None,
    progress: Progress | None = None,
) -> Sample:
    """Draw and store a stratified sample of ``criterion``'s units, inline; return it (status done).

    Every unit of the criterion's level in its campaign is embedded (the sentence text, or the
    answer text for answer-level criteria) with ``backend`` (default ``settings.EMBEDDING_BACKEND``),
    clustered by K-means within each theme, and ``per_cluster`` units are drawn per cluster. K per
    theme follows from ``budget`` (total labels) split across themes in proportion to their sizes,
    or from ``per_theme_budget`` for the themes it names (see
    :func:`annotation.sampling.design.allocate_clusters`). Each item records theme, cluster, cluster
    size, inclusion probability and rank. The same units, texts and arguments give the same items.

    ``progress`` is called with fractions in [0, 1]. Raises ValueError naming the field (budget,
    per_cluster, per_theme_budget, seed, backend, criterion) on bad input, and
    :class:`annotation.sampling.embeddings.EmbeddingError` when the embedding server fails; in both cases
    nothing is written.
    """
    report = progress or _ignore
    sample, design = new_sample(
        criterion=criterion,
        budget=budget,
        seed=seed,
        per_cluster=per_cluster,
        per_theme_budget=per_theme_budget,
        backend=backend,
        user=user,
    )
    draws = _compute_draws(
        criterion=criterion,
        design=design,
        seed=sample.seed,
        backend=sample.embedding_backend,
        previous=[],
        progress=report,
    )
    with transaction.atomic():
        sample.status, sample.progress, sample.status_since = Sample.Status.DONE, 1.0, timezone.now()
        sample.save()
        _store(sample=sample, draws=draws)
    report(1.0)
    return sample


@dataclass(frozen=True)
class GivenDraw:
    """A unit drawn by a design computed elsewhere, with its theme and inclusion probability."""

    unit_id: int
    theme: str
    inclusion_probability: float


def store_given_sample(
    *,
    criterion: Criterion,
    draws: Sequence[GivenDraw],
    design: str,
    seed: int,
    budget: int,
    parameters: Mapping[str, object],
    user=None,
) -> Sample:
    """Store a sample whose units and inclusion probabilities were computed by the caller.

    The annotation side never sees why a unit was drawn (a judge's confidence, say): it takes the
    probabilities as given, checks that every unit is one of ``criterion``'s level in its campaign
    with the theme given, once, with a probability in (0, 1], and writes a finished sample of
    ``design`` with one item per draw (cluster 0 of its theme, cluster size the theme's units,
    rank the order within the theme) in one transaction, then rebuilds the criterion's queue as
    every draw does. ``parameters`` are recorded as they are (JSON). Raises ValueError naming
    the field (``draws``, ``design``, ``seed``, ``budget``); nothing is written then.
    """
    if design not in Sample.Design.values or design == Sample.Design.KMEANS:
        raise FieldError("design", refusal(_("design: %(design)s cannot be given"), design=repr(design)))
    seed = _check_seed(seed)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise FieldError("budget", refusal(MUST_BE_AN_INTEGER, name="budget", value=repr(budget)))
    if not draws:
        raise FieldError("draws", _("draws: the design drew no unit; give a larger budget"))
    sizes = _theme_sizes(criterion=criterion)
    ids = [draw.unit_id for draw in draws]
    if len(set(ids)) != len(ids):
        raise FieldError("draws", _("draws: a unit appears twice"))
    themes = dict(
        Unit.objects.filter(pk__in=ids, campaign_id=criterion.campaign_id, level=criterion.level).values_list(
            "id", "theme"
        )
    )
    for draw in draws:
        if themes.get(draw.unit_id) != draw.theme:
            raise FieldError(
                "draws",
                refusal(
                    _("draws: unit %(unit)s is not a %(level)s unit of theme %(theme)s in this campaign"),
                    unit=draw.unit_id,
                    level=criterion.level,
                    theme=repr(draw.theme),
                ),
            )
        if not 0 < draw.inclusion_probability <= 1:
            raise FieldError(
                "draws",
                refusal(
                    _("draws: unit %(unit)s has inclusion probability %(pi)s, outside (0, 1]"),
                    unit=draw.unit_id,
                    pi=draw.inclusion_probability,
                ),
            )
    ranks: dict[str, int] = {}
    stored: list[Draw] = []
    for draw in sorted(draws, key=lambda d: (d.theme, d.unit_id)):
        rank = ranks.get(draw.theme, 0)
        ranks[draw.theme] = rank + 1
        stored.append(
            Draw(
                unit_id=draw.unit_id,
                theme=draw.theme,
                cluster=0,
                cluster_size=sizes[draw.theme],
                inclusion_probability=float(draw.inclusion_probability),
                rank=rank,
            )
        )
    sample = Sample(
        campaign_id=criterion.campaign_id,
        criterion=criterion,
        seed=seed,
        budget=budget,
        per_cluster=0,
        k_per_theme={},
        embedding_backend="",
        design=design,
        design_parameters=dict(parameters),
        status=Sample.Status.DONE,
        status_since=timezone.now(),
        progress=1.0,
        created_by=user,
    )
    with transaction.atomic():
        sample.save()
        _store(sample=sample, draws=stored)
    return sample


def top_up_sample(
    *,
    sample: Sample,
    budget: int | None = None,
    per_cluster: int | None = None,
    per_theme_budget: Mapping[str, int] | None = None,
    progress: Progress | None = None,
) -> Sample:
    """Enlarge a finished sample inline, keeping every unit it holds; return it (status done).

    ``budget`` (at least the sample's) re-allocates K per theme as :func:`draw_sample` does, with
    ``per_theme_budget`` if given; ``per_cluster`` (at least the sample's) draws more per cluster.
    A top-up never removes a cluster: each theme keeps at least its former K (at most its current
    number of units). Seed and embedding backend are the sample's.

    With the same K and a larger m the clustering is reproduced and every probability is exact;
    a theme whose K changes is re-clustered and its kept units are recorded in their new clusters
    (probabilities then approximate: see :func:`annotation.sampling.design.redraw_with_keep`). The kept
    items are updated in place (cluster, cluster size, inclusion probability, rank) and the new
    ones added, in one transaction; labels live on units and are untouched. The recorded budget is
    the requested one, or without one what the larger m asks for (K x m per theme, capped at the
    theme's size) when that is more.

    Raises ValueError naming the field when the sample is not finished, nothing would grow, a
    budget or m is below the sample's, or the sample changed meanwhile; nothing is written then.
    """
    report = progress or _ignore
    design = plan_top_up(
        sample=sample, budget=budget, per_cluster=per_cluster, per_theme_budget=per_theme_budget
    )
    if not redraw(sample=sample, design=design, progress=report, expected=FINISHED):
        raise FieldError(
            "sample",
            refusal(_("sample: %(sample)s is being drawn again; try when it is finished"), sample=sample.pk),
        )
    report(1.0)
    sample.refresh_from_db()
    return sample


def _ignore(fraction: float) -> None:
    return None


def _check_backend(backend: str | None) -> str:
    backend = backend or settings.EMBEDDING_BACKEND
    if backend not in BACKENDS:
        raise FieldError(
            "backend",
            refusal(
                _("backend: %(backend)s is not one of %(known)s"),
                backend=repr(backend),
                known=", ".join(BACKENDS),
            ),
        )
    return backend


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool):
        raise FieldError("seed", refusal(MUST_BE_AN_INTEGER, name="seed", value=repr(seed)))
    try:
        value = operator.index(seed)  # type: ignore[arg-type]  # any object: TypeError says no
    except TypeError:
        raise FieldError("seed", refusal(MUST_BE_AN_INTEGER, name="seed", value=repr(seed))) from None
    if not 0 <= value <= MAX_SEED:
        raise FieldError(
            "seed",
            refusal(
                _("seed: must be between 0 and %(maximum)s, got %(value)s"), maximum=MAX_SEED, value=value
            ),
        )
    return value


def _theme_sizes(*, criterion: Criterion) -> dict[str, int]:
    """Units of the criterion's level per theme in its campaign; ValueError when there are none."""
    rows = (
        Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level)
        .values("theme")
        .annotate(n=Count("id"))
        .order_by("theme")
    )
    sizes = {row["theme"]: row["n"] for row in rows}
    if not sizes:
        raise FieldError(
            "criterion",
            refusal(
                _(
                    "criterion: %(criterion)s is %(level)s-level and the campaign has no "
                    "%(level)s units to sample"
                ),
                criterion=repr(criterion.name),
                level=criterion.level,
            ),
            conflict=True,
        )
    return sizes


def new_sample(
    *,
    criterion: Criterion,
    budget: int,
    seed: int,
    per_cluster: int,
    per_theme_budget: Mapping[str, int] | None,
    backend: str | None,
    user,
) -> tuple[Sample, Design]:
    """A validated, unsaved pending sample and its design."""
    backend = _check_backend(backend)
    seed = _check_seed(seed)
    if not isinstance(criterion, Criterion) or criterion.pk is None:
        raise FieldError(
            "criterion",
            refusal(_("criterion: expected a saved criterion, got %(value)s"), value=repr(criterion)),
        )
    k_per_theme = allocate_clusters(
        theme_sizes=_theme_sizes(criterion=criterion),
        budget=budget,
        per_cluster=per_cluster,
        per_theme_budget=per_theme_budget,
    )
    design = Design(budget=int(budget), per_cluster=int(per_cluster), k_per_theme=k_per_theme)
    sample = Sample(
        campaign_id=criterion.campaign_id,
        criterion=criterion,
        seed=seed,
        budget=design.budget,
        per_cluster=design.per_cluster,
        k_per_theme=design.k_per_theme,
        embedding_backend=backend,
        status=Sample.Status.PENDING,
        status_since=timezone.now(),
        progress=0.0,
        created_by=user,
    )
    return sample, design


def plan_top_up(
    *,
    sample: Sample,
    budget: int | None,
    per_cluster: int | None,
    per_theme_budget: Mapping[str, int] | None,
    now: datetime | None = None,
) -> Design:
    if sample.design != Sample.Design.KMEANS:
        raise FieldError(
            "sample",
            refusal(
                _(
                    "sample: %(sample)s was drawn by the judge's confidence; "
                    "draw another sample instead of a top-up"
                ),
                sample=sample.pk,
            ),
        )
    stale = is_stale(sample=sample, now=now)
    if sample.status not in FINISHED and not stale:
        raise FieldError(
            "sample",
            refusal(
                _("sample: %(sample)s is %(status)s; top it up when it is finished"),
                sample=sample.pk,
                status=sample.status,
            ),
        )
    new_m = sample.per_cluster if per_cluster is None else per_cluster
    new_budget = sample.budget if budget is None else budget
    for name, value in (("per_cluster", new_m), ("budget", new_budget)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise FieldError(name, refusal(MUST_BE_AN_INTEGER, name=name, value=repr(value)))
    if new_m < sample.per_cluster:
        raise FieldError(
            "per_cluster",
            refusal(
                _("per_cluster: %(asked)s is below the sample's %(per_cluster)s; a top-up never draws fewer"),
                asked=new_m,
                per_cluster=sample.per_cluster,
            ),
        )
    if new_budget < sample.budget:
        raise FieldError(
            "budget",
            refusal(
                _("budget: %(asked)s is below the sample's %(budget)s; a top-up never shrinks a sample"),
                asked=new_budget,
                budget=sample.budget,
            ),
        )
    grows = new_m > sample.per_cluster or new_budget > sample.budget or per_theme_budget
    # A failed or stale sample may be run again as it stands.
    if not grows and sample.status == Sample.Status.DONE:
        raise FieldError(
            "budget",
            refusal(
                _(
                    "budget: give a budget above %(budget)s or a per_cluster above %(per_cluster)s "
                    "to top up the sample"
                ),
                budget=sample.budget,
                per_cluster=sample.per_cluster,
            ),
        )
    sizes = _theme_sizes(criterion=sample.criterion)
    allocated: dict[str, int] = {}
    if new_budget != sample.budget or per_theme_budget:
        allocated = allocate_clusters(
            theme_sizes=sizes, budget=new_budget, per_cluster=new_m, per_theme_budget=per_theme_budget
        )
    former = sample.k_per_theme or {}
    k_per_theme = {
        theme: min(size, max(allocated.get(theme, 0), int(former.get(theme, 0))))
        for theme, size in sorted(sizes.items())
    }
    if not any(k_per_theme.values()):
        raise FieldError("budget", _("budget: nothing to sample: every theme has K = 0"))
    recorded = int(new_budget)
    if budget is None:
        asked = sum(min(k * new_m, sizes[theme]) for theme, k in k_per_theme.items())
        recorded = max(recorded, asked)
    return Design(budget=recorded, per_cluster=int(new_m), k_per_theme=k_per_theme)


def _load_units(*, criterion: Criterion) -> tuple[list[int], list[str], list[str]]:
    """Unit ids, themes and texts of the criterion's level in its campaign, by unit id."""
    # A citation unit is clustered by its sentence, what its label is about.
    text_field = "answer__text" if criterion.level == Level.ANSWER else "sentence__text"
    rows = (
        Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level)
        .order_by("id")
        .values_list("id", "theme", text_field)
    )
    ids, themes, texts = [], [], []
    for unit_id, theme, text in rows.iterator(chunk_size=5000):
        ids.append(unit_id)
        themes.append(theme)
        texts.append(text or "")
    return ids, themes, texts


def _embed(*, texts: list[str], backend: str, seed: int) -> np.ndarray:
    if backend == "openai":
        return embed_texts(
            texts=texts,
            backend="openai",
            base_url=settings.OPENAI_BASE_URL,
            api_key=settings.OPENAI_API_KEY or None,
            model=settings.OPENAI_EMBEDDING_MODEL,
            timeout=settings.OPENAI_TIMEOUT_S,
            max_attempts=settings.OPENAI_MAX_ATTEMPTS,
        )
    return embed_texts(texts=texts, backend=backend, dimensions=EMBEDDING_DIMENSIONS, seed=seed)


def _compute_draws(
    *,
    criterion: Criterion,
    design: Design,
    seed: int,
    backend: str,
    previous: list[Draw],
    progress: Progress,
) -> list[Draw]:
    """The full list of draws (kept and fresh), computed outside any transaction."""
    ids, themes, texts = _load_units(criterion=criterion)
    if not ids:
        raise FieldError(
            "criterion",
            refusal(_("criterion: the campaign has no %(level)s units to sample"), level=criterion.level),
            conflict=True,
        )
    progress(0.05)
    vectors = _embed(texts=texts, backend=backend, seed=seed)
    progress(EMBEDDED_AT)
    rows_by_theme: dict[str, list[int]] = {}
    for row, theme in enumerate(themes):
        rows_by_theme.setdefault(theme, []).append(row)
    missing = sorted(set(rows_by_theme) - set(design.k_per_theme))
    if missing:
        raise FieldError(
            "k_per_theme",
            refusal(
                _("k_per_theme: no K for themes %(themes)s (units added since the request?)"),
                themes=", ".join(map(repr, missing)),
            ),
        )
    previous_by_theme: dict[str, list[Draw]] = {}
    for draw in previous:
        previous_by_theme.setdefault(draw.theme, []).append(draw)
    ids_array = np.asarray(ids, dtype=np.int64)
    draws: list[Draw] = []
    # One theme at a time gives the same draws as one call (each theme's randomness depends on
    # (seed, theme) only) and lets the progress bar move between themes.
    ordered = sorted(rows_by_theme)
    for position, theme in enumerate(ordered):
        rows = np.asarray(rows_by_theme[theme])
        draws.extend(
            redraw_with_keep(
                previous=previous_by_theme.get(theme, []),
                unit_ids=ids_array[rows],
                themes=[theme] * len(rows),
                embeddings=vectors[rows],
                k_per_theme={theme: design.k_per_theme[theme]},
                per_cluster=design.per_cluster,
                seed=seed,
            )
        )
        progress(EMBEDDED_AT + (1 - EMBEDDED_AT) * 0.95 * (position + 1) / len(ordered))
    lost = {draw.unit_id for draw in previous} - {draw.unit_id for draw in draws}
    if lost:
        raise FieldError(
            "sample",
            refusal(
                _(
                    "sample: %(count)s units drawn before are no longer in their theme (unit %(unit)s); "
                    "draw a new sample"
                ),
                count=len(lost),
                unit=min(lost),
            ),
        )
    return draws


def redraw(
    *,
    sample: Sample,
    design: Design,
    progress: Progress,
    expected: tuple[str, ...],
    claim: datetime | None = None,
) -> bool:
    """Draw ``design`` keeping the sample's items, store it and mark the sample done.

    Computes outside any transaction, then writes under a row lock; returns False (writing nothing)
    when the sample's status has left ``expected`` meanwhile, or when ``claim`` is given and is no
    longer the sample's (another run took a stale claim over).
    """
    previous = _previous_draws(sample=sample)
    draws = _compute_draws(
        criterion=sample.criterion,
        design=design,
        seed=sample.seed,
        backend=sample.embedding_backend,
        previous=previous,
        progress=progress,
    )
    with transaction.atomic():
        locked = Sample.objects.select_for_update().get(pk=sample.pk)
        if locked.status not in expected or (claim is not None and locked.status_since != claim):
            return False
        _ensure_unchanged(sample=locked, previous=previous)
        _store(sample=locked, draws=draws)
        Sample.objects.filter(pk=sample.pk).update(
            budget=design.budget,
            per_cluster=design.per_cluster,
            k_per_theme=design.k_per_theme,
            status=Sample.Status.DONE,
            status_since=timezone.now(),
            progress=1.0,
            error="",
        )
    return True


def _previous_draws(*, sample: Sample) -> list[Draw]:
    return [
        Draw(
            unit_id=item.unit_id,
            theme=item.theme,
            cluster=item.cluster,
            cluster_size=item.cluster_size,
            inclusion_probability=item.inclusion_probability,
            rank=item.rank,
        )
        for item in SampleItem.objects.filter(sample=sample).order_by("id")
    ]


def _ensure_unchanged(*, sample: Sample, previous: list[Draw]) -> None:
    """Raise ValueError when the sample's items are no longer those the draws were computed from."""
    now = set(SampleItem.objects.filter(sample=sample).values_list("unit_id", flat=True))
    if now != {draw.unit_id for draw in previous}:
        raise FieldError(
            "sample",
            refusal(_("sample: %(sample)s changed while it was being computed; try again"), sample=sample.pk),
        )


def _store(*, sample: Sample, draws: list[Draw]) -> None:
    """Write ``draws`` as the sample's items: kept items updated in place, new ones created.

    Call inside a transaction. Every existing item must be among the draws.
    """
    existing = {item.unit_id: item for item in SampleItem.objects.filter(sample=sample)}
    drawn = {draw.unit_id for draw in draws}
    if not set(existing) <= drawn:
        raise FieldError(
            "sample", refusal(_("sample: %(sample)s would lose units already drawn"), sample=sample.pk)
        )
    updated: list[SampleItem] = []
    created: list[SampleItem] = []
    for draw in draws:
        item = existing.get(draw.unit_id)
        if item is None:
            item = SampleItem(sample=sample, unit_id=draw.unit_id)
            created.append(item)
        else:
            updated.append(item)
        item.theme = draw.theme
        item.cluster = draw.cluster
        item.cluster_size = draw.cluster_size
        item.inclusion_probability = draw.inclusion_probability
        item.rank = draw.rank
    SampleItem.objects.bulk_update(
        updated, ["theme", "cluster", "cluster_size", "inclusion_probability", "rank"], batch_size=500
    )
    SampleItem.objects.bulk_create(created, batch_size=1000)
    # The sample is now its criterion's current one (it has items): its queue is set from it.
    open_slots.rebuild(criterion=Criterion.objects.select_related("campaign").get(pk=sample.criterion_id))
