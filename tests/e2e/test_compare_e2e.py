"""The comparison page with versions that share question ids, in a real Chromium (DEBUG off):
compared by question, in English and French, at 1440 and 390 px; its form submitted with the
values the page gives it, then with a third version ticked."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Role
from tests.e2e.conftest import needs_chromium, shoot
from tests.e2e.test_pages_e2e import STICKING_OUT, open_context, overflow, submit_with_defaults, visit
from tests.evaluation.measures.test_comparison import _outcomes, _version
from tests.factories import add_member, make_user

pytestmark = [pytest.mark.e2e, needs_chromium]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("locale", ["en-GB", "fr-FR"])
def test_versions_sharing_questions_are_compared_by_question_in_the_browser(live_server, browser, locale):
    versions = [
        _version("Assistant v1", _outcomes(1, 0.0)),
        _version("Assistant v2", _outcomes(2, 0.1)),
        _version("Assistant v3", _outcomes(3, 0.3)),
    ]
    analyst = make_user(username="anna")
    for campaign in versions:
        add_member(campaign=campaign, user=analyst, roles=[Role.ANALYST])
    compare = reverse("evaluation:compare", args=[versions[0].slug, "relevance"])
    for width in (1440, 390):
        context, page, problems = open_context(browser, live_server, width=width, locale=locale, user=analyst)
        visit(page, live_server.url + compare + f"?other={versions[1].slug}", problems)
        assert page.locator("#paired-note").is_visible()
        assert page.locator("table.paired-table").count() >= 4
        shoot(page, f"paired-{locale[:2]}-{width}.png")

        # The form as the page gives it: the same comparison again.
        status = submit_with_defaults(page, form="form.report-form", path=compare, method="GET")
        assert status == 200
        assert page.locator("#paired-note").is_visible()

        # A third version ticked: every pair, three rows per theme.
        page.locator(f"input[name=more][value='{versions[2].slug}']").check()
        status = submit_with_defaults(page, form="form.report-form", path=compare, method="GET")
        assert status == 200
        table = page.locator("table.paired-table[data-estimate=ppi]")
        assert table.locator("tr[data-theme=overall]").count() == 3
        assert "Assistant v2 → Assistant v3" in table.inner_text()
        assert overflow(page) <= 0, page.evaluate(STICKING_OUT)
        # The difference, what the page is for, in the window without scrolling sideways.
        box = table.locator("tr[data-theme=overall] td.lead").first.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box
        shoot(page, f"three-{locale[:2]}-{width}.png")
        assert problems == [], problems
        context.close()
