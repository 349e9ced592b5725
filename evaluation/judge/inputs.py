"""What the judge is given: a batch's units and cited sources, loaded together, and the prompt
built from them.

One batch is one answer: its sentences (sentence-level criteria), its citations (citation-level
criteria: a sentence and one chunk it cites) or the answer itself (answer-level criteria), with
the question and, for sentences and citations, the sources they cite in full.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from annotation.corpus.conventions import DEFAULT_CITATION_PATTERN
from annotation.models import AnswerSource, Criterion, CriterionVersion, Level, Unit
from evaluation.judge import confidence, prompts
from evaluation.judge.bindings import prompt_categories
from evaluation.models import Judge, JudgeBatch


@dataclass
class BatchInput:
    question: str
    answer: str
    items: list[dict]  # {"unit_id", "index", "text", "paragraph", "cited_ids"}
    sources: list[dict]  # cited sources in full: {"id", "title", "page", "text"}
    retrieved_ids: set[str]
    # How the answer cites its sources (its campaign's pattern): the lexical judge drops the markers.
    citation_pattern: str = DEFAULT_CITATION_PATTERN
    # Replies kept from earlier attempts at this batch (JudgeBatch.llm_calls), read with the claim.
    llm_calls: list[dict] = field(default_factory=list)


def load_batches(*, batch_ids: list[int], criterion: Criterion) -> dict[int, BatchInput]:
    """What the prompts of these batches need, in three queries whatever their number."""
    batches = list(
        JudgeBatch.objects.filter(id__in=batch_ids).values_list(
            "id",
            "unit_ids",
            "answer_id",
            "answer__text",
            "answer__question__text",
            "llm_calls",
            "answer__campaign__citation_pattern",
        )
    )
    items: dict[int, list[dict]] = {}
    if criterion.level == Level.SENTENCE:
        unit_to_batch = {uid: bid for bid, unit_ids, *_ in batches for uid in unit_ids}
        for unit_id, position, text, paragraph, cited in (
            Unit.objects.filter(id__in=list(unit_to_batch))
            .order_by("answer_id", "sentence__position")
            .values_list(
                "id", "sentence__position", "sentence__text", "sentence__paragraph", "sentence__cited_ids"
            )
        ):
            items.setdefault(unit_to_batch[unit_id], []).append(
                {
                    "unit_id": unit_id,
                    "index": position,
                    "text": text,
                    "paragraph": paragraph,
                    "cited_ids": cited,
                }
            )
    elif criterion.level == Level.CITATION:
        # A sentence with two citations is two items; their indices number the batch's citations
        # in the order of the sentences, then of the units.
        unit_to_batch = {uid: bid for bid, unit_ids, *_ in batches for uid in unit_ids}
        for unit_id, text, paragraph, source_id in (
            Unit.objects.filter(id__in=list(unit_to_batch))
            .order_by("answer_id", "sentence__position", "id")
            .values_list("id", "sentence__text", "sentence__paragraph", "chunk__external_id")
        ):
            batch_items = items.setdefault(unit_to_batch[unit_id], [])
            batch_items.append(
                {
                    "unit_id": unit_id,
                    "index": len(batch_items),
                    "text": text,
                    "paragraph": paragraph,
                    "cited_ids": [source_id],
                }
            )
    else:
        for bid, unit_ids, _, answer_text, *_ in batches:
            items[bid] = [
                {"unit_id": unit_ids[0], "index": 0, "text": answer_text, "paragraph": "", "cited_ids": []}
            ]
    retrieved: dict[int, list[tuple]] = {}
    if criterion.level in (Level.SENTENCE, Level.CITATION):
        # Relevance prompts carry the question and the answer only: no sources to fetch.
        for answer_id, ext_id, title, page, text in (
            AnswerSource.objects.filter(answer_id__in=[row[2] for row in batches])
            .order_by("answer_id", "rank")
            .values_list("answer_id", "chunk__external_id", "chunk__title", "chunk__page", "chunk__text")
        ):
            retrieved.setdefault(answer_id, []).append((ext_id, title, page, text))
    loaded = {}
    for bid, _, answer_id, answer_text, question_text, llm_calls, citation_pattern in batches:
        batch_items = items.get(bid, [])
        cited_ids = {cid for item in batch_items for cid in item["cited_ids"]}
        chunks = retrieved.get(answer_id, [])
        loaded[bid] = BatchInput(
            question=question_text,
            answer=answer_text,
            items=batch_items,
            sources=[
                {"id": ext_id, "title": title, "page": page, "text": text}
                for ext_id, title, page, text in chunks
                if ext_id in cited_ids
            ],
            retrieved_ids={chunk[0] for chunk in chunks},
            citation_pattern=citation_pattern,
            llm_calls=llm_calls or [],
        )
    return loaded


def build_messages(
    *, data: BatchInput, criterion: Criterion, judge: Judge, texts: CriterionVersion | None = None
) -> list[dict]:
    """The chat messages for one batch: all of an answer's sentences, or the whole answer.

    Veracity, relevance and citation support get the built-in prompts of the judge's prompt version; any other
    criterion a generic prompt around its own guidelines. A criterion's ``judge_prompt``, when not
    blank, replaces the framing of either. ``texts``: the version of the criterion's guidelines and
    judge prompt to send (a run sends the one its judge is bound to); the criterion's current
    texts when None. The system message is ``prompts.system_prompt`` of the same arguments (with,
    for a judge whose confidence is verbal, the line that asks for it).
    """
    source = texts if texts is not None else criterion
    guidelines = source.guidelines or None
    instructions = source.judge_prompt.strip() or None
    version = judge.prompt_version or prompts.PROMPT_VERSION
    sentences = [{"index": i["index"], "text": i["text"], "paragraph": i["paragraph"]} for i in data.items]
    if criterion.level == Level.CITATION:
        # A citation's one source is named with it: it is the data of the question asked.
        sentences = [{**s, "cited_ids": i["cited_ids"]} for s, i in zip(sentences, data.items, strict=True)]
    categories = prompt_categories(criterion)
    if prompts.BUILTIN_LEVELS.get(criterion.name) != criterion.level or categories:
        messages = prompts.build_criterion_messages(
            title=criterion.title or criterion.name,
            level=criterion.level,
            question=data.question,
            answer=data.answer,
            sources=data.sources,
            sentences=sentences,
            guidelines=guidelines,
            instructions=instructions,
            language=judge.language,
            version=version,
            categories=categories,
        )
    elif criterion.level == Level.CITATION:
        messages = prompts.build_citation_support_messages(
            question=data.question,
            sources=data.sources,
            citations=sentences,
            guidelines=guidelines,
            language=judge.language,
            version=version,
            instructions=instructions,
        )
    elif criterion.level == Level.SENTENCE:
        messages = prompts.build_veracity_messages(
            question=data.question,
            sources=data.sources,
            sentences=sentences,
            guidelines=guidelines,
            language=judge.language,
            version=version,
            instructions=instructions,
        )
    else:
        messages = prompts.build_relevance_messages(
            question=data.question,
            answer=data.answer,
            guidelines=guidelines,
            language=judge.language,
            version=version,
            instructions=instructions,
        )
    if confidence.mode_of(judge.settings) == confidence.VERBAL:
        # The judge's own estimate of being right, asked in the system message.
        asked = prompts.verbal_confidence_line(judge.language)
        messages[0] = {**messages[0], "content": f"{messages[0]['content']}\n{asked}"}
    return messages
