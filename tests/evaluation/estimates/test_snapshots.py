"""Report snapshots: stored when numbers change, scheduled once per burst of labels, recomputed
after a judge run and after human labels; two campaigns compared with a hand-checked difference."""

from __future__ import annotations

import math

import pytest
from django.test import override_settings
from django.utils import timezone
from scipy.stats import t as student_t

from annotation.models import Criterion, Label, Level, Role, Sample, SampleItem, Stage, Unit
from annotation.workflow import next_unit, open_slots, submit_label
from evaluation.estimates import codec, snapshots
from evaluation.estimates import report as report_module
from evaluation.estimates.codec import report_as_json
from evaluation.estimates.report import compute_report
from evaluation.estimates.snapshots import STALE_SCHEDULE
from evaluation.jobs import start_judge_run
from evaluation.judge import runs
from evaluation.measures import comparison
from evaluation.models import EstimateSchedule, Judge, Judgment, ReportSnapshot
from evaluation.reports import read
from evaluation.templatetags import report_extras
from inference import intervals, paired
from tests.factories import add_member, make_answer, make_campaign, make_user
from tests.judged import judged_campaign


def test_record_snapshots_stores_both_methods_per_judge_with_the_report_json(campaign):
    criterion, imported, _ = judged_campaign(campaign)
    stored = snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.MANUAL)
    assert sorted(s.method for s in stored) == ["robust", "study"]
    for snap in stored:
        report = compute_report(criterion=criterion, judge=imported, alpha=0.05, method=snap.method)
        # The report's JSON, and its overall estimates decomposed by question, as the comparison of
        # versions reads them.
        linears = comparison.overall_by_question(
            criterion=criterion, judge=imported, method=snap.method, alpha=0.05
        )
        assert snap.data == {
            **report_as_json(report=report),
            snapshots.BY_QUESTION: comparison.linears_as_json(linears),
        }
        assert snap.data[snapshots.BY_QUESTION]["ppi"]["estimate"] == pytest.approx(report.overall.ppi.mean)
        assert snap.n_human == report.overall.n_human == 42
        assert snap.n_judge == report.overall.n_judge
        assert snap.alpha == 0.05 and snap.judge == imported and snap.campaign == campaign


def test_nothing_is_stored_again_until_a_number_changes(campaign):
    criterion, _, _ = judged_campaign(campaign)
    first = snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.MANUAL)
    assert len(first) == 2
    assert snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.MANUAL) == []
    # One more human label moves the estimates: both methods get a new snapshot.
    unit = Unit.objects.filter(campaign=campaign, level=Level.ANSWER).exclude(labels__isnull=False).first()
    Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=1)
    again = snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.LABELS)
    assert [s.n_human for s in again] == [43, 43]
    history = snapshots.history(criterion=criterion, judge=again[0].judge, method="robust", alpha=0.05)
    assert [s.n_human for s in history] == [42, 43]  # oldest first


def test_judges_without_a_successful_judgment_of_the_criterion_are_not_snapshotted(campaign):
    criterion, _, _ = judged_campaign(campaign)
    Judge.objects.create(campaign=campaign, name="idle", kind=Judge.Kind.OPENAI)
    stored = snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.MANUAL)
    assert {s.judge.name for s in stored} == {"imported"}


def test_schedule_refresh_is_taken_once_until_released_or_stale(campaign):
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    assert snapshots.schedule_refresh(criterion_id=criterion.pk, trigger="labels", delay_s=30)
    assert not snapshots.schedule_refresh(criterion_id=criterion.pk, trigger="labels", delay_s=30)
    # A schedule whose task was lost long ago does not block refreshes forever.
    EstimateSchedule.objects.filter(criterion=criterion).update(
        due_at=timezone.now() - STALE_SCHEDULE - STALE_SCHEDULE
    )
    assert snapshots.schedule_refresh(criterion_id=criterion.pk, trigger="labels", delay_s=30)


def test_refresh_releases_the_schedule_and_records_with_the_scheduled_trigger(campaign):
    criterion, _, _ = judged_campaign(campaign)
    assert snapshots.schedule_refresh(criterion_id=criterion.pk, trigger="import", delay_s=0)
    stored = snapshots.run_scheduled_refresh(criterion_id=criterion.pk)
    assert {s.trigger for s in stored} == {"import"}
    assert EstimateSchedule.objects.get(criterion=criterion).due_at is None
    # Run twice: nothing new.
    assert snapshots.run_scheduled_refresh(criterion_id=criterion.pk) == []


