"""Schemathesis against the schema the app serves: every operation, with a manager's token, on
a campaign with data. No response is a server error, and every response matches the schema
(status code, content type, body). Examples are few per operation, so that the run stays short."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from annotation.models import Criterion, Level, Unit
from api.models import AnswerBatch
from config.wsgi import application
from evaluation.models import Judge, JudgeRun, Judgment
from tests.factories import api_token, make_answer, make_user, member, sample_units

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    positive_data_acceptance,
]
# A batch of answers is checked by the import, across its records and against the campaign (an
# id reused with another text, a citation to no source), which no schema can state: its schema
# documents the record's fields, and a refused batch is a 400 naming record and field
# (tests/api/test_bad_input.py), so that one operation is not held to accept what its schema
# allows.
IMPORTED = ("POST", "/api/v1/campaigns/{slug}/answers")
EXAMPLES = 25


# The schema the app serves, read through its WSGI application when the tests are collected
# (schemathesis' lazy fixture loader does not run under this pytest).
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)


@pytest.fixture
def wsgi_keeps_the_connection(db):
    """Requests go through the WSGI application itself: like Django's test client, keep the
    test's database connection open across them."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def seeded(campaign, settings, wsgi_keeps_the_connection):
    """A campaign whose every endpoint has something to answer, and a manager's token."""
    settings.API_RATE_PER_TOKEN = "100000/min"
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    for index in range(4):
        answer = make_answer(campaign=campaign, theme="Finance" if index % 2 else "IT")
        unit = Unit.objects.get(answer=answer, level=Level.ANSWER)
        Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=index % 2)
    units = list(Unit.objects.filter(campaign=campaign, level=Level.ANSWER))
    ids = {
        "sample_id": sample_units(criterion=criterion, units=units[:2]).pk,
        "run_id": JudgeRun.objects.create(campaign=campaign, criterion=criterion, judge=judge).pk,
        "batch_id": AnswerBatch.objects.create(campaign=campaign, records=500).pk,
    }
    return {"slug": campaign.slug, "ids": ids, "token": api_token(member(campaign, "manager"))}


def test_the_schema_lists_every_endpoint(client, db):
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    assert set(paths) == {
        "/api/v1/campaigns",
        "/api/v1/campaigns/{slug}",
        "/api/v1/campaigns/{slug}/answers",
        "/api/v1/campaigns/{slug}/answers/batches/{batch_id}",
        "/api/v1/campaigns/{slug}/samples",
        "/api/v1/campaigns/{slug}/samples/{sample_id}",
        "/api/v1/campaigns/{slug}/samples/{sample_id}/items",
        "/api/v1/campaigns/{slug}/runs",
        "/api/v1/campaigns/{slug}/runs/{run_id}",
        "/api/v1/campaigns/{slug}/runs/{run_id}/cancel",
        "/api/v1/campaigns/{slug}/estimates/{criterion}",
        "/api/v1/campaigns/{slug}/gate",
        "/api/v1/campaigns/{slug}/criteria/{criterion}/primary-judge",
        "/api/v1/campaigns/{slug}/labels",
        "/api/v1/campaigns/{slug}/judgments",
        "/api/v1/campaigns/{slug}/reference-answers",
        "/api/v1/campaigns/{slug}/criteria/{criterion}/judge-plan",
    }


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
    derandomize=True,
    database=None,
)
def test_the_api_keeps_to_its_schema(case, seeded):
    # Aim most cases at the seeded campaign and rows, so that they reach past the 404s.
    params = case.path_parameters or {}
    if "slug" in params:
        params["slug"] = seeded["slug"]
    for name, real in seeded["ids"].items():
        if name in params and isinstance(params[name], int) and params[name] % 4 != 0:
            params[name] = real
    if "criterion" in params and len(str(params["criterion"])) % 2 == 0:
        params["criterion"] = "relevance"
    checks = CHECKS
    if (case.method.upper(), case.operation.path) == IMPORTED:
        checks = [check for check in CHECKS if check is not positive_data_acceptance]
    case.call_and_validate(headers={"Authorization": f"Bearer {seeded['token']}"}, checks=checks)


def test_the_schema_is_public_and_its_docs_page_needs_a_login_and_loads_nothing_from_elsewhere(client, db):
    assert client.get("/api/v1/openapi.json").status_code == 200
    assert client.get("/api/v1/docs").status_code == 302
    client.force_login(make_user(username="reader"))
    page = client.get("/api/v1/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in page
    assert "cdn" not in page.lower() and "https://" not in page


def _choices(model, field):
    prop = model.model_json_schema()["properties"][field]
    options = prop.get("anyOf", [prop])
    return next(tuple(option["enum"]) for option in options if "enum" in option)


def test_the_schemas_choices_are_the_domains_own():
    from api.routes.reads import EstimatesQuery, GateIn
    from api.schemas import RunIn
    from evaluation.estimates.params import CLUSTERS, METHODS
    from evaluation.models import JudgeRun
    from inference.paired import ADJUSTMENTS

    assert _choices(RunIn, "scope") == tuple(JudgeRun.Scope.values)
    assert _choices(EstimatesQuery, "method") == _choices(GateIn, "method") == METHODS
    assert _choices(EstimatesQuery, "clusters") == CLUSTERS
    assert _choices(GateIn, "adjustment") == ADJUSTMENTS
