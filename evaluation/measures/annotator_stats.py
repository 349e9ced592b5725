"""The annotators' figures, on plain data: pace from server timestamps, overrides, agreement
with the final label, agreement between pairs of people and the criterion's reliability.

No database: ``evaluation.measures.annotators`` reads the rows and hands them here. Every rate comes with
its counts and a 95% Wilson score interval (``inference.intervals.wilson``); kappa is
``inference.reliability.agreement``'s, alpha ``inference.reliability.krippendorff``'s.

Pace. The server stamps every label row when it is stored. A person's *gap* before a label is the
time since their previous label row in the campaign (any criterion, any stage; an undo counts as
a row, so the time spent before an undo does not inflate the next label). A gap longer than
``BREAK_SECONDS`` is a break and left out; the first label of a person has no gap. The median gap
is the median seconds per label; labels per hour are 3600 x the gaps kept / their sum (the pace
while working, breaks excluded).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from inference.intervals import Interval, quantile, wilson
from inference.reliability.agreement import KappaInterval, bootstrap_kappa, cohen_kappa
from inference.reliability.krippendorff import AlphaInterval, bootstrap_alpha, nominal_alpha

if TYPE_CHECKING:
    from annotation.workflow.state import UnitState

# A gap longer than this (seconds) between two labels of one person is a break, not labelling time.
BREAK_SECONDS = 600
ALPHA = 0.05
LABEL, REVIEW, ADJUDICATION = "label", "review", "adjudication"
BLIND_DOUBLE = "blind_double"


@dataclass(frozen=True)
class Share:
    """``k`` of ``n``: a rate with its counts and 95% Wilson score interval."""

    k: int
    n: int

    @property
    def rate(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def interval(self) -> Interval | None:
        """The Wilson score interval (inside [0, 1] by construction); None without data."""
        if not self.n:
            return None
        lo, hi = wilson(p=self.k / self.n, n=self.n, q=quantile(alpha=ALPHA, df=None))
        return Interval(mean=self.k / self.n, lo=lo, hi=hi, method="wilson", alpha=ALPHA, n=self.n)


@dataclass(frozen=True)
class Pace:
    """``timed`` gaps kept (each one label's time), ``breaks`` gaps left out, and from the kept
    ones the median seconds per label and the labels per hour (None without a kept gap)."""

    timed: int
    breaks: int
    median_seconds: float | None
    per_hour: float | None


def pace(gaps: Iterable[float], *, cap: float = BREAK_SECONDS) -> Pace:
    """Pace from gaps in seconds: gaps over ``cap`` are breaks, left out (see the module docstring)."""
    every = list(gaps)
    kept = [gap for gap in every if gap <= cap]
    total = sum(kept)
    return Pace(
        timed=len(kept),
        breaks=len(every) - len(kept),
        median_seconds=statistics.median(kept) if kept else None,
        per_hour=3600 * len(kept) / total if total > 0 else None,
    )


def label_gaps(
    rows: Iterable[tuple[int, datetime, int, str, bool]],
) -> list[tuple[int, int, str, float]]:
    """(criterion id, user id, stage, seconds) for every label row that has a gap.

    ``rows``: (user id, created at, criterion id, stage, whether the row gives a value) of every
    human label row of a campaign, ordered by user then time. A withdrawal (undo) ends a gap but
    has none of its own; each person's first row has none.
    """
    gaps = []
    previous: tuple[int, datetime] | None = None
    for user_id, created_at, criterion_id, stage, gives_value in rows:
        if previous is not None and previous[0] == user_id and gives_value:
            gaps.append((criterion_id, user_id, stage, (created_at - previous[1]).total_seconds()))
        previous = (user_id, created_at)
    return gaps


@dataclass(frozen=True)
class PersonStage:
    """One person at one stage of one criterion.

    ``labels``: their labels in force; ``slots``: in blind double mode at the label stage, how
    many of those fill the unit's first and second slot; ``leases``: units they hold now;
    ``overrides``: as reviewer, reviews that changed the first label; ``overridden``: as the
    first labeller, first labels a review changed; ``final``: labels equal to the unit's final
    label, among those whose unit has one (None at adjudication, whose label is the final one).
    """

    user_id: int
    stage: str
    labels: int
    slots: tuple[int, int] | None
    pace: Pace
    leases: int
    overrides: Share | None
    overridden: Share | None
    final: Share | None


@dataclass(frozen=True)
class PairAgreement:
    """Two people (``a`` < ``b``) who gave the two blind first labels of ``agreed.n`` shared units."""

    a: int
    b: int
    agreed: Share
    kappa: float | None
    kappa_interval: KappaInterval | None = None


@dataclass(frozen=True)
class Reliability:
    """A criterion's agreement between first label and second look: ``agreed`` pairs, Cohen's
    kappa and Krippendorff's alpha (nominal) with its bootstrap interval over units.
    ``anchored``: review mode, where the second look saw the first."""

    agreed: Share
    kappa: float | None
    alpha: float | None
    alpha_interval: AlphaInterval | None
    anchored: bool
    kappa_interval: KappaInterval | None = None


def person_stages(
    *,
    mode: str,
    states: Mapping[int, UnitState],
    slots: Mapping[int, int],
    leases: Mapping[tuple[int, str], int],
    gaps: Iterable[tuple[int, str, float]],
) -> list[PersonStage]:
    """Each person's figures per stage for one criterion, by user id then stage order.

    ``states``: the criterion's units; ``slots``: slot number by label id (blind first labels);
    ``leases``: live leases by (user id, stage); ``gaps``: (user id, stage, seconds) of the
    criterion's label rows (:func:`label_gaps`).
    """
    labels: dict[tuple[int, str], int] = defaultdict(int)
    slot_counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    overrides: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    overridden: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    final: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])
    for state in states.values():
        in_force = [*state.first, *([state.review] if state.review else [])]
        in_force += [state.adjudication] if state.adjudication else []
        for position, current in enumerate(state.first):
            if mode == BLIND_DOUBLE and current.user_id is not None:
                slot = slots.get(current.label_id, position + 1)
                slot_counts[current.user_id][min(slot, 2) - 1] += 1
        for current in in_force:
            if current.user_id is None:
                continue
            labels[(current.user_id, current.stage)] += 1
            if state.final is not None and current.stage != ADJUDICATION:
                tally = final[(current.user_id, current.stage)]
                tally[0] += current.value == state.final
                tally[1] += 1
        if mode != BLIND_DOUBLE and state.first and state.review is not None:
            first, review = state.first[-1], state.review
            changed = first.value != review.value
            if review.user_id is not None:
                overrides[review.user_id][0] += changed
                overrides[review.user_id][1] += 1
            if first.user_id is not None:
                overridden[first.user_id][0] += changed
                overridden[first.user_id][1] += 1
    timings: dict[tuple[int, str], list[float]] = defaultdict(list)
    for user_id, stage, seconds in gaps:
        timings[(user_id, stage)].append(seconds)
    order = {LABEL: 0, REVIEW: 1, ADJUDICATION: 2}
    keys = sorted(set(labels) | set(leases) | set(timings), key=lambda key: (key[0], order.get(key[1], 3)))
    rows = []
    for user_id, stage in keys:
        review_mode = mode != BLIND_DOUBLE
        rows.append(
            PersonStage(
                user_id=user_id,
                stage=stage,
                labels=labels.get((user_id, stage), 0),
                slots=tuple(slot_counts[user_id]) if mode == BLIND_DOUBLE and stage == LABEL else None,  # type: ignore[arg-type]
                pace=pace(timings.get((user_id, stage), [])),
                leases=leases.get((user_id, stage), 0),
                overrides=Share(*overrides[user_id]) if review_mode and stage == REVIEW else None,
                overridden=Share(*overridden[user_id]) if review_mode and stage == LABEL else None,
                final=None if stage == ADJUDICATION else Share(*final[(user_id, stage)]),
            )
        )
    return rows


def blind_pairs(states: Iterable[UnitState]) -> list[PairAgreement]:
    """Agreement of each pair of people who gave the two blind first labels of the same units,
    by the pair's user ids."""
    values: dict[tuple[int, int], tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for state in states:
        if len(state.first) < 2 or None in (state.first[0].user_id, state.first[1].user_id):
            continue
        one, two = sorted(state.first[:2], key=lambda label: label.user_id or 0)
        if one.user_id == two.user_id:
            continue
        a, b = values[(one.user_id, two.user_id)]  # type: ignore[index]
        a.append(one.value)
        b.append(two.value)
    return [
        PairAgreement(
            a=pair[0],
            b=pair[1],
            agreed=Share(sum(x == y for x, y in zip(a, b, strict=True)), len(a)),
            kappa=cohen_kappa(a, b),
            kappa_interval=bootstrap_kappa(a, b),
        )
        for pair, (a, b) in sorted(values.items())
    ]


def reliability(*, pairs: list[tuple[int, int]], anchored: bool) -> Reliability:
    """Agreement, Cohen's kappa and Krippendorff's alpha (with its bootstrap interval: seeded,
    ``inference.reliability.krippendorff.RESAMPLES`` resamples of the units) of (first, second look) pairs."""
    return Reliability(
        agreed=Share(sum(a == b for a, b in pairs), len(pairs)),
        kappa=cohen_kappa([a for a, _ in pairs], [b for _, b in pairs]),
        alpha=nominal_alpha(pairs),
        alpha_interval=bootstrap_alpha(pairs),
        anchored=anchored,
        kappa_interval=bootstrap_kappa([a for a, _ in pairs], [b for _, b in pairs]),
    )


def with_leases(
    *, rows: list[PersonStage], leases: Mapping[tuple[int, str], int], mode: str
) -> list[PersonStage]:
    """``rows`` (:func:`person_stages` without leases) with the live ``leases`` by (user id,
    stage): a row's count set, a row added for a person who holds leases at a stage where they
    have no label yet; ordered as :func:`person_stages` orders them."""
    order = {LABEL: 0, REVIEW: 1, ADJUDICATION: 2}
    merged = {
        (row.user_id, row.stage): replace(row, leases=leases.get((row.user_id, row.stage), 0)) for row in rows
    }
    missing = {key: count for key, count in leases.items() if key not in merged}
    for row in person_stages(mode=mode, states={}, slots={}, leases=missing, gaps=()):
        merged[(row.user_id, row.stage)] = row
    return [merged[key] for key in sorted(merged, key=lambda key: (key[0], order.get(key[1], 3)))]
