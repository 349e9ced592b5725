"""The page a person sees when too many failed logins paused their username."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def locked_out(request: HttpRequest, original_response=None, credentials=None) -> HttpResponse:
    """django-axes' AXES_LOCKOUT_CALLABLE: the lockout page, in the person's language, with
    HTTP 429 and a Retry-After header, for the app's login and the admin's alike."""
    cooloff = settings.AXES_COOLOFF_TIME
    context = {
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "minutes": max(1, round(cooloff.total_seconds() / 60)),
    }
    response = render(
        request, "registration/locked_out.html", context, status=settings.AXES_HTTP_RESPONSE_CODE
    )
    response["Retry-After"] = str(int(cooloff.total_seconds()))
    return response
