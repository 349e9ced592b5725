"""A criterion's title: every criterion has one, unique in its campaign whatever its case and
accents (the database holds it on the folded title), refused by name on the criteria form, which
shows every refusal of a submit at once."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from annotation.criteria.editing import CriterionDraft, CriterionErrors, criterion_problems, save_criterion
from annotation.criteria.titles import title_from_name, title_key
from annotation.models import Criterion, CriterionVersion
from tests.factories import make_campaign

pytestmark = pytest.mark.django_db


def url(campaign, name: str | None = None) -> str:
    if name is None:
        return reverse("annotation:criteria", args=[campaign.slug])
    return reverse("annotation:criterion_edit", args=[campaign.slug, name])


def binary(**fields) -> dict:
    data = {
        "name": "completeness",
        "level": "answer",
        "kind": "binary",
        "title": "Complétude",
        "positive_key": "1",
        "negative_key": "0",
        "categories": "",
        "category_groups": "",
        "guidelines": "",
        "judge_prompt": "",
    }
    data.update(fields)
    return data


def test_titles_are_folded_without_case_accents_or_extra_spaces():
    assert title_key("Complétude") == title_key(" completude ") == title_key("COMPLÉTUDE") == "completude"
    assert title_key("Tone  of\tvoice") == "tone of voice"
    assert title_key("Straße") == title_key("STRASSE")
    assert title_key("   ") == ""


def test_a_title_made_from_a_name():
    assert title_from_name("tone_b") == "Tone b"
    assert title_from_name("answer-correctness") == "Answer correctness"
    assert title_from_name("x") == "X"


def test_the_database_refuses_two_titles_of_a_campaign_that_fold_alike(campaign):
    Criterion.objects.create(campaign=campaign, name="completeness", title="Complétude", level="answer")
    with pytest.raises(IntegrityError), transaction.atomic():
        Criterion.objects.create(
            campaign=campaign, name="completeness_v2", title="COMPLETUDE", level="answer"
        )
    # Another campaign may use it.
    other = make_campaign(name="Other campaign")
    Criterion.objects.create(campaign=other, name="completeness", title="completude", level="answer")
    assert Criterion.objects.filter(title_key="completude").count() == 2


@pytest.mark.parametrize("title", ["", "   "])
def test_the_database_refuses_a_criterion_without_a_title(campaign, title):
    with pytest.raises(IntegrityError), transaction.atomic():
        Criterion.objects.create(campaign=campaign, name="tone_b", title=title, level="answer")


def test_the_folded_title_follows_a_saved_title_even_with_update_fields(campaign):
    criterion = Criterion.objects.create(campaign=campaign, name="tone", title="Tone", level="answer")
    criterion.title = "Ton professionnel"
    criterion.save(update_fields=["title"])
    assert Criterion.objects.get(pk=criterion.pk).title_key == "ton professionnel"


def test_every_criterion_made_by_the_app_has_a_title(campaign):
    assert dict(campaign.criteria.values_list("name", "title")) == {
        "citation_support": "Citation support",
        "relevance": "Relevance",
        "veracity": "Veracity",
    }


def test_a_title_another_criterion_has_is_refused_naming_it(campaign, manager, client_for):
    client = client_for(manager)
    assert client.post(url(campaign), binary()).status_code == 302
    before = Criterion.objects.count(), CriterionVersion.objects.count()
    response = client.post(url(campaign), binary(name="completeness_v2", title="  COMPLETUDE "))
    assert response.status_code == 400
    assert (
        "Title: another criterion of this campaign is titled “Complétude” already"
        in response.content.decode()
    )
    assert (Criterion.objects.count(), CriterionVersion.objects.count()) == before


def test_a_title_that_is_a_built_in_title_in_either_language_is_refused(campaign, manager, client_for):
    client = client_for(manager)
    english = client.post(url(campaign), binary(name="on_topic", title="relevance"))
    assert "titled “Relevance” already" in english.content.decode()
    # "Pertinence" is how a French reader reads the built-in Relevance: two "Pertinence" in French.
    french = client.post(
        url(campaign), binary(name="on_topic", title="Pertinence"), HTTP_ACCEPT_LANGUAGE="fr"
    )
    assert french.status_code == 400
    assert "«\xa0Pertinence\xa0»" in french.content.decode()
    assert not Criterion.objects.filter(name="on_topic").exists()


def test_a_blank_title_is_refused(campaign, manager, client_for):
    response = client_for(manager).post(url(campaign), binary(title="  "))
    assert response.status_code == 400
    assert "Title: give the criterion a title" in response.content.decode()
    assert not Criterion.objects.filter(name="completeness").exists()


def test_an_edit_keeps_its_own_title_and_may_change_its_case(campaign, manager, client_for):
    client = client_for(manager)
    client.post(url(campaign), binary())
    edit = {k: v for k, v in binary(title="complétude").items() if k not in ("name", "level", "kind")}
    assert client.post(url(campaign, "completeness"), edit).status_code == 302
    assert Criterion.objects.get(name="completeness").title == "complétude"


def test_the_form_shows_every_refusal_of_a_submit_at_once(campaign, manager, client_for):
    data = binary(name="Bad name", title="Relevance", positive_key="s", negative_key="s")
    response = client_for(manager).post(url(campaign), data)
    content = response.content.decode()
    assert response.status_code == 400
    for message in (
        "Name: ",  # not a slug
        "Title: another criterion of this campaign is titled “Relevance” already",
        "Key of 1: ",  # s is taken
    ):
        assert message in content, message
    assert content.count('role="alert"') == 1


def test_categories_and_title_are_refused_together(campaign, manager, client_for):
    data = binary(kind="categorical", title="", categories="1 | a | unsure")
    content = client_for(manager).post(url(campaign), data).content.decode()
    assert "Title: give the criterion a title" in content
    assert "line 1: write value | key | name | title" in content


def test_criterion_problems_lists_one_refusal_per_field(campaign):
    draft = CriterionDraft(
        name="relevance", title="veracity", kind="binary", level="answer", positive_key="u", negative_key="0"
    )
    problems = criterion_problems(campaign=campaign, draft=draft)
    assert sorted(str(problem.field) for problem in problems) == ["name", "positive_key", "title"]
    with pytest.raises(CriterionErrors) as refused:
        save_criterion(campaign=campaign, draft=draft)
    assert [error.field for error in refused.value.errors] == [problem.field for problem in problems]
    assert refused.value.field == problems[0].field
