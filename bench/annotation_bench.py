"""Time submit-and-next under 8 concurrent annotators on a 200,000-sentence campaign (PostgreSQL).

Run with ``.venv/bin/python bench/annotation_bench.py [--sentences N] [--sample S] [--clients C]
[--threads]``. Creates the database ``attest_bench_annotation`` on 127.0.0.1:5432 (user
postgres), fills it with bulk_create (answers of 5 sentences, 3 retrieved chunks each), draws a
plain random sample of ``--sample`` sentence units for veracity, then runs two phases with
``--clients`` concurrent clients, each one person with its own database connection, sending its
next request as soon as the previous one is answered (no reading time: the machine saturated),
or, with ``--reading-s S``, after reading the unit for S seconds on average (uniform between S/2
and 3S/2; people at work, whose requests rarely meet):

1. domain: annotators call ``submit_label`` then ``next_unit`` until the first-stage queue is
   empty; the time of each submit-and-next pair is recorded;
2. pages: reviewers go through the review stage with the Django test client in-process (an htmx
   POST to the submit view, whose response is the next unit's rendered partial, through the
   whole middleware stack); the time of each POST is recorded.

By default each client is its own process (forked once Django is set up, before any database
connection is opened), as with a WSGI server running one worker process per client: the figures
are then the server time per request when 8 requests compete for the machine's cores and its
PostgreSQL, with no interpreter lock shared between them. ``--threads`` runs the clients as
threads of one process instead, as a single worker process with 8 threads would: there the
requests also queue on that process's interpreter lock.

The database is vacuumed, analysed and checkpointed after the load and before the timed
phases, as a campaign is imported once and annotated for days; the modules the first label
imports lazily are imported before the clients start, as in a server process that has served
its first label (the first label in a fresh process costs seconds more). Prints p50 / p95 / max in
milliseconds per phase (target p95: under 50 ms) and drops the database.
Then runs ``bench/sampling_bench.py`` (its own database: a 140-unit stratified sample drawn over
100,000 sentence units, target under 30 s) unless ``--no-sampling``, and prints its figures.
It asserts nothing: timings belong here, never in tests.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.pgdb import bench_database  # noqa: E402

DATABASE = "attest_bench_annotation"
SENTENCES_PER_ANSWER = 5
REPETITIONS = 20
CHUNKS = 2000
SOURCES_PER_ANSWER = 3
TARGET_MS = 50.0
THEMES = ("Finance", "RH", "IT", "Juridique")
WORDS = (
    "chiffre",
    "affaires",
    "exercice",
    "croissance",
    "marge",
    "résultat",
    "dette",
    "ratio",
    "covenant",
    "contrat",
    "salarié",
    "effectif",
    "rotation",
    "licence",
    "logiciel",
    "serveur",
    "hébergement",
    "litige",
    "contentieux",
    "provision",
    "bail",
    "loyer",
    "immobilier",
    "fournisseur",
    "client",
    "cadre",
    "clause",
    "résiliation",
    "garantie",
    "actif",
    "passif",
    "trésorerie",
    "capitaux",
    "dirigeant",
    "conseil",
    "administration",
    "assemblée",
    "filiale",
    "participation",
    "brevet",
    "marque",
    "conformité",
    "audit",
)


def _sentence(rng: random.Random, cited: str) -> str:
    words = rng.choices(WORDS, k=rng.randint(12, 24))
    return " ".join(words).capitalize() + f" de {rng.randint(2, 99)},{rng.randint(0, 9)} % [^{cited}^]."


def build(*, sentences: int, sample: int, seed: int):
    """The campaign, its veracity criterion and a sample of ``sample`` sentence units."""
    from annotation.campaigns import get_or_create_campaign
    from annotation.models import (
        Answer,
        AnswerSource,
        Criterion,
        Level,
        Question,
        Sample,
        SampleItem,
        Sentence,
        SourceChunk,
        Unit,
    )
    from annotation.text import chunk_text_hash

    rng = random.Random(seed)
    campaign, _ = get_or_create_campaign(name="Annotation bench")
    made = [
        SourceChunk(
            campaign=campaign,
            external_id=f"c{n:05d}",
            title=f"Document {n}.pdf",
            page=rng.randint(1, 80),
            text=" ".join(rng.choices(WORDS, k=180)),
        )
        for n in range(CHUNKS)
    ]
    for chunk in made:
        chunk.text_hash = chunk_text_hash(chunk.text)  # bulk_create skips save(), which sets it
    chunks = SourceChunk.objects.bulk_create(made, batch_size=2000)
    n_answers = sentences // SENTENCES_PER_ANSWER
    n_questions = max(1, n_answers // REPETITIONS)
    questions = Question.objects.bulk_create(
        [
            Question(
                campaign=campaign,
                external_id=f"Q{q}",
                text=f"Question {q} sur {THEMES[q % len(THEMES)].lower()} ?",
                theme=THEMES[q % len(THEMES)],
                difficulty="simple",
            )
            for q in range(n_questions)
        ],
        batch_size=5000,
    )
    sources = [rng.sample(chunks, SOURCES_PER_ANSWER) for _ in range(n_answers)]
    texts = [
        [_sentence(rng, sources[a][p % SOURCES_PER_ANSWER].external_id) for p in range(SENTENCES_PER_ANSWER)]
        for a in range(n_answers)
    ]
    answers = Answer.objects.bulk_create(
        [
            Answer(
                campaign=campaign,
                question=questions[a % n_questions],
                external_id=f"A{a}",
                repetition=a // n_questions + 1,
                text=" ".join(texts[a]),
                language="fr",
            )
            for a in range(n_answers)
        ],
        batch_size=5000,
    )
    AnswerSource.objects.bulk_create(
        [
            AnswerSource(answer=answer, chunk=chunk, rank=rank)
            for answer, chosen in zip(answers, sources, strict=True)
            for rank, chunk in enumerate(chosen, start=1)
        ],
        batch_size=10000,
    )
    created = Sentence.objects.bulk_create(
        [
            Sentence(
                answer=answer,
                position=p,
                text=texts[a][p],
                paragraph=answer.text,
                cited_ids=[sources[a][p % SOURCES_PER_ANSWER].external_id],
                citations_ok=True,
            )
            for a, answer in enumerate(answers)
            for p in range(SENTENCES_PER_ANSWER)
        ],
        batch_size=10000,
    )
    theme = {question.pk: question.theme for question in questions}
    Unit.objects.bulk_create(
        [
            Unit(
                campaign=campaign,
                level=Level.ANSWER,
                answer=a,
                theme=theme[a.question_id],
                difficulty="simple",
            )
            for a in answers
        ],
        batch_size=10000,
    )
    units = Unit.objects.bulk_create(
        [
            Unit(
                campaign=campaign,
                level=Level.SENTENCE,
                answer_id=s.answer_id,
                sentence=s,
                theme=theme[answers[i // SENTENCES_PER_ANSWER].question_id],
                difficulty="simple",
            )
            for i, s in enumerate(created)
        ],
        batch_size=10000,
    )
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="veracity")
    drawn = Sample.objects.create(
        campaign=campaign, criterion=criterion, status=Sample.Status.DONE, budget=sample, seed=seed
    )
    chosen = sorted(rng.sample(units, min(sample, len(units))), key=lambda u: (u.theme, u.pk))
    SampleItem.objects.bulk_create(
        [
            SampleItem(
                sample=drawn,
                unit=unit,
                theme=unit.theme,
                cluster=n // 3,
                cluster_size=50,
                inclusion_probability=0.06,
                rank=n % 3,
            )
            for n, unit in enumerate(chosen)
        ],
        batch_size=5000,
    )
    return campaign, criterion


def settle(engine: str) -> None:
    """Let the bulk load reach the disk before timing: without it the first commits wait seconds
    behind the write-back of a million fresh rows (and autovacuum starts mid-run)."""
    from django.db import connection

    if engine != "postgresql":
        return
    began = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")
        cursor.execute("CHECKPOINT")
    print(f"  VACUUM (ANALYZE) and CHECKPOINT before timing: {time.perf_counter() - began:.1f} s")


def people(*, campaign, role: str, count: int) -> list:
    from django.contrib.auth import get_user_model

    from annotation.models import Membership

    users = []
    for n in range(count):
        user = get_user_model().objects.create_user(username=f"{role}-{n}", password=None)
        Membership.objects.create(campaign=campaign, user=user, role=role)
        users.append(user)
    return users


def in_threads(work, users) -> list[float]:
    """Run ``work(user, times)`` in one thread per user; the times (ms) they all recorded."""
    from django.db import connection

    times: list[float] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(users))

    def run(user) -> None:
        try:
            start.wait()
            work(user, times)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return times


def _process_client(work, user, start, results) -> None:
    from django.db import connection

    times: list[float] = []
    try:
        start.wait()
        work(user, times)
        results.put((times, None))
    except BaseException as exc:  # reported by the parent
        results.put((times, f"{exc.__class__.__name__}: {exc}"))
    finally:
        connection.close()


def in_processes(work, users) -> list[float]:
    """Run ``work(user, times)`` in one forked process per user; the times (ms) they all recorded.

    The parent's connections are closed before the fork, so each child opens its own.
    """
    from django.db import connections

    connections.close_all()
    context = multiprocessing.get_context("fork")
    start, results = context.Barrier(len(users)), context.Queue()
    children = [context.Process(target=_process_client, args=(work, user, start, results)) for user in users]
    for child in children:
        child.start()
    times: list[float] = []
    errors: list[str] = []
    for _ in children:  # read before joining: a child blocks until its results are consumed
        recorded, error = results.get()
        times.extend(recorded)
        if error:
            errors.append(error)
    for child in children:
        child.join()
    if errors:
        raise RuntimeError(f"{len(errors)} client(s) failed; first: {errors[0]}")
    return times


def concurrently(work, users, *, threads: bool) -> list[float]:
    return in_threads(work, users) if threads else in_processes(work, users)


def _reader(user, reading_s: float):
    """A pause before each label: the person reading the unit, uniform between half and one and
    a half times ``reading_s`` (none when 0), from a generator of the person's own."""
    rng = random.Random(user.pk)
    return lambda: time.sleep(rng.uniform(0.5, 1.5) * reading_s) if reading_s > 0 else None


