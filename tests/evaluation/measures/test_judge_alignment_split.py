"""The held-out split of the judges page: made once and never moved (a unit labelled later gets
its side without moving the others), a question's units on one side, the two parts disjoint, the
figures on a part equal to those computed by hand on its units, the default (prompts compared on
the selection part, figures on the held-out part), and the drifts per theme, which the gate does
not read."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from annotation.models import Criterion, Label, Stage, Unit
from evaluation.designs import held_out
from evaluation.errors import EstimateError
from evaluation.measures import judge_alignment as measure
from evaluation.models import HeldOutSplit, Judge, Judgment
from inference.reliability import judge_alignment as inference
from tests.evaluation.measures.test_judge_alignment import labelled, relevance
from tests.factories import make_answer

SEED = 20261205


def parts_by_unit(criterion: Criterion, split: HeldOutSplit) -> dict[int, str]:
    return {
        unit_id: held_out.part_of(split=split, question_id=question_id)
        for unit_id, question_id in Unit.objects.filter(campaign=criterion.campaign).values_list(
            "pk", "answer__question_id"
        )
    }


def test_a_split_is_made_once_and_never_changes(campaign):
    criterion = relevance(campaign)
    assert held_out.split_of(criterion=criterion) is None
    split, made = held_out.make_split(criterion=criterion)
    assert made and split.held_out_share == 0.5 and 0 <= split.seed < 2**62
    again, made_again = held_out.make_split(criterion=criterion, seed=1)
    assert not made_again and again.pk == split.pk and again.seed == split.seed
    assert held_out.split_of(criterion=criterion).seed == split.seed


def test_a_question_falls_on_the_same_side_on_every_call_and_about_half_are_held_out():
    split = HeldOutSplit(seed=SEED, held_out_share=0.5)
    sides = [held_out.part_of(split=split, question_id=question) for question in range(1, 2001)]
    assert sides == [held_out.part_of(split=split, question_id=question) for question in range(1, 2001)]
    assert set(sides) == {held_out.SELECTION, held_out.HELD_OUT}
    # 2,000 questions: 1,000 expected, sd 22.
    assert abs(sides.count(held_out.HELD_OUT) - 1000) < 100
    # Another seed, another split.
    other = HeldOutSplit(seed=SEED + 1, held_out_share=0.5)
    assert sides != [held_out.part_of(split=other, question_id=question) for question in range(1, 2001)]


def test_units_labelled_later_get_their_side_and_move_no_other(campaign):
    criterion = relevance(campaign)
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    labelled(campaign, [(1, 1), (0, 0), (1, 0)] * 8, judge=judge)
    split, _made = held_out.make_split(criterion=criterion, seed=SEED)
    before = parts_by_unit(criterion, split)
    first = measure.compute_judge_alignment(
        criterion=relevance(campaign), alpha=0.05, part=held_out.HELD_OUT, split=split
    )
    labelled(campaign, [(0, 1), (1, 1)] * 8, judge=judge, theme="IT")
    split = held_out.split_of(criterion=criterion)
    assert split is not None and split.seed == SEED
    after = parts_by_unit(criterion, split)
    assert {unit: after[unit] for unit in before} == before
    assert len(after) > len(before)
    # The new units' sides are the rule's, the same on every reading.
    assert after == parts_by_unit(criterion, held_out.split_of(criterion=criterion))
    # The old units' figures on the part are unchanged by the new ones: the Finance theme.
    second = measure.compute_judge_alignment(
        criterion=relevance(campaign), alpha=0.05, part=held_out.HELD_OUT, split=split
    )
    (old,) = first.judges[0].themes
    finance = next(theme for theme in second.judges[0].themes if theme.theme == "Finance")
    assert finance.alignment.confusion == old.alignment.confusion


def test_a_question_never_straddles_the_parts_and_the_parts_are_disjoint(campaign):
    criterion = relevance(campaign)
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    split, _made = held_out.make_split(criterion=criterion, seed=SEED)
    for _question in range(12):
        first = make_answer(campaign=campaign)
        # The question asked again: its second answer's units go where the first's go.
        second = make_answer(campaign=campaign, question=first.question)
        for answer in (first, second):
            for unit in Unit.objects.filter(answer=answer):
                Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=1)
                Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=1)
    sides = parts_by_unit(criterion, split)
    by_question: dict[int, set[str]] = {}
    for unit_id, question_id in Unit.objects.filter(campaign=campaign).values_list(
        "pk", "answer__question_id"
    ):
        by_question.setdefault(question_id, set()).add(sides[unit_id])
    assert all(len(parts) == 1 for parts in by_question.values())
    results = {
        part: measure.compute_judge_alignment(criterion=criterion, alpha=0.05, part=part, split=split)
        for part in (held_out.SELECTION, held_out.HELD_OUT, held_out.ALL)
    }
    n = {part: result.judges[0].overall.n for part, result in results.items()}
    assert n[held_out.SELECTION] > 0 and n[held_out.HELD_OUT] > 0
    assert n[held_out.SELECTION] + n[held_out.HELD_OUT] == n[held_out.ALL]
    parts = results[held_out.ALL].parts
    assert parts[held_out.SELECTION].units + parts[held_out.HELD_OUT].units == parts[held_out.ALL].units
    assert parts[held_out.SELECTION].questions + parts[held_out.HELD_OUT].questions == 12


def test_the_figures_on_a_part_are_those_of_its_units_by_hand(campaign):
    criterion = relevance(campaign)
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI, model="m")
    pairs = [(1, 1), (0, 1), (1, 0), (0, 0), (1, 1), (0, 0)] * 6
    units = labelled(campaign, pairs, judge=judge)
    split, _made = held_out.make_split(criterion=criterion, seed=SEED)
    questions = dict(
        Unit.objects.filter(pk__in=[u.pk for u in units]).values_list("pk", "answer__question_id")
    )
    for part in (held_out.SELECTION, held_out.HELD_OUT):
        mine = [
            (pair, unit.answer_id)
            for pair, unit in zip(pairs, units, strict=True)
            if held_out.part_of(split=split, question_id=questions[unit.pk]) == part
        ]
        assert 0 < len(mine) < len(pairs)
        y = np.array([pair[0] for pair, _answer in mine])
        yhat = np.array([pair[1] for pair, _answer in mine])
        expected = inference.alignment(
            y=y, yhat=yhat, clusters=[answer for _pair, answer in mine], alpha=0.05
        )
        result = measure.compute_judge_alignment(criterion=criterion, alpha=0.05, part=part, split=split)
        assert result.figures_part == part and result.comparisons_part == part
        overall = result.judges[0].overall
        assert overall.n == len(mine)
        assert overall.confusion == {
            "tp": int(np.sum((y == 1) & (yhat == 1))),
            "fp": int(np.sum((y == 0) & (yhat == 1))),
            "fn": int(np.sum((y == 1) & (yhat == 0))),
            "tn": int(np.sum((y == 0) & (yhat == 0))),
        }
        assert overall.agreement.mean == pytest.approx(float(np.mean(y == yhat)))
        assert (overall.agreement.lo, overall.agreement.hi) == pytest.approx(
            (expected.agreement.lo, expected.agreement.hi)
        )
        assert overall.kappa == expected.kappa
        assert overall.sensitivity.mean == pytest.approx(float(np.mean(yhat[y == 1] == 1)))
        data = measure.judge_alignment_as_json(result=result)
        assert data["part"] == part and data["split"]["seed"] == SEED
        assert data["split"]["parts"][part]["units"] == len(mine)


def test_by_default_prompts_are_compared_on_the_selection_part_and_reported_on_the_held_out_part(campaign):
    criterion = relevance(campaign)
    first = Judge.objects.create(
        campaign=campaign, name="gpt-v1", kind=Judge.Kind.OPENAI, model="m", prompt_version="v1"
    )
    second = Judge.objects.create(
        campaign=campaign, name="gpt-v2", kind=Judge.Kind.OPENAI, model="m", prompt_version="v2"
    )
    units = labelled(campaign, [(1, 1), (0, 0)] * 20, judge=first)
    for unit in units:
        Judgment.objects.create(unit=unit, criterion=criterion, judge=second, value=0)
    split, _made = held_out.make_split(criterion=criterion, seed=SEED)
    result = measure.compute_judge_alignment(criterion=criterion, alpha=0.05, part=measure.SPLIT, split=split)
    assert (result.figures_part, result.comparisons_part) == (held_out.HELD_OUT, held_out.SELECTION)
    sizes = result.parts
    assert {version.overall.n for version in result.judges} == {sizes[held_out.HELD_OUT].units}
    (prompt,) = [drift for drift in result.drifts if drift.kind == measure.PROMPT]
    assert prompt.part == held_out.SELECTION and prompt.paired
    assert prompt.n == sizes[held_out.SELECTION].units
    assert all(drift.part == held_out.HELD_OUT for drift in result.drifts if drift.kind != measure.PROMPT)
    # Without a split, only every unit.
    with pytest.raises(EstimateError, match="part"):
        measure.compute_judge_alignment(criterion=criterion, alpha=0.05, part=measure.SPLIT)
    with pytest.raises(EstimateError, match="part"):
        measure.compute_judge_alignment(criterion=criterion, alpha=0.05, part="best", split=split)


def test_a_drift_within_one_theme_has_its_row_and_the_gate_reads_the_overall_ones(campaign):
    criterion = relevance(campaign)
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    october, november = datetime(2026, 10, 5, tzinfo=UTC), datetime(2026, 11, 5, tzinfo=UTC)
    labelled(campaign, [(1, 1), (0, 0)] * 10, judge=judge, theme="IT", at=october)
    labelled(campaign, [(1, 1), (0, 0)] * 10, judge=judge, theme="Finance", at=october)
    labelled(campaign, [(1, 1), (0, 0)] * 10, judge=judge, theme="IT", at=november)
    # In November the judge misses every unit labelled 1 of Finance, only.
    labelled(campaign, [(1, 0), (0, 0)] * 10, judge=judge, theme="Finance", at=november)
    result = measure.compute_judge_alignment(criterion=criterion, alpha=0.05)
    (overall,) = result.drifts
    assert (overall.kind, overall.theme, overall.n) == ("month", "", 80)
    assert overall.change.mean == pytest.approx(-0.25)
    themes = {drift.theme: drift for drift in result.theme_drifts}
    assert set(themes) == {"Finance", "IT"}
    assert themes["Finance"].change.mean == pytest.approx(-0.5) and themes["Finance"].n == 40
    assert themes["Finance"].flagged
    assert themes["IT"].change.mean == pytest.approx(0.0) and not themes["IT"].flagged
    assert result.flagged_themes == [themes["Finance"]]
    assert result.drift_groups == [(overall, [themes["Finance"], themes["IT"]])]
    # The gate reads the overall changes only.
    assert measure.drifted(criterion=criterion, alpha=0.05) == result.flagged
    assert all(drift.theme == "" for drift in measure.drifted(criterion=criterion, alpha=0.05))
    data = measure.judge_alignment_as_json(result=result)
    assert [row["theme"] for row in data["theme_drifts"]] == ["Finance", "IT"]
    assert data["drifts"][0]["theme"] is None


def test_prompt_versions_are_compared_within_each_theme(campaign):
    criterion = relevance(campaign)
    first = Judge.objects.create(
        campaign=campaign, name="gpt-v1", kind=Judge.Kind.OPENAI, model="m", prompt_version="v1"
    )
    second = Judge.objects.create(
        campaign=campaign, name="gpt-v2", kind=Judge.Kind.OPENAI, model="m", prompt_version="v2"
    )
    it = labelled(campaign, [(1, 1), (0, 0)] * 10, judge=first, theme="IT")
    finance = labelled(campaign, [(1, 1), (0, 0)] * 10, judge=first, theme="Finance")
    for index, unit in enumerate(it + finance):
        human = 1 - index % 2
        # The second prompt misses the Finance units labelled 1.
        verdict = 0 if unit in finance else human
        Judgment.objects.create(unit=unit, criterion=criterion, judge=second, value=verdict)
    result = measure.compute_judge_alignment(criterion=criterion, alpha=0.05)
    (prompt,) = [drift for drift in result.drifts if drift.kind == measure.PROMPT]
    assert prompt.change.mean == pytest.approx(-0.25) and prompt.n == 40 and prompt.paired
    themes = {drift.theme: drift for drift in result.theme_drifts if drift.kind == measure.PROMPT}
    assert themes["Finance"].change.mean == pytest.approx(-0.5) and themes["Finance"].paired
    # Each side's agreement on the Finance units both labelled: every unit, then the 0s only.
    assert (themes["Finance"].earlier, themes["Finance"].later) == (1.0, 0.5)
    assert themes["Finance"].n == 20 and themes["IT"].change.mean == pytest.approx(0.0)


def test_one_theme_gives_no_theme_rows(campaign):
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    labelled(campaign, [(1, 1), (0, 0)] * 15, judge=judge, at=datetime(2026, 10, 5, tzinfo=UTC))
    labelled(campaign, [(1, 0), (0, 0)] * 15, judge=judge, at=datetime(2026, 11, 5, tzinfo=UTC))
    result = measure.compute_judge_alignment(criterion=relevance(campaign), alpha=0.05)
    assert len(result.drifts) == 1 and result.theme_drifts == []
