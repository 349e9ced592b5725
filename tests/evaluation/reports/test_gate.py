"""evaluation.reports.gate: the conditions, the comparison with a baseline and the result's data."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from scipy.stats import t as student_t

from annotation.models import Criterion
from evaluation.errors import EstimateError
from evaluation.estimates.report import compute_report
from evaluation.measures import comparison
from evaluation.models import Judge, Judgment
from evaluation.reports import gate
from inference import paired
from tests.factories import make_campaign
from tests.judged import GATE_HIGH, GATE_LOW, judged_campaign, study_campaign


@pytest.fixture(scope="module")
def _candidate(module_transaction):
    campaign = make_campaign(name="Candidate")
    criterion, _, _ = judged_campaign(campaign)
    return campaign, criterion


@pytest.fixture
def candidate(_candidate, db):
    return copy.deepcopy(_candidate)


def test_the_lower_bound_checked_is_the_one_the_report_shows(candidate):
    campaign, criterion = candidate
    report = compute_report(criterion=criterion, judge=Judge.objects.get(campaign=campaign))
    finance = next(group for group in report.themes if group.theme == "Finance")
    just_above = finance.ppi.shown_lo + 1e-9
    result = gate.evaluate_gate(
        campaign=campaign, criterion=criterion, min_lower=just_above, themes=["Finance"]
    )
    assert not result.passed
    shown, threshold = result.reason.removeprefix("theme Finance: PPI++ lower bound ").split(" < ")
    assert float(shown) < float(threshold) == pytest.approx(just_above)
    passed = gate.evaluate_gate(
        campaign=campaign, criterion=criterion, min_lower=finance.ppi.shown_lo, themes=["Finance"]
    )
    assert passed.passed and passed.failures == ()


def test_the_drop_is_the_compare_pages_difference_with_the_baseline_on_the_left(db):
    _, old, old_judge, _ = study_campaign(name="v1", design=GATE_HIGH)
    new_campaign, new, new_judge, _ = study_campaign(name="v2", design=GATE_LOW)
    result = gate.evaluate_gate(
        campaign=new_campaign, criterion=new, min_lower=0, baseline=old.campaign, alpha=0.1
    )
    compared = comparison.compare_reports(
        left=compute_report(criterion=old, judge=old_judge, alpha=0.1),
        right=compute_report(criterion=new, judge=new_judge, alpha=0.1),
    )
    by_group = {row.group: row for row in result.figures}
    for row in compared:
        assert row.difference is not None
        figures = by_group[row.theme]
        assert (figures.difference, figures.difference_lower, figures.difference_upper) == (
            row.difference.mean,
            row.difference.lo,
            row.difference.hi,
        )
    assert by_group["Finance"].difference_upper < 0 and by_group["Finance"].failures
    assert by_group["IT"].difference == 0 and not by_group["IT"].failures
    finance = by_group["Finance"]
    assert result.failures[0] == (
        f"theme Finance: significant drop against v1: {finance.difference:+.3f} "
        f"[{finance.difference_lower:+.3f}, {finance.difference_upper:+.3f}], "
        f"holm-adjusted one-sided p {finance.drop_p_adjusted:.3g} < 0.1"
    )
    # Holm over the groups compared: the smallest one-sided p-value times their number.
    compared_p = sorted(row.drop_p for row in result.figures if row.drop_p is not None)
    assert min(row.drop_p_adjusted for row in result.figures if row.drop_p_adjusted is not None) == (
        pytest.approx(min(1.0, len(compared_p) * compared_p[0]))
    )
    assert result.failures[1].startswith("overall: significant drop against v1: ")


def test_the_baseline_judge_defaults_to_the_judge_of_the_same_name(db):
    _, old, _, _ = study_campaign(name="v1", design=GATE_LOW)
    Judge.objects.create(campaign=old.campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    campaign, criterion, _, _ = study_campaign(name="v2", design=GATE_LOW)
    result = gate.evaluate_gate(campaign=campaign, criterion=criterion, min_lower=0, baseline=old.campaign)
    assert result.baseline_source is not None and result.baseline_judge == "imported"
    with pytest.raises(EstimateError) as refused:
        gate.evaluate_gate(
            campaign=campaign, criterion=criterion, min_lower=0, baseline=old.campaign, baseline_judge="gpt"
        )
    assert refused.value.field == "baseline_judge"


def test_the_result_is_strict_json(db):
    campaign, criterion, _, _ = study_campaign(name="Thin", design={**GATE_LOW, "RH": ([], [1, 0])})
    result = gate.evaluate_gate(campaign=campaign, criterion=criterion, min_lower=0.2)
    data = json.loads(json.dumps(result.as_dict(), allow_nan=False))
    rh = next(row for row in data["groups"] if row["group"] == "RH")
    assert rh["ppi_mean"] is None and rh["failures"] == ["theme RH: no PPI++ estimate (0 paired units)"]
    assert data["passed"] is False and data["line"] == f"FAIL: {data['reason']}"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"min_lower": -0.1}, "min_lower"),
        ({"min_lower": float("nan")}, "min_lower"),
        ({"themes": ["Nope"]}, "theme"),
    ],
)
def test_a_request_that_cannot_be_read_is_refused_on_its_field(candidate, arguments, field):
    campaign, criterion = candidate
    with pytest.raises(EstimateError) as refused:
        gate.evaluate_gate(campaign=campaign, criterion=criterion, **{"min_lower": 0.5, **arguments})
    assert refused.value.field == field


def test_a_criterion_of_another_campaign_is_refused(candidate):
    campaign, _ = candidate
    other = Criterion.objects.get(campaign=make_campaign(name="Other"), name="relevance")
    with pytest.raises(EstimateError) as refused:
        gate.evaluate_gate(campaign=campaign, criterion=other, min_lower=0.5)
    assert refused.value.field == "criterion"


def test_a_theme_name_with_a_line_break_keeps_the_reason_on_one_line(db):
    campaign, criterion, _, _ = study_campaign(name="Broken", design={"Fin\nance": GATE_LOW["Finance"]})
    result = gate.evaluate_gate(campaign=campaign, criterion=criterion, min_lower=0.9)
    assert result.line.startswith("FAIL: theme 'Fin\\nance': PPI++ lower bound ")
    assert "\n" not in result.line


def _versions(*, shift: float):
    """Two versions asking the same 24 questions once each (answer level): the second's answers
    right ``shift`` less often. The judge agrees with the humans but on one answer in ten."""
    from annotation.models import Label, Level, Question, Stage, Unit
    from tests.factories import make_answer

    rng = np.random.default_rng(8)
    rates = rng.uniform(0.55, 0.95, size=24)
    made = []
    for name, drop in (("v1", 0.0), ("v2", shift)):
        campaign = make_campaign(name=name)
        criterion = Criterion.objects.get(campaign=campaign, name="relevance")
        judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
        for q, rate in enumerate(rates):
            theme = "Finance" if q % 2 else "IT"
            question = Question.objects.create(
                campaign=campaign,
                external_id=f"Q{q}",
                text=f"Question {q} ?",
                theme=theme,
                difficulty="simple",
            )
            unit = Unit.objects.get(
                answer=make_answer(campaign=campaign, question=question, theme=theme), level=Level.ANSWER
            )
            truth = int(rng.random() < rate - drop)
            Judgment.objects.create(
                unit=unit, criterion=criterion, judge=judge, value=truth if rng.random() > 0.1 else 1 - truth
            )
            if q < 20:
                Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=truth)
        made.append((campaign, criterion))
    return made


def test_versions_sharing_questions_are_compared_by_question_and_adjusted_over_the_groups(db):
    (old, _), (new, criterion) = _versions(shift=0.5)
    holm = gate.evaluate_gate(campaign=new, criterion=criterion, min_lower=0, baseline=old, alpha=0.05)
    assert holm.by_question and holm.as_dict()["compared_by"] == "question"
    versions = comparison.compare_versions(
        versions=comparison.versions_for(campaigns=[old, new], criterion="relevance", judge_name="imported")
    )
    paired_rows = {row.theme: row.difference for row in versions.rows_of(comparison.PPI)}
    figures = {row.group: row for row in holm.figures}
    for group, difference in paired_rows.items():
        assert figures[group].difference == pytest.approx(difference.estimate)
        assert figures[group].drop_p == pytest.approx(
            float(student_t.cdf(difference.estimate / difference.se, difference.df))
        )
    ps = [figures[g].drop_p for g in ("Finance", "IT", "overall")]
    assert [figures[g].drop_p_adjusted for g in ("Finance", "IT", "overall")] == pytest.approx(
        paired.holm(ps)
    )
    bonferroni = gate.evaluate_gate(
        campaign=new, criterion=criterion, min_lower=0, baseline=old, alpha=0.05, adjustment="bonferroni"
    )
    assert [row.drop_p_adjusted for row in bonferroni.figures if row.drop_p is not None] == pytest.approx(
        [min(1.0, 3 * p) for p in ps]
    )
    # Both adjustments are given side by side, whichever one the gate decides with.
    for result in (holm, bonferroni):
        shown = [row for row in result.figures if row.drop_p is not None]
        assert [row.drop_p_holm for row in shown] == pytest.approx(paired.holm(ps))
        assert [row.drop_p_bonferroni for row in shown] == pytest.approx([min(1.0, 3 * p) for p in ps])
        assert {"drop_p_holm", "drop_p_bonferroni"} <= set(shown[0].as_dict())
    assert not holm.passed and "holm-adjusted one-sided p" in holm.reason
    with pytest.raises(EstimateError) as refused:
        gate.evaluate_gate(campaign=new, criterion=criterion, min_lower=0, baseline=old, adjustment="sidak")
    assert refused.value.field == "adjustment"
