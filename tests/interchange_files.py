"""The campaign the interchange fixtures (tests/data/interchange) were written for, and the
tool-neutral views of a Label Studio or Argilla file that a round trip must keep."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from django.utils.dateparse import parse_datetime

from annotation.models import Answer
from tests.factories import make_answer

DATA = Path(__file__).resolve().parent / "data" / "interchange"
LABEL_STUDIO_FILE = DATA / "label_studio.json"
ARGILLA_FILE = DATA / "argilla.json"
LABEL_STUDIO_MAPPING = {"values": {"yes": 1, "no": 0}}
ARGILLA_MAPPING = {"values": {"supported": 1, "unsupported": 0}, "criteria": {"faithful": "veracity"}}


def fixture_answers(campaign) -> dict[str, Answer]:
    """The answers the fixtures name: ``ans-1`` (two sentences) and ``ans-2`` (one), in Finance."""
    answers = {
        "ans-1": make_answer(campaign=campaign),
        "ans-2": make_answer(campaign=campaign, text="Je ne sais pas.", sentences=[("Je ne sais pas.", [])]),
    }
    for external_id, answer in answers.items():
        Answer.objects.filter(pk=answer.pk).update(external_id=external_id)
        answer.external_id = external_id
    return answers


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def instant(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    parsed = parse_datetime(value)
    assert parsed is not None, value
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _author(value: Any) -> Any:
    """Who an annotation names: a Label Studio id, or an object of whose keys the id is who it
    is (an export adds the email Label Studio resolves, a placeholder when they have none)."""
    if isinstance(value, dict):
        return value["id"] if "id" in value else value["email"]
    return value


def label_studio_labels(tasks: list[dict]) -> set[tuple]:
    """Every label of a Label Studio file: unit, question, choice, author, times, seconds, comment."""
    found = set()
    for task in tasks:
        unit = (task["data"]["answer_id"], task["data"]["sentence"])
        for annotation in task["annotations"]:
            if annotation.get("was_cancelled"):
                continue
            comment = "".join(
                "\n".join(item["value"]["text"])
                for item in annotation["result"]
                if item["type"] == "textarea"
            )
            for item in annotation["result"]:
                if item["type"] == "choices":
                    found.add(
                        (
                            unit,
                            item["from_name"],
                            item["value"]["choices"][0],
                            _author(annotation["completed_by"]),
                            instant(annotation["created_at"]),
                            instant(annotation["updated_at"]),
                            annotation["lead_time"],
                            comment,
                        )
                    )
    return found


def label_studio_predictions(tasks: list[dict]) -> set[tuple]:
    return {
        (
            (task["data"]["answer_id"], task["data"]["sentence"]),
            item["from_name"],
            item["value"]["choices"][0],
            prediction["model_version"],
            prediction["score"],
        )
        for task in tasks
        for prediction in task["predictions"]
        for item in prediction["result"]
    }


def argilla_labels(records: list[dict]) -> set[tuple]:
    """Every submitted response of Argilla records: unit, question, value, user, times (those our
    export kept in the record's metadata, else the record's, when the response has none), the
    user's comment."""
    found = set()
    for record in records:
        unit = (record["metadata"]["answer_id"], record["metadata"]["sentence"])
        comments = {r["user_id"]: r["value"] for r in record["responses"].get("comment", [])}
        for question, responses in record["responses"].items():
            if question == "comment":
                continue
            for response in responses:
                if response.get("status", "submitted") != "submitted":
                    continue
                kept = {
                    (entry["question"], entry["user_id"]): entry
                    for entry in record["metadata"].get("attest_labels", [])
                }.get((question, response["user_id"]), {})
                inserted = response.get("inserted_at") or kept.get("inserted_at") or record["inserted_at"]
                updated = response.get("updated_at") or kept.get("updated_at") or record["updated_at"]
                found.add(
                    (
                        unit,
                        question,
                        response["value"],
                        response["user_id"],
                        instant(inserted),
                        instant(updated),
                        comments.get(response["user_id"], ""),
                    )
                )
    return found


def argilla_suggestions(records: list[dict]) -> set[tuple]:
    return {
        (
            (record["metadata"]["answer_id"], record["metadata"]["sentence"]),
            question,
            suggestion["value"],
            suggestion["score"],
            suggestion["agent"],
        )
        for record in records
        for question, suggestion in record["suggestions"].items()
    }
