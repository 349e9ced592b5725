"""What a campaign evaluates: questions, the retrieved chunks, answers and their sources,
sentences, and the units people and judges label (an answer, a sentence or a citation)."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Q

from annotation.corpus.sources import chunk_text_hash
from annotation.models.campaigns import (
    Campaign,
    Level,
)


class Question(models.Model):
    # Indexed by the constraint and the index below, which both start with it.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="questions", db_index=False)
    external_id = models.CharField(max_length=200)
    text = models.TextField()
    theme = models.CharField(max_length=200)
    difficulty = models.CharField(max_length=50, blank=True)
    language = models.CharField(max_length=8, blank=True)
    # Optional, from the import: what a good answer says, and the passages (``{"text": ...}``)
    # or retrieved chunks (``{"chunk_id": ...}``) it must rest on (annotation.gold_evidence).
    reference_answer = models.TextField(blank=True)
    gold_evidence = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["theme", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "external_id"], name="question_unique_external_id"),
        ]
        indexes = [models.Index(fields=["campaign", "theme", "difficulty"])]

    def __str__(self) -> str:
        return self.external_id


class SourceChunk(models.Model):
    """A retrieved chunk's text under its id, shared by every answer that was given this text.

    Real exports give one id several texts (numbers anonymised per answer, re-chunking, OCR):
    each distinct text is a row of its own, and an answer links the row with the text it was
    given, so what the assistant saw is what annotators and the judge read. ``text_hash`` is
    ``chunk_text_hash(text)``, kept by save(); bulk inserts must fill it the same way.
    """

    # Indexed by chunk_unique_text, which starts with it.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="chunks", db_index=False)
    external_id = models.CharField(max_length=200)
    title = models.TextField(blank=True)
    page = models.IntegerField(null=True, blank=True)
    text = models.TextField(blank=True)
    # A digest rather than the text in the unique key: chunk texts outgrow what a btree index takes.
    text_hash = models.CharField(max_length=64, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "external_id", "text_hash"], name="chunk_unique_text"
            ),
        ]

    def __str__(self) -> str:
        return self.external_id

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.text_hash = chunk_text_hash(self.text)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "text" in update_fields:
            kwargs["update_fields"] = {*update_fields, "text_hash"}
        super().save(*args, **kwargs)


class Answer(models.Model):
    # Indexed by answer_unique_external_id, which starts with it.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="answers", db_index=False)
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="answers")
    external_id = models.CharField(max_length=200)
    repetition = models.PositiveIntegerField(default=1)
    text = models.TextField()
    language = models.CharField(max_length=8, blank=True)
    chunks: models.ManyToManyField[SourceChunk, AnswerSource] = models.ManyToManyField(
        SourceChunk, through="AnswerSource", related_name="answers"
    )

    class Meta:
        ordering = ["question_id", "repetition", "id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "external_id"], name="answer_unique_external_id"),
        ]

    def __str__(self) -> str:
        return self.external_id


class AnswerSource(models.Model):
    """A chunk the retriever returned for an answer, with its rank (1 = first)."""

    # Indexed by both constraints below, which start with it.
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="sources", db_index=False)
    chunk = models.ForeignKey(SourceChunk, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField()

    class Meta:
        ordering = ["answer_id", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["answer", "rank"], name="answersource_unique_rank"),
            models.UniqueConstraint(fields=["answer", "chunk"], name="answersource_unique_chunk"),
        ]


class Sentence(models.Model):
    # Indexed by sentence_unique_position, which starts with it.
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="sentences", db_index=False)
    position = models.PositiveIntegerField()
    text = models.TextField()
    paragraph = models.TextField(blank=True)
    paragraph_index = models.PositiveIntegerField(default=0)
    cited_ids = models.JSONField(default=list, blank=True)
    # None when the sentence cites nothing; else whether every cited id was retrieved.
    citations_ok = models.BooleanField(null=True)

    class Meta:
        ordering = ["answer_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["answer", "position"], name="sentence_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.answer_id}#{self.position}"


# Keys the annotation pages already give a meaning to (skip, undo, comment, help); the JavaScript
# compares keys without case, so neither case of these may label.


class Unit(models.Model):
    """What receives one label per criterion: an answer, one of its sentences, or one citation of
    a sentence (the sentence and one retrieved chunk it cites)."""

    # Indexed by the (campaign, level, theme) index below.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="units", db_index=False)
    level = models.CharField(max_length=10, choices=Level.choices)
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="units")
    sentence = models.ForeignKey(
        Sentence, on_delete=models.CASCADE, null=True, blank=True, related_name="units"
    )
    # A citation unit's cited chunk: one the retriever returned for the answer (a cited id that was
    # not retrieved makes no unit, see annotation.corpus.citations).
    chunk = models.ForeignKey(SourceChunk, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    # Copied from the question so that sampling and estimates group without joins.
    theme = models.CharField(max_length=200)
    difficulty = models.CharField(max_length=50, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["answer"], condition=Q(sentence__isnull=True), name="unit_unique_answer_level"
            ),
            models.UniqueConstraint(
                fields=["sentence"],
                condition=Q(sentence__isnull=False, chunk__isnull=True),
                name="unit_unique_sentence_level",
            ),
            models.UniqueConstraint(
                fields=["sentence", "chunk"], condition=Q(chunk__isnull=False), name="unit_unique_citation"
            ),
            models.CheckConstraint(
                condition=(
                    Q(level="answer", sentence__isnull=True, chunk__isnull=True)
                    | Q(level="sentence", sentence__isnull=False, chunk__isnull=True)
                    | Q(level="citation", sentence__isnull=False, chunk__isnull=False)
                ),
                name="unit_level_matches_sentence",
            ),
        ]
        indexes = [models.Index(fields=["campaign", "level", "theme"])]

    def __str__(self) -> str:
        return f"unit {self.pk} ({self.level})"
