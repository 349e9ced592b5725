"""Coverage of the per-theme intervals under the app's own stratified K-means design.

    python bench/coverage_bench.py [--reps 1000] [--seed 20261122] [--workers 2] [--extreme]

No database. A synthetic campaign: three themes of unequal size (400, 250 and 150 answers), each
answer cut into 6 to 14 sentences (about 10). Sentence embeddings are the answer's random vector
plus noise, so K-means groups sentences of similar answers.

Per replication, what varies: the truth, the judge and the human sample.

- Truth: sentence veracity ~ Bernoulli(sigmoid(logit(prevalence_theme) + eta_answer)); the
  answer's latent effect eta = a fixed part read from its embedding (so the K-means clusters
  differ in veracity and unequal inclusion probabilities matter) + a fresh random part (so the
  sentences of one answer are correlated). The target is the realised mean of the theme's
  sentences (a finite-population mean).
- Judge: wrong with a theme-dependent rate (8%, 15%, 25% on average), asymmetric (it calls a
  false sentence true more often than the reverse).
- Sample: m = 3 sentences at random per cluster, K = 10 clusters per theme (30 labels per theme,
  ``allocate_clusters`` with a per-theme budget). The clusters come from the app's own
  ``draw_stratified`` (K-means per theme), computed once: the embeddings are fixed, so re-running
  K-means in every replication would only add minutes. Each replication then redraws the 3 units
  per cluster with its own seed, exactly the sampler's second step (a random permutation of the
  cluster, its first m units), inclusion probability min(m, N_c) / N_c.

Methods, per theme: classical (``classical_mean``, plain, as in the study), classical-robust
(design weights and answers as clusters), study PPI++ (``study_ppi``: ppi_py, ignoring the
design) and robust PPI++ (``robust_ppi`` with weights, answer clusters, cross-fitted lambda).
``--extreme`` runs the same design near the bounds with few labels: prevalences 0.97, 0.95 and
0.04 and 12 labels per theme (K = 4 clusters of 3), where a normal interval leaves [0, 1].

Prints coverage of the 95% interval and its mean half-width, and whether robust PPI++ covers at
least 93% in every theme while being narrower than classical-robust.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.sampling.design import allocate_clusters, draw_stratified
from inference.estimators.means import classical_mean
from inference.estimators.ppi import robust_ppi, study_ppi

THEMES = {"Finance": 400, "RH": 250, "IT": 150}  # answers per theme
PREVALENCE = {"Finance": 0.85, "RH": 0.75, "IT": 0.60}
JUDGE_ERROR = {"Finance": 0.08, "RH": 0.15, "IT": 0.25}
LABELS_PER_THEME = 30
PER_CLUSTER = 3
ALPHA = 0.05
DIMENSIONS = 16
# Latent answer effect: sd of the part explained by the embedding and of the random part.
FIXED_SD = 1.0
RANDOM_SD = 0.8
# Judge errors: false negatives at 0.8 x the theme's rate, false positives at 1.8 x.
FN_SHARE, FP_SHARE = 0.8, 1.8
METHODS = ("classical", "classical-robust", "study PPI++", "robust PPI++")
COVERAGE_TARGET = 0.93
# ``--extreme``: rates near 0 and 1, and few labels.
EXTREME_PREVALENCE = {"Finance": 0.97, "RH": 0.95, "IT": 0.04}
EXTREME_LABELS_PER_THEME = 12


def build_population(
    *, seed: int, prevalence: dict[str, float] | None = None, labels_per_theme: int = LABELS_PER_THEME
) -> dict:
    """Fixed parts of the campaign: answers, sentences, embeddings and the K-means clusters, and
    the prevalences (``PREVALENCE`` unless given) the replications draw the truth from."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=DIMENSIONS)
    direction /= np.linalg.norm(direction)
    themes, answer_of, vectors = [], [], []
    fixed_effect: list[float] = []
    answer_id = 0
    for theme, n_answers in THEMES.items():
        for _ in range(n_answers):
            centre = rng.normal(size=DIMENSIONS)
            fixed_effect.append(FIXED_SD * float(centre @ direction))
            n_sentences = int(rng.integers(6, 15))
            vectors.append(centre + 0.35 * rng.normal(size=(n_sentences, DIMENSIONS)))
            themes.extend([theme] * n_sentences)
            answer_of.extend([answer_id] * n_sentences)
            answer_id += 1
    embeddings = np.vstack(vectors)
    unit_ids = np.arange(embeddings.shape[0])
    sizes = {theme: themes.count(theme) for theme in THEMES}
    k = allocate_clusters(
        theme_sizes=sizes,
        budget=labels_per_theme * len(THEMES),
        per_cluster=PER_CLUSTER,
        per_theme_budget={theme: labels_per_theme for theme in THEMES},
    )
    # per_cluster above any cluster size: every unit is "drawn", which records its cluster.
    everything = draw_stratified(
        unit_ids=unit_ids,
        themes=themes,
        embeddings=embeddings,
        k_per_theme=k,
        per_cluster=embeddings.shape[0],
        seed=seed,
    )
    clusters: dict[str, list[np.ndarray]] = {theme: [] for theme in THEMES}
    members: dict[tuple[str, int], list[int]] = {}
    for draw in everything:
        members.setdefault((draw.theme, draw.cluster), []).append(draw.unit_id)
    for (theme, _), ids in sorted(members.items()):
        clusters[theme].append(np.asarray(sorted(ids)))
    return {
        "themes": np.asarray(themes),
        "answer_of": np.asarray(answer_of),
        "fixed_effect": np.asarray(fixed_effect),
        "clusters": clusters,
        "k": k,
        "sizes": sizes,
        "prevalence": dict(prevalence or PREVALENCE),
        "labels_per_theme": labels_per_theme,
    }


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def replicate(*, population: dict, seed: int) -> dict[str, dict[str, tuple[bool, float]]]:
    """One replication: {theme: {method: (covered, halfwidth)}}, plus under the key
    ``"no disagreement"`` (True, 0) when the judge agreed with every human label of the theme."""
    rng = np.random.default_rng(seed)
    themes, answer_of = population["themes"], population["answer_of"]
    n_answers = population["fixed_effect"].shape[0]
    eta = population["fixed_effect"] + RANDOM_SD * rng.normal(size=n_answers)
    results: dict[str, dict[str, tuple[bool, float]]] = {}
    for theme in THEMES:
        rows = np.flatnonzero(themes == theme)
        p = 1 / (1 + np.exp(-(_logit(population["prevalence"][theme]) + eta[answer_of[rows]])))
        truth = (rng.random(rows.shape[0]) < p).astype(float)
        error = np.where(truth == 1, FN_SHARE, FP_SHARE) * JUDGE_ERROR[theme]
        judge = np.where(rng.random(rows.shape[0]) < error, 1 - truth, truth)
        target = float(truth.mean())
        position = {unit: index for index, unit in enumerate(rows)}

        sampled, weights = [], []
        for members in population["clusters"][theme]:
            chosen = rng.permutation(members)[:PER_CLUSTER]
            sampled.extend(position[unit] for unit in chosen)
            weights.extend([len(members) / len(chosen)] * len(chosen))
        sampled_idx = np.asarray(sampled)
        w = np.asarray(weights)
        mask = np.ones(rows.shape[0], dtype=bool)
        mask[sampled_idx] = False
        y, yhat, unlabeled = truth[sampled_idx], judge[sampled_idx], judge[mask]
        clusters = answer_of[rows][sampled_idx]

        intervals = {
            "classical": classical_mean(y=y, alpha=ALPHA),
            "classical-robust": classical_mean(y=y, alpha=ALPHA, w=w, clusters=clusters),
            "study PPI++": study_ppi(y=y, yhat=yhat, yhat_unlabeled=unlabeled, alpha=ALPHA),
            "robust PPI++": robust_ppi(
                y=y, yhat=yhat, yhat_unlabeled=unlabeled, alpha=ALPHA, w=w, clusters=clusters
            ),
        }
        results[theme] = {
            method: (bool(interval.lo <= target <= interval.hi), float(interval.halfwidth))
            for method, interval in intervals.items()
        }
        results[theme]["no disagreement"] = (bool(np.all(y == yhat)), 0.0)
    return results


