"""The anytime mode's stopping rule as the app applies it: batches, a look after each, stop at
the target half-width.

    python bench/anytime_stop_bench.py [--reps 300] [--units 800] [--batch 20] [--target 0.05]

One theme of ``--units`` units, each with a probability p of a 1 (Beta(2, 1), clipped to
[0.02, 0.98]); the judge's confidence is p (calibrated), the human label is drawn from p. As
``evaluation.designs.anytime`` does: q is the confidence design with a budget of one draw, the variance
guess is ``anytime.variance_guess`` without a pilot, the bets are tuned at
``sequential.planned_draws``; each batch draws ``--batch`` units with replacement and the theme
stops at the first look whose half-width is at most the target (or at 4 times the planned
draws). Prints the draws and distinct labels at stopping, their ratio to the draws a fixed-size
interval with the true variance of phi needs for the same half-width, and the coverage at
stopping and over all looks.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from evaluation.designs.anytime import variance_guess  # noqa: E402
from evaluation.designs.anytime_status import CAP_FACTOR  # noqa: E402
from inference.designs.inclusion import DEFAULT_FLOOR, confidence_probabilities  # noqa: E402
from inference.estimators.sequential import anytime_ppi, planned_draws  # noqa: E402

ALPHA = 0.05
Z = 1.959964


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--units", type=int, default=800)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--target", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=20261124)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n_units, batch, target = args.units, args.batch, args.target
    stops, labels, ratios = [], [], []
    covered_stop = covered_all = 0
    for _ in range(args.reps):
        p = np.clip(rng.beta(2, 1, n_units), 0.02, 0.98)
        y = (rng.random(n_units) < p).astype(float)
        truth = float(y.mean())
        q = confidence_probabilities(confidence=p, budget=1.0, floor=DEFAULT_FLOOR)
        guess = variance_guess(confidence=p, q=q, pilot=[])
        planned = planned_draws(target_halfwidth=target, variance_guess=guess, alpha=ALPHA)
        # The looks are those the app would make batch after batch: each look reads only the
        # draws before it (its lambda the earlier batches', its bounds the sequence so far), so
        # the draws up to the cap are made at once and the first look that reaches the target is
        # where the theme stops.
        cap = CAP_FACTOR * planned
        every = rng.choice(n_units, size=cap + (-cap) % batch, p=q)
        looks = anytime_ppi(
            units=every,
            y=y[every],
            q=q,
            confidence_all=p,
            batch=batch,
            alpha=ALPHA,
            planned=planned,
            variance_guess=guess,
        )
        stop = next((k for k, look in enumerate(looks) if look.halfwidth <= target), len(looks) - 1)
        draws = every[: looks[stop].draws]
        covered_stop += looks[stop].lo <= truth <= looks[stop].hi
        covered_all += all(look.lo <= truth <= look.hi for look in looks[: stop + 1])
        stops.append(draws.size)
        labels.append(np.unique(draws).size)
        # phi with lambda 1 has variance sum_i q_i (phi_i - theta)^2.
        phi = (y - p) / (n_units * q) + p.mean()
        fixed = Z**2 * float(np.sum(q * (phi - truth) ** 2)) / target**2
        ratios.append(draws.size / fixed)
    print(f"{args.reps} themes of {n_units} units, batches of {batch}, target +/- {target}")
    print(f"draws at stopping: median {np.median(stops):.0f}")
    print(f"distinct labels at stopping: median {np.median(labels):.0f}")
    print(f"draws / fixed-size draws for the same half-width: median {np.median(ratios):.2f}")
    print(f"coverage at stopping {covered_stop / args.reps:.1%}")
    print(f"coverage over all looks {covered_all / args.reps:.1%}")


if __name__ == "__main__":
    main()
