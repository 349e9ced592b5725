"""Fewer human labels for the same honest interval: coverage, width and labels needed per design.

    python bench/efficiency_bench.py [--quick] [--reps 1000] [--seed 20261124] [--workers 2]

No database. Each design is a synthetic campaign of four themes (1,200, 800, 500 and 300
sentences, about 10 per answer). Per sentence a latent score L = theme level + answer effect
(read from the answer's embedding, so K-means clusters differ) + sentence noise; the human label
is 1 with probability sigmoid(L + hidden answer effect) and the judge reports the confidence
sigmoid(k L): k = 1 is calibrated (when there is no hidden effect), k = 3 overconfident (same
verdicts, confidence pushed toward 0 and 1). The spread of L is set so that the judge's verdict
agrees with the human label the stated share of the time. The target is each theme's realised
rate (a finite-population mean); the truth, the judge and the samples are redrawn in every
replication.

Methods, per theme (today's budget per theme: 30 labels, K = 10 clusters of 3):

- ``human-only``: ``classical_mean`` with design weights and answers as clusters, K-means sample;
- ``robust PPI++``: today's ``robust_ppi`` on the K-means sample with the judge's 0/1 verdict;
- ``confidence``: the confidence-driven Poisson design (``inclusion.confidence_probabilities``,
  floor 0.2) with the same expected labels per theme, estimated by ``weighted_ppi`` on the
  judge's confidence;
- ``confidence+split``: the same, the total budget split across themes by
  ``allocation.split_budget`` (objective: the overall rate) from the judge's confidences alone;
- ``verdict split``: the confidence-driven design within each (theme, judge verdict) stratum,
  the total budget split across the strata by ``allocation.split_budget`` (objective: the overall
  rate, at least half the split's minimum per stratum), each stratum's spread from the pilot as
  ``evaluation.designs.budget_split`` reads it: the K-means sample of the same replication (today's
  labels) as the pilot, sqrt((sum (y - c)^2 + 4 mean c (1 - c)) / (n_pilot + 4)); the pilot's
  labels are not counted nor reused;
- ``verdicts only``: the same split for a judge that gives verdicts and no confidence: each
  stratum drawn uniformly (c = 1/2 for the design), its spread from the pilot's disagreements
  (sqrt((disagreements + 4/4) / (n_pilot + 4))), estimated by ``weighted_ppi`` on the verdict;
- ``anytime``: draws with replacement from the confidence design, a look every 10 draws, the
  confidence sequence of ``sequential.anytime_ppi``; stops the theme at the first look whose
  half-width reaches today's mean half-width; coverage is over all looks at once (up to 6 times
  today's budget);
- ``shrinkage``: ``shrinkage.shrink_to_judge`` on the confidence design's per-theme estimates,
  toward the judge's mean confidence;
- ``shrinkage K-means``: the same on today's per-theme robust PPI++ estimates (K-means sample,
  standard errors by ``intervals.standard_error``), toward the judge's rate of 1s over the theme:
  what the report's "small themes" option computes from the report it shows.

Printed per design and method: coverage of the 95% interval (over themes and replications; the
worst theme in brackets), the mean per-theme half-width, and the human labels needed to reach
today's half-width: for a fixed-size method sum_t n_t (h_t / h_today,t)^2 (a half-width shrinking
as 1 / sqrt(n)), for the anytime mode the mean labels at stopping. Overall (themes combined by
size, ``stratified_combine``): coverage, half-width and labels for today's overall half-width.
Then the planner check: ``planning.labels_needed`` from a 30-label pilot against the labels a
simulated campaign needs for the same study PPI++ half-width.

Last, each target and whether it is met: coverage at least 94% over the themes (95% over all
looks for the anytime mode), at least 25% fewer labels than today where the confidence is
calibrated and agreement is 85% or more, never more than 5% more than today for the new
designs, and the planner within 15%. Missed targets are printed as such.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from annotation.sampling.design import allocate_clusters, draw_stratified
from inference.designs.allocation import OVERALL, Stratum, split_budget
from inference.designs.inclusion import (
    DEFAULT_FLOOR,
    confidence_probabilities,
    proportional_probabilities,
    spread,
)
from inference.estimators.means import classical_mean
from inference.estimators.ppi import robust_ppi
from inference.estimators.sequential import anytime_ppi
from inference.estimators.shrinkage import shrink_to_judge
from inference.estimators.weighted_ppi import weighted_ppi
from inference.intervals import Interval, standard_error, stratified_combine

ALPHA = 0.05
THEMES = {"Finance": 120, "RH": 80, "IT": 50, "Juridique": 30}  # answers per theme
LEVEL = {"Finance": 1.0, "RH": 0.6, "IT": 0.2, "Juridique": 1.2}  # logit of the theme's level
LABELS = {"Finance": 30, "RH": 30, "IT": 30, "Juridique": 30}
SMALL_LABELS = {"Finance": 99, "RH": 48, "IT": 24, "Juridique": 12}
PER_CLUSTER = 3
DIMENSIONS = 16
FLOOR = DEFAULT_FLOOR
SPLIT_MINIMUM = 12  # labels per theme the split keeps, the smallest theme of these designs
BATCH = 10
ANYTIME_CAP = 6  # times today's budget
PLANNER_PILOT = 30
PLANNER_TARGET = 0.06
METHODS = (
    "human-only",
    "robust PPI++",
    "confidence",
    "confidence+split",
    "verdict split",
    "verdicts only",
    "anytime",
    "shrinkage",
    "shrinkage K-means",
)
# Methods with an overall (themes combined) figure, and the new designs the 5% limit applies to.
OVERALL_METHODS = tuple(m for m in METHODS if m not in ("anytime", "shrinkage", "shrinkage K-means"))
NEW_DESIGNS = ("confidence", "confidence+split", "verdict split", "verdicts only", "anytime")
PRIOR_LABELS = 4  # as evaluation.designs.budget_split: the judge's own spread weighs as 4 pilot labels
COVERAGE_TARGET = 0.94
ANYTIME_TARGET = 0.95
SAVING_TARGET = 0.25
EXCESS_LIMIT = 0.05
PLANNER_TOLERANCE = 0.15

# name: agreement of the verdict, k (1 calibrated, 3 overconfident), answer share of L's
# variance, sd of the hidden answer effect, labels per theme.
DESIGNS: dict[str, dict] = {
    "agree 70%, calibrated": {
        "agreement": 0.70,
        "k": 1.0,
        "answer_share": 0.3,
        "hidden": 0.0,
        "labels": LABELS,
    },
    "agree 85%, calibrated": {
        "agreement": 0.85,
        "k": 1.0,
        "answer_share": 0.3,
        "hidden": 0.0,
        "labels": LABELS,
    },
    "agree 95%, calibrated": {
        "agreement": 0.95,
        "k": 1.0,
        "answer_share": 0.3,
        "hidden": 0.0,
        "labels": LABELS,
    },
    "agree 85%, overconfident": {
        "agreement": 0.85,
        "k": 3.0,
        "answer_share": 0.3,
        "hidden": 0.0,
        "labels": LABELS,
    },
    "agree 95%, overconfident": {
        "agreement": 0.95,
        "k": 3.0,
        "answer_share": 0.3,
        "hidden": 0.0,
        "labels": LABELS,
    },
    "agree 85%, clustered": {
        "agreement": 0.85,
        "k": 1.0,
        "answer_share": 0.7,
        "hidden": 1.0,
        "labels": LABELS,
    },
    "agree 85%, themes of 12-99 labels": {
        "agreement": 0.85,
        "k": 1.0,
        "answer_share": 0.3,
        "hidden": 0.0,
        "labels": SMALL_LABELS,
    },
}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _scale_for(*, agreement: float, levels: np.ndarray, seed: int) -> float:
    """Standard deviation s of L around its theme level such that E[sigmoid(|L|)] (the verdict's
    agreement with a calibrated truth) equals ``agreement``."""
    z = np.random.default_rng(seed).normal(size=200_000)
    lo, hi = 0.0, 50.0
    for _ in range(60):
        mid = (lo + hi) / 2
        value = float(np.mean(_sigmoid(np.abs(levels[: z.size] + mid * z))))
        lo, hi = (mid, hi) if value < agreement else (lo, mid)
    return (lo + hi) / 2


def build_population(*, spec: dict, seed: int) -> dict:
    """The fixed part of a design: answers, sentences, embeddings, the K-means clusters of today's
    sample, the answer effects read from the embeddings, and the scale of L."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=DIMENSIONS)
    direction /= np.linalg.norm(direction)
    theme_of, answer_of, vectors, answer_score = [], [], [], []
    answer = 0
    for theme, n_answers in THEMES.items():
        for _ in range(n_answers):
            centre = rng.normal(size=DIMENSIONS)
            answer_score.append(float(centre @ direction))
            size = int(rng.integers(6, 15))
            vectors.append(centre + 0.35 * rng.normal(size=(size, DIMENSIONS)))
            theme_of.extend([theme] * size)
            answer_of.extend([answer] * size)
            answer += 1
    embeddings = np.vstack(vectors)
    themes = np.asarray(theme_of)
    answers = np.asarray(answer_of)
    sizes = {t: int(np.sum(themes == t)) for t in THEMES}
    k = allocate_clusters(
        theme_sizes=sizes,
        budget=sum(spec["labels"].values()),
        per_cluster=PER_CLUSTER,
        per_theme_budget=spec["labels"],
    )
    everything = draw_stratified(
        unit_ids=list(range(embeddings.shape[0])),
        themes=list(theme_of),
        embeddings=embeddings,
        k_per_theme=k,
        per_cluster=embeddings.shape[0],
        seed=seed,
    )
    members: dict[tuple[str, int], list[int]] = {}
    for draw in everything:
        members.setdefault((draw.theme, draw.cluster), []).append(draw.unit_id)
    clusters = {
        t: [np.asarray(sorted(ids)) for (th, _), ids in sorted(members.items()) if th == t] for t in THEMES
    }
    levels = np.array([LEVEL[t] for t in theme_of])
    scale = _scale_for(agreement=spec["agreement"], levels=np.resize(levels, 200_000), seed=seed)
    score = np.asarray(answer_score)
    return {
        "themes": themes,
        "answers": answers,
        "levels": levels,
        "answer_effect": math.sqrt(spec["answer_share"]) * scale * score[answers],
        "noise_sd": math.sqrt(1 - spec["answer_share"]) * scale,
        "n_answers": answer,
        "clusters": clusters,
        "sizes": sizes,
        "spec": spec,
    }