def _run_chunk(args: tuple[dict, list[int]]) -> list[dict]:
    population, seeds = args
    return [replicate(population=population, seed=seed) for seed in seeds]


def run(
    *, reps: int, seed: int, workers: int, extreme: bool = False
) -> dict[str, dict[str, dict[str, float]]]:
    """Coverage and mean (and median) half-width per theme and method over ``reps`` replications
    (near 0 and 1 with few labels when ``extreme``)."""
    if extreme:
        population = build_population(
            seed=seed, prevalence=EXTREME_PREVALENCE, labels_per_theme=EXTREME_LABELS_PER_THEME
        )
    else:
        population = build_population(seed=seed)
    seeds = np.random.SeedSequence(seed).generate_state(reps, dtype=np.uint64).tolist()
    chunks = [seeds[i::workers] for i in range(workers)]
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            outcomes = [
                row for part in pool.map(_run_chunk, [(population, c) for c in chunks]) for row in part
            ]
    else:
        outcomes = _run_chunk((population, seeds))
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for theme in THEMES:
        summary[theme] = {}
        for method in METHODS:
            covered = np.array([o[theme][method][0] for o in outcomes])
            half = np.array([o[theme][method][1] for o in outcomes])
            finite = half[np.isfinite(half)]
            summary[theme][method] = {
                "coverage": float(covered.mean()),
                "halfwidth": float(finite.mean()) if finite.size else math.inf,
                "median_halfwidth": float(np.median(finite)) if finite.size else math.inf,
                "infinite": int((~np.isfinite(half)).sum()),
            }
    summary["_design"] = {
        theme: {
            "units": population["sizes"][theme],
            "clusters": population["k"][theme],
            "prevalence": population["prevalence"][theme],
            "labels": population["labels_per_theme"],
            "no_disagreement": float(np.mean([o[theme]["no disagreement"][0] for o in outcomes])),
            "robust_coverage_when_no_disagreement": _conditional_coverage(outcomes, theme),
        }
        for theme in THEMES
    }
    return summary


