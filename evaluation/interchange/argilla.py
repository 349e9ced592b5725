"""Argilla 2.x records, read and written.

A record names its unit in ``metadata`` (``answer_id`` and ``sentence``, or ``unit_id``). Each
question's ``submitted`` responses become labels of the criterion the question names (through
the vocabulary), by ``user_id``, at the response's ``inserted_at`` (``updated_at``: when last
edited), or the record's when the response has none; a text answer to the ``comment`` question
is the comment of that person's labels. Draft and discarded responses are passed over. A
question's suggestion becomes a judgment, keeping its ``score`` and ``agent``.

Argilla's SDK builds a response from ``question_name``, ``value``, ``user_id`` and ``status``
alone (``rg.Record.from_dict``, ``rg.Response``: the server stamps its times), so an export
writes each response's own times in the record's ``metadata`` (``attest_labels``: question,
user id, ``inserted_at``, ``updated_at``), where a response without times finds them again. A
dataset that keeps that metadata is created with ``allow_extra_metadata=True``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotation.ingest.errors import ErrorLog
from annotation.models import Campaign, Criterion
from evaluation.interchange import authors
from evaluation.interchange.contents import campaign_units
from evaluation.interchange.records import (
    Author,
    HumanLabel,
    Parsed,
    Prediction,
    RecordReader,
    read_json,
)
from evaluation.interchange.vocabulary import Vocabulary
from evaluation.models import Judge

COMMENT = "comment"
SUBMITTED = "submitted"
# The record's metadata key where an export keeps its responses' times.
TIMES = "attest_labels"
STATUSES = ("submitted", "draft", "discarded")


def _records(data: Any, errors: ErrorLog) -> list[Any] | None:
    if isinstance(data, dict) and isinstance(data.get("records"), list):
        return data["records"]
    if isinstance(data, list):
        return data
    errors.add(
        row=None, field="file", message="must be a JSON list of Argilla records (or {'records': [...]})"
    )
    return None


def _comments(reader: RecordReader, responses: dict[str, Any]) -> dict[str, str]:
    """Each user's submitted answer to the ``comment`` question."""
    found: dict[str, str] = {}
    for response in reader.listing(responses.get(COMMENT), f"responses.{COMMENT}"):
        if isinstance(response, dict) and response.get("status", SUBMITTED) == SUBMITTED:
            found[str(response.get("user_id"))] = str(response.get("value") or "")
    return found


def parse(*, data: Any, name: str, vocabulary: Vocabulary, errors: ErrorLog) -> Parsed:
    """The labels and predictions of Argilla records, problems logged in ``errors`` with the
    record's number (1-based) and the field's path."""
    parsed = Parsed(file=name)
    records = _records(data, errors)
    if records is None:
        return parsed
    parsed.records = len(records)
    for number, record in enumerate(records, start=1):
        reader = RecordReader(errors=errors, number=number)
        record = reader.mapping(record, "record")
        if not record:
            continue
        unit = reader.unit_key(reader.mapping(record.get("metadata"), "metadata"), "metadata")
        record_inserted = reader.time(record.get("inserted_at"), "inserted_at", required=False)
        record_updated = reader.time(record.get("updated_at"), "updated_at", required=False)
        kept_times = _kept_times(record.get("metadata"))
        responses = reader.mapping(record.get("responses"), "responses", required=False)
        comments = _comments(reader, responses)
        for question, answers in responses.items():
            if question == COMMENT:
                continue
            criterion = vocabulary.criterion(question)
            for index, response in enumerate(reader.listing(answers, f"responses.{question}")):
                path = f"responses.{question}[{index}]"
                response = reader.mapping(response, path)
                if not response:
                    continue
                status = response.get("status", SUBMITTED)
                if status not in STATUSES:
                    reader.error(f"{path}.status", f"must be one of {', '.join(STATUSES)}, not {status!r}")
                    continue
                if status != SUBMITTED:
                    parsed.skipped += 1
                    continue
                user_id = response.get("user_id")
                if not isinstance(user_id, str) or not user_id.strip():
                    reader.error(f"{path}.user_id", "must name the user (their Argilla id)")
                    continue
                value = vocabulary.value(response.get("value"))
                if value is None:
                    reader.error(
                        f"{path}.value",
                        f"{response.get('value')!r} is not a known label value ({vocabulary.known()}); "
                        "add it to the mapping",
                    )
                    continue
                times = (
                    response
                    if response.get("inserted_at")
                    else kept_times.get((question, user_id.strip()), {})
                )
                where = path if times is response else f"metadata.{TIMES}"
                created = reader.time(times.get("inserted_at"), f"{where}.inserted_at", required=False)
                edited = reader.time(times.get("updated_at"), f"{where}.updated_at", required=False)
                if created is None:
                    created, edited = record_inserted or record_updated, edited or record_updated
                if created is None:
                    reader.error(f"{path}.inserted_at", "is missing, and so is the record's inserted_at")
                    continue
                if edited == created:  # Argilla stamps a response never edited with its insertion time
                    edited = None
                if unit is None:
                    continue
                parsed.labels.append(
                    HumanLabel(
                        record=number,
                        field=path,
                        unit=unit,
                        criterion=criterion,
                        author=Author(tool=authors.ARGILLA, key=user_id.strip()),
                        value=value,
                        created_at=created,
                        edited_at=edited,
                        comment=comments.get(user_id, ""),
                    )
                )
        suggestions = reader.mapping(record.get("suggestions"), "suggestions", required=False)
        for question, suggestion in suggestions.items():
            path = f"suggestions.{question}"
            suggestion = reader.mapping(suggestion, path)
            if not suggestion:
                continue
            value = vocabulary.value(suggestion.get("value"))
            if value is None:
                reader.error(
                    f"{path}.value",
                    f"{suggestion.get('value')!r} is not a known label value ({vocabulary.known()}); "
                    "add it to the mapping",
                )
                continue
            if unit is None:
                continue
            kept = {key: suggestion[key] for key in ("score", "agent") if suggestion.get(key) is not None}
            parsed.predictions.append(
                Prediction(
                    record=number,
                    field=path,
                    unit=unit,
                    criterion=vocabulary.criterion(question),
                    value=value,
                    kept=kept,
                )
            )
    return parsed


