"""Label Studio's JSON export: tasks with their annotations and predictions, read and written.

A task names its unit in ``data`` (``answer_id`` and ``sentence``, or ``unit_id``). Each
annotation's ``choices`` results become labels of the criterion named by ``from_name`` (through
the vocabulary), by ``completed_by``, at ``created_at`` (``updated_at``: when last edited,
``lead_time``: seconds spent); a ``textarea`` result from ``comment`` is their comment. Cancelled
annotations are passed over. Each prediction's ``choices`` results become judgments, keeping its
``model_version`` and ``score``; a prediction given by its id alone (Label Studio's Export
dialog, ``GET /api/projects/<id>/export``, writes them so) is passed over and counted.

Label Studio's import (label_studio/tasks/serializers.py, ``BaseTaskSerializerBulk``) keeps an
annotation's ``result``, ``lead_time``, ``was_cancelled``, ``ground_truth`` and its ``id`` (as
``import_id``), resolves ``completed_by`` by email (``authors.label_studio_id``), and stamps
``created_at`` and ``updated_at`` with the time of the import; it keeps the task's ``meta``. So
an export also writes each label's own author and times in its task's ``meta``
(``{"attest": {"labels": [...]}}``), by annotation id; reading a file Label Studio exported, an
annotation whose ``import_id`` is one of them takes its author and times from there (its
``updated_at`` when it was edited in Label Studio since).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotation.ingest.errors import ErrorLog
from annotation.models import Campaign, Criterion
from evaluation.interchange import authors
from evaluation.interchange.contents import LabelInForce, UnitContent, campaign_units
from evaluation.interchange.records import (
    Author,
    HumanLabel,
    Parsed,
    Prediction,
    RecordReader,
    iso,
    read_json,
)
from evaluation.interchange.vocabulary import Vocabulary
from evaluation.models import Judge

COMMENT = "comment"
TEXT = "text"
META = "attest"
# Label Studio stamps an imported annotation's two times within the same instant; later than
# this, it was edited in Label Studio.
EDITED_AFTER = dt.timedelta(seconds=1)


def _choice(reader: RecordReader, item: dict[str, Any], path: str, vocabulary: Vocabulary) -> int | None:
    value = reader.mapping(item.get("value"), f"{path}.value")
    choices = value.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        reader.error(f"{path}.value.choices", "must hold exactly one choice")
        return None
    number = vocabulary.value(choices[0])
    if number is None:
        reader.error(
            f"{path}.value.choices",
            f"{choices[0]!r} is not a known label value ({vocabulary.known()}); add it to the mapping",
        )
    return number


def _results(
    reader: RecordReader, results: list[Any], path: str, vocabulary: Vocabulary
) -> Iterator[tuple[str, str, int | None]]:
    """(criterion, path, value) of each choices result; comments are read by ``_comment``."""
    for index, item in enumerate(results):
        item_path = f"{path}[{index}]"
        item = reader.mapping(item, item_path)
        if not item or item.get("type") == "textarea":
            continue
        if item.get("type") != "choices":
            reader.error(f"{item_path}.type", f"only choices results are read, not {item.get('type')!r}")
            continue
        question = item.get("from_name")
        if not isinstance(question, str) or not question:
            reader.error(f"{item_path}.from_name", "must name the question (a criterion)")
            continue
        yield vocabulary.criterion(question), item_path, _choice(reader, item, item_path, vocabulary)


def _comment(results: list[Any]) -> str:
    for item in results:
        if isinstance(item, dict) and item.get("type") == "textarea" and item.get("from_name") == COMMENT:
            texts = (item.get("value") or {}).get(TEXT) or []
            return "\n".join(str(text) for text in texts) if isinstance(texts, list) else str(texts)
    return ""


def _author(reader: RecordReader, value: object, path: str) -> Author | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return Author(tool=authors.LABEL_STUDIO, key=str(value))
    if isinstance(value, dict) and str(value.get("email") or "").lower() == authors.NO_AUTHOR_EMAIL:
        return Author(tool=authors.LABEL_STUDIO, key="", email=authors.NO_AUTHOR_EMAIL, nobody=True)
    if isinstance(value, dict) and isinstance(value.get("id"), int | str) and str(value.get("id")):
        email, username = value.get("email") or "", value.get("username") or ""
        if not isinstance(email, str) or not isinstance(username, str):
            reader.error(path, "email and username must be text")
            return None
        return Author(tool=authors.LABEL_STUDIO, key=str(value["id"]), email=email, username=username)
    reader.error(path, "must be a Label Studio user id or an object with its id (and email)")
    return None


def _origins(reader: RecordReader, task: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The labels' own authors and times an export of ours wrote in the task's ``meta``, by
    annotation id."""
    meta = task.get("meta")
    kept = meta.get(META) if isinstance(meta, dict) else None
    if not isinstance(kept, dict):
        return {}
    found = {}
    for index, entry in enumerate(reader.listing(kept.get("labels"), f"meta.{META}.labels")):
        if isinstance(entry, dict) and entry.get("annotation") is not None:
            found[str(entry["annotation"])] = {"path": f"meta.{META}.labels[{index}]", **entry}
    return found


