"""The API's refusals: every one a JSON body ``{"detail", "errors": [{"field", "message"}]}``."""

from __future__ import annotations

from collections.abc import Iterable

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import HttpRequest, JsonResponse
from django.views.defaults import page_not_found

from annotation.errors import FieldError

API_PATH = "/api/"


class ApiError(Exception):
    """A refused request: ``status`` and the fields at fault."""

    def __init__(self, status: int, detail: str, errors: Iterable[dict] = (), *, more: int = 0) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.errors = list(errors)
        self.more = more


def error_body(*, detail: str, errors: Iterable[dict] = (), more: int = 0) -> dict:
    return {"detail": detail, "errors": list(errors), "more": more}


def error_response(*, status: int, detail: str, errors: Iterable[dict] = (), more: int = 0) -> JsonResponse:
    return JsonResponse(error_body(detail=detail, errors=errors, more=more), status=status)


def form_refusal(form: forms.Form) -> ApiError:
    """A form's errors as a 400 naming each field (``body`` for an error on no one field)."""
    return ApiError(
        400,
        "invalid request",
        [
            {"field": "body" if name == NON_FIELD_ERRORS else name, "message": str(message)}
            for name, messages in form.errors.items()
            for message in messages
        ],
    )


def domain_refusal(error: Exception, *, default_field: str = "body") -> ApiError:
    """A domain function's refusal (a ValueError, a FieldError naming its field) as a 400."""
    field = error.field if isinstance(error, FieldError) and error.field else default_field
    message = str(error.reason) if isinstance(error, FieldError) else str(error)
    return ApiError(400, "invalid request", [{"field": field, "message": message}])


def not_found(request: HttpRequest, exception: Exception | None = None):
    """The 404 of the whole site: JSON under /api/ (a path no endpoint matches), the page elsewhere."""
    if request.path_info.startswith(API_PATH):
        return error_response(
            status=404, detail="not found", errors=[{"field": "path", "message": "no such endpoint"}]
        )
    return page_not_found(request, exception or Exception())
