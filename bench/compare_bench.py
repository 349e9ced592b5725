"""Coverage of the paired interval of two versions compared by question.

    python bench/compare_bench.py [--reps 400] [--seed 20261124]

No database. Two versions of the assistant answer the same 60 questions, 5 answers each (300
answers per version). Per replication:

- Truth: relevance ~ Bernoulli(sigmoid(1 + eta_q + delta_v)), the question's effect eta_q ~
  N(0, 1.5^2) shared by both versions (what makes them correlated), delta = 0 for version A and
  0.4 for version B. The target is the realised difference of the two versions' means over all
  their answers (finite-population means).
- Judge: wrong on 15% of the answers, at random.
- Human sample: 60 answers per version, drawn at random, independently in each version.

Each version's human-only and PPI++ (robust method: cross-fitted lambda held fixed) estimates are
decomposed by question with ``evaluation.measures.comparison.theme_linears`` (the app's code, no copy)
and compared with ``paired_difference``. Prints, per estimate, the coverage of the 95% paired
interval, of the independent-samples interval (variances added), and their mean half-widths.

Then two equal versions (delta 0 for both) on a grid that includes the designs that hurt: a good
judge (5% and 2% of errors), few labels (30), a rate near 1 (intercept 3: about 95%). Prints how
often the paired test says "differs" at 5% (it should, at most, 5% of the time).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from evaluation.estimates.inputs import Labeled  # noqa: E402
from evaluation.measures import comparison  # noqa: E402
from inference.intervals import quantile  # noqa: E402
from inference.paired import paired_difference  # noqa: E402

QUESTIONS, ANSWERS, LABELS, JUDGE_ERROR = 60, 5, 60, 0.15


def version(
    rng: np.random.Generator,
    eta: np.ndarray,
    delta: float,
    *,
    judge_error: float = JUDGE_ERROR,
    labels: int = LABELS,
    intercept: float = 1.0,
) -> tuple[dict, float]:
    """One version's estimates decomposed by question, and its true mean."""
    n = QUESTIONS * ANSWERS
    question = np.repeat(np.arange(QUESTIONS), ANSWERS)
    truth = (rng.random(n) < 1 / (1 + np.exp(-(intercept + eta[question] + delta)))).astype(int)
    judge = np.where(rng.random(n) < judge_error, 1 - truth, truth)
    labeled = rng.choice(n, size=labels, replace=False)
    rows = [
        (Labeled(unit_id=int(i), answer_id=int(i), y=int(truth[i]), yhat=int(judge[i])), f"q{question[i]}")
        for i in sorted(labeled)
    ]
    judged: dict[str, tuple[int, int]] = {}
    for q in range(QUESTIONS):
        verdicts = judge[question == q]
        judged[f"q{q}"] = (len(verdicts), int(verdicts.sum()))
    return comparison.theme_linears(rows=rows, judged=judged, method="robust"), float(truth.mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20261124)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    names = (comparison.HUMAN, comparison.PPI)
    paired = {name: [] for name in names}
    independent = {name: [] for name in names}
    for _ in range(args.reps):
        eta = rng.normal(0, 1.5, size=QUESTIONS)
        a, truth_a = version(rng, eta, 0.0)
        b, truth_b = version(rng, eta, 0.4)
        target = truth_b - truth_a
        for name in names:
            diff = paired_difference(left=a[name], right=b[name], alpha=0.05)
            if diff is None:
                continue
            paired[name].append((diff.lo <= target <= diff.hi, (diff.hi - diff.lo) / 2))
            half = quantile(alpha=0.05, df=None) * diff.independent_se
            independent[name].append((abs(diff.estimate - target) <= half, half))
    print(f"{args.reps} replications, {QUESTIONS} questions x {ANSWERS} answers, {LABELS} labels per version")
    print(f"{'estimate':<8} {'paired cover':>12} {'half-width':>10} {'indep. cover':>12} {'half-width':>10}")
    ok = True
    for name in names:
        p = np.array(paired[name], dtype=float)
        i = np.array(independent[name], dtype=float)
        cover, width = p[:, 0].mean(), p[:, 1].mean()
        print(f"{name:<8} {cover:>12.3f} {width:>10.3f} {i[:, 0].mean():>12.3f} {i[:, 1].mean():>10.3f}")
        ok = ok and p[:, 0].mean() >= 0.93 and p[:, 1].mean() < i[:, 1].mean()
    verdict = "yes" if ok else "NO"
    print(f"{time.perf_counter() - started:.1f} s; paired covers >= 93% and is narrower: {verdict}")
    print()
    print("Two equal versions: share of replications where the 95% paired interval excludes 0")
    print(f"{'judge errors':>12} {'labels':>6} {'rate':>5} {'human':>6} {'PPI++':>6}")
    worst = 0.0
    for judge_error, labels, intercept in [
        (0.15, 60, 1.0),
        (0.05, 60, 1.0),
        (0.02, 60, 1.0),
        (0.05, 30, 1.0),
        (0.05, 60, 3.0),
        (0.02, 30, 3.0),
    ]:
        rejected = {name: [] for name in names}
        rates = []
        for _ in range(args.reps):
            eta = rng.normal(0, 1.5, size=QUESTIONS)
            design = {"judge_error": judge_error, "labels": labels, "intercept": intercept}
            a, truth_a = version(rng, eta, 0.0, **design)
            b, _ = version(rng, eta, 0.0, **design)
            rates.append(truth_a)
            for name in names:
                diff = paired_difference(left=a[name], right=b[name], alpha=0.05)
                if diff is not None:
                    rejected[name].append(not (diff.lo <= 0 <= diff.hi))
        shares = {name: float(np.mean(rejected[name])) for name in names}
        worst = max(worst, *shares.values())
        print(
            f"{judge_error:>12.2f} {labels:>6} {np.mean(rates):>5.2f} "
            f"{shares[comparison.HUMAN]:>6.3f} {shares[comparison.PPI]:>6.3f}"
        )
    print(
        f"{time.perf_counter() - started:.1f} s; worst rejection rate {worst:.3f} "
        "(goal: at most 0.05, up to noise)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
