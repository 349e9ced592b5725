"""Stability across repetitions, simulated: coverage of the rate's interval with questions as
clusters against the iid one, ICC(1) and its F interval, and the design-effect prediction of the
width against the width measured by subsampling.

    python bench/stability_bench.py [--reps 1000] [--seed 20261124]

No database. Each replication draws G questions from a population: question i has its own rate
p_i ~ Beta(a, b) with mean 0.8, and its R answers are Bernoulli(p_i). For a beta-binomial the
intra-question correlation of the 0/1 answers is 1 / (a + b + 1): the rows below set it to 0.05,
0.3 and 0.7. The target of the rate's interval is the population mean 0.8 (the next campaign's
questions are new ones); the target of the ICC interval is the true ICC.

Prints, per design: coverage of the 95% interval (clustered, as the stability page computes it,
and iid, which ignores that answers to one question are alike) and its mean width; the mean
ICC(1) and the coverage of its F interval; and the mean ratio of the width the design effect
predicts to the width measured by subsampling, at r = 1, R / 2 and R (a subsample of the
replications, 10 draws each).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# No query is made: Django is set up only because evaluation.measures.stability imports the models.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from inference.estimators.means import classical_mean  # noqa: E402
from inference.reliability.icc import clustered_estimate, icc_oneway, width_curve  # noqa: E402

MEAN = 0.8
ALPHA = 0.05
DESIGNS = [(20, 6, 0.05), (20, 6, 0.3), (20, 6, 0.7), (60, 20, 0.3)]  # (questions, repetitions, ICC)
CURVE_EVERY = 10


def replicate(*, rng: np.random.Generator, G: int, R: int, rho: float) -> list[list[float]]:
    total = 1 / rho - 1  # a + b
    rates = rng.beta(MEAN * total, (1 - MEAN) * total, size=G)
    return [list((rng.random(R) < rate).astype(float)) for rate in rates]


def run(*, reps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    print(f"{reps} replications per design, 95% intervals, population rate {MEAN}")
    print(
        f"{'G':>3} {'R':>3} {'ICC':>5} | {'clustered cov':>13} {'width':>6} | {'iid cov':>7} {'width':>6} | "
        f"{'ICC mean':>8} {'ICC cov':>7} | {'predicted / measured width at r = 1, R/2, R':>44}"
    )
    for G, R, rho in DESIGNS:
        covered = {"clustered": 0, "iid": 0}
        widths: dict[str, list[float]] = {"clustered": [], "iid": []}
        iccs, icc_covered, icc_defined = [], 0, 0
        ratios: dict[int, list[float]] = {1: [], R // 2: [], R: []}
        for rep in range(reps):
            groups = replicate(rng=rng, G=G, R=R, rho=rho)
            clustered = clustered_estimate(groups=groups, alpha=ALPHA)
            iid = classical_mean(y=[v for g in groups for v in g], alpha=ALPHA)
            for name, interval in (("clustered", clustered), ("iid", iid)):
                covered[name] += interval.shown_lo <= MEAN <= interval.shown_hi
                widths[name].append(interval.shown_hi - interval.shown_lo)
            icc = icc_oneway(groups=groups, alpha=ALPHA)
            if math.isfinite(icc.value):
                iccs.append(icc.value)
            if icc.has_interval:
                icc_defined += 1
                icc_covered += icc.lo <= rho <= icc.hi
            if rep % CURVE_EVERY == 0:
                curve = width_curve(groups=groups, alpha=ALPHA, draws=10, seed=rep, icc=icc.value)
                for point in curve:
                    if point.r in ratios and point.mean_width > 0 and math.isfinite(point.predicted_width):
                        ratios[point.r].append(point.predicted_width / point.mean_width)
        ratio_text = ", ".join(f"{np.mean(values):.2f}" for values in ratios.values())
        print(
            f"{G:>3} {R:>3} {rho:>5.2f} | {covered['clustered'] / reps:>13.3f} "
            f"{np.mean(widths['clustered']) * 100:>6.1f} | {covered['iid'] / reps:>7.3f} "
            f"{np.mean(widths['iid']) * 100:>6.1f} | {np.mean(iccs):>8.3f} "
            f"{icc_covered / max(icc_defined, 1):>7.3f} | {ratio_text:>44}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261124)
    args = parser.parse_args()
    started = time.perf_counter()
    run(reps=args.reps, seed=args.seed)
    print(f"{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
