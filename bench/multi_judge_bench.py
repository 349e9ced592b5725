"""What a second judge buys: the planner's combination of a cheap and a strong judge against the
best single judge, at the same target half-width.

    python bench/multi_judge_bench.py [--quick] [--reps 500] [--seed 20261205] [--workers 1]
        [--target 0.03] [--pilot 50] [--effect-answers 20] [--cheap-accuracy 0.8]
        [--strong-accuracy 0.95] [--cheap-cost 0.001] [--strong-cost 0.02] [--human-minutes 0.5]
        [--rate 2.0]

No database. One design is one theme of N sentences drawn by ``bench/coverage_grid.py``'s
generator (answers of 6 to 14 sentences, an answer effect on the truth; its ``population`` and
``intercept``), redrawn in every replication, and two judges: a **cheap** one (``--cheap-cost``
per unit, ``--cheap-accuracy``) and a **strong** one (``--strong-cost``, ``--strong-accuracy``).
Each judge's 0/1 verdict is coverage_grid's: signal (2 y - 1) d / 2 + noise with
d = 2 Phi^-1(accuracy), verdict 1[signal > 0], right with probability ``accuracy`` on 1s and on
0s alike. Only verdicts enter the estimate (the report combines judges' 0/1 labels), so a judge's
confidence, calibrated or overconfident, changes nothing here; what the designs vary instead is
how the judges err:

- ``independent``: each judge's noise its own (errors independent given the truth);
- ``shared``: the two noises correlated (``SHARED`` = 0.6): both judges err on the same hard units,
  so the cheap one adds less beside the strong one;
- ``biased``: the cheap judge says 1 too often (verdict 1[signal > -0.5], coverage_grid's shifted
  judge); the strong one as ``independent``.

A human label costs ``--human-minutes`` x ``--rate`` (0.5 minute at 2.0 per minute: 1.0).

Per replication, as a team would run it:

1. **Pilot.** ``--pilot`` units drawn at random, labeled by a human and by both judges; both
   judges also run on every unit of the first ``--effect-answers`` of the pilot's answers (as
   the app runs a judge, answer by answer). The moments of the labels and the judges' verdicts
   on the labeled units (``judge_allocation.moments``), and each judge's design effect read on
   the answers it judged whole (``inclusion.cluster_design_effect``): how much more a share's
   mean varies when whole answers are drawn.
2. **Plan.** ``judge_allocation.plan_theme`` for the target half-width, with the pilot's labels
   and judgments already made and the design effects: its cheapest design (``best``: which
   judges, on which share, how many labels in all) and the cheapest with one judge on every
   unit (``single``).
3. **(a) The best single judge.** ``single``'s labels (the pilot plus a random top-up), its judge
   run on every unit, the report's PPI++ (``robust_ppi``, answers as clusters, the
   finite-population correction).
4. **(b) The combination.** ``best``'s labels (the pilot plus another random top-up); a judge at
   share 1 run on every unit, a judge at a share below 1 run on a Poisson draw of the answers
   with that probability (every unit of a drawn answer judged, as the app draws a ``JudgeShare``)
   and on the labeled units; ``multi_ppi`` with answers as clusters, the units outside the labels
   that every judge predicted as its pool.

Cost is what was spent, pilot included: labels x the label's cost plus, per judge, the units it
judged (the pilot's answers among them) x its cost. The target is the realised rate of the N
units. Prints per design: the plan (each judge's mean share when the planner ran it, how often
it ran it, the median labels), the mean cost of (a), of (b) and of human labels alone (the
planner's projection, not drawn), the saving 1 - cost(b) / cost(a) and, since the intervals
drawn are not exactly as wide as planned, the saving had (b) drawn the labels that bring its
mean half-width to (a)'s (its labels scaled by the squared ratio of the half-widths, an
approximation), the coverage of the 95% interval of (a) and (b), their mean half-widths and the
share of replications whose interval reached the target. A coverage under 94% is marked ``<``,
``<<`` when under 95% by more than two binomial standard errors; a saving under 30% is marked
``<``. ``--quick``: four designs instead of eight, 100 replications instead of 500 (about 15 s,
and 2 to 3 minutes, on one core).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import coverage_grid as grid
from scipy.special import expit
from scipy.stats import norm

from inference.designs.inclusion import cluster_design_effect
from inference.designs.judge_allocation import moments, plan_theme
from inference.estimators.means import classical_mean
from inference.estimators.multi_ppi import JudgeTerm, multi_ppi
from inference.estimators.ppi import robust_ppi

ALPHA = 0.05
SHARED = 0.6  # correlation of the two judges' noises in the ``shared`` design
SHIFT = -0.5  # the biased cheap judge's threshold (coverage_grid's shifted judge)
COVERAGE_TARGET = 0.94
SAVING_TARGET = 0.30
GRID_LABELS = 3  # coverage_grid's population reads n only for its K-means clusters, unused here
JUDGE_NAMES = ("cheap", "strong")


@dataclass(frozen=True)
class Design:
    prevalence: float
    N: int
    errors: str = "independent"

    @property
    def label(self) -> str:
        return f"rate {self.prevalence:.0%}, N {self.N:,}, {self.errors}"


@dataclass(frozen=True)
class Setup:
    target: float
    pilot: int
    effect_answers: int
    accuracies: tuple[float, float]
    judge_costs: tuple[float, float]
    human_cost: float


def designs(*, quick: bool) -> list[Design]:
    if quick:
        return [
            Design(0.05, 2000),
            Design(0.5, 20000),
            Design(0.9, 20000),
            Design(0.5, 20000, "shared"),
        ]
    return [
        *(Design(p, N) for N in (2000, 20000) for p in (0.05, 0.5, 0.9)),
        Design(0.5, 20000, "shared"),
        Design(0.5, 20000, "biased"),
    ]


def verdicts(
    design: Design, *, truth: np.ndarray, accuracies: tuple[float, float], rng: np.random.Generator
) -> np.ndarray:
    """The two judges' 0/1 verdicts on every unit (N x 2: cheap, strong)."""
    N = truth.shape[0]
    own = rng.normal(size=(N, 2))
    if design.errors == "shared":
        common = rng.normal(size=N)[:, None]
        noise = math.sqrt(SHARED) * common + math.sqrt(1 - SHARED) * own
    else:
        noise = own
    columns = []
    for k, accuracy in enumerate(accuracies):
        d = 2 * norm.ppf(accuracy)
        signal = (2 * truth - 1) * d / 2 + noise[:, k]
        threshold = SHIFT if design.errors == "biased" and k == 0 else 0.0
        columns.append((signal > threshold).astype(float))
    return np.stack(columns, axis=1)


