"""Our exports as the other tools take them: Label Studio's import, re-stated from its code, and
Argilla's own SDK objects, built from our records without a server.

Label Studio's SDK (label-studio-sdk 2.x) pins numpy below ours, so it is not installed; its
import's rules are re-stated here from label_studio/tasks/serializers.py (HumanSignal/
label-studio): ``BaseTaskSerializerBulk.to_internal_value`` (a non-empty list of tasks, each with
its ``data``), ``_insert_valid_completed_by`` (an author is an object whose ``email`` is a member
of the organisation, or a member's id; else "Unknown annotator's email"), ``add_annotations``
(it keeps ``result``, ``lead_time``, ``was_cancelled``, ``ground_truth``, the annotation's ``id``
as ``import_id``; ``created_at`` and ``updated_at`` are the import's time), ``add_predictions``
(``result``, ``score`` as a float, ``model_version``) and ``add_tasks`` (``data``, ``meta``); and
from label_studio/data_export/serializers.py, what its JSON export gives back.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import uuid
from typing import Any

import argilla as rg
import httpx
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.models import Criterion, Label, Role, Stage, Unit
from evaluation.interchange import authors, exporting
from evaluation.interchange.loading import import_labels
from evaluation.interchange.vocabulary import check_vocabulary
from evaluation.models import Judge
from tests.factories import label, make_campaign, make_user, member, sample_units
from tests.interchange_files import (
    ARGILLA_FILE,
    ARGILLA_MAPPING,
    LABEL_STUDIO_FILE,
    LABEL_STUDIO_MAPPING,
    fixture_answers,
    write_json,
)

pytestmark = pytest.mark.django_db

IMPORTED_AT = "2026-06-01T10:00:00.000000Z"
# Label Studio 1.23.2 writes an imported annotation's updated_at a few microseconds after its
# created_at (seen on a real server: 14:14:26.927962 and 14:14:26.927980).
IMPORTED_UPDATED_AT = "2026-06-01T10:00:00.000018Z"


class LabelStudioRefusal(Exception):
    """What Label Studio answers a refused import with (a ValidationError's text)."""


def label_studio_import(
    tasks: Any, *, members: dict[str, int], importer: int = 1, predictions_in_full: bool = True
) -> list[dict]:
    """The tasks POSTed to Label Studio's import, then its JSON export of them, as its code does
    (see the module's docstring); LabelStudioRefusal with its message when it refuses the file.
    Its Export dialog (``GET /api/projects/<id>/export``) gives each prediction as its id alone
    (``predictions_in_full=False``); a snapshot export asked for them in full gives them whole."""
    if not isinstance(tasks, list) or not tasks:
        raise LabelStudioRefusal("not a list" if not isinstance(tasks, list) else "empty")
    member_ids = set(members.values())
    exported, annotation_id = [], 9000
    for i, task in enumerate(tasks):
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            raise LabelStudioRefusal(f"Error at item {i}: data is required")
        annotations = []
        for annotation in task.get("annotations", []):
            completed_by = annotation.get("completed_by")
            if completed_by is None:
                user = importer
            elif isinstance(completed_by, dict):
                if "email" not in completed_by:
                    raise LabelStudioRefusal(
                        "It's expected to have 'email' field in 'completed_by' data in annotations"
                    )
                if completed_by["email"] not in members:
                    raise LabelStudioRefusal(f"Unknown annotator's email {completed_by['email']}")
                user = members[completed_by["email"]]
            elif isinstance(completed_by, int) and completed_by in member_ids:
                user = completed_by
            else:
                raise LabelStudioRefusal(
                    f"Import data contains completed_by={completed_by} which is not valid"
                )
            if not isinstance(annotation.get("result"), list):
                raise LabelStudioRefusal('annotation "result" field in annotation must be list')
            annotation_id += 1
            annotations.append(
                {
                    "id": annotation_id,
                    "completed_by": user,
                    "result": annotation["result"],
                    "was_cancelled": annotation.get("was_cancelled", False),
                    "ground_truth": annotation.get("ground_truth", True),
                    "lead_time": annotation.get("lead_time"),
                    "import_id": annotation.get("id"),
                    "created_at": IMPORTED_AT,
                    "updated_at": IMPORTED_UPDATED_AT,
                }
            )
        predictions = [
            {
                "id": 7000 + j,
                "result": prediction["result"],
                "score": None if prediction.get("score") is None else float(prediction["score"]),
                "model_version": prediction.get("model_version", "undefined"),
            }
            for j, prediction in enumerate(task.get("predictions", []))
        ]
        exported.append(
            {
                "id": 5000 + i,
                "data": task["data"],
                "meta": task.get("meta", {}),
                "annotations": annotations,
                "predictions": predictions if predictions_in_full else [p["id"] for p in predictions],
            }
        )
    return exported


def labels_of(campaign) -> set[tuple]:
    return set(
        Label.objects.filter(unit__campaign=campaign).values_list(
            "unit__answer__external_id",
            "unit__sentence__position",
            "criterion__name",
            "user__username",
            "value",
            "comment",
            "created_at",
            "edited_at",
            "seconds_spent",
        )
    )


def campaign_with_every_kind_of_author(name: str):
    """Labels by Label Studio's people (one without an email), by people of Attest with and
    without an email, and one without an author."""
    campaign = make_campaign(name=name)
    fixture_answers(campaign)
    vocabulary = check_vocabulary(mapping=LABEL_STUDIO_MAPPING, name="mapping")
    import_labels(
        path=LABEL_STUDIO_FILE, fmt="label-studio", campaign=campaign, vocabulary=vocabulary, judge_name="gpt"
    )
    amelie, bruno = make_user(username="amelie"), make_user(username="bruno")
    get_user_model().objects.filter(pk=amelie.pk).update(email="amelie@example.org")
    get_user_model().objects.filter(pk=bruno.pk).update(email="")
    ours = [
        {
            "data": {"answer_id": "ans-2", "sentence": None},
            "annotations": [
                {
                    "id": 31,
                    "completed_by": {"id": amelie.pk, "email": "amelie@example.org", "username": "amelie"},
                    "result": [
                        {
                            "from_name": "relevance",
                            "to_name": "text",
                            "type": "choices",
                            "value": {"choices": ["yes"]},
                        }
                    ],
                    "created_at": "2025-04-01T08:00:00.250000Z",
                    "updated_at": "2025-04-02T09:30:00.000000Z",
                    "lead_time": 7.25,
                },
                {
                    "id": 32,
                    "completed_by": {"id": bruno.pk, "email": "", "username": "bruno"},
                    "result": [
                        {
                            "from_name": "relevance",
                            "to_name": "text",
                            "type": "choices",
                            "value": {"choices": ["no"]},
                        },
                        {
                            "from_name": "comment",
                            "to_name": "text",
                            "type": "textarea",
                            "value": {"text": ["vague"]},
                        },
                    ],
                    "created_at": "2025-04-01T08:05:00.000001Z",
                    "updated_at": "2025-04-01T08:05:00.000001Z",
                    "lead_time": 3.0,
                },
                {
                    "id": 33,
                    "completed_by": {"email": authors.NO_AUTHOR_EMAIL},
                    "result": [
                        {
                            "from_name": "relevance",
                            "to_name": "text",
                            "type": "choices",
                            "value": {"choices": ["yes"]},
                        }
                    ],
                    "created_at": "2025-04-03T12:00:00.000000Z",
                    "updated_at": "2025-04-03T12:00:00.000000Z",
                    "lead_time": None,
                },
            ],
        }
    ]
    return campaign, vocabulary, ours


def _export(campaign, vocabulary, people: list | None = None) -> list[dict]:
    stream = io.StringIO()
    exporting.write_label_studio(
        campaign=campaign,
        criteria=list(Criterion.objects.filter(campaign=campaign).order_by("name")),
        stream=stream,
        vocabulary=vocabulary,
        people=people,
    )
    return json.loads(stream.getvalue())


@pytest.fixture
def every_author(tmp_path):
    campaign, vocabulary, ours = campaign_with_every_kind_of_author("Out")
    import_labels(
        path=write_json(tmp_path / "ours.json", ours),
        fmt="label-studio",
        campaign=campaign,
        vocabulary=vocabulary,
    )
    return campaign, vocabulary


def test_label_studio_takes_every_label_once_its_admin_has_the_listed_people(every_author, tmp_path):
    campaign, vocabulary = every_author
    people: list[dict] = []
    tasks = _export(campaign, vocabulary, people)
    emails = {person["email"]: person["placeholder"] for person in people}
    # Every author goes by an email; those without one by a placeholder the admin creates.
    assert emails == {
        "amelie@example.org": False,
        "bruno@attest.invalid": True,
        "claire@example.org": False,
        "label-studio-7@attest.invalid": True,
        authors.NO_AUTHOR_EMAIL: True,
    }
    members = {email: number for number, email in enumerate(sorted(emails), start=2)}
    back = label_studio_import(tasks, members=members)
    assert (
        sum(len(task["annotations"]) for task in back) == sum(len(task["annotations"]) for task in tasks) == 8
    )
    assert sum(len(task["predictions"]) for task in back) == 3

    # Label Studio's own export, imported into another campaign with the same answers: every
    # label with its author, value, comment, times (to the microsecond) and seconds.
    other = make_campaign(name="Back")
    fixture_answers(other)
    import_labels(
        path=write_json(tmp_path / "back.json", back),
        fmt="label-studio",
        campaign=other,
        vocabulary=vocabulary,
        judge_name="gpt",
    )
    assert len(labels_of(campaign)) == 8
    assert labels_of(other) == labels_of(campaign)
    assert Label.objects.filter(unit__campaign=other, user__isnull=True).count() == 1


def test_label_studio_s_export_dialog_file_brings_every_label_and_counts_its_bare_predictions(
    every_author, tmp_path
):
    campaign, vocabulary = every_author
    tasks = _export(campaign, vocabulary)
    emails = sorted({a["completed_by"]["email"] for t in tasks for a in t["annotations"]})
    members = {email: number for number, email in enumerate(emails, start=2)}
    back = label_studio_import(tasks, members=members, predictions_in_full=False)
    other = make_campaign(name="Dialog")
    fixture_answers(other)
    summary = import_labels(
        path=write_json(tmp_path / "back.json", back),
        fmt="label-studio",
        campaign=other,
        vocabulary=vocabulary,
        judge_name="gpt",
    )
    assert labels_of(other) == labels_of(campaign)
    assert (summary.judgments, summary.prediction_ids) == (0, 3)
    assert "passed over: 3 predictions given by their Label Studio id alone" in "\n".join(summary.lines())


def test_without_the_placeholder_people_label_studio_refuses_naming_the_email(every_author):
    campaign, vocabulary = every_author
    tasks = _export(campaign, vocabulary)
    with pytest.raises(LabelStudioRefusal, match="Unknown annotator's email"):
        label_studio_import(tasks, members={"amelie@example.org": 2, "claire@example.org": 3})


def test_a_label_edited_in_label_studio_keeps_its_creation_and_takes_the_edit(every_author, tmp_path):
    campaign, vocabulary = every_author
    tasks = _export(campaign, vocabulary)
    members = {
        email: n
        for n, email in enumerate(
            sorted({a["completed_by"]["email"] for t in tasks for a in t["annotations"]}), 2
        )
    }
    back = label_studio_import(tasks, members=members)
    edited = next(a for t in back for a in t["annotations"] if a["import_id"] == _id_of(tasks, "amelie"))
    edited["updated_at"] = "2026-06-02T11:00:00.000000Z"
    edited["result"][0]["value"]["choices"] = ["no"]
    other = make_campaign(name="Edited")
    fixture_answers(other)
    import_labels(
        path=write_json(tmp_path / "back.json", back),
        fmt="label-studio",
        campaign=other,
        vocabulary=vocabulary,
        judge_name="gpt",
    )
    label = Label.objects.get(unit__campaign=other, user__username="amelie")
    assert label.value == 0
    assert label.created_at == dt.datetime(2025, 4, 1, 8, 0, 0, 250000, tzinfo=dt.UTC)
    assert label.edited_at == dt.datetime(2026, 6, 2, 11, 0, tzinfo=dt.UTC)


def test_a_label_never_edited_comes_back_from_label_studio_never_edited(tmp_path):
    # A label made in the app has no edit time; Label Studio stamps both of an imported
    # annotation's times, so only the task's meta can say it was never edited.
    campaign = make_campaign(name="Made here")
    fixture_answers(campaign)
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")
    unit = Unit.objects.get(campaign=campaign, answer__external_id="ans-2", level=criterion.level)
    sample_units(criterion=criterion, units=[unit])
    made = label(member(campaign, Role.ANNOTATOR, username="dora"), criterion, Stage.LABEL, 1, unit=unit)
    assert made.edited_at is None
    vocabulary = check_vocabulary(mapping={}, name="mapping")
    tasks = _export(campaign, vocabulary)
    [annotation] = [a for t in tasks for a in t["annotations"]]
    [kept] = [k for t in tasks for k in t["meta"]["attest"]["labels"]]
    assert annotation["updated_at"] == annotation["created_at"]
    assert kept["updated_at"] is None
    back = label_studio_import(tasks, members={annotation["completed_by"]["email"]: 2})
    other = make_campaign(name="Back here")
    fixture_answers(other)
    import_labels(
        path=write_json(tmp_path / "back.json", back),
        fmt="label-studio",
        campaign=other,
        vocabulary=vocabulary,
    )
    assert labels_of(other) == labels_of(campaign)
    assert Label.objects.get(unit__campaign=other).edited_at is None


def test_a_label_never_edited_comes_back_from_argilla_never_edited(tmp_path):
    # Argilla stamps a response never edited with its insertion time as its update time: our
    # metadata says None, and a response whose two times are equal reads back as never edited.
    campaign = make_campaign(name="Made here for Argilla")
    fixture_answers(campaign)
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")
    unit = Unit.objects.get(campaign=campaign, answer__external_id="ans-2", level=criterion.level)
    sample_units(criterion=criterion, units=[unit])
    made = label(member(campaign, Role.ANNOTATOR, username="dora"), criterion, Stage.LABEL, 1, unit=unit)
    assert made.edited_at is None
    vocabulary = check_vocabulary(mapping={}, name="mapping")
    stream = io.StringIO()
    exporting.write_argilla(campaign=campaign, criteria=[criterion], stream=stream, vocabulary=vocabulary)
    records = json.loads(stream.getvalue())
    [kept] = [k for r in records for k in r["metadata"]["attest_labels"]]
    assert kept["updated_at"] is None and kept["inserted_at"]
    # As Argilla gives the response back: both times its own, equal.
    for record in records:
        for response in record["responses"].get("relevance", []):
            response.update(inserted_at=kept["inserted_at"], updated_at=kept["inserted_at"])
    bare = [
        {**r, "metadata": {k: v for k, v in r["metadata"].items() if k != "attest_labels"}} for r in records
    ]
    for found in (records, bare):  # with our metadata's times, then with Argilla's alone
        other = make_campaign(name=f"Back from Argilla {len(Label.objects.all())}")
        fixture_answers(other)
        import_labels(
            path=write_json(tmp_path / "back.json", found),
            fmt="argilla",
            campaign=other,
            vocabulary=vocabulary,
        )
        back = Label.objects.get(unit__campaign=other)
        assert (back.created_at, back.edited_at, back.value) == (made.created_at, None, 1)


def _id_of(tasks: list[dict], username: str) -> int:
    return next(
        a["id"] for t in tasks for a in t["annotations"] if a["completed_by"].get("username") == username
    )


def test_the_export_command_writes_the_people_beside_the_tasks(every_author, tmp_path, capsys):
    campaign, _vocabulary = every_author
    mapping = write_json(tmp_path / "map.json", LABEL_STUDIO_MAPPING)
    out = tmp_path / "tasks.json"
    call_command(
        "export_campaign",
        "--campaign",
        campaign.name,
        "--format",
        "label-studio",
        "--output",
        str(out),
        "--mapping",
        str(mapping),
    )
    printed = capsys.readouterr().out
    assert "3 placeholders (@attest.invalid) to create as users in Label Studio" in printed
    with (tmp_path / "tasks.people.csv").open(encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))
    assert {(row["email"], row["placeholder"]) for row in rows} >= {
        ("bruno@attest.invalid", "yes"),
        ("amelie@example.org", "no"),
    }
    assert sum(int(row["annotations"]) for row in rows) == 8


