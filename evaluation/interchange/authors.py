"""Who made an imported label: the tool's user matched to a person of Attest, or a new inactive
person without a password, and the way back on export.

- Label Studio names a user by a number (``completed_by: 7``) or an object with ``id`` and
  ``email`` (and our exports add ``username``). An existing person matches by username, then by
  email (without case), then as ``label-studio-<id>``; else ``label-studio-<id>`` is created.
- Argilla names a user by a UUID (``user_id``). An existing person matches by that username, as
  ``argilla-<uuid>``, or as the person an export of ours gave that UUID (``export_uuid``); else
  ``argilla-<uuid>`` is created.

A person created here has no usable password and is inactive: they cannot log in until a manager
gives them a password and activates them in the admin.

Label Studio's import takes an annotation's author only as the email of a member of its
organization (``completed_by: {"email": ...}``; label_studio/tasks/serializers.py,
``_insert_valid_completed_by``), so every author goes out with an email: their own, else a
placeholder ``<username>@attest.invalid`` that the Label Studio admin creates as a user before
importing (``label_studio_people`` lists them), and labels without an author (imported from a
file) as ``no-author@attest.invalid``. An import of ours reads both placeholders back.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.db.models import Q

from evaluation.interchange.records import Author

LABEL_STUDIO, ARGILLA = "label-studio", "argilla"
# A reserved domain (RFC 2606): no mail goes there, and no real address is ever one of these.
PLACEHOLDER_DOMAIN = "attest.invalid"
NO_AUTHOR_EMAIL = f"no-author@{PLACEHOLDER_DOMAIN}"
_NAMESPACE = uuid.UUID("6f1c3b8e-52a4-4a1e-9d59-6a2e1f3c7b10")
_LABEL_STUDIO_USER = re.compile(r"^label-studio-(\d+)$")


def export_uuid(username: str) -> str:
    """The Argilla user id an export gives a person who did not come from Argilla: the same UUID
    for the same username, every time."""
    return str(uuid.uuid5(_NAMESPACE, username))


def placeholder_email(username: str) -> str:
    """The email a person without one goes to Label Studio with: their username made an email's
    local part, at PLACEHOLDER_DOMAIN."""
    local = re.sub(r"[^a-z0-9._+-]+", "-", username.lower()).strip(".-")[:64] or "person"
    return f"{local}@{PLACEHOLDER_DOMAIN}"


def label_studio_id(*, username: str, email: str, user_id: int | None) -> dict[str, object]:
    """``completed_by`` for a person: always an object with an email Label Studio can resolve
    (theirs, else ``placeholder_email``), with the Label Studio id they came with, else Attest's
    id and their username, which an import of ours matches back. No person: NO_AUTHOR_EMAIL."""
    if user_id is None:
        return {"email": NO_AUTHOR_EMAIL}
    match = _LABEL_STUDIO_USER.match(username)
    if match:
        return {"id": int(match.group(1)), "email": email or placeholder_email(username)}
    return {"id": user_id, "email": email or placeholder_email(username), "username": username}


def argilla_id(username: str) -> str:
    """``user_id`` for a person: the Argilla UUID they came with, else ``export_uuid``."""
    if username.startswith(f"{ARGILLA}-"):
        return username.removeprefix(f"{ARGILLA}-")
    return export_uuid(username)


def _own_name(author: Author) -> str:
    return f"{author.tool}-{author.key}"


def resolve(*, authors: Iterable[Author]) -> dict[Author, AbstractUser | None]:
    """Each author's existing person, or None where one must be created (see ``create``)."""
    User = get_user_model()
    authors = list(dict.fromkeys(authors))
    names = (
        {a.username for a in authors if a.username}
        | {a.key for a in authors}
        | {_own_name(a) for a in authors}
    )
    emails = {a.email.lower() for a in authors if a.email}
    query = Q(username__in=names)
    for email in emails:
        query |= Q(email__iexact=email)
    people = list(User.objects.filter(query))
    by_name: dict[str, Any] = {user.username: user for user in people}
    by_email: dict[str, Any] = {}
    for user in people:
        if user.email:
            by_email.setdefault(user.email.lower(), user)
    found: dict[Author, AbstractUser | None] = {}
    for author in authors:
        if author.tool == LABEL_STUDIO:
            person = (
                (by_name.get(author.username) if author.username else None)
                or (by_email.get(author.email.lower()) if author.email else None)
                or by_name.get(_own_name(author))
            )
        else:
            person = by_name.get(author.key) or by_name.get(_own_name(author))
        found[author] = person
    placeholders = {
        a.email.lower(): a
        for a, person in found.items()
        if person is None and a.tool == LABEL_STUDIO and a.email.lower().endswith(f"@{PLACEHOLDER_DOMAIN}")
    }
    if placeholders:
        # An export of ours gave people without an email a placeholder made from their username.
        for user in User.objects.filter(email="").iterator(chunk_size=2000):
            placeheld = placeholders.get(placeholder_email(user.username))
            if placeheld is not None and found[placeheld] is None:
                found[placeheld] = user
    unmatched = {a.key for a, person in found.items() if person is None and a.tool == ARGILLA}
    if unmatched:
        # An export of ours gave people of Attest a UUID made from their username: find them back.
        for user in User.objects.exclude(username__startswith=f"{ARGILLA}-").iterator(chunk_size=2000):
            key = export_uuid(user.username)
            if key in unmatched:
                found[Author(tool=ARGILLA, key=key)] = user
    return found


def create(author: Author) -> AbstractUser:
    """A new inactive person without a usable password standing for ``author``."""
    User = get_user_model()
    person = User(username=_own_name(author), email=author.email, is_active=False)
    person.set_unusable_password()
    person.save()
    return person
