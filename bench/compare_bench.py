"""Coverage of the paired interval of two versions compared by question.

    python bench/compare_bench.py [--reps 400] [--seed 20261124] [--power-reps 1000]

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
judge (5% and 2% of errors), few labels (30), a rate near 1 (intercept 3: about 95%), and
repeated answers carrying most of the variance on few labeled questions. Prints how often the
paired test says "differs" at 5% (it should, at most, 5% of the time), and beside it the power
against a version 3 and 5 points better (the same designs, the second version's intercept moved
so that its expected rate is 3 or 5 points higher).

Then four equal versions, every pair compared (six tests per estimate), adjusted by Holm and by
Bonferroni: how often any pair is marked (the family-wise error rate, at most 5%).

Last, the release gate on five themes and the overall estimate, two versions asking the same
questions: how often it fails for a drop when nothing changed (family-wise, Holm over the six
groups: at most 5%), and how often when every theme dropped by 3 or 5 points (power), the drops
decided by ``evaluation.reports.gate``'s own rule (``adjusted_drops``, ``is_drop``).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from evaluation.estimates.inputs import Labeled  # noqa: E402
from evaluation.measures import comparison  # noqa: E402
from evaluation.reports import gate  # noqa: E402
from inference.intervals import quantile  # noqa: E402
from inference.paired import BONFERRONI, HOLM, Linear, adjusted, paired_difference, stratified  # noqa: E402

QUESTIONS, ANSWERS, LABELS, JUDGE_ERROR = 60, 5, 60, 0.15
ETA_SD = 1.5
ALPHA = 0.05
# Designs of two versions: (judge errors, labels, intercept, questions, answers per question).
DESIGNS = [
    (0.15, 60, 1.0, 60, 5),
    (0.05, 60, 1.0, 60, 5),
    (0.02, 60, 1.0, 60, 5),
    (0.05, 30, 1.0, 60, 5),
    (0.05, 60, 3.0, 60, 5),
    (0.02, 30, 3.0, 60, 5),
    (0.05, 40, 1.0, 20, 20),
]
GATE_THEMES, GATE_QUESTIONS, GATE_ANSWERS, GATE_LABELS = 5, 20, 5, 30


def version(
    rng: np.random.Generator,
    eta: np.ndarray,
    delta: float,
    *,
    judge_error: float = JUDGE_ERROR,
    labels: int = LABELS,
    intercept: float = 1.0,
    questions: int = QUESTIONS,
    answers: int = ANSWERS,
    prefix: str = "q",
) -> tuple[dict, float]:
    """One version's estimates decomposed by question, and its true mean."""
    n = questions * answers
    question = np.repeat(np.arange(questions), answers)
    truth = (rng.random(n) < 1 / (1 + np.exp(-(intercept + eta[question] + delta)))).astype(int)
    judge = np.where(rng.random(n) < judge_error, 1 - truth, truth)
    labeled = rng.choice(n, size=labels, replace=False)
    rows = [
        (
            Labeled(unit_id=int(i), answer_id=int(i), y=int(truth[i]), yhat=int(judge[i])),
            f"{prefix}{question[i]}",
        )
        for i in sorted(labeled)
    ]
    judged: dict[str, tuple[int, int]] = {}
    for q in range(questions):
        verdicts = judge[question == q]
        judged[f"{prefix}{q}"] = (len(verdicts), int(verdicts.sum()))
    return comparison.theme_linears(rows=rows, judged=judged, method="robust"), float(truth.mean())


@lru_cache(maxsize=32)
def shift_for(points: float, intercept: float) -> float:
    """The change of intercept that raises the expected rate by ``points`` (rate scale), the
    question effects drawn as in the bench."""
    eta = np.random.default_rng(0).normal(0, ETA_SD, size=200_000)
    base = float(np.mean(expit(intercept + eta)))
    lo, hi = -5.0, 5.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.mean(expit(intercept + eta + mid)) - base < points else (lo, mid)
    return (lo + hi) / 2


