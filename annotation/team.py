"""A campaign's team: who is a member, with which roles, and the changes managers make to it.

Only existing accounts join a team (administrators create accounts in the admin). Changes are
recorded in the admin's history (``LogEntry``, "Recent actions" and each membership's history),
with the manager who made them. Revoking a role never touches labels (they are append-only); it
ends the live leases the person held at the stages that role works in, so that their units go
back to the queue at once. A campaign always keeps at least one manager.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.admin.models import ADDITION, DELETION, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotation.errors import FieldError
from annotation.models import Assignment, Campaign, Membership, Role
from annotation.workflow import open_slots
from annotation.workflow.rules import STAGE_ROLE

# The order roles are shown in: the work first, then who reads and who runs the campaign.
ROLE_ORDER = [Role.ANNOTATOR, Role.REVIEWER, Role.ADJUDICATOR, Role.ANALYST, Role.MANAGER]
ROLE_NAMES = {
    Role.ANNOTATOR: gettext_lazy("annotator"),
    Role.REVIEWER: gettext_lazy("reviewer"),
    Role.ADJUDICATOR: gettext_lazy("adjudicator"),
    Role.ANALYST: gettext_lazy("analyst"),
    Role.MANAGER: gettext_lazy("manager"),
}


class TeamError(FieldError):
    """A change to a team was refused; ``field`` names the form field at fault."""


@dataclass
class TeamMember:
    """One person of a campaign's team and the roles they hold there, in ``ROLE_ORDER``."""

    user: User
    roles: list[str] = field(default_factory=list)
    # The campaign's only manager: their manager role cannot be revoked, nor they removed
    # (check_revocable refuses it), so the page offers neither.
    last_manager: bool = False

    @property
    def named_roles(self) -> list[tuple[str, str]]:
        """(role, its name in the reader's language) for each role held."""
        return [(role, str(ROLE_NAMES.get(Role(role), role))) for role in self.roles]

    @property
    def missing_roles(self) -> list[tuple[str, str]]:
        """(role, name) of the roles the person could still be granted."""
        return [(role.value, str(ROLE_NAMES[role])) for role in ROLE_ORDER if role.value not in self.roles]


def team_of(*, campaign: Campaign) -> list[TeamMember]:
    """The campaign's members by username, each with their roles, the last manager marked (the
    campaign's only manager, whose role cannot be taken away). One query."""
    members: dict[int, TeamMember] = {}
    rank = {role.value: n for n, role in enumerate(ROLE_ORDER)}
    memberships = Membership.objects.filter(campaign=campaign).select_related("user")
    for membership in memberships.order_by("user__username", "user_id"):
        member = members.setdefault(membership.user_id, TeamMember(user=membership.user))
        member.roles.append(membership.role)
    for member in members.values():
        member.roles.sort(key=lambda role: rank.get(role, len(rank)))
    managers = [member for member in members.values() if Role.MANAGER in member.roles]
    if len(managers) == 1:
        managers[0].last_manager = True
    return list(members.values())


def _record(*, by: User, memberships: Iterable[Membership], flag: int, message: str) -> None:
    rows = list(memberships)
    if rows:
        LogEntry.objects.log_actions(user_id=by.pk, queryset=rows, action_flag=flag, change_message=message)


def find_user(*, username: str) -> User:
    """The active account named ``username`` (case as typed first, then any case).

    Raises TeamError on ``username`` when there is none.
    """
    users = get_user_model().objects.filter(is_active=True)
    found = users.filter(username=username).first() or users.filter(username__iexact=username).first()
    if found is None:
        message = _("no active account is named “%(name)s”.") % {"name": username}
        raise TeamError("username", f"username: {message}")
    return found


