"""The team page: managers add members by username, grant and revoke roles, remove members (after
a confirmation); outsiders get 404, other members 403; a campaign always keeps a manager; labels
stay and leases end when a role goes."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import ADDITION, DELETION, LogEntry
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, Label, Membership, Role
from annotation.workflow import next_unit
from tests.factories import add_member, label, make_user, member, sampled

pytestmark = pytest.mark.django_db


def url(campaign, name: str = "team") -> str:
    return reverse(f"annotation:{name}", args=[campaign.slug])


def roles(campaign, user) -> set[str]:
    return set(Membership.objects.filter(campaign=campaign, user=user).values_list("role", flat=True))


def test_the_team_page_lists_members_with_their_roles(client_for, campaign, manager, annotator, reviewer):
    response = client_for(manager).get(url(campaign))
    assert response.status_code == 200
    page = response.content.decode()
    assert "3 members" in page
    for name in ("manager", "annotator", "reviewer"):
        assert name in page
    assert 'value="annotator" id="id_roles_0" checked' in page  # annotator unless said otherwise


def test_the_team_page_answers_in_a_bounded_number_of_queries(client_for, campaign, manager):
    client = client_for(manager)
    client.get(url(campaign))
    with CaptureQueriesContext(connection) as few:
        assert client.get(url(campaign)).status_code == 200
    for n in range(10):
        member(campaign, Role.ANNOTATOR, Role.REVIEWER, username=f"extra{n}")
    with CaptureQueriesContext(connection) as many:
        assert client.get(url(campaign)).status_code == 200
    # Session, user, campaign, the manager's roles, the team with its accounts.
    assert len(few) == len(many) == 5, [q["sql"] for q in many.captured_queries]


def test_a_manager_adds_an_existing_account_with_roles(client_for, campaign, manager):
    make_user(username="Nadia")
    response = client_for(manager).post(
        url(campaign), {"username": "nadia", "roles": ["annotator", "reviewer"]}
    )
    assert response.status_code == 302 and response["Location"] == url(campaign)
    nadia = Membership.objects.filter(campaign=campaign, role="annotator").get().user
    assert nadia.username == "Nadia"
    assert roles(campaign, nadia) == {"annotator", "reviewer"}
    page = client_for(manager).get(url(campaign)).content.decode()
    assert "Nadia: annotator, reviewer granted." in page
    entries = LogEntry.objects.filter(user=manager, action_flag=ADDITION)
    assert entries.count() == 2 and {e.change_message for e in entries} == {
        "granted annotator",
        "granted reviewer",
    }


def test_adding_an_unknown_or_inactive_account_is_refused_on_the_username(client_for, campaign, manager):
    sleeper = make_user(username="sleeper")
    sleeper.is_active = False
    sleeper.save()
    for name in ("nobody", "sleeper"):
        response = client_for(manager).post(url(campaign), {"username": name, "roles": ["annotator"]})
        assert response.status_code == 400
        assert f"no active account is named “{name}”" in response.content.decode()
    assert Membership.objects.filter(campaign=campaign).count() == 1


def test_adding_without_a_role_is_refused(client_for, campaign, manager):
    make_user(username="nadia")
    response = client_for(manager).post(url(campaign), {"username": "nadia"})
    assert response.status_code == 400
    assert Membership.objects.filter(campaign=campaign).count() == 1


def test_adding_someone_twice_changes_nothing(client_for, campaign, manager, annotator):
    response = client_for(manager).post(url(campaign), {"username": "annotator", "roles": ["annotator"]})
    assert response.status_code == 302
    assert roles(campaign, annotator) == {"annotator"}
    assert "annotator already held these roles." in client_for(manager).get(url(campaign)).content.decode()


def test_a_manager_grants_a_role_to_a_member(client_for, campaign, manager, annotator):
    response = client_for(manager).post(
        url(campaign, "team_grant"), {"user": annotator.pk, "role": "adjudicator"}
    )
    assert response.status_code == 302
    assert roles(campaign, annotator) == {"annotator", "adjudicator"}


def test_granting_to_someone_outside_the_team_is_refused(client_for, campaign, manager, outsider):
    response = client_for(manager).post(
        url(campaign, "team_grant"), {"user": outsider.pk, "role": "annotator"}
    )
    assert response.status_code == 400
    assert not roles(campaign, outsider)


def test_revoking_asks_for_confirmation_then_revokes_and_records_it(client_for, campaign, manager, annotator):
    client = client_for(manager)
    add_member(campaign=campaign, user=annotator, roles=[Role.REVIEWER])
    confirm = client.get(url(campaign, "team_revoke"), {"user": annotator.pk, "role": "reviewer"})
    assert confirm.status_code == 200
    assert "Revoke annotator’s role reviewer?" in confirm.content.decode()
    assert roles(campaign, annotator) == {"annotator", "reviewer"}  # a GET changes nothing
    response = client.post(url(campaign, "team_revoke"), {"user": annotator.pk, "role": "reviewer"})
    assert response.status_code == 302
    assert roles(campaign, annotator) == {"annotator"}
    assert LogEntry.objects.get(action_flag=DELETION).change_message == "revoked reviewer"


def test_removing_asks_for_confirmation_then_removes_every_role(client_for, campaign, manager, annotator):
    client = client_for(manager)
    add_member(campaign=campaign, user=annotator, roles=[Role.ANALYST])
    confirm = client.get(url(campaign, "team_remove"), {"user": annotator.pk})
    assert "Remove annotator from the campaign?" in confirm.content.decode()
    assert client.post(url(campaign, "team_remove"), {"user": annotator.pk}).status_code == 302
    assert not roles(campaign, annotator)
    assert (
        client_for(annotator).get(reverse("evaluation:campaign_overview", args=[campaign.slug])).status_code
        == 404
    )


def test_removing_a_labeller_keeps_their_labels_and_frees_their_leases(
    client_for, campaign, manager, annotator
):
    criterion, units = sampled(campaign=campaign, answers=3)
    label(annotator, criterion, "label", 1)
    held = next_unit(user=annotator, criterion=criterion, stage="label")
    assert held is not None
    confirm = client_for(manager).get(url(campaign, "team_remove"), {"user": annotator.pk})
    assert "The unit they hold now goes back to the queue." in confirm.content.decode()
    client_for(manager).post(url(campaign, "team_remove"), {"user": annotator.pk})
    assert Label.objects.filter(user=annotator).count() == 1
    lease = Assignment.objects.get(user=annotator, label__isnull=True)
    assert lease.expires_at <= timezone.now()
    other = member(campaign, Role.ANNOTATOR)
    assert next_unit(user=other, criterion=criterion, stage="label").pk == held.pk


def test_the_last_manager_keeps_the_role(client_for, campaign, manager):
    client = client_for(manager)
    for name, data in (
        ("team_revoke", {"user": manager.pk, "role": "manager"}),
        ("team_remove", {"user": manager.pk}),
    ):
        # Forced (no page offers it): back to the team page, which says why.
        response = client.post(url(campaign, name), data)
        assert response.status_code == 302 and response["Location"] == url(campaign)
        page = client.get(url(campaign)).content.decode()
        assert '<li class="msg error">manager is the campaign&#x27;s last manager' in page
    assert roles(campaign, manager) == {"manager"}
    assert not LogEntry.objects.exists()


def test_the_confirmation_page_already_refuses_to_revoke_the_last_manager(client_for, campaign, manager):
    client = client_for(manager)
    response = client.get(url(campaign, "team_remove"), {"user": manager.pk})
    assert response.status_code == 302 and response["Location"] == url(campaign)
    page = client.get(url(campaign)).content.decode()
    assert "last manager" in page and 'class="danger"' not in page


def test_the_team_page_offers_no_revoke_or_remove_beside_the_last_manager(
    client_for, campaign, manager, annotator
):
    client = client_for(manager)
    page = client.get(url(campaign)).content.decode()
    assert f"team/revoke/?user={manager.pk}&amp;role=manager" not in page
    assert f"team/remove/?user={manager.pk}" not in page
    assert "(the only manager)" in page and 'id="last-manager"' in page
    # The other members keep theirs.
    assert f"team/revoke/?user={annotator.pk}&amp;role=annotator" in page
    assert f"team/remove/?user={annotator.pk}" in page
    # With a second manager, either may go.
    client.post(url(campaign, "team_grant"), {"user": annotator.pk, "role": "manager"})
    page = client.get(url(campaign)).content.decode()
    assert f"team/revoke/?user={manager.pk}&amp;role=manager" in page
    assert f"team/remove/?user={manager.pk}" in page
    assert "the only manager" not in page


def test_revoking_a_role_the_member_does_not_hold_is_refused(client_for, campaign, manager, annotator):
    client = client_for(manager)
    for method in ("get", "post"):
        data = {"user": annotator.pk, "role": "reviewer"}
        response = getattr(client, method)(url(campaign, "team_revoke"), data)
        assert response.status_code == 302
        assert "annotator does not hold this role." in client.get(url(campaign)).content.decode()
    assert roles(campaign, annotator) == {"annotator"}


def test_with_a_second_manager_a_manager_may_step_down(client_for, campaign, manager):
    other = member(campaign, Role.MANAGER)
    response = client_for(manager).post(url(campaign, "team_revoke"), {"user": manager.pk, "role": "manager"})
    assert response.status_code == 302 and response["Location"] == reverse("evaluation:campaign_list")
    assert roles(campaign, other) == {"manager"} and not roles(campaign, manager)


@pytest.mark.parametrize(
    ("method", "name", "data"),
    [
        ("get", "team", {}),
        ("post", "team", {"username": "outsider", "roles": ["annotator"]}),
        ("post", "team_grant", {"role": "manager"}),
        ("get", "team_revoke", {"role": "annotator"}),
        ("post", "team_revoke", {"role": "annotator"}),
        ("get", "team_remove", {}),
        ("post", "team_remove", {}),
    ],
)
def test_only_managers_reach_the_team_pages(
    client_for, campaign, manager, annotator, analyst, outsider, method, name, data
):
    data = {"user": annotator.pk, **data}
    for person in (annotator, analyst):
        assert getattr(client_for(person), method)(url(campaign, name), data).status_code == 403
    client = client_for(outsider)
    assert getattr(client, method)(url(campaign, name), data).status_code == 404
    client.logout()
    assert getattr(client, method)(url(campaign, name), data).status_code == 302  # to the login page
    assert roles(campaign, annotator) == {"annotator"} and roles(campaign, analyst) == {"analyst"}
    assert not roles(campaign, outsider)


def test_wrong_methods_are_refused(client_for, campaign, manager):
    client = client_for(manager)
    assert client.get(url(campaign, "team_grant")).status_code == 405
    assert client.put(url(campaign)).status_code == 405
