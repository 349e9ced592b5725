"""evaluation.designs.active: the judge-confidence design drawn and stored as a sample, its
probabilities by hand, its refusals, and the probabilities recomputed for units it did not draw."""

from __future__ import annotations

import pytest

from annotation.models import Criterion, Level, Sample, SampleItem, Unit
from annotation.sampling.draws import GivenDraw, store_given_sample, top_up_sample
from evaluation.designs.active import design_probabilities, draw_confidence_sample, judged_units, population
from evaluation.models import Judge, Judgment
from tests.factories import make_answer_units, make_campaign

pytestmark = pytest.mark.django_db

# The judge's probability of a 1 on the four units of each theme: spreads 0.5, 0.5, 0.3, 0.3.
CONFIDENCES = {"Finance": [0.5, 0.5, 0.9, 0.9], "IT": [0.5, 0.5, 0.1, 0.1]}


def _campaign(*, confidence: bool = True):
    campaign = make_campaign()
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.IMPORTED)
    for theme, values in CONFIDENCES.items():
        units = make_answer_units(campaign=campaign, theme=theme, count=len(values))
        for p_one, unit in zip(values, units, strict=True):
            value = int(p_one >= 0.5)
            Judgment.objects.create(
                unit=unit,
                criterion=criterion,
                judge=judge,
                value=value,
                confidence=(p_one if value else 1 - p_one) if confidence else None,
            )
    return campaign, criterion, judge


def test_probabilities_follow_the_spread_worked_by_hand():
    # Budget 2 per theme, floor 0.5 x 2/4 = 0.25: t (0.5 + 0.5 + 0.3 + 0.3) = 2, t = 1.25, so
    # 0.625 for the uncertain units, 0.375 for the sure ones.
    _, criterion, judge = _campaign()
    sample = draw_confidence_sample(without_pilot=True, criterion=criterion, judge=judge, budget=4, seed=3)
    assert sample.design == Sample.Design.CONFIDENCE
    assert sample.status == Sample.Status.DONE
    units = population(criterion=criterion, judge=judge)
    themes = {int(u): str(t) for u, t in zip(units.ids, units.themes, strict=True)}
    recomputed = design_probabilities(
        sample=sample, themes=themes, judged=judged_units(criterion=criterion, judge_id=judge.pk)
    )
    expected = [0.625, 0.625, 0.375, 0.375]
    for theme in CONFIDENCES:
        ids = sorted(u for u, t in themes.items() if t == theme)
        assert [recomputed[u] for u in ids] == pytest.approx(expected)
    for item in SampleItem.objects.filter(sample=sample):
        assert item.inclusion_probability == pytest.approx(recomputed[item.unit_id])
        assert item.cluster_size == 4
    assert sample.design_parameters["judge"] == "gpt"
    assert sample.design_parameters["themes"]["Finance"]["budget"] == 2


def test_the_same_seed_draws_the_same_units_and_another_seed_may_not():
    _, criterion, judge = _campaign()
    first = draw_confidence_sample(without_pilot=True, criterion=criterion, judge=judge, budget=4, seed=3)
    again = draw_confidence_sample(without_pilot=True, criterion=criterion, judge=judge, budget=4, seed=3)
    assert set(first.items.values_list("unit_id", flat=True)) == set(
        again.items.values_list("unit_id", flat=True)
    )


def test_a_judge_without_confidence_is_refused_naming_the_option():
    _, criterion, judge = _campaign(confidence=False)
    with pytest.raises(ValueError) as error:
        draw_confidence_sample(without_pilot=True, criterion=criterion, judge=judge, budget=4, seed=3)
    assert error.value.field == "judge"
    assert "judge-confidence design" in str(error.value)
    assert not Sample.objects.exists()


def test_split_by_verdict_each_stratum_is_drawn_with_its_own_budget_worked_by_hand():
    # Finance: verdict 1 on all four units (p 0.5 -> value 1 with confidence 0.5; 0.9 -> 1), so
    # one stratum; IT: 0.5, 0.5 are verdict 1, 0.1, 0.1 verdict 0. Budgets: Finance 2; IT 1 + 1.
    # IT judge 1: two units of spread 0.5 with budget 1: 0.5 each; IT judge 0: 0.5 each.
    _, criterion, judge = _campaign()
    budgets = {"Finance": {"judge 1": 2}, "IT": {"judge 1": 1, "judge 0": 1}}
    sample = draw_confidence_sample(
        without_pilot=True, criterion=criterion, judge=judge, budget=4, seed=3, stratum_budgets=budgets
    )
    parameters = sample.design_parameters
    assert parameters["by_verdict"] is True
    assert set(parameters["themes"]["IT"]["strata"]) == {"judge 1", "judge 0"}
    assert parameters["themes"]["IT"]["budget"] == 2
    units = population(criterion=criterion, judge=judge)
    themes = {int(u): str(t) for u, t in zip(units.ids, units.themes, strict=True)}
    recomputed = design_probabilities(
        sample=sample, themes=themes, judged=judged_units(criterion=criterion, judge_id=judge.pk)
    )
    finance = sorted(u for u, t in themes.items() if t == "Finance")
    it = sorted(u for u, t in themes.items() if t == "IT")
    assert [recomputed[u] for u in finance] == pytest.approx([0.625, 0.625, 0.375, 0.375])
    assert [recomputed[u] for u in it] == pytest.approx([0.5, 0.5, 0.5, 0.5])
    for item in SampleItem.objects.filter(sample=sample):
        assert item.inclusion_probability == pytest.approx(recomputed[item.unit_id])


