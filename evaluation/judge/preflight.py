"""Before a run of an LLM judge starts or resumes: one small call to its server, with the key, the
address and the model the run would use, so that a judge that cannot work is refused with the
reason instead of failing every unit of a run that then reads "Done".

The call goes through ``evaluation.judge.client`` (``JudgeClient.probe``: one token asked of the
model, one attempt, ``JUDGE_PREFLIGHT_TIMEOUT_S``); the failure's kind, HTTP status and code
(``integrations.openai_compatible``'s mapping) decide the reason, said in the reader's language:
no key configured; the key refused (401, 403); the model unknown to the server (404); the server
out of reach (connection refused, timeout); the server busy (429, 5xx: try again in a moment,
``unavailable``, not a refusal for good); anything else quoted briefly. The offline lexical judge
and the judge of imported labels call no server and are never checked.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.utils.formats import get_format
from django.utils.functional import lazy
from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from evaluation.judge.client import (
    REFUSED,
    TIMEOUT,
    UNREACHABLE,
    JudgeClient,
    JudgeClientError,
    TransientError,
)
from evaluation.judge.judging import NO_KEY, NoServer, server_of
from evaluation.judge.runs import RunError
from evaluation.models import Judge

logger = logging.getLogger(__name__)

# The most characters of a server's message a refusal quotes.
QUOTED = 200


def check_judge(judge: Judge) -> None:
    """Return when ``judge`` can be called (or calls no server); else raise ``RunError`` with the
    reason, on field ``model`` for a model the server does not know and ``judge`` otherwise:
    ``unavailable`` when the server is busy for now, ``conflict`` for the rest (the API's 503 and
    409). ``judge`` may be unsaved (a judge about to be made). Sends at most one request, with a
    reply of one token, outside any transaction; records nothing."""
    if judge.kind != Judge.Kind.OPENAI:
        return
    try:
        base_url, api_key = server_of(judge)
    except NoServer:
        raise RunError(
            refusal(
                _(
                    "judge: no API key is configured for %(judge)s: set OPENAI_API_KEY (or "
                    "OPENAI_BASE_URL for a server that needs no key), or run the 'lexical' judge"
                ),
                judge=repr(judge.name),
            ),
            field="judge",
            conflict=True,
        ) from None
    address = base_url or "https://api.openai.com/v1"
    try:
        with JudgeClient(
            base_url=base_url,
            api_key=api_key,
            model=judge.model,
            temperature=judge.temperature,
            timeout_s=settings.JUDGE_PREFLIGHT_TIMEOUT_S,
            max_attempts=1,
            response_format="none",
            shared=True,
        ) as client:
            address = client.base_url
            client.probe()
    except JudgeClientError as exc:
        logger.info("judge %s refused before its run: %s", judge.name, exc)
        raise _refusal(exc, judge=judge, address=address, keyless=api_key == NO_KEY) from None


def _refusal(exc: JudgeClientError, *, judge: Judge, address: str, keyless: bool) -> RunError:
    kind, status = exc.kind, exc.status
    detail = _quoted(exc.detail or str(exc))
    if isinstance(exc, TransientError) and kind not in (TIMEOUT, UNREACHABLE):
        busy = (
            refusal(
                _(
                    "judge: the server at %(url)s is busy (HTTP %(status)s: %(detail)s): "
                    "try again in a moment"
                ),
                url=address,
                status=status,
                detail=detail,
            )
            if status is not None
            else refusal(
                _("judge: the server at %(url)s is busy (%(detail)s): try again in a moment"),
                url=address,
                detail=detail,
            )
        )
        return RunError(busy, field="judge", unavailable=True)
    if kind == TIMEOUT:
        message = refusal(
            _("judge: the server at %(url)s cannot be reached: no reply within %(seconds)s s"),
            url=address,
            seconds=_seconds(settings.JUDGE_PREFLIGHT_TIMEOUT_S),
        )
    elif kind == UNREACHABLE:
        message = refusal(
            _("judge: the server at %(url)s cannot be reached (%(detail)s)"), url=address, detail=detail
        )
    elif kind == REFUSED and status in (401, 403) and keyless:
        message = refusal(
            _(
                "judge: the server at %(url)s asks for an API key and none is configured "
                "(HTTP %(status)s): set OPENAI_API_KEY"
            ),
            url=address,
            status=status,
        )
    elif kind == REFUSED and status in (401, 403):
        message = refusal(
            _("judge: the server at %(url)s refused the API key (HTTP %(status)s: %(detail)s)"),
            url=address,
            status=status,
            detail=detail,
        )
    elif kind == REFUSED and status == 404 and _about_the_model(exc):
        return RunError(
            refusal(
                _(
                    "model: the model %(model)s does not exist on the server at %(url)s "
                    "(HTTP 404: %(detail)s)"
                ),
                model=repr(judge.model),
                url=address,
                detail=detail,
            ),
            field="model",
            conflict=True,
        )
    elif kind == REFUSED and status == 404:
        message = refusal(
            _(
                "judge: the server at %(url)s has no chat completions at that address "
                "(HTTP 404: %(detail)s): check the base URL"
            ),
            url=address,
            detail=detail,
        )
    elif kind == REFUSED:
        message = refusal(
            _("judge: the server at %(url)s refused the request (HTTP %(status)s: %(detail)s)"),
            url=address,
            status=status,
            detail=detail,
        )
    else:
        message = refusal(
            _("judge: the server at %(url)s gave no usable reply (%(detail)s)"), url=address, detail=detail
        )
    return RunError(message, field="judge", conflict=True)


def _about_the_model(exc: JudgeClientError) -> bool:
    """A 404 about the model (OpenAI's ``model_not_found``; vLLM's and Ollama's messages name
    the model), not about the address (a base URL without ``/v1``)."""
    return exc.code == "model_not_found" or "model" in exc.detail.lower()


def _in_seconds(value: float) -> str:
    return f"{value:g}".replace(".", str(get_format("DECIMAL_SEPARATOR")))


# Seconds written as the reader writes them (0.2 s, 0,2 s), when the refusal is read.
_seconds = lazy(_in_seconds, str)


def _quoted(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTED else text[: QUOTED - 1] + "…"
