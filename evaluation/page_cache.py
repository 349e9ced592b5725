"""Figures of the analyst's heavy pages kept in Django's cache, keyed on what changes them.

A page's figures are read often and change rarely: with an import (answers, questions' gold
evidence, chunks), a label, or a judgment. Each key holds the versions of the rows the figures
come from, read in one cheap aggregate query each, so that a change makes a new key and the old
entry is never read again (it leaves the cache by its timeout or the backend's eviction):

- labels are append-only: their count and greatest id change with every new row (a correction
  or an undo is a new row);
- a judgment is updated in place by a retry: the count and latest ``updated_at`` of the ``ok``
  ones change with every one that may move a number;
- answers are written by imports only, which insert every answer they give (``--update``
  replaces an answer by a new row), and the questions' gold evidence and the chunks come with
  them: the count and greatest id of the campaign's answers change with every import.

A row of those edited one by one (the admin saves a question's theme or gold evidence, a chunk's
text, an answer with its sources) changes no count: its save bumps the campaign's generation
(:func:`content_edited`, on Django's ``post_save`` of questions, chunks and answers), kept in the
cache itself and part of every key.

The campaign's primary key, creation time and generation head every key (a database rebuilt
from scratch reuses ids, not creation times). The cache is ``settings.CACHES["default"]``: local memory by
default (one copy per process), Redis with ``CACHE_URL``. A value must pickle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.core.cache import cache
from django.db.models import Count, Max, Q

from annotation.models import Answer, Campaign, Criterion, Label, Sample
from evaluation.models import Judge, Judgment

T = TypeVar("T")

# An entry nobody reads again (a newer key replaced it) leaves the cache after this long at most.
TIMEOUT_SECONDS = 24 * 3600
PREFIX = "attest:page:"
_MISSING = object()


def _generation_name(campaign_id: int) -> str:
    return f"{PREFIX}generation:{campaign_id}"


def content_edited(campaign_id: int) -> None:
    """A question, chunk or answer of the campaign was saved one by one: every key of the
    campaign changes."""
    name = _generation_name(campaign_id)
    cache.add(name, 0, None)
    try:
        cache.incr(name)
    except ValueError:  # evicted between the two calls
        cache.set(name, 1, None)


def campaign_key(campaign: Campaign) -> tuple[Any, ...]:
    """What identifies the campaign, its generation and the settings its measures read (no
    query; one read of the cache)."""
    return (
        campaign.pk,
        cache.get(_generation_name(campaign.pk), 0),
        campaign.created_at.isoformat() if campaign.created_at else None,
        campaign.annotation_mode,
        campaign.citation_pattern,
        campaign.expected_language,
        campaign.abstention_patterns,
    )


def answers_version(campaign: Campaign) -> tuple[Any, ...]:
    """The count and greatest id of the campaign's answers (one query): they change with every
    import, which brings the questions' gold evidence, chunks, sentences and units with it."""
    found = Answer.objects.filter(campaign=campaign).aggregate(n=Count("id"), last=Max("id"))
    return ("answers", found["n"], found["last"])


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


def judgments_version(*, criterion: Criterion, judge: Judge) -> tuple[Any, ...]:
    """The count and latest update of ``judge``'s ``ok`` judgments of ``criterion`` (one query)."""
    found = Judgment.objects.filter(criterion=criterion, judge=judge, status=Judgment.Status.OK).aggregate(
        n=Count("id"), last=Max("updated_at")
    )
    last = found["last"]
    return ("judgments", criterion.pk, judge.pk, found["n"], last.isoformat() if last else None)


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


def estimates_key(*, criterion: Criterion, judge: Judge) -> list[Any] | None:
    """What the estimates of ``criterion`` with ``judge`` are computed from
    (``evaluation.estimates.inputs.load_inputs``): the campaign's settings, name and units (they
    come with its answers), the judge's name, the criterion's definition and guidelines' version,
    its labels, the judge's judgments of it and its samples. Four queries; None when its
    samples' weights follow a judge (then the estimates are computed, not kept)."""
    samples = samples_version(criterion=criterion)
    if samples is None:
        return None
    campaign = criterion.campaign
    return [
        *campaign_key(campaign),
        answers_version(campaign),
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
        samples,
    ]


def cached(kind: str, key: Iterable[Any], compute: Callable[[], T]) -> T:
    """``compute()``'s value under ``kind`` and ``key`` (whose ``repr`` must say everything the
    value depends on), computed and stored when the cache lacks it."""
    digest = hashlib.sha256(repr(tuple(key)).encode()).hexdigest()
    name = f"{PREFIX}{kind}:{digest}"
    value = cache.get(name, _MISSING)
    if value is _MISSING:
        value = compute()
        cache.set(name, value, TIMEOUT_SECONDS)
    return value
