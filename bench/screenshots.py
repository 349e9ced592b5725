"""The screenshots of docs/screenshots/: the annotation page, a report and the annotators' page, in
French and English, at 1440 and 390 px, from the demo campaign.

    python bench/screenshots.py [--out docs/screenshots]     (make screenshots)

The demo is loaded into a throw-away SQLite database in a temporary directory (the app's own
database is left alone) and served by a local server (DEBUG off) to Debian's Chromium
(/usr/bin/chromium) through Playwright. Tests never write here: their screenshots go to temporary
directories.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
WIDTHS = (1440, 390)
LOCALES = ("fr-FR", "en-GB")


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
    """Some review-mode work on the demo's veracity sample, so that the annotators' page has
    figures: two people label, one reviews (overriding about one label in five), the adjudicator
    settles the overrides, one person holds a unit under a lease. Each person works at a pace
    drawn from a seeded generator (6 to 45 s a label, one break), stamped by a shifted server
    clock that ends before now."""
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

    work("annotator1", "label", 14, first)
    work("annotator2", "label", 10, first)
    work("annotator3", "review", 16, review)
    work("adjudicator", "adjudication", 5, settle)
    next_unit(user=people["annotator1"], criterion=criterion, stage="label")


def shoot(*, out: Path) -> list[Path]:
    """Load the demo, serve it and write the screenshots into ``out``; the files written."""
    from django.conf import settings
    from django.core.management import call_command
    from django.urls import reverse
    from playwright.sync_api import sync_playwright

    from annotation.models import Campaign
    from evaluation.demo.campaign import DEMO_CAMPAIGN

    call_command("migrate", verbosity=0, interactive=False)
    call_command("load_demo", stdout=io.StringIO())
    slug = Campaign.objects.get(name=DEMO_CAMPAIGN).slug
    demo_work(slug=slug)
    shots = {
        "annotator": ("annotator1", reverse("annotation:annotate", args=[slug, "veracity", "label"])),
        # The demo's imported human and judge labels are on relevance.
        "report": ("analyst", reverse("evaluation:report", args=[slug, "relevance"])),
        "annotators": ("manager", reverse("evaluation:annotators", args=[slug]) + "?criterion=veracity"),
    }
    base, server = serve()
    written = []
    out.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            for name, (username, path) in shots.items():
                cookie = {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": session_cookie(username),
                    "url": base,
                }
                for locale in LOCALES:
                    for width in WIDTHS:
                        context = browser.new_context(viewport={"width": width, "height": 900}, locale=locale)
                        context.add_cookies([cookie])
                        page = context.new_page()
                        page.goto(base + path)
                        page.wait_for_load_state("networkidle")
                        target = out / f"{name}-{locale[:2]}-{width}.png"
                        # The annotation page is shown as a person sees it; the others whole.
                        page.screenshot(path=str(target), full_page=name != "annotator")
                        written.append(target)
                        context.close()
            browser.close()
    finally:
        server.shutdown()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="attest-screenshots-") as tmp:
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(tmp) / 'db.sqlite3'}"
        os.environ["DEBUG"] = "0"
        os.environ["LOG_LEVEL"] = "WARNING"
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        # Playwright's sync API runs an event loop in this thread; the ORM calls stay synchronous.
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
        import django

        django.setup()
        for path in shoot(out=args.out.resolve()):
            print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


if __name__ == "__main__":
    main()
