"""Checking parsed records against the campaign and writing them in bulk, in one transaction."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from django.conf import settings
from django.db import transaction

from annotation.append_only import label_deletion_allowed
from annotation.campaigns import get_or_create_campaign
from annotation.guidelines import BUILTIN_CRITERIA
from annotation.ingest.analysis import Analysis, SentenceRow, TextJob
from annotation.ingest.bulk import insert_rows
from annotation.ingest.errors import ErrorLog, ImportFailed, RowError
from annotation.ingest.records import AnswerRecord, LabelRecord, ParsedFile, SourceRecord
from annotation.models import (
    Answer,
    AnswerSource,
    Campaign,
    Criterion,
    Label,
    Level,
    Question,
    SampleItem,
    Sentence,
    SourceChunk,
    Stage,
    Unit,
)

ProgressCallback = Callable[[int, int], None]

# Answers written per round of bulk inserts: big enough to amortise each INSERT, small enough
# to keep memory flat and progress moving.
WRITE_BATCH = 500
# Ids per "IN (...)" lookup: SQLite limits the number of parameters of one statement.
LOOKUP_BATCH = 500
# Plain strings: the database driver dumps enum members much more slowly, row after row.
ANSWER, SENTENCE, IMPORTED = Level.ANSWER.value, Level.SENTENCE.value, Stage.IMPORTED.value


@dataclass(frozen=True)
class JudgeLabel:
    """A judge's label found in the file, attached to the unit it was written for."""

    unit_id: int
    criterion_id: int
    value: int


