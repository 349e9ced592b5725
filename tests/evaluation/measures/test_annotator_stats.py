"""The annotators' figures on plain data, against cases worked by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from annotation.workflow.state import derive
from evaluation.measures.annotator_stats import (
    BREAK_SECONDS,
    Share,
    blind_pairs,
    label_gaps,
    pace,
    person_stages,
    reliability,
)
from inference.intervals import wilson

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def state(unit_id: int, mode: str, *labels: tuple[int, int | None, str, int | None]):
    """A unit's state from (label id, user id, stage, value) rows in id order."""
    rows = [
        (label_id, unit_id, user, stage, value, "", at(label_id)) for label_id, user, stage, value in labels
    ]
    return derive(unit_id=unit_id, mode=mode, rows=rows)


def test_pace_takes_the_median_and_the_hourly_rate_of_the_gaps_left_after_breaks():
    # Gaps 20, 30, 40 s and a break of 1000 s: median 30 s; 3 labels in 90 s = 120 per hour.
    result = pace([20, 30, 1000, 40])
    assert (result.timed, result.breaks) == (3, 1)
    assert result.median_seconds == 30
    assert result.per_hour == pytest.approx(120)


def test_pace_without_a_gap_has_no_figures_and_the_cap_is_inclusive():
    assert pace([]).median_seconds is None and pace([]).per_hour is None
    assert pace([BREAK_SECONDS]).timed == 1
    assert pace([BREAK_SECONDS + 1]).timed == 0


def test_gaps_run_per_person_across_criteria_and_an_undo_ends_a_gap_without_one_of_its_own():
    rows = [
        (1, at(0), 10, "label", True),  # first row of person 1: no gap
        (1, at(12), 11, "label", True),  # another criterion: 12 s
        (1, at(20), 10, "label", False),  # an undo: no gap of its own
        (1, at(25), 10, "label", True),  # 5 s since the undo
        (2, at(26), 10, "review", True),  # person 2's first row: no gap from person 1
        (2, at(66), 10, "review", True),
    ]
    assert label_gaps(rows) == [(11, 1, "label", 12.0), (10, 1, "label", 5.0), (10, 2, "review", 40.0)]


def test_a_share_carries_its_wilson_interval_and_nothing_without_data():
    share = Share(2, 3)
    assert share.rate == pytest.approx(2 / 3)
    assert (share.interval.lo, share.interval.hi) == pytest.approx(wilson(p=2 / 3, n=3, q=1.959963984540054))
    assert 0 <= share.interval.lo < 2 / 3 < share.interval.hi <= 1
    assert Share(3, 3).interval.hi == 1.0 and Share(3, 3).interval.lo < 1
    assert Share(0, 0).rate is None and Share(0, 0).interval is None


def review_mode_states():
    """Person 1 labels four units, person 2 reviews three (overriding one), person 3 adjudicates
    it: finals 1, 0, 0 and none for the unreviewed unit."""
    return {
        1: state(1, "review", (1, 1, "label", 1), (5, 2, "review", 1)),
        2: state(2, "review", (2, 1, "label", 1), (6, 2, "review", 0), (8, 3, "adjudication", 0)),
        3: state(3, "review", (3, 1, "label", 0), (7, 2, "review", 0)),
        4: state(4, "review", (4, 1, "label", 1)),
    }