def domain_phase(*, criterion, users, threads: bool, reading_s: float = 0.0) -> list[float]:
    """Annotators label the first stage through the domain functions."""
    from annotation.models import Stage
    from annotation.workflow import WorkflowError, next_unit, submit_label

    def work(user, times: list[float]) -> None:
        refused: list[str] = []
        read = _reader(user, reading_s)
        unit = next_unit(user=user, criterion=criterion, stage=Stage.LABEL)
        while unit is not None:
            read()
            began = time.perf_counter()
            try:
                submit_label(
                    user=user,
                    unit_id=unit.pk,
                    criterion=criterion,
                    stage=Stage.LABEL,
                    value=unit.pk % 2,
                    request_key=uuid.uuid4().hex,
                )
            except WorkflowError as exc:
                refused.append(exc.code)
            unit = next_unit(user=user, criterion=criterion, stage=Stage.LABEL)
            times.append(1000 * (time.perf_counter() - began))
        if refused:
            print(f"  {user.username}: refused submits: {len(refused)} ({', '.join(sorted(set(refused)))})")

    return concurrently(work, users, threads=threads)


def pages_phase(*, campaign, criterion, users, threads: bool, reading_s: float = 0.0) -> list[float]:
    """Reviewers confirm every first label through the submit view (htmx), in-process."""
    import re

    from django.test import Client
    from django.urls import reverse

    page = reverse("annotation:annotate", args=[campaign.slug, criterion.name, "review"])
    submit = reverse("annotation:annotate_submit", args=[campaign.slug, criterion.name, "review"])
    unit_re = re.compile(r'id="work"[^>]*data-unit="(\d*)"')
    key_re = re.compile(r'name="request_key" value="([0-9a-f]+)"')

    def work(user, times: list[float]) -> None:
        client = Client()
        client.force_login(user)
        read = _reader(user, reading_s)
        html = client.get(page, HTTP_HX_REQUEST="true").content.decode()
        while (unit := unit_re.search(html).group(1)) != "":
            read()
            value = str(int(unit) % 2)  # the first label's value: a confirmation
            data = {"unit_id": unit, "value": value, "request_key": key_re.search(html).group(1)}
            began = time.perf_counter()
            response = client.post(submit, data, HTTP_HX_REQUEST="true")
            times.append(1000 * (time.perf_counter() - began))
            html = response.content.decode()

    return concurrently(work, users, threads=threads)


