"""Production headers: a strict Content-Security-Policy on every page, HTTPS settings from the
environment, and templates that need no inline script or style."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted(
    path
    for folder in ("templates", "annotation/templates", "evaluation/templates")
    for path in (ROOT / folder).rglob("*.html")
)


def test_every_page_carries_a_policy_without_unsafe_inline(client, manager, campaign):
    client.force_login(manager)
    for url in (reverse("login"), reverse("evaluation:campaign_overview", args=[campaign.slug])):
        policy = client.get(url)["Content-Security-Policy"]
        assert "default-src 'self'" in policy
        assert "script-src 'self'" in policy and "style-src 'self'" in policy
        assert "frame-ancestors 'none'" in policy
        assert "unsafe" not in policy


def test_the_refusals_carry_it_too(client):
    response = client.post(reverse("login"), data="a", content_type="text/plain", CONTENT_LENGTH=str(10**12))
    assert response.status_code == 413
    assert "default-src 'self'" in response["Content-Security-Policy"]


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: str(p.relative_to(ROOT)))
def test_templates_hold_no_inline_script_style_or_handler(path):
    text = path.read_text()
    assert not re.search(r"\sstyle=", text), "style attribute"
    assert not re.search(r"<style", text), "style element"
    assert not re.search(r"<script(?![^>]*\ssrc=)[^>]*>", text), "inline script"
    assert not re.search(r"\son[a-z]+=", text), "event handler attribute"
    assert "javascript:" not in text
    assert "hx-on" not in text


def test_htmx_is_told_not_to_inject_its_indicator_style_nor_to_carry_style_attributes(client):
    page = client.get(reverse("login")).content.decode()
    config = '{"includeIndicatorStyles": false, "attributesToSettle": ["class", "width", "height"]}'
    assert f"<meta name=\"htmx-config\" content='{config}'>" in page
    assert ".htmx-indicator" in (ROOT / "static/css/app.css").read_text()
    # The template's comments stay out of the page.
    assert "{#" not in page and "#}" not in page


def test_https_settings_come_through_as_headers_and_redirects(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    plain = client.get(reverse("login"))
    assert plain.status_code == 301 and plain["Location"].startswith("https://")
    secure = client.get(reverse("login"), HTTP_X_FORWARDED_PROTO="https")
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
