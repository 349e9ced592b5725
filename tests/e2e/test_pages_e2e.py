"""Every page, as the persona who uses it, in a real Chromium under the Content-Security-Policy
(DEBUG off): no policy violation, no console error, no 4xx/5xx, nothing wider than the window at
1440 px nor at 390 px (in English and French), then the login forms and the lockout page; then
every form of the analysts' and managers' pages, submitted with the values the page gives it.

The three walks read one campaign, built once for the module (``everything``) on a live server
the module's tests share: the policy walk labels one unit and the forms walk submits its forms,
and the pages and forms of the others take the campaign in either state. Skipped when the
Chromium of tests/chromium.py is missing (the login and lockout pages: test_login_e2e.py).
"""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.test import Client, override_settings
from django.urls import reverse
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from annotation.models import Criterion, Level, Role, Sample, Unit
from evaluation.estimates import snapshots
from evaluation.judge import runs
from evaluation.models import ReportSnapshot
from tests import factories
from tests.e2e.conftest import COUNT_REQUESTS, mark_document, needs_chromium, settle, shoot
from tests.e2e.velmont import ANSWERS, velmont_campaign
from tests.factories import add_member, make_campaign, make_user
from tests.judged import judged_campaign as build_report

pytestmark = [pytest.mark.e2e, needs_chromium]

# Runs before any script of the page: the policy's violations, whatever their source.
WATCH_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(event.violatedDirective + " " + (event.blockedURI || "inline"));
});
"""


def build_everything():
    """A campaign with a sample, labels, an imported judge, a finished lexical run and report
    snapshots; another campaign to compare with; one person per role, plus a superuser."""
    campaign, veracity, _, people = velmont_campaign()
    # velmont_campaign names its questions Q1 to Q4; the factories' numbering must not reuse them.
    while next(factories._seq) <= len(ANSWERS):
        pass
    build_report(campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.run_inline(run_id=runs.create_run(criterion=veracity, judge=judge).pk)
    snapshots.record_snapshots(criterion=relevance, trigger=ReportSnapshot.Trigger.IMPORT)
    other = make_campaign(name="Velmont v2 (e2e)")
    build_report(other)
    for username, role in (("manon", Role.MANAGER), ("anna", Role.ANALYST)):
        people[username] = make_user(username=username)
        add_member(campaign=campaign, user=people[username], roles=[role])
        add_member(campaign=other, user=people[username], roles=[role])
    people["manon"].is_staff = True
    people["manon"].save()
    people["root"] = make_user(username="root", superuser=True)
    return campaign, other, run, people


@pytest.fixture(scope="module")
def everything(shared_live_server, django_db_blocker):
    """``build_everything`` once for the module's walks, with a session cookie per persona."""
    with (
        django_db_blocker.unblock(),
        override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]),
    ):
        campaign, other, run, people = build_everything()
        sessions = {username: session_for(user) for username, user in people.items()}
    return campaign, other, run, people, sessions


