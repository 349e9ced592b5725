"""Pass 2 of an import: the rows of one batch of answers, written in bulk.

The writer keeps only id maps between batches (question id -> pk, (chunk id, text hash) -> pk,
replaced answer id -> pk); each batch brings its records and their text analysis. ``prepare``
builds the batch's rows whole, with the ids of the rows others point at drawn ahead
(``bulk.draw_ids``): the questions and chunks it is the first to give, then its answers,
sources, sentences, units and labels. ``apply`` writes them in that order, inside the import's
transaction. On PostgreSQL the two run in different threads, so that the next batch is built
while this one is written (see ``load._write_all``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import models

from annotation.corpus.citations import cited_chunks
from annotation.ingest.analysis import SentenceRow
from annotation.ingest.bulk import PreparedRows, draw_ids, prepare_rows, write_rows
from annotation.ingest.checks import LOOKUP_BATCH, Existing, batches
from annotation.ingest.records import AnswerRecord, LabelRecord
from annotation.models import (
    Answer,
    AnswerSource,
    Campaign,
    Criterion,
    Label,
    Level,
    Question,
    Sentence,
    SourceChunk,
    Stage,
    Unit,
)
from annotation.workflow.append_only import label_deletion_allowed

# Plain strings: the database driver dumps enum members much more slowly, row after row.
ANSWER, SENTENCE, CITATION = Level.ANSWER.value, Level.SENTENCE.value, Level.CITATION.value
IMPORTED = Stage.IMPORTED.value


@dataclass(frozen=True)
class JudgeLabel:
    """A judge's label found in the file, attached to the unit it was written for."""

    unit_id: int
    criterion_id: int
    value: int


@dataclass
class LoadResult:
    """What one import wrote; ``deleted`` counts rows removed by --update, by model label.

    ``judge_labels`` holds the file's judge labels when the loader was given nowhere to store
    them; ``judgments`` counts those stored as they came.
    """

    campaign: Campaign
    campaign_created: bool
    questions_created: int = 0
    chunks_created: int = 0
    answers_created: int = 0
    answers_replaced: int = 0
    sentences: int = 0
    units: int = 0
    labels: int = 0
    judgments: int = 0
    judge_labels: list[JudgeLabel] = field(default_factory=list)
    # Pks of the questions the file gave a reference answer or gold evidence.
    questions_given_evidence: set[int] = field(default_factory=set)
    deleted: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # Criteria the file declared and the campaign lacked, created by the import.
    criteria_created: list[str] = field(default_factory=list)


# (question id, text, theme, difficulty, language) of a question to insert.
NewQuestion = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class Update:
    """``fields`` of the rows ``instances`` stand for, set to the instances' values."""

    model: type[models.Model]
    instances: Sequence[models.Model]
    fields: list[str]


@dataclass
class PreparedBatch:
    """One batch's writes in the order they run, what they count, and its judge labels;
    ``answers``: how many answers of the file it holds."""

    answers: int = 0
    steps: list[PreparedRows | Update] = field(default_factory=list)
    judged: list[JudgeLabel] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    given_evidence: set[int] = field(default_factory=set)

    def insert(
        self, model: type[models.Model], columns: list[str], rows: list[tuple], *, ids: bool
    ) -> list[int]:
        """Add the insert of ``rows``, made ready to write (``bulk.prepare_rows``); with
        ``ids``, draw their ids and return them."""
        drawn = draw_ids(model=model, count=len(rows)) if ids else None
        if rows:
            self.steps.append(prepare_rows(model=model, columns=columns, rows=rows, ids=drawn))
        return drawn or []


