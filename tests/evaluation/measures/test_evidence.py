"""A campaign's evidence coverage and ranking metrics, and the evidence_coverage command."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Criterion, Level, Unit
from evaluation.measures.evidence import OVERALL, EvidenceError, evidence_report
from tests.factories import import_label, make_answer, make_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus():
    """Finance: one question, gold passage "Texte c1." and chunk id c1; two answers (retrieved
    c1, c2 and c2, c3). HR: one question with gold chunk c9 only, one answer retrieving c9 second."""
    campaign = make_campaign(name="Evidence")
    first = make_answer(campaign=campaign, theme="Finance", chunk_ids=("c1", "c2"))
    question = first.question
    question.gold_evidence = [{"text": "Texte c1.", "chunk_id": "c1"}]
    question.save()
    second = make_answer(campaign=campaign, question=question, chunk_ids=("c2", "c3"))
    hr = make_answer(campaign=campaign, theme="HR", chunk_ids=("c8", "c9"))
    hr.question.gold_evidence = [{"chunk_id": "c9"}]
    hr.question.save()
    make_answer(campaign=campaign, theme="IT")  # no gold evidence: left out
    return campaign, first, second


def test_coverage_per_theme_and_overall_by_hand(corpus):
    campaign, *_ = corpus
    report = evidence_report(campaign=campaign, budgets=[2, 100], ks=[1, 2])
    # Answer 1: "Texte c1.\n\nTexte c2." - 2 tokens hold "Texte c1" (8 of 9 characters), 100 the
    # whole passage. Answer 2: "Texte c2.\n\nTexte c3." holds "Texte c" (7 characters) at 2 tokens
    # and "Texte c" or "." alone beyond.
    finance = [m.mean for m in report.coverage["Finance"]]
    assert finance == [pytest.approx((8 / 9 + 7 / 9) / 2), pytest.approx((1 + 7 / 9) / 2)]
    assert [m.mean for m in report.coverage[OVERALL]] == finance
    assert list(report.coverage) == ["Finance", OVERALL]
    assert report.coverage["Finance"][0].questions == 1 and report.coverage["Finance"][0].n == 2
    assert (report.questions_with_passages, report.questions_with_chunk_ids) == (1, 2)


def test_ranking_metrics_per_theme_by_hand(corpus):
    campaign, *_ = corpus
    report = evidence_report(campaign=campaign, budgets=[100], ks=[1, 2])
    finance, hr, overall = report.retrieval["Finance"], report.retrieval["HR"], report.retrieval[OVERALL]
    # Finance: c1 first for one answer, absent for the other. HR: c9 second.
    assert (
        finance["precision@1"].mean == 0.5 and finance["recall@2"].mean == 0.5 and finance["mrr"].mean == 0.5
    )
    assert hr["precision@1"].mean == 0.0 and hr["precision@2"].mean == 0.5 and hr["mrr"].mean == 0.5
    assert overall["mrr"].mean == pytest.approx(1 / 3 + 1 / 6)
    assert overall["mrr"].questions == 2


def test_calibration_on_a_binary_criterions_final_labels(corpus):
    campaign, first, second = corpus
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    import_label(unit=Unit.objects.get(answer=first, level=Level.ANSWER), criterion=relevance, value=1)
    import_label(unit=Unit.objects.get(answer=second, level=Level.ANSWER), criterion=relevance, value=0)
    report = evidence_report(
        campaign=campaign, budgets=[2, 100], criterion="relevance", insufficient=0, correct=1
    )
    calibration = report.calibration
    assert calibration is not None and (calibration.budget, calibration.labelled) == (100, 2)
    # Scores at 100 tokens: 1.0 (label 1) and 7/9 (label 0): both thresholds fall between them.
    assert calibration.lower.value == pytest.approx((1 + 7 / 9) / 2) and calibration.lower.agreement == 1.0
    assert calibration.upper.value == pytest.approx((1 + 7 / 9) / 2) and calibration.upper.agreement == 1.0
    assert [b.shares for b in calibration.bins] == [{0: 1.0, 1: 0.0}, {0: 0.0, 1: 1.0}]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"budgets": [0]}, "budgets"),
        ({"ks": []}, "k"),
        ({"criterion": "nope", "insufficient": 0, "correct": 1}, "criterion"),
        ({"criterion": "veracity", "insufficient": 0, "correct": 1}, "criterion"),
        ({"criterion": "relevance", "insufficient": 3, "correct": 1}, "insufficient_category"),
        ({"criterion": "relevance", "insufficient": 0}, "correct_category"),
        ({"criterion": "relevance", "insufficient": 0, "correct": 1, "fit_budget": 7}, "fit_budget"),
    ],
)
def test_bad_options_are_refused_naming_the_option(corpus, options, field):
    campaign, *_ = corpus
    with pytest.raises(EvidenceError) as refused:
        evidence_report(campaign=campaign, **options)
    assert refused.value.field == field
    assert str(refused.value).startswith(field)


def test_the_report_reads_the_campaign_in_a_constant_number_of_queries(corpus, django_assert_max_num_queries):
    campaign, *_ = corpus
    with django_assert_max_num_queries(3):
        evidence_report(campaign=campaign)


# The command


def run(*args: str) -> str:
    out = StringIO()
    call_command("evidence_coverage", *args, stdout=out)
    return out.getvalue()


def test_the_command_prints_json_with_the_budgets_and_metrics(corpus):
    data = json.loads(run("--campaign", "Evidence", "--budgets", "100,2", "--k", "1,2", "--format", "json"))
    assert data["budgets"] == [2, 100]
    assert [row["budget"] for row in data["coverage"]["overall"]] == [2, 100]
    assert data["coverage"]["overall"][1]["mean"] == pytest.approx((1 + 7 / 9) / 2)
    assert data["retrieval"]["HR"]["mrr"]["mean"] == 0.5
    assert data["coverage"]["overall"][0]["method"] == "percentile bootstrap over questions"


def test_the_command_puts_several_campaigns_side_by_side(corpus):
    other = make_campaign(name="Other retriever")
    answer = make_answer(campaign=other, theme="Finance", chunk_ids=("c1",))
    answer.question.gold_evidence = [{"text": "Texte c1."}]
    answer.question.save()
    table = run("--campaign", "Evidence", "--campaign", "Other retriever", "--budgets", "100")
    head = next(line for line in table.splitlines() if "Other retriever" in line)
    assert head.index("Evidence") < head.index("Other retriever")
    assert "1.000" in table
    data = json.loads(run("--campaign", "Evidence", "--campaign", "Other retriever", "--format", "json"))
    assert [d["campaign"] for d in data] == ["Evidence", "Other retriever"]


def test_the_command_prints_the_calibration(corpus):
    campaign, first, second = corpus
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    import_label(unit=Unit.objects.get(answer=first, level=Level.ANSWER), criterion=relevance, value=1)
    table = run(
        "--campaign",
        "Evidence",
        "--criterion",
        "relevance",
        "--insufficient-category",
        "0",
        "--correct-category",
        "1",
    )
    assert "Calibration of 'Evidence' on 'relevance' at N=1000 (1 labelled answers)" in table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budgets", "100,abc"], "--budgets: 'abc' is not a positive whole number"),
        (["--budgets", "0"], "--budgets: '0' is not a positive whole number"),
        (["--k", "-1"], "--k: '-1'"),
        (
            ["--criterion", "veracity", "--insufficient-category", "0", "--correct-category", "1"],
            "--criterion:",
        ),
        (
            ["--criterion", "relevance", "--insufficient-category", "5", "--correct-category", "1"],
            "--insufficient-category:",
        ),
    ],
)
def test_the_command_refuses_bad_options_naming_them(corpus, args, message):
    with pytest.raises(CommandError) as refused:
        run("--campaign", "Evidence", *args)
    assert str(refused.value).startswith(message)


def test_the_command_refuses_an_unknown_campaign(db):
    with pytest.raises(CommandError, match="--campaign: campaign 'Nope' does not exist"):
        run("--campaign", "Nope")
