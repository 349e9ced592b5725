"""What one record of an import file becomes once its row is checked (``records``): an answer,
its sources, labels, sentences and the question's gold evidence, typed. ``load`` and ``write``
read them; nothing here checks anything."""

from __future__ import annotations

from dataclasses import dataclass


# Records are slotted: an import holds those of a few hundred answers at a time.
@dataclass(frozen=True, slots=True)
class SourceRecord:
    id: str
    title: str
    page: int | None
    text: str
    field: str
    # chunk_text_hash(text): with the id, what tells the campaign's chunk rows apart.
    text_hash: str


# Per criterion with named categories: its keys, lower case, -> the values they stand for.
CategoryKeys = dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class LabelRecord:
    """The labels one unit carries for one criterion: a human's and a judge's (either may be None)."""

    criterion: str
    human: int | None
    llm: int | None
    field: str


@dataclass(frozen=True, slots=True)
class SentenceRecord:
    text: str
    paragraph: str | None
    labels: tuple[LabelRecord, ...]
    field: str


@dataclass(frozen=True, slots=True)
class GoldItem:
    """One piece of a question's gold evidence: a passage's text, a chunk id, or both."""

    text: str | None
    chunk_id: str | None

    def as_json(self) -> dict[str, str]:
        """The item as Question.gold_evidence stores it (only the keys it has)."""
        item = {}
        if self.text is not None:
            item["text"] = self.text
        if self.chunk_id is not None:
            item["chunk_id"] = self.chunk_id
        return item


@dataclass(frozen=True, slots=True)
class AnswerRecord:
    row: int
    question_id: str
    question: str
    theme: str
    difficulty: str
    answer_id: str
    repetition: int
    answer: str
    sources: tuple[SourceRecord, ...]
    labels: tuple[LabelRecord, ...]
    # None: the answer is split into sentences on import.
    sentences: tuple[SentenceRecord, ...] | None
    # Of the question, when the row gives them (None: not given, the question keeps its own).
    reference_answer: str | None = None
    gold_evidence: tuple[GoldItem, ...] | None = None
