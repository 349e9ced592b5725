"""The REST API (``/api/v1/``): django-ninja, personal bearer tokens, one throttle per token.

Every refusal is JSON (``api.errors``): 400 naming the field, 401 without a valid token, 403 to
a member lacking the role, 404 to outsiders and for what does not exist (as the pages do; a name
in a body that matches nothing too), 409 for what clashes with what exists, 413 for a body over
its limit (``config.middleware``), 429 past the token's rate.
"""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, Throttled, ValidationError
from ninja.security import HttpBearer

from annotation.broker import RETRY_AFTER_S, QueueDown
from api.errors import ApiError, error_response
from api.models import ApiToken
from api.throttle import TokenThrottle
from api.tokens import authenticate


class BearerToken(HttpBearer):
    """``Authorization: Bearer <token>``: the request's ``auth`` is the token, its ``user`` the
    token's person (what the access helper is given)."""

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        found = authenticate(secret=token.strip())
        if found is not None:
            request.user = found.user
        return found


logger = logging.getLogger(__name__)

api = NinjaAPI(
    title="Attest API",
    version="1",
    description="Campaigns, answers, samples, judge runs, estimates, labels and judgments (docs/api.md).",
    auth=BearerToken(),
    throttle=[TokenThrottle()],
    urls_namespace="api-v1",
    docs_url="/docs",
)


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError):
    response = error_response(status=exc.status, detail=exc.detail, errors=exc.errors, more=exc.more)
    if exc.retry_after_s is not None:
        response["Retry-After"] = str(exc.retry_after_s)
    return response


def _field(loc: list | tuple) -> str:
    # ("body", "data", "budget") -> "budget"; ("query", "page") -> "page"; ("body", "data") -> "body".
    parts = (
        [str(part) for part in loc[1:] if part != "data"]
        if loc and loc[0] == "body"
        else [str(p) for p in loc[1:]]
    )
    return ".".join(parts) or "body"


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError):
    errors = [
        {"field": _field(error.get("loc", ())), "message": str(error.get("msg", "invalid"))}
        for error in exc.errors
    ]
    return error_response(status=400, detail="invalid request", errors=errors)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError):
    response = error_response(
        status=401,
        detail="missing, unknown or revoked token",
        errors=[{"field": "Authorization", "message": "send Authorization: Bearer <token>, an active token"}],
    )
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(Throttled)
def _throttled(request: HttpRequest, exc: Throttled):
    response = error_response(
        status=429,
        detail="too many requests for this token",
        errors=[{"field": "Authorization", "message": "wait before the next request"}],
    )
    if exc.wait:
        response["Retry-After"] = str(max(1, int(exc.wait + 0.999)))
    return response


@api.exception_handler(Exception)
def _server_error(request: HttpRequest, exc: Exception):
    """Anything else: logged with its traceback, answered JSON as every refusal of the API."""
    logger.error("API error on %s %s", request.method, request.path, exc_info=exc)
    return error_response(
        status=500,
        detail="server error",
        errors=[{"field": "body", "message": "something went wrong on our side; try again in a moment"}],
    )


@api.exception_handler(QueueDown)
def _queue_down(request: HttpRequest, exc: QueueDown):
    response = error_response(
        status=503,
        detail="the job queue does not answer",
        errors=[{"field": "body", "message": str(exc)}],
    )
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404):
    return error_response(
        status=404, detail="not found", errors=[{"field": "path", "message": str(exc) or "not found"}]
    )


@api.exception_handler(PermissionDenied)
def _forbidden(request: HttpRequest, exc: PermissionDenied):
    return error_response(
        status=403, detail="forbidden", errors=[{"field": "path", "message": str(exc) or "forbidden"}]
    )


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError):
    # django-ninja raises 400 "Cannot parse request body" for malformed JSON.
    field = "body" if exc.status_code == 400 else "path"
    return error_response(
        status=exc.status_code, detail=str(exc), errors=[{"field": field, "message": str(exc)}]
    )
