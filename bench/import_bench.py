"""Import speed and memory: synthetic answers (about 10 sentences and 15 sources each) into a
fresh database.

    python bench/import_bench.py [--answers 2000] [--memory-answers 15000] [--seed 0]

The database: DATABASE_URL when it is set (used as it is: migrated, never dropped); otherwise a
PostgreSQL database ``attest_bench`` on 127.0.0.1:5432 (user postgres, trust auth) that this
script drops and creates before the run and drops after it; and when PostgreSQL cannot be
reached, a SQLite file in a temporary directory (the script says so).

Prints answers/s for the import (reading, checking, splitting, language detection and writing,
in one transaction), its peak memory, and the CPU time per answer of its parts (the importing
process, the PostgreSQL backend when it is local, the text work, timed alone since it runs in
worker processes, and on a big file the part of pass 1 its worker processes do, read from /proc
in a pass 1 run apart); from those, the bound (all the machine's cores busy with that CPU time and
nothing else) and the import's share of it (answers/s over the bound); on Linux also the text
work as the worker processes spent it during the import (read from /proc) and the share with
that CPU time in the bound; then the load average before and after and how long the machine's
CPUs stayed idle during the import: the bound assumes the cores free, so on a loaded machine the
share tells what the others took as much as how well the import overlaps its parts. Then
imports a bigger file (``--memory-answers``, about 10 kB per answer) to show how peak memory
follows file size, and sums up: file size, answers/s and peak memory above the mark of each
import, and the memory growth per MB of file growth between the two; then times the automatic
metrics when they exist (``--metrics-answers 0`` skips them).

Peak memory is the importing process's ``ru_maxrss`` (resource.getrusage: the most resident
memory it ever had, Django and the modules included, worker processes not): each import runs in a
fresh child process, so the figure is that import's alone; the line also gives the resident
memory the child had before importing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DB = "attest_bench"
PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres connect_timeout=3"
THEMES = ["Finance", "RH", "IT", "Juridique", "Immobilier"]
DIFFICULTIES = ["simple", "intermediate", "hard", "inappropriate"]
WORDS = str.split(
    "le chiffre d'affaires progresse nettement sur l'exercice selon le rapport de gestion la société "
    "a signé un bail commercial pour ses bureaux parisiens les effectifs comptent plusieurs cadres "
    "le contrat prévoit une clause de changement de contrôle la dette financière nette reste stable "
    "le litige prud'homal est provisionné dans les comptes consolidés les serveurs sont hébergés en "
    "France et la politique de sauvegarde est documentée par la direction des systèmes d'information"
)


def _sentence(rng: random.Random, cited: list[str]) -> str:
    words = rng.sample(WORDS, rng.randint(9, 18))
    text = " ".join(words).capitalize()
    marks = "".join(f"[^{cid}^]" for cid in cited)
    return f"{text} {marks}." if marks else f"{text}."


def synthetic_records(*, answers: int, seed: int = 0, repetitions: int = 20) -> Iterator[dict]:
    """``answers`` records, made one at a time: questions asked ``repetitions`` times, 15 sources
    drawn per answer from the question's pool of 40 chunks, about 10 sentences in 3 paragraphs,
    and relevance labels (human and judge) on one answer in ten."""
    rng = random.Random(seed)
    pools: dict[int, list[dict]] = {}
    questions: dict[int, str] = {}
    for index in range(answers):
        q = index // repetitions
        if q not in pools:
            pools.pop(q - 1, None)  # a question's answers are consecutive: its pool is done
            questions[q] = f"Question {q} : que disent les documents sur {rng.choice(WORDS)} ?"
            pools[q] = [
                {
                    "id": f"q{q}c{k}-{rng.getrandbits(24):06x}",
                    "title": f"Data room/{THEMES[q % len(THEMES)]}/document-{q}-{k}.pdf",
                    "page": rng.randint(1, 120),
                    "text": " ".join(rng.choices(WORDS, k=70)),
                }
                for k in range(40)
            ]
        sources = rng.sample(pools[q], 15)
        ids = [source["id"] for source in sources]
        paragraphs = []
        for size in (3, 4, 3):
            sentences = []
            for _ in range(size):
                roll = rng.random()
                cited = [] if roll < 0.2 else rng.sample(ids, 2 if roll > 0.8 else 1)
                if rng.random() < 0.03:
                    cited.append(f"x{rng.getrandbits(24):06x}")  # a corrupted citation
                sentences.append(_sentence(rng, cited))
            paragraphs.append(" ".join(sentences))
        record = {
            "question_id": f"Q{q:05d}",
            "question": questions[q],
            "theme": THEMES[q % len(THEMES)],
            "difficulty": DIFFICULTIES[q % len(DIFFICULTIES)],
            "answer": "\n\n".join(paragraphs),
            "sources": sources,
        }
        if index % 10 == 0:
            record["labels"] = {"relevance": {"human": rng.randint(0, 1), "llm": rng.randint(0, 1)}}
        yield record


def write_jsonl(path: Path, records: Iterable[dict]) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def _pg_admin(statements: list[str]) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as connection:
        for statement in statements:
            connection.execute(statement)


def choose_database(tmp: Path) -> tuple[str, bool]:
    """The DATABASE_URL to use and whether this script created it (and so drops it)."""
    if os.environ.get("DATABASE_URL"):
        return os.environ["DATABASE_URL"], False
    try:
        _pg_admin([f"DROP DATABASE IF EXISTS {BENCH_DB}", f"CREATE DATABASE {BENCH_DB}"])
    except Exception as exc:  # any failure to reach PostgreSQL: fall back, and say so
        print(f"PostgreSQL unreachable on 127.0.0.1:5432 ({exc.__class__.__name__}); using SQLite instead")
        return f"sqlite:///{tmp / 'bench.sqlite3'}", False
    return f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}", True


def _backend_cpu_s() -> float | None:
    """CPU seconds used so far by this connection's PostgreSQL backend, when it runs on this
    machine (read from /proc); None otherwise."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    return _process_cpu_s(pid)