def pages(campaign, other, run, people) -> list[tuple[str, str]]:
    """(persona, path) for every page of config/urls.py and the apps' urls.py that renders HTML."""
    slug = campaign.slug
    sample = Sample.objects.filter(campaign=campaign).order_by("pk").first()
    judged = Unit.objects.filter(campaign=campaign, judgments__isnull=False, labels__isnull=False).first()
    sentence = Unit.objects.filter(campaign=campaign, level=Level.SENTENCE).first()
    return [
        ("claire", reverse("evaluation:campaign_list")),
        ("claire", reverse("evaluation:campaign_overview", args=[slug])),
        ("claire", reverse("annotation:work", args=[slug])),
        ("claire", reverse("annotation:annotate", args=[slug, "veracity", "label"])),
        ("marc", reverse("annotation:annotate", args=[slug, "veracity", "review"])),
        ("sophie", reverse("annotation:adjudicate", args=[slug, "veracity"])),
        ("manon", reverse("evaluation:campaign_overview", args=[slug])),
        ("manon", reverse("evaluation:import_new")),
        ("manon", reverse("evaluation:import_into", args=[slug])),
        ("manon", reverse("evaluation:import_format")),
        ("manon", reverse("annotation:sampling", args=[slug])),
        ("manon", reverse("annotation:sample_detail", args=[slug, sample.pk])),
        ("manon", reverse("evaluation:run_list", args=[slug])),
        ("manon", reverse("evaluation:run_detail", args=[slug, run.pk])),
        ("manon", reverse("annotation:history", args=[slug])),
        ("manon", reverse("annotation:team", args=[slug])),
        (
            "manon",
            reverse("annotation:team_revoke", args=[slug]) + f"?user={people['claire'].pk}&role=annotator",
        ),
        ("manon", reverse("annotation:team_remove", args=[slug]) + f"?user={people['claire'].pk}"),
        ("manon", reverse("evaluation:start")),
        ("claire", reverse("evaluation:start")),
        ("manon", reverse("evaluation:annotators", args=[slug])),
        ("sophie", reverse("evaluation:annotators", args=[slug])),
        ("anna", reverse("evaluation:evidence", args=[slug])),
        ("anna", reverse("evaluation:report", args=[slug, "relevance"])),
        ("anna", reverse("evaluation:history", args=[slug, "relevance"])),
        ("anna", reverse("evaluation:compare", args=[slug, "relevance"]) + f"?other={other.slug}"),
        ("anna", reverse("evaluation:disagreements", args=[slug, "relevance"])),
        ("anna", reverse("evaluation:stability", args=[slug])),
        ("anna", reverse("evaluation:unit", args=[slug, judged.pk])),
        ("sophie", reverse("evaluation:unit", args=[slug, sentence.pk])),
        ("claire", reverse("api:tokens")),
        ("root", reverse("admin:index")),
        ("root", reverse("admin:axes_accessattempt_changelist")),
        ("root", reverse("admin:auth_user_change", args=[people["claire"].pk])),
    ]


def session_for(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def open_context(
    browser, live_server, *, width: int = 1440, locale: str = "en-GB", user=None, session: str | None = None
):
    """A context at ``width``, logged in as ``user`` (or with the cookie ``session``), that records
    policy violations, console errors and 4xx/5xx answers; its page and the problems' list."""
    context = browser.new_context(viewport={"width": width, "height": 900}, locale=locale)
    context.add_init_script(WATCH_VIOLATIONS)
    context.add_init_script(COUNT_REQUESTS)
    if user is not None:
        session = session_for(user)
    if session is not None:
        context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": live_server.url}]
        )
    page = context.new_page()
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on(
        "response",
        lambda r: (
            problems.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/login/")
            else None
        ),
    )
    return context, page, problems


def visit(page, url: str, problems: list[str], *, expected: int = 200) -> None:
    response = page.goto(url)
    assert response.status == expected, url
    assert "default-src 'self'" in response.headers["content-security-policy"], url
    settle(page)
    violations = page.evaluate("window.__violations")
    assert violations == [], (url, violations)
    assert problems == [], (url, problems)
    assert overflow(page) <= 0, (url, page.evaluate(STICKING_OUT))


def test_every_page_runs_under_the_policy_without_violation_or_error(
    shared_live_server, shared_db, browser, everything
):
    assert not settings.DEBUG
    live_server = shared_live_server
    campaign, other, run, people, sessions = everything
    contexts = {}
    for persona, path in pages(campaign, other, run, people):
        if persona not in contexts:
            contexts[persona] = open_context(browser, live_server, session=sessions[persona])
        _, page, problems = contexts[persona]
        visit(page, live_server.url + path, problems)
        if path == reverse("annotation:work", args=[campaign.slug]):
            # An htmx swap: the queues come back as a fragment (htmx's indicator style is ours).
            with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
                page.click("#queues button")
            settle(page)
            assert page.evaluate("window.__violations") == [] and problems == []
        if path.endswith("/annotate/veracity/label/"):
            # The annotation script and its htmx requests: one label by keyboard.
            before = page.get_attribute("#work", "data-unit")
            page.wait_for_timeout(settings.LABEL_KEY_GUARD_MS + 150)  # a key just after the paint is refused
            page.keyboard.press("1")
            page.wait_for_function(
                "before => document.getElementById('work').dataset.unit !== before", arg=before
            )
            page.wait_for_function("() => !document.documentElement.hasAttribute('data-saving')")
            assert page.evaluate("window.__violations") == [] and problems == []
    for context, _, _ in contexts.values():
        context.close()

    # Anonymous pages: the two login forms, a wrong password on each (200 with an error), the
    # lockout page (429) after five failures.
    context, page, problems = open_context(browser, live_server)
    for login in (reverse("login"), reverse("admin:login")):
        visit(page, live_server.url + login, problems)
        page.fill("#id_username", "nobody")
        page.fill("#id_password", "wrong password")
        with page.expect_navigation():
            page.click("form:not(.lang-switch) [type=submit]")
        assert page.evaluate("window.__violations") == [] and problems == []
    locked = lock_out(page, live_server)
    assert locked.status == 429
    assert "Too many failed logins" in page.content()
    assert page.evaluate("window.__violations") == []
    assert [p for p in problems if not p.startswith("console error: Failed to load resource")] == []
    context.close()


