"""Two managers stepping down at the same moment on PostgreSQL: one succeeds, the other is
refused, and the campaign keeps a manager (the campaign's row is locked during the check)."""

from __future__ import annotations

import threading

import pytest
from django.conf import settings
from django.db import connection

from annotation import team
from annotation.models import Membership, Role
from tests.factories import make_campaign, member

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        "postgresql" not in settings.DATABASES["default"]["ENGINE"], reason="needs PostgreSQL row locks"
    ),
]


@pytest.mark.django_db(transaction=True)
def test_two_managers_stepping_down_at_once_leave_one_manager():
    campaign = make_campaign(name="Two managers")
    first, second = member(campaign, Role.MANAGER), member(campaign, Role.MANAGER)
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def step_down(user):
        try:
            start.wait()
            team.revoke_roles(campaign=campaign, user=user, roles=[Role.MANAGER], by=user)
            outcomes.append("revoked")
        except team.TeamError:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=step_down, args=(user,)) for user in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused", "revoked"]
    assert Membership.objects.filter(campaign=campaign, role=Role.MANAGER).count() == 1
