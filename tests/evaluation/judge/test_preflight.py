"""The call made before a judge run starts: the real ``openai`` client against the scripted server
(tests/llm_server.py) answering as a provider does when the key, the model, the address or the
load is wrong; the page, the API and the command refuse the run with the same reason."""

from __future__ import annotations

import socket

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import translation

from annotation.models import Criterion
from evaluation.jobs import resume_judge_run, start_requested_run
from evaluation.judge import preflight, runs
from evaluation.models import Judge, JudgeRun
from tests.factories import api_token, make_answer
from tests.llm_server import ScriptedLLMServer, ServerError, Slow, Status

pytestmark = pytest.mark.django_db


@pytest.fixture
def keyless(settings):
    """No key and no server configured: the app's state out of the box."""
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = None


def _judge(campaign, *, model: str = "scripted-judge", base_url: str | None = None) -> Judge:
    """An LLM judge, not saved (as ``get_or_create_judge`` checks a judge it is about to make)."""
    return Judge(
        campaign=campaign,
        name="gpt",
        model=model,
        prompt_version="v2",
        settings={"base_url": base_url} if base_url else {},
    )


def _refusal(judge: Judge) -> runs.RunError:
    with pytest.raises(runs.RunError) as caught:
        preflight.check_judge(judge)
    return caught.value


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_judge_that_works_passes_with_one_request_of_one_token(campaign, settings):
    settings.OPENAI_API_KEY = "sk-right"
    with ScriptedLLMServer(api_key="sk-right", models=("scripted-judge",)) as server:
        preflight.check_judge(_judge(campaign, base_url=server.base_url))
        (call,) = server.calls
    assert call.path == "/v1/chat/completions"
    assert call.headers["authorization"] == "Bearer sk-right"
    assert call.body["model"] == "scripted-judge"
    assert call.body["max_tokens"] == 1
    assert call.body["temperature"] == 0.0
    assert "response_format" not in call.body and "logprobs" not in call.body


def test_the_lexical_and_imported_judges_call_nothing(campaign, keyless):
    for kind in (Judge.Kind.LEXICAL, Judge.Kind.IMPORTED):
        preflight.check_judge(Judge(campaign=campaign, name=kind, kind=kind))


def test_no_key_and_no_server_is_refused_in_the_readers_language(campaign, keyless):
    refused = _refusal(_judge(campaign))
    assert (refused.field, refused.conflict, refused.unavailable) == ("judge", True, False)
    assert str(refused) == (
        "judge: no API key is configured for 'gpt': set OPENAI_API_KEY (or OPENAI_BASE_URL for a "
        "server that needs no key), or run the 'lexical' judge"
    )
    with translation.override("fr"):
        assert str(refused).startswith("judge\u00a0: aucune clé d’API n’est configurée pour 'gpt'\u00a0: ")


def test_a_key_the_server_refuses_is_named_with_its_status(campaign, settings):
    settings.OPENAI_API_KEY = "sk-wrong"
    with ScriptedLLMServer(api_key="sk-right") as server:
        refused = _refusal(_judge(campaign, base_url=server.base_url))
        assert len(server.calls) == 1
    assert refused.field == "judge" and refused.conflict
    assert str(refused).startswith(f"judge: the server at {server.base_url} refused the API key (HTTP 401: ")
    assert "Incorrect API key provided: sk-***" in str(refused)
    with translation.override("fr"):
        assert f"le serveur {server.base_url} a refusé la clé d’API (HTTP 401\u00a0: " in str(refused)


def test_a_server_that_wants_a_key_when_none_is_configured_says_so(campaign, keyless):
    with ScriptedLLMServer(api_key="sk-right") as server:
        refused = _refusal(_judge(campaign, base_url=server.base_url))
    assert str(refused) == (
        f"judge: the server at {server.base_url} asks for an API key and none is configured "
        "(HTTP 401): set OPENAI_API_KEY"
    )


def test_a_model_the_server_does_not_have_is_refused_on_the_model_field(campaign, settings):
    settings.OPENAI_API_KEY = "sk-right"
    with ScriptedLLMServer(models=("gpt-4o-mini",)) as server:
        refused = _refusal(_judge(campaign, model="gpt-4o-mni", base_url=server.base_url))
    assert refused.field == "model" and refused.conflict
    assert str(refused).startswith(
        f"model: the model 'gpt-4o-mni' does not exist on the server at {server.base_url} (HTTP 404: "
    )
    assert "does not exist or you do not have access to it" in str(refused)