def lock_out(page, live_server, username: str = "nobody"):
    """Wrong passwords on the login page until the lockout page answers; its response."""
    for _ in range(settings.AXES_FAILURE_LIMIT):
        page.goto(live_server.url + reverse("login"))
        page.fill("#id_username", username)
        page.fill("#id_password", "wrong password")
        with page.expect_navigation() as navigation:
            page.click("form:not(.lang-switch) [type=submit]")
        if navigation.value.status == 429:
            return navigation.value
    return navigation.value


# The outermost elements that stick out of the window on the right, to name in a failure.
STICKING_OUT = """
() => [...document.querySelectorAll("body *")].filter((element) => {
  const right = (e) => e.getBoundingClientRect().right;
  return right(element) > window.innerWidth + 0.5 && right(element.parentElement) <= window.innerWidth + 0.5;
}).map((element) => element.tagName.toLowerCase() + "." + [...element.classList].join(".")).slice(0, 5)
"""


def overflow(page) -> int:
    """How many CSS pixels the page is wider than the window (0 when nothing scrolls sideways)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def test_no_page_scrolls_sideways_on_a_phone_in_english_or_french(
    shared_live_server, shared_db, browser, everything
):
    """At 390 px every page, and the 403 and 404 pages, fit the window: a wide table scrolls
    inside its own container."""
    live_server = shared_live_server
    campaign, other, run, people, sessions = everything
    wide: list[str] = []
    for locale in ("fr-FR", "en-GB"):
        contexts = {}
        refused = [
            ("claire", "/no/such/page/"),  # 404
            ("claire", reverse("annotation:sampling", args=[campaign.slug])),  # 403: an annotator
        ]
        for n, (persona, path) in enumerate(pages(campaign, other, run, people) + refused):
            if persona not in contexts:
                contexts[persona] = open_context(
                    browser, live_server, width=390, locale=locale, session=sessions[persona]
                )
            _, page, _ = contexts[persona]
            page.goto(live_server.url + path)
            settle(page)
            shoot(page, f"{locale[:2]}-{n:02d}.png")
            if overflow(page) > 0:
                wide.append(f"{locale} {path}: {overflow(page)} px too wide, {page.evaluate(STICKING_OUT)}")
        for context, _, _ in contexts.values():
            context.close()
    assert wide == [], "\n".join(wide)

    # On a laptop the report's tables fit their column: none needs its own scrollbar.
    report = live_server.url + reverse("evaluation:report", args=[campaign.slug, "relevance"])
    for locale in ("fr-FR", "en-GB"):
        context, page, _ = open_context(
            browser, live_server, width=1280, locale=locale, session=sessions["anna"]
        )
        page.goto(report)
        settle(page)
        shoot(page, f"report-{locale[:2]}-1280.png")
        assert overflow(page) <= 0
        scrolling = page.evaluate(
            "[...document.querySelectorAll('.table-scroll')].map((e) => e.scrollWidth - e.clientWidth)"
        )
        assert len(scrolling) >= 2 and max(scrolling) <= 0, (locale, scrolling)
        context.close()


# Every form of the analysts' and managers' pages, with the values the page gives it (the
# annotation, adjudication, team and import forms have browser tests of their own).


def submit_with_defaults(page, *, form: str, path: str, method: str) -> int:
    """Click the first submit button of ``form`` as the page shows it; the response's status.

    Fails unless a request with ``method`` goes to ``path`` and the page's address or content
    then differs from what it was."""
    before = (page.url, page.content())
    mark_document(page)
    try:
        with page.expect_request(lambda r: r.method == method and urlparse(r.url).path == path) as sent:
            page.locator(form).locator("button[type=submit]").first.click()
    except PlaywrightTimeoutError:
        raise AssertionError((form, f"no {method} request to {path}")) from None
    response = sent.value.response()
    assert response is not None, (form, "no response")
    settle(page, sent.value)
    assert (page.url, page.content()) != before, (form, "the page did not change")
    return response.status


def test_every_form_submits_with_the_values_the_page_gives_it(
    shared_live_server, shared_db, browser, everything
):
    live_server = shared_live_server
    campaign, other, run, people, sessions = everything
    slug = campaign.slug
    sample = Sample.objects.filter(campaign=campaign).order_by("pk").first()
    report = reverse("evaluation:report", args=[slug, "relevance"])
    history = reverse("evaluation:history", args=[slug, "relevance"])
    compare = reverse("evaluation:compare", args=[slug, "relevance"])
    refresh = reverse("evaluation:refresh_estimates", args=[slug, "relevance"])
    runs = reverse("evaluation:run_list", args=[slug])
    sampling = reverse("annotation:sampling", args=[slug])
    label_history = reverse("annotation:history", args=[slug])
    annotators = reverse("evaluation:annotators", args=[slug])
    stability = reverse("evaluation:stability", args=[slug])
    # (persona, page, form, the address it sends to, method, statuses that are the right answer)
    forms = [
        ("anna", report, "form.report-form", report, "GET", {200}),
        ("anna", report, f"form[action='{refresh}']", refresh, "POST", {200, 302}),
        ("anna", history, "form.report-form", history, "GET", {200}),
        ("anna", history, f"form[action='{refresh}']", refresh, "POST", {200, 302}),
        ("anna", compare + f"?other={other.slug}", "form.report-form", compare, "GET", {200}),
        ("manon", runs, "form.grid", runs, "POST", {200, 302}),
        # The draw has no budget until the manager gives one: the page says so, in place.
        (
            "manon",
            sampling,
            f"form[action='{reverse('annotation:sample_draw', args=[slug])}']",
            reverse("annotation:sample_draw", args=[slug]),
            "POST",
            {302, 400},
        ),
        (
            "manon",
            reverse("annotation:sample_detail", args=[slug, sample.pk]),
            "form.grid",
            reverse("annotation:sample_top_up", args=[slug, sample.pk]),
            "POST",
            {302, 400},
        ),
        ("manon", label_history, "form.history-filters", label_history, "GET", {200}),
        ("manon", annotators, "form.annotators-form", annotators, "GET", {200}),
        ("anna", stability, "form.stability-form", stability, "GET", {200}),
        # A token needs a name: the page asks for it in place (test_titles_and_rights_e2e.py then
        # makes one and copies it with its button).
        ("claire", reverse("api:tokens"), "form.token-form", reverse("api:tokens"), "POST", {400}),
    ]
    for persona, page_path, form, path, method, statuses in forms:
        context, page, problems = open_context(browser, live_server, session=sessions[persona])
        response = page.goto(live_server.url + page_path)
        assert response.status == 200, page_path
        # As a person does: the click once the page has loaded its lazy parts (a click while
        # one is in flight may be dropped by htmx's synchronisation of the form).
        settle(page)
        status = submit_with_defaults(page, form=form, path=path, method=method)
        assert status in statuses, (page_path, form, status)
        # A refusal the form expects (400) is shown in the page (Chromium logs its status as a
        # console error); anything else is a fault.
        expected = (
            "400 ",
            "console error: Failed to load resource: the server responded with a status of 400",
        )
        if 400 in statuses:
            problems = [p for p in problems if not p.startswith(expected)]
        assert problems == [], (page_path, form, problems)
        context.close()
