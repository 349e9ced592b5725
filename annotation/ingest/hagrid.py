"""HAGRID (project-miracl/hagrid, ``hagrid-v1.0-en/{train,dev}.jsonl`` as its loading script
reads them): one record per query, its answers nested, each becoming an answer of ours.

A record is ``{"query_id", "query", "quotes": [{"idx", "docid", "text"}], "answers": [{"answer",
"answer_type", "informative", "attributable", "sentences": [{"text", "index", "answer_type",
"informative", "attributable"}]}]}``. What it becomes:

- the question: ``query_id`` and ``query``, theme ``HAGRID``;
- each answer: ``answer``, its ``sentences`` kept as HAGRID split them (in their list's order),
  the answer's id ``{query_id}-{n}`` (n its rank among the query's answers);
- the sources: the query's ``quotes``, each of id ``idx`` (``[1]`` cites the quote whose
  ``idx`` is 1; a query whose quotes count from 0 has each id one more than its ``idx``, as
  HAGRID's baselines number them), title ``docid``;
- the labels (1, 0, or null for none), as human labels of four criteria created on first use
  with HAGRID's names: ``attributable`` and ``informative`` on the sentences,
  ``answer_attributable`` and ``answer_informative`` on the answer;
- the campaign's citation pattern ``\\[(\\d+)\\]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from annotation.ingest.errors import ErrorLog
from annotation.ingest.formats import HAGRID, DatasetRecord, Declarations, DeclaredCriterion, Opened
from annotation.ingest.readers import RawRow, read_rows

THEME = "HAGRID"
CITATION_PATTERN = r"\[(\d+)\]"
SENTENCE_CRITERIA = {"attributable": "attributable", "informative": "informative"}
ANSWER_CRITERIA = {"attributable": "answer_attributable", "informative": "answer_informative"}
DECLARATIONS = Declarations(
    criteria=(
        DeclaredCriterion(
            name="attributable",
            title="Attributable (HAGRID)",
            level="sentence",
            guidelines="1: the sentence is attributable to the quotes it cites; 0: it is not.",
        ),
        DeclaredCriterion(
            name="informative",
            title="Informative (HAGRID)",
            level="sentence",
            guidelines="1: the sentence answers the question directly; 0: it does not.",
        ),
        DeclaredCriterion(
            name="answer_attributable",
            title="Answer attributable (HAGRID)",
            level="answer",
            guidelines="1: the whole answer is attributable to the quotes; 0: it is not.",
        ),
        DeclaredCriterion(
            name="answer_informative",
            title="Answer informative (HAGRID)",
            level="answer",
            guidelines="1: the answer answers the question directly; 0: it does not.",
        ),
    ),
    citation_pattern=CITATION_PATTERN,
)


def open_file(*, path: Path, name: str, errors: ErrorLog, max_bytes: int) -> Opened:
    rows = read_rows(path=path, name=name, errors=errors, max_bytes=max_bytes)
    return Opened(format=HAGRID, declarations=DECLARATIONS, rows=_answers(rows, errors=errors))


def _answers(rows: Iterator[RawRow], *, errors: ErrorLog) -> Iterator[RawRow]:
    for raw in rows:
        yield from answers_of(raw, errors=errors)


def answers_of(raw: RawRow, *, errors: ErrorLog) -> list[RawRow]:
    """Our records for one HAGRID record (one per answer), or none with its problems logged."""
    record = DatasetRecord(errors=errors, row=raw.row)
    data = raw.data
    query_id = record.text(data.get("query_id"), "query_id", numbers=True)
    query = record.text(data.get("query"), "query")
    sources = _quotes(record, data.get("quotes"))
    made: list[RawRow] = []
    for number, answer in enumerate(record.listing(data.get("answers"), "answers"), start=1):
        path = f"answers[{number}]"
        answer = record.mapping(answer, path)
        if answer is None:
            continue
        text = record.text(answer.get("answer"), f"{path}.answer")
        labels = {
            ANSWER_CRITERIA[key]: {"human": record.binary(answer.get(key), f"{path}.{key}")}
            for key in ANSWER_CRITERIA
        }
        sentences = []
        for s, sentence in enumerate(
            record.listing(answer.get("sentences"), f"{path}.sentences", required=False), 1
        ):
            where = f"{path}.sentences[{s}]"
            sentence = record.mapping(sentence, where)
            if sentence is None:
                continue
            sentences.append(
                {
                    "text": record.text(sentence.get("text"), f"{where}.text"),
                    "labels": {
                        SENTENCE_CRITERIA[key]: {"human": record.binary(sentence.get(key), f"{where}.{key}")}
                        for key in SENTENCE_CRITERIA
                    },
                }
            )
        if not record.ok:
            continue
        ours: dict[str, object] = {
            "question_id": query_id,
            "question": query,
            "theme": THEME,
            "answer_id": f"{query_id}-{number}",
            "answer": text,
            "sources": sources,
            "labels": labels,
        }
        if sentences:
            ours["sentences"] = sentences
        made.append(
            RawRow(
                row=raw.row,
                data=ours,
                names=(
                    ("question_id", "query_id"),
                    ("question", "query"),
                    ("answer", f"{path}.answer"),
                    ("sources", "quotes"),
                    ("sentences", f"{path}.sentences"),
                    ("labels", path),
                ),
            )
        )
    return made if record.ok else []


def _quotes(record: DatasetRecord, value: object) -> list[dict[str, object]]:
    quotes = record.listing(value, "quotes")
    numbers = []
    for position, quote in enumerate(quotes, start=1):
        quote = record.mapping(quote, f"quotes[{position}]")
        if quote is None:
            continue
        idx = record.whole(quote.get("idx"), f"quotes[{position}].idx", minimum=0)
        if idx is not None:
            numbers.append(idx)
    if not record.ok:
        return []
    # [1] cites the first quote: quotes counted from 0 are shifted by one.
    shift = 1 if numbers and min(numbers) == 0 else 0
    sources: list[dict[str, object]] = []
    for position, quote in enumerate(quotes, start=1):
        text = record.text(quote.get("text"), f"quotes[{position}].text")
        docid = quote.get("docid")
        if docid is not None and not isinstance(docid, str | int):
            record.error(
                f"quotes[{position}].docid",
                refusal(_("must be text, not %(type)s"), type=type(docid).__name__),
            )
        sources.append(
            {
                "id": str(int(quote["idx"]) + shift),
                "title": None if docid is None else str(docid),
                "text": text,
            }
        )
    return sources
