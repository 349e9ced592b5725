"""Versions compared by question: the paired interval, Holm's adjustment, and the data they read."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from annotation.models import Answer, Criterion, Label, Level, Question, Sample, SampleItem, Stage, Unit
from evaluation import errors
from evaluation.estimates.report import compute_report
from evaluation.measures import comparison
from evaluation.models import Judge, Judgment
from evaluation.reports import measure_tables
from inference import paired
from inference.paired import Linear
from tests.factories import make_answer, make_campaign
from tests.judged import study_campaign

# The paired interval against worked examples


def test_paired_difference_of_a_worked_example():
    """Contributions per question by hand: D = (0.05, 0.05, -0.1), sum D^2 = 0.015, times
    G / (G - 1) = 3/2 gives a variance of 0.0225 (se 0.15); t with 2 df; difference 0.1, so
    t = 2/3 and, for 2 df, p = 1 - t / sqrt(t^2 + 2) = 1 - 2 / sqrt(22)."""
    left = Linear(estimate=0.5, contributions={"q1": 0.1, "q2": -0.1, "q3": 0.0}, n=3)
    right = Linear(estimate=0.6, contributions={"q1": 0.15, "q2": -0.05, "q3": -0.1}, n=3)
    diff = paired.paired_difference(left=left, right=right, alpha=0.05)
    assert diff is not None
    assert diff.estimate == pytest.approx(0.1)
    assert diff.se == pytest.approx(0.15)
    assert diff.df == 2
    half = 4.302652729911275 * 0.15
    assert (diff.lo, diff.hi) == pytest.approx((0.1 - half, 0.1 + half))
    assert diff.p_value == pytest.approx(1 - 2 / math.sqrt(22))
    # Independent samples: 3/2 (0.02) + 3/2 (0.035) = 0.0825.
    assert diff.independent_se == pytest.approx(math.sqrt(0.0825))
    assert (diff.questions, diff.shared) == (3, 3)


def test_one_answer_per_question_gives_the_paired_t_test():
    """A = (1, 1, 0, 0), B = (1, 1, 1, 0): differences (0, 0, 1, 0), mean 0.25, sd 0.5, se 0.25:
    the textbook paired t-test (scipy.stats.ttest_rel)."""
    a = {"q1": (1, 1), "q2": (1, 1), "q3": (1, 0), "q4": (1, 0)}
    b = {"q1": (1, 1), "q2": (1, 1), "q3": (1, 1), "q4": (1, 0)}
    diff = paired.paired_difference(left=paired.rate_linear(a), right=paired.rate_linear(b), alpha=0.05)
    assert diff is not None
    assert diff.estimate == pytest.approx(0.25)
    assert diff.se == pytest.approx(0.25)
    expected = stats.ttest_rel([1, 1, 1, 0], [1, 1, 0, 0])
    assert diff.p_value == pytest.approx(expected.pvalue)
    ci = expected.confidence_interval(0.95)
    assert (diff.lo, diff.hi) == pytest.approx((ci.low, min(1.0, ci.high)))


def test_a_question_of_one_side_only_contributes_its_side():
    left = Linear(estimate=0.5, contributions={"q1": 0.1, "q2": -0.1}, n=2)
    right = Linear(estimate=0.5, contributions={"q1": 0.1, "q2": -0.05, "q3": -0.05}, n=3)
    diff = paired.paired_difference(left=left, right=right, alpha=0.05)
    assert diff is not None
    # D = (0, 0.05, -0.05) over G = 3 questions.
    assert diff.se**2 == pytest.approx(1.5 * 0.005)
    assert (diff.questions, diff.shared, diff.df) == (3, 2, 2)


def test_two_rates_of_100_percent_are_never_marked_as_different():
    ones = {f"q{i}": (3, 3) for i in range(10)}
    nine = {f"q{i}": (3, 3 if i else 0) for i in range(10)}
    same = paired.paired_difference(left=paired.rate_linear(ones), right=paired.rate_linear(ones), alpha=0.05)
    assert same is not None and same.degenerate and math.isnan(same.p_value) and not same.significant
    # One side at 100% with no width: still no mark, whatever the other side does.
    one_side = paired.paired_difference(
        left=paired.rate_linear(ones), right=paired.rate_linear(nine), alpha=0.05
    )
    assert one_side is not None and one_side.degenerate and not one_side.significant


def test_missing_estimates_or_a_single_question_give_no_difference():
    one = Linear(estimate=0.5, contributions={"q1": 0.0}, n=1)
    assert paired.paired_difference(left=one, right=one, alpha=0.05) is None
    assert paired.paired_difference(left=paired.NAN, right=one, alpha=0.05) is None


def test_paired_interval_is_narrower_than_the_independent_one_when_versions_are_correlated():
    """Simulated: 120 questions of varied difficulty, 5 answers each, the second version a few
    points better on each question; the question's difficulty is shared, so pairing removes it."""
    rng = np.random.default_rng(11)
    ratios = []
    for _ in range(20):
        p = rng.beta(2, 2, size=120)
        a = {f"q{i}": (5, int(rng.binomial(5, p[i]))) for i in range(120)}
        b = {f"q{i}": (5, int(rng.binomial(5, min(1, p[i] + 0.05)))) for i in range(120)}
        diff = paired.paired_difference(left=paired.rate_linear(a), right=paired.rate_linear(b), alpha=0.05)
        assert diff is not None
        ratios.append(diff.se / diff.independent_se)
    assert max(ratios) < 1
    assert np.mean(ratios) < 0.8