def _kmeans_sample(*, rng: np.random.Generator, clusters: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Today's sample in one theme: 3 units at random per cluster; rows and design weights."""
    rows, weights = [], []
    for members in clusters:
        chosen = rng.permutation(members)[:PER_CLUSTER]
        rows.extend(chosen.tolist())
        weights.extend([len(members) / len(chosen)] * len(chosen))
    return np.asarray(rows), np.asarray(weights)


def _covered(interval_lo: float, interval_hi: float, target: float) -> bool:
    return bool(interval_lo <= target <= interval_hi)


def replicate(*, population: dict, seed: int) -> dict:
    """One replication: per theme and method (covered, half-width, labels), overall per method
    (covered, half-width, labels), and the anytime mode's stopping labels and simultaneous
    coverage per theme."""
    rng = np.random.default_rng(seed)
    spec = population["spec"]
    themes, answers = population["themes"], population["answers"]
    latent = (
        population["levels"]
        + population["answer_effect"]
        + population["noise_sd"] * rng.normal(size=themes.shape[0])
    )
    hidden = spec["hidden"] * rng.normal(size=population["n_answers"])[answers]
    truth = (rng.random(themes.shape[0]) < _sigmoid(latent + hidden)).astype(float)
    confidence = _sigmoid(spec["k"] * latent)
    verdict = (confidence >= 0.5).astype(float)

    out: dict = {"themes": {}, "overall": {}, "agreement": float(np.mean(truth == verdict))}
    parts: dict[str, list[tuple[Interval, int]]] = {
        m: [] for m in ("human-only", "robust PPI++", "confidence")
    }
    conf_estimates: list[tuple[float, float, float]] = []
    kmeans_estimates: list[tuple[float, float, float]] = []
    rows_of = {t: np.flatnonzero(themes == t) for t in THEMES}
    # The split: one stratum per theme, spread the theme's mean sqrt(c (1 - c)).
    strata = [
        Stratum(theme=t, key="all", size=rows.size, spread=float(spread(confidence=confidence[rows]).mean()))
        for t, rows in rows_of.items()
    ]
    split = split_budget(
        strata=strata, budget=sum(spec["labels"].values()), objective=OVERALL, minimum=SPLIT_MINIMUM
    )
    split_parts: list[tuple[Interval, int]] = []
    kmeans = {
        t: _kmeans_sample(rng=rng, clusters=[np.searchsorted(rows, m) for m in population["clusters"][t]])
        for t, rows in rows_of.items()
    }
    # The verdict split: strata (theme, verdict), spreads from the K-means sample as the pilot;
    # with the confidence (``verdict split``) and without (``verdicts only``).
    verdict_strata, plain_strata = [], []
    for t, rows in rows_of.items():
        pilot = np.zeros(rows.size, dtype=bool)
        pilot[kmeans[t][0]] = True
        for v in (1.0, 0.0):
            inside = verdict[rows] == v
            if not inside.any():
                continue
            c_in = confidence[rows][inside]
            seen = inside & pilot
            residuals = float(np.sum((truth[rows][seen] - confidence[rows][seen]) ** 2))
            model = float(np.mean(c_in * (1 - c_in)))
            spread_v = math.sqrt((residuals + PRIOR_LABELS * model) / (int(seen.sum()) + PRIOR_LABELS))
            verdict_strata.append(Stratum(theme=t, key=str(int(v)), size=int(inside.sum()), spread=spread_v))
            wrong = float(np.sum((truth[rows][seen] - v) ** 2))
            plain_v = math.sqrt((wrong + PRIOR_LABELS * 0.25) / (int(seen.sum()) + PRIOR_LABELS))
            plain_strata.append(Stratum(theme=t, key=str(int(v)), size=int(inside.sum()), spread=plain_v))
    by_verdict = split_budget(
        strata=verdict_strata,
        budget=sum(spec["labels"].values()),
        objective=OVERALL,
        minimum=SPLIT_MINIMUM // 2,
    )
    by_plain = split_budget(
        strata=plain_strata,
        budget=sum(spec["labels"].values()),
        objective=OVERALL,
        minimum=SPLIT_MINIMUM // 2,
    )
    verdict_parts: list[tuple[Interval, int]] = []
    plain_parts: list[tuple[Interval, int]] = []
    for theme, rows in rows_of.items():
        target = float(truth[rows].mean())
        y_all, v_all, c_all = truth[rows], verdict[rows], confidence[rows]
        n_theme = spec["labels"][theme]
        res: dict = {}

        local, w = kmeans[theme]
        mask = np.zeros(rows.size, dtype=bool)
        mask[local] = True
        clusters = answers[rows][local]
        human = classical_mean(y=y_all[local], alpha=ALPHA, w=w, clusters=clusters)
        today = robust_ppi(
            y=y_all[local],
            yhat=v_all[local],
            yhat_unlabeled=v_all[~mask],
            alpha=ALPHA,
            w=w,
            clusters=clusters,
        )
        kmeans_estimates.append((today.mean, standard_error(today), float(v_all.mean())))
        for name, interval in (("human-only", human), ("robust PPI++", today)):
            res[name] = (_covered(interval.lo, interval.hi, target), interval.halfwidth, float(local.size))
            parts[name].append((interval, rows.size))

        for name, budget in (("confidence", n_theme), ("confidence+split", split.per_theme[theme])):
            pi = confidence_probabilities(confidence=c_all, budget=min(budget, rows.size), floor=FLOOR)
            drawn = rng.random(rows.size) < pi
            interval = weighted_ppi(
                y=y_all[drawn], confidence=c_all[drawn], pi=pi[drawn], confidence_all=c_all, alpha=ALPHA
            )
            res[name] = (_covered(interval.lo, interval.hi, target), interval.halfwidth, float(drawn.sum()))
            if name == "confidence":
                parts[name].append((interval, rows.size))
                se = interval.se if interval.se is not None else math.inf
                conf_estimates.append((interval.mean, se, float(c_all.mean())))
            else:
                split_parts.append((interval, rows.size))

        for name, split_v, prediction, pieces in (
            ("verdict split", by_verdict, c_all, verdict_parts),
            ("verdicts only", by_plain, v_all, plain_parts),
        ):
            pi = np.zeros(rows.size)
            for key in ("1", "0"):
                inside = v_all == float(key)
                if (theme, key) in split_v.labels:
                    budget = min(split_v.labels[(theme, key)], int(inside.sum()))
                    design_c = c_all[inside] if name == "verdict split" else np.full(int(inside.sum()), 0.5)
                    pi[inside] = confidence_probabilities(confidence=design_c, budget=budget, floor=FLOOR)
            drawn = rng.random(rows.size) < pi
            interval = weighted_ppi(
                y=y_all[drawn],
                confidence=prediction[drawn],
                pi=pi[drawn],
                confidence_all=prediction,
                alpha=ALPHA,
            )
            res[name] = (_covered(interval.lo, interval.hi, target), interval.halfwidth, float(drawn.sum()))
            pieces.append((interval, rows.size))

        # Anytime: draws with replacement from the confidence design, looks every BATCH draws.
        q = proportional_probabilities(scores=spread(confidence=c_all), budget=1.0, floor=FLOOR)
        cap = ANYTIME_CAP * n_theme
        units = rng.choice(rows.size, size=cap, p=q)
        guess = max(float(np.sum(c_all * (1 - c_all) / q)) / rows.size**2, 1e-4)
        looks = anytime_ppi(
            units=units,
            y=y_all[units],
            q=q,
            confidence_all=c_all,
            batch=BATCH,
            alpha=ALPHA,
            planned=n_theme,
            variance_guess=guess,
        )
        all_covered = all(look.lo <= target <= look.hi for look in looks)
        res["anytime"] = (all_covered, math.nan, math.nan)
        res["_anytime_looks"] = looks
        out["themes"][theme] = res
        out["themes"][theme]["_target"] = target

    # Shrinkage across the themes, on the confidence design's estimates and on today's.
    for method, source, found in (
        ("shrinkage", "confidence", conf_estimates),
        ("shrinkage K-means", "robust PPI++", kmeans_estimates),
    ):
        estimates = np.array([e[0] for e in found])
        ses = np.array([e[1] for e in found])
        if np.all(np.isfinite(ses)) and np.all(ses > 0) and np.all(np.isfinite(estimates)):
            shrunk = shrink_to_judge(
                estimates=estimates.tolist(),
                standard_errors=ses.tolist(),
                judge_means=[e[2] for e in found],
                alpha=ALPHA,
            )
            for theme, s in zip(THEMES, shrunk, strict=True):
                target = out["themes"][theme]["_target"]
                labels = out["themes"][theme][source][2]
                out["themes"][theme][method] = (_covered(s.lo, s.hi, target), s.halfwidth, labels)
        else:
            for theme in THEMES:
                out["themes"][theme][method] = (True, math.inf, out["themes"][theme][source][2])

    overall_target = float(truth.mean())
    for name, pieces in (
        *parts.items(),
        ("confidence+split", split_parts),
        ("verdict split", verdict_parts),
        ("verdicts only", plain_parts),
    ):
        combined = stratified_combine(parts=pieces, alpha=ALPHA, method=name, bounded=True)
        labels = sum(out["themes"][t][name][2] for t in THEMES)
        out["overall"][name] = (
            _covered(combined.lo, combined.hi, overall_target),
            combined.halfwidth,
            labels,
        )
    return out


def _run_design(args: tuple[str, dict, int, int]) -> tuple[str, dict]:
    name, spec, reps, seed = args
    population = build_population(spec=spec, seed=seed)
    seeds = np.random.SeedSequence(seed).generate_state(reps, dtype=np.uint64).tolist()
    outcomes = [replicate(population=population, seed=s) for s in seeds]
    planner = planner_check(population=population, seed=seed + 1, reps=max(100, reps // 5))
    return name, summarise(outcomes=outcomes, spec=spec, planner=planner)


def summarise(*, outcomes: list[dict], spec: dict, planner: dict) -> dict:
    """Coverage, mean half-width and labels needed per method, per theme and overall."""
    per_theme: dict[str, dict[str, dict[str, float]]] = {}
    for theme in THEMES:
        per_theme[theme] = {}
        for method in METHODS:
            if method == "anytime":
                continue
            rows = [o["themes"][theme][method] for o in outcomes]
            half = np.array([r[1] for r in rows])
            finite = half[np.isfinite(half)]
            per_theme[theme][method] = {
                "coverage": float(np.mean([r[0] for r in rows])),
                "halfwidth": float(finite.mean()) if finite.size else math.inf,
                "labels": float(np.mean([r[2] for r in rows])),
                "infinite": int((~np.isfinite(half)).sum()),
            }
        today = per_theme[theme]["robust PPI++"]["halfwidth"]
        stops, covered, censored = [], [], 0
        for o in outcomes:
            looks = o["themes"][theme]["_anytime_looks"]
            covered.append(o["themes"][theme]["anytime"][0])
            reached = [look for look in looks if look.halfwidth <= today]
            if reached:
                stops.append(reached[0].labels)
            else:
                stops.append(looks[-1].labels)
                censored += 1
        per_theme[theme]["anytime"] = {
            "coverage": float(np.mean(covered)),
            "halfwidth": today,
            "labels": float(np.mean(stops)),
            "censored": censored,
        }
    methods: dict[str, dict[str, float]] = {}
    for method in METHODS:
        coverages = [per_theme[t][method]["coverage"] for t in THEMES]
        if method == "anytime":
            needed = sum(per_theme[t][method]["labels"] for t in THEMES)
        else:
            needed = sum(
                per_theme[t][method]["labels"]
                * (per_theme[t][method]["halfwidth"] / per_theme[t]["robust PPI++"]["halfwidth"]) ** 2
                for t in THEMES
            )
        methods[method] = {
            "coverage": float(np.mean(coverages)),
            "worst": float(np.min(coverages)),
            "halfwidth": float(np.mean([per_theme[t][method]["halfwidth"] for t in THEMES])),
            "needed": needed,
        }
    overall: dict[str, dict[str, float]] = {}
    for method in OVERALL_METHODS:
        rows = [o["overall"][method] for o in outcomes]
        half = np.array([r[1] for r in rows])
        overall[method] = {
            "coverage": float(np.mean([r[0] for r in rows])),
            "halfwidth": float(half[np.isfinite(half)].mean()),
            "labels": float(np.mean([r[2] for r in rows])),
        }
    today_overall = overall["robust PPI++"]["halfwidth"]
    for row in overall.values():
        row["needed"] = row["labels"] * (row["halfwidth"] / today_overall) ** 2
    agreement = float(np.mean([o["agreement"] for o in outcomes]))
    return {
        "per_theme": per_theme,
        "methods": methods,
        "overall": overall,
        "agreement": agreement,
        "planner": planner,
        "reps": len(outcomes),
    }


def planner_check(*, population: dict, seed: int, reps: int) -> dict:
    """The planner's predicted total labels for a study PPI++ half-width of PLANNER_TARGET in the
    largest theme, from a 30-label simple random pilot (median over ``reps`` pilots), against the
    labels a simulated campaign needs: the smallest n on a grid whose mean study PPI++ half-width
    (simple random samples, ``reps`` per n) reaches the target, interpolated on log scales."""
    # evaluation.estimates.planning also reads reports, whose module needs the app registry (no database).
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from evaluation.estimates.planning import labels_needed, ppi_halfwidths

    rng = np.random.default_rng(seed)
    spec = population["spec"]
    rows = np.flatnonzero(population["themes"] == "Finance")
    size = rows.size

    def theme_draw() -> tuple[np.ndarray, np.ndarray]:
        latent = (
            population["levels"][rows]
            + population["answer_effect"][rows]
            + population["noise_sd"] * rng.normal(size=size)
        )
        hidden = spec["hidden"] * rng.normal(size=population["n_answers"])[population["answers"][rows]]
        truth = (rng.random(size) < _sigmoid(latent + hidden)).astype(float)
        return truth, (_sigmoid(spec["k"] * latent) >= 0.5).astype(float)

    predicted = []
    for _ in range(reps):
        truth, verdict = theme_draw()
        pick = rng.permutation(size)
        labeled, rest = pick[:PLANNER_PILOT], pick[PLANNER_PILOT:]
        more = labels_needed(
            y=truth[labeled],
            yhat=verdict[labeled],
            yhat_unlabeled=verdict[rest],
            target_halfwidth=PLANNER_TARGET,
            alpha=ALPHA,
        )
        predicted.append(PLANNER_PILOT + more)
    grid = np.unique(np.geomspace(20, size - 1, 14).astype(int))
    mean_half = []
    for n in grid:
        halves = []
        for _ in range(reps):
            truth, verdict = theme_draw()
            pick = rng.permutation(size)
            labeled, rest = pick[:n], pick[n:]
            halves.append(
                float(
                    ppi_halfwidths(
                        y=truth[labeled],
                        yhat=verdict[labeled],
                        yhat_unlabeled=verdict[rest],
                        n_labeled=[n],
                        alpha=ALPHA,
                    )[0]
                )
            )
        mean_half.append(float(np.mean(halves)))
    halves_arr = np.array(mean_half)
    below = np.flatnonzero(halves_arr <= PLANNER_TARGET)
    if below.size == 0:
        simulated = math.inf
    elif below[0] == 0:
        simulated = float(grid[0])
    else:
        i = below[0]
        x0, x1 = math.log(grid[i - 1]), math.log(grid[i])
        y0, y1 = math.log(halves_arr[i - 1]), math.log(halves_arr[i])
        simulated = math.exp(x0 + (math.log(PLANNER_TARGET) - y0) * (x1 - x0) / (y1 - y0))
    return {"predicted": float(np.median(predicted)), "simulated": simulated, "size": size}


def main() -> None:
    """Run every design, print the tables and whether each target is met."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="200 replications per design")
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--themes", action="store_true", help="print coverage / half-width per theme too")
    parser.add_argument("--only", default="", help="run only the designs whose name contains this text")
    args = parser.parse_args()
    reps = 200 if args.quick else args.reps
    if reps < 1 or args.workers < 1:
        parser.error("--reps and --workers must be at least 1")
    started = time.perf_counter()
    designs = {name: spec for name, spec in DESIGNS.items() if args.only in name}
    jobs = [
        (name, spec, reps, args.seed + i) for i, (name, spec) in enumerate(DESIGNS.items()) if name in designs
    ]
    if args.workers > 1:
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            results = dict(pool.map(_run_design, jobs))
    else:
        results = dict(map(_run_design, jobs))
    print(
        f"{reps} replications per design, seed {args.seed}, alpha {ALPHA}, floor {FLOOR}, "
        f"{time.perf_counter() - started:.0f} s"
    )
    failures: list[str] = []
    for name, spec in designs.items():
        summary = results[name]
        labels = "/".join(str(spec["labels"][t]) for t in THEMES)
        print(f"\n== {name} (agreement measured {summary['agreement']:.1%}, labels per theme {labels}) ==")
        header = f"{'coverage':>9} {'(worst)':>8} {'half-width':>11} {'labels':>8} {'vs today':>9}"
        print(f"  {'method':<18} {header}")
        today = summary["methods"]["robust PPI++"]["needed"]
        if args.themes:
            for theme in THEMES:
                rows = summary["per_theme"][theme]
                cells = "  ".join(
                    f"{m} {rows[m]['coverage']:.1%}/{rows[m]['halfwidth']:.3f}" for m in METHODS
                )
                print(f"  {theme}: {cells}")
        for method in METHODS:
            row = summary["methods"][method]
            print(
                f"  {method:<18} {row['coverage']:>9.1%} {row['worst']:>8.1%} {row['halfwidth']:>11.3f} "
                f"{row['needed']:>8.1f} {row['needed'] / today - 1:>+9.1%}"
            )
            floor = ANYTIME_TARGET if method == "anytime" else COVERAGE_TARGET
            if row["coverage"] < floor:
                failures.append(f"{name}: {method} covers {row['coverage']:.1%} (< {floor:.0%})")
            excess = row["needed"] / today - 1
            if method in NEW_DESIGNS and excess > EXCESS_LIMIT:
                failures.append(f"{name}: {method} needs {excess:+.1%} labels vs today")
        censored = sum(summary["per_theme"][t]["anytime"].get("censored", 0) for t in THEMES)
        if censored:
            print(
                f"  anytime: {censored} theme-replications short of the target at {ANYTIME_CAP}x the budget"
            )
        print("  overall (themes combined by size):")
        today_overall = summary["overall"]["robust PPI++"]["needed"]
        for method, row in summary["overall"].items():
            print(
                f"  {method:<18} {row['coverage']:>9.1%} {'':>8} {row['halfwidth']:>11.3f} "
                f"{row['needed']:>8.1f} {row['needed'] / today_overall - 1:>+9.1%}"
            )
            if row["coverage"] < COVERAGE_TARGET:
                failures.append(f"{name}: overall {method} covers {row['coverage']:.1%}")
        calibrated = spec["k"] == 1.0 and spec["hidden"] == 0.0 and spec["agreement"] >= 0.85
        if calibrated:
            savings = {
                m: 1 - summary["methods"][m]["needed"] / today for m in ("confidence", "confidence+split")
            }
            print(
                f"  labels saved vs today: confidence {savings['confidence']:.1%}, with the split "
                f"{savings['confidence+split']:.1%} (target {SAVING_TARGET:.0%})"
            )
            if savings["confidence"] < SAVING_TARGET:
                failures.append(f"{name}: saving {savings['confidence']:.1%} < {SAVING_TARGET:.0%}")
        planner = summary["planner"]
        gap = planner["predicted"] / planner["simulated"] - 1
        print(
            f"  planner, Finance ({planner['size']} sentences), study PPI++ +/- {PLANNER_TARGET}: predicted "
            f"{planner['predicted']:.0f} labels from a {PLANNER_PILOT}-label pilot (median), simulated "
            f"{planner['simulated']:.0f}: {gap:+.1%}"
        )
        if not abs(gap) <= PLANNER_TOLERANCE:
            failures.append(f"{name}: planner off by {gap:+.1%}")
    print("\nTargets: " + ("all met" if not failures else f"{len(failures)} missed"))
    for failure in failures:
        print(f"  MISSED {failure}")


if __name__ == "__main__":
    main()
