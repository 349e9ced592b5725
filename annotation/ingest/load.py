"""Loading a checked file into a campaign: database checks, then pass 2 in one transaction.

Pass 1 (annotation.ingest.validate) checked every row and kept compact bookkeeping. Here the
checks that need the database run from it; then, only when nothing is wrong, the file is read
again from the start and written batch by batch, with the text analysis of each answer
(languages, sentences) done beside the writes. Everything happens in one transaction: a row that
differs from pass 1 (the file changed) raises ImportFailed and nothing is written.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator
from contextlib import closing

from django.conf import settings
from django.db import connection, transaction
from django.utils.translation import gettext_lazy as _

from annotation.corpus.campaigns import content_changed, get_or_create_campaign
from annotation.ingest.analysis import Analysis, SentenceRow, TextJob
from annotation.ingest.bulk import foreign_keys_checked_by_statement
from annotation.ingest.checks import check_against_campaign
from annotation.ingest.errors import ImportFailed, RowError
from annotation.ingest.records import AnswerRecord
from annotation.ingest.validate import CheckedFile
from annotation.ingest.write import JudgeLabel, LoadResult, NewQuestion, PreparedBatch, Writer
from annotation.models import Campaign
from annotation.workflow import open_slots

__all__ = ["WRITE_BATCH", "JudgeLabel", "JudgeLabelSink", "LoadResult", "ProgressCallback", "load_file"]

ProgressCallback = Callable[[int, int], None]
# Stores one batch's judge labels in the campaign (the judge's side does) and returns how many.
JudgeLabelSink = Callable[[Campaign, list[JudgeLabel]], int]

# Answers written per round of bulk inserts: big enough to amortise each INSERT, small enough
# to keep memory flat and progress moving.
WRITE_BATCH = 500
# Batches read and analysed waiting for their turn to be written, beside the one being written
# and the one being read: one keeps the writes busy and memory flat.
READY_BATCHES = 1
# Put in the queue after the last batch.
_DONE = object()


def language_candidates(*, expected: str = "") -> tuple[str, ...]:
    """The languages texts are told apart among: ``LANGUAGE_CANDIDATES`` and the campaign's
    expected language."""
    return tuple(sorted({*settings.LANGUAGE_CANDIDATES, *([expected] if expected else [])}))


def load_file(
    *,
    checked: CheckedFile,
    campaign_name: str,
    update: bool = False,
    progress: ProgressCallback | None = None,
    judge_labels: JudgeLabelSink | None = None,
) -> LoadResult:
    """Write the file ``checked`` (pass 1 done) into the campaign ``campaign_name`` (created on
    first use).

    Everything is checked against the database first; any problem raises ImportFailed and
    nothing is written (one transaction; call it inside yours to extend it). Then the file is
    read again and written in batches of WRITE_BATCH answers; a row that is not what pass 1
    checked raises ImportFailed naming it, and the transaction rolls back. With ``update`` an
    answer id already in the campaign is replaced: its text, sources, sentences and units, and
    with its units their labels and judgments (counted in ``deleted``); an answer with labels
    made in the app or in a drawn sample is refused. Judge labels go, batch by batch, to
    ``judge_labels(campaign, labels)`` (counted in ``judgments``), else into ``judge_labels``
    of the result. ``progress(done, total)`` is called as answers are written.
    """
    name = campaign_name.strip()
    if not name:
        raise ImportFailed(
            [RowError(file=checked.name, row=None, field="campaign", message=_("give a campaign name"))]
        )
    with transaction.atomic():
        campaign = Campaign.objects.filter(name=name).first()
        # A new campaign's texts are analysed as before it existed: no expected language.
        expected = campaign.expected_language if campaign else ""
        existing = check_against_campaign(checked=checked, campaign=campaign, update=update)
        pattern = checked.declarations.citation_pattern
        try:
            campaign, created = get_or_create_campaign(
                name=name, **({"citation_pattern": pattern} if pattern is not None else {})
            )
        except ValueError as exc:
            raise ImportFailed(
                [RowError(file=checked.name, row=None, field="campaign", message=exc.args[0])]
            ) from None
        result = LoadResult(campaign=campaign, campaign_created=created)
        result.criteria_created = apply_declarations(checked=checked, campaign=campaign)
        result.warnings = checked.warnings + existing.warnings
        writer = Writer(campaign=campaign, existing=existing, result=result)
        previous_chunks = writer.clear(answer_pks=existing.replaced.values()) if existing.replaced else set()
        with foreign_keys_checked_by_statement():
            _write_all(
                checked=checked,
                campaign=campaign,
                writer=writer,
                new_questions=len(checked.questions) - len(existing.questions),
                candidates=language_candidates(expected=expected),
                progress=progress,
                judge_labels=judge_labels,
            )
        if previous_chunks:
            writer.drop_unused_chunks(pks=previous_chunks)
        # Imported labels are final and replaced answers take their units along: the stored
        # queues are set again from what the campaign now holds.
        open_slots.rebuild_all(criteria=campaign.criteria.select_related("campaign"))
        # Questions, chunks and answers written in bulk (no save of each): the figures kept from
        # the campaign's former content are not read again.
        content_changed(campaign_id=campaign.pk)
    return result


def apply_declarations(*, checked: CheckedFile, campaign: Campaign) -> list[str]:
    """What the file declares, made true in ``campaign`` (inside the import's transaction, after
    ``check_against_campaign``): its citation pattern (the campaign holds no answer split with
    another one) and its criteria the campaign lacks, created as the criteria page creates them.
    Returns the names of the criteria created; ImportFailed naming the criterion when one
    cannot be (a title another criterion has)."""
    declared = checked.declarations
    if declared.citation_pattern is not None and campaign.citation_pattern != declared.citation_pattern:
        campaign.citation_pattern = declared.citation_pattern
        campaign.save(update_fields=["citation_pattern"])
    if not declared.criteria:
        return []
    # Imported here: the criteria's editing reads the pages' furniture, which the worker
    # processes of the text analysis (that import this package) never need.
    from annotation.criteria.editing import CriterionDraft, CriterionErrors, save_criterion

    have = set(campaign.criteria.values_list("name", flat=True))
    created: list[str] = []
    for criterion in declared.criteria:
        if criterion.name in have:
            continue
        draft = CriterionDraft(
            name=criterion.name,
            title=criterion.title,
            level=criterion.level,
            kind=criterion.kind,
            guidelines=criterion.guidelines,
            categories=criterion.category_list(),
            groups=criterion.group_dict(),
        )
        try:
            save_criterion(campaign=campaign, draft=draft)
        except CriterionErrors as exc:
            raise ImportFailed(
                [
                    RowError(file=checked.name, row=None, field=f"criteria.{criterion.name}", message=str(e))
                    for e in exc.errors
                ]
            ) from None
        created.append(criterion.name)
    return created


def _write_all(
    *,
    checked: CheckedFile,
    campaign: Campaign,
    writer: Writer,
    new_questions: int,
    candidates: tuple[str, ...],
    progress: ProgressCallback | None,
    judge_labels: JudgeLabelSink | None,
) -> None:
    """Pass 2: read the file again, analyse and write it batch by batch.

    A thread reads and checks the rows and hands their text work to ``Analysis`` (worker
    processes on big files), putting each batch it completes in a queue of READY_BATCHES; this
    thread writes them in order. So the next batch is read and analysed while this one is
    written: the reading runs while this thread waits on the database.

    On PostgreSQL the reading thread also builds each batch's rows (``Writer.prepare``, its ids
    drawn from the sequences on a connection of its own, closed when it ends), so that this
    thread only writes, and the database takes one batch while the next is built. On SQLite
    ids are drawn in the transaction, so the rows are built here.

    Whatever the reading raises (a row changed since pass 1) comes through the queue in its
    place: the batches before it are written, then it is raised here, in the transaction.
    """
    result = writer.result
    total = checked.count
    ready: queue.Queue = queue.Queue(maxsize=READY_BATCHES)
    stop = threading.Event()

    def hand(item: object) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    prepare_beside = connection.vendor == "postgresql"

    def read() -> None:
        batches = _analysed_batches(
            checked=checked,
            known=frozenset(writer.questions),
            count=total + new_questions,
            citation_pattern=campaign.citation_pattern,
            candidates=candidates,
        )
        try:
            with closing(batches):
                for questions, records, analysed in batches:
                    item: PreparedBatch | Batch = (questions, records, analysed)
                    if prepare_beside:
                        item = writer.prepare(questions=questions, records=records, analysed=analysed)
                    if not hand(item):
                        return
            hand(_DONE)
        except BaseException as exc:  # raised in the writing thread, in its place among the batches
            hand(exc)
        finally:
            if prepare_beside:
                connection.close()  # this thread's own, which drew the ids

    reader = threading.Thread(target=read, name="import-read", daemon=True)
    reader.start()
    done = 0
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                break
            if isinstance(item, BaseException):
                raise item
            if not isinstance(item, PreparedBatch):
                questions, records, analysed = item
                item = writer.prepare(questions=questions, records=records, analysed=analysed)
            judged = writer.apply(item)
            if judge_labels is None:
                result.judge_labels.extend(judged)
            elif judged:
                result.judgments += judge_labels(campaign, judged)
            done += item.answers
            if progress is not None:
                progress(done, total)
    finally:
        stop.set()
        reader.join()


# One batch for Writer.prepare: the questions it is the first to give, its records, and their
# (language, sentences).
Batch = tuple[list[NewQuestion], list[AnswerRecord], list[tuple[str, list[SentenceRow]]]]


def _analysed_batches(
    *,
    checked: CheckedFile,
    known: frozenset[str],
    count: int,
    citation_pattern: str,
    candidates: tuple[str, ...],
) -> Generator[Batch, None, None]:
    """The file read again (pass 2) in batches of WRITE_BATCH answers with their text work done;
    ``known``: the question ids the campaign holds already (their language is not detected
    again). Touches no database: it runs beside the writes."""
    # What each analysis result belongs to, in the order jobs were handed out: a question's
    # text (its language alone) or an answer. Jobs are taken lazily, so this stays short.
    pending: deque[tuple[bool, AnswerRecord]] = deque()
    asked: set[str] = set()

    def jobs() -> Iterator[TextJob]:
        for record in checked.records():
            if record.question_id not in known and record.question_id not in asked:
                asked.add(record.question_id)
                pending.append((True, record))
                yield TextJob(answer=record.question, language_only=True)
            pending.append((False, record))
            sentences = None
            if record.sentences is not None:
                sentences = tuple((sentence.text, sentence.paragraph) for sentence in record.sentences)
            yield TextJob(answer=record.answer, sentences=sentences)

    questions: list[NewQuestion] = []
    records: list[AnswerRecord] = []
    analysed: list[tuple[str, list[SentenceRow]]] = []
    written = 0
    with Analysis(
        jobs=jobs(), count=count, citation_pattern=citation_pattern, candidates=candidates
    ) as analysis:
        for language, items in analysis:
            is_question, record = pending.popleft()
            if is_question:
                questions.append(
                    (record.question_id, record.question, record.theme, record.difficulty, language)
                )
                continue
            records.append(record)
            analysed.append((language, items))
            # The first batch is a fifth of the others: the writes start as soon as the worker
            # processes give their first results, instead of waiting for a whole batch.
            if len(records) >= (WRITE_BATCH if written else max(1, WRITE_BATCH // 5)):
                yield questions, records, analysed
                written += len(records)
                questions, records, analysed = [], [], []
        if records:
            yield questions, records, analysed
