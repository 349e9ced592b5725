"""The one access helper every view uses: login, campaign membership and role.

Outsiders learn nothing: a campaign the user is not a member of answers 404, exactly as one
that does not exist. 403 is only for members whose role does not allow the page.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from django_htmx.middleware import HtmxDetails

from annotation import plain_rows
from annotation.models import Campaign, Criterion, CriterionVersion, Membership, Role


class AppRequest(HttpRequest):
    """The request a page of the app gets (for type checkers): behind ``login_required`` its user
    is a User, and django-htmx's middleware has added ``htmx``."""

    user: User  # login_required has turned AnonymousUser away
    htmx: HtmxDetails


# Who sees the counts of human labels and judgments (the overview's totals): people who label
# must not learn how far the others or the judge have gone.
COUNT_VIEWERS = frozenset({Role.MANAGER, Role.ANALYST})
# Who may ask for a recomputation of a criterion's estimates (the button on the estimates'
# history page). Recomputations also follow, on their own, every finished judge run and every
# change of human labels; nobody else can start one. See docs/access.md.
ESTIMATE_REFRESHERS = frozenset({Role.MANAGER, Role.ANALYST})
# Who sees the judges' labels and reasoning (the unit page): never the people who label, or the
# statistics would rest on humans who had seen the judge.
JUDGE_VIEWERS = frozenset({Role.MANAGER, Role.ANALYST})
# Who sees the annotators' page (each person's pace, overrides, agreement): the people who run
# the team and settle disagreements. Not annotators nor reviewers (a person's agreement tells
# them how the others labelled), nor analysts, who read the estimates, not the people.
ANNOTATOR_VIEWERS = frozenset({Role.MANAGER, Role.ADJUDICATOR})


def may_see_counts(*, roles: Iterable[str]) -> bool:
    """Whether a member holding ``roles`` sees the campaign's label and judgment counts."""
    return bool(COUNT_VIEWERS.intersection(roles))


def may_refresh_estimates(*, roles: Iterable[str]) -> bool:
    """Whether a member holding ``roles`` may ask for a recomputation of the estimates."""
    return bool(ESTIMATE_REFRESHERS.intersection(roles))


def may_see_judges(*, roles: Iterable[str]) -> bool:
    """Whether a member holding ``roles`` sees the judges' labels and reasoning."""
    return bool(JUDGE_VIEWERS.intersection(roles))


def may_see_annotators(*, roles: Iterable[str]) -> bool:
    """Whether a member holding ``roles`` sees the annotators' page."""
    return bool(ANNOTATOR_VIEWERS.intersection(roles))


def may_open_units(*, roles: Iterable[str]) -> bool:
    """Whether a member holding ``roles`` may open a unit's page (every human label on it).

    Managers and analysts; adjudicators too, unless they also label or review: they would see
    the others' labels on units they have still to label, which breaks the first labels'
    independence (and blind mode).
    """
    held = set(roles)
    if JUDGE_VIEWERS.intersection(held):
        return True
    return Role.ADJUDICATOR in held and not held.intersection({Role.ANNOTATOR, Role.REVIEWER})


def may_create_campaigns(*, user: User | AnonymousUser) -> bool:
    """Whether ``user`` may create a campaign (the new-campaign page, the API): staff and
    superusers; whoever creates one becomes its manager."""
    return bool(user.is_authenticated and (user.is_superuser or user.is_staff))


def roles_by_campaign(*, user: User | AnonymousUser, campaigns: Iterable[Campaign]) -> dict[int, set[str]]:
    """The roles ``user`` holds in each of ``campaigns``, by campaign id, in one query (every
    role for a superuser)."""
    ids = [campaign.pk for campaign in campaigns]
    if not user.is_authenticated:
        return {pk: set() for pk in ids}
    if user.is_superuser:
        return {pk: {role.value for role in Role} for pk in ids}
    held: dict[int, set[str]] = {pk: set() for pk in ids}
    for campaign_id, role in Membership.objects.filter(user=user, campaign_id__in=ids).values_list(
        "campaign_id", "role"
    ):
        held[campaign_id].add(role)
    return held


def roles_of(*, user: User | AnonymousUser, campaign: Campaign) -> set[str]:
    """The roles ``user`` holds in ``campaign``; superusers hold every role."""
    if not user.is_authenticated:
        return set()
    if user.is_superuser:
        return {role.value for role in Role}
    return set(Membership.objects.filter(campaign=campaign, user=user).values_list("role", flat=True))


