"""The criteria page: managers make and edit criteria (binary or named categories); an edit of
the texts makes a new version; bad input names the field and writes nothing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.criteria.editing import (
    CriterionDraft,
    CriterionError,
    parse_categories,
    parse_groups,
    save_criterion,
)
from annotation.models import Criterion, CriterionVersion, Label, Level, Stage, Unit
from tests.categorical import correctness
from tests.factories import make_answer

pytestmark = pytest.mark.django_db

CATEGORIES = "1 | a | unsure | Not enough information\n2 | b | wrong | Wrong\n3 | d | right | Right\n"


def url(campaign, name: str | None = None) -> str:
    if name is None:
        return reverse("annotation:criteria", args=[campaign.slug])
    return reverse("annotation:criterion_edit", args=[campaign.slug, name])


def new(**fields) -> dict:
    data = {
        "name": "answer-correctness",
        "level": "answer",
        "kind": "categorical",
        "title": "Answer correctness",
        "positive_key": "1",
        "negative_key": "0",
        "categories": CATEGORIES,
        "category_groups": "hallucination: 2\nfine: 1, 3",
        "guidelines": "Read the documents first.",
        "judge_prompt": "",
    }
    data.update(fields)
    return data


def test_the_page_lists_the_criteria_with_their_keys_and_versions(campaign, manager, client_for):
    correctness(campaign)
    response = client_for(manager).get(url(campaign))
    content = response.content.decode()
    assert response.status_code == 200
    for name in ("correctness", "relevance", "veracity"):
        assert f'data-criterion="{name}"' in content
        assert url(campaign, name) in content
    assert "<kbd>5</kbd>&nbsp;Fully correct" in content


def test_a_manager_makes_a_criterion_with_categories_and_groups(campaign, manager, client_for):
    response = client_for(manager).post(url(campaign), new())
    assert response.status_code == 302
    made = Criterion.objects.get(campaign=campaign, name="answer-correctness")
    assert (made.kind, made.level, made.title) == ("categorical", Level.ANSWER, "Answer correctness")
    assert [c["key"] for c in made.categories] == ["a", "b", "d"]
    assert made.category_groups == {"hallucination": [2], "fine": [1, 3]}
    assert CriterionVersion.objects.get(criterion=made).guidelines == "Read the documents first."
    page = client_for(manager).get(url(campaign)).content.decode()
    assert "Criterion Answer correctness created (guidelines version 1)." in page


def test_a_binary_criterion_with_its_own_keys(campaign, manager, client_for):
    data = new(name="tone", kind="binary", level="sentence", categories="", category_groups="")
    data.update(positive_key="y", negative_key="n")
    assert client_for(manager).post(url(campaign), data).status_code == 302
    made = Criterion.objects.get(campaign=campaign, name="tone")
    assert (made.kind, made.positive_key, made.negative_key, made.categories) == ("binary", "y", "n", [])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "relevance"}, "the campaign has a criterion &#x27;relevance&#x27; already"),
        ({"name": "Bad name"}, "Name:"),
        ({"categories": "1 | a | unsure"}, "line 1: write value | key | name | title"),
        ({"categories": "1 | a | x | X\n1 | b | y | Y"}, "value 1 is used twice"),
        ({"categories": "1 | s | x | X\n2 | b | y | Y"}, "key &#x27;s&#x27; is taken"),
        ({"category_groups": "hallucination 2"}, "line 1: write name: values"),
        ({"category_groups": "hallucination: 7"}, "a list of category values among 1, 2, 3 is needed"),
        ({"kind": "binary", "positive_key": "u"}, "is taken: s skips"),
        ({"kind": "binary", "positive_key": "0"}, "The two label keys must differ."),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_nothing_is_written(
    fields, message, campaign, manager, client_for
):
    before = Criterion.objects.count(), CriterionVersion.objects.count()
    response = client_for(manager).post(url(campaign), new(**fields))
    assert response.status_code == 400
    assert message in response.content.decode()
    assert (Criterion.objects.count(), CriterionVersion.objects.count()) == before


def test_an_edit_of_the_guidelines_makes_a_new_version_and_keeps_name_level_and_kind(
    campaign, manager, client_for
):
    criterion = correctness(campaign)
    client = client_for(manager)
    page = client.get(url(campaign, "correctness"))
    content = page.content.decode()
    assert page.status_code == 200
    assert "5 | 5 | fully-correct | Fully correct" in content and "hallucination: 2, 4" in content
    assert 'name="name"' not in content and 'name="kind"' not in content
    data = {
        "title": "Correctness",
        "positive_key": "1",
        "negative_key": "0",
        "categories": "\n".join(
            f"{c['value']} | {c['key']} | {c['name']} | {c['title']}" for c in criterion.categories
        ),
        "category_groups": "hallucination: 2, 4\ncorrect: 5",
        "guidelines": "New guidelines.",
        "judge_prompt": "",
        "name": "renamed",
        "kind": "binary",
    }
    assert client.post(url(campaign, "correctness"), data).status_code == 302
    assert client.post(url(campaign, "correctness"), {**data, "guidelines": "Newer."}).status_code == 302
    criterion.refresh_from_db()
    assert (criterion.name, criterion.kind, criterion.title) == ("correctness", "categorical", "Correctness")
    assert criterion.category_groups == {"hallucination": [2, 4], "correct": [5]}
    assert list(criterion.versions.order_by("number").values_list("number", "guidelines")) == [
        (1, "New guidelines."),
        (2, "Newer."),
    ]
    assert criterion.current_version.number == 2


def test_a_category_that_human_labels_hold_cannot_be_dropped(campaign, manager, client_for):
    criterion = correctness(campaign)
    unit = Unit.objects.get(answer=make_answer(campaign=campaign), level=Level.ANSWER)
    Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=4)
    kept = [c for c in criterion.categories if c["value"] != 4]
    data = {
        "title": "",
        "positive_key": "1",
        "negative_key": "0",
        "categories": "\n".join(f"{c['value']} | {c['key']} | {c['name']} | {c['title']}" for c in kept),
        "category_groups": "",
        "guidelines": "",
        "judge_prompt": "",
    }
    response = client_for(manager).post(url(campaign, "correctness"), data)
    assert response.status_code == 400
    assert "human labels use the values 4: keep a category for each" in response.content.decode()
    criterion.refresh_from_db()
    assert len(criterion.categories) == 5


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator", "analyst", "outsider"])
def test_only_managers_see_and_post(persona, campaign, client_for, request):
    user = request.getfixturevalue(persona)
    client = client_for(user)
    expected = 404 if persona == "outsider" else 403
    assert client.get(url(campaign)).status_code == expected
    assert client.post(url(campaign), new()).status_code == expected
    assert client.get(url(campaign, "relevance")).status_code == expected
    assert not Criterion.objects.filter(name="answer-correctness").exists()


def test_anonymous_goes_to_login_and_unknown_methods_are_405(campaign, manager, client, client_for):
    assert client.get(url(campaign)).status_code == 302
    assert client_for(manager).put(url(campaign)).status_code == 405
    assert client_for(manager).get(url(campaign, "no-such")).status_code == 404


def test_the_page_reads_the_database_a_fixed_number_of_times(
    campaign, manager, client_for, django_assert_num_queries
):
    client = client_for(manager)
    client.get(url(campaign))
    correctness(campaign)
    with django_assert_num_queries(5):
        client.get(url(campaign))


def test_parsing_the_texts():
    assert parse_categories(" \n1 | 1 | a | A \n") == [{"value": 1, "key": "1", "name": "a", "title": "A"}]
    assert parse_groups("x: 1; 2\n\n") == {"x": [1, 2]}
    with pytest.raises(CriterionError) as refused:
        parse_groups("x: one")
    assert refused.value.field == "category_groups"


def test_save_refuses_an_unknown_kind_or_level(campaign):
    with pytest.raises(CriterionError) as refused:
        save_criterion(campaign=campaign, draft=CriterionDraft(name="x", kind="ordinal"))
    assert refused.value.field == "kind"
    with pytest.raises(CriterionError) as refused:
        save_criterion(campaign=campaign, draft=CriterionDraft(name="x", level="paragraph"))
    assert refused.value.field == "level"
