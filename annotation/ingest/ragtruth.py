"""RAGTruth (ParticleMedia/RAGTruth, ``dataset/response.jsonl`` and ``dataset/source_info.jsonl``):
the responses with their sources, and the hallucination spans turned into sentence labels.

The two files are imported as one JSONL file, the sources' records and the responses' in any
order (``cat source_info.jsonl response.jsonl > ragtruth.jsonl``): a record with ``response`` is
a response, one with ``source_info`` and no ``response`` a source. The file is read once more
to find where each source is (its line and byte offset), so only that index is held, never the
sources' texts. What a response becomes:

- the question: ``source_id``; its text the source's ``source_info.question`` for a QA task,
  else the first line of its ``prompt`` that gives the instruction; theme ``task_type`` (QA,
  Summary, Data2txt);
- the answer: ``id`` and ``response``;
- the sources: a QA task's ``passages`` cut at each ``passage N:`` (ids 1, 2, ...), a summary's
  text, or a data-to-text task's data as indented JSON (id 1), titled by the source's
  ``source``;
- the sentences: the response split by the app's splitter, each labelled on the criterion
  ``no_hallucination`` (created on first use): 0 when a labelled span overlaps it, 1 otherwise.
  A span (``labels[].start``, ``end``: character offsets in the response, end excluded)
  overlaps a sentence when they share at least one character: ``start < sentence end`` and
  ``sentence start < end``, the sentence's offsets being where its text is found in the
  response (the spaces between sentences belong to none). Every span counts, whatever its
  ``label_type``, ``implicit_true`` or ``due_to_null``, as RAGTruth's own baseline counts them.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from django.utils.translation import gettext_lazy as _

from annotation.corpus.sentences import split_sentences
from annotation.errors import refusal
from annotation.ingest.errors import ErrorLog
from annotation.ingest.formats import RAGTRUTH, DatasetRecord, Declarations, DeclaredCriterion, Opened
from annotation.ingest.readers import RawRow, read_rows
from annotation.text import clean_value

CRITERION = DeclaredCriterion(
    name="no_hallucination",
    title="No hallucination (RAGTruth)",
    level="sentence",
    guidelines=(
        "1: no hallucinated span (RAGTruth's annotators) overlaps the sentence; 0: at least one does."
    ),
)
DECLARATIONS = Declarations(criteria=(CRITERION,))
_PASSAGE = re.compile(r"(?:^|\n)\s*passage (\d+):", re.IGNORECASE)
# Sources kept decoded at a time: a source's six responses usually follow one another.
_CACHE = 16
INSTRUCTION_LENGTH = 1000


def is_source(data: dict[str, object]) -> bool:
    return "source_info" in data and "response" not in data


def open_file(*, path: Path, name: str, errors: ErrorLog, max_bytes: int) -> Opened:
    rows = read_rows(path=path, name=name, errors=errors, max_bytes=max_bytes)
    return Opened(format=RAGTRUTH, declarations=DECLARATIONS, rows=_responses(path, rows, errors=errors))


def _index(path: Path) -> dict[str, tuple[int, int]]:
    """source_id -> (line, byte offset) of each source record; lines that are not JSON objects
    are left to the reader, which refuses them."""
    index: dict[str, tuple[int, int]] = {}
    offset = 0
    with Path(path).open("rb") as stream:
        for line, data in enumerate(stream, start=1):
            start, offset = offset, offset + len(data)
            if b'"source_info"' not in data:
                continue
            try:
                record = json.loads(data.decode("utf-8-sig" if line == 1 else "utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                continue
            if (
                isinstance(record, dict)
                and is_source(record)
                and isinstance(record.get("source_id"), str | int)
            ):
                index.setdefault(str(record["source_id"]), (line, start))
    return index


class _Sources:
    """Sources read back by their offset, the last few kept."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.index = _index(path)
        self.kept: OrderedDict[str, tuple[int, dict]] = OrderedDict()

    def get(self, source_id: str) -> tuple[int, dict] | None:
        if source_id in self.kept:
            self.kept.move_to_end(source_id)
            return self.kept[source_id]
        where = self.index.get(source_id)
        if where is None:
            return None
        line, offset = where
        with self.path.open("rb") as stream:
            stream.seek(offset)
            data = stream.readline().decode("utf-8-sig" if line == 1 else "utf-8")
        found = (line, clean_value(json.loads(data)))
        self.kept[source_id] = found  # type: ignore[assignment]
        if len(self.kept) > _CACHE:
            self.kept.popitem(last=False)
        return found  # type: ignore[return-value]


