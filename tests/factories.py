"""Small factories for tests: plain functions that create rows with sensible defaults."""

from __future__ import annotations

import itertools

import numpy as np
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.campaigns import get_or_create_campaign
from annotation.models import (
    Answer,
    AnswerSource,
    Campaign,
    Criterion,
    Label,
    Level,
    Membership,
    Question,
    Sample,
    SampleItem,
    Sentence,
    SourceChunk,
    Unit,
)
from annotation.workflow import next_unit, submit_label

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


# Samples, members and labels for the workflow, sampling and page tests


_keys = itertools.count(1)


def sample_units(*, criterion: Criterion, units: list[Unit], themes: list[str] | None = None) -> Sample:
    """A finished sample of ``criterion`` holding ``units`` in the given order (one cluster per theme)."""
    sample = Sample.objects.create(
        campaign_id=criterion.campaign_id, criterion=criterion, status=Sample.Status.DONE, budget=len(units)
    )
    SampleItem.objects.bulk_create(
        SampleItem(
            sample=sample,
            unit=unit,
            theme=(themes[i] if themes else unit.theme),
            cluster=0,
            cluster_size=len(units),
            inclusion_probability=1.0,
            rank=i,
        )
        for i, unit in enumerate(units)
    )
    return sample


def sampled(*, campaign, name: str = "relevance", answers: int = 4, theme: str = "Finance"):
    """``answers`` new answers, the criterion ``name`` and its sampled units (in queue order)."""
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name=name)
    for _ in range(answers):
        make_answer(campaign=campaign, theme=theme)
    units = list(Unit.objects.filter(campaign=campaign, level=criterion.level).order_by("pk"))
    sample_units(criterion=criterion, units=units)
    return criterion, units


def member(campaign, *roles: str, username: str | None = None):
    user = make_user(username=username)
    add_member(campaign=campaign, user=user, roles=list(roles))
    return user


def label(user, criterion, stage, value, *, unit=None, comment: str = "", key: str | None = None) -> Label:
    """Take the next unit (or ``unit``) at ``stage`` and label it."""
    if unit is None:
        unit = next_unit(user=user, criterion=criterion, stage=stage)
        assert unit is not None, f"no unit left for {user} at {stage}"
    return submit_label(
        user=user,
        unit_id=unit.pk,
        criterion=criterion,
        stage=stage,
        value=value,
        comment=comment,
        request_key=key or f"k{next(_keys)}",
    )


TOPICS = {
    "Finance": [
        "bilan comptable trésorerie dette bancaire",
        "capitaux propres résultat net exercice",
        "chiffre d'affaires marge brute croissance",
    ],
    "RH": [
        "salariés contrat de travail convention collective",
        "congés payés recrutement paie",
        "plan social licenciement prud'hommes",
    ],
    "IT": [
        "serveurs réseau sauvegarde cybersécurité",
        "licences logiciels maintenance éditeur",
    ],
}


def make_corpus(*, campaign, answers_per_theme: dict[str, int] | None = None, sentences: int = 3) -> None:
    """Answers in several themes whose sentences talk about a few topics per theme (seeded)."""
    rng = np.random.default_rng(0)
    answers_per_theme = answers_per_theme or {"Finance": 12, "RH": 8, "IT": 5}
    for theme, count in answers_per_theme.items():
        for a in range(count):
            chosen = []
            for s in range(sentences):
                words = rng.choice(TOPICS[theme][(a + s) % len(TOPICS[theme])].split(), size=6)
                chosen.append((f"Selon le rapport {a}-{s}, " + " ".join(words) + ".", []))
            make_answer(campaign=campaign, theme=theme, text=" ".join(t for t, _ in chosen), sentences=chosen)


def die_while_running(sample: Sample, *, ago) -> None:
    """What a worker killed in the middle of a draw leaves: the sample running since ``ago``."""
    Sample.objects.filter(pk=sample.pk).update(
        status=Sample.Status.RUNNING, status_since=timezone.now() - ago, progress=0.3
    )


def sampled_by_theme(campaign, plan: dict[str, list[tuple[int, int]]]):
    """Units per theme, each first-labelled then reviewed with the given values."""
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")
    units, themes = [], []
    for theme, pairs in plan.items():
        for _ in pairs:
            answer = make_answer(campaign=campaign, theme=theme, sentences=[])
            units.append(Unit.objects.get(answer=answer))
            themes.append(theme)
    sample_units(criterion=criterion, units=units)
    return criterion, units


# API tokens


def api_token(user, *, name: str = "test") -> str:
    """A new API token of ``user`` (the token itself, as its person is shown it once)."""
    from api.tokens import create_token

    return create_token(user=user, name=name).secret
