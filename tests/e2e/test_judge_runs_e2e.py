"""Judge runs that tell the truth, in a real Chromium under the Content-Security-Policy (DEBUG off):
a run asked of a judge that cannot work is refused on the form with the reason, in English and
French at 1440 and 390 px; a run whose calls all fail reads "Failed" with its failures grouped
by reason; a run with some failures reads "Done with N failures". The runs start from the form,
which otherwise keeps the values the page gives it; the scripted LLM server (tests/llm_server.py)
answers the real ``openai`` client of the live server."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from django.urls import reverse

from annotation.models import Role
from evaluation.models import Judge, JudgeRun
from tests.e2e.conftest import mark_document, needs_chromium, settle, shoot
from tests.e2e.test_pages_e2e import STICKING_OUT, open_context, overflow, submit_with_defaults
from tests.factories import add_member, make_answer, make_campaign, make_user
from tests.llm_server import Reply, ScriptedLLMServer

pytestmark = [pytest.mark.e2e, needs_chromium]

ANSWERS = 6
# A 400 the form expects is shown in the page; Chromium logs its status as a console error.
REFUSAL_LOGGED = ("400 ", "console error: Failed to load resource: the server responded with a status of 400")


def build():
    campaign = make_campaign(name="Velmont (judge runs e2e)")
    for _ in range(ANSWERS):
        make_answer(campaign=campaign)
    manon = make_user(username="manon")
    add_member(campaign=campaign, user=manon, roles=[Role.MANAGER])
    return campaign, manon


def start(page, *, judge: str | None = None, concurrency: str | None = None) -> int:
    """Submit the runs page's form as the page gives it, but for the judge's name and the
    concurrency when given; the response's status."""
    form = page.locator("form.grid")
    form.locator("select[name=criterion]").select_option("relevance")
    if judge is not None:
        form.locator("input[name=judge]").fill(judge)
    if concurrency is not None:
        form.locator("input[name=concurrency]").fill(concurrency)
    mark_document(page)
    with page.expect_response(lambda r: r.request.method == "POST") as sent:
        form.locator("button[type=submit]").click()
    settle(page, sent.value.request)
    return sent.value.status


@pytest.mark.django_db(transaction=True)
def test_a_judge_that_cannot_work_is_refused_on_the_form_in_both_languages(live_server, browser, settings):
    assert not settings.DEBUG
    settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = "", None
    campaign, manon = build()
    runs_page = live_server.url + reverse("evaluation:run_list", args=[campaign.slug])
    said = {
        "en-GB": "judge: no API key is configured for 'gpt'",
        "fr-FR": "judge: aucune clé d’API n’est configurée pour 'gpt'",
    }
    for locale in ("en-GB", "fr-FR"):
        for width in (1440, 390):
            context, page, problems = open_context(
                browser, live_server, width=width, locale=locale, user=manon
            )
            assert page.goto(runs_page).status == 200
            assert start(page, judge="gpt") == 400
            alert = page.locator("ul.error[role=alert]")
            assert alert.inner_text().startswith(said[locale]), alert.inner_text()
            # What was typed stays, to be corrected rather than typed again.
            assert page.locator("input[name=judge]").input_value() == "gpt"
            assert page.evaluate("window.__violations") == []
            assert [p for p in problems if not p.startswith(REFUSAL_LOGGED)] == []
            assert overflow(page) <= 0, page.evaluate(STICKING_OUT)
            shoot(page, f"judge-run-refused-{locale[:2]}-{width}.png")
            context.close()
    assert not Judge.objects.filter(name="gpt").exists() and not JudgeRun.objects.exists()

    # The form as the page gives it (the offline judge) starts a run, which ends done.
    context, page, problems = open_context(browser, live_server, user=manon)
    page.goto(runs_page)
    path = reverse("evaluation:run_list", args=[campaign.slug])
    assert submit_with_defaults(page, form="form.grid", path=path, method="POST") == 302
    assert urlparse(page.url).path == reverse(
        "evaluation:run_detail", args=[campaign.slug, JudgeRun.objects.get().pk]
    )
    assert page.locator("#run-status").inner_text() == "Done"
    assert problems == []
    context.close()


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_calls_all_fail_reads_failed_with_its_reasons_grouped(live_server, browser, settings):
    campaign, manon = build()
    with ScriptedLLMServer() as server:
        settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = "sk-test", server.base_url
        # The check before the run is answered; then every prompt gets prose, never verdicts.
        server.enqueue(Reply("OK"), *["invalid_json"] * (3 * ANSWERS))
        context, page, problems = open_context(browser, live_server, user=manon)
        page.goto(live_server.url + reverse("evaluation:run_list", args=[campaign.slug]))
        assert start(page, judge="gpt") == 302
        assert server.pending_faults == 0
    run = JudgeRun.objects.get()
    assert (run.status, run.done_units, run.failed_units) == (JudgeRun.Status.FAILED, 0, ANSWERS)
    assert page.locator("#run-status").inner_text() == f"Failed: {ANSWERS} of {ANSWERS} units"
    rows = page.locator("table.failure-reasons tbody tr")
    assert rows.count() == 1
    assert rows.first.locator("td").first.inner_text() == f"{ANSWERS}\u00a0×"
    assert "invalid verdicts" in rows.first.inner_text()
    units = rows.first.locator(".reason-unit-list a")
    assert not units.first.is_visible()
    rows.first.locator("summary").click()
    assert units.count() == ANSWERS and units.first.is_visible()
    assert page.locator("svg.run-bar rect.failed").get_attribute("width") == "100.0"
    assert page.evaluate("window.__violations") == [] and problems == []
    shoot(page, "judge-run-failed-en-1440.png")
    context.close()
    for locale, status in (("en-GB", f"Failed: {ANSWERS} of {ANSWERS} units"), ("fr-FR", "En échec")):
        context, page, problems = open_context(browser, live_server, width=390, locale=locale, user=manon)
        page.goto(live_server.url + reverse("evaluation:run_detail", args=[campaign.slug, run.pk]))
        assert page.locator("#run-status").inner_text().startswith(status)
        assert overflow(page) <= 0, page.evaluate(STICKING_OUT)
        assert problems == []
        shoot(page, f"judge-run-failed-{locale[:2]}-390.png")
        context.close()


@pytest.mark.django_db(transaction=True)
def test_a_run_with_some_failures_reads_done_with_them(live_server, browser, settings):
    campaign, manon = build()
    with ScriptedLLMServer() as server:
        settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = "sk-test", server.base_url
        # The check, then the first answer's prompt three times without verdicts; the rest judged.
        server.enqueue(Reply("OK"), "invalid_json", "invalid_json", "invalid_json")
        context, page, problems = open_context(browser, live_server, user=manon)
        page.goto(live_server.url + reverse("evaluation:run_list", args=[campaign.slug]))
        assert start(page, judge="gpt", concurrency="1") == 302
    assert page.locator("#run-status").inner_text() == "Done with 1 failure"
    assert page.locator("table.failure-reasons tbody tr").count() == 1
    assert page.locator("svg.run-bar rect.failed").count() == 1
    page.goto(live_server.url + reverse("evaluation:run_list", args=[campaign.slug]))
    assert page.locator("td .badge.warn").inner_text() == "Done with 1 failure"
    assert problems == []
    context.close()
