"""Request bodies bounded before they are read.

The app runs behind no proxy (a plain gunicorn, as in the README), so nothing else stops an
anonymous client from making a worker read and spool a body of any size. The declared
``Content-Length`` is checked before anything reads the body: imports may send up to
IMPORT_MAX_BYTES, the API's batches of answers up to API_MAX_BYTES, every other request up to
REQUEST_MAX_BYTES. A body sent without a
Content-Length (chunked) is not read by Django at all (it reads CONTENT_LENGTH bytes, none).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.utils.translation import gettext as _

# The pages that take an import file (multipart uploads).
UPLOAD_VIEWS = frozenset({"evaluation:import_new", "evaluation:import_into"})
# The API's batches of answer records (JSON), up to API_MAX_BYTES.
API_BATCH_VIEWS = frozenset({"api-v1:answers"})
API_PATH = "/api/"


def body_limit(*, path: str) -> int:
    """The largest body, in bytes, a request to ``path`` may declare: an import file plus the
    rest of its form on the import pages, REQUEST_MAX_BYTES anywhere else."""
    try:
        name = resolve(path).view_name
    except Resolver404:
        name = ""
    if name in UPLOAD_VIEWS:
        return settings.IMPORT_MAX_BYTES + settings.REQUEST_MAX_BYTES
    if name in API_BATCH_VIEWS:
        return settings.API_MAX_BYTES
    return settings.REQUEST_MAX_BYTES


def declared_length(*, request: HttpRequest) -> int | None:
    """The request's Content-Length as a number of bytes; None when absent; ValueError when it
    is not a non-negative integer."""
    raw = request.META.get("CONTENT_LENGTH", "")
    if raw in ("", None):
        return None
    value = str(raw).strip()
    if not value.isdigit():
        raise ValueError(value)
    return int(value)


class RequestBodyLimitMiddleware:
    """Answer 413 to a request declaring a body over its limit, 400 to a malformed
    Content-Length, before the body is read. Must come before anything that reads
    ``request.POST`` or ``request.body`` (the CSRF middleware does)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = declared_length(request=request)
        except ValueError:
            message = _("The request's Content-Length header is not a number of bytes.")
            return _refusal(request, message, status=400)
        # Only a body over the small limit needs the path's own limit: most requests skip the
        # URL resolution (the handler resolves the path again anyway).
        if length is None or length <= settings.REQUEST_MAX_BYTES:
            return self.get_response(request)
        limit = body_limit(path=request.path_info)
        if length > limit:
            message = _("This request is %(length)s bytes; this page accepts at most %(limit)s bytes.") % {
                "length": length,
                "limit": limit,
            }
            return _refusal(request, message, status=413)
        return self.get_response(request)


def _refusal(request: HttpRequest, message: str, *, status: int) -> HttpResponse:
    if request.path_info.startswith(API_PATH):
        # The API answers JSON, naming what was refused.
        body = {"detail": message, "errors": [{"field": "body", "message": message}], "more": 0}
        return JsonResponse(body, status=status)
    response = render(request, "errors/request_body.html", {"message": message}, status=status)
    if request.headers.get("HX-Request") == "true":
        # An htmx form (the import page) shows the refusal in place of the page's content.
        response["HX-Retarget"] = "main"
        response["HX-Reswap"] = "outerHTML"
        response["HX-Reselect"] = "main"
    return response
