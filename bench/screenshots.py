"""The screenshots of docs/screenshots/: the annotation page, a report and the first page of its PDF,
the judges against the human labels, the annotators' page, a judge run refused on its form (no API
key configured) and a judge run whose every call failed, in French and English, at 1440 and 390
px, from the demo campaign.

    python bench/screenshots.py [--out docs/screenshots] [--only judge-run-refused ...]     (make screenshots)

The demo is loaded into a throw-away SQLite database in a temporary directory (the app's own
database is left alone) and served by a local server (DEBUG off) to the Chromium of the browser
tests (tests/chromium.py) through Playwright. Tests never write here: their screenshots go to temporary
directories. The review page is also taken with its comment box open (review-dialog-*): the key of
an override opened it and a reason is being typed.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.chromium import CHROMIUM, LAUNCH_ARGS  # noqa: E402

WIDTHS = (1440, 390)
LOCALES = ("fr-FR", "en-GB")
# Each role's start page, as a demo person holding it sees it (annotator2 also labels).
START_PAGES = {
    "annotator": "annotator1",
    "reviewer": "annotator2",
    "adjudicator": "adjudicator",
    "manager": "manager",
    "analyst": "analyst",
}


def serve() -> tuple[str, object]:
    """Start the app on a free local port in a thread; return its base URL and the server."""
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), QuietHandler, allow_reuse_address=False)
    server.set_app(get_wsgi_application())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server


def session_cookie(username: str) -> str:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def demo_work(*, slug: str) -> None:
    """Some more review-mode work on the demo's veracity sample (``load_demo``'s people labelled
    most of it already, at once), so that the annotators' page has figures: two people label,
    one reviews (overriding about one label in five), the adjudicator settles the overrides, one
    person holds a unit under a lease, and a unit is left for the others. Each person works at a
    pace drawn from a seeded generator (6 to 45 s a label, one break), stamped by a shifted
    server clock that ends before now."""
    import random
    from datetime import timedelta
    from unittest import mock

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotation.models import Criterion
    from annotation.workflow import next_unit, submit_label

    people = {user.username: user for user in get_user_model().objects.all()}
    criterion = Criterion.objects.select_related("campaign").get(campaign__slug=slug, name="veracity")
    rng = random.Random(7)
    clock = timezone.now() - timedelta(hours=4)

    def work(username: str, stage: str, count: int, value) -> None:
        nonlocal clock
        for n in range(count):
            clock += timedelta(seconds=rng.uniform(6, 45) if n != count // 2 else 1200)
            with mock.patch("django.utils.timezone.now", return_value=clock):
                unit = next_unit(user=people[username], criterion=criterion, stage=stage)
                if unit is None:
                    return
                given, comment = value(unit)
                submit_label(
                    user=people[username],
                    unit_id=unit.pk,
                    criterion=criterion,
                    stage=stage,
                    value=given,
                    comment=comment,
                    request_key=f"shot-{username}-{stage}-{n}",
                )

    def first(unit) -> tuple[int, str]:
        return (1 if rng.random() < 0.8 else 0), ""

    def review(unit) -> tuple[int, str]:
        value = unit.labels.filter(stage="label").order_by("-id").values_list("value", flat=True).first()
        if rng.random() < 0.2:
            return 1 - value, "Not what the source says."
        return value, ""

    def settle(unit) -> tuple[int, str]:
        return rng.choice((0, 1)), "Read the source again."

    work("annotator1", "label", 4, first)
    work("annotator2", "label", 2, first)
    work("annotator3", "review", 16, review)
    work("adjudicator", "adjudication", 5, settle)
    next_unit(user=people["annotator1"], criterion=criterion, stage="label")


def failed_run(*, slug: str) -> int:
    """A run of an LLM judge on the demo's relevance whose every call fails (no key configured:
    the judge was made, and its run created, past the check the pages make); its id."""
    from annotation.models import Criterion
    from evaluation.judge import runs

    criterion = Criterion.objects.select_related("campaign").get(campaign__slug=slug, name="relevance")
    judge = runs.get_or_create_judge(campaign=criterion.campaign, name="gpt")
    return runs.run_inline(run_id=runs.create_run(criterion=criterion, judge=judge).pk).pk


def review_waiting(*, slug: str) -> str:
    """A criterion of the demo on which annotator3 has a first label to review (veracity, else
    citation support; else annotator2 labels a veracity unit for them); its name."""
    from django.contrib.auth import get_user_model

    from annotation.models import Criterion
    from annotation.workflow import next_unit, submit_label

    people = {user.username: user for user in get_user_model().objects.all()}
    criteria = Criterion.objects.select_related("campaign").filter(campaign__slug=slug)
    for name in ("veracity", "citation_support"):
        criterion = criteria.get(name=name)
        if next_unit(user=people["annotator3"], criterion=criterion, stage="review") is not None:
            return name
    criterion = criteria.get(name="veracity")
    unit = next_unit(user=people["annotator2"], criterion=criterion, stage="label")
    if unit is not None:
        submit_label(user=people["annotator2"], unit_id=unit.pk, criterion=criterion, stage="label", value=1)
    return "veracity"


def write_an_override(page) -> None:
    """The reviewer overrides the first label: its key opens the comment box, where a reason is
    typed (not yet saved)."""
    page.wait_for_timeout(400)  # the key guard of a unit just shown
    override = page.locator("#decision button[data-needs-comment='true']").first
    page.keyboard.press(override.get_attribute("data-key") or "0")
    page.wait_for_timeout(400)
    french = page.evaluate("() => document.documentElement.lang") == "fr"
    page.keyboard.type(
        "Le chiffre de la phrase n'est pas celui de la source (p. 4)."
        if french
        else "The figure in the sentence is not the one in the source (p. 4)."
    )


def ask_for_gpt(page) -> None:
    """Start a run of a judge named gpt from the runs page, every other field as the page gives it."""
    page.locator("form.grid input[name=judge]").fill("gpt")
    page.locator("form.grid button[type=submit]").click()


def pdf_first_page(*, page, out: Path, language: str) -> list[Path]:
    """The report's PDF, downloaded through the page's link, its first page rendered by poppler's
    pdftoppm at each of WIDTHS (the PDF we ship, not Chromium's print of the page); none without
    pdftoppm."""
    if shutil.which("pdftoppm") is None:
        print("pdftoppm is missing (apt-get install poppler-utils): no picture of the PDF", file=sys.stderr)
        return []
    with page.expect_download(timeout=180_000) as download:
        page.locator("a.pdf-link").click()
    written = []
    with tempfile.TemporaryDirectory(prefix="attest-pdf-") as tmp:
        pdf = Path(tmp) / "report.pdf"
        download.value.save_as(pdf)
        for width in WIDTHS:
            target = out / f"report-pdf-{language}-{width}"
            subprocess.run(
                ["pdftoppm", "-png", "-singlefile", "-f", "1", "-l", "1", "-scale-to-x", str(width),
                 "-scale-to-y", "-1", str(pdf), str(target)],
                check=True,
            )  # fmt: skip
            written.append(target.with_suffix(".png"))
    return written


def shoot(*, out: Path, only: set[str] | None = None) -> list[Path]:
    """Load the demo, serve it and write the screenshots into ``out`` (those named in ``only``, or
    all); the files written."""
    from django.conf import settings
    from django.core.management import call_command
    from django.urls import reverse
    from playwright.sync_api import sync_playwright

    from annotation.models import Campaign
    from evaluation.demo.campaign import DEMO_CAMPAIGN
    from evaluation.demo.versions import SECOND_CAMPAIGN

    call_command("migrate", verbosity=0, interactive=False)
    call_command("load_demo", stdout=io.StringIO())
    slug = Campaign.objects.get(name=DEMO_CAMPAIGN).slug
    second = Campaign.objects.get(name=SECOND_CAMPAIGN).slug
    demo_work(slug=slug)
    runs_page = reverse("evaluation:run_list", args=[slug])
    # name: (person, page, what they do there before the picture)
    start = reverse("evaluation:start")
    shots = {
        # What each role sees first after logging in (evaluation/start.html).
        **{f"start-{role}": (person, start, None) for role, person in START_PAGES.items()},
        "annotator": ("annotator1", reverse("annotation:annotate", args=[slug, "veracity", "label"]), None),
        # The demo's imported human and judge labels are on relevance; its second version's report
        # says the change against the first.
        "report": ("analyst", reverse("evaluation:report", args=[second, "relevance"]), None),
        # The demo's imported and lexical judges against the humans on relevance.
        "judge-alignment": ("analyst", reverse("evaluation:judge_alignment", args=[slug, "relevance"]), None),
        "annotators": (
            "manager",
            reverse("evaluation:annotators", args=[slug]) + "?criterion=veracity",
            None,
        ),
        "judge-run-refused": ("manager", runs_page, ask_for_gpt),
        # The comment box of the review page, opened by the key of an override.
        "review-dialog": (
            "annotator3",
            reverse("annotation:annotate", args=[slug, review_waiting(slug=slug), "review"]),
            write_an_override,
        ),
        "judge-run-failed": (
            "manager",
            reverse("evaluation:run_detail", args=[slug, failed_run(slug=slug)]),
            lambda page: page.locator("table.failure-reasons summary").first.click(),
        ),
        # The import format, for the people who prepare the files; the header's language switch.
        "import-format": ("manager", reverse("evaluation:import_format"), None),
    }
    shots = {name: shot for name, shot in shots.items() if only is None or name in only}
    base, server = serve()
    written = []
    out.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
            for name, (username, path, action) in shots.items():
                cookie = {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": session_cookie(username),
                    "url": base,
                }
                for locale in LOCALES:
                    for width in WIDTHS:
                        context = browser.new_context(
                            viewport={"width": width, "height": 900}, locale=locale, accept_downloads=True
                        )
                        context.add_cookies([cookie])
                        page = context.new_page()
                        page.goto(base + path)
                        page.wait_for_load_state("networkidle")
                        if action is not None:
                            action(page)
                            page.wait_for_load_state("networkidle")
                        target = out / f"{name}-{locale[:2]}-{width}.png"
                        # The stage pages are shown as a person sees them; the others whole.
                        page.screenshot(
                            path=str(target), full_page=name not in ("annotator", "review-dialog")
                        )
                        written.append(target)
                        if name == "report" and width == WIDTHS[0]:
                            written.extend(pdf_first_page(page=page, out=out, language=locale[:2]))
                        context.close()
            browser.close()
    finally:
        server.shutdown()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help="these screenshots only (judge-run-failed...)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="attest-screenshots-") as tmp:
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(tmp) / 'db.sqlite3'}"
        os.environ["DEBUG"] = "0"
        os.environ["LOG_LEVEL"] = "WARNING"
        # No LLM server: the judge run refused on its form says why, whatever this shell holds.
        os.environ["OPENAI_API_KEY"] = ""
        os.environ["OPENAI_BASE_URL"] = ""
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        # Playwright's sync API runs an event loop in this thread; the ORM calls stay synchronous.
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
        import django

        django.setup()
        for path in shoot(out=args.out.resolve(), only=set(args.only) if args.only else None):
            print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


if __name__ == "__main__":
    main()
