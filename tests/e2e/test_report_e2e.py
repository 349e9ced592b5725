"""The report page in Chromium with DEBUG off, as an analyst reads it: top down (the answer, the
change against the previous version, how sure, how it was computed folded) in English and French
at 1440 and 390 px; printed (print media: every section there, no "Loading…", no navigation);
its PDF and its workbook (whole, and sent as it is written) downloaded through the page's links;
the small-themes option at both widths."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Question, Role
from tests.e2e.conftest import COUNT_REQUESTS, needs_chromium, settle, shoot
from tests.e2e.test_pages_e2e import open_context, overflow
from tests.evaluation.measures.test_comparison import _outcomes, _version
from tests.factories import add_member, make_user

pytestmark = [pytest.mark.e2e, needs_chromium]

WORDS = {
    "en-GB": ("The answer", "How sure we are, and why", "How this was computed", "Loading"),
    "fr-FR": ("La réponse", "Avec quelle certitude, et pourquoi", "Comment c'est calculé", "Chargement"),
}
# The chart's text, as drawn: its font size times the SVG's scale on the screen.
CHART_TEXT_PX = """() => [...document.querySelectorAll('.answer-chart svg.chart')]
  .filter((svg) => svg.getBoundingClientRect().width > 0)
  .map((svg) => svg.getBoundingClientRect().width / svg.viewBox.baseVal.width * 12)"""


def build():
    first = _version("Assistant v1 (e2e)", _outcomes(1, 0.0))
    second = _version("Assistant v2 (e2e)", _outcomes(2, 0.2))
    analyst = make_user(username="anna")
    for campaign in (first, second):
        add_member(campaign=campaign, user=analyst, roles=[Role.ANALYST])
    return second, analyst


def report_url(live_server, campaign, **query) -> str:
    path = reverse("evaluation:report", args=[campaign.slug, "relevance"])
    return live_server.url + path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


@pytest.mark.django_db(transaction=True)
def test_the_report_reads_top_down_in_english_and_french_at_both_widths(live_server, browser):
    assert not settings.DEBUG
    campaign, analyst = build()
    for locale, (answer, sure, method, loading) in WORDS.items():
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=analyst
            )
            page.goto(report_url(live_server, campaign))
            settle(page)
            shoot(page, f"report-{locale[:2]}-{width}.png")
            headings = page.locator("#report-results h2").all_inner_texts()
            assert [h for h in headings if h in (answer, sure, method)] == [answer, sure, method]
            # The change against the previous version came in right after the page, under the answer.
            change = page.locator("#version-change")
            assert change.is_visible() and "Assistant v1 (e2e)" in change.inner_text()
            assert page.locator(".version-row").count() == 3  # Finance, IT, overall
            assert loading not in page.inner_text("#report-results")
            # Each theme's estimate in view beside its name, on a phone too.
            for row in page.locator("tr.answer-row").all():
                for cell in (row.locator("th"), row.locator("td strong")):
                    box = cell.bounding_box()
                    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (
                        locale,
                        width,
                    )
            sizes = page.evaluate(CHART_TEXT_PX)
            assert len(sizes) == 1 and sizes[0] >= 11, (locale, width, sizes)
            # How it was computed: folded, every column inside.
            details = page.locator("details#report-method")
            assert details.get_attribute("open") is None
            assert not page.locator("table.full-table").is_visible()
            details.locator("summary").click()
            assert page.locator("table.full-table").is_visible()
            assert overflow(page) <= 0, (locale, width)
            assert page.get_attribute("html", "lang") == locale[:2]
            assert page.evaluate("window.__violations") == [] and problems == []
            context.close()


@pytest.mark.django_db(transaction=True)
def test_printing_the_page_gives_the_whole_report(live_server, browser):
    campaign, analyst = build()
    for locale, (answer, _sure, method, loading) in WORDS.items():
        context, page, problems = open_context(browser, live_server, locale=locale, user=analyst)
        page.goto(report_url(live_server, campaign))
        settle(page)
        page.emulate_media(media="print")
        text = page.inner_text("body")
        assert loading not in text and "Loading…" not in text
        assert answer in text and method in text
        assert page.locator("table.full-table").is_visible()  # the folded part prints unfolded
        assert page.locator("#automatic-metrics").is_visible()  # loaded with the page, not on scroll
        assert page.locator("#version-change").is_visible()
        assert (
            not page.locator("header.topbar").is_visible()
            and not page.locator("form.report-form").is_visible()
        )
        shoot(page, f"print-{locale[:2]}.png")
        assert problems == []
        context.close()


@pytest.mark.django_db(transaction=True)
def test_the_pdf_downloads_through_the_pages_link(live_server, browser, tmp_path):
    campaign, analyst = build()
    for locale, (answer, *_rest) in WORDS.items():
        context = browser.new_context(
            viewport={"width": 1440, "height": 900}, locale=locale, accept_downloads=True
        )
        context.add_init_script(COUNT_REQUESTS)
        from tests.e2e.test_pages_e2e import session_for

        context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": session_for(analyst), "url": live_server.url}]
        )
        page = context.new_page()
        page.goto(report_url(live_server, campaign, method="study"))
        settle(page)
        with page.expect_download(timeout=180_000) as download:
            page.locator("a.pdf-link").click()
        assert download.value.suggested_filename == (f"{campaign.slug}-relevance-imported-study.pdf")
        target = tmp_path / f"report-{locale[:2]}.pdf"
        download.value.save_as(target)
        assert target.read_bytes().startswith(b"%PDF-")
        if shutil.which("pdftotext"):
            text = subprocess.run(
                ["pdftotext", str(target), "-"], capture_output=True, check=True
            ).stdout.decode()
            assert answer in text and "Finance" in text and "Assistant v1 (e2e)" in text
            flat = " ".join(text.split())
            assert "imported" in flat and ("study" in flat or "étude" in flat)  # the page's parameters
        context.close()


@pytest.mark.django_db(transaction=True)
def test_the_workbook_downloads_through_the_pages_link_whole_and_as_it_is_written(
    live_server, browser, tmp_path, monkeypatch
):
    from openpyxl import load_workbook

    from annotation.models import Unit
    from evaluation.views import downloads
    from tests.e2e.test_pages_e2e import session_for

    campaign, analyst = build()
    context = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    context.add_init_script(COUNT_REQUESTS)
    context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": session_for(analyst), "url": live_server.url}]
    )
    page = context.new_page()
    sheets = {}
    for whole_bytes, kind in ((downloads.WHOLE_BYTES, "whole"), (1024, "streamed")):
        # The live server runs in this process: past 1 KiB, the workbook goes as it is written.
        monkeypatch.setattr(downloads, "WHOLE_BYTES", whole_bytes)
        page.goto(report_url(live_server, campaign, method="study"))
        settle(page)
        with page.expect_download(timeout=60_000) as download:
            page.get_by_role("link", name="Excel workbook").click()
        assert download.value.failure() is None
        assert download.value.suggested_filename == f"{campaign.slug}-relevance-imported-study.xlsx"
        target = tmp_path / f"report-{kind}.xlsx"
        download.value.save_as(target)
        book = load_workbook(target)
        sheets[kind] = {
            ws.title: [[c.value for c in row] for row in ws.iter_rows() if row[0].value != "Generated"]
            for ws in book.worksheets
            if ws.title != "Summary"  # it says when it was written
        }
    assert sheets["streamed"] == sheets["whole"]
    assert len(sheets["whole"]["Units"]) == 1 + Unit.objects.filter(campaign=campaign).count()
    context.close()


@pytest.mark.django_db(transaction=True)
def test_the_small_themes_option_fits_the_window_at_both_widths(live_server, browser):
    campaign, analyst = build()
    for width in (1440, 390):
        context, page, problems = open_context(browser, live_server, width=width, user=analyst)
        page.goto(report_url(live_server, campaign, shrinkage="on"))
        settle(page)
        shoot(page, f"shrink-{width}.png")
        # Asked for, the shrunk column is shown: the folded part opens with it.
        assert page.locator("details#report-method").get_attribute("open") is not None
        assert page.locator("td.shrunk").first.is_visible()
        assert overflow(page) <= 0, width
        assert problems == []
        context.close()


@pytest.mark.django_db(transaction=True)
def test_the_automatic_metrics_show_their_rate_without_scrolling_on_a_phone(live_server, browser):
    """At 390 px each table of the automatic metrics shows its rate beside the group: the column
    the reader came for is not behind a sideways scroll."""
    campaign, analyst = build()
    # Names as long as a real campaign's (the demo's): they take most of a phone's width.
    Question.objects.filter(campaign=campaign).update(theme="Ressources humaines", difficulty="intermediaire")
    for locale in WORDS:
        context, page, problems = open_context(browser, live_server, width=390, locale=locale, user=analyst)
        page.goto(live_server.url + reverse("evaluation:campaign_overview", args=[campaign.slug]))
        settle(page)
        rights = page.evaluate(
            "[...document.querySelectorAll('#automatic-metrics table thead th')]"
            ".filter(th => ['Rate', 'Taux'].includes(th.innerText.trim()))"
            ".map(th => th.getBoundingClientRect().right)"
        )
        assert rights and max(rights) <= page.evaluate("window.innerWidth"), rights
        assert problems == []
        context.close()