def _conditional_coverage(outcomes: list[dict], theme: str) -> float:
    rows = [o[theme]["robust PPI++"][0] for o in outcomes if o[theme]["no disagreement"][0]]
    return float(np.mean(rows)) if rows else math.nan


def main() -> None:
    """Parse the arguments, run the simulation and print the table per theme."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--extreme", action="store_true", help="rates near 0 and 1 with 12 labels per theme")
    args = parser.parse_args()
    if args.reps < 1 or args.workers < 1:
        parser.error("--reps and --workers must be at least 1")
    started = time.perf_counter()
    summary = run(reps=args.reps, seed=args.seed, workers=args.workers, extreme=args.extreme)
    design = summary.pop("_design")
    print(
        f"{args.reps} replications, seed {args.seed}, alpha {ALPHA}, {PER_CLUSTER} labels per cluster, "
        f"{time.perf_counter() - started:.1f} s"
    )
    ok = True
    for theme, rows in summary.items():
        print(
            f"\n{theme}: {design[theme]['units']} sentences, K = {design[theme]['clusters']}, "
            f"prevalence {design[theme]['prevalence']:.2f}, judge error {JUDGE_ERROR[theme]:.0%}"
        )
        print(f"  {'method':<18} {'coverage':>9} {'mean half-width':>16} {'median':>8}")
        for method, row in rows.items():
            extra = f"  ({row['infinite']} infinite)" if row["infinite"] else ""
            print(
                f"  {method:<18} {row['coverage']:>9.1%} {row['halfwidth']:>16.3f} "
                f"{row['median_halfwidth']:>8.3f}{extra}"
            )
        print(
            f"  judge agreed with all {design[theme]['labels']} human labels in "
            f"{design[theme]['no_disagreement']:.1%} of replications; robust PPI++ coverage then: "
            f"{design[theme]['robust_coverage_when_no_disagreement']:.1%}"
        )
        robust, classical = rows["robust PPI++"], rows["classical-robust"]
        theme_ok = robust["coverage"] >= COVERAGE_TARGET and robust["halfwidth"] < classical["halfwidth"]
        ok = ok and theme_ok
        print(
            f"  robust PPI++ covers >= {COVERAGE_TARGET:.0%} and is narrower than classical-robust: "
            f"{'yes' if theme_ok else 'NO'}"
        )
    print(f"\nEvery theme: {'yes' if ok else 'NO'}")


if __name__ == "__main__":
    main()