def test_an_address_without_chat_completions_is_told_apart_from_a_missing_model(campaign, settings):
    settings.OPENAI_API_KEY = "sk-right"
    with ScriptedLLMServer() as server:
        root = server.base_url.removesuffix("/v1")
        refused = _refusal(_judge(campaign, base_url=root))
    assert refused.field == "judge"
    assert str(refused) == (
        f"judge: the server at {root} has no chat completions at that address "
        "(HTTP 404: no route /chat/completions): check the base URL"
    )


def test_a_server_that_cannot_be_reached_is_named(campaign, settings):
    settings.OPENAI_API_KEY = "sk-right"
    address = f"http://127.0.0.1:{_closed_port()}/v1"
    refused = _refusal(_judge(campaign, base_url=address))
    assert refused.field == "judge" and refused.conflict and not refused.unavailable
    assert str(refused).startswith(f"judge: the server at {address} cannot be reached (")
    assert "refused" in str(refused).lower()


def test_a_server_that_does_not_answer_in_time_cannot_be_reached(campaign, settings):
    settings.OPENAI_API_KEY = "sk-right"
    settings.JUDGE_PREFLIGHT_TIMEOUT_S = 0.2
    with ScriptedLLMServer() as server:
        server.enqueue(Slow(seconds=2))
        refused = _refusal(_judge(campaign, base_url=server.base_url))
        assert len(server.calls) == 1
    assert str(refused) == f"judge: the server at {server.base_url} cannot be reached: no reply within 0.2 s"
    with translation.override("fr"):
        assert str(refused).endswith("aucune réponse en 0,2\u00a0s")


@pytest.mark.parametrize(
    ("fault", "said"),
    [("429", "HTTP 429: Rate limit reached"), (ServerError(status=503), "HTTP 503: The server had an error")],
)
def test_a_busy_server_is_reported_as_busy_after_one_request(campaign, settings, fault, said):
    settings.OPENAI_API_KEY = "sk-right"
    with ScriptedLLMServer() as server:
        server.enqueue(fault)
        refused = _refusal(_judge(campaign, base_url=server.base_url))
        assert len(server.calls) == 1  # no retry: the person is told at once
        # Busy for now, not for good: the same check passes once the server answers.
        preflight.check_judge(_judge(campaign, base_url=server.base_url))
    assert refused.unavailable and not refused.conflict
    assert str(refused) == f"judge: the server at {server.base_url} is busy ({said}): try again in a moment"
    with translation.override("fr"):
        assert "est occupé" in str(refused) and "réessayez dans un instant" in str(refused)


def test_any_other_refusal_is_quoted_briefly(campaign, settings):
    settings.OPENAI_API_KEY = "sk-right"
    with ScriptedLLMServer() as server:
        server.enqueue(Status(400, "temperature is not supported by this model; " + "x" * 600))
        refused = _refusal(_judge(campaign, base_url=server.base_url))
    text = str(refused)
    assert text.startswith(
        f"judge: the server at {server.base_url} refused the request (HTTP 400: temperature is not supported"
    )
    assert text.endswith("…)") and len(text) < 320


def test_a_server_that_refuses_max_tokens_is_asked_again_without_it(campaign, settings):
    settings.OPENAI_API_KEY = "sk-right"
    with ScriptedLLMServer() as server:
        server.enqueue(
            Status(
                400,
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
            )
        )
        preflight.check_judge(_judge(campaign, base_url=server.base_url))
        first, second = server.requests
    assert first["max_tokens"] == 1 and "max_tokens" not in second


# Every road that starts a run: a refused judge is not made, nothing is started.


@pytest.fixture
def answered(campaign):
    make_answer(campaign=campaign)
    return Criterion.objects.get(campaign=campaign, name="relevance")


def _request(criterion, **changes) -> dict:
    return {
        "criterion": criterion,
        "judge": "gpt",
        "model": "",
        "scope": JudgeRun.Scope.ALL,
        "concurrency": None,
        "token_budget": None,
        **changes,
    }


