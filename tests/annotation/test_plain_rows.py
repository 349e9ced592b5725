"""Model instances read by plain SQL (``annotation.plain_rows``) are the ORM's: every field's value
the same (JSON, booleans, times, on either database), related ones attached without a query."""

from __future__ import annotations

import pytest
from django.db import connection

from annotation import plain_rows
from annotation.access import get_criterion_for
from annotation.criteria.guidelines import current_version
from annotation.models import (
    Answer,
    AnswerSource,
    Campaign,
    Criterion,
    CriterionVersion,
    Level,
    Question,
    Role,
    Sentence,
    SourceChunk,
    Unit,
)
from annotation.workbench import answer_sources
from annotation.workflow.queue import next_unit
from tests.factories import add_member, make_answer, make_campaign, make_user


def _values(obj) -> list:
    return [getattr(obj, field.attname) for field in obj._meta.concrete_fields]


def _row(model, pk) -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {plain_rows.columns(model, 't')} FROM {model._meta.db_table} t WHERE t.id = %s", [pk]
        )
        return cursor.fetchone()


def _read(model, pk):
    return plain_rows.instance(model, _row(model, pk))


@pytest.fixture
def campaign(db) -> Campaign:
    campaign = make_campaign(name="Plain rows")
    make_answer(
        campaign=campaign, sentences=[("Le chiffre [^c1^].", ["c1"]), ("Il progresse [^c2^].", ["c2"])]
    )
    Question.objects.filter(campaign=campaign).update(gold_evidence=[{"passage": "é", "ids": [1, None]}])
    return campaign


def test_each_model_reads_back_with_the_values_the_orm_gives(campaign):
    criterion = Criterion.objects.filter(campaign=campaign).first()
    current_version(criterion=criterion)  # made if missing
    sentence = Sentence.objects.filter(answer__campaign=campaign).first()
    for obj in [
        campaign,
        criterion,
        CriterionVersion.objects.filter(criterion=criterion).first(),
        Unit.objects.filter(campaign=campaign).first(),
        Answer.objects.filter(campaign=campaign).first(),
        Question.objects.filter(campaign=campaign).first(),
        sentence,
        AnswerSource.objects.filter(answer__campaign=campaign).first(),
        SourceChunk.objects.filter(campaign=campaign).first(),
    ]:
        fresh = type(obj).objects.get(pk=obj.pk)
        read = _read(type(obj), obj.pk)
        assert _values(read) == _values(fresh), type(obj).__name__
        assert not read._state.adding and read._state.db == "default"
    assert (
        isinstance(sentence.cited_ids, list) and _read(Sentence, sentence.pk).cited_ids == sentence.cited_ids
    )


def test_an_outer_join_that_found_nothing_gives_none(db):
    assert plain_rows.instance(Campaign, [None] * plain_rows.width(Campaign)) is None


def test_models_of_one_row_are_read_one_after_the_other(campaign):
    question = Question.objects.filter(campaign=campaign).first()
    row = [*_row(Campaign, campaign.pk), *([None] * plain_rows.width(Answer)), *_row(Question, question.pk)]
    found, missing, asked = plain_rows.instances(row, Campaign, Answer, Question)
    assert missing is None
    assert _values(found) == _values(Campaign.objects.get(pk=campaign.pk))
    assert _values(asked) == _values(Question.objects.get(pk=question.pk))


def test_the_criterion_for_a_member_comes_with_its_campaign_and_version_in_one_query(
    campaign, django_assert_num_queries
):
    user = make_user()
    add_member(campaign=campaign, user=user, roles=[Role.ANNOTATOR, Role.REVIEWER])
    criterion = Criterion.objects.filter(campaign=campaign).first()
    version = current_version(criterion=criterion)
    with django_assert_num_queries(1):
        found, roles = get_criterion_for(
            user=user, slug=campaign.slug, name=criterion.name, role=Role.ANNOTATOR
        )
        assert (found.campaign.slug, found.current_version.pk, found.campaign.name) == (
            campaign.slug,
            version.pk,
            "Plain rows",
        )
    assert roles == {Role.ANNOTATOR, Role.REVIEWER}
    assert _values(found) == _values(Criterion.objects.get(pk=criterion.pk))


def test_the_unit_handed_out_and_its_sources_come_with_what_the_page_reads(
    campaign, django_assert_num_queries
):
    user = make_user()
    add_member(campaign=campaign, user=user, roles=[Role.ANNOTATOR])
    criterion = Criterion.objects.get(campaign=campaign, name="veracity")
    from tests.factories import sample_units

    units = list(Unit.objects.filter(campaign=campaign, level=Level.SENTENCE).order_by("pk"))
    sample_units(criterion=criterion, units=units)
    unit = next_unit(user=user, criterion=criterion, stage="label")
    with django_assert_num_queries(0):
        assert unit.answer.question.text and unit.sentence.text and unit.previous_value is None
        assert unit.came_back_skipped is False
    answer = unit.answer
    expected = list(AnswerSource.objects.filter(answer=answer).select_related("chunk").order_by("rank", "pk"))
    sources = answer_sources(answer_id=answer.pk)
    with django_assert_num_queries(0):
        assert [(s.pk, s.rank, s.chunk.external_id, s.chunk.text) for s in sources] == [
            (s.pk, s.rank, s.chunk.external_id, s.chunk.text) for s in expected
        ]
    assert len(sources) == 2