def test_refresh_of_a_deleted_criterion_does_nothing(campaign):
    assert snapshots.run_scheduled_refresh(criterion_id=987654) == []


@override_settings(ESTIMATES_REFRESH_DELAY_S=0)
def test_a_burst_of_labels_schedules_one_refresh_that_snapshots_the_new_final_label(
    campaign, django_capture_on_commit_callbacks
):
    """Review mode: a label then a confirming review make a final label; the signal's listener
    schedules one recomputation, which (eager in tests) stores a snapshot counting it."""
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    answers = [make_answer(campaign=campaign) for _ in range(4)]
    for answer in answers:
        unit = Unit.objects.get(answer=answer, level=Level.ANSWER)
        Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=1)
    sample = Sample.objects.create(campaign=campaign, criterion=criterion, status=Sample.Status.DONE)
    for unit in Unit.objects.filter(campaign=campaign, level=Level.ANSWER):
        SampleItem.objects.create(
            sample=sample, unit=unit, theme=unit.theme, cluster=0, cluster_size=4, inclusion_probability=1
        )
    open_slots.rebuild(criterion=Criterion.objects.select_related("campaign").get(pk=criterion.pk))
    labeler, reviewer = make_user(username="l1"), make_user(username="r1")
    add_member(campaign=campaign, user=labeler, roles=[Role.ANNOTATOR])
    add_member(campaign=campaign, user=reviewer, roles=[Role.REVIEWER])

    with django_capture_on_commit_callbacks(execute=True):
        unit = next_unit(user=labeler, criterion=criterion, stage=Stage.LABEL)
        submit_label(user=labeler, unit_id=unit.pk, criterion=criterion, stage=Stage.LABEL, value=1)
        reviewed = next_unit(user=reviewer, criterion=criterion, stage=Stage.REVIEW)
        submit_label(user=reviewer, unit_id=reviewed.pk, criterion=criterion, stage=Stage.REVIEW, value=1)

    kept = ReportSnapshot.objects.filter(criterion=criterion)
    assert {s.trigger for s in kept} == {"labels"}
    latest = kept.filter(method="study").first()
    assert latest.n_human == 1 and latest.data["overall"]["n_human"] == 1


def test_a_label_rolled_back_sends_nothing(campaign, django_capture_on_commit_callbacks):
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    make_answer(campaign=campaign)
    user = make_user(username="nobody")  # no role: the submit is refused before anything is written
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(Exception):  # noqa: B017
        submit_label(
            user=user,
            unit_id=Unit.objects.filter(level=Level.ANSWER).first().pk,
            criterion=criterion,
            stage=Stage.LABEL,
            value=1,
        )
    assert callbacks == []


def test_a_finished_judge_run_snapshots_the_estimates(campaign, django_capture_on_commit_callbacks):
    criterion, _, _ = judged_campaign(campaign)
    judge = runs.get_or_create_judge(campaign=campaign, name=runs.LEXICAL)
    with django_capture_on_commit_callbacks(execute=True):
        run = start_judge_run(criterion=criterion, judge=judge)
    run.refresh_from_db()
    assert run.status == "done"
    lexical = ReportSnapshot.objects.filter(criterion=criterion, judge=judge)
    assert {s.trigger for s in lexical} == {"judge_run"}
    assert {s.method for s in lexical} == {"robust", "study"}


def test_difference_adds_standard_errors_in_quadrature_by_hand():
    # Normal interval: 0.6 +- 0.1 at alpha 0.05 -> se = 0.1 / 1.959964; t interval with 9 df:
    # 0.7 +- 0.2262157 -> se = 0.2262157 / 2.262157 = 0.1.
    left = intervals.Interval(mean=0.6, lo=0.5, hi=0.7, method="a", alpha=0.05, n=10)
    right = intervals.Interval(
        mean=0.7, lo=0.7 - 0.2262157, hi=0.7 + 0.2262157, method="b", alpha=0.05, n=10, df=9
    )
    diff = paired.difference(left=left, right=right, alpha=0.05)
    se = math.hypot(0.1 / 1.959964, 0.1)
    assert diff.mean == pytest.approx(0.1)
    # Welch and Satterthwaite: (v_l + v_r)^2 / (v_r^2 / 9), the normal side infinite: 14 df.
    v_left, v_right = (0.1 / 1.959964) ** 2, 0.1**2
    assert diff.df == math.floor((v_left + v_right) ** 2 / (v_right**2 / 9)) == 14
    assert diff.hi - diff.mean == pytest.approx(student_t.ppf(0.975, 14) * se, rel=1e-5)
    assert not diff.excludes(0)
    unbounded = intervals.Interval(mean=0.5, lo=-math.inf, hi=math.inf, method="c", alpha=0.05, n=1)
    assert paired.difference(left=left, right=unbounded, alpha=0.05) is None


