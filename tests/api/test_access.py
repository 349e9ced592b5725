"""The API's permission matrix: every endpoint, for anonymous callers, outsiders and each role.

Outsiders get 404 as on the pages, members lacking the role 403, and a refused write changes
nothing."""

from __future__ import annotations

import copy
import json

import pytest

from annotation.models import Campaign, Criterion, Label, Level, Question, Role, Sample, Stage, Unit
from api.models import AnswerBatch
from evaluation.models import Judge, JudgeRun, Judgment
from tests.factories import add_member, api_token, make_answer, make_campaign, make_user, sample_units
from tests.ingest_files import RECORDS, table_counts

PERSONAS = ("anonymous", "outsider", "annotator", "reviewer", "adjudicator", "analyst", "manager")
MEMBERS = ("annotator", "reviewer", "adjudicator", "analyst", "manager")
READERS = ("analyst", "manager")


@pytest.fixture(scope="module")
def _world(module_transaction):
    """A campaign with a few answers, an imported judge's judgments, a sample, an active judge run
    and a finished answer batch, a person in each role and an outsider: built once for the
    module, whose tests only read it or write what their savepoint takes back."""
    campaign = make_campaign(name="Velmont API access")
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    for index in range(6):
        # Question ids of their own: the import tests send the ingest file's (Q1, Q2...).
        theme = "Finance" if index % 2 else "IT"
        question = Question.objects.create(
            campaign=campaign, external_id=f"access-{index}", text=f"Question {index} ?", theme=theme
        )
        answer = make_answer(campaign=campaign, question=question, theme=theme)
        unit = Unit.objects.get(answer=answer, level=Level.ANSWER)
        Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=index % 2)
    units = list(Unit.objects.filter(campaign=campaign, level=Level.ANSWER).order_by("pk"))
    sample = sample_units(criterion=criterion, units=units[:3])
    lexical = Judge.objects.create(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    run = JudgeRun.objects.create(campaign=campaign, criterion=criterion, judge=lexical)
    batch = AnswerBatch.objects.create(campaign=campaign, records=300, status=AnswerBatch.Status.DONE)
    users = {}
    for role in MEMBERS:
        users[role] = make_user(username=f"api-{role}")
        add_member(campaign=campaign, user=users[role], roles=[role])
    users["outsider"] = make_user(username="api-outsider")
    return {"campaign": campaign, "sample": sample, "run": run, "batch": batch, "users": users}


@pytest.fixture
def world(_world, db):
    return copy.deepcopy(_world)


def _headers(world, persona: str) -> dict:
    if persona == "anonymous":
        return {}
    return {"HTTP_AUTHORIZATION": f"Bearer {api_token(world['users'][persona])}"}


def _call(client, world, persona: str, method: str, path: str, body=None):
    url = "/api/v1" + path.format(
        slug=world["campaign"].slug, sample=world["sample"].pk, run=world["run"].pk, batch=world["batch"].pk
    )
    headers = _headers(world, persona)
    if method == "get":
        return client.get(url, **headers)
    send = client.put if method == "put" else client.post
    return send(url, data=json.dumps(body or {}), content_type="application/json", **headers)


RECORD = {**RECORDS[0], "answer_id": "api-new-1"}
# (method, path, body, who may, status when allowed)
ENDPOINTS = [
    ("get", "/campaigns/{slug}", None, MEMBERS, 200),
    ("post", "/campaigns/{slug}/answers", {"records": [RECORD]}, ("manager",), 201),
    ("get", "/campaigns/{slug}/answers/batches/{batch}", None, ("manager",), 200),
    ("get", "/campaigns/{slug}/samples", None, READERS, 200),
    (
        "post",
        "/campaigns/{slug}/samples",
        {"criterion": "relevance", "budget": 3, "per_cluster": 1},
        ("manager",),
        202,
    ),
    ("get", "/campaigns/{slug}/samples/{sample}", None, READERS, 200),
    ("get", "/campaigns/{slug}/samples/{sample}/items", None, READERS, 200),
    ("get", "/campaigns/{slug}/runs", None, READERS, 200),
    ("post", "/campaigns/{slug}/runs", {"criterion": "veracity", "judge": "lexical"}, ("manager",), 202),
    ("get", "/campaigns/{slug}/runs/{run}", None, READERS, 200),
    ("post", "/campaigns/{slug}/runs/{run}/cancel", None, ("manager",), 200),
    ("get", "/campaigns/{slug}/estimates/relevance?judge=imported", None, READERS, 200),
    ("get", "/campaigns/{slug}/reference-answers", None, READERS, 200),
    ("get", "/campaigns/{slug}/criteria/relevance/judge-plan", None, READERS, 200),
    (
        "post",
        "/campaigns/{slug}/gate",
        {"criterion": "relevance", "min_lower": 0.5, "judge": "imported"},
        READERS,
        200,
    ),
    ("get", "/campaigns/{slug}/labels", None, READERS, 200),
    ("get", "/campaigns/{slug}/judgments", None, READERS, 200),
    ("get", "/campaigns/{slug}/criteria/relevance/primary-judge", None, READERS, 200),
    ("put", "/campaigns/{slug}/criteria/relevance/primary-judge", {"judge": "imported"}, ("manager",), 200),
]


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize(
    ("method", "path", "body", "allowed", "success"), ENDPOINTS, ids=lambda v: str(v)[:40]
)
def test_every_endpoint_answers_each_persona_as_the_pages_do(
    client, world, persona, method, path, body, allowed, success
):
    before = table_counts()
    response = _call(client, world, persona, method, path, body)
    expected = (
        401
        if persona == "anonymous"
        else 404
        if persona == "outsider"
        else success
        if persona in allowed
        else 403
    )
    assert response.status_code == expected, response.content
    assert response["Content-Type"].startswith("application/json")
    if expected != success:
        assert response.json()["errors"][0]["field"] in {"Authorization", "path"}
        if method != "get":
            assert table_counts() == before


def test_the_labels_are_the_label_history_with_what_each_row_did(client, world):
    campaign = world["campaign"]
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    unit = Unit.objects.filter(campaign=campaign, level=Level.ANSWER).first()
    person = world["users"]["annotator"]
    for value in (1, 0, None):
        Label.objects.create(unit=unit, criterion=criterion, user=person, stage=Stage.LABEL, value=value)
    rows = _call(client, world, "analyst", "get", "/campaigns/{slug}/labels").json()["items"]
    assert [(r["action"], r["value"], r["replaces"]) for r in rows] == [
        ("label", 1, None),
        ("change", 0, 1),
        ("withdrawal", None, 0),
    ]
    assert {r["author"] for r in rows} == {person.username}


def test_a_manager_names_the_primary_judge_that_the_estimates_then_read(client, world):
    path = "/campaigns/{slug}/criteria/relevance/primary-judge"
    read = _call(client, world, "analyst", "get", path).json()
    assert read == {
        "criterion": "relevance",
        "primary_judge": None,
        "default_judge": "imported",
        "judge_choice": "only",
        "candidates": ["imported"],
    }
    refused = _call(client, world, "manager", "put", path, {"judge": "lexical"})
    # No candidate of that name (it has no judgment of the criterion): 404 naming the field.
    assert refused.status_code == 404 and refused.json()["errors"][0]["field"] == "judge"
    chosen = _call(client, world, "manager", "put", path, {"judge": "imported"}).json()
    assert (chosen["primary_judge"], chosen["judge_choice"]) == ("imported", "primary")
    estimates = _call(client, world, "analyst", "get", "/campaigns/{slug}/estimates/relevance").json()
    assert (estimates["judge"], estimates["judge_choice"]) == ("imported", "primary")
    assert _call(client, world, "manager", "put", path, {"judge": None}).json()["primary_judge"] is None


@pytest.mark.parametrize("persona", PERSONAS)
def test_the_campaign_list_holds_the_callers_campaigns_only(client, world, persona):
    response = _call(client, world, persona, "get", "/campaigns")
    if persona == "anonymous":
        assert response.status_code == 401
        return
    assert response.status_code == 200
    slugs = [campaign["slug"] for campaign in response.json()]
    assert slugs == ([] if persona == "outsider" else [world["campaign"].slug])


def test_only_managers_and_analysts_see_the_label_and_judgment_counts(client, world):
    counts = {
        persona: _call(client, world, persona, "get", "/campaigns/{slug}").json()["counts"]
        for persona in MEMBERS
    }
    assert counts["manager"]["judgments"] == 6
    assert counts["analyst"]["labels"] == 0
    assert all("judgments" not in counts[persona] for persona in ("annotator", "reviewer", "adjudicator"))


@pytest.mark.parametrize(("staff", "status"), [(True, 201), (False, 403)])
def test_only_staff_create_campaigns_and_become_their_managers(client, db, staff, status):
    user = make_user(username="creator")
    user.is_staff = staff
    user.save()
    response = client.post(
        "/api/v1/campaigns",
        data={"name": "Assistant v3"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api_token(user)}",
    )
    assert response.status_code == status, response.content
    created = Campaign.objects.filter(name="Assistant v3").first()
    if staff:
        assert response.json() == {"slug": "assistant-v3", "name": "Assistant v3", "roles": ["manager"]}
        assert created is not None and created.memberships.get().role == Role.MANAGER
    else:
        assert created is None


def test_a_taken_campaign_name_is_a_409_on_the_name(client, campaign):
    user = make_user(username="creator", superuser=True)
    response = client.post(
        "/api/v1/campaigns",
        data={"name": campaign.name},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api_token(user)}",
    )
    assert response.status_code == 409
    assert response.json()["detail"] == "conflict"
    assert response.json()["errors"][0]["field"] == "name"


def test_a_drawn_sample_has_items_and_a_status(client, world):
    manager = _headers(world, "manager")
    response = client.get(
        f"/api/v1/campaigns/{world['campaign'].slug}/samples/{world['sample'].pk}/items", **manager
    )
    body = response.json()
    assert body["count"] == 3
    assert {item["theme"] for item in body["items"]} <= {"Finance", "IT"}
    assert world["sample"].status == Sample.Status.DONE
