"""The 400, 403, 404 and 500 pages through Django's real handlers (DEBUG off), and what a refused
request writes to the log."""

from __future__ import annotations

import io
import logging

import pytest
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.test import Client, override_settings
from django.urls import include, path, reverse

from tests.factories import make_user


def refuse(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied


def missing(request: HttpRequest) -> HttpResponse:
    raise Http404


def suspicious(request: HttpRequest) -> HttpResponse:
    raise SuspiciousOperation("a tampered request")


def broken(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug")


urlpatterns = [
    path("refuse/", refuse),
    path("missing/", missing),
    path("suspicious/", suspicious),
    path("broken/", broken),
    path("", include("config.urls")),
]

pytestmark = [pytest.mark.django_db]
on_these_urls = override_settings(DEBUG=False, ROOT_URLCONF=__name__)


@on_these_urls
@pytest.mark.parametrize(
    ("url", "status", "title"),
    [
        ("/refuse/", 403, "Access refused"),
        ("/missing/", 404, "Page not found"),
        ("/no/such/page/", 404, "Page not found"),
        ("/suspicious/", 400, "Bad request"),
        ("/broken/", 500, "Server error"),
    ],
)
def test_error_pages_are_the_app_s_own_with_a_way_back(url, status, title):
    client = Client(raise_request_exception=False)
    client.force_login(make_user(username="claire"))
    response = client.get(url)
    assert response.status_code == status
    html = response.content.decode()
    assert f'<h1 id="error-title">{title}</h1>' in html
    assert 'href="/static/css/app.css"' in html or "app." in html
    assert f'href="{reverse("evaluation:campaign_list")}"' in html
    assert "Back to the campaigns" in html


@on_these_urls
def test_the_404_page_speaks_french_to_a_french_browser():
    response = Client().get("/no/such/page/", headers={"accept-language": "fr"})
    assert response.status_code == 404
    assert '<html lang="fr">' in response.content.decode()


@on_these_urls
def test_a_member_without_the_role_gets_the_styled_403(campaign, annotator):
    client = Client()
    client.force_login(annotator)
    response = client.get(reverse("annotation:sampling", args=[campaign.slug]))
    assert response.status_code == 403
    assert "Access refused" in response.content.decode()


def console_output(url: str) -> str:
    """What the django.request logger prints, through a handler like the console's, for ``url``."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    client = Client(raise_request_exception=False)
    client.force_login(make_user())
    try:
        client.get(url)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


@on_these_urls
def test_a_refused_request_logs_one_line_without_a_traceback():
    printed = console_output("/refuse/")
    assert printed == "Forbidden (Permission denied): /refuse/\n"
    assert "Traceback" not in console_output("/missing/")


@on_these_urls
def test_a_server_error_keeps_its_traceback():
    printed = console_output("/broken/")
    assert printed.startswith("Internal Server Error: /broken/")
    assert "Traceback" in printed and "RuntimeError: a bug" in printed