def test_compare_reports_lines_up_themes_of_either_campaign_then_overall(db):
    first, second = make_campaign(name="v1"), make_campaign(name="v2")
    criterion_a, judge_a, _ = judged_campaign(first)
    # v2 has one more theme.
    criterion_b, judge_b, _ = judged_campaign(second)
    extra = make_answer(campaign=second, theme="Juridique")
    Judgment.objects.create(
        unit=Unit.objects.get(answer=extra, level=Level.ANSWER), criterion=criterion_b, judge=judge_b, value=1
    )
    left = compute_report(criterion=criterion_a, judge=judge_a, method="study")
    right = compute_report(criterion=criterion_b, judge=judge_b, method="study")
    rows = comparison.compare_reports(left=left, right=right)
    assert [row.theme for row in rows][-1] == "overall"
    juridique = next(row for row in rows if row.theme == "Juridique")
    assert juridique.left is None and juridique.difference is None
    finance = next(row for row in rows if row.theme == "Finance")
    assert finance.difference.mean == pytest.approx(finance.right.ppi.mean - finance.left.ppi.mean)
    with pytest.raises(ValueError, match="same alpha"):
        comparison.compare_reports(
            left=left, right=compute_report(criterion=criterion_b, judge=judge_b, alpha=0.1)
        )


@pytest.mark.parametrize("method", ["robust", "study"])
def test_a_report_comes_back_from_its_json_with_the_same_numbers(method, campaign):
    criterion, judge, _ = judged_campaign(campaign)
    # One theme with a single label: an estimate with an infinite interval, stored as None.
    answer = make_answer(campaign=campaign, theme="Lonely")
    unit = Unit.objects.get(answer=answer, level=Level.ANSWER)
    Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=1)
    Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=1)
    report = compute_report(criterion=criterion, judge=judge, method=method, by_difficulty=True)
    data = report_as_json(report=report)
    back = codec.report_from_json(data=data)
    assert report_as_json(report=back) == data
    lonely = next(group for group in back.themes if group.theme == "Lonely")
    assert lonely.human.mean == 1.0 and math.isinf(lonely.human.hi)
    for group, original in zip([*back.themes, back.overall], [*report.themes, report.overall], strict=True):
        for name in ("human", "judge", "ppi"):
            a, b = getattr(group, name), getattr(original, name)
            assert (a.mean, a.halfwidth) == pytest.approx((b.mean, b.halfwidth), nan_ok=True), name
        assert group.ppi.lam == original.ppi.lam and group.agreement == original.agreement


def test_a_label_that_moves_no_number_still_gets_a_newer_snapshot_once(campaign):
    """A withdrawn first label changes no number; the latest snapshot would otherwise look stale
    for ever, recomputation or not."""
    criterion, judge, _ = judged_campaign(campaign)
    first = snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    unit = Unit.objects.filter(campaign=campaign, level=Level.ANSWER, labels__isnull=True).first()
    user = make_user(username="withdrawn")
    Label.objects.create(unit=unit, criterion=criterion, stage=Stage.LABEL, user=user, value=None)
    robust = ReportSnapshot.objects.get(pk=next(s.pk for s in first if s.method == "robust"))
    assert read.changes_since(snapshot=robust, criterion=criterion).labels
    again = snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.LABELS)
    assert len(again) == 2
    for newer, older in zip(again, first, strict=True):
        # The same numbers; the withdrawn unit now counted as waiting for a label.
        assert {k: v for k, v in newer.data.items() if k != "versions"} == {
            k: v for k, v in older.data.items() if k != "versions"
        }
        states = newer.data["versions"]["label_states"]
        assert states["needs_label"] == older.data["versions"]["label_states"]["needs_label"] + 1
    assert not read.changes_since(snapshot=again[0], criterion=criterion).stale
    assert snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.LABELS) == []


def test_a_label_recorded_during_the_computation_leaves_the_snapshot_stale(campaign, monkeypatch):
    """A snapshot is dated when its computation started: a label that arrives while it runs may
    or may not be in its numbers, so it counts as newer."""
    criterion, _, _ = judged_campaign(campaign)
    unit = Unit.objects.filter(campaign=campaign, level=Level.ANSWER, labels__isnull=True).first()
    original = report_module.compute_report

    def slow_compute(**kwargs):
        report = original(**kwargs)
        if not Label.objects.filter(unit=unit).exists():
            Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=1)
        return report

    monkeypatch.setattr(snapshots, "compute_report", slow_compute)
    stored = snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.MANUAL)
    assert read.changes_since(snapshot=stored[0], criterion=criterion).labels


