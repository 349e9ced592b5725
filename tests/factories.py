"""Small factories for tests: plain functions that create rows with sensible defaults."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from unittest import mock

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from annotation.corpus.campaigns import content_changed, get_or_create_campaign
from annotation.corpus.sources import chunk_text_hash
from annotation.ingest.bulk import insert_rows
from annotation.models import (
    Answer,
    AnswerSource,
    Assignment,
    Campaign,
    Criterion,
    Label,
    Level,
    Membership,
    OpenSlot,
    Question,
    Sample,
    SampleItem,
    Sentence,
    SourceChunk,
    Stage,
    Unit,
)
from annotation.workflow import next_unit, open_slots, submit_label

_seq = itertools.count(1)
PASSWORD = "correct-horse-battery"
# Queries asserted on the label path: PostgreSQL takes the front of the queue and holds it in one
# statement; SQLite, which cannot return a joined table's columns from an UPDATE, needs a second.
FRONT_HELD_APART = 0 if connection.features.has_select_for_update_skip_locked else 1


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


DEFAULT_TEXT = "Le chiffre d'affaires est de 12 M€ [^c1^]. Il progresse [^c2^]."
DEFAULT_SENTENCES = [("Le chiffre d'affaires est de 12 M€ [^c1^].", ["c1"]), ("Il progresse [^c2^].", ["c2"])]


def make_answer(
    *,
    campaign: Campaign,
    question: Question | None = None,
    theme: str = "Finance",
    difficulty: str = "simple",
    text: str = DEFAULT_TEXT,
    sentences: list[tuple[str, list[str]]] | None = None,
    chunk_ids: tuple[str, ...] = ("c1", "c2"),
    citations: bool = False,
) -> Answer:
    """An answer to ``question`` (or to a question of its own, of ``theme`` and ``difficulty``) with
    its chunks, answer unit, sentences and sentence units (``make_answers``)."""
    (answer,) = make_answers(
        campaign=campaign,
        about=[question if question is not None else (theme, difficulty)],
        text=text,
        sentences=sentences,
        chunk_ids=chunk_ids,
        citations=citations,
    )
    return answer


def make_answers(
    *,
    campaign: Campaign,
    about: Sequence[Question | tuple[str, str]],
    text: str = DEFAULT_TEXT,
    sentences: list[tuple[str, list[str]]] | None = None,
    chunk_ids: tuple[str, ...] = ("c1", "c2"),
    citations: bool = False,
    contents: Sequence[tuple[str, list[tuple[str, list[str]]]]] | None = None,
) -> list[Answer]:
    """An answer for each item of ``about``, in its order: to that question, or to a question of
    its own of that (theme, difficulty). Each with its chunks, answer unit, sentences and sentence
    units (``text`` and ``sentences``, or each its own (text, sentences) of ``contents``); with
    ``citations``, a citation unit per (sentence, retrieved chunk it cites) as an import makes
    them. Written in bulk whatever their number: questions and answers by ``bulk_create``, their
    sources, sentences and units by the import's own writer (``annotation.ingest.bulk.insert_rows``:
    plain rows, no model instance), rows and their order as one ``make_answer`` after another would
    write them, and the campaign's content version moved once."""
    if contents is None:
        contents = [(text, DEFAULT_SENTENCES if sentences is None else sentences)] * len(about)
    numbers = [next(_seq) for _ in about]
    own = {
        n: Question(
            campaign=campaign, external_id=f"Q{n}", text=f"Question {n} ?", theme=item[0], difficulty=item[1]
        )
        for n, item in zip(numbers, about, strict=True)
        if not isinstance(item, Question)
    }
    Question.objects.bulk_create(own.values())
    questions = [
        item if isinstance(item, Question) else own[n] for n, item in zip(numbers, about, strict=True)
    ]
    answers = Answer.objects.bulk_create(
        Answer(campaign=campaign, question=question, external_id=f"A{n}", text=content[0], language="fr")
        for n, question, content in zip(numbers, questions, contents, strict=True)
    )
    retrieved: dict[str, SourceChunk] = {}
    for chunk in SourceChunk.objects.filter(campaign=campaign, external_id__in=chunk_ids).order_by("-pk"):
        retrieved[chunk.external_id] = chunk
    missing = [
        SourceChunk(
            campaign=campaign,
            external_id=cid,
            title=f"doc-{cid}.pdf",
            text=f"Texte {cid}.",
            text_hash=chunk_text_hash(f"Texte {cid}."),
        )
        for cid in dict.fromkeys(chunk_ids)
        if cid not in retrieved
    ]
    retrieved.update((chunk.external_id, chunk) for chunk in SourceChunk.objects.bulk_create(missing))
    insert_rows(
        model=AnswerSource,
        columns=["answer", "chunk", "rank"],
        rows=[
            (answer.pk, retrieved[cid].pk, rank)
            for answer in answers
            for rank, cid in enumerate(chunk_ids, start=1)
        ],
        returning=False,
    )
    sentence_ids = iter(
        insert_rows(
            model=Sentence,
            columns=["answer", "position", "text", "paragraph", "cited_ids", "citations_ok"],
            rows=[
                (
                    answer.pk,
                    position,
                    sentence_text,
                    answer_text,
                    cited,
                    all(c in chunk_ids for c in cited) if cited else None,
                )
                for answer, (answer_text, answer_sentences) in zip(answers, contents, strict=True)
                for position, (sentence_text, cited) in enumerate(answer_sentences)
            ],
        )
    )
    units = []
    for answer, question, (_answer_text, answer_sentences) in zip(answers, questions, contents, strict=True):
        about_answer = (campaign.pk, answer.pk, question.theme, question.difficulty)
        units.append((Level.ANSWER, None, None, *about_answer))
        for _text, cited in answer_sentences:
            sentence_id = next(sentence_ids)
            units.append((Level.SENTENCE, sentence_id, None, *about_answer))
            if citations:
                units.extend(
                    (Level.CITATION, sentence_id, retrieved[cid].pk, *about_answer)
                    for cid in dict.fromkeys(c for c in cited if c in retrieved)
                )
    insert_rows(
        model=Unit,
        columns=["level", "sentence", "chunk", "campaign", "answer", "theme", "difficulty"],
        rows=units,
        returning=False,
    )
    content_changed(campaign_id=campaign.pk)
    return answers


