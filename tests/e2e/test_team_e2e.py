"""The team and start pages in Chromium with DEBUG off: a manager adds a member and grants a role
by submitting the forms with their default values and sees the change; both pages in English
and French at 1440 and 390 px."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.urls import reverse

from annotation.models import Membership, Role
from annotation.workflow import next_unit
from tests.e2e.conftest import needs_chromium, settle, shoot
from tests.e2e.test_pages_e2e import open_context, visit
from tests.factories import add_member, make_campaign, make_user, sampled

pytestmark = [pytest.mark.e2e, needs_chromium]


def roles(campaign, user) -> set[str]:
    return set(Membership.objects.filter(campaign=campaign, user=user).values_list("role", flat=True))


@pytest.mark.django_db(transaction=True)
def test_a_manager_adds_a_member_and_grants_a_role_with_the_default_values(live_server, browser):
    assert not settings.DEBUG
    campaign = make_campaign(name="Velmont team (e2e)")
    manon = make_user(username="manon")
    add_member(campaign=campaign, user=manon, roles=[Role.MANAGER])
    nadia = make_user(username="nadia")
    context, page, problems = open_context(browser, live_server, user=manon)
    visit(page, live_server.url + reverse("annotation:team", args=[campaign.slug]), problems)
    page.fill("#id_username", "nadia")
    with page.expect_navigation():
        page.click(".team-add [type=submit]")
    assert "nadia: annotator granted." in page.content()
    assert roles(campaign, nadia) == {"annotator"}
    # The grant form of nadia's row, as it comes: its first role not held (reviewer).
    with page.expect_navigation():
        page.click(f"#grant-{nadia.pk} ~ button")
    assert "nadia: reviewer granted." in page.content()
    assert roles(campaign, nadia) == {"annotator", "reviewer"}
    # Revoking goes through its confirmation page.
    with page.expect_navigation():
        page.click(f"a[href*='team/revoke/?user={nadia.pk}&role=reviewer']")
    settle(page)
    with page.expect_navigation():
        page.click("button.danger")
    assert "nadia: reviewer revoked." in page.content()
    assert roles(campaign, nadia) == {"annotator"}
    assert page.evaluate("window.__violations") == [] and problems == []
    context.close()


@pytest.mark.django_db(transaction=True)
def test_team_and_start_pages_in_english_and_french_at_desktop_and_phone_widths(live_server, browser):
    campaign = make_campaign(name="Velmont due diligence (e2e)")
    manon = make_user(username="manon")
    add_member(campaign=campaign, user=manon, roles=[Role.MANAGER, Role.ANNOTATOR])
    for name, role in (("claire", Role.ANNOTATOR), ("marc", Role.REVIEWER), ("anna", Role.ANALYST)):
        add_member(campaign=campaign, user=make_user(username=name), roles=[role])
    criterion, _ = sampled(campaign=campaign, answers=3)
    claire = User.objects.get(username="claire")
    next_unit(user=claire, criterion=criterion, stage="label")  # a lease the confirmation counts
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=manon
            )
            for name, path in (
                ("start", reverse("evaluation:start")),
                ("team", reverse("annotation:team", args=[campaign.slug])),
                ("remove", reverse("annotation:team_remove", args=[campaign.slug]) + f"?user={claire.pk}"),
            ):
                visit(page, live_server.url + path, problems)
                assert page.get_attribute("html", "lang") == locale[:2]
                if name == "start":
                    assert page.locator("h1").count() == 1
                overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                shoot(page, f"{name}-{locale}-{width}.png")
                assert overflow <= 0, (name, locale, width, overflow)
            context.close()