def get_campaign_for(
    *, user: User | AnonymousUser, slug: str, roles: Iterable[str] | None = None
) -> tuple[Campaign, set[str]]:
    """The campaign and the user's roles in it.

    Raises Http404 when the campaign does not exist or the user is not a member of it (the two
    cannot be told apart), and PermissionDenied (403) when a member holds none of ``roles``
    (None: any role will do).
    """
    campaign = Campaign.objects.filter(slug=slug).first()
    held = roles_of(user=user, campaign=campaign) if campaign is not None else set()
    if campaign is None or not held:
        raise Http404("No such campaign.")
    if roles is not None and not held.intersection(roles):
        raise PermissionDenied("Your role in this campaign does not allow this.")
    return campaign, held


@functools.cache
def _criterion_sql() -> str:
    """A criterion, its campaign and its current version, and a role the user holds there."""
    return (
        f"SELECT {plain_rows.columns(Criterion, 'c')}, {plain_rows.columns(Campaign, 'p')},"
        f" {plain_rows.columns(CriterionVersion, 'v')}, m.role"
        f" FROM {Criterion._meta.db_table} c JOIN {Campaign._meta.db_table} p ON p.id = c.campaign_id"
        f" LEFT JOIN {CriterionVersion._meta.db_table} v ON v.id = c.current_version_id"
        f" JOIN {Membership._meta.db_table} m ON m.campaign_id = p.id"
        " WHERE p.slug = %s AND c.name = %s AND m.user_id = %s"
    )


def _criterion_of(row: tuple) -> Criterion:
    """The criterion of a row of :func:`_criterion_sql`, with its campaign and current version."""
    criterion, campaign, version = plain_rows.instances(row, Criterion, Campaign, CriterionVersion)
    assert isinstance(criterion, Criterion) and isinstance(campaign, Campaign)
    criterion.campaign = campaign
    criterion.current_version = version  # type: ignore[assignment]
    return criterion


def get_criterion_for(
    *, user: User | AnonymousUser, slug: str, name: str, role: str
) -> tuple[Criterion, frozenset[str]]:
    """The campaign's criterion ``name``, its campaign and current guidelines version loaded, and
    every role the user holds in that campaign, when the user holds ``role`` there.

    Raises Http404 and PermissionDenied as :func:`get_campaign_for` does (404 to outsiders,
    403 to members lacking the role), and Http404 when the campaign has no such criterion. One query when
    all is well: it runs on every label, and the roles come with it (a page can then decide what
    else to offer, such as the link to a unit's page, without asking again).
    """
    if user.is_authenticated and user.is_superuser:
        found = (
            Criterion.objects.select_related("campaign", "current_version")
            .filter(campaign__slug=slug, name=name)
            .first()
        )
        if found is not None:
            return found, frozenset(held.value for held in Role)
    elif user.is_authenticated:
        # The criterion joined to the user's memberships in its campaign: one row per role held.
        # In plain SQL (``plain_rows``): it runs on every label, and Django took three times as
        # long to build it as the database to run it.
        with connection.cursor() as cursor:
            cursor.execute(_criterion_sql(), [slug, name, user.pk])
            rows = cursor.fetchall()
        roles = frozenset(row[-1] for row in rows)
        if role in roles:
            return _criterion_of(rows[0]), roles
    # Something is refused: say what, in the same order as every other page.
    get_campaign_for(user=user, slug=slug, roles=[role])
    raise Http404("No such criterion.")


def campaigns_managed_by(*, user: User | AnonymousUser) -> QuerySet[Campaign]:
    """Campaigns the user manages (every campaign for a superuser), by name."""
    if not user.is_authenticated or user.is_superuser:
        return campaigns_for(user=user).order_by("name")
    # One filter(): the membership naming the user is the one that says manager.
    managed = Campaign.objects.filter(memberships__user=user, memberships__role=Role.MANAGER)
    return managed.distinct().order_by("name")


def campaigns_for(*, user: User | AnonymousUser) -> QuerySet[Campaign]:
    """Campaigns the user is a member of (every campaign for a superuser)."""
    if not user.is_authenticated:
        return Campaign.objects.none()
    if user.is_superuser:
        return Campaign.objects.all()
    return Campaign.objects.filter(memberships__user=user).distinct()