def _process_cpu_s(pid: int) -> float | None:
    """CPU seconds used so far by process ``pid`` (from /proc); None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> set[int]:
    """The processes ``pid`` started, and theirs (from /proc: each thread's children)."""
    found: set[int] = set()
    stack = [pid]
    while stack:
        parent = stack.pop()
        try:
            threads = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for thread in threads:
            try:
                children = Path(f"/proc/{parent}/task/{thread}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.add(child)
                    stack.append(child)
    return found


class _WorkersCpu(threading.Thread):
    """The CPU seconds of this process's descendants (the import's worker processes and their
    forkserver), read every ``interval`` seconds until ``stop``: each one's last reading, so
    what a worker spends between its last reading and its end is missed (at most ``interval``).
    ``own`` is this thread's own CPU time, part of the process's."""

    def __init__(self, interval: float = 0.1) -> None:
        super().__init__(name="bench-workers-cpu", daemon=True)
        self.interval = interval
        self.seen: dict[int, float] = {}
        self.own = 0.0
        self._done = threading.Event()

    def run(self) -> None:
        started = time.thread_time()
        while not self._done.is_set():
            for pid in _descendants(os.getpid()):
                cpu = _process_cpu_s(pid)
                if cpu is not None:
                    self.seen[pid] = cpu
            self._done.wait(self.interval)
        self.own = time.thread_time() - started

    def stop(self) -> float:
        """Stop reading and return the CPU seconds of every descendant seen."""
        self._done.set()
        self.join()
        return sum(self.seen.values())


def _watch_workers() -> _WorkersCpu | None:
    """A ``_WorkersCpu`` started, on Linux (None elsewhere: no /proc to read)."""
    if sys.platform != "linux":
        return None
    workers = _WorkersCpu()
    workers.start()
    return workers


def _alone_cpu_s(path: Path) -> tuple[float, float]:
    """CPU seconds of the text work alone (language and sentences of every answer), in this
    process, with nothing beside it: the bound's figure. During an import it runs in worker
    processes sharing the cores, whose CPU ``_WorkersCpu`` reads while they run. And the CPU
    seconds pass 1 spends in its worker processes on a big file (read in parts), read apart
    the same way: during an import, the workers of both passes are the importing process's."""
    from annotation.ingest import check_file
    from annotation.ingest.analysis import TextJob, analyse
    from annotation.ingest.load import language_candidates
    from annotation.models import Campaign

    pattern = Campaign._meta.get_field("citation_pattern").default
    workers = _watch_workers()
    checked = check_file(path=path, max_bytes=path.stat().st_size)
    pass_one = workers.stop() if workers is not None else 0.0
    records = checked.records()
    jobs = [TextJob(answer=record.answer) for record in records]
    started = time.process_time()
    for job in jobs:
        analyse(job, citation_pattern=pattern, candidates=language_candidates())
    return time.process_time() - started, pass_one


def _machine_ticks() -> tuple[int, int] | None:
    """(idle, all) clock ticks of every CPU of the machine so far, from /proc/stat; None without it."""
    try:
        fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[3] + fields[4], sum(fields[:8])  # idle and iowait; user to steal


def _resident_mb() -> float:
    """This process's resident memory now (VmRSS), in MB; its peak so far where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return _peak_mb()


def _peak_mb() -> float:
    # ru_maxrss is in kilobytes on Linux (bytes on macOS).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def bench_import(*, path: Path, campaign_name: str, answers: int, cpu: bool = False) -> tuple[float, float]:
    """Import ``path`` and print answers/s; return the seconds it took and this process's peak
    memory in MB right after it. With ``cpu``, also the CPU time per answer of the importing
    process, of the PostgreSQL backend and of the text work."""
    from django.conf import settings

    from evaluation.imports.campaign_file import import_file

    # The bigger files of the memory run pass the default IMPORT_MAX_BYTES of a server.
    settings.IMPORT_MAX_BYTES = max(settings.IMPORT_MAX_BYTES, path.stat().st_size)

    def progress(done: int, total: int) -> None:
        sys.stderr.write(f"\r  importing: {done}/{total} answers")
        if done == total:
            sys.stderr.write("\n")

    backend_before = _backend_cpu_s() if cpu else None
    workers = _watch_workers() if cpu else None
    load_before = os.getloadavg()[0]
    ticks_before = _machine_ticks()
    cpu_before = time.process_time()
    started = time.perf_counter()
    summary = import_file(path=path, campaign_name=campaign_name, progress=progress)
    seconds = time.perf_counter() - started
    own = time.process_time() - cpu_before
    in_workers = None
    if workers is not None:
        in_workers = workers.stop()
        own -= workers.own  # the reading's own CPU, not the import's
    ticks_after = _machine_ticks()
    load_after = os.getloadavg()[0]
    peak = _peak_mb()  # before the CPU parts below read the file again
    print(
        f"import: {answers} answers, {summary.sentences} sentences, {summary.chunks_created} chunks "
        f"in {seconds:.2f} s = {answers / seconds:.0f} answers/s"
    )
    if cpu:
        backend_after = _backend_cpu_s()
        analysis, pass_one = _alone_cpu_s(path)
        parts = [("importing process", own), ("text work (languages, sentences)", analysis)]
        if pass_one:
            parts.append(("pass 1 in worker processes", pass_one))
        if backend_before is not None and backend_after is not None:
            parts.append(("PostgreSQL backend", backend_after - backend_before))
        total = sum(value for _, value in parts)
        cores = os.cpu_count() or 1
        print(
            "CPU per answer: " + ", ".join(f"{name} {value / answers * 1000:.2f} ms" for name, value in parts)
        )
        bound = cores * answers / total
        print(
            f"  in all {total / answers * 1000:.2f} ms: {cores} cores at full use would import at most "
            f"{bound:.0f} answers/s (the bound)"
        )
        print(
            f"share of the bound: {answers / seconds / bound:.2f} ({answers / seconds:.0f} of {bound:.0f} "
            f"answers/s), load average {load_before:.2f} before the import and {load_after:.2f} after"
        )
        if in_workers:
            # The text work as the worker processes spent it, sharing the cores with the rest;
            # pass 1's worker processes, which ran alone, as they spend it alone.
            in_workers -= pass_one
            shared = total - analysis + in_workers
            print(
                f"  text work in the worker processes: {in_workers / answers * 1000:.2f} ms per answer, "
                f"{in_workers / analysis - 1:+.0%} on the same work alone; with it, the bound is "
                f"{cores * answers / shared:.0f} answers/s and the share "
                f"{answers / seconds / (cores * answers / shared):.2f}"
            )
        if ticks_before is not None and ticks_after is not None:
            idle, every = (after - before for after, before in zip(ticks_after, ticks_before, strict=True))
            print(
                f"  the machine's CPUs were idle {idle / every:.0%} of the import "
                "(busy and a low share: other processes had them)"
            )
    return seconds, peak


# ---------------------------------------------------------------------------------------------
# Automatic metrics over a large corpus (about 200,000 sentences).


def bench_metrics(*, tmp: Path, answers: int, seed: int) -> None:
    """Time ``evaluation.measures.automatic.compute_metrics`` over ``answers`` synthetic answers (~10
    sentences each); skipped, saying so, while that function does not exist."""
    try:
        from evaluation.measures.automatic import compute_metrics
    except ImportError:
        print("metrics: skipped (evaluation.measures.automatic.compute_metrics is not available)")
        return
    from annotation.models import Campaign, Sentence

    name = f"metrics bench {seed}"
    path = write_jsonl(tmp / "metrics.jsonl", synthetic_records(answers=answers, seed=seed + 1))
    bench_import(path=path, campaign_name=name, answers=answers)
    campaign = Campaign.objects.get(name=name)
    sentences = Sentence.objects.filter(answer__campaign=campaign).count()
    started = time.perf_counter()
    compute_metrics(campaign=campaign)
    print(f"metrics: {sentences} sentences in {time.perf_counter() - started:.2f} s")


# ---------------------------------------------------------------------------------------------


def bench_import_in_child(*, path: Path, campaign_name: str, answers: int, cpu: bool) -> dict:
    """Run ``bench_import`` in a fresh Python process, print its lines and return its figures:
    file size (MB), answers/s and peak memory above the child's mark before importing (MB)."""
    result = path.with_suffix(".result.json")
    command = [sys.executable, __file__, "--child", str(path), "--campaign", campaign_name]
    command += ["--answers", str(answers), "--result", str(result)] + (["--cpu"] if cpu else [])
    subprocess.run(command, check=True, env=os.environ.copy())
    figures = json.loads(result.read_text())
    result.unlink()
    return figures


def print_memory_growth(runs: list[dict]) -> None:
    """One line per import, then how fast peak memory grew with the file between the smallest
    and the biggest (MB of memory per MB of file: 1 means the file is held whole)."""
    print("summary:")
    for run in runs:
        print(
            f"  {run['file_mb']:6.1f} MB file, {run['answers']} answers: "
            f"{run['answers_per_s']:.0f} answers/s, peak memory {run['above_mb']:.0f} MB above the mark"
        )
    if len(runs) > 1:
        small, big = min(runs, key=lambda run: run["file_mb"]), max(runs, key=lambda run: run["file_mb"])
        memory, file = big["above_mb"] - small["above_mb"], big["file_mb"] - small["file_mb"]
        print(
            f"  memory growth / file growth: {memory / file:.2f} "
            f"({memory:.0f} MB more memory for {file:.0f} MB more file)"
        )


def _child(args: argparse.Namespace) -> None:
    """The child side of bench_import_in_child: DATABASE_URL is set and migrated by the parent."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection

    import evaluation.imports.campaign_file  # noqa: F401 - its modules (Celery, the judge's clients) come before the mark

    connection.ensure_connection()
    before = _resident_mb()
    path = Path(args.child)
    seconds, peak = bench_import(path=path, campaign_name=args.campaign, answers=args.answers, cpu=args.cpu)
    size = path.stat().st_size / 1e6
    print(
        f"peak memory (ru_maxrss of the importing process): {peak:.0f} MB for a {size:.0f} MB file, "
        f"{peak - before:.0f} MB above the {before:.0f} MB it had before importing"
    )
    if args.result:
        figures = {
            "answers": args.answers,
            "file_mb": size,
            "answers_per_s": args.answers / seconds,
            "above_mb": peak - before,
        }
        Path(args.result).write_text(json.dumps(figures))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--memory-answers",
        type=int,
        default=15000,
        help="answers of the bigger file whose import's peak memory is measured too (0 skips it)",
    )
    parser.add_argument("--metrics-answers", type=int, default=20000, help="0 skips the metrics part")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--campaign", help=argparse.SUPPRESS)
    parser.add_argument("--cpu", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return

    with tempfile.TemporaryDirectory(prefix="attest-bench-") as directory:
        tmp = Path(directory)
        url, created = choose_database(tmp)
        os.environ["DATABASE_URL"] = url
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        os.environ.setdefault("VAR_DIR", str(tmp / "var"))
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection, connections

        try:
            call_command("migrate", verbosity=0)
            print(f"database: {connection.vendor} ({connection.settings_dict['NAME']})")
            connections.close_all()
            runs = [(args.answers, True)] + ([(args.memory_answers, False)] if args.memory_answers else [])
            figures = []
            for answers, cpu in runs:
                path = write_jsonl(
                    tmp / f"answers-{answers}.jsonl", synthetic_records(answers=answers, seed=args.seed)
                )
                print(f"file: {answers} answers, {path.stat().st_size / 1e6:.1f} MB")
                figures.append(
                    bench_import_in_child(
                        path=path,
                        campaign_name=f"import bench {args.seed} {answers} {time.time():.0f}",
                        answers=answers,
                        cpu=cpu,
                    )
                )
                path.unlink()
            print_memory_growth(figures)
            if args.metrics_answers:
                bench_metrics(tmp=tmp, answers=args.metrics_answers, seed=args.seed)
        finally:
            connections.close_all()
            if created:
                _pg_admin([f"DROP DATABASE IF EXISTS {BENCH_DB}"])


if __name__ == "__main__":
    main()
