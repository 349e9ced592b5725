"""The template filters and tags of the evaluation pages: numbers, intervals, charts."""

from __future__ import annotations

import math

import pytest
from django.template import Context, Template

from evaluation.estimates.report import GroupEstimate, Report
from evaluation.measures.stability import QuestionStability
from evaluation.reports.read import Changes
from evaluation.templatetags import report_charts
from evaluation.templatetags import report_extras as extras
from inference import intervals


def interval(mean: float, lo: float, hi: float) -> intervals.Interval:
    return intervals.Interval(mean=mean, lo=lo, hi=hi, method="m", alpha=0.05, n=10)


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.1234, "12.3%"), (1, "100.0%"), (0, "0.0%"), (None, "—"), ("", "—"), (math.nan, "—"), (math.inf, "—")],
)
def test_pct_shows_a_rate_with_one_decimal_or_a_dash(value, text):
    assert extras.pct(value) == text


def test_number_rounds_to_the_digits_asked():
    assert extras.number(0.4567) == "0.46"
    assert extras.number(41.6, 0) == "42"
    assert extras.number(math.nan) == extras.number(None) == "—"


def test_interval_and_halfwidth_of_bounded_unbounded_and_missing_estimates():
    bounded = interval(0.5, 0.4, 0.62)
    assert extras.interval(bounded) == "[40.0%, 62.0%]"
    assert extras.halfwidth(bounded) == "±11.0 pts"
    single = interval(1.0, -math.inf, math.inf)
    assert extras.interval(single) == "unbounded" and extras.halfwidth(single) == "∞"
    missing = interval(math.nan, math.nan, math.nan)
    assert extras.interval(missing) == extras.halfwidth(missing) == "—"
    assert extras.interval(None) == extras.halfwidth(None) == "—"


def test_points_signed_points_and_degrees():
    assert extras.points(0.0512) == "±5.1 pts"
    assert extras.signed_points(-0.05) == "-5.0 pts" and extras.signed_points(0.031) == "+3.1 pts"
    assert extras.signed(0.2) == "+20.0" and extras.signed(None) == "—"
    assert extras.degrees(12.0) == "12" and extras.degrees(45.26) == "45.3" and extras.degrees(None) == ""


def test_confidence_and_points_of_a_parameter():
    assert extras.confidence(0.05) == "95%" and extras.confidence(0.1) == "90%"
    assert extras.in_points(0.05) == "5" and extras.in_points(0.025) == "2.5"


@pytest.mark.parametrize(
    ("group", "text"),
    [
        ({"ppi_mean": 0.5, "ppi_ci": [0.4, 0.6]}, "50.0% [40.0%, 60.0%]"),
        ({"ppi_mean": 1.0, "ppi_ci": [None, None]}, "100.0% (unbounded)"),
        ({"ppi_mean": None, "ppi_ci": [None, None]}, "—"),
        (None, "—"),
        ({}, "—"),
    ],
)
def test_snapshot_cell_reads_a_groups_json(group, text):
    assert extras.snapshot_cell(group) == text


def test_changes_text_lists_what_was_recorded_since():
    assert extras.changes_text(Changes()) == "" and extras.changes_text(None) == ""
    assert extras.changes_text(Changes(labels=True, sample=True)) == (
        "new human labels, a new sample (other design weights)"
    )


def test_templates_load_the_filters():
    rendered = Template(
        "{% load report_extras %}{{ rate|pct }} {{ alpha|confidence }} {{ missing|pct }}"
    ).render(Context({"rate": 0.25, "alpha": 0.1}))
    assert rendered == "25.0% 90% —"


def test_the_report_chart_escapes_theme_names():
    def group(theme: str) -> GroupEstimate:
        est = interval(0.5, 0.4, 0.6)
        return GroupEstimate(
            theme=theme, difficulty=None, method="m", size=10, n_human=5, n_paired=5, n_judge=10,
            human=est, judge=est, ppi=est, agreement=None, effective_n=5.0, missing_judgments=[],
            weighted=False,
        )  # fmt: skip

    report = Report(
        campaign="c", criterion="relevance", level="answer", judge="j", alpha=0.05, method="robust",
        sample_id=None, themes=[group("<b>RH</b>")], overall=group("overall"),
    )  # fmt: skip
    svg = report_charts.report_chart(report)
    assert "<svg" in svg and "<b>RH</b>" not in svg and "&lt;b&gt;RH&lt;/b&gt;" in svg
    assert "95% intervals" in svg


