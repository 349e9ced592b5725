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

``--minutes M`` runs the sustained measure instead: on the largest ``--queued`` size, the
``--clients`` people label back to back in the page's flow for M minutes, on one queue that is
never vacuumed by hand after it is built (autovacuum only, as a long day would leave it). Per
minute it prints the labels, their p50 and p95, the application's and PostgreSQL's CPU per label
(every connection's backend, read from /proc after each label), requests and queries per label,
the autovacuum and autoanalyze runs on the database's tables that ended in that minute and their
CPU per label (from the server's log, when readable: the bench sets
``log_autovacuum_min_duration`` to 0 on the churned tables; on a server whose autovacuum is off,
the bench applies autovacuum's rule itself at the end of each minute, the tables' own settings
included, and reads those runs' CPU), the open slots' dead rows and the load average at its end;
then the ratio of the last minute's PostgreSQL and application CPU per label to the first's
(target: PostgreSQL within 1.3).

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
from datetime import UTC
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
    return _pid_cpu_s(_backend_pid())


def _backend_pid() -> int:
    """The pid of the PostgreSQL backend serving this process's connection (opened if need be),
    from the driver: no query."""
    from django.db import connection

    connection.ensure_connection()
    return connection.connection.info.backend_pid


def _pid_cpu_s(pid: int) -> float:
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


def after_answer(*, ahead, unit, after) -> str:
    """What the page does with the answer to a label (annotate.js, ``labelAhead``), given the unit
    it held ahead and showed as the label was sent (``ahead``, falsy when it held none) and the
    answer's ``unit`` and ``after`` (its ``data-unit`` and ``data-after``): "follows", the answer
    is the unit after that one (which stays on screen; the answer is held ahead in its place);
    "ahead", the answer is that unit itself (it stays; the unit after it is asked for, ``?after=``);
    "answer", anything else (the answer shows; the unit after it is asked for). An answer that
    refuses the label always shows: the caller checks that first."""
    if ahead and after == ahead:
        return "follows"
    return "ahead" if ahead and unit == ahead else "answer"


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
        shows = after_answer(ahead=ahead, unit=self.unit(answer), after=after.group(1) if after else None)
        if shows == "follows":
            # The unit after the one now on screen, in the label's answer.
            self.shown, self.ahead = self.ahead, answer
            return True
        # The answer is the unit to show (the prefetched one, or another): then the unit after it.
        self.shown = self.ahead if shows == "ahead" else answer
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


# Sustained: the page's flow back to back for minutes on one queue, the figures minute by minute.

# The tables a label writes: rows deleted (open slots), updated (leases, counts) or added.
CHURNED = ("annotation_openslot", "annotation_assignment", "annotation_queuetally", "annotation_label")
PG_LOG = Path("/var/log/postgresql/postgresql-15-main.log")
_AUTOVACUUM_RE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) UTC .*automatic (vacuum|analyze) of table \"([^\"]+)\""
)
_USAGE_RE = re.compile(r"CPU: user: ([0-9.]+) s, system: ([0-9.]+) s")


def _sustained_client(campaign_slug, criterion_name, user, minutes, start, results) -> None:
    """One person labelling back to back through the page's flow (one request per label) for
    ``minutes``: for each label, when it ended (seconds from the common start), its time (ms), and
    the CPU (s) of the process and of its backend, the requests and queries it cost. A backend
    replaced meanwhile (a connection closed and opened again) is counted: its last label's share
    of the old backend's CPU is lost."""
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    page = reverse("annotation:annotate", args=[campaign_slug, criterion_name, "label"])
    submit = reverse("annotation:annotate_submit", args=[campaign_slug, criterion_name, "label"])
    rows: list[tuple] = []
    try:
        client = Client()
        client.force_login(user)
        tab = Browser(client, page=page, submit=submit, flow="one")
        start.wait()
        began = time.monotonic()
        deadline = began + 60 * minutes
        pid = _backend_pid()
        cpu, pg, requests, queries = _cpu_s(), _pid_cpu_s(pid), tab.requests, tab.queries
        reconnected = 0
        while time.monotonic() < deadline and tab.unit(tab.shown) != "":
            t0 = time.perf_counter()
            tab.label()
            ms = 1000 * (time.perf_counter() - t0)
            if (now_pid := _backend_pid()) != pid:
                reconnected, pid, pg = reconnected + 1, now_pid, 0.0
            now_cpu, now_pg = _cpu_s(), _pid_cpu_s(pid)
            rows.append(
                (
                    time.monotonic() - began,
                    ms,
                    now_cpu - cpu,
                    now_pg - pg,
                    tab.requests - requests,
                    tab.queries - queries,
                )
            )
            cpu, pg, requests, queries = now_cpu, now_pg, tab.requests, tab.queries
        results.put((rows, reconnected, None))
    except BaseException as exc:  # reported by the parent
        results.put((rows, 0, f"{exc.__class__.__name__}: {exc}"))
    finally:
        connection.close()