def _kept_times(metadata: object) -> dict[tuple[str, str], dict[str, Any]]:
    """The times an export of ours kept in ``metadata``, by (question, user id)."""
    kept = metadata.get(TIMES) if isinstance(metadata, dict) else None
    if not isinstance(kept, list):
        return {}
    return {
        (str(entry.get("question")), str(entry.get("user_id"))): entry
        for entry in kept
        if isinstance(entry, dict)
    }


def read(*, path: str | Path, name: str, vocabulary: Vocabulary, errors: ErrorLog) -> Parsed:
    """``parse`` of the file at ``path``."""
    return parse(data=read_json(path=path, name=name), name=name, vocabulary=vocabulary, errors=errors)


def _time(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def export_records(
    *, campaign: Campaign, criteria: list[Criterion], vocabulary: Vocabulary, judge: Judge | None
) -> Iterator[dict[str, Any]]:
    """The campaign's units at the criteria's levels as Argilla records: ``fields`` (the texts),
    ``metadata`` (ids, theme), every label in force as a submitted response, and ``judge``'s
    labels as suggestions (Argilla keeps one suggestion per question)."""
    judges = [judge] if judge is not None else []
    for unit in campaign_units(campaign=campaign, criteria=criteria, judges=judges):
        responses: dict[str, list[dict[str, Any]]] = {}
        comments: dict[str, dict[str, Any]] = {}
        times: list[dict[str, Any]] = []
        for label in unit.labels:
            user_id = authors.argilla_id(label.username)
            question = vocabulary.question(label.criterion)
            responses.setdefault(question, []).append(
                {"value": vocabulary.name(label.value), "user_id": user_id, "status": SUBMITTED}
            )
            times.append(
                {
                    "question": question,
                    "user_id": user_id,
                    "inserted_at": _time(label.created_at),
                    # None for a label never edited: Argilla's own ``updated_at`` is its insertion
                    # time then, which would read back as an edit.
                    "updated_at": _time(label.edited_at) if label.edited_at else None,
                }
            )
            if label.comment:
                comments[user_id] = {"value": label.comment, "user_id": user_id, "status": SUBMITTED}
        if comments:
            responses[COMMENT] = list(comments.values())
        suggestions = {
            vocabulary.question(j.criterion): {
                "value": vocabulary.name(j.value),
                "score": j.kept.get("score"),
                "agent": j.kept.get("agent", j.judge),
            }
            for j in unit.judgments
        }
        created = [label.created_at for label in unit.labels]
        edits = [label.edited_at or label.created_at for label in unit.labels]
        yield {
            "id": f"unit-{unit.unit_id}",
            "fields": {"question": unit.question, "text": unit.text},
            "metadata": {
                "unit_id": unit.unit_id,
                "answer_id": unit.answer_id,
                "sentence": unit.sentence,
                "source": unit.source,
                "level": unit.level,
                "question_id": unit.question_id,
                "theme": unit.theme,
                "difficulty": unit.difficulty,
                TIMES: times,
            },
            "responses": responses,
            "suggestions": suggestions,
            "status": "completed" if unit.labels else "pending",
            "inserted_at": _time(min(created)) if created else None,
            "updated_at": _time(max(edits)) if edits else None,
        }
