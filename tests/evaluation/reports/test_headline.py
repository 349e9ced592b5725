"""How good the assistant is: each criterion's overall estimate read from the snapshots, the
judge-only figure where no human label exists, the change against the previous version as the
compare page computes it, and a bounded number of queries."""

from __future__ import annotations

import math

import pytest
from django.utils import timezone

from annotation.models import Criterion, Label
from evaluation.estimates import snapshots
from evaluation.measures import comparison
from evaluation.models import Judge, Judgment, ReportSnapshot
from evaluation.reports import headline, read
from tests.categorical import categorical_campaign
from tests.factories import make_campaign, make_judge
from tests.judged import version_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture
def versions():
    first = version_campaign("Assistant v1", seed=1, share=0.6)
    second = version_campaign("Assistant v2", seed=2, share=0.85)
    return first, second


def test_the_overall_estimate_is_the_reports_in_the_order_people_read_criteria(versions):
    (_, _, _), (second, relevance, judge) = versions
    found = headline.headlines(campaigns=[second], candidates=[second])[second.pk]
    assert [row.criterion.name for row in found.rows] == ["relevance", "veracity", "citation_support"]
    row = found.rows[0]
    report = read.read_report(read.report_request(criterion=relevance))
    assert row.judge == judge and row.shown == headline.PPI
    assert row.overall == report.binary.overall and row.estimate == report.binary.overall.ppi
    assert row.provenance.from_snapshot and row.change is None  # no previous version among the candidates
    # No judge has labelled veracity or citation support: no figure, said so.
    assert [row.no_judge for row in found.rows[1:]] == [headline.NO_JUDGE_YET] * 2


def test_without_human_labels_the_judges_figure_is_shown_as_such(db):
    campaign, relevance, _ = version_campaign("Judged only", seed=3, snapshot=False, labelled=0)
    assert not Label.objects.filter(criterion=relevance).exists()
    snapshots.record_snapshots(criterion=relevance, trigger=ReportSnapshot.Trigger.IMPORT)
    row = headline.headlines(campaigns=[campaign], candidates=[campaign])[campaign.pk].rows[0]
    assert row.shown == headline.JUDGE and row.overall.n_human == 0
    assert row.estimate == row.overall.judge and math.isfinite(row.estimate.mean)


def test_the_change_against_the_previous_version_is_the_compare_pages_paired_difference(versions):
    (first, _, _), (second, _, _) = versions
    found = headline.headlines(campaigns=[second], candidates=[first, second])[second.pk]
    assert found.previous == first
    change = found.rows[0].change
    compared = comparison.compare_versions(
        versions=comparison.versions_for(campaigns=[first, second], criterion="relevance")
    )
    row = next(r for r in compared.rows_of("ppi") if r.theme == "overall")
    assert change.previous == first and change.kind == headline.PPI
    assert change.difference == row.difference
    assert (change.before, change.after) == pytest.approx((row.left_value, row.right_value))
    assert change.difference.estimate > 0 and change.difference.significant == row.difference.significant
    # The first version has no previous one.
    assert headline.headlines(campaigns=[first], candidates=[first, second])[first.pk].previous is None


def test_a_snapshot_stored_before_snapshots_kept_their_decomposition_asks_for_a_recomputation(versions):
    (first, relevance, _), (second, _, _) = versions
    # Snapshots are kept as they were (a trigger on PostgreSQL): a newer one, as stored before.
    for snapshot in list(ReportSnapshot.objects.filter(criterion=relevance)):
        data = dict(snapshot.data)
        data.pop(snapshots.BY_QUESTION)
        snapshot.pk = None
        snapshot.data = data
        snapshot.created_at = timezone.now()
        snapshot.save()
    change = headline.headlines(campaigns=[second], candidates=[first, second])[second.pk].rows[0].change
    assert change.difference is None and change.missing == headline.NO_BY_QUESTION


def test_a_criterion_computed_when_read_is_left_to_load_after_the_page(db):
    campaign = make_campaign(name="Categories")
    correctness, _judge, _ = categorical_campaign(campaign)
    found = headline.headlines(campaigns=[campaign], candidates=[campaign])[campaign.pk]
    pending = next(row for row in found.rows if row.criterion == correctness)
    assert pending.pending and pending.parts == [] and pending.judge is not None
    # Asked for alone and computed: its groups' overall estimates, as its report gives them.
    alone = headline.headlines(campaigns=[campaign], candidates=[campaign], only="correctness", compute=True)
    row = alone[campaign.pk].rows[0]
    report = read.read_report(read.report_request(criterion=correctness)).report
    groups = {
        item.indicator.name: item.report.overall
        for item in report.estimates
        if item.indicator.kind == "group"
    }
    assert {part.name: part.overall for part in row.parts} == groups and not row.pending


def test_several_judges_and_no_primary_one_leave_the_choice_to_the_reader(versions):
    (_, _, _), (second, relevance, _) = versions
    make_judge(campaign=second, name="gpt", criteria=("relevance",))
    make_judge(campaign=second, name="mistral", criteria=("relevance",))
    row = headline.headlines(campaigns=[second], candidates=[second])[second.pk].rows[0]
    assert row.overall is None and row.no_judge == headline.CHOOSE_JUDGE


def test_the_headline_costs_four_queries_whatever_the_number_of_campaigns_and_criteria(
    versions, django_assert_num_queries
):
    (first, _, _), (second, _, _) = versions
    with django_assert_num_queries(4):
        few = headline.headlines(campaigns=[second], candidates=[first, second])
    third, _, _ = version_campaign("Assistant v3", seed=4)
    for campaign in (first, second, third):
        for name in ("veracity", "citation_support"):
            criterion = Criterion.objects.get(campaign=campaign, name=name)
            judge = Judge.objects.get(campaign=campaign, name="imported")
            units = criterion.campaign.units.filter(level=criterion.level)
            Judgment.objects.bulk_create(
                Judgment(unit=unit, criterion=criterion, judge=judge, value=1) for unit in units
            )
            snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    with django_assert_num_queries(4):
        many = headline.headlines(campaigns=[third, second, first], candidates=[first, second, third])
    assert len(few[second.pk].rows) == 3
    relevance, veracity, citation_support = many[third.pk].rows
    assert relevance.change.difference is not None and relevance.shown == headline.PPI
    # Judged, not labelled by people: the judge's figure, compared with the previous version's.
    assert veracity.shown == headline.JUDGE and veracity.change.kind == headline.JUDGE
    assert citation_support.no_judge == headline.NO_JUDGE_YET  # these answers cite no chunk
