"""Ids drawn ahead of the rows they key, and rows inserted with them, on both databases."""

import threading

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.ingest.bulk import draw_ids, insert_rows
from annotation.models import Answer, Campaign, Question, Sentence

pytestmark = pytest.mark.django_db


def _question_rows(campaign: Campaign, count: int, prefix: str) -> list[tuple]:
    return [(campaign.pk, f"{prefix}{i}", f"Question {i} ?", "Finance", "simple", "fr") for i in range(count)]


COLUMNS = ["campaign", "external_id", "text", "theme", "difficulty", "language"]


def test_ids_drawn_are_new_distinct_and_never_drawn_again():
    campaign = Campaign.objects.create(name="Drawn")
    before = Question.objects.create(campaign=campaign, external_id="before", text="?")
    first = draw_ids(model=Question, count=5)
    second = draw_ids(model=Question, count=3)
    assert len(set(first + second)) == 8
    assert min(first + second) > before.pk
    assert draw_ids(model=Question, count=0) == []


def test_rows_are_inserted_under_the_ids_drawn_for_them():
    campaign = Campaign.objects.create(name="Keyed")
    ids = draw_ids(model=Question, count=3)
    rows = _question_rows(campaign, 3, "q")
    assert insert_rows(model=Question, columns=COLUMNS, rows=rows, ids=ids) == ids
    assert dict(Question.objects.filter(campaign=campaign).values_list("external_id", "pk")) == {
        "q0": ids[0],
        "q1": ids[1],
        "q2": ids[2],
    }
    # Rows pointing at them can be built before they are written: here, answers.
    answer_ids = draw_ids(model=Answer, count=3)
    insert_rows(
        model=Answer,
        columns=["campaign", "question", "external_id", "repetition", "text", "language"],
        rows=[(campaign.pk, pk, f"a{pk}", 0, "Texte.", "fr") for pk in ids],
        ids=answer_ids,
        returning=False,
    )
    stored = sorted(Answer.objects.values_list("pk", "question_id"))
    assert stored == sorted(zip(answer_ids, ids, strict=True))
    # What the database draws afterwards for a row without an id comes after the ids drawn ahead.
    later = Question.objects.create(campaign=campaign, external_id="later", text="?")
    assert later.pk > max(ids)


def test_as_many_ids_as_rows():
    campaign = Campaign.objects.create(name="Counted")
    with pytest.raises(ValueError, match="2 ids for 3 rows"):
        insert_rows(model=Question, columns=COLUMNS, rows=_question_rows(campaign, 3, "q"), ids=[1, 2])


def test_rows_without_ids_read_back_the_databases_own():
    campaign = Campaign.objects.create(name="Returned")
    ids = insert_rows(model=Question, columns=COLUMNS, rows=_question_rows(campaign, 4, "r"))
    assert sorted(ids) == sorted(Question.objects.filter(campaign=campaign).values_list("pk", flat=True))
    more = _question_rows(campaign, 2, "s")
    assert insert_rows(model=Question, columns=COLUMNS, rows=more, returning=False) == []
    assert Question.objects.filter(campaign=campaign).count() == 6


@pytest.mark.skipif(connection.vendor != "postgresql", reason="threads draw apart on PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_a_thread_beside_the_transaction_draws_on_its_own_connection_without_waiting():
    """Drawn on another connection while this one is in the middle of its transaction: the
    sequence is not the transaction's, so the draw neither waits nor is undone by a rollback."""
    from django.db import transaction

    campaign = Campaign.objects.create(name="Beside")
    drawn: list[int] = []

    def draw() -> None:
        try:
            drawn.extend(draw_ids(model=Question, count=4))
        finally:
            connection.close()

    with pytest.raises(RuntimeError), transaction.atomic():
        Question.objects.create(campaign=campaign, external_id="inside", text="?")
        thread = threading.Thread(target=draw)
        thread.start()
        thread.join(timeout=10)
        assert not thread.is_alive()
        raise RuntimeError("rolled back")
    assert len(set(drawn)) == 4
    assert Question.objects.create(campaign=campaign, external_id="after", text="?").pk > max(drawn)


@pytest.mark.django_db(transaction=True)
def test_ids_drawn_outside_any_transaction_are_distinct_too():
    first = draw_ids(model=Question, count=3)
    second = draw_ids(model=Question, count=2)
    assert len(set(first + second)) == 5
    assert min(second) > max(first)


# Any character a text may hold: PostgreSQL refuses NUL (imports remove it first).
CHARACTERS = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")
SENTENCE_COLUMNS = ["answer", "position", "text", "paragraph", "paragraph_index", "cited_ids", "citations_ok"]


@given(
    texts=st.lists(st.text(CHARACTERS, max_size=40), min_size=1, max_size=6),
    cited=st.lists(st.text(CHARACTERS, max_size=8)),
    ok=st.none() | st.booleans(),
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_rows_prepared_apart_read_back_as_given(answer, texts, cited, ok):
    """Texts with tabs, line ends, backslashes and any character, JSON and booleans or nulls:
    encoded where the rows are built (COPY data on PostgreSQL), they read back as given."""
    from annotation.ingest.bulk import prepare_rows, write_rows

    Sentence.objects.filter(answer=answer).delete()
    rows = [(answer.pk, position, text, text[::-1], 0, cited, ok) for position, text in enumerate(texts)]
    ids = draw_ids(model=Sentence, count=len(rows))
    write_rows(
        prepare_rows(
            model=Sentence,
            columns=SENTENCE_COLUMNS,
            rows=rows,
            ids=ids,
        )
    )
    stored = Sentence.objects.filter(answer=answer).order_by("position")
    assert [(s.pk, s.text, s.paragraph, s.cited_ids, s.citations_ok) for s in stored] == [
        (pk, text, text[::-1], cited, ok) for pk, text in zip(ids, texts, strict=True)
    ]


@pytest.fixture
def answer():
    campaign = Campaign.objects.create(name="Prepared")
    question = Question.objects.create(campaign=campaign, external_id="q", text="?")
    return Answer.objects.create(campaign=campaign, question=question, external_id="a", text="Texte.")