def make_answer_units(*, campaign: Campaign, theme: str = "Finance", count: int, **content) -> list[Unit]:
    """The answer units of ``count`` new answers of ``theme`` (``make_answers``), in order."""
    return answer_units(make_answers(campaign=campaign, about=[(theme, "simple")] * count, **content))


def answer_units(answers: Sequence[Answer]) -> list[Unit]:
    """The answer unit of each of ``answers``, in their order (one query)."""
    by_answer = {unit.answer_id: unit for unit in Unit.objects.filter(answer__in=answers, level=Level.ANSWER)}
    return [by_answer[answer.pk] for answer in answers]


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
    open_slots.rebuild(criterion=Criterion.objects.select_related("campaign").get(pk=criterion.pk))
    return sample


def sampled(*, campaign, name: str = "relevance", answers: int = 4, theme: str = "Finance"):
    """``answers`` new answers, the criterion ``name`` and its sampled units (in queue order)."""
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name=name)
    make_answers(campaign=campaign, about=[(theme, "simple")] * answers)
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


def label_at(at: datetime, user, criterion, stage, value, **kwargs) -> Label:
    """:func:`label` with the server's clock at ``at``: the label's ``created_at`` (the pace the
    annotators' page measures) is ``at``."""
    with mock.patch("django.utils.timezone.now", return_value=at):
        return label(user, criterion, stage, value, **kwargs)


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
    about, contents = [], []
    for theme, count in answers_per_theme.items():
        for a in range(count):
            chosen = []
            for s in range(sentences):
                words = rng.choice(TOPICS[theme][(a + s) % len(TOPICS[theme])].split(), size=6)
                chosen.append((f"Selon le rapport {a}-{s}, " + " ".join(words) + ".", []))
            about.append((theme, "simple"))
            contents.append((" ".join(t for t, _ in chosen), chosen))
    make_answers(campaign=campaign, about=about, contents=contents)


