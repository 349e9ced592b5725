"""Server time of the analyst's heavy pages, through the whole Django stack, at three sizes.

    python bench/pages_bench.py [--size demo|50k|1m] [--n 20] [--only report,compare]
                                [--profile PAGE] [--top 30] [--keep] [--warm]

``--size demo`` (the default): a fresh database gets the demo
(``evaluation.demo.campaign.load_demo``: two versions of the assistant, 120 answers each, labels,
judgments, samples, snapshots). ``--size 50k`` and ``--size 1m``: it gets two versions of 50,000 or
1,000,000 judged answers each (``bench.large_campaign.build_large``: sentences and citations on one
answer in ten, 3,000 human labels per criterion by several people, samples, snapshots), PostgreSQL
only. The database: a SQLite file (``var/attest_pages_bench.sqlite3``, remade each run) by default;
with ``DATABASE_URL`` set to a PostgreSQL server, a database ``attest_pages_bench`` (``_50k``,
``_1m``) made on that server and dropped after (the database the URL names is left alone);
``--keep`` keeps it, and a later run with ``--keep`` reads it again instead of building it (caches
excepted, nothing the pages do writes to it). ``--warm`` first does what a worker does after an
import or a judge run, timed: each criterion's estimates recomputed (``refresh_estimates_task``),
then both campaigns' pages computed ahead of their visit (``evaluation.page_warming``): the first
visits then read what they kept. The
manager (who may read every page here) is logged in with the Django test client; each page is asked
for once to warm it, then ``--n`` times back to back. Prints per page the 50th and the 95th
percentile of the milliseconds per request (the client's call: middleware, view, template, the
response's bytes), the median time to its first byte (TTFB: the same, except for a response sent
as it is written, such as a large workbook: until its first piece), the SQL queries one more
request ran (``CaptureQueriesContext``, apart from the timed ones since capturing costs time), the
response's size, and the time of the first request (templates compiled, modules imported on first
use: what the first visitor after a restart waits).
``--profile PAGE,...`` then prints the cProfile of ``--n`` requests of each page named; ``--sql``
prints the SQL of one request of each page. It asserts nothing: timings belong here, never in tests.

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
# What each size builds: None for the demo, else build_large's arguments.
SIZES: dict[str, dict[str, int] | None] = {
    "demo": None,
    "50k": {"units": 50_000, "judged": 50_000, "labels": 3000},
    "1m": {"units": 1_000_000, "judged": 1_000_000, "labels": 3000},
}


@contextmanager
def fresh_database(*, size: str = "demo", keep: bool = False) -> Iterator[tuple[str, bool]]:
    """Point Django at an empty database, migrate it; yield the engine's name and whether the
    database was there already (``keep``: kept from an earlier run, not dropped after)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    url = os.environ.get("DATABASE_URL", "")
    server = None
    name = DATABASE if size == "demo" else f"{DATABASE}_{size}"
    existed = False
    if SIZES[size] is not None and not url.startswith(("postgres://", "postgresql://")):
        raise SystemExit(f"--size {size} needs PostgreSQL: set DATABASE_URL to a postgres:// URL")
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
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            existed = keep and found is not None
            if not existed:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                conn.execute(f'CREATE DATABASE "{name}"')
        secret = f":{server['password']}" if server["password"] else ""
        os.environ["DATABASE_URL"] = (
            f"postgres://{server['user']}{secret}@{server['host']}:{server['port']}/{name}"
        )
    else:
        path = ROOT / "var" / f"{name}.sqlite3"
        existed = keep and path.exists()
        if not existed:
            path.unlink(missing_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    try:
        yield "postgresql" if server else "sqlite", existed
    finally:
        from django.db import connections

        connections.close_all()
        if server and not keep:
            import psycopg

            with psycopg.connect(**server, dbname="postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass(frozen=True)
class Page:
    name: str
    url: str
    htmx: bool = False


def pages(*, slug: str, other_slug: str) -> list[Page]:
    """The pages timed, on the first version (the second one beside it where two are read)."""
    from django.urls import reverse

    from annotation.models import Campaign

    other = Campaign.objects.get(slug=other_slug)

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
        Page("sample by the judge's confidence", reverse("evaluation:confidence_sample", args=[slug])),
        Page("export.xlsx", report("export_xlsx")),
        Page("export.pdf", report("export_pdf")),
    ]


def ask(client, page: Page, first_bytes: list[float] | None = None) -> bytes:
    """The page's body; a streamed one (a large workbook) read to its end, which is timed too.
    ``first_bytes`` gets the milliseconds until the response's first byte could be sent: the
    whole response when it is not streamed, else its first piece."""
    headers = {"HTTP_HX_REQUEST": "true"} if page.htmx else {}
    began = time.perf_counter()
    response = client.get(page.url, **headers)
    if response.status_code != 200:
        raise SystemExit(f"{page.name}: {page.url} answered {response.status_code}")
    pieces = iter(response.streaming_content if response.streaming else [response.content])
    head = next(pieces, b"")
    if first_bytes is not None:
        first_bytes.append(1000 * (time.perf_counter() - began))
    return head + b"".join(pieces)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=list(SIZES), default="demo", help="the campaigns' size")
    parser.add_argument("--keep", action="store_true", help="keep the database; reuse a kept one")
    parser.add_argument("--n", type=int, default=20, help="timed requests per page")
    parser.add_argument("--only", default="", help="comma-separated words: pages whose name holds one")
    parser.add_argument("--profile", default="", help="pages to profile (parts of names)")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sql", action="store_true", help="print the SQL of one request of each page")
    parser.add_argument(
        "--warm", action="store_true", help="compute the pages ahead first, as a worker does (page_warming)"
    )
    args = parser.parse_args()
    with fresh_database(size=args.size, keep=args.keep) as (engine, existed):
        import logging

        from django.contrib.auth import get_user_model
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        from annotation.models import Campaign
        from bench.large_campaign import VERSIONS, build_large
        from evaluation.demo.campaign import DEMO_CAMPAIGN, load_demo
        from evaluation.demo.versions import SECOND_CAMPAIGN

        began = time.perf_counter()
        build = SIZES[args.size]
        names = (DEMO_CAMPAIGN, SECOND_CAMPAIGN) if build is None else VERSIONS
        if existed:
            what = "kept database read again"
        elif build is None:
            load_demo()
            what = "demo loaded"
        else:
            build_large(**build, seed=42)
            # The tables as autovacuum leaves them some minutes after a large insert: without
            # their visibility map, PostgreSQL's index-only scans read the rows as well.
            with connection.cursor() as cursor:
                cursor.execute("VACUUM (ANALYZE)")
            what = f"two versions of {build['units']:,} answers built and vacuumed"
        slug, other_slug = (Campaign.objects.get(name=name).slug for name in names)
        load = " ".join(f"{value:.2f}" for value in os.getloadavg())
        print(
            f"{engine}, size {args.size}: {what} in {time.perf_counter() - began:.1f} s; "
            f"{args.n} requests per page; load average {load}"
        )
        logging.getLogger("axes").setLevel(logging.WARNING)  # a line per login otherwise
        client = Client()
        client.force_login(get_user_model().objects.get(username="manager"))
        every = pages(slug=slug, other_slug=other_slug)
        chosen = [
            page for page in every if not args.only or any(word in page.name for word in args.only.split(","))
        ]
        if args.warm:
            from evaluation import page_warming
            from evaluation.tasks import refresh_estimates_task

            for campaign in Campaign.objects.filter(slug__in=[slug, other_slug]).order_by("pk"):
                # What a worker does after an import or a judge run: each criterion's estimates
                # recomputed (snapshots stored where they changed), then the pages computed ahead.
                began = time.perf_counter()
                for criterion_id in campaign.criteria.values_list("pk", flat=True):
                    refresh_estimates_task(criterion_id)
                refreshed = time.perf_counter() - began
                began = time.perf_counter()
                warmed = page_warming.warm_campaign(campaign=campaign)
                print(
                    f"{campaign.name}: estimates recomputed in {refreshed:.1f} s, pages computed ahead in "
                    f"{time.perf_counter() - began:.1f} s ({', '.join(warmed)})"
                )
        columns = ("p50 ms", "p95 ms", "TTFB p50", "queries", "KB", "first ms")
        print(f"{'page':<34} " + " ".join(f"{column:>8}" for column in columns))
        for page in chosen:
            began = time.perf_counter()
            size = len(ask(client, page))  # warm: templates, caches, connection
            first = 1000 * (time.perf_counter() - began)
            times: list[float] = []
            first_bytes: list[float] = []
            for _ in range(args.n):
                began = time.perf_counter()
                ask(client, page, first_bytes)
                times.append(1000 * (time.perf_counter() - began))
            with CaptureQueriesContext(connection) as queries:
                ask(client, page)
            times.sort()
            p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
            print(
                f"{page.name:<34} {statistics.median(times):>8.1f} {p95:>8.1f} "
                f"{statistics.median(first_bytes):>8.1f} {len(queries):>8} {size / 1024:>8.0f} {first:>8.0f}"
            )
            if args.sql:
                for query in queries.captured_queries:
                    print(f"    {query['sql'][:160]}")
        for wanted in filter(None, args.profile.split(",")):
            page = next(page for page in every if wanted in page.name)
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
        load = " ".join(f"{value:.2f}" for value in os.getloadavg())
        print(f"load average at the end: {load}")


if __name__ == "__main__":
    main()
