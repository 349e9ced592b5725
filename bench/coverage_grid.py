"""Coverage of every design and estimator on a grid that includes the designs that hurt.

    python bench/coverage_grid.py [--quick] [--reps 1000] [--anytime-reps 400] [--seed 20261128]
        [--workers 2] [--only kmeans,confidence,...] [--csv FILE]

No database. One cell is one theme of N sentences (answers of 6 to 14 sentences; with repeated
questions, 20 answers per question) judged on every unit, and a human budget of n labels. The
full grid: prevalence {0.02, 0.05, 0.2, 0.5, 0.8, 0.95, 0.98} x judge accuracy {0.6, 0.75, 0.9,
0.97} x judge {calibrated, overconfident, underconfident, shifted, anti-correlated} x n {12, 20,
60, 300} at N = 5,000; then N in {500, 50,000} for the calibrated and overconfident judges at
accuracy 0.9; then repeated questions at N = 5,000. ``--quick`` runs a smaller grid (prevalence
{0.05, 0.5, 0.95}, accuracy {0.75, 0.9}, calibrated and overconfident judges, n {20, 60}).

Per replication, what varies: the truth, the judge and the samples.

- **Truth.** Sentence i of answer a (question q) is 1 with probability p_i = sigmoid(beta +
  u_a + v_q): u_a an answer effect, part read from the answer's embedding (so K-means clusters
  differ in rate) and part redrawn (so an answer's sentences are correlated), v_q a question
  effect (repeated questions only), beta set so that the mean of p is the cell's prevalence. The
  target is the realised rate of the N sentences (a finite-population mean: this campaign's
  answers); with repeated questions, also the rate of the assistant asked these questions again
  (``runs``: the mean of E[y | v_q], the answers and their sentences drawn anew).
- **Judge.** A signal s_i = (2 y_i - 1) d / 2 + N(0, 1) with d = 2 Phi^-1(accuracy): its verdict
  1[s > 0] is right with probability ``accuracy`` on 1s and on 0s alike. Its confidence, per
  judge: calibrated sigmoid(logit p_i + d s_i) (the exact probability of a 1 given what it saw);
  overconfident sigmoid(3 x that logit); underconfident sigmoid(that logit / 3); shifted
  sigmoid(that logit + 1.5) with the verdict 1[s > -0.5] (it says 1 too often);
  anti-correlated 1 - the calibrated confidence, with the verdict reversed.

Designs and methods, each the app's own functions on the arrays the report would pass them:

- ``kmeans``: the app's stratified K-means sample (``draw_stratified`` computed once per
  population, n / 3 clusters, 3 units drawn at random per cluster in every replication):
  ``human-only`` (``classical_mean`` with design weights, answers as clusters and the
  finite-population correction), ``PPI++`` (``robust_ppi``, the report's default: the judge's
  term over every unit, the correction) and ``study PPI++`` (``study_ppi``, ppi_py, for
  reference: the study's method, no target). With repeated questions, ``PPI++ q`` is the
  report's option ``clusters=question`` (``robust_ppi(finite=False)`` with questions as clusters)
  against the ``runs`` target, and ``PPI++ a/runs`` the default against that target (the wrong
  choice, shown to say why the option exists).
- ``confidence``: what the app requires before a judge chooses who labels what: a pilot, here
  the K-means sample of 30 labels (10 clusters of 3); the judge's confidence recalibrated on it
  (``inference.reliability.calibration.fit_platt``); a Poisson sample of n expected labels with
  probabilities proportional to sqrt(c (1 - c)) of the recalibrated c, floor ``DEFAULT_FLOOR``;
  the pilot's and the sample's labels pooled with their union probabilities (the K-means
  probability of a unit it did not draw: its rate drawn / N, as the app's
  ``evaluation/estimates/weights.py``); ``weighted_ppi`` on the confidence recalibrated again on
  every label, cross-fitted (``inference.reliability.calibration.crossfit``). Labels: 30 + n;
- ``split``: the same pilot, the budget split by the judge's verdict (``verdict_strata`` from
  the pilot, ``split_budget``), the recalibrated confidence design within each stratum, pooled
  and estimated as ``confidence``;
- ``mixed``: a K-means sample of n (the pilot, when n >= 20: the app's least), then a
  confidence top-up of n / 2 recalibrated on it, pooled and estimated as ``confidence``;
- ``anytime``: the same 30-label pilot recalibrates the confidence and guesses the variance
  (``evaluation.designs.anytime.variance_guess``); draws with replacement from the confidence
  design, a look every 10 draws, the betting confidence sequence of ``anytime_ppi``, planned
  draws for a target half-width of 0.03; stops at the first look that reaches it, at most 6
  times the planned draws (and 3,000). Coverage over all looks at once, and at stopping;
  ``--anytime-reps`` replications per cell.

Prints, per cell and method, coverage of the 95% interval, mean half-width and mean labels;
marks every cell under 0.94 (0.95 over all looks for the anytime mode) with ``<<``, and with
``!`` those below it by more than two binomial standard errors of 0.95 (beyond simulation
error). Then the worst cell of each method, the cells under target, the intervals that were ever
inverted or out of [0, 1] (none may be), and the width of the default methods against today's
rule in the middle of the range. ``--csv`` writes every row.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from scipy.stats import norm  # noqa: E402

from annotation.sampling.design import draw_stratified  # noqa: E402
from evaluation.designs.anytime import variance_guess  # noqa: E402
from inference.designs.allocation import OVERALL, split_budget, verdict_strata  # noqa: E402
from inference.designs.inclusion import (  # noqa: E402
    DEFAULT_FLOOR,
    confidence_probabilities,
    proportional_probabilities,
    spread,
    union_inclusion_probabilities,
)
from inference.estimators.means import classical_mean  # noqa: E402
from inference.estimators.ppi import robust_ppi, study_ppi  # noqa: E402
from inference.estimators.sequential import anytime_ppi, planned_draws  # noqa: E402
from inference.estimators.weighted_ppi import weighted_ppi  # noqa: E402
from inference.reliability.calibration import crossfit, fit_platt, histogram  # noqa: E402

ALPHA = 0.05
PER_CLUSTER = 3
PILOT_CLUSTERS = 10  # the judge-driven designs' pilot: 30 labels
MIN_PILOT = 20  # the app's least pilot (inference.reliability.calibration.MIN_LABELS)
DIMENSIONS = 16
FIXED_SD = 0.8  # answer effect read from the embedding
RANDOM_SD = 0.6  # answer effect redrawn in every replication
QUESTION_SD = 0.8  # question effect (repeated questions)
REPEATS = 20  # answers per question when questions repeat
SHIFT = 1.5
BATCH = 10
ANYTIME_TARGET = 0.03
ANYTIME_CAP = 6
ANYTIME_MAX_DRAWS = 3000
ANYTIME_GRID = 401
ANYTIME_AT = 20
COVERAGE_TARGET = 0.94
ANYTIME_COVERAGE_TARGET = 0.95
HERMITE = np.polynomial.hermite.hermgauss(24)

PREVALENCES = (0.02, 0.05, 0.2, 0.5, 0.8, 0.95, 0.98)
ACCURACIES = (0.6, 0.75, 0.9, 0.97)
JUDGES = ("calibrated", "overconfident", "underconfident", "shifted", "anti-correlated")
LABELS = (12, 20, 60, 300)
SIZES = (500, 5000, 50000)
DESIGNS = ("kmeans", "confidence", "split", "mixed", "anytime")
# Methods per design, and those the coverage target does not apply to (the study's method, and
# the default against a target it does not claim: shown to say why the option exists).
METHODS = {
    "kmeans": ("human-only", "PPI++", "study PPI++", "PPI++ q", "PPI++ a/runs"),
    "confidence": ("confidence",),
    "split": ("split",),
    "mixed": ("mixed",),
    "anytime": ("anytime looks", "anytime stop"),
}
NO_TARGET = ("study PPI++", "PPI++ a/runs")


@dataclass(frozen=True)
class Cell:
    prevalence: float
    accuracy: float
    judge: str
    n: int
    N: int
    repeats: int = 1

    @property
    def label(self) -> str:
        questions = f" q x{self.repeats}" if self.repeats > 1 else ""
        return (
            f"p={self.prevalence:<4} acc={self.accuracy:<4} {self.judge:<15} n={self.n:<3} "
            f"N={self.N:<5}{questions}"
        )


def grid(*, quick: bool) -> list[Cell]:
    """The cells, in printing order."""
    if quick:
        return [
            Cell(p, a, j, n, 5000)
            for p, a, j, n in itertools.product((0.05, 0.5, 0.95), (0.75, 0.9), JUDGES[:2], (20, 60))
        ]
    cells = [
        Cell(p, a, j, n, 5000) for p, a, j, n in itertools.product(PREVALENCES, ACCURACIES, JUDGES, LABELS)
    ]
    cells += [
        Cell(p, 0.9, j, n, N)
        for N, p, j, n in itertools.product((500, 50000), PREVALENCES, JUDGES[:2], LABELS)
        if n < N
    ]
    cells += [
        Cell(p, 0.9, j, n, 5000, REPEATS) for p, j, n in itertools.product(PREVALENCES, JUDGES[:2], LABELS)
    ]
    return cells


def _clusters(*, embeddings: np.ndarray, k: int, seed: int) -> list[np.ndarray]:
    N = embeddings.shape[0]
    draws = draw_stratified(
        unit_ids=list(range(N)),
        themes=["theme"] * N,
        embeddings=embeddings,
        k_per_theme={"theme": k},
        per_cluster=N,
        seed=seed,
    )
    members: dict[int, list[int]] = {}
    for draw in draws:
        members.setdefault(draw.cluster, []).append(draw.unit_id)
    return [np.asarray(sorted(ids)) for _, ids in sorted(members.items())]


@lru_cache(maxsize=8)
def population(N: int, n: int, repeats: int, seed: int) -> dict:
    """The fixed part of a cell: answers and questions of the N sentences, the embedding-read
    answer effects and the K-means clusters of the app's sampler (n / 3 clusters for the
    design's sample, 10 for the pilot)."""
    rng = np.random.default_rng([seed, N, n, repeats])
    direction = rng.normal(size=DIMENSIONS)
    direction /= np.linalg.norm(direction)
    answer_of, question_of, vectors, score = [], [], [], []
    total = answer = 0
    question_centre = rng.normal(size=DIMENSIONS)
    while total < N:
        if answer % repeats == 0:
            question_centre = rng.normal(size=DIMENSIONS)
        centre = question_centre + (0.5 * rng.normal(size=DIMENSIONS) if repeats > 1 else 0)
        size = min(int(rng.integers(6, 15)), N - total)
        vectors.append(centre + 0.35 * rng.normal(size=(size, DIMENSIONS)))
        score.append(float(centre @ direction) / (math.sqrt(1.25) if repeats > 1 else 1))
        answer_of.extend([answer] * size)
        question_of.extend([answer // repeats] * size)
        total += size
        answer += 1
    embeddings = np.vstack(vectors)
    answers = np.asarray(answer_of)
    return {
        "answers": answers,
        "questions": np.asarray(question_of),
        "fixed": FIXED_SD * np.asarray(score)[answers],
        "n_answers": answer,
        "clusters": _clusters(embeddings=embeddings, k=max(1, n // PER_CLUSTER), seed=seed),
        "pilot_clusters": _clusters(embeddings=embeddings, k=PILOT_CLUSTERS, seed=seed + 1),
    }


@lru_cache(maxsize=64)
def intercept(prevalence: float, N: int, n: int, repeats: int, seed: int) -> float:
    """beta such that the mean of sigmoid(beta + u + v) over the random effects is the prevalence."""
    pop = population(N, n, repeats, seed)
    z = np.random.default_rng(0).normal(size=(8, N))
    question_sd = QUESTION_SD if repeats > 1 else 0.0
    noise = math.sqrt(RANDOM_SD**2 + question_sd**2) * z
    lo, hi = -20.0, 20.0
    for _ in range(50):
        mid = (lo + hi) / 2
        value = float(np.mean(expit(mid + pop["fixed"] + noise)))
        lo, hi = (mid, hi) if value < prevalence else (lo, mid)
    return (lo + hi) / 2


def judge(cell: Cell, *, truth: np.ndarray, log_odds: np.ndarray, rng: np.random.Generator):
    """(verdicts, confidences) of the cell's judge on every unit."""
    d = 2 * norm.ppf(cell.accuracy)
    signal = (2 * truth - 1) * d / 2 + rng.normal(size=truth.shape[0])
    posterior = log_odds + d * signal
    verdict = (signal > 0).astype(float)
    if cell.judge == "calibrated":
        confidence = expit(posterior)
    elif cell.judge == "overconfident":
        confidence = expit(3 * posterior)
    elif cell.judge == "underconfident":
        confidence = expit(posterior / 3)
    elif cell.judge == "shifted":
        confidence = expit(posterior + SHIFT)
        verdict = (signal > -0.5).astype(float)
    elif cell.judge == "anti-correlated":
        confidence = 1 - expit(posterior)
        verdict = 1 - verdict
    else:
        raise ValueError(cell.judge)
    return verdict, confidence


def _kmeans_sample(rng: np.random.Generator, clusters: list[np.ndarray], per_cluster: int, N: int):
    """The units a K-means sample drew, their weights, and every unit's probability as the app
    knows it: m / N_c for the units it drew (their clusters are recorded), its rate drawn / N for
    the others (``evaluation/estimates/weights.py``)."""
    rows, weights = [], []
    for members in clusters:
        chosen = rng.permutation(members)[:per_cluster]
        rows.extend(chosen.tolist())
        weights.extend([len(members) / len(chosen)] * len(chosen))
    drawn = np.asarray(rows, dtype=int)
    known = np.full(N, drawn.size / N)
    known[drawn] = 1 / np.asarray(weights)
    return drawn, np.asarray(weights), known


def _row(interval, target: float, labels: float) -> tuple[bool, float, float, bool]:
    """(covered, half-width, labels, broken): broken when the interval as shown is inverted,
    leaves [0, 1] or misses its own estimate (the study method keeps ppi_py's raw bounds and is
    shown clipped)."""
    shown = (interval.shown_lo, interval.shown_mean, interval.shown_hi)
    broken = math.isfinite(interval.halfwidth) and not (0 <= shown[0] <= shown[1] <= shown[2] <= 1)
    return bool(interval.lo <= target <= interval.hi), float(interval.halfwidth), float(labels), broken


def _pooled_estimate(*, labeled: np.ndarray, pi: np.ndarray, truth, confidence, answers):
    """The report's estimate of a theme that a judge-driven sample fed: the judge's confidence
    recalibrated on every label, cross-fitted by answers, and inverse-probability PPI++."""
    fit = crossfit(confidence=confidence[labeled], labels=truth[labeled], clusters=answers[labeled])
    values, counts = histogram(confidence)
    return weighted_ppi(
        y=truth[labeled],
        confidence=fit.labeled,
        pi=pi[labeled],
        confidence_all=confidence,
        judge_mean=fit.mean_of(values, counts, weights=1 / pi[labeled]),
        alpha=ALPHA,
    )


def _runs_target(*, base: np.ndarray) -> float:
    """The rate of the assistant asked these questions again: the mean over units of
    E[sigmoid(base + u)] with the answer effect u ~ N(0, RANDOM_SD^2) drawn anew."""
    nodes, weights = HERMITE
    values = expit(base[:, None] + math.sqrt(2) * RANDOM_SD * nodes[None, :]) @ weights / math.sqrt(math.pi)
    return float(values.mean())


def replicate(cell: Cell, *, seed: int, base_seed: int, designs: tuple[str, ...]) -> dict:
    """One replication of a cell: {method: (covered, half-width, labels, broken)}."""
    pop = population(cell.N, cell.n, cell.repeats, base_seed)
    rng = np.random.default_rng(seed)
    beta = intercept(cell.prevalence, cell.N, cell.n, cell.repeats, base_seed)
    answers, questions, N = pop["answers"], pop["questions"], cell.N
    u = RANDOM_SD * rng.normal(size=pop["n_answers"])[answers]
    v = 0.0
    if cell.repeats > 1:
        v = QUESTION_SD * rng.normal(size=int(questions.max()) + 1)[questions]
    log_odds = beta + pop["fixed"] + u + v
    truth = (rng.random(N) < expit(log_odds)).astype(float)
    verdict, confidence = judge(cell, truth=truth, log_odds=log_odds, rng=rng)
    target = float(truth.mean())
    out: dict = {}

    rows, w, kmeans_known = _kmeans_sample(rng, pop["clusters"], PER_CLUSTER, N)
    labeled = np.zeros(N, dtype=bool)
    labeled[rows] = True
    if "kmeans" in designs:
        y = truth[rows]
        out["human-only"] = _row(
            classical_mean(y=y, alpha=ALPHA, w=w, clusters=answers[rows], population=N), target, rows.size
        )
        ppi = robust_ppi(
            y=y,
            yhat=verdict[rows],
            yhat_unlabeled=verdict[~labeled],
            alpha=ALPHA,
            w=w,
            clusters=answers[rows],
        )
        out["PPI++"] = _row(ppi, target, rows.size)
        study = study_ppi(y=y, yhat=verdict[rows], yhat_unlabeled=verdict[~labeled], alpha=ALPHA)
        out["study PPI++"] = _row(study, target, rows.size)
        if cell.repeats > 1:
            runs = _runs_target(base=beta + pop["fixed"] + v)
            by_question = robust_ppi(
                y=y,
                yhat=verdict[rows],
                yhat_unlabeled=verdict[~labeled],
                alpha=ALPHA,
                w=w,
                clusters=questions[rows],
                unlabeled_clusters=questions[~labeled],
                finite=False,
            )
            out["PPI++ q"] = _row(by_question, runs, rows.size)
            out["PPI++ a/runs"] = _row(ppi, runs, rows.size)

    pilot = pilot_known = None
    if any(design in designs for design in ("confidence", "split", "anytime")):
        pilot, _, pilot_known = _kmeans_sample(rng, pop["pilot_clusters"], PER_CLUSTER, N)
    design_map = fit_platt(confidence=confidence[pilot], labels=truth[pilot]) if pilot is not None else None

    if "confidence" in designs:
        c = design_map.apply(confidence)
        pi = confidence_probabilities(confidence=c, budget=min(cell.n, N), floor=DEFAULT_FLOOR)
        drawn = rng.random(N) < pi
        union = union_inclusion_probabilities(probabilities=[pilot_known, pi])
        labeled_all = drawn.copy()
        labeled_all[pilot] = True
        interval = _pooled_estimate(
            labeled=labeled_all, pi=union, truth=truth, confidence=confidence, answers=answers
        )
        out["confidence"] = _row(interval, target, labeled_all.sum())

    if "split" in designs:
        c = design_map.apply(confidence)
        judged = {key: int(np.sum(verdict == value)) for key, value in (("1", 1.0), ("0", 0.0))}
        pilot_counts = {
            key: (
                int(np.sum(truth[pilot][verdict[pilot] == value] != value)),
                int(np.sum(verdict[pilot] == value)),
            )
            for key, value in (("1", 1.0), ("0", 0.0))
        }
        strata = verdict_strata(theme="theme", judged=judged, pilot=pilot_counts, alpha=ALPHA)
        minimum = min(2, cell.n // max(1, len(strata)))
        split = split_budget(strata=strata, budget=cell.n, objective=OVERALL, alpha=ALPHA, minimum=minimum)
        pi = np.zeros(N)
        for stratum in strata:
            value = 1.0 if stratum.key.endswith("1") else 0.0
            inside = verdict == value
            budget = min(split.labels[(stratum.theme, stratum.key)], int(inside.sum()))
            if budget > 0:
                pi[inside] = confidence_probabilities(
                    confidence=c[inside], budget=budget, floor=DEFAULT_FLOOR
                )
        drawn = rng.random(N) < pi
        union = union_inclusion_probabilities(probabilities=[pilot_known, pi])
        labeled_all = drawn.copy()
        labeled_all[pilot] = True
        interval = _pooled_estimate(
            labeled=labeled_all, pi=union, truth=truth, confidence=confidence, answers=answers
        )
        out["split"] = _row(interval, target, labeled_all.sum())

    if "mixed" in designs and rows.size >= MIN_PILOT:
        c = fit_platt(confidence=confidence[rows], labels=truth[rows]).apply(confidence)
        top_up = confidence_probabilities(
            confidence=c, budget=min(max(1, cell.n // 2), N), floor=DEFAULT_FLOOR
        )
        second = rng.random(N) < top_up
        union = union_inclusion_probabilities(probabilities=[kmeans_known, top_up])
        labeled_all = labeled | second
        interval = _pooled_estimate(
            labeled=labeled_all, pi=union, truth=truth, confidence=confidence, answers=answers
        )
        out["mixed"] = _row(interval, target, labeled_all.sum())

    if "anytime" in designs:
        c = design_map.apply(confidence)
        q = proportional_probabilities(scores=spread(confidence=c), budget=1.0, floor=DEFAULT_FLOOR)
        guess = variance_guess(
            confidence=c,
            q=q,
            pilot=list(zip(c[pilot].tolist(), truth[pilot].astype(int).tolist(), strict=True)),
        )
        planned = planned_draws(target_halfwidth=ANYTIME_TARGET, variance_guess=guess, alpha=ALPHA)
        cap = min(ANYTIME_CAP * planned, ANYTIME_MAX_DRAWS)
        units = rng.choice(N, size=cap, p=q)
        looks = anytime_ppi(
            units=units,
            y=truth[units],
            q=q,
            confidence_all=c,
            batch=BATCH,
            alpha=ALPHA,
            planned=planned,
            variance_guess=guess,
            grid=ANYTIME_GRID,
        )
        every = all(look.lo <= target <= look.hi for look in looks)
        broken = any(not (0 <= look.lo <= look.mean <= look.hi <= 1) for look in looks)
        stop = next((look for look in looks if look.halfwidth <= ANYTIME_TARGET), looks[-1])
        labels = float(stop.labels + pilot.size)
        out["anytime looks"] = (every, math.nan, labels, broken)
        out["anytime stop"] = (bool(stop.lo <= target <= stop.hi), float(stop.halfwidth), labels, broken)
    return out


def run_cell(args: tuple[Cell, int, int, int, tuple[str, ...]]) -> tuple[Cell, dict]:
    cell, reps, anytime_reps, seed, designs = args
    # Every cell its own replications (the judge's name too: cells that differ only by the
    # judge's confidence are independent measurements, not copies).
    key = [int(cell.prevalence * 1e4), int(cell.accuracy * 1e4), cell.n, cell.N, cell.repeats]
    key += list(cell.judge.encode())
    seeds = np.random.SeedSequence([seed, *key])
    children = seeds.generate_state(reps, dtype=np.uint64).tolist()
    others = tuple(d for d in designs if d != "anytime")
    rows = [replicate(cell, seed=s, base_seed=seed, designs=others) for s in children] if others else []
    timed = []
    # The anytime mode does not read n (its pilot and its target are fixed): one run per cell of
    # the other parameters, shown on its cells of n = 20.
    if "anytime" in designs and cell.n == ANYTIME_AT:
        timed = [
            replicate(cell, seed=s, base_seed=seed, designs=("anytime",)) for s in children[:anytime_reps]
        ]
    summary = {}
    for source in (rows, timed):
        if not source:
            continue
        for method in source[0]:
            found = [r[method] for r in source if method in r]
            covered = np.array([f[0] for f in found], dtype=float)
            half = np.array([f[1] for f in found])
            finite = half[np.isfinite(half)]
            summary[method] = {
                "reps": len(found),
                "coverage": float(covered.mean()),
                "halfwidth": float(finite.mean()) if finite.size else math.nan,
                "labels": float(np.mean([f[2] for f in found])),
                "infinite": int(np.sum(np.isinf(half))),
                "broken": int(sum(f[3] for f in found)),
            }
    return cell, summary


def target_for(method: str) -> float | None:
    if method in NO_TARGET:
        return None
    return ANYTIME_COVERAGE_TARGET if method == "anytime looks" else COVERAGE_TARGET


def beyond_noise(coverage: float, reps: int, goal: float) -> bool:
    """Below the goal by more than two binomial standard errors of the nominal 0.95 (or the
    goal itself, when higher)."""
    nominal = max(goal, 0.95)
    return coverage < goal and coverage < nominal - 2 * math.sqrt(nominal * (1 - nominal) / reps)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int)
    parser.add_argument("--anytime-reps", type=int)
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", default=",".join(DESIGNS), help="designs to run, comma-separated")
    parser.add_argument("--csv", type=Path)
    args = parser.parse_args()
    designs = tuple(d for d in args.only.split(",") if d)
    unknown = set(designs) - set(DESIGNS)
    if unknown:
        parser.error(f"unknown designs: {', '.join(sorted(unknown))}")
    reps = args.reps or (200 if args.quick else 1000)
    anytime_reps = min(reps, args.anytime_reps or (100 if args.quick else 400))
    cells = grid(quick=args.quick)
    # Cells of one population next to each other: each worker builds K-means once per population.
    order = sorted(cells, key=lambda c: (c.N, c.n, c.repeats))
    started = time.perf_counter()
    tasks = [(cell, reps, anytime_reps, args.seed, designs) for cell in order]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        results = dict(pool.map(run_cell, tasks, chunksize=max(1, len(tasks) // (4 * args.workers))))
    print(
        f"{len(cells)} cells x {reps} replications ({anytime_reps} for the anytime mode), seed {args.seed}, "
        f"alpha {ALPHA}, designs {', '.join(designs)}, {time.perf_counter() - started:.0f} s"
    )
    methods = [m for d in designs for m in METHODS[d]]
    header = "  ".join(f"{m[:13]:>21}" for m in methods)
    print(f"{'cell':<62} {header}")
    print(f"{'':<62} " + "  ".join(f"{'cover  half  labels':>21}" for _ in methods))
    worst: dict[str, tuple[float, Cell]] = {}
    under: dict[str, int] = dict.fromkeys(methods, 0)
    significant: dict[str, int] = dict.fromkeys(methods, 0)
    counted: dict[str, int] = dict.fromkeys(methods, 0)
    broken = 0
    rows = []
    for cell in cells:
        summary = results[cell]
        parts = []
        for method in methods:
            row = summary.get(method)
            if row is None:
                parts.append(f"{'-':>21}")
                continue
            broken += row["broken"]
            goal = target_for(method)
            miss = goal is not None and row["coverage"] < goal
            far = goal is not None and beyond_noise(row["coverage"], row["reps"], goal)
            if goal is not None:
                counted[method] += 1
                under[method] += miss
                significant[method] += far
                if method not in worst or row["coverage"] < worst[method][0]:
                    worst[method] = (row["coverage"], cell)
            half = "  inf" if math.isnan(row["halfwidth"]) else f"{row['halfwidth']:.3f}"
            if method == "anytime looks":
                half = "  -  "
            mark = "<<" if far else ("< " if miss else "  ")
            parts.append(f"{row['coverage']:>6.1%}{mark}{half:>6} {row['labels']:>5.0f}")
            rows.append({**asdict(cell), "method": method, **row})
        print(f"{cell.label:<62} " + "  ".join(f"{p:>21}" for p in parts))
    print(
        "\n< under the target (94%; 95% over all looks for the anytime mode); << under it beyond "
        "simulation error (two binomial standard errors of 95%)."
    )
    print("Worst cell per method, and the cells under target (beyond simulation error):")
    for method in methods:
        if method in worst:
            coverage, cell = worst[method]
            print(
                f"  {method:<14} {coverage:6.1%}  {cell.label}   under target: "
                f"{under[method]}/{counted[method]} ({significant[method]} beyond noise)"
            )
    print(f"Intervals inverted, out of [0, 1] or missing their estimate: {broken}")
    if args.csv:
        with args.csv.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
