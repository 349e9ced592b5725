"""The release gate through the API: the verdict of ``evaluation.reports.gate``, for those who read
estimates, with a baseline only among the caller's campaigns."""

from __future__ import annotations

import json

import pytest

from annotation.models import Role
from evaluation.estimates import snapshots
from evaluation.models import Judge
from evaluation.reports import gate
from tests.factories import add_member, api_token, make_campaign, make_user
from tests.judged import GATE_HIGH, GATE_LOW, judged_campaign, study_campaign


def _post(client, user, slug: str, body: dict):
    return client.post(
        f"/api/v1/campaigns/{slug}/gate",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api_token(user)}",
    )


@pytest.mark.django_db
@pytest.mark.parametrize("min_lower", [0.0, 0.99])
def test_the_api_gives_the_gates_verdict_and_figures(client, min_lower):
    campaign = make_campaign(name="Candidate")
    criterion, _, _ = judged_campaign(campaign)
    analyst = make_user(username="gate-analyst")
    add_member(campaign=campaign, user=analyst, roles=[Role.ANALYST])
    judge = Judge.objects.get(campaign=campaign).name
    # Both read the same snapshot: the same figures and the same provenance, to the second.
    snapshots.record_snapshots(criterion=criterion, trigger="import")
    response = _post(client, analyst, campaign.slug, {"criterion": criterion.name, "min_lower": min_lower})
    assert response.status_code == 200, response.content
    expected = gate.evaluate_gate(campaign=campaign, criterion=criterion, min_lower=min_lower, judge=judge)
    assert response.json() == json.loads(json.dumps(expected.as_dict()))
    assert response.json()["estimates"]["source"] == "snapshot"
    assert response.json()["passed"] is (min_lower == 0.0)


@pytest.mark.django_db
def test_a_baseline_the_caller_does_not_belong_to_is_not_named(client):
    _, old, _, _ = study_campaign(name="v1", design=GATE_HIGH)
    new_campaign, new, _, _ = study_campaign(name="v2", design=GATE_LOW)
    manager = make_user(username="gate-manager")
    add_member(campaign=new_campaign, user=manager, roles=[Role.MANAGER])
    body = {"criterion": new.name, "min_lower": 0, "baseline": old.campaign.name, "alpha": 0.1}
    refused = _post(client, manager, new_campaign.slug, body)
    unknown = _post(client, manager, new_campaign.slug, {**body, "baseline": "No such campaign"})
    # Not a member of it: as if it did not exist, 404 naming the field either way.
    assert refused.status_code == unknown.status_code == 404
    assert refused.json()["errors"][0]["field"] == unknown.json()["errors"][0]["field"] == "baseline"
    assert (
        "v1" not in refused.json()["errors"][0]["message"]
        or "does not exist" in refused.json()["errors"][0]["message"]
    )
    add_member(campaign=old.campaign, user=manager, roles=[Role.ANALYST])
    compared = _post(client, manager, new_campaign.slug, body)
    assert compared.status_code == 200, compared.content
    expected = gate.evaluate_gate(
        campaign=new_campaign, criterion=new, min_lower=0, baseline=old.campaign, alpha=0.1
    )
    assert compared.json()["passed"] is expected.passed
    assert compared.json()["reason"] == expected.reason
