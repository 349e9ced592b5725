"""Personal API tokens: made, looked up and revoked. Only a digest of a token is stored.

A token is ``attest_`` and 43 URL-safe characters drawn by ``secrets`` (256 bits). Such a
token cannot be guessed, so one SHA-256 digest, looked up by equality, is enough at rest (a slow
password hash protects low-entropy secrets; it would only slow every API request here). The
token is shown once, when made; a database leak gives digests that open nothing.

A token opens the API for API_TOKEN_DAYS (90 by default; its person chooses from 1 to
API_TOKEN_MAX_DAYS), and is revoked when its person's password changes or their account is
deactivated (``api.signals``): what ends a person's sessions ends their tokens.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError
from api.models import ApiToken

TOKEN_PREFIX = "attest_"
# Characters of a token shown in the list (its beginning), enough to tell tokens apart.
SHOWN_CHARACTERS = 12
MAX_ACTIVE_TOKENS = 20
# last_used_at is written at most this often per token: not one UPDATE per API request.
LAST_USED_PRECISION = timedelta(minutes=1)


@dataclass(frozen=True)
class NewToken:
    """A token just made: ``secret`` is the token itself, never stored, shown once."""

    token: ApiToken
    secret: str


def token_digest(secret: str) -> str:
    """The SHA-256 digest of a token, as stored."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def create_token(*, user: User, name: str, days: int | None = None) -> NewToken:
    """Make a token for ``user`` named ``name`` (what it is for) that opens the API for ``days``
    (API_TOKEN_DAYS when None); raises FieldError (field ``name``) on a blank name or when the
    person already holds MAX_ACTIVE_TOKENS active tokens, or on ``days`` outside 1 to
    API_TOKEN_MAX_DAYS."""
    name = " ".join(name.split())[:100]
    if not name:
        raise FieldError(
            "name", format_lazy("{}: {}", "name", _("give the token a name: what it is for, such as CI"))
        )
    days = settings.API_TOKEN_DAYS if days is None else days
    if not 1 <= days <= settings.API_TOKEN_MAX_DAYS:
        raise FieldError("days", f"days: from 1 to {settings.API_TOKEN_MAX_DAYS}")
    if active_tokens(user=user).count() >= MAX_ACTIVE_TOKENS:
        raise FieldError("name", f"name: at most {MAX_ACTIVE_TOKENS} active tokens; revoke one first")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=secret[:SHOWN_CHARACTERS],
        digest=token_digest(secret),
        expires_at=timezone.now() + timedelta(days=days),
    )
    return NewToken(token=token, secret=secret)


def active_tokens(*, user: User) -> QuerySet[ApiToken]:
    """The person's tokens that are neither revoked nor expired, newest first."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True, expires_at__gt=timezone.now())


def tokens_of(*, user: User) -> QuerySet[ApiToken]:
    """Every token of the person, revoked ones included, newest first."""
    return ApiToken.objects.filter(user=user)


def revoke_token(*, user: User, token_id: int) -> bool:
    """Revoke the person's token ``token_id``; False when they hold no such active token."""
    return bool(
        ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True).update(
            revoked_at=timezone.now(), revoked_because=ApiToken.Revoked.PERSON
        )
    )


def revoke_all(*, user_id: int, because: str) -> int:
    """Revoke every token of the person not revoked yet (their password changed, their account
    was deactivated: ``ApiToken.Revoked``); how many."""
    return ApiToken.objects.filter(user_id=user_id, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_because=because
    )


def authenticate(*, secret: str) -> ApiToken | None:
    """The active token ``secret`` is, its active user loaded, and its last use recorded; None
    for an unknown, revoked, expired or malformed token, or one whose person is inactive."""
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    now = timezone.now()
    token = (
        ApiToken.objects.select_related("user")
        .filter(
            digest=token_digest(secret), revoked_at__isnull=True, expires_at__gt=now, user__is_active=True
        )
        .first()
    )
    if token is None:
        return None
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=token.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_PRECISION)
        ).update(last_used_at=now)
        token.last_used_at = now
    return token
