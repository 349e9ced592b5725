"""A job the broker did not take (``annotation.broker.QueueDown``) answered with 503: a page
saying the work is recorded and starts when the queue is back, or the API's JSON refusal. The
API's own handler (``api.api``) answers its endpoints; this middleware answers every page."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme

from annotation.broker import RETRY_AFTER_S, QueueDown


class QueueDownMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, QueueDown):
            return None
        back = request.headers.get("Referer", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            back = ""
        response = render(
            request, "errors/queue_down.html", {"message": str(exception), "back": back}, status=503
        )
        response["Retry-After"] = str(RETRY_AFTER_S)
        if request.headers.get("HX-Request") == "true":
            # An htmx form shows the refusal in place of the page's content.
            response["HX-Retarget"] = "main"
            response["HX-Reswap"] = "outerHTML"
            response["HX-Reselect"] = "main"
        return response
