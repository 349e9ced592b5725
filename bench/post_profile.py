"""Where the CPU of one label goes: a profile of the label page as its script drives it (PostgreSQL).

Run with ``.venv/bin/python bench/post_profile.py [--queued 2000] [--labels 300] [--top 25]
[--sql] [--flow one|two] [--database NAME]``. In a database of its own (``NAME``, by default
``attest_bench_post_profile``, dropped after) it builds the queue of ``bench/annotation_bench.py``,
then one person labels ``--labels`` units through the page as its script does
(``annotation_bench.Browser``: ``--flow one``, the label's POST answered with the unit after the
one on screen; ``--flow two``, the older flow, a GET of that unit after each POST), through the
whole middleware stack, first unprofiled (wall time and CPU time per label, then the queries of a
few more), then under cProfile on CPU time. It prints the milliseconds per label, the share of
the profiled time spent in each part of the stack (template rendering, building SQL, running it,
sessions and authentication, the application's own code) and the functions with the most
cumulative and own time. It asserts nothing: timings belong here, never in tests.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.pgdb import bench_database  # noqa: E402

# Parts of the stack, by the file a function lives in (first match wins): the profile's
# cumulative time of the outermost function of each part, counted once.
PARTS = (
    ("templates", re.compile(r"django/template/")),
    ("SQL building (ORM)", re.compile(r"django/db/models/")),
    ("SQL running (driver)", re.compile(r"psycopg/|django/db/backends/")),
    ("sessions and auth", re.compile(r"django/contrib/(sessions|auth)/")),
    ("middleware and handlers", re.compile(r"django/(core/handlers|middleware)/|django_htmx|csp/")),
    ("Attest code", re.compile(r"/(annotation|evaluation|config)/")),
)


def _posts(
    client, *, page: str, submit: str, labels: int, flow: str, count: bool = True
) -> tuple[list[float], list[list[str]], float]:
    """Label ``labels`` units back to back as the browser does in ``flow`` (see
    ``bench/annotation_bench.py``); the label times (ms), the SQL each ran (when ``count``: the
    capture itself costs Python, so the profiled pass leaves it off) and the requests per label."""
    from contextlib import nullcontext

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from bench.annotation_bench import Browser

    tab = Browser(client, page=page, submit=submit, flow=flow)
    sent = tab.requests
    times, queries = [], []
    for _ in range(labels):
        captured = CaptureQueriesContext(connection) if count else nullcontext()
        with captured:
            began = time.perf_counter()
            tab.label()
            times.append(1000 * (time.perf_counter() - began))
        queries.append([q["sql"] for q in captured.captured_queries] if count else [])
    connection.execute_wrappers.clear()
    return times, queries, (tab.requests - sent) / labels


def _shares(stats: pstats.Stats) -> dict[str, float]:
    """Seconds per part: the total time of the functions whose file matches the part."""
    seconds = dict.fromkeys([name for name, _ in PARTS] + ["other"], 0.0)
    for (filename, _line, _name), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        for name, pattern in PARTS:
            if pattern.search(filename):
                seconds[name] += tottime
                break
        else:
            seconds["other"] += tottime
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queued", type=int, default=2_000)
    parser.add_argument("--labels", type=int, default=300)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--sql", action="store_true", help="print the SQL of one label")
    parser.add_argument(
        "--flow",
        choices=("one", "two"),
        default="one",
        help="the browser's flow: one request per label (default) or the older POST then GET",
    )
    parser.add_argument("--database", default="attest_bench_post_profile")
    args = parser.parse_args()
    with bench_database(args.database) as engine:
        from django.test import Client
        from django.urls import reverse

        from annotation.models import Role
        from bench.annotation_bench import build_queued, people, settle

        campaign, criterion = build_queued(size=args.queued)
        settle(engine)
        first, second = people(campaign=campaign, role=Role.ANNOTATOR, count=2)
        page = reverse("annotation:annotate", args=[campaign.slug, criterion.name, "label"])
        submit = reverse("annotation:annotate_submit", args=[campaign.slug, criterion.name, "label"])

        client = Client()
        client.force_login(first)
        flow = {"flow": args.flow}
        _posts(client, page=page, submit=submit, labels=20, **flow)  # warm caches, templates, connections
        cpu = time.process_time()
        times, queries, requests = _posts(
            client, page=page, submit=submit, labels=args.labels, count=False, **flow
        )
        cpu_ms = 1000 * (time.process_time() - cpu) / args.labels
        _, queries, _ = _posts(client, page=page, submit=submit, labels=5, **flow)
        times.sort()
        print(
            f"{engine}, {args.queued:,} queued, {args.labels} labels back to back ({requests:.2f} requests"
            f" each), one client, no profiler: p50 {times[len(times) // 2]:.1f} ms, mean"
            f" {sum(times) / len(times):.1f} ms, CPU of this process (client and server) {cpu_ms:.1f} ms"
            f" per label; queries per label {min(map(len, queries))}-{max(map(len, queries))}"
        )
        if args.sql:
            print("the SQL of the last label:")
            for sql in queries[-1]:
                print(f"  {sql[:200]}")

        client = Client()
        client.force_login(second)
        _posts(client, page=page, submit=submit, labels=20, **flow)
        profile = cProfile.Profile(time.process_time)  # CPU time: waits on the database left out
        profile.enable()
        _posts(client, page=page, submit=submit, labels=args.labels, count=False, **flow)
        profile.disable()
        stats = pstats.Stats(profile)
        seconds = _shares(stats)
        total = sum(seconds.values())
        per_post = 1000 * total / args.labels
        print(f"profiled: {per_post:.1f} ms of CPU per label (cProfile's own cost included)")
        for name, spent in sorted(seconds.items(), key=lambda item: -item[1]):
            print(f"  {name:<24} {1000 * spent / args.labels:6.2f} ms  {100 * spent / total:5.1f} %")
        print(f"\nfunctions with the most cumulative time (top {args.top}):")
        stats.sort_stats("cumulative").print_stats(args.top)
        print(f"\nfunctions with the most own time (top {args.top}):")
        stats.sort_stats("tottime").print_stats(args.top)
        print("\nAttest's own functions by cumulative time:")
        stats.sort_stats("cumulative").print_stats(r"/(annotation|evaluation|config)/", args.top)


if __name__ == "__main__":
    main()
