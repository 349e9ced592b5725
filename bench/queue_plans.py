"""The plan of every query on the label path, at a queue size (PostgreSQL).

Run with ``.venv/bin/python bench/queue_plans.py --size 500000 [--labelled N] [--vacuum]
[--out FILE]``. Builds the campaign of ``bench/annotation_bench.py`` with ``--size`` queued
sentence units in a database of its own, lets two people label 40 units so that the front of the
queue holds done work, then ``--labelled`` more units labelled by the person followed (0 by
default: a day's work leaves that many slots of theirs behind, and as many rows deleted at the
front of the queue's index until a VACUUM; ``--vacuum`` runs one, with ANALYZE, after them), then
follows that person's label through the page: the htmx GET that hands them a unit, and the htmx
POST that stores their label and hands them the next one. Each query is explained with
``EXPLAIN (ANALYZE, BUFFERS)`` just before it runs, inside a savepoint rolled back afterwards, so
the plans are those of the state the query met. Prints (or writes to ``--out``) each query's
text, its execution time and its plan, then a summary: the number of queries, the sum of their
execution times and the buffers they read (shared hits and reads of the plan's top node).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.annotation_bench import DATABASE, build_queued, people, settle  # noqa: E402
from bench.pgdb import bench_database  # noqa: E402

_TIME = re.compile(r"Execution Time: ([0-9.]+) ms")
_BUFFERS = re.compile(r"Buffers: shared(?: hit=(\d+))?(?: read=(\d+))?")
_SKIPPED = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT", "EXPLAIN")


def explained(record: list[tuple[str, str, float]]):
    """A query wrapper that explains each query before running it (see the module docstring)."""
    from django.db import connection, transaction

    def wrapper(execute, sql, params, many, context):
        if not many and not sql.lstrip().upper().startswith(_SKIPPED):
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                    plan = "\n".join(row[0] for row in cursor.fetchall())
                transaction.set_rollback(True)
            found = _TIME.search(plan)
            record.append((f"{sql}\n-- params: {params!r}", plan, float(found.group(1)) if found else 0.0))
        return execute(sql, params, many, context)

    return wrapper


def buffers(plan: str) -> int:
    """Shared buffers the plan's top node hit or read (its children's included); 0 when none."""
    for line in plan.splitlines():
        if (found := _BUFFERS.search(line)) is not None:
            return sum(int(n) for n in found.groups() if n)
        if line.startswith("Planning"):
            break
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2_000)
    parser.add_argument("--labelled", type=int, default=0, help="units the person followed labels first")
    parser.add_argument("--vacuum", action="store_true", help="VACUUM (ANALYZE) after those labels")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--database", default=f"{DATABASE}_plans", help="name of the throw-away database")
    args = parser.parse_args()
    with bench_database(args.database) as engine:
        if engine != "postgresql":
            raise SystemExit("plans need PostgreSQL")
        from django.db import connection
        from django.test import Client
        from django.urls import reverse

        from annotation.models import Role, Stage
        from annotation.workflow import next_unit, submit_label

        campaign, criterion = build_queued(size=args.size)
        settle(engine)
        first, second, person = people(campaign=campaign, role=Role.ANNOTATOR, count=3)
        for user in (first, second):
            for _ in range(20):
                unit = next_unit(user=user, criterion=criterion, stage=Stage.LABEL)
                submit_label(user=user, unit_id=unit.pk, criterion=criterion, stage=Stage.LABEL, value=1)
        for _ in range(args.labelled):
            unit = next_unit(user=person, criterion=criterion, stage=Stage.LABEL)
            submit_label(user=person, unit_id=unit.pk, criterion=criterion, stage=Stage.LABEL, value=1)
        if args.vacuum:
            with connection.cursor() as cursor:
                cursor.execute("VACUUM (ANALYZE)")
        client = Client()
        client.force_login(person)
        page = reverse("annotation:annotate", args=[campaign.slug, criterion.name, "label"])
        submit = reverse("annotation:annotate_submit", args=[campaign.slug, criterion.name, "label"])
        html = client.get(page, HTTP_HX_REQUEST="true").content.decode()
        unit = re.search(r'id="work"[^>]*data-unit="(\d*)"', html).group(1)
        key = re.search(r'name="request_key" value="([0-9a-f]+)"', html).group(1)
        state = f", after {args.labelled:,} labels of theirs" if args.labelled else ""
        state += ", then VACUUM (ANALYZE)" if args.vacuum else ""
        lines: list[str] = [f"# {args.size:,} units queued{state}: one label through the page"]
        heaviest: list[tuple[int, str, int, float]] = []
        total_queries, total_ms = 0, 0.0
        for name, call in (
            ("GET (the unit on screen)", lambda: client.get(page, HTTP_HX_REQUEST="true")),
            (
                "POST submit (the label, then the next unit)",
                lambda: client.post(
                    submit, {"unit_id": unit, "value": "1", "request_key": key}, HTTP_HX_REQUEST="true"
                ),
            ),
        ):
            record: list[tuple[str, str, float]] = []
            with connection.execute_wrapper(explained(record)):
                call()
            read = sum(buffers(plan) for _, plan, _ in record)
            lines.append(
                f"\n## {name}: {len(record)} queries, {sum(ms for *_, ms in record):.2f} ms executing,"
                f" {read} buffers\n"
            )
            for n, (sql, plan, ms) in enumerate(record, start=1):
                head = f"### {n}. {ms:.3f} ms, {buffers(plan)} buffers"
                lines.append(f"{head}\n\n```sql\n{sql}\n```\n\n```\n{plan}\n```\n")
                heaviest.append((buffers(plan), name.split()[0], n, ms))
            total_queries += len(record)
            total_ms += sum(ms for *_, ms in record)
        lines.append(f"\nTotal: {total_queries} queries, {total_ms:.2f} ms executing.")
        top = ", ".join(
            f"{request} {n}: {read} buffers, {ms:.3f} ms"
            for read, request, n, ms in sorted(heaviest)[-3:][::-1]
        )
        lines.append(f"Most buffers: {top}.")
        text = "\n".join(lines)
        if args.out:
            args.out.write_text(text + "\n")
            print(
                f"{args.size:,} queued{state}: {total_queries} queries, {total_ms:.2f} ms executing"
                f" -> {args.out}\nMost buffers: {top}."
            )
        else:
            print(text)


if __name__ == "__main__":
    main()