def differs(left, right, name: str) -> bool | None:
    diff = paired_difference(left=left[name], right=right[name], alpha=ALPHA)
    if diff is None:
        return None
    return not (diff.lo <= 0 <= diff.hi)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--power-reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261124)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    names = (comparison.HUMAN, comparison.PPI)
    paired = {name: [] for name in names}
    independent = {name: [] for name in names}
    for _ in range(args.reps):
        eta = rng.normal(0, ETA_SD, size=QUESTIONS)
        a, truth_a = version(rng, eta, 0.0)
        b, truth_b = version(rng, eta, 0.4)
        target = truth_b - truth_a
        for name in names:
            diff = paired_difference(left=a[name], right=b[name], alpha=ALPHA)
            if diff is None:
                continue
            paired[name].append((diff.lo <= target <= diff.hi, (diff.hi - diff.lo) / 2))
            half = quantile(alpha=ALPHA, df=None) * diff.independent_se
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

    reps = args.power_reps
    print()
    print(
        f"Two versions compared by question, {reps} replications: "
        "how often the 95% paired interval excludes 0"
    )
    print(
        f"{'judge errors':>12} {'labels':>6} {'rate':>5} {'q x a':>7} | {'no change':>17} | "
        f"{'+3 points':>17} | {'+5 points':>17}"
    )
    print(f"{'':>35} | {'human':>8} {'PPI++':>8} | {'human':>8} {'PPI++':>8} | {'human':>8} {'PPI++':>8}")
    worst = 0.0
    for judge_error, labels, intercept, questions, answers in DESIGNS:
        design = {
            "judge_error": judge_error,
            "labels": labels,
            "questions": questions,
            "answers": answers,
        }
        shares: dict[float, dict[str, float]] = {}
        rates = []
        for points in (0.0, 0.03, 0.05):
            shift = shift_for(points, intercept) if points else 0.0
            found: dict[str, list[bool]] = {name: [] for name in names}
            for _ in range(reps):
                eta = rng.normal(0, ETA_SD, size=questions)
                a, truth_a = version(rng, eta, 0.0, intercept=intercept, **design)
                b, _ = version(rng, eta, shift, intercept=intercept, **design)
                rates.append(truth_a)
                for name in names:
                    verdict_ = differs(a, b, name)
                    if verdict_ is not None:
                        found[name].append(verdict_)
            shares[points] = {name: float(np.mean(found[name])) for name in names}
        worst = max(worst, *shares[0.0].values())
        print(
            f"{judge_error:>12.2f} {labels:>6} {np.mean(rates):>5.2f} {questions:>3}x{answers:<3} | "
            + " | ".join(
                f"{shares[points][comparison.HUMAN]:>8.3f} {shares[points][comparison.PPI]:>8.3f}"
                for points in (0.0, 0.03, 0.05)
            )
        )
    print(
        f"worst false-alarm rate {worst:.3f} "
        f"(goal: at most 0.05, up to noise: +/- {2 * math.sqrt(0.05 * 0.95 / reps):.3f})"
    )

    print()
    print(f"Four equal versions, every pair compared by question (6 tests), {reps} replications:")
    print(
        f"{'judge errors':>12} {'labels':>6} | {'Holm: any marked':>16} {'Bonferroni':>10} | "
        f"{'one pair, no adjustment':>23}"
    )
    for judge_error, labels, intercept, questions, answers in DESIGNS[:3]:
        design = {"judge_error": judge_error, "labels": labels, "questions": questions, "answers": answers}
        any_holm = any_bonferroni = single = 0
        for _ in range(reps):
            eta = rng.normal(0, ETA_SD, size=questions)
            versions = [version(rng, eta, 0.0, intercept=intercept, **design)[0] for _ in range(4)]
            p_values = []
            for left, right in itertools.combinations(versions, 2):
                diff = paired_difference(left=left[comparison.PPI], right=right[comparison.PPI], alpha=ALPHA)
                p_values.append(math.nan if diff is None else diff.p_value)
            any_holm += any(p < ALPHA for p in adjusted(p_values, method=HOLM) if not math.isnan(p))
            any_bonferroni += any(
                p < ALPHA for p in adjusted(p_values, method=BONFERRONI) if not math.isnan(p)
            )
            single += (not math.isnan(p_values[0])) and p_values[0] < ALPHA
        print(
            f"{judge_error:>12.2f} {labels:>6} | {any_holm / reps:>16.3f} {any_bonferroni / reps:>10.3f} | "
            f"{single / reps:>23.3f}"
        )

    print()
    print(
        f"The release gate, {GATE_THEMES} themes of {GATE_QUESTIONS} questions x {GATE_ANSWERS} answers "
        f"({GATE_LABELS} labels each) and overall, by question, {reps} replications: share failed for a drop"
    )
    print(
        f"{'judge errors':>12} | {'no change':>9} {'-3 points':>9} {'-5 points':>9} | "
        f"{'no change, unadjusted':>21}"
    )
    for judge_error in (0.15, 0.05):
        row = []
        unadjusted = 0.0
        for points in (0.0, 0.03, 0.05):
            shift = -shift_for(points, 1.0) if points else 0.0
            failed = raw_failed = 0
            for _ in range(reps):
                old: dict[str, Linear] = {}
                new: dict[str, Linear] = {}
                for theme in range(GATE_THEMES):
                    eta = rng.normal(0, ETA_SD, size=GATE_QUESTIONS)
                    design = {
                        "judge_error": judge_error,
                        "labels": GATE_LABELS,
                        "questions": GATE_QUESTIONS,
                        "answers": GATE_ANSWERS,
                        "prefix": f"t{theme}q",
                    }
                    old[f"T{theme}"] = version(rng, eta, 0.0, **design)[0][comparison.PPI]
                    new[f"T{theme}"] = version(rng, eta, shift, **design)[0][comparison.PPI]
                size = GATE_QUESTIONS * GATE_ANSWERS
                old["overall"] = stratified([(old[t], size) for t in list(old)])
                new["overall"] = stratified([(new[t], size) for t in list(new) if t != "overall"])
                differences = {}
                for group in old:
                    diff = paired_difference(left=old[group], right=new[group], alpha=ALPHA)
                    if diff is not None:
                        differences[group] = gate.Drop.of_paired(diff)
                adjusted_p = gate.adjusted_drops(differences=differences)
                failed += any(
                    gate.is_drop(d, p_adjusted=adjusted_p[g], alpha=ALPHA) for g, d in differences.items()
                )
                raw_failed += any(
                    gate.is_drop(d, p_adjusted=d.p_value, alpha=ALPHA) for d in differences.values()
                )
            row.append(failed / reps)
            if not points:
                unadjusted = raw_failed / reps
        print(f"{judge_error:>12.2f} | {row[0]:>9.3f} {row[1]:>9.3f} {row[2]:>9.3f} | {unadjusted:>21.3f}")
    print(f"{time.perf_counter() - started:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
