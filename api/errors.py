"""The API's refusals: every one a JSON body ``{"detail", "errors": [{"field", "message"}]}``."""

from __future__ import annotations

from collections.abc import Iterable

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import HttpRequest, JsonResponse
from django.views.defaults import page_not_found

from annotation.errors import FieldError

API_PATH = "/api/"
# Seconds a client waits before sending again a request refused because a service it needs is busy.
UNAVAILABLE_RETRY_AFTER_S = 10


class ApiError(Exception):
    """A refused request: ``status`` and the fields at fault."""

    def __init__(
        self,
        status: int,
        detail: str,
        errors: Iterable[dict] = (),
        *,
        more: int = 0,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.errors = list(errors)
        self.more = more
        # Sent as Retry-After: when the same request may succeed.
        self.retry_after_s = retry_after_s


def error_body(*, detail: str, errors: Iterable[dict] = (), more: int = 0) -> dict:
    return {"detail": detail, "errors": list(errors), "more": more}


def error_response(*, status: int, detail: str, errors: Iterable[dict] = (), more: int = 0) -> JsonResponse:
    return JsonResponse(error_body(detail=detail, errors=errors, more=more), status=status)


def form_refusal(form: forms.Form) -> ApiError:
    """A form's errors as a 400 naming each field (``body`` for an error on no one field); a 404
    when each is a name that matches none of the campaign's (a criterion, say: a model choice
    not found), as for what does not exist in a path."""
    found = form.errors.as_data()
    missing = all(
        isinstance(form.fields.get(name), forms.ModelChoiceField)
        and all(error.code == "invalid_choice" for error in errors)
        for name, errors in found.items()
    )
    return ApiError(
        404 if missing else 400,
        "not found" if missing else "invalid request",
        [
            {"field": "body" if name == NON_FIELD_ERRORS else name, "message": str(message)}
            for name, messages in form.errors.items()
            for message in messages
        ],
    )


def domain_refusal(error: Exception, *, default_field: str = "body") -> ApiError:
    """A domain function's refusal (a ValueError, a FieldError naming its field) as a 400; a 404
    when the field names nothing that exists (``FieldError.missing``), a 409 when it clashes with
    what exists or the state it is in (``FieldError.conflict``), a 503 with ``Retry-After`` when
    a service it needs is busy for now (``FieldError.unavailable``)."""
    field = error.field if isinstance(error, FieldError) and error.field else default_field
    message = str(error.reason) if isinstance(error, FieldError) else str(error)
    errors = [{"field": field, "message": message}]
    if isinstance(error, FieldError) and error.missing:
        return ApiError(404, "not found", errors)
    if isinstance(error, FieldError) and error.conflict:
        return ApiError(409, "conflict", errors)
    if isinstance(error, FieldError) and error.unavailable:
        return ApiError(503, "unavailable", errors, retry_after_s=UNAVAILABLE_RETRY_AFTER_S)
    return ApiError(400, "invalid request", errors)


def not_found(request: HttpRequest, exception: Exception | None = None):
    """The 404 of the whole site: JSON under /api/ (a path no endpoint matches), the page elsewhere."""
    if request.path_info.startswith(API_PATH):
        return error_response(
            status=404, detail="not found", errors=[{"field": "path", "message": "no such endpoint"}]
        )
    return page_not_found(request, exception or Exception())
