"""Request bodies are refused from their declared length, before anything reads them."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from config.middleware import body_limit

pytestmark = pytest.mark.django_db

GIGABYTE = str(1024**3)


def test_a_huge_declared_body_to_the_login_page_is_413_and_never_read(client):
    # The test client's payload would raise if more than its 3 bytes were read.
    response = client.post(
        reverse("login"),
        data="a=b",
        content_type="application/x-www-form-urlencoded",
        CONTENT_LENGTH=GIGABYTE,
    )
    assert response.status_code == 413
    assert f"This request is {GIGABYTE} bytes" in response.content.decode()


def test_a_body_just_under_the_small_limit_goes_through(client, settings):
    settings.REQUEST_MAX_BYTES = 2048
    data = "username=x&password=" + "y" * (2048 - len("username=x&password="))
    response = client.post(reverse("login"), data=data, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200
    assert response.context["form"].errors


def test_one_byte_over_the_small_limit_is_413(client, settings):
    settings.REQUEST_MAX_BYTES = 2048
    response = client.post(reverse("login"), data="x" * 2049, content_type="text/plain")
    assert response.status_code == 413


def test_import_pages_take_an_import_file_and_other_pages_the_small_limit(settings, campaign):
    settings.IMPORT_MAX_BYTES = 10_000_000
    settings.REQUEST_MAX_BYTES = 1_000_000
    assert body_limit(path=reverse("evaluation:import_new")) == 11_000_000
    assert body_limit(path=reverse("evaluation:import_into", args=[campaign.slug])) == 11_000_000
    assert body_limit(path=reverse("login")) == 1_000_000
    assert body_limit(path="/admin/login/") == 1_000_000
    assert body_limit(path="/no/such/page/") == 1_000_000


def test_an_import_over_its_limit_is_413_before_login_or_csrf(client, settings):
    settings.IMPORT_MAX_BYTES = 1024
    settings.REQUEST_MAX_BYTES = 1024
    response = client.post(
        reverse("evaluation:import_new"),
        data="x",
        content_type="multipart/form-data; boundary=b",
        CONTENT_LENGTH="2049",
    )
    assert response.status_code == 413


@pytest.mark.parametrize("value", ["abc", "-5", "1e9", "12 34"])
def test_a_malformed_content_length_is_400(client, value):
    response = client.post(reverse("login"), data="a=b", content_type="text/plain", CONTENT_LENGTH=value)
    assert response.status_code == 400
    assert "Content-Length" in response.content.decode()


def test_requests_without_a_body_are_untouched(client):
    assert client.get(reverse("login")).status_code == 200


def test_the_refusal_is_in_the_persons_language(client):
    response = client.post(
        reverse("login"),
        data="a=b",
        content_type="text/plain",
        CONTENT_LENGTH=GIGABYTE,
        HTTP_ACCEPT_LANGUAGE="fr",
    )
    assert response.status_code == 413
    assert "Requête refusée" in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_live_server_answers_413_without_waiting_for_the_body(live_server):
    """Headers claiming 1 GB and three bytes of body: the answer comes while the client still
    owes almost all of it (the socket's timeout only keeps a broken server from hanging the
    test)."""
    address = urlsplit(live_server.url)
    with socket.create_connection((address.hostname, address.port), timeout=30) as conn:
        conn.sendall(
            (
                f"POST {reverse('login')} HTTP/1.1\r\nHost: {address.netloc}\r\n"
                f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {GIGABYTE}\r\n\r\na=b"
            ).encode()
        )
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = conn.recv(4096)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_an_htmx_form_gets_the_refusal_in_place_of_the_page_content(client, settings):
    settings.IMPORT_MAX_BYTES = 1024
    response = client.post(
        reverse("evaluation:import_new"),
        data="x",
        content_type="multipart/form-data; boundary=b",
        CONTENT_LENGTH=str(10**9),
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 413
    assert (response["HX-Retarget"], response["HX-Reswap"], response["HX-Reselect"]) == (
        "main",
        "outerHTML",
        "main",
    )


def test_an_anonymous_upload_goes_to_login_before_a_byte_of_it_is_read(settings):
    """A visitor with the CSRF cookie any visitor gets (and its token) posts an import: the
    answer is the login page, and the body is never read (the test client's payload is 3
    bytes under a declared 9 MB: reading it would raise)."""
    from django.test import Client

    settings.IMPORT_MAX_BYTES = 10 * 1024 * 1024
    client = Client(enforce_csrf_checks=True)
    client.get(reverse("login"))
    token = client.cookies[settings.CSRF_COOKIE_NAME].value
    response = client.post(
        reverse("evaluation:import_new"),
        data="x=y",
        content_type="multipart/form-data; boundary=b",
        CONTENT_LENGTH=str(9 * 1024 * 1024),
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