# Holm


def test_holm_against_a_worked_example():
    """p = (0.01, 0.04, 0.03, 0.005), m = 4: sorted 0.005 x 4 = 0.02, 0.01 x 3 = 0.03,
    0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> 0.06 (monotone)."""
    assert paired.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_equals_statsmodels_and_leaves_nan_out_of_the_count():
    p = [0.2, 0.001, 0.04, 0.5, 0.012, 0.9]
    assert paired.holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))
    adjusted = paired.holm([0.01, math.nan, 0.04])
    assert math.isnan(adjusted[1])
    assert [adjusted[0], adjusted[2]] == pytest.approx([0.02, 0.04])
    assert paired.holm([]) == []
    assert paired.holm([0.6, 0.7]) == [1.0, 1.0]


# One version's estimates, decomposed by question


@pytest.mark.parametrize("method", ["robust", "study"])
def test_estimates_by_question_are_those_of_the_report(db, method):
    _campaign, criterion, judge, _units = study_campaign()
    report = compute_report(criterion=criterion, judge=judge, method=method)
    linears = comparison.version_estimates(criterion=criterion, judge=judge, method=method)
    for group in [*report.themes, report.overall]:
        assert linears["human"][group.theme].estimate == pytest.approx(group.human.mean)
        assert linears["judge"][group.theme].estimate == pytest.approx(group.judge.mean)
        assert linears["ppi"][group.theme].estimate == pytest.approx(group.ppi.mean)
    if method == "robust":
        # The comparison speaks of the versions of the assistant, beyond these answers: its
        # variance is the report's with questions as clusters (no finite-population correction).
        finance = compute_report(criterion=criterion, judge=judge, method=method, clusters="question").themes[
            0
        ]
        assert finance.human.se is not None
        assert linears["human"]["Finance"].variance == pytest.approx(finance.human.se**2)
        # About this campaign's answers, the report's own interval is narrower by that correction.
        assert report.themes[0].human.se < finance.human.se


def test_design_weights_are_those_of_the_report(db):
    campaign, criterion, judge, units = study_campaign()
    sample = Sample.objects.create(campaign=campaign, criterion=criterion, status=Sample.Status.DONE)
    for theme, rows in units.items():
        for index, (unit, _, _) in enumerate(rows["labeled"]):
            SampleItem.objects.create(
                sample=sample,
                unit=unit,
                theme=theme,
                cluster=index % 3,
                cluster_size=5,
                inclusion_probability=0.2 if index % 3 else 0.5,
            )
    report = compute_report(criterion=criterion, judge=judge)
    linears = comparison.version_estimates(criterion=criterion, judge=judge, method="robust")
    for group in [*report.themes, report.overall]:
        assert group.weighted
        assert linears["human"][group.theme].estimate == pytest.approx(group.human.mean, rel=1e-12)
        assert linears["ppi"][group.theme].estimate == pytest.approx(group.ppi.mean, rel=1e-12)
    finance = compute_report(criterion=criterion, judge=judge, clusters="question").themes[0]
    assert finance.human.se is not None
    assert linears["human"]["Finance"].variance == pytest.approx(finance.human.se**2, rel=1e-9)


def _version(name: str, outcomes: dict[str, list[tuple[int, int | None]]]):
    """A campaign whose question ``qid`` has one answer per (human, judge) pair of outcomes[qid]
    (human None: not labeled), theme Finance for q0-q9, IT after."""
    campaign = make_campaign(name=name)
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    for index, (qid, answers) in enumerate(outcomes.items()):
        theme = "Finance" if index < 10 else "IT"
        question = Question.objects.create(
            campaign=campaign, external_id=qid, text=f"{qid} ?", theme=theme, difficulty="simple"
        )
        for human, verdict in answers:
            answer = make_answer(campaign=campaign, question=question)
            unit = Unit.objects.get(answer=answer, level=Level.ANSWER)
            if human is not None:
                Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=human)
            Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=verdict)
    return campaign


