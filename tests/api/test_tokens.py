"""Personal API tokens: made and shown once, kept as a digest, listed, used, revoked."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from api.forms import TokenForm
from api.models import ApiToken
from api.tokens import MAX_ACTIVE_TOKENS, active_tokens, authenticate, create_token, revoke_token
from tests.factories import PASSWORD, make_user


@pytest.fixture
def person(db):
    return make_user(username="person")


def test_a_token_is_random_and_only_its_digest_is_kept(person):
    first = create_token(user=person, name="CI")
    second = create_token(user=person, name="CI")
    assert first.secret != second.secret
    assert re.fullmatch(r"attest_[A-Za-z0-9_-]{43}", first.secret)
    stored = ApiToken.objects.get(pk=first.token.pk)
    assert stored.digest == hashlib.sha256(first.secret.encode()).hexdigest()
    assert first.secret not in {stored.digest, stored.prefix, stored.name}
    assert first.secret.startswith(stored.prefix)


def test_authenticating_records_the_last_use_and_a_revoked_token_opens_nothing(person):
    new = create_token(user=person, name="CI")
    assert new.token.last_used_at is None
    found = authenticate(secret=new.secret)
    assert found is not None and found.user == person
    assert ApiToken.objects.get().last_used_at is not None
    assert authenticate(secret=new.secret + "x") is None
    assert revoke_token(user=person, token_id=new.token.pk)
    assert authenticate(secret=new.secret) is None
    assert not revoke_token(user=person, token_id=new.token.pk)


def test_nobody_revokes_someone_elses_token(person):
    new = create_token(user=person, name="CI")
    other = make_user(username="other")
    assert not revoke_token(user=other, token_id=new.token.pk)
    assert authenticate(secret=new.secret) is not None


def test_a_person_holds_a_bounded_number_of_active_tokens(person):
    for _ in range(MAX_ACTIVE_TOKENS):
        create_token(user=person, name="t")
    with pytest.raises(ValueError, match="name: at most"):
        create_token(user=person, name="one more")


def test_the_token_page_makes_a_token_and_shows_it_once(client, person):
    client.force_login(person)
    response = client.post("/account/tokens/", {"name": "release pipeline"})
    assert response.status_code == 201
    secret = re.search(r"attest_[A-Za-z0-9_-]{43}", response.content.decode()).group(0)
    assert authenticate(secret=secret).name == "release pipeline"
    assert "no-store" in response["Cache-Control"]
    listing = client.get("/account/tokens/")
    assert secret not in listing.content.decode()
    assert "release pipeline" in listing.content.decode()
    assert secret[:12] in listing.content.decode()


def test_the_token_page_lists_tokens_in_a_fixed_number_of_queries(client, person, django_assert_num_queries):
    for index in range(5):
        create_token(user=person, name=f"token {index}")
    client.force_login(person)
    with django_assert_num_queries(3):  # session, user, tokens
        response = client.get("/account/tokens/")
    assert response.content.decode().count("token ") >= 5


def test_revoking_from_the_page_stops_the_token_and_someone_elses_is_404(client, person):
    new = create_token(user=person, name="CI")
    other = make_user(username="other")
    client.force_login(other)
    assert client.post(f"/account/tokens/{new.token.pk}/revoke/").status_code == 404
    client.force_login(person)
    response = client.post(f"/account/tokens/{new.token.pk}/revoke/")
    assert response.status_code == 302
    assert authenticate(secret=new.secret) is None
    assert ApiToken.objects.get().revoked_at <= timezone.now()
    assert "revoked on" in client.get("/account/tokens/").content.decode()


def test_the_token_page_needs_a_login_and_refuses_other_methods(client, person):
    assert client.get("/account/tokens/").status_code == 302
    client.force_login(person)
    assert client.put("/account/tokens/").status_code == 405
    assert client.get("/account/tokens/1/revoke/").status_code == 405


def test_a_too_long_name_is_refused_on_the_page(client, person):
    client.force_login(person)
    response = client.post("/account/tokens/", {"name": "x" * 101})
    assert response.status_code == 400
    assert not ApiToken.objects.exists()


def test_the_navigation_links_to_the_token_page(client, person):
    client.force_login(person)
    assert 'href="/account/tokens/"' in client.get("/account/tokens/").content.decode()


def test_a_token_lasts_its_days_ninety_by_default_then_opens_nothing(person, settings):
    new = create_token(user=person, name="CI")
    lasts = new.token.expires_at - new.token.created_at
    assert abs(lasts.total_seconds() - 90 * 86400) < 5
    short = create_token(user=person, name="one day", days=1)
    with pytest.raises(ValueError, match="days: from 1 to 365"):
        create_token(user=person, name="forever", days=366)
    ApiToken.objects.filter(pk=short.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert authenticate(secret=short.secret) is None
    assert authenticate(secret=new.secret) is not None
    assert [t.pk for t in active_tokens(user=person)] == [new.token.pk]
    # The page: the days are a field with its default, and an expired token says so.
    settings.API_TOKEN_DAYS = 30
    page = TokenForm()
    assert page.fields["days"].initial == 30


def test_the_token_page_makes_a_token_of_the_days_asked_and_refuses_more_than_the_most(client, person):
    client.force_login(person)
    made = client.post("/account/tokens/", {"name": "week", "days": "7"})
    assert made.status_code == 201
    token = ApiToken.objects.get(name="week")
    assert abs((token.expires_at - token.created_at).total_seconds() - 7 * 86400) < 5
    refused = client.post("/account/tokens/", {"name": "long", "days": "400"})
    assert refused.status_code == 400 and not ApiToken.objects.filter(name="long").exists()
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(days=1))
    assert "expired" in client.get("/account/tokens/").content.decode()


@pytest.mark.parametrize("change", ["password", "deactivated"])
def test_a_new_password_or_a_deactivated_account_revokes_every_token(person, change):
    tokens = [create_token(user=person, name=f"t{i}") for i in range(3)]
    other = make_user(username="other")
    kept = create_token(user=other, name="theirs")
    person.refresh_from_db()
    if change == "password":
        person.set_password("a new password, long enough")
    else:
        person.is_active = False
    person.save()
    assert all(authenticate(secret=t.secret) is None for t in tokens)
    reasons = set(ApiToken.objects.filter(user=person).values_list("revoked_because", flat=True))
    assert reasons == {change}
    assert authenticate(secret=kept.secret) is not None
    # Reactivated, the account's old tokens stay revoked.
    person.is_active = True
    person.save()
    assert all(authenticate(secret=t.secret) is None for t in tokens)


def test_a_login_or_another_change_of_the_person_keeps_their_tokens(
    client, person, django_assert_num_queries
):
    new = create_token(user=person, name="CI")
    logged_in = client.post("/login/", {"username": "person", "password": PASSWORD})
    assert logged_in.status_code == 302
    person.refresh_from_db()
    person.first_name = "Pat"
    person.save()
    assert authenticate(secret=new.secret) is not None
    # A save of other fields only (a login's last_login) reads nothing more.
    with django_assert_num_queries(1):
        person.save(update_fields=["first_name"])


def test_with_redis_the_rate_is_counted_once_for_every_process(client, person, settings):
    import redis
    from django.core.cache import caches
    from django.core.cache.backends.redis import RedisCache

    url = "redis://127.0.0.1:6379/14"
    try:
        redis.Redis.from_url(url).ping()
    except redis.exceptions.ConnectionError:
        pytest.skip("needs Redis on 127.0.0.1:6379")
    prefix = f"rate-{person.pk}-{time.monotonic_ns()}"
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": prefix,
        }
    }
    settings.API_RATE_PER_TOKEN = "4/min"
    secret = create_token(user=person, name="CI").secret
    auth = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    assert [client.get("/api/v1/campaigns", **auth).status_code for _ in range(2)] == [200, 200]
    # Another process: its own cache client, its own connections to Redis, the same count.
    caches["default"].close()
    del caches["default"]
    other = RedisCache(url, {"KEY_PREFIX": prefix})
    assert any(other.get(key) == 2 for key in _throttle_keys(url, prefix))
    assert [client.get("/api/v1/campaigns", **auth).status_code for _ in range(3)] == [200, 200, 429]
    redis.Redis.from_url(url).delete(*redis.Redis.from_url(url).keys(f"{prefix}*"))


def _throttle_keys(url: str, prefix: str) -> list[str]:
    import redis

    # Django's key: "<prefix>:<version>:<key>".
    return [key.decode().split(":", 2)[2] for key in redis.Redis.from_url(url).keys(f"{prefix}:*")]


def test_no_token_reaches_a_log_line():
    import logging

    from config.logs import TokensHidden

    token = "attest_" + "A1b2-_" * 7 + "x"
    record = logging.LogRecord(
        "django.server", logging.INFO, __file__, 1, '"GET /api/v1/x?token=%s" 401', (token,), None
    )
    assert TokensHidden().filter(record)
    assert token not in record.getMessage() and "token=attest_[hidden]" in record.getMessage()
    try:
        raise ValueError(f"bad {token}")
    except ValueError:
        import sys

        failed = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "boom", (), sys.exc_info())
    TokensHidden().filter(failed)
    assert token not in logging.Formatter().format(failed)


@pytest.mark.parametrize("name", ["", "   "])
def test_a_token_without_a_name_is_refused_by_the_page_and_the_domain(client, person, name):
    client.force_login(person)
    response = client.post("/account/tokens/", {"name": name})
    assert response.status_code == 400
    content = response.content.decode()
    assert "Name: give the token a name: what it is for, such as CI" in content
    assert "attest_" not in content and not ApiToken.objects.exists()
    with pytest.raises(ValueError, match="name: give the token a name"):
        create_token(user=person, name=name)
    french = client.post("/account/tokens/", {"name": name}, HTTP_ACCEPT_LANGUAGE="fr")
    assert "donnez un nom au jeton" in french.content.decode()
    assert not ApiToken.objects.exists()


def test_the_new_token_comes_with_a_copy_button_and_its_script(client, person):
    client.force_login(person)
    content = client.post("/account/tokens/", {"name": "CI"}).content.decode()
    secret = re.search(r"attest_[A-Za-z0-9_-]{43}", content).group(0)
    assert f'<code class="token-secret" id="new-token">{secret}</code>' in content
    assert 'data-copy="new-token"' in content and "hidden>Copy the token</button>" in content
    assert "/static/js/copy.js" in content and "<script>" not in content
    # The list has no button (the token is no longer there to copy).
    assert 'data-copy="' not in client.get("/account/tokens/").content.decode()


def test_requests_sent_together_are_all_counted(client, person, settings):
    """Eight threads at once against one token, the count on Redis as in production: exactly the
    rate gets through (ninja's throttle read a list of times, added one and wrote it back: here it
    let 200 of 200 through a limit of 50)."""
    from concurrent.futures import ThreadPoolExecutor
    from types import SimpleNamespace

    import redis

    from api.throttle import TokenThrottle

    url = "redis://127.0.0.1:6379/14"
    try:
        redis.Redis.from_url(url).ping()
    except redis.exceptions.ConnectionError:
        pytest.skip("needs Redis on 127.0.0.1:6379")
    prefix = f"together-{person.pk}-{time.monotonic_ns()}"
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": prefix,
        }
    }
    settings.API_RATE_PER_TOKEN = "50/min"
    token = create_token(user=person, name="CI").token
    throttle = TokenThrottle()
    throttle.timer = lambda: 60.0 * 1000 + 1  # one instant at a window's start: no window before
    start = threading.Barrier(8)

    def send(_: int) -> int:
        start.wait()
        return sum(throttle.allow_request(SimpleNamespace(auth=token)) for _ in range(25))

    with ThreadPoolExecutor(8) as pool:
        allowed = sum(pool.map(send, range(8)))
    assert allowed == 50
    # The wait of a refusal is the refused thread's own.
    assert not throttle.allow_request(SimpleNamespace(auth=token))
    assert throttle.wait() == 60.0 - 1
    redis.Redis.from_url(url).delete(*redis.Redis.from_url(url).keys(f"{prefix}*"))


def test_without_its_cache_the_api_still_answers_json(client, person, settings, caplog):
    """The cache on a Redis that does not answer: requests go through, the failure is logged."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
        }
    }
    secret = create_token(user=person, name="CI").secret
    response = client.get("/api/v1/campaigns", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    assert "the cache does not answer" in caplog.text
