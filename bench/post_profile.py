"""Where the Python of one label POST goes: a profile of the label page's htmx POST (PostgreSQL).

Run with ``.venv/bin/python bench/post_profile.py [--queued 2000] [--labels 300] [--top 25]
[--sql]``. In a database of its own (``attest_bench_post_profile``, dropped after) it builds the
queue of ``bench/annotation_bench.py``, then one person labels ``--labels`` units through the
page's POST (the next unit rendered in the response, through the whole middleware stack), first
unprofiled (wall time and CPU time per POST, then the queries of a few more), then under
cProfile. It prints the milliseconds per POST, the share of the profiled time spent in each part
of the stack (template rendering, building SQL, running it, sessions and authentication, the
application's own code) and the functions with the most cumulative and own time. It asserts
nothing: timings belong here, never in tests.
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
    client, *, page: str, submit: str, labels: int, count: bool = True
) -> tuple[list[float], list[list[str]]]:
    """Label ``labels`` units back to back; the POST times (ms) and the SQL each ran (when
    ``count``: the capture itself costs Python, so the profiled pass leaves it off)."""
    from contextlib import nullcontext

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    unit_re = re.compile(r'id="work"[^>]*data-unit="(\d*)"')
    key_re = re.compile(r'name="request_key" value="([0-9a-f]+)"')
    html = client.get(page, HTTP_HX_REQUEST="true").content.decode()
    times, queries = [], []
    for _ in range(labels):
        unit = unit_re.search(html).group(1)
        data = {"unit_id": unit, "value": str(int(unit) % 2), "request_key": key_re.search(html).group(1)}
        captured = CaptureQueriesContext(connection) if count else nullcontext()
        with captured:
            began = time.perf_counter()
            response = client.post(submit, data, HTTP_HX_REQUEST="true")
            times.append(1000 * (time.perf_counter() - began))
        queries.append([q["sql"] for q in captured.captured_queries] if count else [])
        html = response.content.decode()
    return times, queries


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
    parser.add_argument("--sql", action="store_true", help="print the SQL of one POST")
    args = parser.parse_args()
    with bench_database("attest_bench_post_profile") as engine:
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
        _posts(client, page=page, submit=submit, labels=20)  # warm caches, templates, connections
        cpu = time.process_time()
        times, queries = _posts(client, page=page, submit=submit, labels=args.labels, count=False)
        cpu_ms = 1000 * (time.process_time() - cpu) / args.labels
        _, queries = _posts(client, page=page, submit=submit, labels=5)
        times.sort()
        print(
            f"{engine}, {args.queued:,} queued, {args.labels} POSTs back to back, one client, no profiler:"
            f" p50 {times[len(times) // 2]:.1f} ms, mean {sum(times) / len(times):.1f} ms,"
            f" CPU of this process (client and server) {cpu_ms:.1f} ms per POST;"
            f" queries per POST {min(map(len, queries))}-{max(map(len, queries))}"
        )
        if args.sql:
            print("the SQL of the last POST:")
            for sql in queries[-1]:
                print(f"  {sql[:200]}")

        client = Client()
        client.force_login(second)
        _posts(client, page=page, submit=submit, labels=20)
        profile = cProfile.Profile()
        profile.enable()
        _posts(client, page=page, submit=submit, labels=args.labels, count=False)
        profile.disable()
        stats = pstats.Stats(profile)
        seconds = _shares(stats)
        total = sum(seconds.values())
        per_post = 1000 * total / args.labels
        print(f"profiled: {per_post:.1f} ms of Python per POST (cProfile's own cost included)")
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