def grant_roles(*, campaign: Campaign, user: User, roles: Iterable[str], by: User) -> list[str]:
    """Give ``user`` each of ``roles`` in ``campaign`` (making them a member); the roles that were
    new. A role already held is left as it is, so a repeated request changes nothing."""
    granted = []
    for role in roles:
        Role(role)  # an unknown role is a programming error, not a person's
        try:
            with transaction.atomic():
                membership, created = Membership.objects.get_or_create(
                    campaign=campaign, user=user, role=role
                )
        except IntegrityError:  # the same grant, at the same moment, from another request
            continue
        if created:
            granted.append(role)
            _record(by=by, memberships=[membership], flag=ADDITION, message=f"granted {role}")
    return granted


def add_member(
    *, campaign: Campaign, username: str, roles: Iterable[str], by: User
) -> tuple[User, list[str]]:
    """Add the account named ``username`` to the campaign with ``roles``: the user and the roles
    that were new. Raises TeamError on ``username`` when no active account has that name."""
    user = find_user(username=username)
    return user, grant_roles(campaign=campaign, user=user, roles=roles, by=by)


def live_leases(*, campaign: Campaign, user: User, roles: Iterable[str]) -> int:
    """How many units ``user`` holds now under a live lease at the stages ``roles`` work in."""
    return _leases(campaign=campaign, user=user, roles=roles).count()


def _leases(*, campaign: Campaign, user: User, roles: Iterable[str]):
    wanted = set(roles)
    stages = [stage for stage, role in STAGE_ROLE.items() if role in wanted]
    return Assignment.objects.filter(
        criterion__campaign=campaign,
        stage__in=stages,
        user=user,
        label__isnull=True,
        expires_at__gt=timezone.now(),
    )


def _release_leases(*, campaign: Campaign, user: User, roles: Iterable[str]) -> int:
    """End ``user``'s live leases at the stages ``roles`` work in; how many were ended. An expired
    lease frees its slot for anyone (see annotation.workflow.queue); labels stay as they are."""
    return open_slots.release(leases=_leases(campaign=campaign, user=user, roles=roles), now=timezone.now())


def check_revocable(*, campaign: Campaign, user: User, roles: Iterable[str]) -> list[Membership]:
    """The memberships revoking ``roles`` from ``user`` would delete.

    Raises TeamError (field ``role``) when the person holds none of ``roles``, or when revoking
    them would leave the campaign without a manager.
    """
    held = list(
        Membership.objects.filter(campaign=campaign, user=user, role__in=set(roles)).select_related(
            "user", "campaign"
        )
    )
    name = user.get_username()
    if not held:
        message = _("%(name)s does not hold this role.") % {"name": name}
        raise TeamError("role", f"role: {message}")
    if any(m.role == Role.MANAGER for m in held):
        others = Membership.objects.filter(campaign=campaign, role=Role.MANAGER).exclude(user=user)
        if not others.exists():
            message = _("%(name)s is the campaign's last manager; make someone else manager first.") % {
                "name": name
            }
            raise TeamError("role", f"role: {message}")
    return held


def revoke_roles(*, campaign: Campaign, user: User, roles: Iterable[str], by: User) -> list[str]:
    """Take ``roles`` from ``user`` in ``campaign``; the roles they held and lost.

    Their labels stay; their live leases at the stages of those roles end. Raises TeamError as
    :func:`check_revocable` does; the check and the change happen with the campaign's row
    locked, so two managers removing each other at once cannot both succeed.
    """
    with transaction.atomic():
        Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
        held = check_revocable(campaign=campaign, user=user, roles=roles)
        lost = [m.role for m in held]
        _record(by=by, memberships=held, flag=DELETION, message="revoked " + ", ".join(sorted(lost)))
        Membership.objects.filter(pk__in=[m.pk for m in held]).delete()
        _release_leases(campaign=campaign, user=user, roles=lost)
    return lost


def remove_member(*, campaign: Campaign, user: User, by: User) -> list[str]:
    """Take every role from ``user`` in ``campaign`` (see :func:`revoke_roles`); the roles lost."""
    return revoke_roles(campaign=campaign, user=user, roles=[role.value for role in Role], by=by)