def test_split_by_verdict_works_with_a_judge_without_confidence():
    # Without confidences every unit of a stratum has the same chance: its budget over its size.
    _, criterion, judge = _campaign(confidence=False)
    budgets = {"Finance": {"judge 1": 3}, "IT": {"judge 1": 1, "judge 0": 2}}
    sample = draw_confidence_sample(
        without_pilot=True, criterion=criterion, judge=judge, budget=6, seed=1, stratum_budgets=budgets
    )
    units = population(criterion=criterion, judge=judge)
    themes = {int(u): str(t) for u, t in zip(units.ids, units.themes, strict=True)}
    recomputed = design_probabilities(
        sample=sample, themes=themes, judged=judged_units(criterion=criterion, judge_id=judge.pk)
    )
    it = sorted(u for u, t in themes.items() if t == "IT")
    assert [recomputed[u] for u in it] == pytest.approx([0.5, 0.5, 1.0, 1.0])
    assert [recomputed[u] for u, t in themes.items() if t == "Finance"] == pytest.approx([0.75] * 4)


def test_split_by_verdict_refuses_a_judge_with_no_verdict_and_writes_nothing():
    _, criterion, _ = _campaign()
    silent = Judge.objects.create(campaign=criterion.campaign, name="silent", kind=Judge.Kind.IMPORTED)
    with pytest.raises(ValueError) as error:
        draw_confidence_sample(
            without_pilot=True, criterion=criterion, judge=silent, budget=4, stratum_budgets={}
        )
    assert error.value.field == "judge"
    assert "has not labeled" in str(error.value)
    assert not Sample.objects.exists()


def test_no_judge_is_refused():
    _, criterion, _ = _campaign()
    with pytest.raises(ValueError) as error:
        draw_confidence_sample(without_pilot=True, criterion=criterion, judge=None, budget=4)
    assert error.value.field == "judge"


def test_a_judge_of_another_campaign_is_refused():
    _, criterion, _ = _campaign()
    _, _, other = _campaign()
    with pytest.raises(ValueError) as error:
        draw_confidence_sample(without_pilot=True, criterion=criterion, judge=other, budget=4)
    assert error.value.field == "judge"


def test_a_budget_below_one_label_per_theme_is_refused():
    _, criterion, judge = _campaign()
    with pytest.raises(ValueError) as error:
        draw_confidence_sample(without_pilot=True, criterion=criterion, judge=judge, budget=1)
    assert error.value.field == "budget"
    assert not Sample.objects.exists()


def test_a_confidence_sample_is_not_topped_up_by_k_means():
    _, criterion, judge = _campaign()
    sample = draw_confidence_sample(without_pilot=True, criterion=criterion, judge=judge, budget=8, seed=1)
    with pytest.raises(ValueError) as error:
        top_up_sample(sample=sample, budget=8)
    assert error.value.field == "sample"


def test_given_draws_are_checked_before_anything_is_written():
    campaign, criterion, _ = _campaign()
    unit = Unit.objects.filter(campaign=campaign, level=Level.ANSWER, theme="IT").first()
    bad = [
        [GivenDraw(unit_id=unit.pk, theme="Finance", inclusion_probability=0.5)],
        [GivenDraw(unit_id=unit.pk, theme="IT", inclusion_probability=0.0)],
        [GivenDraw(unit_id=unit.pk, theme="IT", inclusion_probability=0.5)] * 2,
        [],
    ]
    for draws in bad:
        with pytest.raises(ValueError) as error:
            store_given_sample(
                criterion=criterion, draws=draws, design="confidence", seed=0, budget=2, parameters={}
            )
        assert error.value.field == "draws"
    assert not Sample.objects.exists()


def test_given_draws_become_the_current_sample_and_its_queue():
    campaign, criterion, _ = _campaign()
    unit = Unit.objects.filter(campaign=campaign, level=Level.ANSWER, theme="IT").first()
    sample = store_given_sample(
        criterion=criterion,
        draws=[GivenDraw(unit_id=unit.pk, theme="IT", inclusion_probability=0.25)],
        design="confidence",
        seed=0,
        budget=2,
        parameters={"floor": 0.5},
    )
    from annotation.sampling.current import current_sample

    assert current_sample(criterion=criterion) == sample
    assert list(sample.items.values_list("unit_id", "inclusion_probability")) == [(unit.pk, 0.25)]
