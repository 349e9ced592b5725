"""The gate's judge drift option: off by default; on, a release whose judge's agreement with the
human labels changed beyond chance fails, in the function, the command and the API."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core.management import call_command

from annotation.models import Criterion, Role
from evaluation.models import Judge
from evaluation.reports import gate
from tests.evaluation.measures.test_judge_alignment import labelled
from tests.factories import add_member, api_token, make_campaign, make_user


def drifting(*, steady: bool = False):
    """A judge right on every unit in October, and in November wrong on every unit labelled 1
    (or right again, ``steady``)."""
    campaign = make_campaign(name="Candidate")
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    labelled(campaign, [(1, 1), (0, 0)] * 15, judge=judge, at=datetime(2026, 10, 5, tzinfo=UTC))
    later = [(1, 1), (0, 0)] if steady else [(1, 0), (0, 0)]
    labelled(campaign, later * 15, judge=judge, at=datetime(2026, 11, 5, tzinfo=UTC))
    return campaign, Criterion.objects.get(campaign=campaign, name="relevance")


@pytest.mark.django_db
def test_a_drifted_judge_fails_the_gate_only_when_asked():
    campaign, criterion = drifting()
    default = gate.evaluate_gate(campaign=campaign, criterion=criterion, min_lower=0.0)
    assert default.passed and default.judge_drift is None
    assert default.as_dict()["judge_drift"] is None
    strict = gate.evaluate_gate(
        campaign=campaign, criterion=criterion, min_lower=0.0, refuse_judge_drift=True
    )
    assert not strict.passed
    # 30 right of 30 (Wilson [88.6%, 100%]), then 15 of 30: Newcombe's interval of the change.
    assert strict.reason == (
        "judge gpt drifted: agreement with the human labels 2026-10 -> 2026-11: -0.500 [-0.668, -0.297]"
    )
    (drift,) = strict.as_dict()["judge_drift"]
    assert drift["kind"] == "month" and drift["change"] == pytest.approx(-0.5) and drift["change_upper"] < 0


@pytest.mark.django_db
def test_a_steady_judge_passes_with_the_option():
    campaign, criterion = drifting(steady=True)
    result = gate.evaluate_gate(
        campaign=campaign, criterion=criterion, min_lower=0.0, refuse_judge_drift=True
    )
    assert result.passed and result.judge_drift == ()
    assert result.reason.endswith("; judge gpt did not drift")


@pytest.mark.django_db
def test_the_command_and_the_api_take_the_option(client, capsys):
    campaign, criterion = drifting()
    args = ["gate", "--campaign", campaign.name, "--criterion", "relevance", "--min-lower", "0"]
    call_command(*args)
    assert "PASS" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_code:
        call_command(*args, "--refuse-judge-drift")
    assert exit_code.value.code == 1
    assert "FAIL: judge gpt drifted" in capsys.readouterr().out
    analyst = make_user(username="gate-analyst")
    add_member(campaign=campaign, user=analyst, roles=[Role.ANALYST])
    response = client.post(
        f"/api/v1/campaigns/{campaign.slug}/gate",
        data=json.dumps({"criterion": "relevance", "min_lower": 0, "refuse_judge_drift": True}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api_token(analyst)}",
    )
    assert response.status_code == 200, response.content
    assert response.json()["passed"] is False and len(response.json()["judge_drift"]) == 1
