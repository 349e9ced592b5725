"""The REST API (``/api/v1/``): django-ninja, personal bearer tokens, one throttle per token.

Every refusal is JSON (``api.errors``): 400 naming the field, 401 without a valid token, 403 to
a member lacking the role, 404 to outsiders and for what does not exist (as the pages do), 413
for a body over its limit (``config.middleware``), 429 past the token's rate.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, Throttled, ValidationError
from ninja.security import HttpBearer
from ninja.throttling import SimpleRateThrottle

from api.errors import ApiError, error_response
from api.models import ApiToken
from api.tokens import authenticate


class BearerToken(HttpBearer):
    """``Authorization: Bearer <token>``: the request's ``auth`` is the token, its ``user`` the
    token's person (what the access helper is given)."""

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        found = authenticate(secret=token.strip())
        if found is not None:
            request.user = found.user
        return found


class TokenThrottle(SimpleRateThrottle):
    """At most API_RATE_PER_TOKEN requests per token (the rate read at each request, so a
    changed setting applies at once). Counts live in Django's cache: with several processes,
    configure a shared cache or the rate applies per process."""

    scope = "token"

    def __init__(self) -> None:
        super().__init__(rate=settings.API_RATE_PER_TOKEN)

    def get_cache_key(self, request: HttpRequest) -> str | None:
        token = getattr(request, "auth", None)
        if not isinstance(token, ApiToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": token.digest}

    def allow_request(self, request: HttpRequest) -> bool:
        self.rate = settings.API_RATE_PER_TOKEN
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request)


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
    return error_response(status=exc.status, detail=exc.detail, errors=exc.errors, more=exc.more)


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