def _origin(annotation: dict[str, Any], origins: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The entry of ``origins`` for an annotation: by ``import_id`` in a file Label Studio
    exported (it has the key, its ``id`` being Label Studio's own), else by ``id`` (our file)."""
    key = annotation.get("import_id") if "import_id" in annotation else annotation.get("id")
    return origins.get(str(key)) if key is not None else None


def parse(*, data: Any, name: str, vocabulary: Vocabulary, errors: ErrorLog) -> Parsed:
    """The labels and predictions of a Label Studio export (a JSON list of tasks), problems
    logged in ``errors`` with the task's number (1-based) and the field's path."""
    parsed = Parsed(file=name)
    if not isinstance(data, list):
        errors.add(row=None, field="file", message="must be a JSON list of Label Studio tasks")
        return parsed
    parsed.records = len(data)
    for number, task in enumerate(data, start=1):
        reader = RecordReader(errors=errors, number=number)
        task = reader.mapping(task, "task")
        if not task:
            continue
        unit = reader.unit_key(reader.mapping(task.get("data"), "data"), "data")
        origins = _origins(reader, task)
        for a, annotation in enumerate(reader.listing(task.get("annotations"), "annotations")):
            path = f"annotations[{a}]"
            annotation = reader.mapping(annotation, path)
            if not annotation:
                continue
            if annotation.get("was_cancelled"):
                parsed.skipped += 1
                continue
            origin = _origin(annotation, origins)
            if origin is None:
                author = _author(reader, annotation.get("completed_by"), f"{path}.completed_by")
                created = reader.time(annotation.get("created_at"), f"{path}.created_at")
                edited = reader.time(annotation.get("updated_at"), f"{path}.updated_at", required=False)
            else:
                author, created, edited = _from_origin(reader, annotation, origin, path=path)
            seconds = reader.seconds(annotation.get("lead_time"), f"{path}.lead_time")
            results = reader.listing(annotation.get("result"), f"{path}.result")
            comment = _comment(results)
            for criterion, item_path, value in _results(reader, results, f"{path}.result", vocabulary):
                if unit is None or author is None or created is None or value is None:
                    continue
                parsed.labels.append(
                    HumanLabel(
                        record=number,
                        field=item_path,
                        unit=unit,
                        criterion=criterion,
                        author=author,
                        value=value,
                        created_at=created,
                        edited_at=edited,
                        seconds_spent=seconds,
                        comment=comment,
                    )
                )
        for p, prediction in enumerate(reader.listing(task.get("predictions"), "predictions")):
            path = f"predictions[{p}]"
            if isinstance(prediction, int) and not isinstance(prediction, bool):
                parsed.prediction_ids += 1
                continue
            prediction = reader.mapping(prediction, path)
            if not prediction:
                continue
            kept = {
                key: prediction[key] for key in ("model_version", "score") if prediction.get(key) is not None
            }
            results = reader.listing(prediction.get("result"), f"{path}.result")
            for criterion, item_path, value in _results(reader, results, f"{path}.result", vocabulary):
                if unit is None or value is None:
                    continue
                parsed.predictions.append(
                    Prediction(
                        record=number, field=item_path, unit=unit, criterion=criterion, value=value, kept=kept
                    )
                )
    return parsed


def _from_origin(
    reader: RecordReader, annotation: dict[str, Any], origin: dict[str, Any], *, path: str
) -> tuple[Author | None, dt.datetime | None, dt.datetime | None]:
    """An annotation's author and times from what our export kept of it: its author (theirs,
    whatever Label Studio's id for them), its creation, and its last edit: Label Studio's
    ``updated_at`` when that is later than Label Studio's ``created_at`` (edited there), else
    the kept one."""
    where = origin["path"]
    author = _author(reader, origin.get("completed_by"), f"{where}.completed_by")
    created = reader.time(origin.get("created_at"), f"{where}.created_at")
    edited = reader.time(origin.get("updated_at"), f"{where}.updated_at", required=False)
    there = reader.time(annotation.get("created_at"), f"{path}.created_at", required=False)
    changed = reader.time(annotation.get("updated_at"), f"{path}.updated_at", required=False)
    if there is not None and changed is not None and changed - there > EDITED_AFTER:
        edited = changed
    return author, created, edited


def read(*, path: str | Path, name: str, vocabulary: Vocabulary, errors: ErrorLog) -> Parsed:
    """``parse`` of the file at ``path``."""
    return parse(data=read_json(path=path, name=name), name=name, vocabulary=vocabulary, errors=errors)


def _result(question: str, value: int, vocabulary: Vocabulary) -> dict[str, Any]:
    return {
        "from_name": question,
        "to_name": TEXT,
        "type": "choices",
        "value": {"choices": [vocabulary.name(value)]},
    }


def _annotations(
    labels: list[LabelInForce], vocabulary: Vocabulary
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """One annotation per person and moment: labels of several criteria made together (one
    Label Studio annotation imported) are one annotation again. Its ``completed_by`` is an
    object with an email Label Studio resolves (``authors.label_studio_id``). Each comes with
    what its task's ``meta`` keeps of it (``_kept``)."""
    grouped: dict[tuple, list[LabelInForce]] = {}
    for label in labels:
        key = (
            label.user_id,
            label.stage,
            label.created_at,
            label.edited_at,
            label.seconds_spent,
            label.comment,
        )
        grouped.setdefault(key, []).append(label)
    annotations = []
    for group in grouped.values():
        first = group[0]
        result = [_result(vocabulary.question(label.criterion), label.value, vocabulary) for label in group]
        if first.comment:
            result.append(
                {"from_name": COMMENT, "to_name": TEXT, "type": "textarea", "value": {TEXT: [first.comment]}}
            )
        annotation = {
            "id": first.label_id,
            "completed_by": authors.label_studio_id(
                username=first.username, email=first.email, user_id=first.user_id
            ),
            "result": result,
            "was_cancelled": False,
            "created_at": iso(first.created_at),
            "updated_at": iso(first.edited_at or first.created_at),
            "lead_time": first.seconds_spent,
            "stage": first.stage,
        }
        annotations.append((annotation, _kept(annotation, edited_at=first.edited_at)))
    return annotations


def _predictions(unit: UnitContent, vocabulary: Vocabulary) -> list[dict[str, Any]]:
    by_judge: dict[str, list] = {}
    for judgment in unit.judgments:
        by_judge.setdefault(judgment.judge, []).append(judgment)
    predictions = []
    for judge, judgments in by_judge.items():
        kept = judgments[0].kept
        prediction: dict[str, Any] = {
            "model_version": kept.get("model_version", judge),
            "result": [_result(vocabulary.question(j.criterion), j.value, vocabulary) for j in judgments],
        }
        if "score" in kept:
            prediction["score"] = kept["score"]
        predictions.append(prediction)
    return predictions


def _kept(annotation: dict[str, Any], *, edited_at: dt.datetime | None) -> dict[str, Any]:
    """What Label Studio's import drops of an annotation, kept in its task's ``meta``: its
    ``updated_at`` is the label's own last edit, null when it was never edited (the
    annotation's own ``updated_at`` is then its creation)."""
    return {
        "annotation": annotation["id"],
        "completed_by": annotation["completed_by"],
        "created_at": annotation["created_at"],
        "updated_at": iso(edited_at),
    }


def people(tasks: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Who the tasks' annotations name, once each: the email Label Studio must know (a member of
    the organisation the project is in), whether it is a placeholder the Label Studio admin
    creates, and how many annotations each has; by email."""
    found: dict[str, dict[str, Any]] = {}
    for task in tasks:
        for annotation in task["annotations"]:
            author = annotation["completed_by"]
            email = author["email"]
            entry = found.setdefault(
                email,
                {
                    "email": email,
                    "username": author.get("username", ""),
                    "placeholder": email.endswith(f"@{authors.PLACEHOLDER_DOMAIN}"),
                    "annotations": 0,
                },
            )
            entry["annotations"] += 1
    return [found[email] for email in sorted(found)]


def export_tasks(
    *,
    campaign: Campaign,
    criteria: list[Criterion],
    vocabulary: Vocabulary,
    judges: list[Judge] | None = None,
) -> Iterator[dict[str, Any]]:
    """The campaign's units at the criteria's levels as Label Studio tasks: ``data`` (ids, texts,
    theme), every label in force as an annotation, each judge's labels as a prediction."""
    for unit in campaign_units(campaign=campaign, criteria=criteria, judges=judges):
        pairs = _annotations(unit.labels, vocabulary)
        yield {
            "id": unit.unit_id,
            "data": {
                "unit_id": unit.unit_id,
                "answer_id": unit.answer_id,
                "sentence": unit.sentence,
                "source": unit.source,
                "level": unit.level,
                "question_id": unit.question_id,
                "question": unit.question,
                "text": unit.text,
                "theme": unit.theme,
                "difficulty": unit.difficulty,
            },
            "annotations": [annotation for annotation, _ in pairs],
            "predictions": _predictions(unit, vocabulary),
            "meta": {META: {"labels": [kept for _, kept in pairs]}},
        }