def test_interval_never_shows_a_bound_outside_0_1_and_says_when_it_clipped():
    study = interval(0.1, -0.05, 0.25)
    assert extras.interval(study) == "[0.0%, 25.0%] (bound clipped to [0, 1])"
    assert extras.interval(interval(0.97, 0.9, 1.04)) == "[90.0%, 100.0%] (bound clipped to [0, 1])"
    assert extras.interval(interval(1.0, 1.0, 1.0)) == "[100.0%, 100.0%]"
    # The half-width stays the computed interval's (what the planner reads).
    assert extras.halfwidth(study) == "±15.0 pts"


def test_the_page_shows_the_clipped_mark_through_the_template():
    rendered = Template("{% load report_extras %}{{ value|interval }}").render(
        Context({"value": interval(0.683, 0.202, 1.164)})
    )
    assert rendered == "[20.2%, 100.0%] (bound clipped to [0, 1])"


def test_number_bounds_of_a_non_rate_interval_in_english_and_french():
    from django.utils import translation

    from inference.reliability.krippendorff import AlphaInterval

    bounds = AlphaInterval(lo=-0.0312, hi=0.98, level=0.95, resamples=1000, undefined=0)
    assert extras.number_bounds(bounds) == "[-0.03, 0.98]"
    assert extras.number_bounds(None) == "—"
    with translation.override("fr"):
        assert extras.number_bounds(bounds) == "[-0,03\u00a0; 0,98]"


def test_repetition_values_are_labels_for_answers_and_rates_for_sentences():
    row = QuestionStability(
        question_id=1,
        external_id="Q",
        theme="T",
        difficulty="",
        repetitions=[1, 2, 3],
        values=[1.0, 0.0, 1.0],
        rate=2 / 3,
        spread=0.58,
        least=0.0,
        greatest=1.0,
        disagree=True,
    )
    assert extras.repetition_values(row) == "1 0 1"
    assert extras.repetition_values(row, "sentence") == "100.0% 0.0% 100.0%"
    assert extras.width_points(0.1234) == "12.3 pts" and extras.width_points(float("nan")) == "—"


def test_p_value_estimate_title_and_difference_bounds():
    from django.utils import translation

    from inference.paired import PairedDifference

    assert extras.p_value(0.0543) == "0.054"
    assert extras.p_value(0.0004) == "< 0.001"
    assert extras.p_value(math.nan) == "—"
    assert extras.estimate_title("ppi") == "PPI++"
    assert extras.estimate_title("response") == "Response"
    diff = PairedDifference(
        estimate=0.1, se=0.05, df=9, lo=-0.031, hi=0.12, p_value=0.06, independent_se=0.07,
        questions=10, shared=10, degenerate=False, alpha=0.05,
    )  # fmt: skip
    assert extras.difference_bounds(diff) == "[-3.1, +12.0]"
    assert extras.difference_bounds(None) == ""
    with translation.override("fr"):
        assert extras.p_value(0.0543) == "0,054"


# Methods by name, whole numbers


def test_every_method_the_estimators_name_has_a_shown_name_in_both_languages():
    from django.utils import translation

    from evaluation.estimates import params
    from inference.estimators import ppi

    keys = [*ppi.METHODS, *params.METHODS]
    assert set(keys) <= set(extras.METHOD_NAMES)
    with translation.override("fr"):
        french = {key: extras.method_name(key) for key in extras.METHOD_NAMES}
    with translation.override("en"):
        english = {key: extras.method_name(key) for key in extras.METHOD_NAMES}
    assert all(french[key] != english[key] for key in extras.METHOD_NAMES), french
    assert english["ppi++-robust-crossfit"] == "robust PPI++, cross-fitted λ"
    assert french["ppi++-robust-crossfit"] == "PPI++ robuste, λ par validation croisée"
    assert (french["robust"], french["study"]) == ("robuste", "étude")
    assert extras.method_name("a-new-method") == "a-new-method"


def test_whole_numbers_are_grouped_as_the_reader_groups_them():
    from django.utils import translation

    with translation.override("en"):
        assert extras.whole(200_000) == "200,000"
    with translation.override("fr"):
        assert extras.whole(200_000) == "200\u00a0000"
        assert extras.whole(50) == "50"
        assert extras.whole(None) == "—"
