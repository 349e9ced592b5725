"""Static files are served by the app itself, with DEBUG off, to anyone (the login page needs them)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.templatetags.static import static


@pytest.mark.parametrize(
    "path",
    ["css/app.css", "js/annotate.js", "django_htmx/htmx-2.min.js"],
)
def test_static_files_are_served_without_debug_and_without_login(client, path):
    assert not settings.DEBUG
    response = client.get(static(path))
    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert len(body) > 100


def test_an_unknown_static_file_is_not_found_rather_than_a_login_redirect(client):
    response = client.get(static("css/missing.css"))
    assert response.status_code in (302, 404)
    if response.status_code == 302:  # LoginRequiredMiddleware answers for paths WhiteNoise does not know
        assert "login" in response["Location"]
