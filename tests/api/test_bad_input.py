"""Bad input to the API: a JSON error naming the field, the right status, never 500, nothing written."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache

from annotation.models import Answer, Sample
from api.batches import batch_path
from api.models import AnswerBatch
from tests.factories import api_token, make_answer, member
from tests.ingest_files import RECORDS, table_counts


@pytest.fixture
def manager_token(campaign):
    make_answer(campaign=campaign)
    return api_token(member(campaign, "manager"))


def _post(client, url, body, token, **extra):
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.post(
        url, data=data, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}", **extra
    )


def _fields(response) -> list[str]:
    return [error["field"] for error in response.json()["errors"]]


def samples_url(campaign) -> str:
    return f"/api/v1/campaigns/{campaign.slug}/samples"


def test_a_name_that_matches_nothing_is_a_404_naming_its_field_and_writes_nothing(
    client, campaign, manager_token
):
    before = table_counts()
    response = _post(client, samples_url(campaign), {"criterion": "nonsense", "budget": 3}, manager_token)
    assert response.status_code == 404, response.content
    assert response.json()["detail"] == "not found" and _fields(response) == ["criterion"]
    # With a malformed field beside it, the request is malformed: 400 naming both.
    both = _post(client, samples_url(campaign), {"criterion": "nonsense", "budget": 0}, manager_token)
    assert both.status_code == 400 and set(_fields(both)) >= {"budget"}
    assert table_counts() == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("{not json", "body"),
        ('{"criterion": "relevance", "budget": 3', "body"),
        ({"criterion": "relevance", "budget": 3, "colour": "blue"}, "colour"),
        ({"criterion": "relevance", "budget": "3"}, "budget"),
        ({"criterion": "relevance", "budget": 3.5}, "budget"),
        ({"criterion": ["relevance"], "budget": 3}, "criterion"),
        ({"budget": 3}, "criterion"),
        (
            {"criterion": "relevance", "budget": 3, "per_theme_budget": {"Finance": "x"}},
            "per_theme_budget.Finance",
        ),
        ({"criterion": "relevance", "budget": 0}, "budget"),
        ([1, 2], "body"),
        ("", "body"),
    ],
)
def test_a_malformed_or_mistyped_body_is_a_400_naming_the_field_and_writes_nothing(
    client, campaign, manager_token, body, field
):
    before = table_counts()
    response = _post(client, samples_url(campaign), body, manager_token)
    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/json")
    assert field in _fields(response)
    assert table_counts() == before
    assert not Sample.objects.exists()


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Bearer nonsense", "Token attest_x", "Bearer attest_" + "a" * 43, "Basic dXNlcjpwYXNz"],
)
def test_a_missing_or_unknown_token_is_a_401_naming_the_header(client, campaign, header):
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}
    response = client.get("/api/v1/campaigns", **extra)
    assert response.status_code == 401
    assert _fields(response) == ["Authorization"]
    assert response["WWW-Authenticate"] == "Bearer"


def test_a_revoked_token_is_refused_and_a_post_with_it_writes_nothing(client, campaign, manager_token):
    from api.models import ApiToken

    ApiToken.objects.update(revoked_at="2026-01-01T00:00:00Z")
    before = table_counts()
    response = _post(client, samples_url(campaign), {"criterion": "relevance", "budget": 3}, manager_token)
    assert response.status_code == 401
    assert table_counts() == before


def test_a_token_of_a_deactivated_person_is_refused(client, campaign, manager_token):
    from api.models import ApiToken

    user = ApiToken.objects.get().user
    user.is_active = False
    user.save()
    assert client.get("/api/v1/campaigns", HTTP_AUTHORIZATION=f"Bearer {manager_token}").status_code == 401


def test_a_body_over_the_limit_is_a_413_before_it_is_read(client, campaign, manager_token, settings):
    settings.REQUEST_MAX_BYTES = 2048
    body = {"criterion": "relevance", "budget": 3, "per_theme_budget": {f"t{i}": i for i in range(400)}}
    response = _post(client, samples_url(campaign), body, manager_token)
    assert response.status_code == 413
    assert _fields(response) == ["body"]
    assert not Sample.objects.exists()


def test_answers_may_be_larger_than_other_bodies_up_to_their_own_limit(
    client, campaign, manager_token, settings
):
    settings.REQUEST_MAX_BYTES = 2048
    settings.API_MAX_BYTES = 4096
    url = f"/api/v1/campaigns/{campaign.slug}/answers"
    assert _post(client, url, {"records": [RECORDS[0]]}, manager_token).status_code == 201
    big = {"records": [{**RECORDS[0], "answer": "x" * 5000}]}
    response = _post(client, url, big, manager_token)
    assert response.status_code == 413
    assert _fields(response) == ["body"]


def test_too_many_requests_for_one_token_is_a_429_with_a_wait(client, campaign, manager_token, settings):
    cache.clear()
    settings.API_RATE_PER_TOKEN = "3/min"
    statuses = [
        client.get("/api/v1/campaigns", HTTP_AUTHORIZATION=f"Bearer {manager_token}").status_code
        for _ in range(4)
    ]
    assert statuses == [200, 200, 200, 429]
    response = client.get("/api/v1/campaigns", HTTP_AUTHORIZATION=f"Bearer {manager_token}")
    assert int(response["Retry-After"]) >= 1
    assert _fields(response) == ["Authorization"]
    other = api_token(member(campaign, "analyst"))
    assert client.get("/api/v1/campaigns", HTTP_AUTHORIZATION=f"Bearer {other}").status_code == 200
    cache.clear()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/campaigns/{slug}/samples/99999",
        "/api/v1/campaigns/nope/runs",
        "/api/v1/nothing-here",
        "/api/v1/campaigns/{slug}/estimates/nonsense",
    ],
)
def test_what_does_not_exist_is_a_json_404(client, campaign, manager_token, path):
    response = client.get(path.format(slug=campaign.slug), HTTP_AUTHORIZATION=f"Bearer {manager_token}")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert _fields(response) == ["path"]


def test_a_mistyped_id_in_the_path_is_a_400_naming_it(client, campaign, manager_token):
    response = client.get(
        f"/api/v1/campaigns/{campaign.slug}/runs/abc", HTTP_AUTHORIZATION=f"Bearer {manager_token}"
    )
    assert response.status_code == 400
    assert _fields(response) == ["run_id"]


def test_estimates_refuse_a_bad_alpha_or_method_by_name(client, campaign, manager_token):
    url = f"/api/v1/campaigns/{campaign.slug}/estimates/relevance"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {manager_token}"}
    assert _fields(client.get(url + "?alpha=2", **auth)) == ["alpha"]
    assert _fields(client.get(url + "?alpha=x", **auth)) == ["alpha"]
    assert _fields(client.get(url + "?method=magic", **auth)) == ["method"]
    assert _fields(client.get(url, **auth)) == ["judge"]  # no judge yet
    assert client.get(url + "?colour=blue", **auth).status_code == 400


def test_refused_records_name_their_row_and_field_and_nothing_is_written(client, campaign, manager_token):
    records = [dict(record) for record in RECORDS]
    records[2]["answer"] = ""
    before = table_counts()
    response = _post(
        client, f"/api/v1/campaigns/{campaign.slug}/answers", {"records": records}, manager_token
    )
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [(error["row"], error["field"]) for error in errors] == [(3, "answer")]
    assert errors[0]["file"] == "records.jsonl"
    assert table_counts() == before


def test_records_that_are_not_objects_are_refused_by_row(client, campaign, manager_token):
    response = _post(
        client, f"/api/v1/campaigns/{campaign.slug}/answers", {"records": [RECORDS[0], 7]}, manager_token
    )
    assert response.status_code == 400
    assert "records.1" in _fields(response)


def test_records_are_imported_as_an_import_file_would_be(client, campaign, manager_token):
    response = _post(
        client, f"/api/v1/campaigns/{campaign.slug}/answers", {"records": RECORDS}, manager_token
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["answers_created"] == len(RECORDS)
    assert body["campaign"] == campaign.slug
    again = _post(client, f"/api/v1/campaigns/{campaign.slug}/answers", {"records": RECORDS}, manager_token)
    assert again.status_code == 400  # the answer ids are in the campaign already
    assert _post(
        client,
        f"/api/v1/campaigns/{campaign.slug}/answers",
        {"records": RECORDS, "update": True},
        manager_token,
    ).json()["answers_replaced"] == len(RECORDS)


def test_records_are_read_in_our_format_whatever_keys_they_carry_besides(client, campaign, manager_token):
    """A record whose extra keys are those of a published dataset's (HAGRID's query, quotes and
    answers) is still one of ours: the API's records are never read in another format."""
    records = [{**record, "query": "?", "quotes": [], "answers": []} for record in RECORDS]
    response = _post(
        client, f"/api/v1/campaigns/{campaign.slug}/answers", {"records": records}, manager_token
    )
    assert response.status_code == 201, response.content
    assert response.json()["answers_created"] == len(RECORDS)


