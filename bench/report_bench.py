"""Report speed: estimates for a campaign of 1,000,000 answer-level units.

    python bench/report_bench.py [--units 1000000] [--labels 1000]

A throw-away PostgreSQL database (``attest_report_bench``, see bench/pgdb.py) gets the first
version of ``bench.large_campaign.build_large`` (answers, units, judge labels generated inside
PostgreSQL with INSERT ... SELECT over generate_series, so building a million rows takes
seconds), with ``--labels`` human labels per criterion. Prints the seconds of ``compute_report``
(best of 3) of relevance with the imported judge, for both methods.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.large_campaign import build_large
from bench.pgdb import bench_database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=1_000_000)
    parser.add_argument("--labels", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with bench_database("attest_report_bench") as engine:
        from annotation.models import Criterion
        from evaluation.estimates.report import compute_report
        from evaluation.models import Judge

        started = time.perf_counter()
        built = build_large(units=args.units, labels=args.labels, versions=1, snapshots=False)
        seconds = time.perf_counter() - started
        print(f"{engine}: built {args.units} units and {args.labels} human labels in {seconds:.1f}s")
        criterion = Criterion.objects.select_related("campaign").get(
            campaign__slug=built["campaign"], name="relevance"
        )
        judge = Judge.objects.get(campaign=criterion.campaign, name="imported")
        for method in ("robust", "study"):
            times = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                report = compute_report(criterion=criterion, judge=judge, method=method)
                times.append(time.perf_counter() - started)
            overall = report.overall
            print(
                f"compute_report method={method}: best {min(times):.3f}s of {args.repeat} "
                f"(all: {', '.join(f'{t:.3f}' for t in times)}); overall PPI++ {overall.ppi.mean:.4f} "
                f"[{overall.ppi.lo:.4f}, {overall.ppi.hi:.4f}], "
                f"n_human {overall.n_human}, n_judge {overall.n_judge}, "
                f"agreement {overall.agreement.observed:.3f}"
            )


if __name__ == "__main__":
    main()
