"""Logins resist guessing: django-axes locks a username out after a few failures, from any
address, on the app's login page and the admin's, with a clear page; never a whole address (a
team behind one office address); passwords meet Django's validators."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.test import RequestFactory
from django.urls import reverse

from config.client_ip import client_ip
from tests.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db

LOGIN_PAGES = ["/login/", "/admin/login/"]


def attempt(client, page: str, username: str, password: str, **extra):
    return client.post(page, {"username": username, "password": password}, **extra)


@pytest.mark.parametrize("page", LOGIN_PAGES)
def test_the_fifth_wrong_password_locks_the_username_out_with_429(client, page, settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    make_user(username="claire", superuser=True)
    for n in range(1, 5):
        response = attempt(client, page, "claire", f"wrong-{n}")
        assert response.status_code == 200, n  # the form again, with its error
    locked = attempt(client, page, "claire", "wrong-5")
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert "Try again in 15 minutes" in locked.content.decode()
    assert locked["Retry-After"] == "900"
    # Even the right password is refused meanwhile, and nobody is logged in.
    after = attempt(client, page, "claire", PASSWORD)
    assert after.status_code == 429
    assert "_auth_user_id" not in client.session


def test_a_team_behind_one_address_is_not_locked_out_by_one_persons_failures(client):
    # Behind an office NAT every person has the same address: one locked out, the others log in.
    make_user(username="someone")
    for n in range(5):
        attempt(client, "/login/", "typist", f"wrong-{n}", REMOTE_ADDR="192.0.2.7")
    assert attempt(client, "/login/", "typist", PASSWORD, REMOTE_ADDR="192.0.2.7").status_code == 429
    for n in range(4):
        assert attempt(client, "/login/", f"guess{n}", "password", REMOTE_ADDR="192.0.2.7").status_code == 200
    assert attempt(client, "/login/", "someone", PASSWORD, REMOTE_ADDR="192.0.2.7").status_code == 302


def test_a_username_is_locked_out_from_every_address(client):
    make_user(username="target")
    for n in range(5):
        attempt(client, "/login/", "target", f"wrong-{n}", REMOTE_ADDR=f"198.51.100.{n}")
    assert attempt(client, "/login/", "target", PASSWORD, REMOTE_ADDR="203.0.113.9").status_code == 429


def test_another_address_is_not_locked_out_by_a_username_lock_of_someone_else(client):
    make_user(username="marc")
    for n in range(5):
        attempt(client, "/login/", "victim", f"wrong-{n}", REMOTE_ADDR="10.0.0.1")
    response = attempt(client, "/login/", "marc", PASSWORD, REMOTE_ADDR="10.0.0.2")
    assert response.status_code == 302


def test_a_success_clears_the_failures(client):
    make_user(username="sophie")
    for n in range(4):
        attempt(client, "/login/", "sophie", f"wrong-{n}")
    assert attempt(client, "/login/", "sophie", PASSWORD).status_code == 302
    client.logout()
    for n in range(4):
        assert attempt(client, "/login/", "sophie", f"again-{n}").status_code == 200


def test_the_lockout_page_speaks_french(client):
    for n in range(5):
        response = attempt(client, "/login/", "claire", f"wrong-{n}", HTTP_ACCEPT_LANGUAGE="fr")
    assert response.status_code == 429
    page = response.content.decode()
    assert 'lang="fr"' in page
    assert "Trop d’échecs de connexion" in page
    assert "Réessayez dans 15 minutes" in page


def test_the_cooloff_comes_from_the_environment(client, settings):
    from datetime import timedelta

    settings.AXES_COOLOFF_TIME = timedelta(minutes=3)
    for n in range(5):
        response = attempt(client, "/login/", "claire", f"wrong-{n}")
    assert "Try again in 3 minutes" in response.content.decode()
    assert response["Retry-After"] == "180"


def test_attempts_are_listed_for_admins_only(client):
    for n in range(2):
        attempt(client, "/login/", "claire", f"wrong-{n}", REMOTE_ADDR="10.1.2.3")
    assert AccessAttempt.objects.get().failures_since_start == 2
    admin = make_user(username="root", superuser=True)
    client.force_login(admin)
    page = client.get(reverse("admin:axes_accessattempt_changelist"))
    assert page.status_code == 200
    assert "10.1.2.3" in page.content.decode()
    client.force_login(make_user(username="plain"))
    assert client.get(reverse("admin:axes_accessattempt_changelist")).status_code == 302


@pytest.mark.parametrize(
    "password, problem",
    [
        ("short-pw1", "too short"),
        ("123456789012345", "entirely numeric"),
        ("1qaz2wsx3edc", "too common"),
        ("claire-dupont-2024", "too similar"),
    ],
)
def test_weak_passwords_are_refused(password, problem):
    user = make_user(username="claire-dupont-2024")
    with pytest.raises(ValidationError, match=problem):
        validate_password(password, user=user)


def test_the_test_password_is_a_good_one():
    validate_password(PASSWORD, user=make_user(username="claire"))


def test_the_client_address_is_remote_addr_unless_proxies_are_trusted(settings):
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR="1.2.3.4, 5.6.7.8")
    settings.TRUSTED_PROXY_COUNT = 0
    assert client_ip(request) == "10.0.0.9"  # a client may write any X-Forwarded-For
    settings.TRUSTED_PROXY_COUNT = 1
    assert client_ip(request) == "5.6.7.8"  # what the one trusted proxy saw
    settings.TRUSTED_PROXY_COUNT = 2
    assert client_ip(request) == "1.2.3.4"
    settings.TRUSTED_PROXY_COUNT = 3
    assert client_ip(request) == "10.0.0.9"  # fewer hops than proxies: not to be trusted
