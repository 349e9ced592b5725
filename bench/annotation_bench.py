"""Time labelling under 8 concurrent annotators at several queue sizes (PostgreSQL).

Run with ``.venv/bin/python bench/annotation_bench.py [--queued 2000,50000,500000] [--clients 8]
[--labels 40] [--reading-labels 8] [--reading-s 2] [--flow both|one|two] [--sqlite]
[--database NAME]``. For each size, in a database of its own (``<NAME>_<size>``, by default
``attest_bench_annotation_<size>`` on 127.0.0.1:5432, user postgres, dropped after; ``--sqlite``:
a SQLite file, the queue written by the ORM), it writes a campaign whose veracity sample holds
that many sentence units, all queued (set-based SQL: answers of five sentences, three cited
chunks each, four themes), vacuums and checkpoints, then runs two phases with ``--clients``
forked processes, each one person with its own database connection, labelling through the page
as its script does (:class:`Browser`, through the whole middleware stack): every request a label
costs is sent and counted, with the queries it ran.

1. back to back: each person labels ``--labels`` units, sending the next label as soon as the
   previous one is answered (the machine saturated);
2. reading: each labels ``--reading-labels`` units after reading each for ``--reading-s`` seconds
   on average (uniform between half and one and a half times it): people at work.

``--flow``: ``one``, the page's flow (the label's POST names the unit the page shows meanwhile,
its prefetched one, and is answered with the unit after it: one request per label); ``two``, the
flow before it (the POST answered with the unit already shown, then a GET ``?after=`` of the
following one); ``both`` (the default) runs each with people of its own on the same queue and
prints the ratios of one to two.

Per size and flow it prints labels per second back to back, the label's p50 and p95 (all its
requests), the application's CPU per label (the clients' own CPU time: the test client and the
whole server side; SQLite's work included on SQLite) and PostgreSQL's (the CPU time of the
backends serving them, from /proc), requests and queries per label, the p95 with people reading,
and how many people were told "nothing left" (always 0 here: every queue is far from empty), then
the ratio of PostgreSQL CPU per label between the largest and the smallest size. Targets: that
ratio under 1.5; with people reading, p95 under 50 ms at every size; back to back, p95 under
120 ms at 2,000 units on 2 cores.

``--two-stages`` runs the older measure instead: a ``--sample`` of ``--sentences`` units labelled
through the domain functions then reviewed through the page, and ``bench/sampling_bench.py``.
It asserts nothing: timings belong here, never in tests.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import re
import resource
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


def bench_campaign(rng: random.Random, *, questions: int):
    """The bench's campaign, its ``CHUNKS`` source chunks and ``questions`` questions (themes in
    turn)."""
    from annotation.corpus.campaigns import get_or_create_campaign
    from annotation.corpus.sources import chunk_text_hash
    from annotation.models import Question, SourceChunk

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
    asked = Question.objects.bulk_create(
        [
            Question(
                campaign=campaign,
                external_id=f"Q{q}",
                text=f"Question {q} sur {THEMES[q % len(THEMES)].lower()} ?",
                theme=THEMES[q % len(THEMES)],
                difficulty="simple",
            )
            for q in range(questions)
        ],
        batch_size=5000,
    )
    return campaign, chunks, asked


def set_queue(criterion) -> None:
    """Set the criterion's stored work queue from the sample items just written in bulk, as a
    draw does (nothing to do for code without a stored queue: the bench also measures it)."""
    try:
        from annotation.workflow import open_slots
    except ImportError:
        return
    open_slots.rebuild(criterion=criterion)


def build(*, sentences: int, sample: int, seed: int):
    """The campaign, its veracity criterion and a sample of ``sample`` sentence units."""
    from annotation.models import (
        Answer,
        AnswerSource,
        Criterion,
        Level,
        Sample,
        SampleItem,
        Sentence,
        Unit,
    )

    rng = random.Random(seed)
    n_answers = sentences // SENTENCES_PER_ANSWER
    n_questions = max(1, n_answers // REPETITIONS)
    campaign, chunks, questions = bench_campaign(rng, questions=n_questions)
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
    set_queue(criterion)
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


def people(*, campaign, role: str, count: int, prefix: str = "") -> list:
    from django.contrib.auth import get_user_model

    from annotation.models import Membership

    users = []
    for n in range(count):
        user = get_user_model().objects.create_user(username=f"{prefix}{role}-{n}", password=None)
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


# Queue sizes: one database per size, built in SQL, labelled through the page's POST.

QUEUED = (2_000, 50_000, 500_000)


def build_queued(*, size: int):
    """A campaign whose veracity sample holds ``size`` sentence units (all of them queued), written
    with set-based SQL (a few seconds at 500,000): answers of five sentences citing three of
    2,000 chunks, four themes, clusters of 50."""
    from django.db import connection

    from annotation.models import Criterion, Sample

    rng = random.Random(size)
    answers = size // SENTENCES_PER_ANSWER
    questions = max(1, answers // REPETITIONS)
    campaign, _, _ = bench_campaign(rng, questions=questions)
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="veracity")
    sample = Sample.objects.create(
        campaign=campaign, criterion=criterion, status=Sample.Status.DONE, budget=size
    )
    words = " ".join(WORDS)
    params = {
        "campaign": campaign.pk,
        "answers": answers,
        "questions": questions,
        "sample": sample.pk,
        "sentences": SENTENCES_PER_ANSWER,
        "chunks": CHUNKS,
    }
    steps = [
        # Answers: question n % questions, repetition n // questions + 1.
        "INSERT INTO annotation_answer (campaign_id, question_id, external_id, repetition, text, language)"
        " SELECT %(campaign)s, q.id, 'A' || n, n / %(questions)s + 1, %(text)s, 'fr'"
        " FROM generate_series(0, %(answers)s - 1) n"
        " JOIN annotation_question q ON q.campaign_id = %(campaign)s"
        " AND q.external_id = 'Q' || (n %% %(questions)s)",
        "INSERT INTO annotation_answersource (answer_id, chunk_id, rank)"
        " SELECT a.id, c.id, r FROM annotation_answer a CROSS JOIN generate_series(1, 3) r"
        " JOIN annotation_sourcechunk c ON c.campaign_id = %(campaign)s"
        " AND c.external_id = 'c' || lpad(((a.id * 7 + r * 613) %% %(chunks)s)::text, 5, '0')"
        " WHERE a.campaign_id = %(campaign)s",
        "INSERT INTO annotation_sentence (answer_id, position, text, paragraph, paragraph_index, cited_ids,"
        " citations_ok) SELECT a.id, p, %(sentence)s || ' ' || a.id || '-' || p || ' [^c00001^].', a.text, 0,"
        " '[\"c00001\"]'::jsonb, true FROM annotation_answer a"
        " CROSS JOIN generate_series(0, %(sentences)s - 1) p"
        " WHERE a.campaign_id = %(campaign)s",
        "INSERT INTO annotation_unit (campaign_id, level, answer_id, sentence_id, theme, difficulty)"
        " SELECT %(campaign)s, 'sentence', s.answer_id, s.id, q.theme, 'simple' FROM annotation_sentence s"
        " JOIN annotation_answer a ON a.id = s.answer_id JOIN annotation_question q ON q.id = a.question_id"
        " WHERE a.campaign_id = %(campaign)s",
        "INSERT INTO annotation_sampleitem (sample_id, unit_id, theme, cluster, cluster_size,"
        " inclusion_probability, rank) SELECT %(sample)s, u.id, u.theme,"
        " (row_number() OVER (PARTITION BY u.theme ORDER BY u.id) - 1) / 3, 50, 0.06,"
        " (row_number() OVER (PARTITION BY u.theme ORDER BY u.id) - 1) %% 3"
        " FROM annotation_unit u WHERE u.campaign_id = %(campaign)s AND u.level = 'sentence'",
    ]
    with connection.cursor() as cursor:
        for step in steps:
            cursor.execute(
                step,
                {**params, "text": words, "sentence": " ".join(WORDS[:14]).capitalize()},
            )
    set_queue(criterion)
    return campaign, criterion


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _backend_cpu_s() -> float:
    """CPU seconds the PostgreSQL backend serving this process's connection has used so far (0 on
    SQLite, which runs in the process itself: its CPU is the application's)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return 0.0
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The browser's flows (annotate.js), one label each: "one", the label's POST names the unit the
# page shows meanwhile (prefetched) and its answer is the unit after that one; "two", the flow
# before that, the POST answered with the unit the page already shows, then a GET ?after= for
# the following one.
FLOWS = ("two", "one")
UNIT_RE = re.compile(r'id="work"[^>]*data-unit="(\d*)"')
AFTER_RE = re.compile(r'id="work"[^>]*data-after="(\d*)"')
KEY_RE = re.compile(r'name="request_key" value="([0-9a-f]+)"')


