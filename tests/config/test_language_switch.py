"""The header's language switch: a form posted to Django's set_language, on every page and on the
login page too, working without JavaScript; the choice is kept a year in the language cookie,
which outranks the browser's Accept-Language."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.urls import reverse

pytestmark = pytest.mark.django_db

SWITCH = reverse("set_language")


def switch_form(page: str) -> str:
    found = re.search(rf'<form method="post" action="{SWITCH}" class="lang-switch".*?</form>', page, re.S)
    assert found, "no language switch in the header"
    return found.group(0)


def test_the_login_page_offers_the_other_language_named_in_itself(client):
    english = switch_form(client.get(reverse("login")).content.decode())
    assert 'name="language" value="fr" lang="fr">Français</button>' in english
    assert 'value="en"' not in english
    assert 'name="next" value="/login/"' in english
    assert 'name="csrfmiddlewaretoken"' in english
    french = switch_form(client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="fr").content.decode())
    assert 'name="language" value="en" lang="en">English</button>' in french
    assert 'aria-label="Langue"' in french


def test_a_visitor_switches_to_french_and_the_cookie_keeps_it_over_the_browser_s_language(client):
    response = client.post(SWITCH, {"language": "fr", "next": reverse("login")}, HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 302
    assert response["Location"] == reverse("login")
    cookie = response.cookies[settings.LANGUAGE_COOKIE_NAME]
    assert cookie.value == "fr"
    assert cookie["max-age"] == 365 * 24 * 3600
    assert cookie["httponly"] is True
    page = client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert '<html lang="fr">' in page


def test_a_member_switches_back_to_english_on_any_page(client_for, manager, campaign):
    client = client_for(manager)
    overview = reverse("evaluation:campaign_overview", args=[campaign.slug])
    page = client.get(overview, HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert f'name="next" value="{overview}"' in switch_form(page)
    response = client.post(SWITCH, {"language": "en", "next": overview}, HTTP_ACCEPT_LANGUAGE="fr")
    assert response["Location"] == overview
    assert '<html lang="en">' in client.get(overview, HTTP_ACCEPT_LANGUAGE="fr").content.decode()


def test_the_switch_keeps_the_page_s_query_and_sends_nobody_elsewhere(client):
    url = reverse("login") + "?next=/campaigns/"
    assert 'name="next" value="/login/?next=/campaigns/"' in switch_form(client.get(url).content.decode())
    away = client.post(SWITCH, {"language": "fr", "next": "https://elsewhere.example/"})
    assert away.status_code == 302
    assert away["Location"] == "/"


def test_a_language_the_app_does_not_speak_leaves_the_pages_as_the_browser_asks(client):
    response = client.post(SWITCH, {"language": "de", "next": reverse("login")})
    assert response.status_code == 302
    assert '<html lang="en">' in client.get(reverse("login")).content.decode()
    assert '<html lang="fr">' in client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="fr").content.decode()
