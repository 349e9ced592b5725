"""Server time of the analyst's heavy pages at the demo's size, through the whole Django stack.

    python bench/pages_bench.py [--n 20] [--only report,compare] [--profile PAGE] [--top 30]

A fresh database gets the demo (``evaluation.demo.campaign.load_demo``: two versions of the
assistant, 120 answers each, labels, judgments, samples, snapshots): a SQLite file
(``var/attest_pages_bench.sqlite3``, remade each run) by default; with ``DATABASE_URL`` set to a
PostgreSQL server, a database ``attest_pages_bench`` made on that server and dropped after (the
database the URL names is left alone). The demo's manager (who may read every page here) is
logged in with the Django test client; each page is asked for once to warm it, then ``--n``
times back to back. Prints per page the median and the 90th percentile of the milliseconds per
request (the client's call: middleware, view, template, the response's bytes), the SQL queries
one more request ran (``CaptureQueriesContext``, apart from the timed ones since capturing costs
time), the response's size, and the time of the first request (templates compiled, modules
imported on first use: what the first visitor after a restart waits). ``--profile PAGE,...``
then prints the cProfile of ``--n`` requests of each page named; ``--sql`` prints the SQL of one
request of each page. It asserts nothing: timings belong here, never in tests.

"Recompute now" (the report's refresh) is not timed: its POST only enqueues the recomputation
for a worker (``evaluation.jobs.request_estimates_refresh``).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATABASE = "attest_pages_bench"


@contextmanager
def fresh_database() -> Iterator[str]:
    """Point Django at an empty database, migrate it; yield the engine's name; drop it after."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    url = os.environ.get("DATABASE_URL", "")
    server = None
    if url.startswith(("postgres://", "postgresql://")):
        import dj_database_url
        import psycopg

        parsed = dj_database_url.parse(url)
        server = {
            "host": parsed["HOST"] or "127.0.0.1",
            "port": int(parsed["PORT"] or 5432),
            "user": parsed["USER"],
            "password": parsed["PASSWORD"] or None,
        }
        with psycopg.connect(**server, dbname="postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
        secret = f":{server['password']}" if server["password"] else ""
        os.environ["DATABASE_URL"] = (
            f"postgres://{server['user']}{secret}@{server['host']}:{server['port']}/{DATABASE}"
        )
    else:
        path = ROOT / "var" / f"{DATABASE}.sqlite3"
        path.unlink(missing_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    try:
        yield "postgresql" if server else "sqlite"
    finally:
        from django.db import connections

        connections.close_all()
        if server:
            import psycopg

            with psycopg.connect(**server, dbname="postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')


@dataclass(frozen=True)
class Page:
    name: str
    url: str
    htmx: bool = False


def pages() -> list[Page]:
    """The pages timed, on the demo's first version (the second one beside it where two are read)."""
    from django.urls import reverse

    from annotation.models import Campaign
    from evaluation.demo.campaign import DEMO_CAMPAIGN

    campaign = Campaign.objects.get(name=DEMO_CAMPAIGN)
    other = Campaign.objects.exclude(pk=campaign.pk).get()
    slug = campaign.slug

    def report(name: str, criterion: str = "relevance") -> str:
        return reverse(f"evaluation:{name}", args=[slug, criterion])

    # What the report form's Update sends (htmx): every field. Another method is read from its
    # snapshot; another alpha is not snapshotted, so it is computed now (for both judges: the
    # page compares them).
    method = "?judge=lexical&method=study&alpha=0.05&target=0.05&clusters=answer"
    alpha = "?judge=lexical&method=robust&alpha=0.1&target=0.05&clusters=answer"
    return [
        Page("report relevance", report("report")),
        Page("report Update: method (htmx)", report("report") + method, htmx=True),
        Page("report Update: alpha (htmx)", report("report") + alpha, htmx=True),
        Page("report citation_support", report("report", "citation_support")),
        Page("report correctness (categories)", report("report", "correctness")),
        Page("  section calibration", report("calibration") + "?judge=lexical", htmx=True),
        Page(
            "  section previous version (v2)",
            reverse("evaluation:previous_version", args=[other.slug, "relevance"]) + "?judge=lexical",
            htmx=True,
        ),
        Page("  section reference answers", reverse("evaluation:reference_answers", args=[slug]), htmx=True),
        Page("  section metrics (overview)", reverse("evaluation:campaign_overview", args=[slug]), htmx=True),
        Page("compare, by question", report("compare") + f"?other={other.slug}"),
        Page("evidence", reverse("evaluation:evidence", args=[slug])),
        Page("stability", reverse("evaluation:stability", args=[slug])),
        Page("annotators", reverse("evaluation:annotators", args=[slug])),
        Page("export.xlsx", report("export_xlsx")),
        Page("export.pdf", report("export_pdf")),
    ]


def ask(client, page: Page):
    headers = {"HTTP_HX_REQUEST": "true"} if page.htmx else {}
    response = client.get(page.url, **headers)
    if response.status_code != 200:
        raise SystemExit(f"{page.name}: {page.url} answered {response.status_code}")
    return response


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="timed requests per page")
    parser.add_argument("--only", default="", help="comma-separated words: pages whose name holds one")
    parser.add_argument("--profile", default="", help="pages to profile (parts of names)")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sql", action="store_true", help="print the SQL of one request of each page")
    args = parser.parse_args()
    with fresh_database() as engine:
        import logging

        from django.contrib.auth import get_user_model
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        from evaluation.demo.campaign import load_demo

        began = time.perf_counter()
        load_demo()
        print(f"{engine}: demo loaded in {time.perf_counter() - began:.1f} s; {args.n} requests per page")
        logging.getLogger("axes").setLevel(logging.WARNING)  # a line per login otherwise
        client = Client()
        client.force_login(get_user_model().objects.get(username="manager"))
        chosen = [
            page
            for page in pages()
            if not args.only or any(word in page.name for word in args.only.split(","))
        ]
        print(f"{'page':<34} {'median ms':>9} {'p90 ms':>8} {'queries':>7} {'KB':>6} {'first ms':>8}")
        for page in chosen:
            began = time.perf_counter()
            size = len(ask(client, page).content)  # warm: templates, caches, connection
            first = 1000 * (time.perf_counter() - began)
            times = []
            for _ in range(args.n):
                began = time.perf_counter()
                ask(client, page)
                times.append(1000 * (time.perf_counter() - began))
            with CaptureQueriesContext(connection) as queries:
                ask(client, page)
            times.sort()
            p90 = times[min(len(times) - 1, round(0.9 * (len(times) - 1)))]
            print(
                f"{page.name:<34} {statistics.median(times):>9.1f} {p90:>8.1f} "
                f"{len(queries):>7} {size / 1024:>6.0f} {first:>8.0f}"
            )
            if args.sql:
                for query in queries.captured_queries:
                    print(f"    {query['sql'][:160]}")
        for wanted in filter(None, args.profile.split(",")):
            page = next(page for page in pages() if wanted in page.name)
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(args.n):
                ask(client, page)
            profile.disable()
            stats = pstats.Stats(profile)
            print(f"\n{page.name}: functions with the most cumulative time (top {args.top})")
            stats.sort_stats("cumulative").print_stats(args.top)
            print(f"\n{page.name}: functions with the most own time (top {args.top})")
            stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
