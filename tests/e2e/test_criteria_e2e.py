"""The criteria pages and a criterion with categories in a real Chromium under the
Content-Security-Policy (DEBUG off): the criteria list and edit pages, the annotation page of a
categorical criterion (labelled by its keys) and its report, in English and French at 1440 and
390 px, without violation, console error or sideways scroll; every form submitted with the
values the page gives it."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Label, Level, Role, Stage, Unit
from tests.categorical import categorical_campaign
from tests.e2e.conftest import needs_chromium, settle, shoot
from tests.e2e.test_pages_e2e import STICKING_OUT, open_context, overflow, submit_with_defaults, visit
from tests.factories import add_member, make_answer, make_campaign, make_user, sample_units

pytestmark = [pytest.mark.e2e, needs_chromium]


def build():
    campaign = make_campaign(name="Correctness (e2e)")
    criterion, _, _ = categorical_campaign(campaign)
    fresh = [Unit.objects.get(answer=make_answer(campaign=campaign), level=Level.ANSWER) for _ in range(3)]
    sample_units(criterion=criterion, units=fresh)
    people = {}
    for username, role in (("manon", Role.MANAGER), ("anna", Role.ANALYST), ("claire", Role.ANNOTATOR)):
        people[username] = make_user(username=username)
        add_member(campaign=campaign, user=people[username], roles=[role])
    return campaign, criterion, fresh, people


@pytest.mark.django_db(transaction=True)
def test_the_pages_in_two_languages_at_two_widths(live_server, browser):
    assert not settings.DEBUG
    campaign, criterion, _, people = build()
    slug = campaign.slug
    pages = [
        ("manon", reverse("annotation:criteria", args=[slug])),
        ("manon", reverse("annotation:criterion_edit", args=[slug, criterion.name])),
        ("anna", reverse("evaluation:report", args=[slug, criterion.name])),
        ("claire", reverse("annotation:annotate", args=[slug, criterion.name, "label"])),
    ]
    wide = []
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            for n, (persona, path) in enumerate(pages):
                context, page, problems = open_context(
                    browser, live_server, width=width, locale=locale, user=people[persona]
                )
                visit_ok = live_server.url + path
                response = page.goto(visit_ok)
                assert response.status == 200, path
                settle(page)
                assert page.evaluate("window.__violations") == [], path
                assert problems == [], (path, problems)
                shoot(page, f"{locale[:2]}-{width}-{n}.png")
                if overflow(page) > 0:
                    wide.append(f"{locale} {width} {path}: {page.evaluate(STICKING_OUT)}")
                context.close()
    assert wide == [], "\n".join(wide)


@pytest.mark.django_db(transaction=True)
def test_a_category_is_labelled_by_its_key(live_server, browser):
    campaign, criterion, fresh, people = build()
    context, page, problems = open_context(browser, live_server, user=people["claire"])
    visit(
        page,
        live_server.url + reverse("annotation:annotate", args=[campaign.slug, criterion.name, "label"]),
        problems,
    )
    before = page.get_attribute("#work", "data-unit")
    page.wait_for_timeout(settings.LABEL_KEY_GUARD_MS + 150)  # a key just after the paint is refused
    page.keyboard.press("4")
    page.wait_for_function("before => document.getElementById('work').dataset.unit !== before", arg=before)
    page.wait_for_function("() => !document.documentElement.hasAttribute('data-saving')")
    assert page.evaluate("window.__violations") == [] and problems == []
    stored = Label.objects.get(user=people["claire"], stage=Stage.LABEL)
    assert (stored.unit_id, stored.value) == (int(before), 4)
    context.close()


@pytest.mark.django_db(transaction=True)
def test_every_form_submits_with_the_values_the_page_gives_it(live_server, browser):
    campaign, criterion, _, people = build()
    slug = campaign.slug
    criteria = reverse("annotation:criteria", args=[slug])
    edit = reverse("annotation:criterion_edit", args=[slug, criterion.name])
    report = reverse("evaluation:report", args=[slug, criterion.name])
    forms = [
        # The new criterion has no name until the manager gives one: the page says so, in place.
        ("manon", criteria, "form.criterion-form", criteria, "POST", {400}),
        ("manon", edit, "form.criterion-form", edit, "POST", {302}),
        ("anna", report, "form.report-form", report, "GET", {200}),
    ]
    for locale in ("en-GB", "fr-FR"):
        for persona, page_path, form, path, method, statuses in forms:
            context, page, problems = open_context(browser, live_server, locale=locale, user=people[persona])
            assert page.goto(live_server.url + page_path).status == 200
            status = submit_with_defaults(page, form=form, path=path, method=method)
            assert status in statuses, (locale, page_path, status)
            assert page.evaluate("window.__violations") == []
            expected = (
                "400 ",
                "console error: Failed to load resource: the server responded with a status of 400",
            )
            assert [p for p in problems if not p.startswith(expected)] == [], (page_path, problems)
            context.close()
    criterion.refresh_from_db()
    # Saving the form as shown changes nothing: still five categories, one version of the texts.
    assert len(criterion.categories) == 5 and criterion.versions.count() == 1
