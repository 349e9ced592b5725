"""The anytime mode's batches (draws with replacement from the confidence design, reproducible
by seed, stored as the sequence so far), its per-theme status against
``inference.estimators.sequential.anytime_ppi`` on the same arrays, its refusals, and the fixed-sample
report on its units (weights 1 - (1 - q)^T)."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.errors import FieldError
from annotation.models import Criterion, Label, Level, Sample, SampleItem, Stage, Unit
from evaluation.designs import anytime, anytime_status
from evaluation.designs.active import population
from evaluation.estimates.report import compute_report
from evaluation.estimates.weights import pool
from evaluation.models import Judge, Judgment
from inference.designs.inclusion import DEFAULT_FLOOR, confidence_probabilities
from inference.estimators import sequential
from inference.estimators.weighted_ppi import PPI_WEIGHTED, weighted_ppi
from tests.factories import make_answer, make_answer_units, make_campaign, older_sample

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged():
    """Two themes (Finance 40 answers, RH 20); the judge's probability of a 1 spread over
    (0, 1); the truth drawn from it."""
    rng = np.random.default_rng(7)
    campaign = make_campaign()
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.IMPORTED)
    truth: dict[int, int] = {}
    p_one: dict[int, float] = {}
    for theme, count in (("Finance", 40), ("RH", 20)):
        for unit in make_answer_units(campaign=campaign, theme=theme, count=count):
            p = float(np.clip(rng.beta(2, 1), 0.02, 0.98))
            value = int(p >= 0.5)
            Judgment.objects.create(
                unit=unit, criterion=criterion, judge=judge, value=value, confidence=p if value else 1 - p
            )
            truth[unit.pk] = int(rng.random() < p)
            p_one[unit.pk] = p
    return campaign, criterion, judge, truth, p_one


def _label(*, criterion, unit_ids, truth) -> None:
    for unit_id in unit_ids:
        if not Label.objects.filter(unit_id=unit_id, criterion=criterion).exists():
            Label.objects.create(
                unit_id=unit_id, criterion=criterion, stage=Stage.IMPORTED, value=truth[unit_id]
            )


def _all_drawn(sample) -> set[int]:
    return {u for theme in ("Finance", "RH") for u, _ in _drawn(sample, theme)}


def _drawn(sample, theme):
    return [(int(u), float(q)) for u, q in sample.design_parameters["themes"][theme]["draws"]]


def test_a_batch_draws_with_replacement_from_the_confidence_design_with_a_budget_of_one(judged):
    campaign, criterion, judge, truth, p_one = judged
    sample = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=30, seed=3)
    assert sample.design == Sample.Design.SEQUENTIAL
    units = population(criterion=criterion, judge=judge)
    for theme in ("Finance", "RH"):
        rows = units.themes == theme
        q = confidence_probabilities(confidence=units.confidence[rows], budget=1.0, floor=DEFAULT_FLOOR)
        by_unit = dict(zip(units.ids[rows].tolist(), q.tolist(), strict=True))
        draws = _drawn(sample, theme)
        assert len(draws) == 30
        # Each draw records its unit's q; RH's 30 draws among 20 units repeat some.
        assert all(q_j == pytest.approx(by_unit[u]) for u, q_j in draws)
        items = dict(
            SampleItem.objects.filter(sample=sample, theme=theme).values_list(
                "unit_id", "inclusion_probability"
            )
        )
        assert set(items) == {u for u, _ in draws}
        for unit_id, pi in items.items():
            assert pi == pytest.approx(1 - (1 - by_unit[unit_id]) ** 30)
    assert len({u for u, _ in _drawn(sample, "RH")}) < 30
    parameters = sample.design_parameters
    assert parameters["judge"] == "gpt" and parameters["judge_id"] == judge.pk
    assert parameters["target_halfwidth"] == 0.05 and parameters["alpha"] == 0.05
    assert parameters["batch_size"] == 30 and parameters["batches"] == 1 and parameters["sequence"]
    finance = parameters["themes"]["Finance"]
    assert finance["planned"] == sequential.planned_draws(
        target_halfwidth=0.05, variance_guess=finance["variance_guess"], alpha=0.05
    )


def test_the_draws_are_reproducible_by_seed_and_theme(judged):
    campaign, criterion, judge, truth, p_one = judged
    first = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=10, seed=3)
    again = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=10, seed=3)
    other = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=10, seed=4)
    assert _drawn(first, "Finance") == _drawn(again, "Finance")
    assert _drawn(first, "RH") == _drawn(again, "RH")
    assert _drawn(first, "Finance") != _drawn(other, "Finance")
    assert first.design_parameters["sequence"] != again.design_parameters["sequence"]


def test_the_next_batch_adds_draws_and_holds_every_unit_of_the_sequence(judged):
    campaign, criterion, judge, truth, p_one = judged
    first = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=8, seed=1)
    second = anytime.next_batch(sample=first)
    assert second.design_parameters["sequence"] == first.design_parameters["sequence"]
    assert second.design_parameters["batches"] == 2
    for theme in ("Finance", "RH"):
        draws = _drawn(second, theme)
        assert len(draws) == 16 and draws[:8] == _drawn(first, theme)
        q = dict(draws)
        items = dict(
            SampleItem.objects.filter(sample=second, theme=theme).values_list(
                "unit_id", "inclusion_probability"
            )
        )
        assert set(items) == set(q)
        assert all(pi == pytest.approx(1 - (1 - q[u]) ** 16) for u, pi in items.items())
    # The first batch is no longer open: only the latest batch draws the next one.
    with pytest.raises(FieldError) as refused:
        anytime.next_batch(sample=first)
    assert refused.value.field == "sequence"


def test_the_status_is_anytime_ppi_on_the_labeled_prefix(judged):
    campaign, criterion, judge, truth, p_one = judged
    first = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=10, seed=2)
    second = anytime.next_batch(sample=first)
    draws = _drawn(second, "Finance")
    # Every unit labeled but the one of the 15th draw (unless it was drawn earlier too).
    missing = draws[14][0]
    _label(criterion=criterion, unit_ids={u for u, _ in draws if u != missing}, truth=truth)
    prefix = next(k for k, (u, _) in enumerate(draws) if u == missing)
    status = anytime_status.sequence_status(sample=second)
    finance = next(row for row in status.themes if row.theme == "Finance")
    assert finance.draws == 20 and finance.labeled_draws == prefix and finance.pending == 1
    # The same arrays through the core function, by hand.
    units = population(criterion=criterion, judge=judge)
    rows = units.themes == "Finance"
    ids = units.ids[rows].tolist()
    c = units.confidence[rows]
    q = confidence_probabilities(confidence=c, budget=1.0, floor=DEFAULT_FLOOR)
    shape = second.design_parameters["themes"]["Finance"]
    looks = sequential.anytime_ppi(
        units=[ids.index(u) for u, _ in draws[:prefix]],
        y=[truth[u] for u, _ in draws[:prefix]],
        q=q,
        confidence_all=c,
        batch=10,
        alpha=0.05,
        planned=shape["planned"],
        variance_guess=shape["variance_guess"],
    )
    assert finance.look == looks[-1]
    assert finance.state == (anytime_status.STOP if looks[-1].halfwidth <= 0.05 else anytime_status.WAITING)
    # RH unlabeled: waiting for its labels, no look.
    rh = next(row for row in status.themes if row.theme == "RH")
    assert rh.state == anytime_status.WAITING and rh.look is None and rh.labeled_draws == 0


def test_a_fully_labeled_theme_says_how_many_more_labels_or_stop(judged):
    campaign, criterion, judge, truth, p_one = judged
    sample = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=10, seed=5)
    _label(
        criterion=criterion,
        unit_ids=_all_drawn(sample),
        truth=truth,
    )
    status = anytime_status.sequence_status(sample=sample)
    finance = next(row for row in status.themes if row.theme == "Finance")
    shape = sample.design_parameters["themes"]["Finance"]
    assert finance.state in (anytime_status.MORE, anytime_status.WHOLE)
    expected = sequential.more_draws(
        t=10,
        halfwidth=finance.look.halfwidth,
        target_halfwidth=0.05,
        limit=anytime_status.CAP_FACTOR * shape["planned"],
    )
    assert finance.more_draws == expected
    # Distinct new units expected among those draws, at most the units not drawn yet (then the
    # advice is the whole theme).
    undrawn = 40 - len({u for u, _ in _drawn(sample, "Finance")})
    assert 1 <= finance.more_labels <= min(expected, undrawn)
    assert (finance.state == anytime_status.WHOLE) == (finance.more_labels == undrawn)
    # A loose target: a batch of 100 draws is precise enough (the betting sequence needs more
    # than 10 draws of terms as wide as 1 / floor to say anything); the next batch skips it.
    loose = anytime.start_sequence(
        criterion=criterion, judge=judge, target_halfwidth=0.45, batch_size=100, seed=5
    )
    _label(criterion=criterion, unit_ids=_all_drawn(loose), truth=truth)
    states = {row.theme: row.state for row in anytime_status.sequence_status(sample=loose).themes}
    assert states == {"Finance": anytime_status.STOP, "RH": anytime_status.STOP}
    with pytest.raises(FieldError) as refused:
        anytime.next_batch(sample=loose)
    assert refused.value.field == "sequence"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"judge": None}, "judge"),
        ({"target_halfwidth": 0}, "target_halfwidth"),
        ({"target_halfwidth": 0.6}, "target_halfwidth"),
        ({"batch_size": 0}, "batch_size"),
        ({"alpha": 0.5}, "alpha"),
    ],
)
def test_refusals_name_their_field_and_write_nothing(judged, arguments, field):
    campaign, criterion, judge, truth, p_one = judged
    with pytest.raises(FieldError) as refused:
        anytime.start_sequence(**{"criterion": criterion, "judge": judge, **arguments})
    assert refused.value.field == field
    assert str(refused.value).startswith(field)
    assert not Sample.objects.exists()


def test_new_judgments_after_the_start_stop_the_sequence(judged):
    campaign, criterion, judge, truth, p_one = judged
    sample = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=5, seed=0)
    unit = Unit.objects.get(answer=make_answer(campaign=campaign, theme="RH"), level=Level.ANSWER)
    Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=1, confidence=0.9)
    states = {row.theme: row.state for row in anytime_status.sequence_status(sample=sample).themes}
    assert states["RH"] == anytime_status.CHANGED and states["Finance"] != anytime_status.CHANGED
    with pytest.raises(FieldError) as refused:
        anytime.next_batch(sample=sample)
    assert refused.value.field == "judge"
    assert Sample.objects.count() == 1


def test_the_fixed_sample_report_weights_the_sequence_by_drawn_at_least_once(judged):
    campaign, criterion, judge, truth, p_one = judged
    first = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=12, seed=9)
    second = anytime.next_batch(sample=first)
    items = dict(
        SampleItem.objects.filter(sample=second, theme="Finance").values_list(
            "unit_id", "inclusion_probability"
        )
    )
    _label(criterion=criterion, unit_ids=items, truth=truth)
    report = compute_report(criterion=criterion, judge=judge)
    finance = next(theme for theme in report.themes if theme.theme == "Finance")
    assert finance.weighted and finance.ppi.method == PPI_WEIGHTED
    q = dict(_drawn(second, "Finance"))
    labeled = sorted(items)
    pi = np.array([1 - (1 - q[u]) ** 24 for u in labeled])
    finance_ids = sorted(u for u in p_one if Unit.objects.get(pk=u).theme == "Finance")
    expected = weighted_ppi(
        y=np.array([truth[u] for u in labeled], dtype=float),
        confidence=np.array([p_one[u] for u in labeled]),
        pi=pi,
        confidence_all=np.array([p_one[u] for u in finance_ids]),
        alpha=0.05,
    )
    assert finance.ppi.mean == pytest.approx(expected.mean)
    assert (finance.ppi.lo, finance.ppi.hi) == pytest.approx((expected.lo, expected.hi))


def test_pooled_with_an_older_sample_the_sequence_counts_once_by_its_latest_batch(judged):
    campaign, criterion, judge, truth, p_one = judged
    finance_ids = sorted(u for u in p_one if Unit.objects.get(pk=u).theme == "Finance")
    older_sample(campaign=campaign, criterion=criterion, unit_ids=finance_ids[:4], pi=0.1)
    first = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=6, seed=4)
    second = anytime.next_batch(sample=first)
    sequence = dict(SampleItem.objects.filter(sample=second).values_list("unit_id", "inclusion_probability"))
    labeled = {
        u: ("Finance", sequence.get(u))
        for u in set(finance_ids[:4]) | {u for u in sequence if u in finance_ids}
    }
    pooled = pool(criterion=criterion, current=second, labeled=labeled)
    assert "Finance" in pooled.pooled and "Finance" in pooled.confidence
    shape = second.design_parameters["themes"]["Finance"]
    for unit_id in labeled:
        spread = np.sqrt(p_one[unit_id] * (1 - p_one[unit_id]))
        q = min(1.0, max(shape["low"], shape["scale"] * spread))
        in_sequence = sequence.get(unit_id, 1 - (1 - q) ** 12)
        # The rate of the older sample: 4 of 40; the first batch does not count again.
        assert pooled.probability[unit_id] == pytest.approx(1 - (1 - 0.1) * (1 - in_sequence), rel=1e-6)


def test_a_criterion_with_categories_is_refused_by_both_designs_that_follow_the_judge():
    from evaluation.designs.active import draw_confidence_sample
    from evaluation.designs.budget_split import plan_split
    from tests.categorical import categorical_campaign

    criterion, judge, _ = categorical_campaign(make_campaign())
    for attempt in (
        lambda: anytime.start_sequence(criterion=criterion, judge=judge),
        lambda: draw_confidence_sample(criterion=criterion, judge=judge, budget=10),
        lambda: plan_split(criterion=criterion, judge=judge, budget=10, by_verdict=True),
    ):
        with pytest.raises(FieldError) as refused:
            attempt()
        assert refused.value.field == "criterion"
        assert "has categories" in str(refused.value)
    assert not Sample.objects.exists()


def test_a_theme_out_of_reach_is_not_drawn_again(judged):
    from dataclasses import replace

    campaign, criterion, judge, truth, p_one = judged
    sample = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=5, seed=0)
    status = anytime_status.sequence_status(sample=sample)
    rows = [
        row if row.theme == "Finance" else replace(row, state=anytime_status.OUT_OF_REACH)
        for row in status.themes
    ]
    assert replace(status, themes=rows).next_themes == ["Finance"]


def test_a_small_theme_the_draws_cannot_make_precise_enough_is_told_to_label_it_whole(judged):
    # Planned for 3 draws, a cap of 12, and the target not reached after 10: the draws cannot
    # make it precise enough, yet each theme is known exactly once its units are labelled: the
    # advice is that census (the units not drawn yet), not "out of reach".
    campaign, criterion, judge, truth, p_one = judged
    sample = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=10, seed=5)
    for shape in sample.design_parameters["themes"].values():
        shape["planned"] = 3
    sample.save(update_fields=["design_parameters"])
    _label(criterion=criterion, unit_ids=_all_drawn(sample), truth=truth)
    status = anytime_status.sequence_status(sample=sample)
    for row in status.themes:
        more = sequential.more_draws(
            t=10, halfwidth=row.look.halfwidth, target_halfwidth=0.05, limit=anytime_status.CAP_FACTOR * 3
        )
        assert 10 + more > anytime_status.CAP_FACTOR * 3
        undrawn = {"Finance": 40, "RH": 20}[row.theme] - len({u for u, _ in _drawn(sample, row.theme)})
        assert (row.state, row.more_labels) == (anytime_status.WHOLE, undrawn)