class Browser:
    """One person's tab on the label page, as annotate.js drives it: the unit on screen, the
    unit after it (prefetched), and every request it sends counted (with the queries they ran)."""

    def __init__(self, client, *, page: str, submit: str, flow: str) -> None:
        from django.db import connection

        self.client, self.page, self.submit, self.flow = client, page, submit, flow
        self.requests = self.queries = 0
        connection.execute_wrappers.append(self._count)
        self.shown = self._get(page)
        self.ahead = self._get(f"{page}?after={self.unit(self.shown)}") if self.unit(self.shown) else ""

    def _count(self, execute, sql, params, many, context):
        self.queries += 1
        return execute(sql, params, many, context)

    def _get(self, address: str) -> str:
        self.requests += 1
        return self.client.get(address, HTTP_HX_REQUEST="true").content.decode()

    @staticmethod
    def unit(html: str) -> str:
        found = UNIT_RE.search(html)
        return found.group(1) if found else ""

    def label(self) -> bool:
        """Label the unit on screen (the prefetched one shows at once); False when none is left."""
        unit = self.unit(self.shown)
        if unit == "":
            return False
        data = {
            "unit_id": unit,
            "value": str(int(unit) % 2),
            "request_key": KEY_RE.search(self.shown).group(1),
        }
        ahead = self.unit(self.ahead)
        if ahead and self.flow == "one":
            data["shown"] = ahead
        self.requests += 1
        answer = self.client.post(self.submit, data, HTTP_HX_REQUEST="true").content.decode()
        after = AFTER_RE.search(answer)
        if ahead and after and after.group(1) == ahead:
            # The unit after the one now on screen, in the label's answer.
            self.shown, self.ahead = self.ahead, answer
            return True
        # The answer is the unit to show (the prefetched one, or another): then the unit after it.
        self.shown = answer if self.unit(answer) != ahead or not ahead else self.ahead
        self.ahead = self._get(f"{self.page}?after={self.unit(self.shown)}") if self.unit(self.shown) else ""
        return True