def test_a_large_batch_is_imported_by_a_worker_with_a_status_url(
    client, campaign, manager_token, settings, django_capture_on_commit_callbacks, tmp_path
):
    settings.API_SYNC_MAX_RECORDS = 2
    # A batch's file is named by its id: each test process its own folder (ids repeat across
    # the processes' databases).
    settings.VAR_DIR = tmp_path
    before = Answer.objects.count()
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = _post(
            client, f"/api/v1/campaigns/{campaign.slug}/answers", {"records": RECORDS}, manager_token
        )
    assert response.status_code == 202, response.content
    url = response.json()["url"]
    assert client.get(url, HTTP_AUTHORIZATION=f"Bearer {manager_token}").json()["status"] == "pending"
    assert Answer.objects.count() == before
    for callback in queued:
        callback()
    status = client.get(url, HTTP_AUTHORIZATION=f"Bearer {manager_token}").json()
    assert status["status"] == AnswerBatch.Status.DONE
    assert status["summary"]["answers_created"] == len(RECORDS)
    assert Answer.objects.count() == before + len(RECORDS)
    assert not batch_path(status["id"]).exists()


def test_a_refused_large_batch_reports_the_errors_and_writes_nothing(
    client, campaign, manager_token, settings, django_capture_on_commit_callbacks, tmp_path
):
    settings.API_SYNC_MAX_RECORDS = 2
    # A batch's file is named by its id: each test process its own folder (ids repeat across
    # the processes' databases).
    settings.VAR_DIR = tmp_path
    records = [dict(record) for record in RECORDS]
    records[3]["theme"] = ""
    before = Answer.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(
            client, f"/api/v1/campaigns/{campaign.slug}/answers", {"records": records}, manager_token
        )
    status = client.get(response.json()["url"], HTTP_AUTHORIZATION=f"Bearer {manager_token}").json()
    assert status["status"] == AnswerBatch.Status.FAILED
    assert [(error["row"], error["field"]) for error in status["errors"]] == [(4, "theme")]
    assert Answer.objects.count() == before


def test_a_batch_without_a_token_is_a_401_before_its_body_is_read(client, campaign, settings):
    # A declared 4 MB body of 3 bytes: the test client's payload raises if anything reads it.
    settings.API_MAX_BYTES = 8 * 1024 * 1024
    response = client.post(
        f"/api/v1/campaigns/{campaign.slug}/answers",
        data="{}x",
        content_type="application/json",
        CONTENT_LENGTH=str(4 * 1024 * 1024),
    )
    assert response.status_code == 401
    assert response["Content-Type"].startswith("application/json")