def test_review_mode_rows_count_overrides_both_ways_and_agreement_with_the_final_label():
    rows = person_stages(
        mode="review",
        states=review_mode_states(),
        slots={},
        leases={(2, "review"): 1},
        gaps=[(1, "label", 20.0), (1, "label", 30.0), (2, "review", 40.0)],
    )
    by = {(row.user_id, row.stage): row for row in rows}
    assert list(by) == [(1, "label"), (2, "review"), (3, "adjudication")]
    labeller, reviewer, adjudicator = by.values()
    assert labeller.labels == 4 and reviewer.labels == 3 and adjudicator.labels == 1
    # The reviewer changed 1 of their 3 reviews; 1 of the labeller's 3 reviewed labels was changed.
    assert reviewer.overrides == Share(1, 3) and reviewer.overridden is None
    assert labeller.overridden == Share(1, 3) and labeller.overrides is None
    # Finals: unit 1 -> 1, unit 2 -> 0 (adjudicated), unit 3 -> 0; unit 4 has none.
    assert labeller.final == Share(2, 3)
    assert reviewer.final == Share(3, 3)
    assert adjudicator.final is None
    assert (labeller.leases, reviewer.leases) == (0, 1)
    assert labeller.pace.median_seconds == 25 and labeller.pace.per_hour == pytest.approx(144)
    assert labeller.slots is None


def test_a_withdrawn_label_is_not_counted():
    states = {1: state(1, "review", (1, 1, "label", 1), (2, 1, "label", None))}
    assert person_stages(mode="review", states=states, slots={}, leases={}, gaps=[]) == []


def blind_states():
    """Persons 1, 2, 3 label blind: (1, 2) share units 1-3 and agree on 2; (1, 3) share unit 4."""
    return [
        state(1, "blind_double", (1, 1, "label", 1), (2, 2, "label", 1)),
        state(2, "blind_double", (3, 2, "label", 0), (4, 1, "label", 0)),
        state(3, "blind_double", (5, 1, "label", 1), (6, 2, "label", 0), (7, 3, "adjudication", 0)),
        state(4, "blind_double", (8, 3, "label", 1), (9, 1, "label", 1)),
        state(5, "blind_double", (10, 3, "label", 1)),
    ]


def test_blind_pairs_count_shared_units_agreement_and_kappa():
    pairs = blind_pairs(blind_states())
    assert [(p.a, p.b, p.agreed) for p in pairs] == [(1, 2, Share(2, 3)), (1, 3, Share(1, 1))]
    # Pair (1, 2): person 1 gave 1, 0, 1 and person 2 gave 1, 0, 0: p_o = 2/3, p_e = 2/3 * 1/3 +
    # 1/3 * 2/3 = 4/9, kappa = (6/9 - 4/9) / (5/9) = 0.4. Pair (1, 3): one value only, undefined.
    assert pairs[0].kappa == pytest.approx(0.4)
    assert pairs[1].kappa is None


def test_blind_rows_split_labels_by_slot_and_have_no_override_figures():
    states = {s.unit_id: s for s in blind_states()}
    rows = person_stages(mode="blind_double", states=states, slots={4: 1, 2: 2}, leases={}, gaps=[])
    by = {(row.user_id, row.stage): row for row in rows}
    # Person 1: labels 1 (slot 1), 4 (slot 1 from the assignment), 5 (slot 1), 9 (slot 2).
    assert by[(1, "label")].labels == 4 and by[(1, "label")].slots == (3, 1)
    assert by[(1, "label")].overrides is None and by[(1, "label")].overridden is None
    # Finals: 1, 0, 0 (adjudicated), 1; person 1 agrees on units 1, 2, 4 but not 3.
    assert by[(1, "label")].final == Share(3, 4)
    assert by[(3, "adjudication")].final is None


def test_reliability_gives_agreement_kappa_and_alpha_of_the_pairs():
    # (1, 1), (1, 0), (0, 0): agreement 2/3, kappa 0.4; alpha: n = 6, n0 = n1 = 3, one
    # disagreeing unit (D = 2): 1 - 5 * 2 / (36 - 18) = 4/9.
    result = reliability(pairs=[(1, 1), (1, 0), (0, 0)], anchored=True)
    assert result.agreed == Share(2, 3)
    assert result.kappa == pytest.approx(0.4)
    assert result.alpha == pytest.approx(4 / 9)
    assert result.alpha_interval is not None and result.alpha_interval.resamples == 1000
    assert result.anchored
    empty = reliability(pairs=[], anchored=False)
    assert (
        empty.agreed.n == 0 and empty.kappa is None and empty.alpha is None and empty.alpha_interval is None
    )
