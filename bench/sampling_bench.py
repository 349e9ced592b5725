"""Time draw_sample end to end on PostgreSQL: 100,000 sentence units in 4 themes, a 140-unit sample.

Run with ``.venv/bin/python bench/sampling_bench.py [--sentences N] [--budget B] [--keep]``. Creates
the database ``attest_bench_sampling`` on 127.0.0.1:5432 (user postgres), fills it with bulk_create,
prints the seconds of each step (target for the draw: under 30 s) and drops the database unless
``--keep``. It asserts nothing: timings belong here, never in tests.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sampling_design_bench import synthetic_sentences  # noqa: E402

DATABASE = "attest_bench_sampling"
PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
SENTENCES_PER_ANSWER = 5
REPETITIONS = 20
TARGET_S = 30.0


def recreate_database() -> None:
    with psycopg.connect(**PG, dbname="postgres", autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')


def drop_database() -> None:
    with psycopg.connect(**PG, dbname="postgres", autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')


def build_campaign(*, sentences: int, seed: int):
    """A campaign whose answers hold ``SENTENCES_PER_ANSWER`` synthetic sentences of one theme each."""
    from annotation.corpus.campaigns import get_or_create_campaign
    from annotation.models import Answer, Level, Question, Sentence, Unit

    texts, themes = synthetic_sentences(n=sentences, seed=seed)
    by_theme: dict[str, list[str]] = {}
    for text, theme in zip(texts, themes, strict=True):
        by_theme.setdefault(theme, []).append(text)
    campaign, _ = get_or_create_campaign(name="Sampling bench")

    # Per theme: answers of SENTENCES_PER_ANSWER sentences, REPETITIONS answers per question.
    groups: list[tuple[int, str, list[str]]] = []  # (question index, theme, sentences)
    repetitions: list[int] = []
    question_themes: list[str] = []
    for theme in sorted(by_theme):
        theme_texts = by_theme[theme]
        for n, start in enumerate(range(0, len(theme_texts), SENTENCES_PER_ANSWER)):
            if n % REPETITIONS == 0:
                question_themes.append(theme)
            groups.append(
                (len(question_themes) - 1, theme, theme_texts[start : start + SENTENCES_PER_ANSWER])
            )
            repetitions.append(n % REPETITIONS + 1)
    questions = Question.objects.bulk_create(
        [
            Question(
                campaign=campaign,
                external_id=f"Q{q}",
                text=f"Question {q} ?",
                theme=theme,
                difficulty="simple",
            )
            for q, theme in enumerate(question_themes)
        ],
        batch_size=2000,
    )
    answers = Answer.objects.bulk_create(
        [
            Answer(
                campaign=campaign,
                question=questions[q],
                external_id=f"A{n}",
                repetition=repetitions[n],
                text=" ".join(group),
                language="fr",
            )
            for n, (q, _, group) in enumerate(groups)
        ],
        batch_size=2000,
    )
    theme_of = [theme for _, theme, _ in groups]
    rows = [
        (answer, theme, position, text)
        for answer, (_, theme, group) in zip(answers, groups, strict=True)
        for position, text in enumerate(group)
    ]
    created = Sentence.objects.bulk_create(
        [
            Sentence(answer=answer, position=position, text=text, paragraph=text)
            for answer, _, position, text in rows
        ],
        batch_size=5000,
    )
    Unit.objects.bulk_create(
        [
            Unit(campaign=campaign, level=Level.ANSWER, answer=answer, theme=theme_of[n], difficulty="simple")
            for n, answer in enumerate(answers)
        ],
        batch_size=5000,
    )
    Unit.objects.bulk_create(
        [
            Unit(
                campaign=campaign,
                level=Level.SENTENCE,
                answer=answer,
                sentence=sentence,
                theme=theme,
                difficulty="simple",
            )
            for (answer, theme, _, _), sentence in zip(rows, created, strict=True)
        ],
        batch_size=5000,
    )
    return campaign


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--budget", type=int, default=140)
    parser.add_argument("--per-cluster", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="leave the database in place afterwards")
    args = parser.parse_args()

    recreate_database()
    os.environ["DATABASE_URL"] = f"postgres://{PG['user']}@{PG['host']}:{PG['port']}/{DATABASE}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["EMBEDDING_BACKEND"] = "tfidf"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from annotation.models import Criterion, Unit
    from annotation.sampling.draws import draw_sample, top_up_sample

    try:
        call_command("migrate", verbosity=0)
        start = time.perf_counter()
        campaign = build_campaign(sentences=args.sentences, seed=args.seed)
        units = Unit.objects.filter(campaign=campaign, level="sentence").count()
        print(f"built {units} sentence units on PostgreSQL in {time.perf_counter() - start:.1f} s")
        print(f"cores available: {len(os.sched_getaffinity(0))}")
        veracity = Criterion.objects.get(campaign=campaign, name="veracity")

        start = time.perf_counter()
        sample = draw_sample(
            criterion=veracity, budget=args.budget, seed=args.seed, per_cluster=args.per_cluster
        )
        draw_s = time.perf_counter() - start
        verdict = "within" if draw_s < TARGET_S else "OVER"
        print(
            f"draw_sample, budget {args.budget}: {draw_s:.2f} s ({verdict} the {TARGET_S:.0f} s target); "
            f"{sample.items.count()} units, K per theme {sample.k_per_theme}"
        )

        start = time.perf_counter()
        sample = top_up_sample(sample=sample, budget=2 * args.budget)
        print(
            f"top_up_sample to budget {2 * args.budget}: {time.perf_counter() - start:.2f} s; "
            f"{sample.items.count()} units"
        )
    finally:
        connections.close_all()
        if not args.keep:
            drop_database()


if __name__ == "__main__":
    main()