def _outcomes(seed: int, shift: float, *, answers: int = 4) -> dict[str, list[tuple[int | None, int]]]:
    rng = np.random.default_rng(seed)
    hardness = np.random.default_rng(5).beta(2, 2, size=20)
    result = {}
    for q in range(20):
        rows = []
        for a in range(answers):
            truth = int(rng.random() < min(1.0, hardness[q] + shift))
            verdict = truth if rng.random() > 0.15 else 1 - truth
            rows.append((truth if a < 2 else None, verdict))
        result[f"Q-{q}"] = rows
    return result


def test_three_versions_give_every_pair_with_holm_per_estimate_and_theme(three_versions):
    versions = comparison.versions_for(campaigns=three_versions, criterion="relevance")
    result = comparison.compare_versions(versions=versions, alpha=0.05)
    assert result.shared_questions == {
        ("Assistant v1", "Assistant v2"): 20,
        ("Assistant v1", "Assistant v3"): 20,
        ("Assistant v2", "Assistant v3"): 20,
    }
    ppi_overall = [row for row in result.rows_of("ppi") if row.theme == "overall"]
    assert [(row.left, row.right) for row in ppi_overall] == [
        ("Assistant v1", "Assistant v2"),
        ("Assistant v1", "Assistant v3"),
        ("Assistant v2", "Assistant v3"),
    ]
    differences = [row.difference for row in ppi_overall]
    assert all(d is not None for d in differences)
    raw = [d.p_value for d in differences if d]
    assert [d.p_adjusted for d in differences if d] == pytest.approx(paired.holm(raw))
    for d in differences:
        assert d is not None and d.significant == (d.p_adjusted < 0.05)
    # Rows for each estimate, and the automatic metrics, themes then overall.
    assert {row.estimate for row in result.rows} >= {"human", "judge", "ppi", "response"}
    assert [row.theme for row in result.rows_of("human")][::3] == ["Finance", "IT", "overall"]
    data = comparison.comparison_as_json(comparison=result)
    assert data["paired_by"] == "question" and len(data["rows"]) == len(result.rows)
    assert "Assistant v3" in measure_tables.comparison_table(comparison=result)


def test_paired_by_question_is_narrower_here_than_independent_samples(three_versions):
    versions = comparison.versions_for(campaigns=three_versions[:2], criterion="relevance")
    result = comparison.compare_versions(versions=versions)
    human = next(row for row in result.rows_of("human") if row.theme == "overall").difference
    assert human is not None and human.se < human.independent_se


def test_campaigns_without_a_question_in_common_are_refused_naming_the_option(db):
    first = _version("First", {"a": [(1, 1)], "b": [(0, 0)]})
    second = _version("Second", {"c": [(1, 1)], "d": [(0, 0)]})
    versions = comparison.versions_for(campaigns=[first, second], criterion="relevance")
    with pytest.raises(errors.ComparisonError) as caught:
        comparison.compare_versions(versions=versions)
    assert caught.value.field == "other"
    assert "'First' and 'Second' have no question id in common" in str(caught.value)


def test_a_criterion_absent_from_one_campaign_is_refused_naming_the_campaign(db):
    first = _version("First", {"a": [(1, 1)], "b": [(0, 0)]})
    second = _version("Second", {"a": [(1, 1)], "b": [(0, 0)]})
    Criterion.objects.filter(campaign=second, name="relevance").update(name="relevance-old")
    with pytest.raises(errors.ComparisonError) as caught:
        comparison.versions_for(campaigns=[first, second], criterion="relevance")
    assert caught.value.field == "criterion" and "'Second'" in str(caught.value)


def test_bad_alpha_or_method_or_a_single_campaign_is_refused(db):
    first = _version("First", {"a": [(1, 1)], "b": [(0, 0)]})
    second = _version("Second", {"a": [(1, 1)], "b": [(0, 0)]})
    versions = comparison.versions_for(campaigns=[first, second], criterion="relevance")
    for kwargs, field in (({"alpha": 1.5}, "alpha"), ({"method": "magic"}, "method")):
        with pytest.raises(errors.ComparisonError) as caught:
            comparison.compare_versions(versions=versions, **kwargs)
        assert caught.value.field == field
    with pytest.raises(errors.ComparisonError) as caught:
        comparison.compare_versions(versions=versions[:1])
    assert caught.value.field == "other"
    with pytest.raises(errors.ComparisonError) as caught:
        comparison.versions_for(campaigns=[first, first], criterion="relevance")
    assert caught.value.field == "other"


def test_metrics_by_question_add_up_to_the_campaign_metrics(three_versions):
    from evaluation.measures import automatic

    campaign = three_versions[0]
    rows = automatic.compute_metrics(campaign=campaign)
    overall = {row.metric: row for row in automatic.overall_metrics(rows=rows)}
    linears = comparison.metric_estimates(campaign=campaign)
    for name, row in overall.items():
        assert linears[name]["overall"].estimate == pytest.approx(row.rate)
        assert linears[name]["overall"].n == row.n
    assert Answer.objects.filter(campaign=campaign).count() == 80