def _labelling_client(campaign_slug, criterion_name, flow, user, labels, reading_s, start, results) -> None:
    """One person labelling ``labels`` units through the page in the browser's ``flow``: the
    label's times (its POST, and the GET that follows it in the two-request flow), the span, the
    requests and queries, its own and its backend's CPU."""
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    page = reverse("annotation:annotate", args=[campaign_slug, criterion_name, "label"])
    submit = reverse("annotation:annotate_submit", args=[campaign_slug, criterion_name, "label"])
    times: list[float] = []
    try:
        client = Client()
        client.force_login(user)
        read = _reader(user, reading_s)
        tab = Browser(client, page=page, submit=submit, flow=flow)
        start.wait()
        began, cpu, pg = time.monotonic(), _cpu_s(), _backend_cpu_s()
        requests, queries = tab.requests, tab.queries
        told_nothing_left = 0
        for _ in range(labels):
            if tab.unit(tab.shown) == "":
                told_nothing_left += 1
                break
            read()
            t0 = time.perf_counter()
            tab.label()
            times.append(1000 * (time.perf_counter() - t0))
        ended = time.monotonic()
        counted = (tab.requests - requests, tab.queries - queries)
        cpu, pg = _cpu_s() - cpu, _backend_cpu_s() - pg
        results.put((times, began, ended, cpu, pg, told_nothing_left, *counted, None))
    except BaseException as exc:  # reported by the parent
        results.put((times, 0.0, 0.0, 0.0, 0.0, 0, 0, 0, f"{exc.__class__.__name__}: {exc}"))
    finally:
        connection.close()