def _covered(interval, target: float) -> tuple[bool, float]:
    return bool(interval.lo <= target <= interval.hi), float(interval.halfwidth)


def replicate(design: Design, setup: Setup, *, seed: int, base_seed: int) -> dict:
    """One replication: the pilot, the plan, and both designs drawn and estimated."""
    pop = grid.population(design.N, GRID_LABELS, 1, base_seed)
    beta = grid.intercept(design.prevalence, design.N, GRID_LABELS, 1, base_seed)
    rng = np.random.default_rng(seed)
    answers, N, A = pop["answers"], design.N, pop["n_answers"]
    u = grid.RANDOM_SD * rng.normal(size=A)[answers]
    truth = (rng.random(N) < expit(beta + pop["fixed"] + u)).astype(float)
    f = verdicts(design, truth=truth, accuracies=setup.accuracies, rng=rng)
    target = float(truth.mean())

    order = rng.permutation(N)
    pilot = order[: setup.pilot]
    rest = order[setup.pilot :]
    # Both judges run on the pilot's units and on every unit of the first of its answers.
    whole = np.isin(answers, list(dict.fromkeys(answers[pilot].tolist()))[: setup.effect_answers])
    effects = [cluster_design_effect(values=f[whole, k], clusters=answers[whole]) for k in range(2)]
    piloted = whole.copy()
    piloted[pilot] = True
    plan = plan_theme(
        m=moments(y=truth[pilot], preds=f[pilot]),
        size=N,
        target=setup.target,
        human_cost=setup.human_cost,
        judge_costs=list(setup.judge_costs),
        alpha=ALPHA,
        labeled=setup.pilot,
        judged=[int(piloted.sum())] * 2,
        design_effects=effects,
    )
    out: dict = {"human_only_cost": setup.human_cost * plan.human_only.labels}

    # (a) The best single judge on every unit, the report's PPI++.
    single = plan.single
    assert single is not None
    k = int(np.argmax(single.shares))
    labeled = np.zeros(N, dtype=bool)
    labeled[pilot] = True
    labeled[rng.permutation(rest)[: max(0, single.labels - setup.pilot)]] = True
    interval = robust_ppi(
        y=truth[labeled],
        yhat=f[labeled, k],
        yhat_unlabeled=f[~labeled, k],
        alpha=ALPHA,
        clusters=answers[labeled],
    )
    out["single"] = (
        *_covered(interval, target),
        setup.human_cost * int(labeled.sum()) + setup.judge_costs[k] * N,
    )
    out["single_judge"] = JUDGE_NAMES[k]
    out["single_labels"] = int(labeled.sum())

    # (b) The planner's combination.
    best = plan.best
    labeled = np.zeros(N, dtype=bool)
    labeled[pilot] = True
    labeled[rng.permutation(rest)[: max(0, best.labels - setup.pilot)]] = True
    used = [k for k, share in enumerate(best.shares) if share > 0]
    terms: list[JudgeTerm] = []
    judged_by: list[np.ndarray] = []
    inclusion: list[float] = []
    for k in used:
        share = best.shares[k]
        if share >= 1:
            terms.append(JudgeTerm(values=f[:, k]))
            judged_by.append(np.ones(N, dtype=bool))
            inclusion.append(1.0)
            continue
        drawn = (rng.random(A) < share)[answers]
        terms.append(
            JudgeTerm(
                values=f[drawn, k],
                weights=np.full(int(drawn.sum()), 1 / share),
                clusters=answers[drawn],
                draw=f"share-{k}",
            )
        )
        judged_by.append(drawn)
        inclusion.append(share)
    cost = setup.human_cost * int(labeled.sum())
    for k, drawn in zip(used, judged_by, strict=True):
        cost += setup.judge_costs[k] * int(np.sum(drawn | labeled | piloted))
    pool = ~labeled
    for drawn in judged_by:
        pool &= drawn
    if not used:
        # The planner's cheapest design is human labels alone: the report's human-only estimate.
        interval = classical_mean(y=truth[labeled], alpha=ALPHA, clusters=answers[labeled], population=N)
        out["combined"] = (*_covered(interval, target), cost)
        out["shares"] = best.shares
        out["labels"] = int(labeled.sum())
        return out
    combination = multi_ppi(
        y=truth[labeled],
        preds=f[labeled][:, used],
        terms=terms,
        alpha=ALPHA,
        population=N,
        clusters=answers[labeled],
        pool=f[pool][:, used],
        pool_weights=(
            np.full(int(pool.sum()), 1 / float(np.prod(inclusion))) if any(q < 1 for q in inclusion) else None
        ),
    )
    out["combined"] = (*_covered(combination.interval, target), cost)
    out["shares"] = best.shares
    out["labels"] = int(labeled.sum())
    return out


