"""Figures of the analyst's heavy pages kept in Django's cache, keyed on what changes them.

A page's figures are read often and change rarely: with an import (answers, questions' gold
evidence, chunks), a label, or a judgment. Each key holds the versions of the rows the figures
come from, read from the database (the campaign's own row, or one cheap aggregate query), so
that a change makes a new key in every process and the old entry is never read again (it leaves
the cache by its timeout or the backend's eviction):

- the campaign's ``content_version`` moves with every change of its questions, chunks, answers,
  sources, sentences or units: each import (an ``--update`` that rewrites questions or answers in
  place included), each row saved one by one (the admin, a shell) and each deletion in the admin
  (``annotation.corpus.campaigns.content_changed``); it comes with the campaign, no query;
- labels are append-only: their count and greatest id change with every new row (a correction
  or an undo is a new row);
- a judgment is updated in place by a retry: the count and latest ``updated_at`` of the ``ok``
  ones change with every one that may move a number.

The campaign's primary key, creation time and content version head every key (a database
rebuilt from scratch reuses ids, not creation times). A change made outside the app, in SQL,
calls ``content_changed`` itself. The cache is ``settings.CACHES["default"]``: local memory by
default (one copy per process), Redis with ``CACHE_URL``. A value must pickle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from django.core.cache import cache
from django.db.models import Count, Max, Q

from annotation.models import Campaign, Criterion, Label, Sample
from evaluation.models import Judge, Judgment

T = TypeVar("T")

# An entry nobody reads again (a newer key replaced it) leaves the cache after this long at most.
TIMEOUT_SECONDS = 24 * 3600
PREFIX = "attest:page:"
_MISSING = object()


def campaign_key(campaign: Campaign) -> tuple[Any, ...]:
    """What identifies the campaign, its content's version and the settings its measures read
    (no query)."""
    return (
        campaign.pk,
        campaign.content_version,
        campaign.created_at.isoformat() if campaign.created_at else None,
        campaign.annotation_mode,
        campaign.citation_pattern,
        campaign.expected_language,
        campaign.abstention_patterns,
    )


def labels_version(
    *, campaign: Campaign | None = None, criterion: Criterion | None = None
) -> tuple[Any, ...]:
    """The count and greatest id of the human label rows of ``criterion``, or of every criterion
    of ``campaign`` (one query): labels are append-only, so any new row changes it."""
    rows = (
        Label.objects.filter(criterion=criterion)
        if criterion is not None
        else Label.objects.filter(criterion__campaign=campaign)
    )
    found = rows.aggregate(n=Count("id"), last=Max("id"))
    return ("labels", criterion.pk if criterion is not None else None, found["n"], found["last"])


# The versions read in the current :func:`one_read` block, by what they are of; None outside one.
_read_once: ContextVar[dict[tuple[Any, ...], tuple[Any, ...]] | None] = ContextVar(
    "page_cache_read_once", default=None
)


@contextmanager
def one_read() -> Iterator[None]:
    """Within the block, the judge's judgments' version of a criterion is read once: a figure's
    key and the keys of what it is computed from share it (a report computed now reads it for its
    own key, then for the judge's counts': 40 to 70 ms each at a million judgments). For one
    reading of figures, never around a write of judgments. Blocks nest (the outer one's reads
    stand)."""
    if _read_once.get() is not None:
        yield
        return
    token = _read_once.set({})
    try:
        yield
    finally:
        _read_once.reset(token)


def judgments_version(*, criterion: Criterion, judge: Judge) -> tuple[Any, ...]:
    """The count and latest update of ``judge``'s ``ok`` judgments of ``criterion`` (one query,
    read from the index that ends with ``updated_at`` alone: ``COUNT(*)``, where ``COUNT(id)``
    would read every row, 300 against 40 ms for a judge of a million units; none when a
    :func:`one_read` block has read it)."""
    memo = _read_once.get()
    of = ("judgments", criterion.pk, judge.pk)
    if memo is not None and of in memo:
        return memo[of]
    found = Judgment.objects.filter(criterion=criterion, judge=judge, status=Judgment.Status.OK).aggregate(
        n=Count("*"), last=Max("updated_at")
    )
    last = found["last"]
    version = (*of, found["n"], last.isoformat() if last else None)
    if memo is not None:
        memo[of] = version
    return version


def samples_version(*, criterion: Criterion) -> tuple[Any, ...] | None:
    """The count, greatest id and latest change of status of ``criterion``'s samples, with the
    count of their items (one query): a new sample, a draw that ends or a new item changes it.
    None when one of them follows a judge's confidence (the confidence and anytime designs):
    the weights of its units then read that judge's judgments, which no key here holds."""
    judged = [Sample.Design.CONFIDENCE, Sample.Design.SEQUENTIAL]
    found = Sample.objects.filter(criterion=criterion).aggregate(
        n=Count("id", distinct=True),
        last=Max("id"),
        since=Max("status_since"),
        items=Count("items"),
        judged=Count("id", filter=Q(design__in=judged), distinct=True),
    )
    if found["judged"]:
        return None
    since = found["since"].isoformat() if found["since"] else None
    return ("samples", criterion.pk, found["n"], found["last"], since, found["items"])


def estimates_key(*, criterion: Criterion, judge: Judge, samples: bool = True) -> list[Any] | None:
    """What the estimates of ``criterion`` with ``judge`` are computed from
    (``evaluation.estimates.inputs.load_inputs``): the campaign's settings, name and units (they
    come with its answers), the judge's name, the criterion's definition and guidelines' version,
    its labels, the judge's judgments of it and its samples. Three queries; None when its
    samples' weights follow a judge (then the estimates are computed, not kept). ``samples``
    False: the same without the samples (two queries, never None), for a figure that reads the
    labels and the judgments but no sample (the judge's calibration, the confidence sample's
    split)."""
    sampled = samples_version(criterion=criterion) if samples else ("samples not read",)
    if sampled is None:
        return None
    campaign = criterion.campaign
    return [
        *campaign_key(campaign),
        campaign.name,
        (judge.pk, judge.name),
        (
            criterion.pk,
            criterion.name,
            criterion.level,
            criterion.kind,
            criterion.categories,
            criterion.category_groups,
            criterion.current_version_id,
        ),
        labels_version(criterion=criterion),
        judgments_version(criterion=criterion, judge=judge),
        sampled,
    ]


def judge_counts_key(*, criterion: Criterion, judge: Judge) -> list[Any]:
    """What counts of ``judge``'s labels of ``criterion`` over the campaign's units are computed
    from: the campaign's units (its content version), the criterion's level and the judge's
    judgments of it (one query). A human label does not move them."""
    return [
        *campaign_key(criterion.campaign),
        (criterion.pk, criterion.level),
        judgments_version(criterion=criterion, judge=judge),
    ]


def cached(kind: str, key: Iterable[Any] | None, compute: Callable[[], T]) -> T:
    """``compute()``'s value under ``kind`` and ``key`` (whose ``repr`` must say everything the
    value depends on), computed and stored when the cache lacks it. A key of None says the value
    depends on something no key holds: it is computed now, every time, and not stored."""
    if key is None:
        return compute()
    digest = hashlib.sha256(repr(tuple(key)).encode()).hexdigest()
    name = f"{PREFIX}{kind}:{digest}"
    value = cache.get(name, _MISSING)
    if value is _MISSING:
        value = compute()
        cache.set(name, value, TIMEOUT_SECONDS)
    return value