def labelling_phase(*, campaign, criterion, users, labels: int, reading_s: float, flow: str) -> dict:
    """Every user labels ``labels`` units at once (forked processes) in ``flow``; the phase's figures."""
    from django.db import connections

    connections.close_all()
    context = multiprocessing.get_context("fork")
    start, results = context.Barrier(len(users)), context.Queue()
    args = (campaign.slug, criterion.name, flow)
    children = [
        context.Process(target=_labelling_client, args=(*args, user, labels, reading_s, start, results))
        for user in users
    ]
    for child in children:
        child.start()
    reports = [results.get() for _ in children]
    for child in children:
        child.join()
    errors = [r[-1] for r in reports if r[-1]]
    if errors:
        raise RuntimeError(f"{len(errors)} client(s) failed; first: {errors[0]}")
    times = [t for r in reports for t in r[0]]
    span = max(r[2] for r in reports) - min(r[1] for r in reports)
    p50, p95 = np.percentile(times, [50, 95])
    return {
        "labels": len(times),
        "labels_per_s": len(times) / span,
        "p50": p50,
        "p95": p95,
        "app_cpu_ms": 1000 * sum(r[3] for r in reports) / len(times),
        "pg_cpu_ms": 1000 * sum(r[4] for r in reports) / len(times),
        "told_nothing_left": sum(r[5] for r in reports),
        "requests": sum(r[6] for r in reports) / len(times),
        "queries": sum(r[7] for r in reports) / len(times),
    }


def one_size(
    *,
    size: int,
    clients: int,
    labels: int,
    reading_labels: int,
    reading_s: float,
    flows: tuple[str, ...],
    database: str,
    sqlite: bool,
) -> None:
    """Build a queue of ``size`` units in a fresh database, label it in each of ``flows`` (new people
    for each) and print the figures as one JSON line."""
    import json

    with bench_database(f"{database}_{size}", sqlite=sqlite) as engine:
        from annotation.models import Role

        began = time.perf_counter()
        if engine == "postgresql":
            campaign, criterion = build_queued(size=size)
        else:  # the set-based SQL is PostgreSQL's: the ORM writes the same queue, more slowly
            campaign, criterion = build(sentences=size, sample=size, seed=size)
        built = time.perf_counter() - began
        settle(engine)
        import evaluation.tasks  # noqa: F401

        row: dict = {"size": size, "built_s": built, "engine": engine}
        for flow in flows:
            annotators = people(campaign=campaign, role=Role.ANNOTATOR, count=clients, prefix=f"{flow}-")
            back = labelling_phase(
                campaign=campaign,
                criterion=criterion,
                users=annotators,
                labels=labels,
                reading_s=0,
                flow=flow,
            )
            readers = people(campaign=campaign, role=Role.ANNOTATOR, count=clients, prefix=f"{flow}-reading-")
            reading = labelling_phase(
                campaign=campaign,
                criterion=criterion,
                users=readers,
                labels=reading_labels,
                reading_s=reading_s,
                flow=flow,
            )
            row[flow] = {"back": back, "reading": reading}
        print(json.dumps(row), flush=True)


FLOW_NAMES = {"two": "POST + GET", "one": "POST only"}


