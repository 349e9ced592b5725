"""The judge alignment page's measure: a judge against the final human labels on a 2 x 2 table
worked by hand, its themes, its versions (judges of one model under two prompts) and its drift
by period, read in a constant number of queries."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Criterion, Label, Stage, Unit
from evaluation.measures import judge_alignment as measure
from evaluation.models import Judge, Judgment
from tests.factories import make_answer_units

# (human, judge): tp 4, fp 1, fn 2, tn 3.
TABLE = [(1, 1)] * 4 + [(0, 1)] + [(1, 0)] * 2 + [(0, 0)] * 3


def labelled(
    campaign, pairs, *, judge: Judge, theme: str = "Finance", at: datetime | None = None
) -> list[Unit]:
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    units = []
    for (human, verdict), unit in zip(
        pairs, make_answer_units(campaign=campaign, theme=theme, count=len(pairs)), strict=True
    ):
        if human is not None:
            Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=human)
        judgment = Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=verdict)
        if at is not None:
            Judgment.objects.filter(pk=judgment.pk).update(created_at=at)
        units.append(unit)
    return units


def relevance(campaign) -> Criterion:
    return Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")


def test_a_two_by_two_table_worked_by_hand(campaign):
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI, model="m")
    labelled(campaign, TABLE, judge=judge)
    # A unit without a final human label is left out.
    labelled(campaign, [(None, 1)], judge=judge)
    result = measure.compute_judge_alignment(criterion=relevance(campaign), alpha=0.05)
    assert result.empty == ""
    (version,) = result.judges
    overall = version.overall
    assert overall.n == 10 and overall.clusters == 10
    assert overall.confusion == {"tp": 4, "fp": 1, "fn": 2, "tn": 3}
    # Agreement 7/10 with Wilson's interval at n = 10 (one unit per answer): [39.68%, 89.22%].
    assert overall.agreement.mean == pytest.approx(0.7)
    assert overall.agreement.lo == pytest.approx(0.3968, abs=1e-4)
    assert overall.agreement.hi == pytest.approx(0.8922, abs=1e-4)
    assert overall.sensitivity.mean == pytest.approx(4 / 6)
    assert overall.specificity.mean == pytest.approx(3 / 4)
    # Chance agreement 0.6 x 0.5 + 0.4 x 0.5 = 0.5: kappa (0.7 - 0.5) / 0.5 = 0.4.
    assert overall.kappa.value == pytest.approx(0.4)
    # phi = (4 x 3 - 1 x 2) / sqrt(6 x 4 x 5 x 5) = 10 / sqrt(600): rho^2 = 1/6, factor 6/5.
    assert overall.factor.value == pytest.approx(1.2)
    # Ceiling at a = 0.7, p = 0.6: every disagreement a false negative, q = 0.3, Cov = 0.12,
    # rho^2 = 0.0144 / (0.24 x 0.21) = 2/7, factor 7/5.
    assert overall.ceiling.value == pytest.approx(1.4, abs=1e-4)
    assert [theme.theme for theme in version.themes] == ["Finance"]
    assert version.themes[0].alignment.confusion == overall.confusion
    # One month: the halves by date, 5 units each.
    assert [(p.kind, p.key, p.n) for p in version.periods] == [("half", "1", 5), ("half", "2", 5)]
    data = measure.judge_alignment_as_json(result=result)
    assert data["judges"][0]["overall"]["confusion"] == {"tp": 4, "fp": 1, "fn": 2, "tn": 3}
    assert data["judges"][0]["overall"]["kappa"]["value"] == pytest.approx(0.4)


def test_themes_are_measured_apart(campaign):
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    labelled(campaign, [(1, 1), (0, 0)], judge=judge, theme="IT")
    labelled(campaign, [(1, 0), (0, 1)], judge=judge, theme="Finance")
    (version,) = measure.compute_judge_alignment(criterion=relevance(campaign), alpha=0.05).judges
    by_theme = {theme.theme: theme.alignment for theme in version.themes}
    assert by_theme["IT"].agreement.mean == 1.0 and by_theme["Finance"].agreement.mean == 0.0
    assert version.overall.agreement.mean == 0.5


def test_a_drop_from_one_month_to_the_next_is_flagged(campaign):
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    labelled(campaign, [(1, 1), (0, 0)] * 15, judge=judge, at=datetime(2026, 10, 5, tzinfo=UTC))
    labelled(campaign, [(1, 0), (0, 0)] * 15, judge=judge, at=datetime(2026, 11, 5, tzinfo=UTC))
    result = measure.compute_judge_alignment(criterion=relevance(campaign), alpha=0.05)
    (drift,) = result.drifts
    assert (drift.kind, drift.before, drift.after, drift.n, drift.paired) == (
        "month",
        "2026-10",
        "2026-11",
        60,
        False,
    )
    assert drift.change.mean == pytest.approx(-0.5)
    assert drift.change.hi < 0 and drift.flagged
    assert result.flagged == [drift]


def test_a_steady_judge_is_not_flagged(campaign):
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    labelled(campaign, [(1, 1), (0, 0), (1, 0)] * 4, judge=judge, at=datetime(2026, 10, 5, tzinfo=UTC))
    labelled(campaign, [(1, 1), (0, 0), (1, 0)] * 4, judge=judge, at=datetime(2026, 11, 5, tzinfo=UTC))
    (drift,) = measure.compute_judge_alignment(criterion=relevance(campaign), alpha=0.05).drifts
    assert drift.change.mean == pytest.approx(0.0) and not drift.flagged


def test_two_prompt_versions_of_a_model_are_compared_on_their_common_units(campaign):
    criterion = relevance(campaign)
    first = Judge.objects.create(
        campaign=campaign, name="gpt-v1", kind=Judge.Kind.OPENAI, model="m", prompt_version="v1"
    )
    second = Judge.objects.create(
        campaign=campaign, name="gpt-v2", kind=Judge.Kind.OPENAI, model="m", prompt_version="v2"
    )
    other = Judge.objects.create(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    units = labelled(campaign, [(1, 1), (0, 0)] * 20, judge=first)
    for index, unit in enumerate(units):
        human = 1 - index % 2
        # The second prompt errs on every other unit labelled 1.
        verdict = human if human == 0 or index % 4 else 0
        Judgment.objects.create(unit=unit, criterion=criterion, judge=second, value=verdict)
        Judgment.objects.create(unit=unit, criterion=criterion, judge=other, value=human)
    result = measure.compute_judge_alignment(criterion=criterion, alpha=0.05)
    assert [v.judge.name for v in result.judges] == ["lexical", "gpt-v1", "gpt-v2"]
    assert [v.line for v in result.judges] == ["lexical", "openai:m", "openai:m"]
    (drift,) = [d for d in result.drifts if d.kind == measure.PROMPT]
    assert (drift.before, drift.after, drift.n, drift.paired) == ("gpt-v1", "gpt-v2", 40, True)
    assert drift.change.mean == pytest.approx(-0.25)
    assert drift.flagged


def test_nothing_to_show_says_why(campaign):
    criterion = relevance(campaign)
    assert measure.compute_judge_alignment(criterion=criterion, alpha=0.05).empty == measure.NO_JUDGE
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    labelled(campaign, [(None, 1)], judge=judge)
    assert measure.compute_judge_alignment(criterion=criterion, alpha=0.05).empty == measure.NO_LABELS


def test_queries_do_not_grow_with_units_or_judges(campaign):
    first = Judge.objects.create(campaign=campaign, name="a", kind=Judge.Kind.OPENAI)
    labelled(campaign, [(1, 1), (0, 0)] * 3, judge=first)

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            measure.compute_judge_alignment(criterion=relevance(campaign), alpha=0.05)
        return len(queries)

    few = count()
    second = Judge.objects.create(campaign=campaign, name="b", kind=Judge.Kind.LEXICAL)
    labelled(campaign, [(1, 0), (0, 0)] * 20, judge=second)
    assert count() == few
