"""Report speed: estimates for a campaign of 1,000,000 answer-level units.

    python bench/report_bench.py [--units 1000000] [--labels 1000]

A throw-away PostgreSQL database (``attest_report_bench``, see bench/pgdb.py) gets one campaign
whose answers, units and judge labels are generated inside PostgreSQL (INSERT ... SELECT over
generate_series, so building a million rows takes seconds), plus ``--labels`` imported human
labels on random units. Prints the seconds of ``compute_report`` (best of 3) for both methods.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pgdb import bench_database

THEMES = ["Finance", "RH", "IT", "Juridique", "Immobilier"]
DIFFICULTIES = ["simple", "intermediate", "hard", "inappropriate"]


def build(*, units: int, labels: int) -> tuple[int, int]:
    """Create the campaign in SQL; return (criterion id, judge id)."""
    from django.db import connection, transaction

    from annotation.corpus.campaigns import get_or_create_campaign
    from annotation.models import Criterion, Question
    from evaluation.models import Judge

    campaign, _ = get_or_create_campaign(name="Report bench")
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    questions = Question.objects.bulk_create(
        Question(
            campaign=campaign,
            external_id=f"Q{index:05d}",
            text=f"Question {index} ?",
            theme=THEMES[index % len(THEMES)],
            difficulty=DIFFICULTIES[(index // len(THEMES)) % len(DIFFICULTIES)],
        )
        for index in range(1000)
    )
    first_question = min(question.pk for question in questions)
    params = {"c": campaign.pk, "q0": first_question, "n": units, "crit": criterion.pk, "judge": judge.pk}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.42)")
        cursor.execute(
            """INSERT INTO annotation_answer
                   (campaign_id, question_id, external_id, repetition, text, language)
               SELECT %(c)s, %(q0)s + (i %% 1000), 'A' || i, 1 + i / 1000, 'Réponse ' || i, 'fr'
               FROM generate_series(0, %(n)s - 1) AS i""",
            params,
        )
        cursor.execute(
            """INSERT INTO annotation_unit (campaign_id, level, answer_id, sentence_id, theme, difficulty)
               SELECT a.campaign_id, 'answer', a.id, NULL, q.theme, q.difficulty
               FROM annotation_answer a JOIN annotation_question q ON q.id = a.question_id
               WHERE a.campaign_id = %(c)s ORDER BY a.id""",
            params,
        )
        cursor.execute(
            """INSERT INTO evaluation_judgment
                   (unit_id, criterion_id, judge_id, status, value, reasoning, raw_response, error,
                    prompt_tokens, completion_tokens, cost, latency_ms, created_at, updated_at)
               SELECT u.id, %(crit)s, %(judge)s, 'ok', (random() < 0.72)::int, '', '', '',
                      0, 0, 0, 0, now(), now()
               FROM annotation_unit u WHERE u.campaign_id = %(c)s""",
            params,
        )
        cursor.execute(
            """INSERT INTO annotation_label
                   (unit_id, criterion_id, user_id, stage, value, comment, created_at)
               SELECT j.unit_id, j.criterion_id, NULL, 'imported',
                      CASE WHEN j.unit_id %% 10 = 3 THEN 1 - j.value ELSE j.value END, '', now()
               FROM evaluation_judgment j WHERE j.judge_id = %(judge)s
               ORDER BY random() LIMIT %(labels)s""",
            {**params, "labels": labels},
        )
        cursor.execute("ANALYZE")
    return criterion.pk, judge.pk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=1_000_000)
    parser.add_argument("--labels", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with bench_database("attest_report_bench") as engine:
        from annotation.models import Criterion
        from evaluation.estimates.report import compute_report
        from evaluation.models import Judge

        started = time.perf_counter()
        criterion_id, judge_id = build(units=args.units, labels=args.labels)
        built = time.perf_counter() - started
        print(f"{engine}: built {args.units} units and {args.labels} human labels in {built:.1f}s")
        criterion = Criterion.objects.select_related("campaign").get(pk=criterion_id)
        judge = Judge.objects.get(pk=judge_id)
        for method in ("robust", "study"):
            times = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                report = compute_report(criterion=criterion, judge=judge, method=method)
                times.append(time.perf_counter() - started)
            overall = report.overall
            print(
                f"compute_report method={method}: best {min(times):.3f}s of {args.repeat} "
                f"(all: {', '.join(f'{t:.3f}' for t in times)}); overall PPI++ {overall.ppi.mean:.4f} "
                f"[{overall.ppi.lo:.4f}, {overall.ppi.hi:.4f}], "
                f"n_human {overall.n_human}, n_judge {overall.n_judge}, "
                f"agreement {overall.agreement.observed:.3f}"
            )


if __name__ == "__main__":
    main()
