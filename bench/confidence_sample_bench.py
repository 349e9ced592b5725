"""The judge-confidence sample through the app: draw, label, report, many times.

    python bench/confidence_sample_bench.py [--reps 150] [--budget 120] [--pilot 30]
        [--database attest_design]

One campaign of four themes (600, 300, 200 and 100 answer-level units) in a throw-away database
(bench/pgdb.py). Each unit has a probability p of a 1 (Beta(0.5, 0.2), clipped to [0.01, 0.99]);
its human label is drawn once from p, so every replication estimates the same finite-population
rates. The judge says 1 when p >= 1/2 and gives as its confidence either p (calibrated) or
sigmoid(3 logit p) (overconfident: same verdicts, surer). Each replication makes a fresh
criterion with the judge's verdicts; as the app requires before a judge chooses who labels what,
a pilot first (``--pilot`` units drawn at random across the campaign, stored as a first sample,
their true labels imported), then a sample with ``draw_confidence_sample`` (seeded by the
replication: it follows the confidence recalibrated on the pilot), the true labels of its units
imported, and ``compute_report`` (robust method: the pilot's and the sample's labels pooled,
the confidence recalibrated cross-fitted). Prints, per judge and theme, the coverage of the 95%
PPI++ interval and the median half-widths of PPI++ (inverse-probability, on the confidence) and
of the human-only estimate on the same labels. ``--pilot 0`` draws without a pilot (the
``without_pilot`` path), to see what the pilot buys.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pgdb import bench_database

THEMES = {"Finance": 600, "RH": 300, "IT": 200, "Legal": 100}


def run(*, overconfident: bool, reps: int, budget: int, pilot: int) -> None:
    from annotation.corpus.campaigns import get_or_create_campaign
    from annotation.models import Answer, Criterion, Label, Level, Question, Sample, SampleItem, Stage, Unit
    from evaluation.designs.active import draw_confidence_sample
    from evaluation.estimates.report import compute_report
    from evaluation.models import Judge, Judgment

    rng = np.random.default_rng(20261124)
    campaign, _ = get_or_create_campaign(name=f"Confidence bench {'over' if overconfident else 'calibrated'}")
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.IMPORTED)
    units: list = []
    for t, (theme, size) in enumerate(THEMES.items()):
        question = Question.objects.create(campaign=campaign, external_id=f"Q{t}", text="?", theme=theme)
        answers = Answer.objects.bulk_create(
            Answer(campaign=campaign, question=question, external_id=f"A{t}-{i}", text="-")
            for i in range(size)
        )
        units += Unit.objects.bulk_create(
            Unit(campaign=campaign, level=Level.ANSWER, answer=a, theme=theme, difficulty="") for a in answers
        )
    p = np.clip(rng.beta(0.5, 0.2, len(units)), 0.01, 0.99)
    truth = (rng.random(len(units)) < p).astype(int)
    shown = 1 / (1 + np.exp(-3 * np.log(p / (1 - p)))) if overconfident else p
    themes = np.array([unit.theme for unit in units])
    rates = {theme: float(truth[themes == theme].mean()) for theme in THEMES}
    position = {unit.pk: i for i, unit in enumerate(units)}
    results: dict[str, list[tuple[bool, float, float]]] = {theme: [] for theme in THEMES}
    drawn = []
    started = time.perf_counter()
    for rep in range(reps):
        criterion = Criterion.objects.create(
            campaign=campaign, name=f"bench-{rep}", title=f"Bench {rep}", level=Level.ANSWER
        )
        Judgment.objects.bulk_create(
            Judgment(
                unit=unit,
                criterion=criterion,
                judge=judge,
                value=int(s >= 0.5),
                confidence=float(s if s >= 0.5 else 1 - s),
            )
            for unit, s in zip(units, shown, strict=True)
        )
        labeled: set[int] = set()
        if pilot:
            chosen = rng.choice(len(units), size=pilot, replace=False)
            first = Sample.objects.create(campaign=campaign, criterion=criterion, status=Sample.Status.DONE)
            SampleItem.objects.bulk_create(
                SampleItem(
                    sample=first,
                    unit=units[k],
                    theme=units[k].theme,
                    cluster=0,
                    cluster_size=len(units),
                    inclusion_probability=pilot / len(units),
                )
                for k in chosen
            )
            labeled |= {units[k].pk for k in chosen}
            Label.objects.bulk_create(
                Label(unit_id=units[k].pk, criterion=criterion, stage=Stage.IMPORTED, value=int(truth[k]))
                for k in chosen
            )
        sample = draw_confidence_sample(
            criterion=criterion, judge=judge, budget=budget, seed=rep, without_pilot=not pilot
        )
        ids = [u for u in sample.items.values_list("unit_id", flat=True) if u not in labeled]
        Label.objects.bulk_create(
            Label(unit_id=u, criterion=criterion, stage=Stage.IMPORTED, value=int(truth[position[u]]))
            for u in ids
        )
        ids += list(labeled)
        drawn.append(len(ids))
        report = compute_report(criterion=criterion, judge=judge)
        for group in report.themes:
            covered = group.ppi.lo <= rates[group.theme] <= group.ppi.hi
            results[group.theme].append((covered, group.ppi.halfwidth, group.human.halfwidth))
    agreement = float(np.mean((p >= 0.5) == truth))
    label = "overconfident" if overconfident else "calibrated"
    every = [row for rows in results.values() for row in rows]
    print(
        f"{label} judge (agreement {agreement:.3f}), {reps} replications, {np.mean(drawn):.1f} labels on "
        f"average, {time.perf_counter() - started:.1f}s: coverage {np.mean([r[0] for r in every]):.3f}"
    )
    for theme, rows in results.items():
        print(
            f"  {theme:8} {THEMES[theme]:4} units: coverage {np.mean([r[0] for r in rows]):.3f}, "
            f"half-width PPI++ {np.nanmedian([r[1] for r in rows]):.4f}, "
            f"human-only {np.nanmedian([r[2] for r in rows]):.4f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=150)
    parser.add_argument("--budget", type=int, default=120)
    parser.add_argument("--pilot", type=int, default=30, help="pilot labels first (0: draw without a pilot)")
    parser.add_argument("--database", default="attest_bench_confidence")
    args = parser.parse_args()
    with bench_database(args.database) as engine:
        print(f"{engine}")
        for overconfident in (False, True):
            run(overconfident=overconfident, reps=args.reps, budget=args.budget, pilot=args.pilot)


if __name__ == "__main__":
    main()