def test_a_refused_judge_is_not_made_and_the_same_name_then_takes_another_model(
    campaign, answered, settings, django_capture_on_commit_callbacks
):
    settings.OPENAI_API_KEY = "sk-right"
    with ScriptedLLMServer(models=("gpt-4o-mini",)) as server:
        settings.OPENAI_BASE_URL = server.base_url
        with pytest.raises(runs.RunError, match="model 'gpt-4o-mni' does not exist"):
            start_requested_run(campaign=campaign, request=_request(answered, model="gpt-4o-mni"))
        assert not Judge.objects.exists() and not JudgeRun.objects.exists()
        with django_capture_on_commit_callbacks(execute=True):
            run = start_requested_run(campaign=campaign, request=_request(answered, model="gpt-4o-mini"))
    run.refresh_from_db()
    assert run.judge.model == "gpt-4o-mini"
    assert (run.status, run.done_units, run.failed_units) == (JudgeRun.Status.DONE, 1, 0)


def test_the_run_page_refuses_the_run_on_its_form_and_keeps_what_was_typed(
    client_for, manager, campaign, answered, keyless
):
    url = reverse("evaluation:run_list", args=[campaign.slug])
    sent = {"criterion": "relevance", "judge": "gpt", "model": "gpt-4o", "scope": "all"}
    response = client_for(manager).post(url, sent)
    assert response.status_code == 400
    page = response.content.decode()
    assert "judge: no API key is configured for &#x27;gpt&#x27;" in page
    assert 'name="judge" id="judge" list="judge-names" value="gpt"' in page
    assert 'name="model" id="model" value="gpt-4o"' in page
    assert not Judge.objects.exists() and not JudgeRun.objects.exists()
    french = client_for(manager).post(url, sent, headers={"Accept-Language": "fr"})
    assert "aucune clé d’API n’est configurée pour &#x27;gpt&#x27;" in french.content.decode()


def test_the_api_refuses_the_run_with_a_json_error_naming_the_field(
    client, manager, campaign, answered, settings
):
    settings.OPENAI_API_KEY = "sk-right"
    url = f"/api/v1/campaigns/{campaign.slug}/runs"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {api_token(manager)}"}
    with ScriptedLLMServer(models=("gpt-4o-mini",)) as server:
        settings.OPENAI_BASE_URL = server.base_url
        missing = client.post(
            url,
            {"criterion": "relevance", "judge": "gpt", "model": "nope"},
            content_type="application/json",
            **auth,
        )
        server.enqueue("429")
        busy = client.post(
            url, {"criterion": "relevance", "judge": "gpt"}, content_type="application/json", **auth
        )
    assert missing.status_code == 409
    (error,) = missing.json()["errors"]
    assert error["field"] == "model"
    assert error["message"].startswith(f"the model 'nope' does not exist on the server at {server.base_url}")
    assert busy.status_code == 503 and busy["Retry-After"] == "10"
    assert busy.json()["errors"] == [
        {
            "field": "judge",
            "message": f"the server at {server.base_url} is busy (HTTP 429: Rate limit reached): "
            "try again in a moment",
        }
    ]
    assert not JudgeRun.objects.exists()


def test_the_api_says_no_key_in_the_callers_language(client, manager, campaign, answered, keyless):
    response = client.post(
        f"/api/v1/campaigns/{campaign.slug}/runs",
        {"criterion": "relevance", "judge": "gpt"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api_token(manager)}",
        HTTP_ACCEPT_LANGUAGE="fr",
    )
    assert response.status_code == 409
    assert response.json()["errors"][0]["field"] == "judge"
    assert response.json()["errors"][0]["message"].startswith("aucune clé d’API n’est configurée")


def test_the_judge_command_refuses_the_run(campaign, answered, keyless):
    with pytest.raises(CommandError, match="^judge: no API key is configured for 'gpt'"):
        call_command("judge", campaign=campaign.name, criterion="relevance", judge="gpt")
    assert not Judge.objects.exists() and not JudgeRun.objects.exists()


def test_a_run_is_not_resumed_while_its_server_cannot_be_reached(campaign, answered, settings):
    settings.OPENAI_API_KEY = "sk-right"
    with ScriptedLLMServer() as server:
        judge = runs.get_or_create_judge(campaign=campaign, name="gpt", base_url=server.base_url)
        run = runs.cancel_run(run_id=runs.create_run(criterion=answered, judge=judge).pk)
    with pytest.raises(runs.RunError, match="cannot be reached"):
        resume_judge_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.CANCELLED