def run_design(args: tuple[Design, Setup, int, int]) -> tuple[Design, dict]:
    design, setup, reps, seed = args
    key = [int(design.prevalence * 1e4), design.N, *design.errors.encode()]
    children = np.random.SeedSequence([seed, *key]).generate_state(reps, dtype=np.uint64).tolist()
    rows = [replicate(design, setup, seed=s, base_seed=seed) for s in children]
    summary: dict = {"reps": reps}
    for method in ("single", "combined"):
        covered = np.array([r[method][0] for r in rows], dtype=float)
        half = np.array([r[method][1] for r in rows])
        summary[method] = {
            "coverage": float(covered.mean()),
            "halfwidth": float(np.mean(half[np.isfinite(half)])) if np.isfinite(half).any() else math.nan,
            "reached": float(np.mean(half <= setup.target + 1e-12)),
            "cost": float(np.mean([r[method][2] for r in rows])),
        }
    summary["human_only_cost"] = float(np.mean([r["human_only_cost"] for r in rows]))
    shares = np.array([r["shares"] for r in rows])
    run = shares > 0
    summary["run"] = tuple(float(value) for value in run.mean(axis=0))
    summary["shares"] = tuple(
        float(shares[run[:, k], k].mean()) if run[:, k].any() else 0.0 for k in range(len(JUDGE_NAMES))
    )
    summary["labels"] = float(np.median([r["labels"] for r in rows]))
    summary["labels_mean"] = float(np.mean([r["labels"] for r in rows]))
    judges = Counter(r["single_judge"] for r in rows)
    summary["single_judge"], found = judges.most_common(1)[0]
    summary["single_judge_share"] = found / reps
    summary["single_labels"] = float(np.median([r["single_labels"] for r in rows]))
    return design, summary


def describe(shares: tuple[float, ...], run: tuple[float, ...]) -> str:
    """Each judge's mean share when run, and [how often the planner ran it]."""
    parts = [
        f"{name} {share:.0%} [{often:.0%}]"
        for name, share, often in zip(JUDGE_NAMES, shares, run, strict=True)
        if often > 0
    ]
    return ", ".join(parts) if parts else "humans only"


def saving_at_width(a: dict, b: dict, *, labels: float, human_cost: float) -> float:
    """The saving had (b) drawn the labels that bring its mean half-width to (a)'s: its labels
    scaled by (half b / half a)^2, the judges' cost unchanged (an approximation: labels go as
    1 / half-width^2 without the finite-population correction)."""
    if not (a["halfwidth"] > 0 and math.isfinite(b["halfwidth"])) or a["cost"] <= 0:
        return math.nan
    extra = human_cost * labels * ((b["halfwidth"] / a["halfwidth"]) ** 2 - 1)
    return 1 - (b["cost"] + extra) / a["cost"]


