"""Criteria with named categories: their definition, keys and values, and labels of them made in
the annotation pages (label, review, adjudication, blind mode)."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation.corpus.conventions import ANSWER_CORRECTNESS
from annotation.criteria import categories
from annotation.criteria.categories import CategoryError, check_definition, indicator_array, indicators
from annotation.models import AnnotationMode, Label, Level, Role, Stage, Unit
from annotation.workflow import WorkflowError, final_labels, unit_state
from tests.categorical import correctness
from tests.factories import label, make_answer, member, sample_units

HTMX = {"HTTP_HX_REQUEST": "true"}
FIVE = ANSWER_CORRECTNESS["categories"]


def definition(**changes) -> list[dict]:
    made = [dict(category) for category in FIVE]
    for position, fields in changes.items():
        made[int(position.removeprefix("c")) - 1].update(fields)
    return made


@pytest.mark.parametrize(
    ("given", "groups", "message"),
    [
        ([FIVE[0]], {}, "categories: a list of 2 to 20 categories is needed"),
        (
            definition(c2={"value": 7}),
            {},
            "categories: category 2: value 7 is not a whole number from 1 to 5",
        ),
        (definition(c2={"value": True}), {}, "category 2: value True is not a whole number"),
        (definition(c3={"key": "ab"}), {}, "categories: category 3: its key must be one visible character"),
        (definition(c3={"key": " "}), {}, "category 3: its key must be one visible character"),
        (definition(c4={"key": "S"}), {}, "category 4: key 'S' is taken"),
        (definition(c5={"name": "Fully correct"}), {}, "category 5: its name must be a slug"),
        (definition(c5={"title": " ", "name": "x"}), {}, "category 5: its title is blank"),
        (definition(c5={"value": 1}), {}, "categories: value 1 is used twice"),
        (definition(c5={"name": "fully-incorrect"}), {}, "name 'fully-incorrect' is used twice"),
        (definition(c5={"key": "A"}, c4={"key": "a"}), {}, "key 'a' is used twice (keys ignore case)"),
        (FIVE, {"bad group": [1]}, "category_groups: group 'bad group': its name must be a slug"),
        (FIVE, {"fully-correct": [5]}, "its name must be a slug that no category has"),
        (FIVE, {"wrong": [6]}, "group 'wrong': a list of category values among 1, 2, 3, 4, 5 is needed"),
        (FIVE, {"empty": []}, "group 'empty': a list of category values"),
        (FIVE, ["correct"], "category_groups: an object of groups is needed"),
    ],
)
def test_a_bad_definition_is_refused_naming_the_category_or_group(given, groups, message):
    with pytest.raises(CategoryError) as refused:
        check_definition(categories=given, groups=groups)
    assert message in str(refused.value)


def test_a_good_definition_comes_back_sorted_by_value():
    shuffled = [FIVE[4], FIVE[0], FIVE[2], FIVE[1], FIVE[3]]
    made, groups = check_definition(categories=shuffled, groups={"hallucination": [4, 2, 2]})
    assert [category.value for category in made] == [1, 2, 3, 4, 5]
    assert groups == {"hallucination": [2, 4]}


def test_the_model_validation_places_the_error_on_its_field(campaign):
    criterion = correctness(campaign)
    criterion.category_groups = {"wrong": [9]}
    with pytest.raises(ValidationError) as refused:
        criterion.full_clean()
    assert "category_groups" in refused.value.message_dict


def test_values_keys_and_indicators(campaign):
    criterion = correctness(campaign)
    assert categories.allowed_values(criterion) == (1, 2, 3, 4, 5)
    assert categories.value_for_key(criterion=criterion, key="4") == 4
    assert categories.value_for_key(criterion=criterion, key="9") is None
    assert [(i.name, i.kind, sorted(i.values)) for i in indicators(criterion)][-3:] == [
        ("abstention", "group", [1, 3]),
        ("correct", "group", [5]),
        ("hallucination", "group", [2, 4]),
    ]
    hallucination = indicators(criterion)[-1]
    assert indicator_array([1, 2, 4, 5], hallucination).tolist() == [0.0, 1.0, 1.0, 0.0]
    relevance = criterion.campaign.criteria.get(name="relevance")
    assert categories.allowed_values(relevance) == (0, 1)
    assert categories.value_for_key(criterion=relevance, key="1") == 1
    assert indicators(relevance) == []
    with pytest.raises(CategoryError, match="0 is not a value of criterion correctness"):
        categories.check_value(criterion=criterion, value=0)


def sampled_correctness(campaign, answers: int = 3):
    criterion = correctness(campaign)
    for _ in range(answers):
        make_answer(campaign=campaign)
    units = list(Unit.objects.filter(campaign=campaign, level=Level.ANSWER).order_by("pk"))
    sample_units(criterion=criterion, units=units)
    return criterion, units


def test_labels_are_category_values_and_anything_else_is_refused(campaign):
    criterion, units = sampled_correctness(campaign)
    annotator = member(campaign, Role.ANNOTATOR)
    for bad in (0, 6, True):
        with pytest.raises(WorkflowError) as refused:
            label(annotator, criterion, Stage.LABEL, bad, unit=units[0])
        assert refused.value.code == "value"
    assert "not a value of criterion correctness (values: 1, 2, 3, 4, 5)" in str(refused.value)
    assert label(annotator, criterion, Stage.LABEL, 4, unit=units[0]).value == 4
    assert not Label.objects.exclude(value=4).exists()


def test_review_confirms_or_overrides_and_adjudication_settles_a_category(campaign):
    criterion, units = sampled_correctness(campaign, answers=2)
    annotator, reviewer = member(campaign, Role.ANNOTATOR), member(campaign, Role.REVIEWER)
    adjudicator = member(campaign, Role.ADJUDICATOR)
    label(annotator, criterion, Stage.LABEL, 2, unit=units[0])
    label(annotator, criterion, Stage.LABEL, 5, unit=units[1])
    label(reviewer, criterion, Stage.REVIEW, 2, unit=units[0])
    label(reviewer, criterion, Stage.REVIEW, 4, unit=units[1], comment="A wrong figure.")
    assert final_labels(criterion=criterion) == {units[0].pk: 2}
    label(adjudicator, criterion, Stage.ADJUDICATION, 4, unit=units[1], comment="Wrong figure indeed.")
    assert final_labels(criterion=criterion) == {units[0].pk: 2, units[1].pk: 4}


def test_blind_mode_adjudicates_two_different_categories(campaign):
    campaign.annotation_mode = AnnotationMode.BLIND_DOUBLE
    campaign.save()
    criterion, units = sampled_correctness(campaign, answers=1)
    first, second = member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR)
    label(first, criterion, Stage.LABEL, 1, unit=units[0])
    label(second, criterion, Stage.LABEL, 3, unit=units[0])
    assert final_labels(criterion=criterion) == {}
    assert len(unit_state(unit_id=units[0].pk, criterion=criterion).in_conflict) == 2


def test_the_page_shows_one_key_per_category_and_stores_the_category_pressed(client_for, campaign):
    criterion, units = sampled_correctness(campaign)
    annotator = member(campaign, Role.ANNOTATOR)
    client = client_for(annotator)
    page_url = reverse("annotation:annotate", args=[campaign.slug, criterion.name, Stage.LABEL])
    page = client.get(page_url)
    content = page.content.decode()
    assert page.status_code == 200
    for category in FIVE:
        assert f'data-key="{category["key"]}" data-value="{category["value"]}"' in content
        assert category["title"] in content
    key = re.search(r'name="request_key" value="([0-9a-f]+)"', content).group(1)
    submit = reverse("annotation:annotate_submit", args=[campaign.slug, criterion.name, Stage.LABEL])
    response = client.post(submit, {"unit_id": units[0].pk, "value": "3", "request_key": key}, **HTMX)
    assert response.status_code == 200 and "<html" not in response.content.decode()
    assert Label.objects.get().value == 3
    refused = client.post(submit, {"unit_id": units[1].pk, "value": "7", "request_key": "other-key"}, **HTMX)
    assert "7 is not a value of criterion correctness" in refused.content.decode()
    assert Label.objects.count() == 1


def test_the_review_page_names_the_first_label_by_its_category(client_for, campaign):
    criterion, units = sampled_correctness(campaign, answers=1)
    label(member(campaign, Role.ANNOTATOR), criterion, Stage.LABEL, 4, unit=units[0])
    reviewer = member(campaign, Role.REVIEWER)
    page = client_for(reviewer).get(
        reverse("annotation:annotate", args=[campaign.slug, criterion.name, "review"])
    )
    content = page.content.decode()
    assert "Fully incorrect" in content and "Confirm: fully incorrect" in content
    assert "Override: fully correct" in content
