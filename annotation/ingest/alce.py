"""ALCE's outputs (princeton-nlp/ALCE): the result JSON that ``run.py`` writes, and the files of
its human evaluation, each item becoming answers of ours.

Two shapes, one JSON object each (read whole: ALCE's files are a few megabytes):

- a result: ``{"args": {"dataset_name": ...}, "data": [item, ...]}``;
- a human evaluation (``human_eval/*_completed.json``): ``{dataset: {model: {id: item,
  "overall_results": ...}}}``.

An item holds ``question``, ``output`` (a text, or a list of them: several samples), ``docs``
(``[{"title", "text"}]``: ``[1]`` cites the first) and the question's id (``id`` or
``sample_id``; else one made from the question's text). What it becomes:

- the question, theme the dataset's name (``args.dataset_name``, or the human evaluation's
  dataset; ``ALCE`` when neither says it);
- each output an answer: ``{id}-{n}`` for the n-th output of a result, ``{id}@{model}`` in a
  human evaluation; an empty output (ALCE keeps them) is passed over, counted in a warning;
- the docs its sources, of ids 1, 2, ... (no docs: no sources);
- the human scores where the item has them, as criteria created on first use: ``utility_score``
  (1 to 5) on the answer as ``utility``, with five categories; ``sentences`` (ALCE's own split,
  kept) with ``sentence_recall_score`` and ``sentence_precision_score`` as ``sentence_recall``
  and ``sentence_precision``, and ``automatic_recall_scores`` / ``automatic_precision_scores``
  as the judge labels of the same sentences. Citation-level scores
  (``citation_precision_score``) are passed over: an import file has no place for them;
- the campaign's citation pattern ``\\[(\\d+)\\]``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.utils.translation import gettext_lazy as _

from annotation.ingest.errors import ErrorLog, ImportFailed, RowError
from annotation.ingest.formats import (
    ALCE,
    DatasetRecord,
    Declarations,
    DeclaredCriterion,
    Opened,
    read_document,
)
from annotation.ingest.readers import RawRow

CITATION_PATTERN = r"\[(\d+)\]"
THEME = "ALCE"
UTILITY = DeclaredCriterion(
    name="utility",
    title="Utility (ALCE)",
    level="answer",
    categories=tuple((n, str(n), f"utility-{n}", str(n)) for n in range(1, 6)),
    guidelines="How useful the answer is, from 1 (not at all) to 5 (fully).",
)
RECALL = DeclaredCriterion(
    name="sentence_recall",
    title="Sentence recall (ALCE)",
    level="sentence",
    guidelines="1: the documents the sentence cites fully support it; 0: they do not.",
)
PRECISION = DeclaredCriterion(
    name="sentence_precision",
    title="Sentence precision (ALCE)",
    level="sentence",
    guidelines="1: every document the sentence cites is needed to support it; 0: not.",
)
# The sentence scores: (ALCE's human key, its automatic list, our criterion).
SENTENCE_SCORES = (
    ("sentence_recall_score", "automatic_recall_scores", RECALL),
    ("sentence_precision_score", "automatic_precision_scores", PRECISION),
)


@dataclass(frozen=True)
class _Item:
    row: int
    path: str
    item: object
    theme: str
    model: str | None


def _items(document: object, *, name: str) -> list[_Item]:
    """The items of either shape, in file order, numbered from 1."""
    if not isinstance(document, dict):
        raise ImportFailed(
            [RowError(file=name, row=None, field="json", message=_("an ALCE file holds one JSON object"))]
        )
    items: list[_Item] = []
    if "data" in document:
        args = document.get("args")
        theme = args.get("dataset_name") if isinstance(args, dict) else None
        data = document["data"]
        if not isinstance(data, list):
            raise ImportFailed(
                [RowError(file=name, row=None, field="data", message=_("must be a JSON list"))]
            )
        theme = theme if isinstance(theme, str) and theme.strip() else THEME
        for position, item in enumerate(data, start=1):
            items.append(_Item(row=position, path=f"data[{position}]", item=item, theme=theme, model=None))
        return items
    for dataset, models in document.items():
        if not isinstance(models, dict):
            raise ImportFailed(
                [
                    RowError(
                        file=name,
                        row=None,
                        field=str(dataset),
                        message=_('must be {"data": [...]} (a result) or {dataset: {model: {id: item}}}'),
                    )
                ]
            )
        for model, by_id in models.items():
            if not isinstance(by_id, dict):
                raise ImportFailed(
                    [
                        RowError(
                            file=name,
                            row=None,
                            field=f"{dataset}/{model}",
                            message=_("must be a JSON object"),
                        )
                    ]
                )
            for key, item in by_id.items():
                if key == "overall_results":
                    continue
                items.append(
                    _Item(
                        row=len(items) + 1,
                        path=f"{dataset}/{model}/{key}",
                        item=item,
                        theme=str(dataset),
                        model=str(model),
                    )
                )
    return items


def _declarations(items: list[_Item]) -> Declarations:
    has = {key for entry in items if isinstance(entry.item, dict) for key in entry.item}
    sentence_keys = {
        key
        for entry in items
        if isinstance(entry.item, dict) and isinstance(entry.item.get("sentences"), list)
        for sentence in entry.item["sentences"]
        if isinstance(sentence, dict)
        for key in sentence
    }
    criteria = [UTILITY] if "utility_score" in has else []
    criteria += [criterion for key, _auto, criterion in SENTENCE_SCORES if key in sentence_keys]
    return Declarations(criteria=tuple(criteria), citation_pattern=CITATION_PATTERN)


def open_file(*, path: Path, name: str, errors: ErrorLog, max_bytes: int) -> Opened:
    items = _items(read_document(path=path, name=name, max_bytes=max_bytes), name=name)
    declarations = _declarations(items)
    empty = [0]
    opened = Opened(format=ALCE, declarations=declarations, rows=iter(()))
    opened.rows = _rows(items, errors=errors, empty=empty, opened=opened, name=name)
    return opened


def _rows(
    items: list[_Item], *, errors: ErrorLog, empty: list[int], opened: Opened, name: str
) -> Iterator[RawRow]:
    for entry in items:
        yield from answers_of(entry, errors=errors, empty=empty)
    if empty[0]:
        opened.warnings.append(
            f"{name}: {empty[0]} empty outputs passed over (ALCE keeps a model's empty answers)"
        )


def _question_id(record: DatasetRecord, item: dict, question: str | None) -> str | None:
    for key in ("id", "sample_id"):
        if item.get(key) is not None:
            return record.text(item[key], key, numbers=True)
    if question is None:
        return None
    return "q-" + hashlib.blake2b(question.strip().encode("utf-8"), digest_size=6).hexdigest()


def answers_of(entry: _Item, *, errors: ErrorLog, empty: list[int]) -> list[RawRow]:
    record = DatasetRecord(errors=errors, row=entry.row, prefix=entry.path)
    item = record.mapping(entry.item, "")
    if item is None:
        return []
    question = record.text(item.get("question"), "question")
    question_id = _question_id(record, item, question)
    output = item.get("output")
    outputs = output if isinstance(output, list) else [output]
    texts = [
        record.text(text, f"output[{n}]" if isinstance(output, list) else "output", required=False)
        for n, text in enumerate(outputs, 1)
    ]
    if output is None:
        record.error("output", _("missing"))
    sources = []
    for position, doc in enumerate(record.listing(item.get("docs"), "docs", required=False), start=1):
        doc = record.mapping(doc, f"docs[{position}]")
        if doc is None:
            continue
        text = record.text(doc.get("text"), f"docs[{position}].text")
        title = record.text(doc.get("title"), f"docs[{position}].title", required=False)
        sources.append({"id": str(position), "title": title, "text": text})
    labels: dict[str, dict[str, object]] = {}
    if item.get("utility_score") is not None:
        score = record.whole(item["utility_score"], "utility_score", minimum=1)
        if score is not None and score > 5:
            record.error("utility_score", _("must be a whole number from 1 to 5"))
        labels[UTILITY.name] = {"human": None if score is None else str(score)}
    sentences = _sentences(record, item) if not isinstance(output, list) else None
    if not record.ok:
        return []
    made = []
    for number, text in enumerate(texts, start=1):
        if text is None or not text.strip():
            empty[0] += 1
            continue
        if entry.model is None:
            answer_id = f"{question_id}-{number}"
        else:
            answer_id = f"{question_id}@{entry.model}" + (f"-{number}" if len(texts) > 1 else "")
        ours: dict[str, object] = {
            "question_id": question_id,
            "question": question,
            "theme": entry.theme,
            "answer_id": answer_id,
            "answer": text,
            "sources": sources,
            "labels": labels,
        }
        if sentences:
            ours["sentences"] = sentences
        output_path = f"{entry.path}.output" + (f"[{number}]" if len(texts) > 1 else "")
        made.append(
            RawRow(
                row=entry.row,
                data=ours,
                names=(
                    ("question_id", f"{entry.path}.id"),
                    ("question", f"{entry.path}.question"),
                    ("theme", f"{entry.path}"),
                    ("answer", output_path),
                    ("answer_id", f"{entry.path}.id"),
                    ("sources", f"{entry.path}.docs"),
                    ("sentences", f"{entry.path}.sentences"),
                    ("labels", entry.path),
                ),
            )
        )
    return made


def _sentences(record: DatasetRecord, item: dict) -> list[dict[str, object]] | None:
    given = record.listing(item.get("sentences"), "sentences", required=False)
    if not given:
        return None
    automatic = {
        auto: record.listing(item.get(auto), auto, required=False) for _key, auto, _c in SENTENCE_SCORES
    }
    sentences: list[dict[str, object]] = []
    for position, sentence in enumerate(given, start=1):
        where = f"sentences[{position}]"
        sentence = record.mapping(sentence, where)
        if sentence is None:
            continue
        labels: dict[str, dict[str, object]] = {}
        for key, auto, criterion in SENTENCE_SCORES:
            if key not in sentence:
                continue
            human = record.binary(sentence.get(key), f"{where}.{key}")
            scores = automatic[auto]
            llm = (
                record.binary(scores[position - 1], f"{auto}[{position}]")
                if position <= len(scores)
                else None
            )
            if human is not None or llm is not None:
                labels[criterion.name] = {"human": human, "llm": llm}
        sentences.append({"text": record.text(sentence.get("text"), f"{where}.text"), "labels": labels})
    return sentences
