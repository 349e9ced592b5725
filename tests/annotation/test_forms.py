"""The forms of the annotation pages: what they accept, what they refuse and how they say it."""

from __future__ import annotations

import pytest

from annotation.errors import FieldError
from annotation.forms import (
    HistoryFilterForm,
    LabelForm,
    PrefetchForm,
    SampleDrawForm,
    TopUpForm,
    UndoForm,
    add_domain_error,
    request_errors,
)
from annotation.models import Criterion, Stage
from tests.factories import make_user

pytestmark = pytest.mark.django_db


# Stage pages


def test_a_label_form_takes_whole_numbers_and_keeps_the_comment_as_typed():
    form = LabelForm({"unit_id": "12", "value": "0", "comment": "  hors sujet\n", "guidelines_version": ""})
    assert form.is_valid()
    assert form.cleaned_data == {
        "unit_id": 12,
        "value": 0,
        "comment": "  hors sujet\n",
        "request_key": "",
        "guidelines_version": None,
        "shown": None,
    }


def test_a_comment_takes_up_to_its_limit():
    from annotation import limits

    at = LabelForm({"unit_id": "1", "value": "1", "comment": "c" * limits.COMMENT})
    over = LabelForm({"unit_id": "1", "value": "1", "comment": "c" * (limits.COMMENT + 1)})
    assert at.is_valid()
    assert not over.is_valid()
    assert list(over.errors) == ["comment"]


def test_a_bad_label_names_each_field_at_fault():
    form = LabelForm({"value": "x", "guidelines_version": "v1"})
    assert not form.is_valid()
    assert request_errors(form) == (
        "unit_id is required; value must be a whole number; guidelines_version must be a whole number"
    )


def test_a_prefetch_ignores_anything_but_a_whole_number():
    assert PrefetchForm({"after": "41"}).unit_on_screen() == 41
    assert PrefetchForm({"after": "x"}).unit_on_screen() is None
    assert PrefetchForm({}).unit_on_screen() is None


def test_an_undo_without_a_key_is_valid():
    form = UndoForm({})
    assert form.is_valid() and form.cleaned_data["request_key"] == ""


# Sampling


def draw_form(campaign, data=None, themes=("Finance", "IT")) -> SampleDrawForm:
    criteria = Criterion.objects.filter(campaign=campaign).order_by("name")
    return SampleDrawForm(data, criteria=criteria, themes=themes)


def test_a_draw_fills_in_the_defaults_and_keeps_only_the_theme_budgets_given(campaign):
    form = draw_form(campaign, {"criterion": "veracity", "budget": "30", "theme_budget:IT": "9"})
    assert form.is_valid(), form.errors
    arguments = form.draw_arguments()
    assert arguments["criterion"].name == "veracity"
    assert {k: v for k, v in arguments.items() if k != "criterion"} == {
        "budget": 30,
        "seed": 0,
        "per_cluster": 3,
        "per_theme_budget": {"IT": 9},
    }


def test_a_theme_the_campaign_lacks_is_kept_for_the_draw_to_refuse_but_not_shown(campaign):
    form = draw_form(campaign, {"criterion": "veracity", "budget": "30", "theme_budget:Juridique": "6"})
    assert form.is_valid()
    assert form.per_theme_budget() == {"Juridique": 6}
    assert [theme for theme, _ in form.theme_fields] == ["Finance", "IT"]


def test_the_blank_draw_form_proposes_the_usual_numbers(campaign):
    html = str(draw_form(campaign)["budget"]) + str(draw_form(campaign)["seed"])
    assert 'value="140"' in html and 'min="1"' in html and 'value="0"' in html
    assert 'id="theme-budget-2"' in str(draw_form(campaign).theme_fields[1][1])


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"criterion": "nope", "budget": "30"}, "criterion", "choose one of the campaign's criteria"),
        ({"criterion": "veracity", "budget": ""}, "budget", "give the number of human labels to spend"),
        ({"criterion": "veracity", "budget": " x "}, "budget", "'x' is not a whole number"),
        ({"criterion": "veracity", "budget": "0"}, "budget", "must be at least 1"),
        ({"criterion": "veracity", "budget": "9", "seed": "-2"}, "seed", "must be at least 0"),
        (
            {"criterion": "veracity", "budget": "9", "theme_budget:IT": "-1"},
            "theme_budget:IT",
            "must be at least 0",
        ),
    ],
)
def test_bad_draw_input_is_an_error_on_its_field(campaign, data, field, message):
    form = draw_form(campaign, data)
    assert not form.is_valid()
    assert form.errors == {field: [message]}


def test_the_budget_for_a_theme_is_labelled_with_the_theme(campaign):
    assert draw_form(campaign).fields["theme_budget:IT"].label == "budget for IT"


def test_a_domain_error_goes_on_the_field_it_names_else_above_the_form():
    form = TopUpForm({"budget": "30"}, budget=24, per_cluster=3)
    assert form.is_valid()
    add_domain_error(form, FieldError("budget", "budget: 30 is below the sample's 48"))
    assert form.errors == {"budget": ["30 is below the sample's 48"]}
    form = TopUpForm({}, budget=24, per_cluster=3)
    assert form.is_valid()
    add_domain_error(form, ValueError("budget: 12 is below the sample's 24"))
    add_domain_error(form, FieldError("per_theme_budget", "per_theme_budget: no such field here"))
    assert form.non_field_errors() == [
        "budget: 12 is below the sample's 24",
        "per_theme_budget: no such field here",
    ]


def test_the_top_up_form_proposes_no_less_than_the_sample_has():
    form = TopUpForm(budget=24, per_cluster=3)
    assert 'min="24"' in str(form["budget"]) and 'id="top-up-budget"' in str(form["budget"])
    assert 'min="3"' in str(form["per_cluster"])
    bound = TopUpForm({"budget": "", "per_cluster": "4"}, budget=24, per_cluster=3)
    assert bound.is_valid() and bound.cleaned_data == {"budget": None, "per_cluster": 4}


# Label history


def test_history_filters_pass_known_values_and_ignore_the_others(campaign):
    person = make_user(username="lea")
    criteria = list(Criterion.objects.filter(campaign=campaign).order_by("name"))
    form = HistoryFilterForm(
        {"user": str(person.pk), "criterion": "veracity", "stage": Stage.REVIEW},
        people=[person],
        criteria=criteria,
    )
    veracity = next(c for c in criteria if c.name == "veracity")
    assert form.arguments() == {"user_id": person.pk, "criterion_id": veracity.pk, "stage": "review"}
    stale = HistoryFilterForm(
        {"user": "999999", "criterion": "nope", "stage": "imported-ish"}, people=[person], criteria=criteria
    )
    assert stale.arguments() == {"user_id": None, "criterion_id": None, "stage": None}
    assert stale.selected() == {"user": "", "criterion": "", "stage": ""}
