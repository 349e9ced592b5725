"""Stability across repetitions: rates, spreads, disagreement, ICC(1) and the width curve,
against cases worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import f as f_dist

from annotation.models import Criterion, Label, Level, Question, Stage, Unit
from evaluation.errors import EstimateError
from evaluation.measures import stability
from evaluation.models import Judge, Judgment
from inference import intervals
from inference.estimators import means
from inference.reliability.icc import clustered_estimate, icc_oneway, width_curve
from tests.factories import make_answer

# Questions of the Shrout and Fleiss (1979) example: 6 targets rated by 4 judges, ICC(1,1) = .17.
SHROUT_FLEISS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
# Three questions, three repetitions each (worked below): ICC = 2/3.
SMALL = [[1, 1, 0], [0, 0, 0], [1, 1, 1]]


def test_icc_of_a_small_table_worked_by_hand():
    # grand mean 5/9; question means 2/3, 0, 1; SSB = 3 (1/81 + 25/81 + 16/81) = 14/9, MSB = 7/9;
    # SSW = 2/3 (first question only), MSW = (2/3) / 6 = 1/9; k0 = 3;
    # ICC = (7/9 - 1/9) / (7/9 + 2 / 9) = 2/3.
    icc = icc_oneway(groups=SMALL, alpha=0.05)
    assert icc.ms_between == pytest.approx(7 / 9)
    assert icc.ms_within == pytest.approx(1 / 9)
    assert icc.k0 == pytest.approx(3)
    assert icc.value == pytest.approx(2 / 3)
    f_lo = 7 / f_dist.ppf(0.975, 2, 6)
    f_hi = 7 * f_dist.ppf(0.975, 6, 2)
    assert icc.lo == pytest.approx((f_lo - 1) / (f_lo + 2))
    assert icc.hi == pytest.approx((f_hi - 1) / (f_hi + 2))
    assert icc.lo < icc.value < icc.hi


def test_icc_equals_shrout_and_fleiss_published_value():
    icc = icc_oneway(groups=SHROUT_FLEISS, alpha=0.05)
    assert icc.ms_between == pytest.approx(11.24, abs=0.005)
    assert icc.ms_within == pytest.approx(6.26, abs=0.005)
    assert round(icc.value, 2) == 0.17


def test_icc_of_unequal_groups_uses_k0():
    # [1, 0] and [1, 1, 1, 0]: N = 6, k0 = (6 - 20/6) / 1 = 8/3; MSB = 1/12, MSW = 5/16;
    # ICC = (1/12 - 5/16) / (1/12 + (5/3)(5/16)) = -11/29.
    icc = icc_oneway(groups=[[1, 0], [1, 1, 1, 0]], alpha=0.05)
    assert icc.k0 == pytest.approx(8 / 3)
    assert icc.value == pytest.approx(-11 / 29)


def test_icc_is_undefined_without_two_questions_or_repetitions_and_1_without_variation_within():
    assert math.isnan(icc_oneway(groups=[[1, 0, 1]], alpha=0.05).value)
    assert math.isnan(icc_oneway(groups=[[1], [0]], alpha=0.05).value)
    assert math.isnan(icc_oneway(groups=[[1, 1], [1, 1]], alpha=0.05).value)
    between_only = icc_oneway(groups=[[1, 1], [0, 0]], alpha=0.05)
    assert between_only.value == 1 and math.isnan(between_only.lo)


def test_clustered_estimate_is_the_estimators_cluster_robust_mean_with_questions_as_clusters():
    interval = clustered_estimate(groups=SMALL, alpha=0.05)
    expected = means.classical_mean(
        y=[1, 1, 0, 0, 0, 0, 1, 1, 1], alpha=0.05, clusters=[0, 0, 0, 1, 1, 1, 2, 2, 2]
    )
    assert interval == expected
    assert interval.mean == pytest.approx(5 / 9) and interval.df == 2


def test_width_curve_with_every_repetition_is_the_full_interval_and_prediction_follows_the_design_effect():
    groups = [[1, 1, 0, 1], [0, 0, 1, 0], [1, 1, 1, 1], [0, 1, 0, 1], [1, 0, 1, 1]]
    icc = icc_oneway(groups=groups, alpha=0.05).value
    curve = width_curve(groups=groups, alpha=0.05, draws=10, seed=3, icc=icc)
    assert [point.r for point in curve] == [1, 2, 3, 4]
    full = clustered_estimate(groups=groups, alpha=0.05)
    last = curve[-1]
    assert last.draws == 1 and last.answers == 20
    assert last.mean_width == pytest.approx(full.shown_hi - full.shown_lo)
    assert curve[0].draws == 10 and curve[0].answers == 5
    values = np.concatenate(groups)
    q = intervals.quantile(alpha=0.05, df=4)
    for point in curve:
        deff = 1 + (point.r - 1) * max(icc, 0)
        assert point.predicted_width == pytest.approx(
            min(1, 2 * q * math.sqrt(values.var(ddof=1) * deff / (5 * point.r)))
        )
    assert curve[0].mean_width > curve[-1].mean_width
    # Seeded: the same seed gives the same curve, another seed another one.
    assert width_curve(groups=groups, alpha=0.05, draws=10, seed=3, icc=icc) == curve
    assert width_curve(groups=groups, alpha=0.05, draws=10, seed=4, icc=icc) != curve


def test_width_curve_of_one_repetition_averages_the_draws():
    groups = [[1, 0], [0, 0], [1, 1]]
    curve = width_curve(groups=groups, alpha=0.05, draws=50, seed=0, icc=0.5)
    # r = 1: the first question gives 1 or 0 at random; the other two always give 0 and 1.
    possible = {value: clustered_estimate(groups=[[value], [0], [1]], alpha=0.05) for value in (0, 1)}
    widths = {value: interval.shown_hi - interval.shown_lo for value, interval in possible.items()}
    assert min(widths.values()) <= curve[0].mean_width <= max(widths.values())


def test_summary_counts_questions_whose_repetitions_disagree():
    rows = [
        stability.QuestionStability(
            question_id=i,
            external_id=f"Q{i}",
            theme="T",
            difficulty="simple",
            repetitions=list(range(1, len(values) + 1)),
            values=[float(v) for v in values],
            rate=float(np.mean(values)),
            spread=float(np.std(values, ddof=1)) if len(values) > 1 else math.nan,
            least=float(min(values)),
            greatest=float(max(values)),
            disagree=len(values) > 1 and max(values) != min(values),
        )
        for i, values in enumerate([[1, 1, 0], [0, 0, 0], [1, 1, 1], [1]])
    ]
    summary = stability.summarise(theme="T", rows=rows, alpha=0.05)
    # The question with one answer is not compared.
    assert (summary.compared, summary.disagreeing) == (3, 1)
    assert summary.share_disagreeing == pytest.approx(1 / 3)
    lo, hi = summary.share_interval
    assert (lo, hi) == pytest.approx(estimators_wilson(1 / 3, 3))


def estimators_wilson(p: float, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


# From the database


def repeated(campaign, table: dict[str, list[int]], *, judge: Judge, criterion: Criterion):
    """One question per key, one answer per value (repetitions 1, 2, ...), the judge's label of
    ``criterion`` on each answer unit."""
    for key, values in table.items():
        question = Question.objects.create(
            campaign=campaign, external_id=key, text=f"{key} ?", theme=key.split("-")[0], difficulty="simple"
        )
        for repetition, value in enumerate(values, start=1):
            answer = make_answer(campaign=campaign, question=question)
            answer.repetition = repetition
            answer.save(update_fields=["repetition"])
            unit = Unit.objects.get(answer=answer, level=Level.ANSWER)
            Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=value)


@pytest.fixture
def judge(campaign):
    return Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)


def test_compute_stability_of_judge_labels_per_question(campaign, judge):
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    repeated(
        campaign,
        {"Finance-1": [1, 1, 0], "Finance-2": [0, 0, 0], "IT-1": [1, 1, 1]},
        judge=judge,
        criterion=relevance,
    )
    result = stability.compute_stability(
        campaign=campaign, measure=stability.Measure("criterion", "relevance"), judge=judge
    )
    assert [row.external_id for row in result.questions] == ["Finance-1", "Finance-2", "IT-1"]
    first = result.questions[0]
    assert first.values == [1, 1, 0] and first.repetitions == [1, 2, 3]
    assert first.rate == pytest.approx(2 / 3)
    assert first.spread == pytest.approx(math.sqrt(1 / 3))
    assert first.disagree and not result.questions[1].disagree
    assert result.overall.icc.value == pytest.approx(2 / 3)
    assert result.overall.share_disagreeing == pytest.approx(1 / 3)
    assert result.overall.estimate.mean == pytest.approx(5 / 9)
    assert [group.theme for group in result.themes] == ["Finance", "IT"]
    assert result.max_repetitions == 3 and len(result.widths) == 3
    data = stability.stability_as_json(stability=result)
    assert data["overall"]["icc"] == pytest.approx(2 / 3)
    assert data["questions"][0]["values"] == [1, 1, 0]


def test_sentence_level_answers_are_the_mean_of_their_sentences(campaign, judge):
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    question = Question.objects.create(campaign=campaign, external_id="Q", text="Q ?", theme="Finance")
    verdicts = [[1, 0], [1, 1]]  # two answers of two sentences: rates 0.5 and 1
    for repetition, pair in enumerate(verdicts, start=1):
        answer = make_answer(campaign=campaign, question=question)
        answer.repetition = repetition
        answer.save(update_fields=["repetition"])
        units = Unit.objects.filter(answer=answer, level=Level.SENTENCE).order_by("sentence__position")
        for unit, value in zip(units, pair, strict=True):
            Judgment.objects.create(unit=unit, criterion=veracity, judge=judge, value=value)
    result = stability.compute_stability(
        campaign=campaign, measure=stability.Measure("criterion", "veracity"), judge=judge
    )
    assert result.level == "sentence"
    (row,) = result.questions
    assert row.values == [0.5, 1.0] and row.disagree and not row.binary
    assert row.spread == pytest.approx(math.sqrt(0.125))


def test_human_source_reads_final_labels_only(campaign, judge):
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    repeated(campaign, {"Finance-1": [1, 1, 1]}, judge=judge, criterion=relevance)
    units = list(Unit.objects.filter(campaign=campaign, level=Level.ANSWER).order_by("answer__repetition"))
    for unit, value in zip(units[:2], [0, 1], strict=True):
        Label.objects.create(unit=unit, criterion=relevance, stage=Stage.IMPORTED, value=value)
    result = stability.compute_stability(
        campaign=campaign, measure=stability.Measure("criterion", "relevance"), source=stability.HUMAN
    )
    (row,) = result.questions
    assert row.values == [0, 1] and row.repetitions == [1, 2] and row.disagree
    assert result.judge is None and result.source == "human"


def test_metric_values_per_answer(campaign):
    question = Question.objects.create(campaign=campaign, external_id="Q", text="Q ?", theme="Finance")
    for repetition, text in enumerate(["Réponse [^c1^].", "Je ne sais pas.", "Autre [^c2^]."], start=1):
        answer = make_answer(campaign=campaign, question=question, text=text)
        answer.repetition = repetition
        answer.save(update_fields=["repetition"])
    result = stability.compute_stability(campaign=campaign, measure=stability.Measure("metric", "response"))
    (row,) = result.questions
    assert row.values == [1, 0, 1] and result.source == "metric"


def test_refusals_name_their_field(campaign, judge):
    criteria = list(campaign.criteria.all())
    with pytest.raises(EstimateError) as caught:
        stability.parse_measure(key="nope", criteria=criteria)
    assert caught.value.field == "measure"
    assert stability.parse_measure(key="metric:response", criteria=criteria) == stability.Measure(
        "metric", "response"
    )
    measure = stability.Measure("criterion", "relevance")
    for kwargs, field in (
        ({"source": "crowd"}, "source"),
        ({"draws": 0}, "draws"),
        ({"alpha": 1.5}, "alpha"),
        ({"judge": None}, "judge"),
    ):
        with pytest.raises(EstimateError) as caught:
            stability.compute_stability(campaign=campaign, measure=measure, **{"judge": judge, **kwargs})
        assert caught.value.field == field


def test_functional_citations_per_answer_are_the_share_of_its_citing_sentences(campaign):
    question = Question.objects.create(campaign=campaign, external_id="Q", text="Q ?", theme="Finance")
    # First answer: one sentence cites a retrieved id, one an id never retrieved, one cites nothing.
    sentences = [("A [^c1^].", ["c1"]), ("B [^zz^].", ["zz"]), ("C.", [])]
    for repetition, cited in enumerate([sentences, sentences[:1]], start=1):
        answer = make_answer(campaign=campaign, question=question, sentences=cited)
        answer.repetition = repetition
        answer.save(update_fields=["repetition"])
    result = stability.compute_stability(
        campaign=campaign, measure=stability.Measure("metric", "functional_citation")
    )
    assert result.level == "sentence"
    (row,) = result.questions
    assert row.values == [0.5, 1.0] and row.disagree


def test_a_criterion_with_categories_is_no_measure_of_stability(campaign):
    """Its labels are category values, not 0 or 1: a mean of them is no rate (it read 483%)."""
    from tests.categorical import correctness

    categorical = correctness(campaign)
    criteria = list(Criterion.objects.filter(campaign=campaign).order_by("name"))
    keys = [m.key for m in stability.measures(criteria=criteria)]
    assert f"criterion:{categorical.name}" not in keys and "criterion:relevance" in keys
    # Nothing labeled yet: the response metric, which every answer has.
    assert stability.default_measure(criteria=criteria).key == "metric:response"
    with pytest.raises(EstimateError) as refused:
        stability.parse_measure(key=f"criterion:{categorical.name}", criteria=criteria)
    assert refused.value.field == "measure"


def test_the_default_measure_is_a_criterion_with_values_to_compare(
    campaign, judge, django_assert_num_queries
):
    def default():
        criteria = list(Criterion.objects.filter(campaign=campaign).order_by("name"))
        with django_assert_num_queries(2):  # the judges of each criterion, then the human labels
            return stability.default_measure(criteria=criteria).key

    assert default() == "metric:response"
    answer = make_answer(campaign=campaign)
    sentence_unit = Unit.objects.filter(answer=answer, level=Level.SENTENCE).first()
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    Label.objects.create(unit=sentence_unit, criterion=veracity, stage=Stage.IMPORTED, value=1)
    assert default() == "criterion:veracity"  # human labels, even at the sentence level
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    Judgment.objects.create(
        unit=Unit.objects.get(answer=answer, level=Level.ANSWER), criterion=relevance, judge=judge, value=1
    )
    criteria = list(Criterion.objects.filter(campaign=campaign).order_by("name"))
    with django_assert_num_queries(1):  # a judge has labeled one: no need to read the labels
        assert stability.default_measure(criteria=criteria).key == "criterion:relevance"