def test_bonferroni_multiplies_each_pairs_p_value_by_the_pairs_compared(three_versions):
    versions = comparison.versions_for(campaigns=three_versions, criterion="relevance")
    holm = comparison.compare_versions(versions=versions)
    bonferroni = comparison.compare_versions(versions=versions, adjustment="bonferroni")
    for (estimate, rows), (_, rows_b) in zip(holm.sections, bonferroni.sections, strict=True):
        for theme in {row.theme for row in rows}:
            group = [row.difference for row in rows if row.theme == theme]
            group_b = [row.difference for row in rows_b if row.theme == theme]
            finite = [d.p_value for d in group if d is not None and not math.isnan(d.p_value)]
            for d, b in zip(group, group_b, strict=True):
                if d is None or math.isnan(d.p_value):
                    continue
                assert b.p_adjusted == pytest.approx(min(1.0, len(finite) * d.p_value)), estimate
                assert b.p_adjusted >= d.p_adjusted - 1e-12  # Holm rejects at least what Bonferroni does
                # Both adjustments side by side, whichever one marks the pairs.
                both = (d.p_holm, d.p_bonferroni)
                assert both == (b.p_holm, b.p_bonferroni) == (d.p_adjusted, b.p_adjusted)
    data = comparison.comparison_as_json(comparison=bonferroni)
    assert data["adjustment"] == "bonferroni" and "p_adjusted" in data["rows"][0]
    assert data["rows"][0]["p_bonferroni"] == data["rows"][0]["p_adjusted"]
    assert "p_holm" in data["rows"][0]
    assert "p Bonferroni" in measure_tables.comparison_table(comparison=bonferroni)
    with pytest.raises(errors.ComparisonError) as refused:
        comparison.compare_versions(versions=versions, adjustment="sidak")
    assert refused.value.field == "adjustment"


# What a snapshot keeps for the comparison, and the previous version of a campaign


def test_the_overall_estimates_by_question_come_back_from_their_json(three_versions):
    criterion = Criterion.objects.get(campaign=three_versions[0], name="relevance")
    judge = Judge.objects.get(campaign=three_versions[0])
    linears = comparison.overall_by_question(criterion=criterion, judge=judge, method="robust", alpha=0.05)
    back = comparison.linears_from_json(json.loads(json.dumps(comparison.linears_as_json(linears))))
    assert back == linears
    # An estimate that cannot be computed is stored as None and read back as NaN.
    assert comparison.linears_as_json({"ppi": paired.NAN}) == {"ppi": None}
    assert math.isnan(comparison.linears_from_json({"ppi": None})["ppi"].estimate)


def test_two_versions_overall_difference_from_their_decompositions_is_the_compare_pages(three_versions):
    first, second = three_versions[:2]
    versions = comparison.versions_for(campaigns=[first, second], criterion="relevance")
    compared = comparison.compare_versions(versions=versions)
    decomposed = [
        comparison.overall_by_question(criterion=v.criterion, judge=v.judge, method="robust", alpha=0.05)
        for v in versions
    ]
    for name in comparison.ESTIMATES:
        row = next(r for r in compared.rows_of(name) if r.theme == "overall")
        found = comparison.version_difference(
            previous=decomposed[0][name], current=decomposed[1][name], alpha=0.05
        )
        assert found == row.difference


def test_the_previous_version_is_the_latest_earlier_campaign_sharing_a_question_with_the_criterion(
    three_versions,
):
    first, second, third = three_versions
    unrelated = make_campaign(name="Unrelated")
    make_answer(campaign=unrelated)  # no question id in common
    Criterion.objects.filter(campaign=second, name="veracity").delete()
    names = {
        c.pk: set(Criterion.objects.filter(campaign=c).values_list("name", flat=True))
        for c in [*three_versions, unrelated]
    }
    found = comparison.previous_versions(
        campaigns=[third, second, first, unrelated], candidates=[*three_versions, unrelated], criteria=names
    )
    assert found[(third.pk, "relevance")] == second
    # The second version has no veracity: the third's compares with the first's.
    assert found[(third.pk, "veracity")] == first
    assert found[(second.pk, "relevance")] == first
    assert (first.pk, "relevance") not in found and (unrelated.pk, "relevance") not in found
    # Only among the candidates: a campaign the reader may not compare with is no previous version.
    found = comparison.previous_versions(campaigns=[third], candidates=[first, third], criteria=names)
    assert found[(third.pk, "relevance")] == first
    assert comparison.sharing_questions(campaigns=[third.pk], others=[first.pk, unrelated.pk]) == {
        (third.pk, first.pk)
    }
