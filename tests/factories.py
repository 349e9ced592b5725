"""Small factories for tests: plain functions that create rows with sensible defaults."""

from __future__ import annotations

import itertools

from django.contrib.auth import get_user_model

from annotation.campaigns import get_or_create_campaign
from annotation.models import (
    Answer,
    AnswerSource,
    Campaign,
    Level,
    Membership,
    Question,
    Sentence,
    SourceChunk,
    Unit,
)

_seq = itertools.count(1)
PASSWORD = "correct-horse-battery"


def make_user(*, username: str | None = None, superuser: bool = False):
    username = username or f"user{next(_seq)}"
    User = get_user_model()
    if superuser:
        return User.objects.create_superuser(username=username, password=PASSWORD)
    return User.objects.create_user(username=username, password=PASSWORD)


def make_campaign(*, name: str | None = None, **fields) -> Campaign:
    campaign, _ = get_or_create_campaign(name=name or f"Campaign {next(_seq)}", **fields)
    return campaign


def add_member(*, campaign: Campaign, user, roles: list[str]) -> None:
    for role in roles:
        Membership.objects.create(campaign=campaign, user=user, role=role)


def make_answer(
    *,
    campaign: Campaign,
    question: Question | None = None,
    theme: str = "Finance",
    difficulty: str = "simple",
    text: str = "Le chiffre d'affaires est de 12 M€ [^c1^]. Il progresse [^c2^].",
    sentences: list[tuple[str, list[str]]] | None = None,
    chunk_ids: tuple[str, ...] = ("c1", "c2"),
) -> Answer:
    """An answer with its chunks, answer unit, sentences and sentence units."""
    n = next(_seq)
    if question is None:
        question = Question.objects.create(
            campaign=campaign, external_id=f"Q{n}", text=f"Question {n} ?", theme=theme, difficulty=difficulty
        )
    answer = Answer.objects.create(
        campaign=campaign, question=question, external_id=f"A{n}", text=text, language="fr"
    )
    for rank, cid in enumerate(chunk_ids, start=1):
        chunk, _ = SourceChunk.objects.get_or_create(
            campaign=campaign, external_id=cid, defaults={"title": f"doc-{cid}.pdf", "text": f"Texte {cid}."}
        )
        AnswerSource.objects.create(answer=answer, chunk=chunk, rank=rank)
    Unit.objects.create(
        campaign=campaign,
        level=Level.ANSWER,
        answer=answer,
        theme=question.theme,
        difficulty=question.difficulty,
    )
    if sentences is None:
        sentences = [("Le chiffre d'affaires est de 12 M€ [^c1^].", ["c1"]), ("Il progresse [^c2^].", ["c2"])]
    for position, (sentence_text, cited) in enumerate(sentences):
        sentence = Sentence.objects.create(
            answer=answer,
            position=position,
            text=sentence_text,
            paragraph=text,
            cited_ids=cited,
            citations_ok=(all(c in chunk_ids for c in cited) if cited else None),
        )
        Unit.objects.create(
            campaign=campaign,
            level=Level.SENTENCE,
            answer=answer,
            sentence=sentence,
            theme=question.theme,
            difficulty=question.difficulty,
        )
    return answer