class Writer:
    """Writes an import's answers batch by batch into ``campaign``; see the module docstring."""

    def __init__(self, *, campaign: Campaign, existing: Existing, result: LoadResult) -> None:
        self.campaign = campaign
        self.result = result
        self.criteria = {c.name: c.pk for c in Criterion.objects.filter(campaign=campaign)}
        self.questions = dict(existing.questions)
        self.chunks = dict(existing.chunks)
        self.replaced = existing.replaced

    def clear(self, *, answer_pks: Iterable[int]) -> set[int]:
        """Remove what replaced answers held: units (with their labels and judgments), sentences,
        sources. Returns the pks of the chunks they linked, for ``drop_unused_chunks``."""
        deleted: Counter[str] = Counter()
        linked: set[int] = set()
        with label_deletion_allowed():
            for pks in batches(list(answer_pks), LOOKUP_BATCH):
                linked.update(
                    AnswerSource.objects.filter(answer_id__in=pks).values_list("chunk_id", flat=True)
                )
                for queryset in (
                    Unit.objects.filter(answer_id__in=pks),
                    Sentence.objects.filter(answer_id__in=pks),
                    AnswerSource.objects.filter(answer_id__in=pks),
                ):
                    _, per_model = queryset.delete()
                    deleted.update(per_model)
        self.result.deleted = {label: count for label, count in sorted(deleted.items()) if count}
        return linked

    def drop_unused_chunks(self, *, pks: set[int]) -> None:
        """Delete those of ``pks`` no answer links any more: the texts replaced answers no longer
        have (a chunk is kept while any answer, old or new, was given its text)."""
        unused: list[int] = []
        for batch in batches(sorted(pks), LOOKUP_BATCH):
            used = set(AnswerSource.objects.filter(chunk_id__in=batch).values_list("chunk_id", flat=True))
            unused.extend(pk for pk in batch if pk not in used)
        for batch in batches(unused, LOOKUP_BATCH):
            SourceChunk.objects.filter(pk__in=batch).delete()
        if unused:
            label = SourceChunk._meta.label
            self.result.deleted = dict(sorted({**self.result.deleted, label: len(unused)}.items()))

    def prepare(
        self,
        *,
        questions: list[NewQuestion],
        records: list[AnswerRecord],
        analysed: list[tuple[str, list[SentenceRow]]],
    ) -> PreparedBatch:
        """Build one batch's writes without making them: the ``questions`` it is the first to
        give, then ``records`` with their (language, sentences) in ``analysed``. Draws ids and
        keeps the id maps; the only statements it runs are ``bulk.draw_ids``'s."""
        batch = PreparedBatch(answers=len(records))
        self._questions(batch, questions)
        self._question_extras(batch, records)
        self._chunks(batch, records)
        self._answers(batch, records=records, analysed=analysed)
        return batch

    def apply(self, batch: PreparedBatch) -> list[JudgeLabel]:
        """Make ``batch``'s writes in order, in the caller's transaction; returns its judge
        labels."""
        for step in batch.steps:
            if isinstance(step, PreparedRows):
                write_rows(step)
            else:
                step.model._default_manager.bulk_update(step.instances, step.fields, batch_size=LOOKUP_BATCH)
        result = self.result
        result.questions_created += batch.counts["questions"]
        result.chunks_created += batch.counts["chunks"]
        result.answers_created += batch.counts["answers"]
        result.answers_replaced += batch.counts["replaced"]
        result.sentences += batch.counts["sentences"]
        result.units += batch.counts["units"]
        result.labels += batch.counts["labels"]
        result.questions_given_evidence.update(batch.given_evidence)
        return batch.judged

    def _questions(self, batch: PreparedBatch, questions: list[NewQuestion]) -> None:
        ids = batch.insert(
            Question,
            ["campaign", "external_id", "text", "theme", "difficulty", "language"],
            [(self.campaign.pk, *question) for question in questions],
            ids=True,
        )
        self.questions.update((question[0], pk) for question, pk in zip(questions, ids, strict=True))
        batch.counts["questions"] += len(questions)

    def _question_extras(self, batch: PreparedBatch, records: list[AnswerRecord]) -> None:
        """Set the reference answer and gold evidence the batch's rows give to their questions
        (pass 1 checked that the rows of a question agree; a value given replaces the stored one)."""
        given: dict[tuple[str, ...], dict[int, Question]] = {}
        for record in records:
            fields: list[str] = []
            question = Question(pk=self.questions[record.question_id])
            if record.reference_answer is not None:
                fields.append("reference_answer")
                question.reference_answer = record.reference_answer
            if record.gold_evidence is not None:
                fields.append("gold_evidence")
                question.gold_evidence = [item.as_json() for item in record.gold_evidence]
            if fields:
                given.setdefault(tuple(fields), {})[question.pk] = question
        for names, by_pk in given.items():
            batch.steps.append(Update(model=Question, instances=list(by_pk.values()), fields=list(names)))
            batch.given_evidence.update(by_pk)

    def _chunks(self, batch: PreparedBatch, records: list[AnswerRecord]) -> None:
        # The first source with an (id, text) in file order gives the row its title and page.
        new = {}
        for record in records:
            for source in record.sources:
                key = (source.id, source.text_hash)
                if key not in self.chunks and key not in new:
                    new[key] = (
                        self.campaign.pk,
                        source.id,
                        source.title,
                        source.page,
                        source.text,
                        source.text_hash,
                    )
        ids = batch.insert(
            SourceChunk,
            ["campaign", "external_id", "title", "page", "text", "text_hash"],
            list(new.values()),
            ids=True,
        )
        self.chunks.update(zip(new, ids, strict=True))
        batch.counts["chunks"] += len(new)

    def _labels(
        self, unit_id: int, labels: Iterable[LabelRecord], out: list[tuple], judged: list[JudgeLabel]
    ) -> None:
        for label in labels:
            criterion_id = self.criteria[label.criterion]
            if label.human is not None:
                out.append((unit_id, criterion_id, IMPORTED, label.human))
            if label.llm is not None:
                judged.append(JudgeLabel(unit_id=unit_id, criterion_id=criterion_id, value=label.llm))

    def _answers(
        self,
        batch: PreparedBatch,
        *,
        records: list[AnswerRecord],
        analysed: list[tuple[str, list[SentenceRow]]],
    ) -> None:
        campaign_id = self.campaign.pk
        questions, chunks, replaced = self.questions, self.chunks, self.replaced
        languages = [language for language, _ in analysed]
        fresh = [(r, lang) for r, lang in zip(records, languages, strict=True) if r.answer_id not in replaced]
        ids = batch.insert(
            Answer,
            ["campaign", "question", "external_id", "repetition", "text", "language"],
            [
                (campaign_id, questions[r.question_id], r.answer_id, r.repetition, r.answer, language)
                for r, language in fresh
            ],
            ids=True,
        )
        answer_pk = {r.answer_id: pk for (r, _), pk in zip(fresh, ids, strict=True)}
        updated = [
            Answer(
                pk=replaced[r.answer_id],
                question_id=questions[r.question_id],
                repetition=r.repetition,
                text=r.answer,
                language=language,
            )
            for r, language in zip(records, languages, strict=True)
            if r.answer_id in replaced
        ]
        if updated:
            batch.steps.append(
                Update(model=Answer, instances=updated, fields=["question", "repetition", "text", "language"])
            )
        answer_pk.update({r.answer_id: replaced[r.answer_id] for r in records if r.answer_id in replaced})
        batch.counts["answers"] += len(fresh)
        batch.counts["replaced"] += len(updated)

        source_rows: list[tuple] = []
        sentence_rows: list[tuple] = []
        counts: list[int] = []
        # Per sentence, in insertion order: the pks of the retrieved chunks it cites.
        citations: list[list[int]] = []
        for record, (_, items) in zip(records, analysed, strict=True):
            pk = answer_pk[record.answer_id]
            source_pks = [chunks[(source.id, source.text_hash)] for source in record.sources]
            source_rows.extend((pk, chunk, rank) for rank, chunk in enumerate(source_pks, start=1))
            chunk_of: dict[str, int] = {}
            for source, chunk in zip(record.sources, source_pks, strict=True):
                chunk_of.setdefault(source.id, chunk)
            retrieved = chunk_of.keys()
            citations.extend(cited_chunks(cited_ids=item[3], retrieved=chunk_of) for item in items)
            counts.append(len(items))
            sentence_rows.extend(
                (
                    pk,
                    position,
                    text,
                    paragraph,
                    index,
                    cited,
                    all(c in retrieved for c in cited) if cited else None,
                )
                for position, (text, paragraph, index, cited) in enumerate(items)
            )
        batch.insert(AnswerSource, ["answer", "chunk", "rank"], source_rows, ids=False)
        sentence_ids = batch.insert(
            Sentence,
            ["answer", "position", "text", "paragraph", "paragraph_index", "cited_ids", "citations_ok"],
            sentence_rows,
            ids=True,
        )

        unit_rows: list[tuple] = []
        cursor = 0
        for record, count in zip(records, counts, strict=True):
            pk = answer_pk[record.answer_id]
            unit_rows.append((campaign_id, ANSWER, pk, None, record.theme, record.difficulty))
            unit_rows.extend(
                (campaign_id, SENTENCE, pk, sentence_id, record.theme, record.difficulty)
                for sentence_id in sentence_ids[cursor : cursor + count]
            )
            cursor += count
        unit_ids = batch.insert(
            Unit, ["campaign", "level", "answer", "sentence", "theme", "difficulty"], unit_rows, ids=True
        )
        # Citation units after all the others, so that the cursor below walks answer and
        # sentence units alone; the file carries no citation-level labels.
        citation_rows: list[tuple] = []
        cursor = 0
        for record, count in zip(records, counts, strict=True):
            pk = answer_pk[record.answer_id]
            for sentence_id, cited in zip(
                sentence_ids[cursor : cursor + count], citations[cursor : cursor + count], strict=True
            ):
                citation_rows.extend(
                    (campaign_id, CITATION, pk, sentence_id, chunk_id, record.theme, record.difficulty)
                    for chunk_id in cited
                )
            cursor += count
        batch.insert(
            Unit,
            ["campaign", "level", "answer", "sentence", "chunk", "theme", "difficulty"],
            citation_rows,
            ids=False,
        )
        batch.counts["sentences"] += len(sentence_ids)
        batch.counts["units"] += len(unit_ids) + len(citation_rows)

        label_rows: list[tuple] = []
        cursor = 0
        for record, count in zip(records, counts, strict=True):
            self._labels(unit_ids[cursor], record.labels, label_rows, batch.judged)
            if record.sentences is not None:
                sentence_units = unit_ids[cursor + 1 : cursor + 1 + count]
                for sentence, unit_id in zip(record.sentences, sentence_units, strict=True):
                    self._labels(unit_id, sentence.labels, label_rows, batch.judged)
            cursor += 1 + count
        batch.insert(Label, ["unit", "criterion", "stage", "value"], label_rows, ids=False)
        batch.counts["labels"] += len(label_rows)