def judged_corpus(*, campaign, answers_per_theme: dict[str, int]):
    """:func:`make_corpus` with an imported judge ``gpt`` on every unit of ``veracity``: verdicts
    alternating 0 and 1 by unit id, confidences 0.55 to 0.95. Returns (criterion, judge, units
    by id)."""
    from evaluation.models import Judge, Judgment

    make_corpus(campaign=campaign, answers_per_theme=answers_per_theme)
    criterion = Criterion.objects.get(campaign=campaign, name="veracity")
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.IMPORTED)
    units = list(campaign.units.filter(level=criterion.level).order_by("id"))
    for index, unit in enumerate(units):
        Judgment.objects.create(
            unit=unit, criterion=criterion, judge=judge, value=index % 2, confidence=0.55 + (index % 5) / 10
        )
    return criterion, judge, units


def make_judge(
    *, campaign: Campaign, name: str, kind: str = "openai", criteria: tuple[str, ...] = ("relevance",)
):
    """A judge of ``campaign`` with one successful judgment on an answer's unit of each criterion
    named: a candidate of those criteria's reports (``judge_choice``)."""
    from evaluation.models import Judge, Judgment

    judge = Judge.objects.create(campaign=campaign, name=name, kind=kind)
    answer = make_answer(campaign=campaign)
    for criterion in Criterion.objects.filter(campaign=campaign, name__in=criteria):
        unit = Unit.objects.filter(answer=answer, level=criterion.level).first()
        Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=1)
    return judge


def older_sample(
    *, campaign, criterion, unit_ids, pi: float, theme: str = "Finance", size: int = 40
) -> Sample:
    """A finished sample, as an older K-means draw would leave it, that drew ``unit_ids`` of the
    ``size`` units of ``theme``, each with probability ``pi``."""
    sample = Sample.objects.create(campaign=campaign, criterion=criterion, status=Sample.Status.DONE)
    SampleItem.objects.bulk_create(
        SampleItem(
            sample=sample,
            unit_id=u,
            theme=theme,
            cluster=0,
            cluster_size=size,
            inclusion_probability=pi,
            rank=r,
        )
        for r, u in enumerate(unit_ids)
    )
    return sample


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
        units.extend(make_answer_units(campaign=campaign, theme=theme, count=len(pairs), sentences=[]))
        themes.extend([theme] * len(pairs))
    sample_units(criterion=criterion, units=units)
    return criterion, units


def expire_leases(*, at) -> None:
    """Every lease ends at ``at`` (in the past: as if its holder had walked away)."""
    Assignment.objects.filter(label__isnull=True).update(expires_at=at)
    OpenSlot.objects.exclude(held_until=None).update(held_until=at)


def import_label(*, unit: Unit, criterion: Criterion, value: int) -> Label:
    """An imported (final) label on ``unit``, as an import writes it: the criterion's stored queue
    is set again, as the import does."""
    imported = Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=value)
    open_slots.rebuild(criterion=Criterion.objects.select_related("campaign").get(pk=criterion.pk))
    return imported


WORK_START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def reviewed_work(campaign, annotator, reviewer, adjudicator, *, units: int = 4) -> Criterion:
    """Review-mode work on relevance, timed from ``WORK_START``: ``annotator`` labels ``units``
    units 1, 1, 0, 1... at 0, 20, 50 s then after a break (1050 s, then every 10 s);
    ``reviewer`` confirms, overrides, confirms the first three at 2000, 2040, 2080 s;
    ``adjudicator`` settles the override with 0 at 3000 s; the reviewer then holds the fourth
    unit under a lease."""

    def at(seconds: float) -> datetime:
        return WORK_START + timedelta(seconds=seconds)

    criterion, drawn = sampled(campaign=campaign, answers=units)
    values = [1, 1, 0] + [1] * (units - 3)
    times = [0, 20, 50] + [1050 + 10 * n for n in range(units - 3)]
    for unit, value, second in zip(drawn, values, times, strict=True):
        label_at(at(second), annotator, criterion, Stage.LABEL, value, unit=unit)
    for n, value in enumerate([1, 0, 0]):
        label_at(at(2000 + 40 * n), reviewer, criterion, Stage.REVIEW, value, unit=drawn[n], comment="r")
    label_at(at(3000), adjudicator, criterion, Stage.ADJUDICATION, 0, unit=drawn[1], comment="settled")
    assert next_unit(user=reviewer, criterion=criterion, stage=Stage.REVIEW) is not None
    return criterion


# API tokens


def api_token(user, *, name: str = "test") -> str:
    """A new API token of ``user`` (the token itself, as its person is shown it once)."""
    from api.tokens import create_token

    return create_token(user=user, name=name).secret
