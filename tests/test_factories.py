"""The tests' factories: answers made in bulk are the rows one answer after another would make."""

from __future__ import annotations

import pytest

from annotation.models import Answer, AnswerSource, Campaign, Question, Sentence, SourceChunk, Unit
from tests.factories import answer_units, make_answer, make_answers, make_campaign

pytestmark = pytest.mark.django_db

SENTENCES = [("Un [^c1^][^c3^].", ["c1", "c3"]), ("Deux.", []), ("Trois [^c2^].", ["c2"])]


def rows(campaign: Campaign) -> dict[str, list[tuple]]:
    """The campaign's content in the order of its ids, without the ids and the numbered names."""
    units = Unit.objects.filter(campaign=campaign).order_by("pk")
    return {
        "questions": list(
            Question.objects.filter(campaign=campaign).order_by("pk").values_list("theme", "difficulty")
        ),
        "answers": list(
            Answer.objects.filter(campaign=campaign).order_by("pk").values_list("text", "language")
        ),
        "chunks": list(
            SourceChunk.objects.filter(campaign=campaign).order_by("pk").values_list("external_id")
        ),
        "sources": list(
            AnswerSource.objects.filter(answer__campaign=campaign)
            .order_by("pk")
            .values_list("chunk__external_id", "rank")
        ),
        "sentences": list(
            Sentence.objects.filter(answer__campaign=campaign)
            .order_by("pk")
            .values_list("position", "text", "paragraph", "cited_ids", "citations_ok")
        ),
        "units": [
            (
                unit.level,
                unit.theme,
                unit.difficulty,
                unit.sentence and unit.sentence.text,
                unit.chunk_id is None,
            )
            for unit in units.select_related("sentence")
        ],
    }


def test_answers_made_in_bulk_are_the_rows_of_one_answer_after_another():
    about = [("Finance", "simple"), ("IT", "hard"), ("Finance", "hard")]
    content = {
        "text": "Un. Deux. Trois.",
        "sentences": SENTENCES,
        "chunk_ids": ("c1", "c2"),
        "citations": True,
    }
    one_by_one = make_campaign()
    for theme, difficulty in about:
        make_answer(campaign=one_by_one, theme=theme, difficulty=difficulty, **content)
    in_bulk = make_campaign()
    version = in_bulk.content_version
    answers = make_answers(campaign=in_bulk, about=about, **content)

    assert rows(in_bulk) == rows(one_by_one)
    assert len(rows(in_bulk)["units"]) == 3 * (1 + 3 + 2)  # the answer, its sentences, 2 citations
    assert [unit.answer_id for unit in answer_units(answers)] == [answer.pk for answer in answers]
    in_bulk.refresh_from_db()
    assert in_bulk.content_version == version + 1  # moved once


def test_answers_to_questions_asked_and_each_with_its_own_content():
    campaign = make_campaign()
    asked = make_answer(campaign=campaign, theme="RH").question
    contents = [("A.", [("A.", [])]), ("B. C.", [("B.", []), ("C.", [])])]
    first, second = make_answers(campaign=campaign, about=[asked, ("IT", "simple")], contents=contents)

    assert first.question_id == asked.pk and second.question.theme == "IT"
    assert list(first.sentences.order_by("position").values_list("text", "paragraph")) == [("A.", "A.")]
    assert list(second.sentences.order_by("position").values_list("text", flat=True)) == ["B.", "C."]
    assert [unit.theme for unit in answer_units([first, second])] == ["RH", "IT"]