# --- Argilla ----------------------------------------------------------------------------------


def offline_client() -> rg.Argilla:
    """Argilla's client, without a server: the SDK checks its connection by asking who the key
    belongs to; nothing else is asked (any other request would get a 404)."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/me"):
            return httpx.Response(
                200,
                json={
                    "id": str(uuid.uuid4()),
                    "username": "offline",
                    "role": "owner",
                    "first_name": "Offline",
                    "last_name": "",
                    "api_key": "offline",
                    "inserted_at": "2026-01-01T00:00:00",
                    "updated_at": "2026-01-01T00:00:00",
                },
            )
        return httpx.Response(404, json={"detail": "no server in this test"})

    return rg.Argilla(
        api_url="http://argilla.invalid", api_key="offline", mounts={"all://": httpx.MockTransport(answer)}
    )


def test_argilla_s_sdk_builds_every_record_response_and_suggestion_of_our_export(tmp_path):
    campaign = make_campaign(name="Argilla out")
    fixture_answers(campaign)
    vocabulary = check_vocabulary(mapping=ARGILLA_MAPPING, name="mapping")
    import_labels(
        path=ARGILLA_FILE, fmt="argilla", campaign=campaign, vocabulary=vocabulary, judge_name="gpt"
    )
    stream = io.StringIO()
    exporting.write_argilla(
        campaign=campaign,
        criteria=list(Criterion.objects.filter(campaign=campaign).order_by("name")),
        stream=stream,
        vocabulary=vocabulary,
        judge=Judge.objects.get(campaign=campaign, name="gpt"),
    )
    records = json.loads(stream.getvalue())
    client = offline_client()
    labels = ["supported", "unsupported"]
    settings = rg.Settings(
        fields=[rg.TextField(name="question", client=client), rg.TextField(name="text", client=client)],
        questions=[
            rg.LabelQuestion(name="faithful", labels=labels, client=client),
            rg.LabelQuestion(name="relevance", labels=labels + ["1", "0"], client=client),
            rg.TextQuestion(name="comment", required=False, client=client),
        ],
        allow_extra_metadata=True,
    )
    dataset = rg.Dataset(name="attest", settings=settings, client=client)
    responses, suggestions = [], []
    for record in records:
        model = rg.Record.from_dict(record, dataset=dataset).api_model().model_dump(mode="json")
        assert model["external_id"] == record["id"] and model["fields"] == record["fields"]
        for response in model["responses"]:
            responses += [
                (record["id"], response["user_id"], q, v["value"]) for q, v in response["values"].items()
            ]
        suggestions += [
            (record["id"], s["question_name"], s["value"], s["score"], s["agent"])
            for s in model["suggestions"]
        ]
        # The responses' own times, which the SDK cannot send, ride in the metadata.
        for kept in record["metadata"]["attest_labels"]:
            assert model["metadata"]["attest_labels"] and kept["inserted_at"]
    assert len([r for r in responses if r[2] != "comment"]) == 3
    assert len(suggestions) == 3
    # Read back by our import, the SDK's records (no times of their own) keep the labels' times.
    sdk_records = [
        {**rg.Record.from_dict(record).to_dict(), "metadata": record["metadata"]} for record in records
    ]
    assert all("inserted_at" not in r for rs in sdk_records for q in rs["responses"].values() for r in q)
    other = make_campaign(name="Argilla back")
    fixture_answers(other)
    import_labels(
        path=write_json(tmp_path / "sdk.json", sdk_records),
        fmt="argilla",
        campaign=other,
        vocabulary=vocabulary,
    )
    assert {row[2:] for row in labels_of(other)} == {row[2:] for row in labels_of(campaign)}