@dataclass
class LoadResult:
    """What one import wrote; ``deleted`` counts rows removed by --update, by model label."""

    campaign: Campaign
    campaign_created: bool
    questions_created: int = 0
    chunks_created: int = 0
    answers_created: int = 0
    answers_replaced: int = 0
    sentences: int = 0
    units: int = 0
    labels: int = 0
    judge_labels: list[JudgeLabel] = field(default_factory=list)
    deleted: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _batches(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def language_candidates(*, expected: str = "") -> tuple[str, ...]:
    """The languages texts are told apart among: ``LANGUAGE_CANDIDATES`` and the campaign's
    expected language."""
    return tuple(sorted({*settings.LANGUAGE_CANDIDATES, *([expected] if expected else [])}))


def _first_per_key(records: list[AnswerRecord], key: Callable[[AnswerRecord], str]) -> dict:
    first: dict[str, AnswerRecord] = {}
    for record in records:
        first.setdefault(key(record), record)
    return first


class _Check:
    """Every check that needs the database, before anything is written."""

    def __init__(self, *, parsed: ParsedFile, campaign: Campaign | None, update: bool) -> None:
        self.parsed = parsed
        self.campaign = campaign
        self.update = update
        self.errors = ErrorLog(file=parsed.name)
        self.warnings: list[str] = []

    def error(self, *, row: int, path: str, message: str) -> None:
        self.errors.add(row=row, field=self.parsed.field_name(path), message=message)

    def criteria(self) -> None:
        if self.campaign is None:
            levels = {name: spec["level"] for name, spec in BUILTIN_CRITERIA.items()}
        else:
            levels = dict(Criterion.objects.filter(campaign=self.campaign).values_list("name", "level"))
        known = ", ".join(sorted(levels))
        for record in self.parsed.records:
            placed: list[tuple[LabelRecord, str]] = [(label, Level.ANSWER) for label in record.labels]
            for sentence in record.sentences or ():
                placed.extend((label, Level.SENTENCE) for label in sentence.labels)
            for label, level in placed:
                actual = levels.get(label.criterion)
                if actual is None:
                    self.error(
                        row=record.row,
                        path=label.field,
                        message=(
                            f"the campaign has no criterion {label.criterion!r} (it has {known}); "
                            "create the criterion before importing its labels"
                        ),
                    )
                elif actual != level:
                    where = "sentences[].labels" if actual == Level.SENTENCE else "the answer's labels"
                    self.error(
                        row=record.row,
                        path=label.field,
                        message=(
                            f"{label.criterion!r} is a {actual}-level criterion: give its labels in {where}"
                        ),
                    )

    def questions(self) -> dict[str, int]:
        """Pks of the file's questions already in the campaign; differing ones are errors."""
        if self.campaign is None:
            return {}
        first = _first_per_key(self.parsed.records, lambda record: record.question_id)
        found: dict[str, int] = {}
        for ids in _batches(list(first), LOOKUP_BATCH):
            rows = Question.objects.filter(campaign=self.campaign, external_id__in=ids).values_list(
                "external_id", "pk", "text", "theme", "difficulty"
            )
            for external_id, pk, text, theme, difficulty in rows:
                found[external_id] = pk
                record = first[external_id]
                stored = {"question": text, "theme": theme, "difficulty": difficulty}
                for attribute, value in stored.items():
                    if getattr(record, attribute) != value:
                        self.error(
                            row=record.row,
                            path=attribute,
                            message=(
                                f"question {external_id!r} is already in the campaign with {value!r}, "
                                f"not {getattr(record, attribute)!r}"
                            ),
                        )
        return found

    def chunks(self) -> dict[tuple[str, str], int]:
        """Pks of the file's chunks already in the campaign, by (id, text hash).

        A text already stored under the id is shared; another text is a new row, not an error.
        Warns once about the ids that come with several texts, in the file and the campaign.
        """
        first: dict[tuple[str, str], tuple[int, SourceRecord]] = {}
        for record in self.parsed.records:
            for source in record.sources:
                first.setdefault((source.id, source.text_hash), (record.row, source))
        variants = {chunk_id: set(texts) for chunk_id, texts in self.parsed.chunk_texts.items()}
        stored_only: dict[str, bool] = {}
        found: dict[tuple[str, str], int] = {}
        if self.campaign is not None:
            for ids in _batches(list(self.parsed.chunk_texts), LOOKUP_BATCH):
                rows = SourceChunk.objects.filter(campaign=self.campaign, external_id__in=ids).values_list(
                    "external_id", "text_hash", "pk", "title", "page"
                )
                for external_id, text_hash, pk, title, page in rows:
                    variants[external_id].add(text_hash)
                    seen = first.get((external_id, text_hash))
                    if seen is None:
                        stored_only[external_id] = True
                        continue
                    found[(external_id, text_hash)] = pk
                    row, source = seen
                    if (source.title, source.page) != (title, page):
                        self.warnings.append(
                            f"{self.parsed.name}:{row}: {self.parsed.field_name(source.field)}: chunk "
                            f"{external_id!r} is already in the campaign with this text and another "
                            "title or page; the stored one is kept"
                        )
        several = [chunk_id for chunk_id, texts in variants.items() if len(texts) > 1]
        if several:
            example = several[0]
            rows = sorted(self.parsed.chunk_texts[example].values())
            where = (
                f"rows {', '.join(map(str, rows[:-1]))} and {rows[-1]}" if len(rows) > 1 else f"row {rows[0]}"
            )
            if stored_only.get(example):
                where += " and in the campaign"
            self.warnings.append(
                f"{self.parsed.name}: {len(several)} chunk id{'s' if len(several) > 1 else ''} "
                f"came with several texts (such as {example!r}: {where}); "
                "each answer keeps the text it was given"
            )
        return found

    def answers(self) -> dict[str, int]:
        """Pks of the answers to replace (update); existing answers are errors otherwise."""
        if self.campaign is None:
            return {}
        rows_by_id = {record.answer_id: record.row for record in self.parsed.records}
        found: dict[str, int] = {}
        for ids in _batches(list(rows_by_id), LOOKUP_BATCH):
            found.update(
                Answer.objects.filter(campaign=self.campaign, external_id__in=ids).values_list(
                    "external_id", "pk"
                )
            )
        if not self.update:
            for external_id in found:
                self.error(
                    row=rows_by_id[external_id],
                    path="answer_id",
                    message=f"{external_id!r} is already in the campaign; import with update to replace it",
                )
            return found
        by_pk = {pk: external_id for external_id, pk in found.items()}
        for pks in _batches(list(by_pk), LOOKUP_BATCH):
            labelled = (
                Label.objects.filter(unit__answer_id__in=pks)
                .exclude(stage=Stage.IMPORTED)
                .values_list("unit__answer_id", flat=True)
                .distinct()
            )
            for pk in labelled:
                self.error(
                    row=rows_by_id[by_pk[pk]],
                    path="answer_id",
                    message=(
                        f"{by_pk[pk]!r} has labels made in the app; replacing it would delete them, "
                        "so the update is refused"
                    ),
                )
            sampled = SampleItem.objects.filter(unit__answer_id__in=pks).values_list(
                "unit__answer_id", flat=True
            )
            for pk in set(sampled):
                self.error(
                    row=rows_by_id[by_pk[pk]],
                    path="answer_id",
                    message=f"{by_pk[pk]!r} is in a drawn sample; replacing it would change the sample",
                )
        return found


class _Writer:
    def __init__(self, *, campaign: Campaign, parsed: ParsedFile, result: LoadResult) -> None:
        self.campaign = campaign
        self.parsed = parsed
        self.result = result
        self.criteria = {c.name: c.pk for c in Criterion.objects.filter(campaign=campaign)}

    def questions(self, *, existing: dict[str, int], languages: dict[str, str]) -> dict[str, int]:
        first = _first_per_key(self.parsed.records, lambda record: record.question_id)
        new = [record for external_id, record in first.items() if external_id not in existing]
        ids = insert_rows(
            model=Question,
            columns=["campaign", "external_id", "text", "theme", "difficulty", "language"],
            rows=[
                (
                    self.campaign.pk,
                    record.question_id,
                    record.question,
                    record.theme,
                    record.difficulty,
                    languages[record.question_id],
                )
                for record in new
            ],
        )
        self.result.questions_created = len(new)
        return existing | {record.question_id: pk for record, pk in zip(new, ids, strict=True)}

    def chunks(self, *, existing: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
        """Pks of every (id, text hash) of the file: the stored ones, and new rows for the rest."""
        new: dict[tuple[str, str], SourceRecord] = {}
        for record in self.parsed.records:
            for source in record.sources:
                key = (source.id, source.text_hash)
                if key not in existing:
                    new.setdefault(key, source)
        ids = insert_rows(
            model=SourceChunk,
            columns=["campaign", "external_id", "title", "page", "text", "text_hash"],
            rows=[(self.campaign.pk, s.id, s.title, s.page, s.text, s.text_hash) for s in new.values()],
        )
        self.result.chunks_created = len(new)
        return existing | dict(zip(new, ids, strict=True))

    def clear(self, *, answer_pks: Iterable[int]) -> set[int]:
        """Remove what replaced answers held: units (with their labels and judgments), sentences,
        sources. Returns the pks of the chunks they linked, for ``drop_unused_chunks``."""
        deleted: Counter[str] = Counter()
        linked: set[int] = set()
        with label_deletion_allowed():
            self._clear(answer_pks=answer_pks, deleted=deleted, linked=linked)
        self.result.deleted = {label: count for label, count in sorted(deleted.items()) if count}
        return linked

    def _clear(self, *, answer_pks: Iterable[int], deleted: Counter[str], linked: set[int]) -> None:
        for pks in _batches(list(answer_pks), LOOKUP_BATCH):
            linked.update(AnswerSource.objects.filter(answer_id__in=pks).values_list("chunk_id", flat=True))
            for queryset in (
                Unit.objects.filter(answer_id__in=pks),
                Sentence.objects.filter(answer_id__in=pks),
                AnswerSource.objects.filter(answer_id__in=pks),
            ):
                _, per_model = queryset.delete()
                deleted.update(per_model)

    def drop_unused_chunks(self, *, pks: set[int]) -> None:
        """Delete those of ``pks`` no answer links any more: the texts replaced answers no longer
        have (a chunk is kept while any answer, old or new, was given its text)."""
        unused: list[int] = []
        for batch in _batches(sorted(pks), LOOKUP_BATCH):
            used = set(AnswerSource.objects.filter(chunk_id__in=batch).values_list("chunk_id", flat=True))
            unused.extend(pk for pk in batch if pk not in used)
        for batch in _batches(unused, LOOKUP_BATCH):
            SourceChunk.objects.filter(pk__in=batch).delete()
        if unused:
            label = SourceChunk._meta.label
            self.result.deleted = dict(sorted({**self.result.deleted, label: len(unused)}.items()))

    def _labels(self, unit_id: int, labels: Iterable[LabelRecord], out: list[tuple]) -> None:
        for label in labels:
            criterion_id = self.criteria[label.criterion]
            if label.human is not None:
                out.append((unit_id, criterion_id, IMPORTED, label.human))
            if label.llm is not None:
                self.result.judge_labels.append(
                    JudgeLabel(unit_id=unit_id, criterion_id=criterion_id, value=label.llm)
                )

    def answers(
        self,
        *,
        records: list[AnswerRecord],
        analysed: list[tuple[str, list[SentenceRow]]],
        questions: dict[str, int],
        chunks: dict[tuple[str, str], int],
        replaced: dict[str, int],
    ) -> None:
        campaign_id = self.campaign.pk
        languages = [language for language, _ in analysed]
        fresh = [(r, lang) for r, lang in zip(records, languages, strict=True) if r.answer_id not in replaced]
        ids = insert_rows(
            model=Answer,
            columns=["campaign", "question", "external_id", "repetition", "text", "language"],
            rows=[
                (campaign_id, questions[r.question_id], r.answer_id, r.repetition, r.answer, language)
                for r, language in fresh
            ],
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
        Answer.objects.bulk_update(updated, ["question", "repetition", "text", "language"])
        answer_pk.update({r.answer_id: replaced[r.answer_id] for r in records if r.answer_id in replaced})
        self.result.answers_created += len(fresh)
        self.result.answers_replaced += len(updated)

        source_rows, sentence_rows, counts = [], [], []
        for record, (_, items) in zip(records, analysed, strict=True):
            pk = answer_pk[record.answer_id]
            source_rows.extend(
                (pk, chunks[(source.id, source.text_hash)], rank)
                for rank, source in enumerate(record.sources, start=1)
            )
            retrieved = {source.id for source in record.sources}
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
        insert_rows(
            model=AnswerSource, columns=["answer", "chunk", "rank"], rows=source_rows, returning=False
        )
        sentence_ids = insert_rows(
            model=Sentence,
            columns=[
                "answer",
                "position",
                "text",
                "paragraph",
                "paragraph_index",
                "cited_ids",
                "citations_ok",
            ],
            rows=sentence_rows,
        )

        unit_rows = []
        cursor = 0
        for record, count in zip(records, counts, strict=True):
            pk = answer_pk[record.answer_id]
            unit_rows.append((campaign_id, ANSWER, pk, None, record.theme, record.difficulty))
            unit_rows.extend(
                (campaign_id, SENTENCE, pk, sentence_id, record.theme, record.difficulty)
                for sentence_id in sentence_ids[cursor : cursor + count]
            )
            cursor += count
        unit_ids = insert_rows(
            model=Unit,
            columns=["campaign", "level", "answer", "sentence", "theme", "difficulty"],
            rows=unit_rows,
        )
        self.result.sentences += len(sentence_ids)
        self.result.units += len(unit_ids)

        label_rows: list[tuple] = []
        cursor = 0
        for record, count in zip(records, counts, strict=True):
            self._labels(unit_ids[cursor], record.labels, label_rows)
            if record.sentences is not None:
                sentence_units = unit_ids[cursor + 1 : cursor + 1 + count]
                for sentence, unit_id in zip(record.sentences, sentence_units, strict=True):
                    self._labels(unit_id, sentence.labels, label_rows)
            cursor += 1 + count
        insert_rows(
            model=Label, columns=["unit", "criterion", "stage", "value"], rows=label_rows, returning=False
        )
        self.result.labels += len(label_rows)


def load_parsed(
    *,
    parsed: ParsedFile,
    campaign_name: str,
    update: bool = False,
    progress: ProgressCallback | None = None,
) -> LoadResult:
    """Write ``parsed`` into the campaign called ``campaign_name`` (created on first use).

    Everything is checked against the database first; any problem raises ImportFailed and
    nothing is written (one transaction; call it inside yours to extend it). With ``update``
    an answer id already in the campaign is replaced: its text, sources, sentences and units,
    and with its units their labels and judgments (counted in ``deleted``); an answer with labels
    made in the app or in a drawn sample is refused. Judge labels are not written: they come
    back in ``judge_labels`` for the caller to store. ``progress(done, total)`` is called as
    answers are written.
    """
    name = campaign_name.strip()
    if not name:
        raise ImportFailed(
            [RowError(file=parsed.name, row=None, field="campaign", message="give a campaign name")]
        )
    with transaction.atomic():
        campaign = Campaign.objects.filter(name=name).first()
        pattern = (
            campaign.citation_pattern if campaign else Campaign._meta.get_field("citation_pattern").default
        )
        first_questions = _first_per_key(parsed.records, lambda record: record.question_id)
        jobs = [TextJob(answer=record.question, language_only=True) for record in first_questions.values()]
        jobs += [
            TextJob(
                answer=record.answer,
                sentences=None
                if record.sentences is None
                else tuple((sentence.text, sentence.paragraph) for sentence in record.sentences),
            )
            for record in parsed.records
        ]
        # Text work starts now, beside the checks below, and is consumed batch by batch.
        candidates = language_candidates(expected=campaign.expected_language if campaign else "")
        with Analysis(jobs=jobs, citation_pattern=pattern, candidates=candidates) as analysis:
            analysed = iter(analysis)
            check = _Check(parsed=parsed, campaign=campaign, update=update)
            check.criteria()
            existing_questions = check.questions()
            existing_chunks = check.chunks()
            replaced = check.answers()
            check.errors.raise_if_any()
            try:
                campaign, created = get_or_create_campaign(name=name)
            except ValueError as exc:
                raise ImportFailed(
                    [RowError(file=parsed.name, row=None, field="campaign", message=str(exc))]
                ) from None
            result = LoadResult(campaign=campaign, campaign_created=created)
            result.warnings = parsed.warnings + check.warnings
            writer = _Writer(campaign=campaign, parsed=parsed, result=result)
            previous_chunks = writer.clear(answer_pks=replaced.values()) if replaced else set()
            question_languages = {
                question_id: language
                for question_id, (language, _) in zip(
                    first_questions, islice(analysed, len(first_questions)), strict=True
                )
            }
            questions = writer.questions(existing=existing_questions, languages=question_languages)
            chunks = writer.chunks(existing=existing_chunks)
            total = len(parsed.records)
            done = 0
            for records in _batches(parsed.records, WRITE_BATCH):
                writer.answers(
                    records=records,
                    analysed=list(islice(analysed, len(records))),
                    questions=questions,
                    chunks=chunks,
                    replaced=replaced,
                )
                done += len(records)
                if progress is not None:
                    progress(done, total)
            if previous_chunks:
                writer.drop_unused_chunks(pks=previous_chunks)
    return result
