"""Titles, refusals and the token's copy button in Chromium with DEBUG off, in English and French:
the criterion forms submitted with their default values (every refusal shown at once, then a
criterion made and its title refused to a second one), the team's grant and revoke forms with
theirs (nothing to revoke beside the only manager, a forced revocation answered on the team
page), the token form with its defaults (a name asked for) then a token made and copied with its
button; the pages at 1440 and 390 px without sideways scroll."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Criterion, Membership, Role
from api.models import ApiToken
from tests.e2e.conftest import needs_chromium, settle, shoot
from tests.e2e.test_pages_e2e import open_context, overflow, submit_with_defaults, visit
from tests.evaluation.measures.test_stability import repeated
from tests.factories import add_member, make_campaign, make_user

pytestmark = [pytest.mark.e2e, needs_chromium]

LOCALES = ("en-GB", "fr-FR")
ALL_ERRORS = {
    "en": ("Name: This field is required.", "Title: give the criterion a title"),
    "fr": ("Nom : Ce champ est obligatoire.", "Intitulé : donnez un intitulé au critère"),
}


def text(page) -> str:
    return " ".join(page.inner_text("main").replace("\xa0", " ").split())


@pytest.mark.django_db(transaction=True)
def test_the_criterion_forms_submit_with_their_defaults_and_show_every_refusal_at_once(live_server, browser):
    assert not settings.DEBUG
    campaign = make_campaign(name="Velmont criteria (e2e)")
    manon = make_user(username="manon")
    add_member(campaign=campaign, user=manon, roles=[Role.MANAGER])
    criteria = reverse("annotation:criteria", args=[campaign.slug])
    for locale in LOCALES:
        language = locale[:2]
        context, page, problems = open_context(browser, live_server, locale=locale, user=manon)
        visit(page, live_server.url + criteria, problems)
        # As it comes: no name and no title, both said at once, in place.
        assert submit_with_defaults(page, form="form.criterion-form", path=criteria, method="POST") == 400
        shown = text(page)
        for message in ALL_ERRORS[language]:
            assert message in shown, (locale, message, shown[:600])
        shoot(page, f"titles-criterion-refused-{locale}-1440.png")
        page.set_viewport_size({"width": 390, "height": 900})
        assert overflow(page) <= 0
        shoot(page, f"titles-criterion-refused-{locale}-390.png")
        page.set_viewport_size({"width": 1440, "height": 900})
        problems.clear()  # the 400 itself
        name = f"tone_{language}"
        page.fill("#id_name", name)
        page.fill("#id_title", f"Ton {language}")
        with page.expect_navigation():
            page.locator("form.criterion-form button[type=submit]").click()
        assert Criterion.objects.filter(campaign=campaign, name=name, title=f"Ton {language}").exists()
        assert f"Ton {language}" in text(page)
        # A second criterion under the same title, in capitals and with an accent: refused, named.
        page.fill("#id_name", f"{name}_2")
        page.fill("#id_title", f"TÔN {language.upper()}")
        with page.expect_navigation():
            page.locator("form.criterion-form button[type=submit]").click()
        assert f"“Ton {language}”" in text(page) or f"« Ton {language} »" in text(page)
        assert not Criterion.objects.filter(name=f"{name}_2").exists()
        problems.clear()
        # The edit form as it comes saves and changes nothing.
        edit = reverse("annotation:criterion_edit", args=[campaign.slug, name])
        visit(page, live_server.url + edit, problems)
        assert page.locator("h1").inner_text().startswith(f"Ton {language}")
        assert submit_with_defaults(page, form="form.criterion-form", path=edit, method="POST") == 302
        assert Criterion.objects.get(name=name).versions.count() <= 1
        assert page.evaluate("window.__violations") == [] and problems == []
        context.close()


@pytest.mark.django_db(transaction=True)
def test_the_team_forms_with_their_defaults_and_nothing_to_revoke_beside_the_only_manager(
    live_server, browser
):
    campaign = make_campaign(name="Velmont team rights (e2e)")
    manon = make_user(username="manon")
    add_member(campaign=campaign, user=manon, roles=[Role.MANAGER])
    team = reverse("annotation:team", args=[campaign.slug])
    for locale in LOCALES:
        nadia = make_user(username=f"nadia-{locale[:2]}")
        add_member(campaign=campaign, user=nadia, roles=[Role.ANNOTATOR])
        context, page, problems = open_context(browser, live_server, locale=locale, user=manon)
        visit(page, live_server.url + team, problems)
        assert page.locator(f"a[href*='team/revoke/?user={manon.pk}&role=manager']").count() == 0
        assert page.locator(f"a[href*='team/remove/?user={manon.pk}']").count() == 0
        assert page.locator("#last-manager").is_visible()
        # The grant form of nadia's row as it comes (the first role she lacks: reviewer).
        grant = reverse("annotation:team_grant", args=[campaign.slug])
        row = f"form.team-grant:has(#grant-{nadia.pk})"
        assert submit_with_defaults(page, form=row, path=grant, method="POST") == 302
        assert Membership.objects.filter(campaign=campaign, user=nadia, role=Role.REVIEWER).exists()
        # Revoking goes through its confirmation page, whose form is submitted as it comes.
        with page.expect_navigation():
            page.click(f"a[href*='team/revoke/?user={nadia.pk}&role=reviewer']")
        settle(page)
        revoke = reverse("annotation:team_revoke", args=[campaign.slug])
        assert submit_with_defaults(page, form="main form", path=revoke, method="POST") == 302
        assert not Membership.objects.filter(campaign=campaign, user=nadia, role=Role.REVIEWER).exists()
        # Forced by its address, the revocation of the only manager: the team page says why.
        page.goto(live_server.url + revoke + f"?user={manon.pk}&role=manager")
        settle(page)
        assert page.url.endswith(team)
        message = page.locator(".messages .msg.error").inner_text()
        assert "manon" in message and ("last manager" in message or "dernier responsable" in message)
        assert Membership.objects.filter(campaign=campaign, user=manon, role=Role.MANAGER).exists()
        assert page.evaluate("window.__violations") == [] and problems == []
        context.close()


@pytest.mark.django_db(transaction=True)
def test_a_token_is_asked_a_name_then_made_and_copied_with_its_button(live_server, browser):
    person = make_user(username="pipeline")
    tokens = reverse("api:tokens")
    for locale in LOCALES:
        context, page, problems = open_context(browser, live_server, locale=locale, user=person)
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
        visit(page, live_server.url + tokens, problems)
        before = ApiToken.objects.count()
        assert submit_with_defaults(page, form="form.token-form", path=tokens, method="POST") == 400
        asked = "give the token a name" if locale == "en-GB" else "donnez un nom au jeton"
        assert asked in text(page) and ApiToken.objects.count() == before
        shoot(page, f"titles-token-refused-{locale}-1440.png")
        problems.clear()
        page.fill("#id_name", f"CI {locale}")
        with page.expect_navigation():
            page.locator("form.token-form button[type=submit]").click()
        secret = page.locator("#new-token").inner_text().strip()
        assert re.fullmatch(r"attest_[A-Za-z0-9_-]{43}", secret)
        button = page.locator("button[data-copy='new-token']")
        assert button.is_visible()
        button.click()
        page.wait_for_function("() => document.getElementById('new-token-status').textContent !== ''")
        assert page.evaluate("navigator.clipboard.readText()") == secret
        status = page.locator("#new-token-status").inner_text()
        assert status.startswith("Copied" if locale == "en-GB" else "Copié")
        assert ApiToken.objects.filter(name=f"CI {locale}").count() == 1
        shoot(page, f"titles-token-made-{locale}-1440.png")
        page.set_viewport_size({"width": 390, "height": 900})
        assert overflow(page) <= 0
        shoot(page, f"titles-token-made-{locale}-390.png")
        assert page.evaluate("window.__violations") == [] and problems == []
        context.close()


def stability_campaigns():
    """One campaign whose questions were asked once (nothing to compare) and one with repeated
    answers judged on a criterion of its own."""
    manon = make_user(username="manon")
    single = make_campaign(name="Velmont once (e2e)")
    repeated_campaign = make_campaign(name="Velmont repeated (e2e)")
    for campaign in (single, repeated_campaign):
        add_member(campaign=campaign, user=manon, roles=[Role.MANAGER])
    from evaluation.models import Judge

    judge = Judge.objects.create(campaign=repeated_campaign, name="gpt", kind=Judge.Kind.OPENAI)
    tone = Criterion.objects.create(
        campaign=repeated_campaign, name="tone_b", title="Ton de la réponse", level="answer"
    )
    repeated(repeated_campaign, {"Finance-1": [1, 1, 0], "IT-1": [1, 0, 0]}, judge=judge, criterion=tone)
    return manon, single, repeated_campaign


@pytest.mark.django_db(transaction=True)
def test_the_pages_changed_at_desktop_and_phone_widths_in_english_and_french(live_server, browser):
    manon, single, campaign = stability_campaigns()
    pages = [
        ("criteria", reverse("annotation:criteria", args=[campaign.slug]), 200),
        ("criterion", reverse("annotation:criterion_edit", args=[campaign.slug, "tone_b"]), 200),
        ("team", reverse("annotation:team", args=[campaign.slug]), 200),
        ("report", reverse("evaluation:report", args=[campaign.slug, "tone_b"]), 200),
        ("stability", reverse("evaluation:stability", args=[campaign.slug]), 200),
        ("stability-empty", reverse("evaluation:stability", args=[single.slug]), 200),
        ("import-refused", reverse("evaluation:import_new"), 403),
        ("tokens", reverse("api:tokens"), 200),
    ]
    wide = []
    for locale in LOCALES:
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=manon
            )
            for name, path, status in pages:
                response = page.goto(live_server.url + path)
                assert response.status == status, (name, response.status)
                settle(page)
                if name == "stability":
                    assert "tone_b" not in text(page) and "Ton de la réponse" in text(page)
                if name == "stability-empty":
                    assert page.locator("#stability-empty").is_visible() and "No data" not in text(page)
                assert page.evaluate("window.__violations") == [], name
                shoot(page, f"titles-{name}-{locale}-{width}.png")
                if overflow(page) > 0:
                    wide.append(f"{name} {locale} {width}")
            # The import page answers its refusal with a 403, on purpose.
            expected = [p for p in problems if not p.startswith("403 ") and "status of 403" not in p]
            assert expected == [], expected
            context.close()
    assert wide == []