def test_a_report_read_prefers_the_latest_snapshot_of_its_parameters(campaign):
    criterion, judge, _ = judged_campaign(campaign)
    request = read.report_request(criterion=criterion, judge=judge.name)
    computed = read.read_report(request)
    assert not computed.provenance.from_snapshot and computed.provenance.computed_because == "no_snapshot"
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    shown = read.read_report(request)
    latest = snapshots.latest_snapshot(criterion=criterion, judge=judge, method="robust", alpha=0.05)
    assert shown.provenance.from_snapshot and shown.provenance.trigger == "import"
    assert shown.provenance.as_of == latest.created_at
    stored = {key: value for key, value in latest.data.items() if key != snapshots.BY_QUESTION}
    assert report_as_json(report=shown.report) == stored
    assert shown.provenance.changes == read.Changes()
    other = read.read_report(read.report_request(criterion=criterion, judge=judge.name, alpha=0.1))
    assert other.provenance.computed_because == "parameters" and other.provenance.changes is None
    by_difficulty = read.read_report(read.report_request(criterion=criterion, by_difficulty=True))
    assert by_difficulty.provenance.computed_because == "parameters"


def _group_json(**overrides):
    data = {
        "theme": "Finance",
        "n_human": 5,
        "n_paired": 5,
        "n_judge": 40,
        "human_mean": 0.8,
        "human_ci": [0.45, 1.15],
        "judge_mean": 0.9,
        "judge_ci": [0.8, 1.0],
        "ppi_mean": 0.85,
        "ppi_ci": [0.6, 1.1],
        "lambda": 0.5,
        "method": "study",
        "size": 45,
    }
    return {**data, **overrides}


def test_an_old_snapshot_with_bounds_outside_0_1_is_shown_clipped():
    group = codec.group_from_json(data=_group_json(), alpha=0.05)
    # The numbers stored are kept (the standard error of the comparison reads them) ...
    assert (group.ppi.lo, group.ppi.hi) == (0.6, 1.1) and group.ppi.clipped
    # ... and shown clipped, flagged, on the report, compare and history pages.
    assert (group.ppi.shown_lo, group.ppi.shown_hi) == (0.6, 1.0)
    assert report_extras.interval(group.ppi) == "[60.0%, 100.0%] (bound clipped to [0, 1])"
    assert report_extras.interval(group.human) == "[45.0%, 100.0%] (bound clipped to [0, 1])"
    assert report_extras.interval(group.judge) == "[80.0%, 100.0%]"
    assert report_extras.snapshot_cell(_group_json()) == "85.0% [60.0%, 100.0%] (bound clipped to [0, 1])"


def test_a_new_snapshot_keeps_the_raw_bounds_beside_the_shown_ones():
    group = codec.group_from_json(
        data=_group_json(
            ppi_ci=[0.6, 1.0], ppi_ci_raw=[0.6, 1.1], human_ci=[0.45, 1.0], human_ci_raw=[0.45, 1.15]
        ),
        alpha=0.05,
    )
    assert (group.ppi.lo, group.ppi.hi) == (0.6, 1.1) and (group.ppi.shown_lo, group.ppi.shown_hi) == (
        0.6,
        1.0,
    )
    assert group.ppi.halfwidth == pytest.approx(0.25)
    cell = report_extras.snapshot_cell(_group_json(ppi_ci=[0.6, 1.0], ppi_ci_raw=[0.6, 1.1]))
    assert cell == "85.0% [60.0%, 100.0%] (bound clipped to [0, 1])"
    assert report_extras.snapshot_cell(_group_json(ppi_ci=[0.6, 0.95])) == "85.0% [60.0%, 95.0%]"


def test_robust_snapshot_keeps_the_ppi_standard_error_for_comparisons(campaign):
    criterion, judge, _ = judged_campaign(campaign)
    report = compute_report(criterion=criterion, judge=judge, method="robust")
    data = report_as_json(report=report)
    back = codec.report_from_json(data=data)
    for group, original in zip([*back.themes, back.overall], [*report.themes, report.overall], strict=True):
        if original.ppi.se is not None and math.isfinite(original.ppi.se):
            assert intervals.standard_error(group.ppi) == intervals.standard_error(original.ppi)
        for name in ("human", "judge", "ppi"):
            interval = getattr(group, name)
            if math.isfinite(interval.lo):
                assert 0 <= interval.lo <= interval.hi <= 1
