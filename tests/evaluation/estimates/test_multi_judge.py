"""Several judges in one estimate, read from the database: the arrays are a one-judge report's with
a column per judge, a judge on a recorded share enters by inverse probability, and every road
(the request, the JSON, the command, the API) asks for it the same way."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Criterion, Label, Level, Unit
from evaluation.errors import EstimateError
from evaluation.estimates import multi_judge
from evaluation.estimates.report import compute_report
from evaluation.models import Judge, JudgeShareItem, Judgment
from evaluation.reports import read
from inference import notes
from inference.estimators.multi_ppi import JudgeTerm, multi_ppi
from tests.factories import add_member, api_token, make_user
from tests.multi_judged import LABELED, SHARE, two_judges


def arrays(criterion: Criterion, judges: list[Judge], theme: str):
    units = list(
        Unit.objects.filter(campaign=criterion.campaign, theme=theme, level=Level.ANSWER).order_by("id")
    )
    labels = {row.unit_id: row.value for row in Label.objects.filter(criterion=criterion)}
    values = {
        (row.judge_id, row.unit_id): float(row.value)
        for row in Judgment.objects.filter(criterion=criterion, judge__in=judges)
    }
    return units, labels, values


@pytest.mark.django_db
def test_two_judges_on_every_unit_are_multi_ppi_on_the_report_s_arrays():
    criterion, cheap, strong, _ = two_judges(share=False)
    # Both judges on every unit: the strong one's holes filled (it judged the labeled ones only).
    for unit in Unit.objects.filter(campaign=criterion.campaign, level=Level.ANSWER):
        Judgment.objects.get_or_create(unit=unit, criterion=criterion, judge=strong, defaults={"value": 1})
    report = multi_judge.compute_combined(criterion=criterion, judges=[cheap, strong], alpha=0.05)
    units, labels, values = arrays(criterion, [cheap, strong], "Finance")
    labeled = [unit for unit in units if unit.pk in labels]
    rest = [unit for unit in units if unit.pk not in labels]
    expected = multi_ppi(
        y=[float(labels[unit.pk] == 1) for unit in labeled],
        preds=[[values[(judge.pk, unit.pk)] for judge in (cheap, strong)] for unit in labeled],
        terms=[
            JudgeTerm(values=[values[(judge.pk, unit.pk)] for unit in units]) for judge in (cheap, strong)
        ],
        pool=[[values[(judge.pk, unit.pk)] for judge in (cheap, strong)] for unit in rest],
        population=len(units),
        alpha=0.05,
        clusters=[unit.answer_id for unit in labeled],
    )
    finance = report.themes[0]
    assert finance.theme == "Finance" and finance.size == 30 and finance.n_paired == LABELED
    assert (finance.estimate.mean, finance.estimate.lo, finance.estimate.hi) == (
        expected.interval.mean,
        expected.interval.lo,
        expected.interval.hi,
    )
    assert [part.coefficient for part in finance.judges] == list(expected.coefficients)
    assert [part.share for part in finance.judges] == [None, None]
    assert notes.NO_SAMPLE in finance.notes
    # The human labels alone, as the one-judge report computes them.
    single = compute_report(criterion=criterion, judge=cheap)
    assert finance.human.mean == single.themes[0].human.mean
    assert finance.human.halfwidth == pytest.approx(single.themes[0].human.halfwidth)
    assert report.overall.estimate.method == "stratified ppi++-multi"


@pytest.mark.django_db
def test_a_judge_on_a_recorded_share_enters_by_inverse_probability():
    criterion, cheap, strong, truths = two_judges(share=True)
    report = multi_judge.compute_combined(criterion=criterion, judges=[cheap, strong], alpha=0.05)
    finance = report.themes[0]
    strong_part = finance.judges[1]
    drawn = JudgeShareItem.objects.filter(share__judge=strong, unit__theme="Finance").count()
    assert strong_part.share == pytest.approx(SHARE) and strong_part.units == drawn
    assert notes.SHARE_TERM % {"judge": "strong", "share": "40%"} in finance.notes
    assert finance.estimate.lo <= sum(truths.values()) / len(truths) + 0.3
    data = multi_judge.combined_as_data(report)
    assert data["judges"] == ["cheap", "strong"] and data["method"] == "ppi++-multi"
    assert data["themes"][0]["judges"][1]["share"] == pytest.approx(SHARE)
    assert 0 <= data["themes"][0]["judges"][1]["variance_reduction"] <= 1


@pytest.mark.django_db
def test_a_judge_with_holes_and_no_recorded_share_is_said_so():
    criterion, cheap, strong, _ = two_judges(share=False)
    report = multi_judge.compute_combined(criterion=criterion, judges=[cheap, strong], alpha=0.05)
    finance = report.themes[0]
    judged = Judgment.objects.filter(judge=strong, unit__theme="Finance").count()
    assert notes.NO_RECORDED_SHARE % {"judge": "strong", "judged": judged, "size": 30} in finance.notes


@pytest.mark.django_db
def test_the_request_checks_the_judges_to_combine():
    criterion, cheap, strong, _ = two_judges(share=True)
    request = read.report_request(criterion=criterion, judge="cheap", combine=["strong", "cheap"])
    assert [judge.name for judge in request.combine] == ["cheap", "strong"]
    assert request.snapshotted  # the one judge's report is read as before
    for combine, method, message in [
        (["cheap"], "robust", "at least two judges"),
        (["cheap", "nobody"], "robust", "'nobody' has no successful judgment"),
        (["cheap", "strong"], "study", "robust method only"),
    ]:
        with pytest.raises(EstimateError) as refused:
            read.report_request(criterion=criterion, judge="cheap", method=method, combine=combine)
        assert refused.value.field == "combine" and message in str(refused.value)
    shown = read.read_report(request)
    data = read.report_as_data(shown)
    assert data["judge"] == "cheap" and data["combined"]["judges"] == ["cheap", "strong"]
    assert "combined" not in read.report_as_data(
        read.read_report(read.report_request(criterion=criterion, judge="cheap"))
    )


@pytest.mark.django_db
def test_the_command_and_the_api_combine_judges(client):
    criterion, cheap, strong, _ = two_judges(share=True)
    out = io.StringIO()
    call_command(
        "report", "--campaign", "Two judges", "--criterion", "relevance", "--judge", "cheap", "--combine",
        "cheap,strong", "--format", "json", stdout=out,
    )  # fmt: skip
    data = json.loads(out.getvalue())
    assert data["combined"]["judges"] == ["cheap", "strong"]
    table = io.StringIO()
    call_command(
        "report", "--campaign", "Two judges", "--criterion", "relevance", "--judge", "cheap", "--combine",
        "cheap,strong", stdout=table,
    )  # fmt: skip
    assert "several judges combined (cheap, strong" in table.getvalue()
    with pytest.raises(CommandError, match="--combine"):
        call_command(
            "report", "--campaign", "Two judges", "--criterion", "relevance", "--judge", "cheap", "--combine",
            "cheap", stdout=io.StringIO(),
        )  # fmt: skip
    analyst = make_user()
    add_member(campaign=criterion.campaign, user=analyst, roles=["analyst"])
    token = api_token(analyst)
    url = f"/api/v1/campaigns/{criterion.campaign.slug}/estimates/relevance"
    answer = client.get(
        url, {"judge": "cheap", "combine": "cheap,strong"}, HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert answer.status_code == 200
    assert answer.json()["combined"]["overall"]["theme"] == "overall"
    refused = client.get(url, {"judge": "cheap", "combine": "cheap"}, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert refused.status_code == 400 and "combine" in refused.text
