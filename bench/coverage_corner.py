"""The corner of the coverage grid where the designs that follow the judge label most of a theme.

    python bench/coverage_corner.py [--reps 1000] [--seed 20261128]

One theme of N = 500 units with 300 labels (over 60% of it once the pilot is counted), a rate of
2, 5, 95 or 98%, a judge of 75, 90 or 97% accuracy, calibrated or overconfident: 24 cells, each
run for the confidence design, the split by verdict and a K-means sample topped up by
confidence, with ``bench/coverage_grid.py``'s own generator and estimators. Prints each cell's
coverage, mean half-width and labels, then per design the worst and mean coverage and the cells
more than two binomial standard errors under 95% (docs/statistics.md, Coverage in every design).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import coverage_grid as grid

DESIGNS = ("confidence", "split", "mixed")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261128)
    args = parser.parse_args()
    cells = [
        grid.Cell(prevalence=p, accuracy=a, judge=j, n=300, N=500)
        for p in (0.02, 0.05, 0.95, 0.98)
        for a in (0.75, 0.9, 0.97)
        for j in ("calibrated", "overconfident")
    ]
    started = time.perf_counter()
    coverages: dict[str, list[float]] = {}
    for cell in cells:
        _, summary = grid.run_cell((cell, args.reps, 0, args.seed, DESIGNS))
        for method, s in summary.items():
            print(
                f"{cell.label} {method:<18} coverage {s['coverage']:.3f} "
                f"half-width {s['halfwidth']:.4f} labels {s['labels']:.0f}",
                flush=True,
            )
            coverages.setdefault(method, []).append(s["coverage"])
    noise = 2 * math.sqrt(0.95 * 0.05 / args.reps)
    for method, found in coverages.items():
        under = sum(c < 0.95 - noise for c in found)
        print(
            f"{method:<18} worst {min(found):.3f} mean {sum(found) / len(found):.3f} "
            f"cells beyond noise {under} of {len(found)}"
        )
    print(f"{time.perf_counter() - started:.0f} s, {args.reps} replications per cell")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