def _responses(path: Path, rows: Iterator[RawRow], *, errors: ErrorLog) -> Iterator[RawRow]:
    sources: _Sources | None = None
    for raw in rows:
        if is_source(raw.data):
            continue
        if sources is None:
            sources = _Sources(path)
        made = response_of(raw, sources=sources, errors=errors)
        if made is not None:
            yield made


def response_of(raw: RawRow, *, sources: _Sources, errors: ErrorLog) -> RawRow | None:
    record = DatasetRecord(errors=errors, row=raw.row)
    data = raw.data
    response_id = record.text(data.get("id"), "id", numbers=True)
    source_id = record.text(data.get("source_id"), "source_id", numbers=True)
    response = record.text(data.get("response"), "response")
    found = sources.get(source_id) if source_id is not None else None
    if source_id is not None and found is None:
        record.error(
            "source_id",
            refusal(
                _("no source record has source_id %(id)s: put source_info.jsonl's records in the file too"),
                id=repr(source_id),
            ),
        )
    spans = _spans(record, data.get("labels"), length=len(response or ""))
    if not record.ok or found is None or response is None:
        return None
    line, source = found
    origin = DatasetRecord(errors=errors, row=line)
    task = origin.text(source.get("task_type"), "task_type")
    info = source.get("source_info")
    question = _question(origin, task=task, info=info, prompt=source.get("prompt"))
    chunks = _chunks(origin, info=info, title=source.get("source"))
    if not origin.ok:
        record.ok = False
        return None
    sentences = []
    cursor = 0
    for sentence in split_sentences(response):
        start = response.find(sentence.text, cursor)
        if start < 0:  # never for the app's splitter, which keeps each sentence's characters
            start = cursor
        end = start + len(sentence.text)
        cursor = end
        hallucinated = any(first < end and start < last for first, last in spans)
        sentences.append(
            {"text": sentence.text, "labels": {CRITERION.name: {"human": 0 if hallucinated else 1}}}
        )
    ours: dict[str, object] = {
        "question_id": source_id,
        "question": question,
        "theme": task,
        "answer_id": response_id,
        "answer": response,
        "sources": chunks,
    }
    if sentences:
        ours["sentences"] = sentences
    return RawRow(
        row=raw.row,
        data=ours,
        names=(
            ("question_id", "source_id"),
            ("question", f"source_info (line {line})"),
            ("theme", f"task_type (line {line})"),
            ("answer_id", "id"),
            ("answer", "response"),
            ("sources", f"source_info (line {line})"),
            ("sentences", "response"),
        ),
    )


def _spans(record: DatasetRecord, value: object, *, length: int) -> list[tuple[int, int]]:
    spans = []
    for position, label in enumerate(record.listing(value, "labels", required=False), start=1):
        where = f"labels[{position}]"
        label = record.mapping(label, where)
        if label is None:
            continue
        start = record.whole(label.get("start"), f"{where}.start", minimum=0)
        end = record.whole(label.get("end"), f"{where}.end", minimum=0)
        if start is None or end is None:
            continue
        if not start < end <= length:
            record.error(
                where,
                refusal(
                    _("the span %(start)s-%(end)s is not inside the response (%(length)s characters)"),
                    start=start,
                    end=end,
                    length=length,
                ),
            )
            continue
        spans.append((start, end))
    return spans


def _question(record: DatasetRecord, *, task: str | None, info: object, prompt: object) -> str | None:
    if isinstance(info, dict) and task == "QA":
        return record.text(info.get("question"), "source_info.question")
    text = record.text(prompt, "prompt")
    if text is None:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip() and line.strip() != "Instruction:"]
    if not lines:
        record.error("prompt", _("must not be empty"))
        return None
    return lines[0][:INSTRUCTION_LENGTH]


def _chunks(record: DatasetRecord, *, info: object, title: object) -> list[dict[str, object]]:
    title = title if isinstance(title, str) else None
    if isinstance(info, dict) and isinstance(info.get("passages"), str):
        passages = info["passages"]
        marks = list(_PASSAGE.finditer(passages))
        if not marks:
            return [{"id": "1", "title": title, "text": passages}]
        return [
            {
                "id": mark.group(1),
                "title": f"{title or ''} passage {mark.group(1)}".strip(),
                "text": passages[
                    mark.end() : marks[n + 1].start() if n + 1 < len(marks) else len(passages)
                ].strip(),
            }
            for n, mark in enumerate(marks)
        ]
    if isinstance(info, str):
        return [{"id": "1", "title": title, "text": info}]
    if isinstance(info, dict):
        return [{"id": "1", "title": title, "text": json.dumps(info, ensure_ascii=False, indent=2)}]
    record.error("source_info", _("must be a text or a JSON object"))
    return []