def sizes_table(args) -> None:
    """Run :func:`one_size` for each size in its own process (Django is set up once per process,
    for one database) and print the table, with the ratios of the one-request flow to the
    two-request flow when both ran."""
    import json

    print(
        f"{args.clients} processes labelling through the page as the browser does (the label's POST, and"
        f" in the older flow the GET of the unit after the one shown); back to back {args.labels} labels"
        f" each, then {args.reading_labels} each reading {args.reading_s:g} s a unit; cores available:"
        f" {len(os.sched_getaffinity(0))}"
    )
    header = (
        f"{'queued':>9} | {'flow':<10} | {'labels/s':>8} | {'p50':>8} | {'p95':>8} | {'app CPU/label':>13} |"
        f" {'PG CPU/label':>12} | {'requests':>8} | {'queries':>7} | {'reading p95':>11} | nothing left"
    )
    print(header)
    print("-" * len(header))
    rows = {}
    for size in args.queued:
        command = [
            sys.executable,
            __file__,
            "--one-size",
            str(size),
            "--clients",
            str(args.clients),
            "--labels",
            str(args.labels),
            "--reading-labels",
            str(args.reading_labels),
            "--reading-s",
            str(args.reading_s),
            "--flow",
            args.flow,
            "--database",
            args.database,
        ] + (["--sqlite"] if args.sqlite else [])
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        row = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
        rows[size] = row
        for flow in (f for f in FLOWS if f in row):
            back, reading = row[flow]["back"], row[flow]["reading"]
            print(
                f"{size:>9,} | {FLOW_NAMES[flow]:<10} | {back['labels_per_s']:>8.1f} |"
                f" {back['p50']:>5.1f} ms | {back['p95']:>5.1f} ms | {back['app_cpu_ms']:>10.1f} ms |"
                f" {back['pg_cpu_ms']:>9.1f} ms |"
                f" {back['requests']:>8.2f} | {back['queries']:>7.1f} | {reading['p95']:>8.1f} ms |"
                f" {back['told_nothing_left'] + reading['told_nothing_left']}",
                flush=True,
            )
        if all(flow in row for flow in FLOWS):
            one, two = row["one"]["back"], row["two"]["back"]
            database = (
                f"PostgreSQL CPU per label {one['pg_cpu_ms'] / two['pg_cpu_ms']:.2f}"
                if two["pg_cpu_ms"]
                else "SQLite's CPU counted in the application's"
            )
            print(
                f"{'':>9}   POST only / POST + GET ({row['engine']}): app CPU per label"
                f" {one['app_cpu_ms'] / two['app_cpu_ms']:.2f}, {database},"
                f" requests {one['requests'] / two['requests']:.2f},"
                f" queries {one['queries'] / two['queries']:.2f}",
                flush=True,
            )
    smallest, largest = min(rows), max(rows)
    flow = FLOWS[-1] if FLOWS[-1] in rows[smallest] else FLOWS[0]
    if smallest != largest and rows[smallest][flow]["back"]["pg_cpu_ms"]:
        ratio = rows[largest][flow]["back"]["pg_cpu_ms"] / rows[smallest][flow]["back"]["pg_cpu_ms"]
        print(
            f"PostgreSQL CPU per label at {largest:,} / at {smallest:,} queued ({FLOW_NAMES[flow]}):"
            f" {ratio:.2f} (target: under 1.5)"
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
    parser.add_argument(
        "--queued",
        type=lambda text: [int(n) for n in text.split(",")],
        default=list(QUEUED),
        help="queue sizes to measure, comma-separated (default 2000,50000,500000)",
    )
    parser.add_argument("--labels", type=int, default=40, help="labels per person, back to back")
    parser.add_argument("--reading-labels", type=int, default=8, help="labels per person while reading")
    parser.add_argument("--one-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--flow",
        choices=("both", *FLOWS),
        default="both",
        help="the browser's flow: one (the label's POST answers with the unit after the one shown),"
        " two (the older flow: the POST, then a GET of that unit), or both, compared (default)",
    )
    parser.add_argument(
        "--database",
        default=DATABASE,
        help=f"name of the throw-away databases, the size appended (default {DATABASE})",
    )
    parser.add_argument(
        "--sqlite", action="store_true", help="a SQLite file instead of PostgreSQL (the ORM builds the queue)"
    )
    parser.add_argument(
        "--two-stages",
        action="store_true",
        help="the older run: label then review a sample of --sample units among --sentences",
    )
    args = parser.parse_args()
    # Persistent connections, as a production server would keep them.
    os.environ.setdefault("DB_CONN_MAX_AGE", "600")
    if args.one_size:
        one_size(
            size=args.one_size,
            clients=args.clients,
            labels=args.labels,
            reading_labels=args.reading_labels,
            reading_s=args.reading_s,
            flows=FLOWS if args.flow == "both" else (args.flow,),
            database=args.database,
            sqlite=args.sqlite,
        )
        return
    if not args.two_stages:
        if not args.reading_s:
            args.reading_s = 2.0
        sizes_table(args)
        return

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
