"""Personal API tokens: made and shown once, kept as a digest, listed, used, revoked."""

from __future__ import annotations

import hashlib
import re

import pytest
from django.utils import timezone

from api.models import ApiToken
from api.tokens import MAX_ACTIVE_TOKENS, authenticate, create_token, revoke_token
from tests.factories import make_user


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
