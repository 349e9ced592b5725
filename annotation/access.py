"""The one access helper every view uses: login, campaign membership and role."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from annotation.models import Campaign, Membership, Role


def roles_of(*, user: AbstractBaseUser | AnonymousUser, campaign: Campaign) -> set[str]:
    """The roles ``user`` holds in ``campaign``; superusers hold every role."""
    if not user.is_authenticated:
        return set()
    if user.is_superuser:
        return {role.value for role in Role}
    return set(Membership.objects.filter(campaign=campaign, user=user).values_list("role", flat=True))


def get_campaign_for(
    *, user: AbstractBaseUser | AnonymousUser, slug: str, roles: Iterable[str] | None = None
) -> tuple[Campaign, set[str]]:
    """The campaign and the user's roles in it.

    Raises Http404 when the campaign does not exist, and PermissionDenied (403) when the user
    is not a member or holds none of ``roles`` (None: any role will do).
    """
    try:
        campaign = Campaign.objects.get(slug=slug)
    except Campaign.DoesNotExist:
        raise Http404("No such campaign.") from None
    held = roles_of(user=user, campaign=campaign)
    if not held:
        raise PermissionDenied("You are not a member of this campaign.")
    if roles is not None and not held.intersection(roles):
        raise PermissionDenied("Your role in this campaign does not allow this.")
    return campaign, held


def campaigns_for(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Campaign]:
    """Campaigns the user is a member of (every campaign for a superuser)."""
    if not user.is_authenticated:
        return Campaign.objects.none()
    if user.is_superuser:
        return Campaign.objects.all()
    return Campaign.objects.filter(memberships__user=user).distinct()