def beyond_noise(coverage: float, reps: int) -> bool:
    return coverage < COVERAGE_TARGET and coverage < 0.95 - 2 * math.sqrt(0.95 * 0.05 / reps)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int)
    parser.add_argument("--seed", type=int, default=20261205)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--target", type=float, default=0.03, help="target half-width")
    parser.add_argument("--pilot", type=int, default=50, help="pilot labels, both judges run on them")
    parser.add_argument(
        "--effect-answers", type=int, default=20, help="pilot answers judged whole, for the design effects"
    )
    parser.add_argument("--cheap-accuracy", type=float, default=0.8)
    parser.add_argument("--strong-accuracy", type=float, default=0.95)
    parser.add_argument("--cheap-cost", type=float, default=0.001, help="per unit judged")
    parser.add_argument("--strong-cost", type=float, default=0.02, help="per unit judged")
    parser.add_argument("--human-minutes", type=float, default=0.5, help="minutes per human label")
    parser.add_argument("--rate", type=float, default=2.0, help="cost of a minute of human labeling")
    args = parser.parse_args()
    reps = args.reps or (100 if args.quick else 500)
    setup = Setup(
        target=args.target,
        pilot=args.pilot,
        effect_answers=args.effect_answers,
        accuracies=(args.cheap_accuracy, args.strong_accuracy),
        judge_costs=(args.cheap_cost, args.strong_cost),
        human_cost=args.human_minutes * args.rate,
    )
    chosen = designs(quick=args.quick)
    started = time.perf_counter()
    tasks = [(design, setup, reps, args.seed) for design in chosen]
    if args.workers > 1:
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            results = dict(pool.map(run_design, tasks))
    else:
        results = dict(map(run_design, tasks))
    print(
        f"{len(chosen)} designs x {reps} replications, seed {args.seed}, target +/-{args.target:.3f} "
        f"at {1 - ALPHA:.0%}, pilot {args.pilot} ({args.effect_answers} answers judged whole); "
        f"cheap judge {args.cheap_accuracy:.0%} at "
        f"{args.cheap_cost:g}/unit, strong {args.strong_accuracy:.0%} at {args.strong_cost:g}/unit, "
        f"human label {setup.human_cost:g}; {time.perf_counter() - started:.0f} s"
    )
    print(
        f"{'design':<34} {'plan (b): judges, shares, labels':<42} {'(a) single judge':<22} "
        f"{'cost a':>8} {'cost b':>8} {'humans':>8} {'saving':>8} {'at a':>5}  "
        f"{'cover a':>8} {'cover b':>9}  {'half a':>7} {'half b':>7}  {'reach a':>7} {'reach b':>7}"
    )
    short = []
    for design in chosen:
        s = results[design]
        a, b = s["single"], s["combined"]
        saving = 1 - b["cost"] / a["cost"] if a["cost"] > 0 else math.nan
        plan = f"{describe(s['shares'], s['run'])}, {s['labels']:.0f}"
        equal = saving_at_width(a, b, labels=s["labels_mean"], human_cost=setup.human_cost)
        single = f"{s['single_judge']} ({s['single_judge_share']:.0%}), {s['single_labels']:.0f}"
        marks = []
        for row in (a, b):
            far = beyond_noise(row["coverage"], reps)
            marks.append("<<" if far else ("< " if row["coverage"] < COVERAGE_TARGET else "  "))
        saving_mark = "<" if saving < SAVING_TARGET else " "
        if b["coverage"] < COVERAGE_TARGET or saving < SAVING_TARGET:
            short.append(design)
        print(
            f"{design.label:<34} {plan:<42} {single:<22} {a['cost']:>8.1f} {b['cost']:>8.1f} "
            f"{s['human_only_cost']:>8.1f} {saving:>7.0%}{saving_mark} {equal:>5.0%}  "
            f"{a['coverage']:>6.1%}{marks[0]} "
            f"{b['coverage']:>6.1%}{marks[1]} {a['halfwidth']:>7.4f} {b['halfwidth']:>7.4f}  "
            f"{a['reached']:>7.0%} {b['reached']:>7.0%}"
        )
    print(
        "\nplan (b): each judge's mean share when the planner ran it [how often it ran it], the median "
        "labels in all; (a): the judge the planner put on every unit (how often) and the median labels. "
        "Costs: the mean spent, pilot included; humans: labels alone, the planner's projection; at a: "
        "the saving had (b) drawn the labels that bring its mean half-width to (a)'s (labels scaled by "
        "the squared ratio of the half-widths, an approximation). cover: "
        "coverage of the 95% interval; half: mean half-width; reach: replications whose half-width "
        "reached the target. < under 94% coverage or 30% saving; << under 95% coverage by more "
        "than two binomial standard errors."
    )
    if short:
        print("Short of a goal (coverage 94% or saving 30%): " + "; ".join(d.label for d in short))
    return 0


if __name__ == "__main__":
    sys.exit(main())
