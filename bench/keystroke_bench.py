"""Keystrokes and key-to-painted latency of the annotate page, in a real Chromium (DEBUG off).

Run with ``.venv/bin/python bench/keystroke_bench.py [--labels N] [--reading-ms R]``. Builds a
throwaway SQLite campaign (100 sentence units of a due-diligence answer, sampled for veracity)
under /tmp, serves the app from a threaded WSGI server on 127.0.0.1, logs two annotators in with
the browser tests' Chromium (tests/chromium.py, 1440 x 900) and labels:

1. steady: N labels, one key each, after reading each unit for R ms (default 600); prints the
   key presses sent, the labels stored, and the time from the keydown to the frame that paints
   the next unit (p50 / p95 / max, ms);
2. bouncing key: N intended labels, each key pressed twice 30 ms apart (a worn or bouncing key,
   a double tap), R ms of reading between them; prints the presses sent and the labels stored
   (more labels than intended ones: units labelled without being read);
3. burst: 24 label keys pressed at once (back to back, as fast as the browser takes them); prints
   how many were taken (labels stored), how many the page said it did not take (the cue of an
   ignored key) and how many were lost without a word (neither).

It asserts nothing: timings belong here, never in tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
WORK = Path(tempfile.mkdtemp(prefix="keystroke_bench_"))
os.environ.update(
    {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{WORK / 'db.sqlite3'}",
        "VAR_DIR": str(WORK / "var"),
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        "DJANGO_ALLOW_ASYNC_UNSAFE": "true",
    }
)

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.urls import reverse  # noqa: E402

from annotation.models import Criterion, Label, Role, Unit  # noqa: E402
from tests.chromium import CHROMIUM, LAUNCH_ARGS  # noqa: E402
from tests.factories import PASSWORD, add_member, make_answer, make_campaign, make_user, sample_units  # noqa: E402

SENTENCES = [
    ("Le chiffre d'affaires consolidé de l'exercice 2023 s'établit à 48,2 millions d'euros [^c1^].", ["c1"]),
    ("Il progresse de 7,9 % par rapport à 2022, porté par la maintenance industrielle [^c1^].", ["c1"]),
    ("L'excédent brut d'exploitation atteint 6,1 millions d'euros, soit une marge de 15 % [^c1^].", ["c1"]),
    (
        "Le contrat de crédit impose un ratio de levier inférieur à 3,0x à chaque test semestriel [^c2^].",
        ["c2"],
    ),
    ("Le directeur financier quitte la société au 30 juin 2024 [^c3^].", ["c3"]),
]
CHUNK_TEXT = (
    "Le chiffre d'affaires consolidé de l'exercice 2023 s'établit à 48,2 millions d'euros, en hausse de "
    "7,9 % par rapport à 2022 (44,7 millions d'euros). La croissance provient principalement de "
    "l'activité de maintenance industrielle, qui représente désormais 61 % du chiffre d'affaires.\n\n"
    "L'excédent brut d'exploitation atteint 6,1 millions d'euros, soit une marge de 12,7 %. "
) * 3

# Time from a label key's keydown to the animation frame that paints the next unit.
INSTRUMENT = """() => {
  const bench = (window.__bench = {t0: 0, lat: []});
  document.addEventListener('keydown', e => {
    if (e.key === '0' || e.key === '1') bench.t0 = performance.now();
  }, true);
  let last = document.getElementById('work').dataset.unit;
  new MutationObserver(() => {
    const work = document.getElementById('work');
    if (!work || work.dataset.unit === last) return;
    last = work.dataset.unit;
    const t0 = bench.t0;
    requestAnimationFrame(() => bench.lat.push(performance.now() - t0));
  }).observe(document.querySelector('.bench-main'), {childList: true, subtree: true});
}"""


BURST = 24
PREFETCHED = (
    "() => document.documentElement.dataset.prefetched === document.getElementById('work').dataset.unit"
)
# How many keys the page said it did not take (the ignored-key cue counts them).
CUED = "() => { const cue = document.getElementById('key-cue'); return cue ? cue.dataset.count : 0; }"


def build() -> str:
    call_command("migrate", verbosity=0)
    campaign = make_campaign(name="Keystroke bench")
    for _ in range(20):
        make_answer(
            campaign=campaign,
            text=" ".join(text for text, _ in SENTENCES),
            sentences=SENTENCES,
            chunk_ids=("c1", "c2", "c3"),
        )
    from annotation.models import SourceChunk

    SourceChunk.objects.filter(campaign=campaign).update(text=CHUNK_TEXT)
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="veracity")
    sample_units(criterion=criterion, units=list(Unit.objects.filter(campaign=campaign, level="sentence")))
    for username in ("steady", "bouncy", "burst"):
        add_member(campaign=campaign, user=make_user(username=username), roles=[Role.ANNOTATOR])
    return reverse("annotation:annotate", args=[campaign.slug, "veracity", "label"])


def serve() -> str:
    class Quiet(WSGIRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), Quiet)
    server.set_app(get_wsgi_application())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}"


def open_page(browser, base: str, target: str, username: str):
    context = browser.new_context(viewport={"width": 1440, "height": 900}, locale="en-GB")
    page = context.new_page()
    page.goto(base + target)
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(base + target)
    page.evaluate(INSTRUMENT)
    return page


def settle(page) -> None:
    page.wait_for_function("() => !document.documentElement.hasAttribute('data-saving')")


def percentiles(values: list[float]) -> str:
    if not values:
        return "no sample"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"p50 {statistics.median(ordered):.1f} / p95 {p95:.1f} / max {ordered[-1]:.1f} ms (n={len(ordered)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--labels", type=int, default=30)
    parser.add_argument("--reading-ms", type=int, default=600)
    args = parser.parse_args()
    target = build()
    base = serve()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)

        page = open_page(browser, base, target, "steady")
        presses = 0
        for _ in range(args.labels):
            page.wait_for_timeout(args.reading_ms)
            before = page.get_attribute("#work", "data-unit")
            page.keyboard.press("1")
            presses += 1
            page.wait_for_function("b => document.getElementById('work').dataset.unit !== b", arg=before)
            settle(page)
        page.wait_for_timeout(300)
        stored = Label.objects.filter(user__username="steady").count()
        latencies = page.evaluate("() => window.__bench.lat")
        print(
            f"steady, {args.reading_ms} ms of reading a unit: {presses} key presses, {stored} labels stored"
        )
        print(f"  key to next unit painted: {percentiles(latencies)}")

        page = open_page(browser, base, target, "bouncy")
        presses = 0
        for _ in range(args.labels):
            page.wait_for_timeout(args.reading_ms)
            page.keyboard.press("1")
            page.wait_for_timeout(30)
            page.keyboard.press("1")
            presses += 2
            settle(page)
        page.wait_for_timeout(600)
        settle(page)
        stored = Label.objects.filter(user__username="bouncy").count()
        print(
            f"bouncing key, {args.labels} intended labels (two presses 30 ms apart each): "
            f"{presses} key presses, {stored} labels stored"
        )

        page = open_page(browser, base, target, "burst")
        page.wait_for_function(PREFETCHED)
        page.wait_for_timeout(400)
        for _ in range(BURST):
            page.keyboard.press("1")
        # Until every key has done what it does: a kept key is replayed once its save is answered.
        page.wait_for_timeout(1500)
        settle(page)
        page.wait_for_timeout(500)
        settle(page)
        stored = Label.objects.filter(user__username="burst").count()
        cued = int(page.evaluate(CUED) or 0)
        print(
            f"burst, {BURST} keys at once: {stored} taken (labels stored), {cued} cued as not taken, "
            f"{BURST - stored - cued} lost without a word"
        )
        browser.close()


if __name__ == "__main__":
    main()