def report(name: str, times: list[float]) -> None:
    p50, p95 = np.percentile(times, [50, 95])
    verdict = "within" if p95 < TARGET_MS else "OVER"
    print(
        f"{name}: n={len(times)}  p50 {p50:.1f} ms  p95 {p95:.1f} ms  max {max(times):.1f} ms "
        f"({verdict} the {TARGET_MS:.0f} ms p95 target)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=200_000)
    parser.add_argument("--sample", type=int, default=2_000)
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (people)")
    parser.add_argument(
        "--threads", action="store_true", help="clients as threads of one process instead of processes"
    )
    parser.add_argument(
        "--reading-s",
        type=float,
        default=0.0,
        help="mean seconds each person reads a unit before labelling it (0: requests back to back)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-sampling", action="store_true", help="skip bench/sampling_bench.py")
    args = parser.parse_args()
    # Persistent connections, as a production server would keep them.
    os.environ.setdefault("DB_CONN_MAX_AGE", "600")

    with bench_database(DATABASE) as engine:
        from annotation.models import Label, Role, Stage, Unit
        from annotation.workflow import final_labels

        began = time.perf_counter()
        campaign, criterion = build(sentences=args.sentences, sample=args.sample, seed=args.seed)
        units = Unit.objects.filter(campaign=campaign, level="sentence").count()
        print(
            f"{engine}: built {units} sentence units, sample of {args.sample}, "
            f"in {time.perf_counter() - began:.1f} s; cores available: {len(os.sched_getaffinity(0))}"
        )
        settle(engine)
        # What a server process has loaded after its first label: the estimates hook imports the
        # judge and statistics stack lazily (seconds of CPU, eight processes at once on 2 cores).
        began = time.perf_counter()
        import evaluation.tasks  # noqa: F401

        print(f"  modules of the estimates hook imported first: {time.perf_counter() - began:.1f} s")
        annotators = people(campaign=campaign, role=Role.ANNOTATOR, count=args.clients)
        reviewers = people(campaign=campaign, role=Role.REVIEWER, count=args.clients)
        clients = f"{args.clients} " + ("threads in one process" if args.threads else "processes")
        clients += f", reading {args.reading_s:g} s a unit" if args.reading_s else ", back to back"

        began = time.perf_counter()
        report(
            f"submit_label + next_unit, {clients}",
            domain_phase(
                criterion=criterion, users=annotators, threads=args.threads, reading_s=args.reading_s
            ),
        )
        print(f"  first stage done in {time.perf_counter() - began:.1f} s")
        began = time.perf_counter()
        times = pages_phase(
            campaign=campaign,
            criterion=criterion,
            users=reviewers,
            threads=args.threads,
            reading_s=args.reading_s,
        )
        report(f"POST submit (review) rendering the next unit, {clients}", times)
        print(f"  review stage done in {time.perf_counter() - began:.1f} s")

        labels = Label.objects.filter(criterion=criterion)
        first, reviews = labels.filter(stage=Stage.LABEL).count(), labels.filter(stage=Stage.REVIEW).count()
        finals = len(final_labels(criterion=criterion))
        print(f"labels: {first} first, {reviews} reviews; final labels {finals} of {args.sample}")
    if not args.no_sampling:
        # Its own process: Django is configured once per process, for one database.
        print("sampling:", flush=True)
        subprocess.run([sys.executable, str(ROOT / "bench" / "sampling_bench.py")], check=True)


if __name__ == "__main__":
    main()
