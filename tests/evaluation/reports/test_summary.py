"""The report read top down: notes said once, labels counted by where they stand, the previous
version of the assistant and the change against it."""

from __future__ import annotations

import pytest

from annotation.models import AnnotationMode, Criterion, Role
from evaluation.estimates.report import compute_report
from evaluation.measures import comparison
from evaluation.models import Judge
from evaluation.reports import summary
from inference import notes
from tests.evaluation.measures.test_comparison import _outcomes, _version
from tests.factories import (
    label,
    make_answer_units,
    make_campaign,
    make_judge,
    member,
    sample_units,
)
from tests.judged import judged_campaign, study_campaign


def test_a_note_is_split_into_its_single_notes_with_the_estimator_they_are_about():
    joined = notes.OF_ESTIMATOR["PPI++"] % {"note": notes.joined([notes.FEW_EVENTS, notes.FLOORED])}
    assert summary.leaves(joined) == [("PPI++", notes.FEW_EVENTS), ("PPI++", notes.FLOORED)]
    assert summary.leaves(notes.NO_SAMPLE) == [("", notes.NO_SAMPLE)]
    assert summary.kind_of(notes.FEW_EVENTS) == summary.WILSON == summary.kind_of(notes.WILSON)
    assert summary.kind_of(notes.MISSING_JUDGMENTS % {"count": 3}) == summary.MISSING
    assert summary.kind_of("a text no template makes") == summary.OTHER


def test_every_template_of_a_note_has_a_kind():
    assert set(notes.PLAIN) == set(summary.KINDS)


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["robust", "study"])
def test_each_note_is_said_once_with_every_theme_it_applies_to(method):
    _campaign, criterion, judge, _ = study_campaign(name=f"Notes {method}")
    report = compute_report(criterion=criterion, judge=judge, method=method)
    groups = summary.grouped_notes(report)
    said = [text for group in groups for text, _ in group.notes]
    assert said and len(said) == len(set(said))
    for group in groups:
        for text, themes in group.notes:
            estimator, leaf = summary.leaves(text)[0]
            assert summary.kind_of(leaf) == group.kind
            # Exactly the groups whose notes hold it.
            holding = [
                g.theme
                for g in [*report.themes, report.overall]
                if any(
                    (e, single) == (estimator, leaf) for note in g.notes for e, single in summary.leaves(note)
                )
            ]
            assert themes == holding
            assert set(themes) <= set(group.themes)
    # Every single note of the report is among them.
    every = {
        notes.OF_ESTIMATOR[e] % {"note": leaf} if e else leaf
        for g in [*report.themes, report.overall]
        for note in g.notes
        for e, leaf in summary.leaves(note)
    }
    assert every == set(said)


@pytest.mark.django_db
def test_a_review_mode_report_counts_its_labelled_units_by_where_they_stand():
    """33 units labelled, one reviewed: 1 final, 32 awaiting review, as the report says."""
    campaign = make_campaign(name="Review mode", annotation_mode=AnnotationMode.REVIEW)
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    units = make_answer_units(campaign=campaign, count=35)
    sample_units(criterion=criterion, units=units)
    annotator = member(campaign, Role.ANNOTATOR, username="ann")
    reviewer = member(campaign, Role.REVIEWER, username="rev")
    for unit in units[:33]:
        label(annotator, criterion, "label", 1, unit=unit)
    label(reviewer, criterion, "review", 1, unit=units[0])
    label(reviewer, criterion, "review", 0, unit=units[1], comment="off topic")  # awaits adjudication
    judge = make_judge(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    report = compute_report(criterion=criterion, judge=judge)
    account = summary.label_account(report)
    assert account == summary.LabelAccount(
        labels=35, units=33, final=1, needs_review=31, needs_adjudication=1, needs_label=0
    )
    assert account.waiting == 32
    assert report.overall.n_human == account.final
    # A snapshot stored before the units were counted has no account: the page says less.
    assert summary.label_account(type("Old", (), {"versions": {"human_labels": []}})()) is None


@pytest.fixture
def versions(db):
    first = _version("Assistant v1", _outcomes(1, 0.0))
    second = _version("Assistant v2", _outcomes(2, 0.2))
    stranger = make_campaign(name="Another assistant")  # no question in common
    judged_campaign(stranger)
    return first, second, stranger


def test_the_previous_version_is_the_latest_earlier_campaign_sharing_question_ids(versions):
    first, second, stranger = versions
    criterion = Criterion.objects.get(campaign=second, name="relevance")
    assert (
        summary.previous_version(campaign=second, criterion=criterion, candidates=[first, stranger]) == first
    )
    # The reader may compare with none: no previous version.
    assert summary.previous_version(campaign=second, criterion=criterion, candidates=[stranger]) is None
    # The first version has no previous one (the second came after it).
    earliest = Criterion.objects.get(campaign=first, name="relevance")
    assert summary.previous_version(campaign=first, criterion=earliest, candidates=[second]) is None


def test_the_change_against_the_previous_version_is_the_compare_pages_ppi_rows(versions):
    first, second, _ = versions
    criterion = Criterion.objects.get(campaign=second, name="relevance")
    judge = Judge.objects.get(campaign=second, name="imported")
    change = summary.change_against_previous(
        campaign=second, criterion=criterion, judge=judge, method="robust", alpha=0.05, candidates=[first]
    )
    expected = comparison.compare_versions(
        versions=comparison.versions_for(campaigns=[first, second], criterion="relevance")
    ).rows_of(comparison.PPI)
    assert change is not None and change.error == "" and change.previous == first
    assert [(r.theme, r.left_value, r.right_value) for r in change.rows] == [
        (r.theme, r.left_value, r.right_value) for r in expected
    ]
    assert [r.difference.estimate for r in change.rows] == pytest.approx(
        [r.difference.estimate for r in expected]
    )
    assert change.overall.theme == "overall" and {r.theme for r in change.themes} == {"Finance", "IT"}
    assert change.shared == 20