def _tables_now() -> dict[str, tuple[int, int, int]]:
    """Per churned table: dead rows, autovacuums and autoanalyzes so far (the statistics views)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, n_dead_tup, autovacuum_count, autoanalyze_count FROM pg_stat_user_tables"
            " WHERE relname = ANY(%s)",
            [list(CHURNED)],
        )
        return {name: (dead, vacuums, analyzes) for name, dead, vacuums, analyzes in cursor.fetchall()}


_AUTOVACUUM_RULE_SQL = (
    "SELECT c.relname, s.n_dead_tup, s.n_mod_since_analyze, s.n_ins_since_vacuum, GREATEST(c.reltuples, 0),"
    " c.reloptions FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid ORDER BY c.relname"
)


def _autovacuum_round() -> list[tuple[str, str, float]]:
    """Autovacuum's rule applied once to every table of the database, as its launcher applies it
    to a database each ``autovacuum_naptime`` on a server that runs it: VACUUM when the dead rows
    exceed the vacuum threshold plus its scale factor times the rows (or the rows inserted since
    the last vacuum, the insert threshold plus its factor times the rows), ANALYZE when the rows
    changed since the last analyze exceed its threshold plus its factor times the rows, each
    setting the table's own (its storage parameters) else the server's. The vacuum runs in this
    backend alone (``PARALLEL 0``, as autovacuum's do), with the table's ``vacuum_index_cleanup``.
    For a server whose autovacuum is off. Each run: the table, what ran, its CPU seconds."""
    from django.db import connection

    runs = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, setting FROM pg_settings WHERE name LIKE 'autovacuum_%%'")
        server = dict(cursor.fetchall())
        cursor.execute(_AUTOVACUUM_RULE_SQL)
        for table, dead, changed, inserted, rows, options in cursor.fetchall():
            own = dict(option.split("=", 1) for option in options or [])

            def limit(kind: str, rows: float = rows, own: dict = own) -> float:
                threshold, scale = f"autovacuum_{kind}_threshold", f"autovacuum_{kind}_scale_factor"
                return (
                    float(own.get(threshold, server[threshold])) + float(own.get(scale, server[scale])) * rows
                )

            vacuum = dead > limit("vacuum") or inserted > limit("vacuum_insert")
            analyze = changed > limit("analyze")
            if not (vacuum or analyze):
                continue
            what = (
                "ANALYZE"
                if not vacuum
                else "VACUUM (PARALLEL 0, ANALYZE)"
                if analyze
                else "VACUUM (PARALLEL 0)"
            )
            before = _pid_cpu_s(_backend_pid())
            cursor.execute(f'{what} "{table}"')
            runs.append((table, what, _pid_cpu_s(_backend_pid()) - before))
    return runs


def _autovacuum_cpu(*, database: str, text: str, began: float, minutes: int) -> list[list[float]]:
    """Per minute, the autovacuum and autoanalyze runs on this database's tables the server's log
    reports (``log_autovacuum_min_duration`` set to 0 on them) and their CPU seconds."""
    from datetime import datetime

    per_minute = [[0.0, 0.0] for _ in range(minutes)]
    minute = None
    for line in text.splitlines():
        if (found := _AUTOVACUUM_RE.match(line)) is not None:
            minute = None
            if found.group(3).startswith(f"{database}."):
                when = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
                n = int((when.timestamp() - began) // 60)
                minute = n if 0 <= n < minutes else None
        elif minute is not None and (usage := _USAGE_RE.search(line)) is not None:
            per_minute[minute][0] += 1
            per_minute[minute][1] += float(usage.group(1)) + float(usage.group(2))
            minute = None
    return per_minute


def sustained_phase(*, campaign, criterion, users, minutes: int, database: str) -> list[dict]:
    """Every user labels back to back for ``minutes`` (forked processes, the page's flow); the
    figures of each minute, with the load average, the churned tables' dead rows and the
    autovacuum runs at its end."""
    from django.db import connection, connections

    with connection.cursor() as cursor:
        cursor.execute("SHOW autovacuum")
        emulated = cursor.fetchone()[0] != "on"
        for table in CHURNED:  # the runs logged with their CPU, read back below
            cursor.execute(f"ALTER TABLE {table} SET (log_autovacuum_min_duration = 0)")
    log_from = PG_LOG.stat().st_size if os.access(PG_LOG, os.R_OK) and not emulated else None
    if emulated:
        print(
            "  the server's autovacuum is off: its rule is applied here at the end of each minute"
            " (autovacuum_naptime's default), the vacuums' CPU read from /proc",
            flush=True,
        )
    rounds: list[list[tuple[str, str, float]]] = []
    connections.close_all()
    context = multiprocessing.get_context("fork")
    start, results = context.Barrier(len(users) + 1), context.Queue()
    args = (campaign.slug, criterion.name)
    children = [
        context.Process(target=_sustained_client, args=(*args, user, minutes, start, results))
        for user in users
    ]
    for child in children:
        child.start()
    start.wait()
    began, began_wall = time.monotonic(), time.time()
    samples: list[tuple[float, dict]] = []

    def sample() -> None:  # at the end of each minute, in a thread of its own (its own connection)
        try:
            for n in range(1, minutes + 1):
                time.sleep(max(0.0, began + 60 * n - time.monotonic()))
                tables = _tables_now()
                samples.append((os.getloadavg()[0], tables))
                dead = tables.get("annotation_openslot", (0, 0, 0))[0]
                rounds.append(_autovacuum_round() if emulated else [])
                ran = ", ".join(f"{what} {table} {cpu:.2f} s" for table, what, cpu in rounds[-1]) or "none"
                print(
                    f"  minute {n}: load {os.getloadavg()[0]:.1f}, open slots' dead rows {dead:,};"
                    f" vacuums: {ran}",
                    flush=True,
                )
        finally:
            connections.close_all()

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    reports = [results.get() for _ in children]
    for child in children:
        child.join()
    sampler.join(timeout=90)
    errors = [r[-1] for r in reports if r[-1]]
    if errors:
        raise RuntimeError(f"{len(errors)} client(s) failed; first: {errors[0]}")
    reconnected = sum(r[1] for r in reports)
    autovacuum = [[float(len(runs)), sum(cpu for *_, cpu in runs)] for runs in rounds]
    autovacuum += [[0.0, 0.0] for _ in range(minutes - len(autovacuum))]
    if log_from is not None:
        with PG_LOG.open(errors="replace") as log:
            log.seek(log_from)
            autovacuum = _autovacuum_cpu(
                database=connection.settings_dict["NAME"], text=log.read(), began=began_wall, minutes=minutes
            )
    figures = []
    for n in range(minutes):
        rows = [row for r in reports for row in r[0] if n * 60 <= row[0] < (n + 1) * 60]
        if not rows:
            continue
        load, tables = samples[n] if n < len(samples) else (float("nan"), {})
        labels = len(rows)
        p50, p95 = np.percentile([row[1] for row in rows], [50, 95])
        figures.append(
            {
                "minute": n + 1,
                "labels": labels,
                "labels_per_s": labels / 60,
                "p50": p50,
                "p95": p95,
                "app_cpu_ms": 1000 * sum(row[2] for row in rows) / labels,
                "pg_cpu_ms": 1000 * sum(row[3] for row in rows) / labels,
                "requests": sum(row[4] for row in rows) / labels,
                "queries": sum(row[5] for row in rows) / labels,
                "autovacuum_runs": int(autovacuum[n][0]),
                "autovacuum_cpu_ms": 1000 * autovacuum[n][1] / labels,
                "dead_open_slots": tables.get("annotation_openslot", (0, 0, 0))[0],
                "dead_assignments": tables.get("annotation_assignment", (0, 0, 0))[0],
                "load": load,
                "reconnected": reconnected,
                "log_read": log_from is not None or emulated,
                "autovacuum_emulated": emulated,
            }
        )
    return figures


def sustained(*, size: int, clients: int, minutes: int, database: str) -> None:
    """Build a queue of ``size`` units in a fresh database (PostgreSQL), label it back to back for
    ``minutes`` with ``clients`` people, and print the figures of each minute and the ratios of the
    last minute to the first."""
    import json

    with bench_database(f"{database}_{size}") as engine:
        if engine != "postgresql":
            raise SystemExit("the sustained run measures PostgreSQL")
        from annotation.models import Role

        began = time.perf_counter()
        campaign, criterion = build_queued(size=size)
        print(f"{size:,} units queued in {time.perf_counter() - began:.1f} s", flush=True)
        settle(engine)
        import evaluation.tasks  # noqa: F401

        annotators = people(campaign=campaign, role=Role.ANNOTATOR, count=clients, prefix="sustained-")
        print(
            f"{clients} processes labelling back to back through the page's flow (one request per label)"
            f" for {minutes} minutes; cores available: {len(os.sched_getaffinity(0))};"
            f" load average at the start {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        figures = sustained_phase(
            campaign=campaign, criterion=criterion, users=annotators, minutes=minutes, database=database
        )
    header = (
        f"{'minute':>6} | {'labels':>6} | {'labels/s':>8} | {'p50':>8} | {'p95':>8} | {'app CPU/label':>13} |"
        f" {'PG CPU/label':>12} | {'requests':>8} | {'queries':>7} | {'autovacuum':>18} |"
        f" {'dead open slots':>15} | {'load':>5}"
    )
    print(header)
    print("-" * len(header))
    for row in figures:
        print(
            f"{row['minute']:>6} | {row['labels']:>6} | {row['labels_per_s']:>8.1f} | {row['p50']:>5.1f} ms |"
            f" {row['p95']:>5.1f} ms | {row['app_cpu_ms']:>10.2f} ms | {row['pg_cpu_ms']:>9.2f} ms |"
            f" {row['requests']:>8.2f} | {row['queries']:>7.1f} |"
            f" {row['autovacuum_runs']:>2} runs {row['autovacuum_cpu_ms']:>5.2f} ms |"
            f" {row['dead_open_slots']:>15,} | {row['load']:>5.1f}"
        )
    first, last = figures[0], figures[-1]
    total = sum(row["labels"] for row in figures)
    print(
        f"{total:,} labels in {len(figures)} minutes; last minute / first: PostgreSQL CPU per label"
        f" {last['pg_cpu_ms'] / first['pg_cpu_ms']:.2f} (target: within 1.3), app CPU per label"
        f" {last['app_cpu_ms'] / first['app_cpu_ms']:.2f}; highest minute / first, PostgreSQL:"
        f" {max(row['pg_cpu_ms'] for row in figures) / first['pg_cpu_ms']:.2f};"
        f" connections opened again: {first['reconnected']}"
        + ("" if first["log_read"] else f"; autovacuum not counted ({PG_LOG} unreadable)")
    )
    print(json.dumps({"size": size, "clients": clients, "minutes": figures}), flush=True)


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
        "--minutes",
        type=int,
        help="sustained run: --clients people label the largest --queued size back to back for this"
        " many minutes, the page's flow; figures per minute",
    )
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
    if args.minutes:
        # Kept for the whole run: every backend's CPU is read until the end.
        os.environ["DB_CONN_MAX_AGE"] = str(60 * args.minutes + 3600)
        sustained(size=max(args.queued), clients=args.clients, minutes=args.minutes, database=args.database)
        return
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
