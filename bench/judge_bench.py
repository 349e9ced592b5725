"""Judge throughput against the scripted server, and prompt tokens per sentence judged.

Run with ``.venv/bin/python bench/judge_bench.py``. Prints, it asserts nothing.

1. judgments/s at concurrency 1, 4, 16, 64 with a fixed server latency (``--latency``, seconds,
   several allowed; 0.1 by default), as a share of the ideal (concurrency / latency); relevance
   units, so one request is one judgment, stored in PostgreSQL through the real run code path
   (claim, call, store). Each level is a run of ``--per-thread`` judgments per thread (by default
   about 10 s of ideal time: 100 at 100 ms, 10 at 1 s, 5 at 3 s). Beside it, "client alone" (unless
   ``--no-client``): the share reached by the bare SDK client making the same number of calls at
   the same concurrency against the same server, with none of the app's work: the ceiling this
   machine allows (the server, in its own process, shares its CPUs), and the gap between the two
   in points. ``--repeat`` runs each level several times (judge, then client
   alone, in turn) and prints the medians: on a shared machine one run says little. Beside the
   shares, CPU per judgment: of this process while the judge works and while the bare client does
   (at 64 both are bound by this process's interpreter, so its CPU per call sets the rate), and of
   the PostgreSQL backends of the bench's database while the judge works (when they run here), the
   connections closed meanwhile included (``PostgresCpu``).

   Each call is recorded before its request leaves (``evaluation.judge.recorder``): the bench
   measures that too. The call journal that once recorded it in a file instead was compared with
   it by this bench as of commit 8ff4b28 (``--record both``), at 100 ms, 1 s and 3 s
   (``docs/judge.md``, Measuring).
2. prompt tokens per sentence judged on the demo campaign, one prompt per answer (what the app
   does) vs one prompt per sentence; tokens estimated as characters / 4, the server's own rule.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pgdb import bench_database


def _serve(latency_s: float, urls, stop) -> None:
    from tests.llm_server import ScriptedLLMServer

    with ScriptedLLMServer(latency_s=latency_s) as server:
        urls.put(server.base_url)
        stop.wait()


class ServerProcess:
    """The scripted server in a process of its own, as a real server would be: it must not
    compete with the judge for this process's interpreter lock."""

    def __init__(self, latency_s: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._urls = ctx.Queue()
        self._stop = ctx.Event()
        self._process = ctx.Process(target=_serve, args=(latency_s, self._urls, self._stop), daemon=True)

    def __enter__(self) -> ServerProcess:
        self._process.start()
        self.base_url = self._urls.get(timeout=30)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._process.join(timeout=10)


def _make_campaign(n_answers: int):
    from annotation.corpus.campaigns import get_or_create_campaign
    from annotation.models import Answer, Level, Question, Unit

    campaign, _ = get_or_create_campaign(name=f"judge-bench-{n_answers}-{time.time_ns()}")
    question = Question.objects.create(campaign=campaign, external_id="Q", text="Quel est le CA ?", theme="T")
    answers = Answer.objects.bulk_create(
        [
            Answer(campaign=campaign, question=question, external_id=f"A{i}", text="Le CA est de 12 M€.")
            for i in range(n_answers)
        ]
    )
    Unit.objects.bulk_create(
        [Unit(campaign=campaign, level=Level.ANSWER, answer=a, theme="T") for a in answers]
    )
    return campaign


def client_alone(*, base_url: str, concurrency: int, n: int) -> float:
    """Seconds for ``n`` bare chat completions from ``concurrency`` threads sharing one SDK
    client, with none of the app's work: what this machine and this server allow at best."""

    import openai

    client = openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0)
    messages = [
        {"role": "system", "content": "Réponds en JSON."},
        {"role": "user", "content": "Le CA est de 12 M€.\nINDICES: [0]"},
    ]
    left = [n]
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            # The same request as the judge's (JSON output, the reply's log-probabilities).
            client.chat.completions.create(
                model="m",
                messages=messages,
                temperature=0,
                response_format={"type": "json_object"},
                logprobs=True,
                top_logprobs=5,
            )

    threads = [threading.Thread(target=work) for _ in range(concurrency)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    client.close()
    return seconds


class PostgresCpu:
    """CPU seconds of the PostgreSQL backends serving this database on this machine while it is
    open (a context manager; ``seconds`` after it, None when there is none: SQLite, or a server
    elsewhere).

    The server's children are read every ``EVERY_S`` (from /proc, the server's ``children``
    list), and each backend of this database's last reading is kept: a connection a judging
    thread closes before the end is counted up to its last reading (reading once at the end left
    out every connection closed meanwhile), and the other databases' backends, which others' work
    on a shared machine keeps busy, are not counted."""

    EVERY_S = 0.05

    def __init__(self) -> None:
        from django.db import connection

        self._database = connection.settings_dict["NAME"] if connection.vendor == "postgresql" else None
        self._first: dict[int, int] = {}
        self._last: dict[int, int] = {}
        self._others: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._server = self._server_pid()
        self.seconds: float | None = None

    def _server_pid(self) -> int | None:
        if self._database is None:
            return None
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:
                continue
            name = text[text.index("(") + 1 : text.rindex(")")]
            parent = int(text.rsplit(")", 1)[1].split()[1])
            if name == "postgres" and not Path(f"/proc/{parent}/comm").read_text().startswith("postgres"):
                return int(stat.parent.name)
        return None

    def _read(self) -> None:
        try:
            children = Path(f"/proc/{self._server}/task/{self._server}/children").read_text().split()
        except OSError:
            return
        for pid in map(int, children):
            if pid in self._others:
                continue
            try:
                if pid not in self._first:
                    command = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
                    if f" {self._database} " not in command:
                        self._others.add(pid)
                        continue
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended meanwhile
            ticks = int(fields[11]) + int(fields[12])  # utime, stime
            self._first.setdefault(pid, 0 if self._started else ticks)
            self._last[pid] = ticks

    def _watch(self) -> None:
        while not self._stop.wait(self.EVERY_S):
            self._read()

    def __enter__(self) -> PostgresCpu:
        if self._server is not None:
            self._started = False
            self._read()  # the backends already open count from now
            self._started = True
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._server is None:
            return
        self._stop.set()
        self._thread.join()
        self._read()
        ticks = sum(self._last[pid] - self._first[pid] for pid in self._last)
        self.seconds = ticks / os.sysconf("SC_CLK_TCK")


@dataclass
class Measure:
    share: float  # judgments/s as a share of the ideal
    alone: float | None  # the bare client's share
    app_ms: float
    client_ms: float | None
    pg_ms: float | None


def judge_once(*, base_url: str, latency_s: float, concurrency: int, n: int, alone: bool) -> Measure:
    from annotation.models import Criterion
    from evaluation.judge import runs

    campaign = _make_campaign(n)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="gpt", model="m", base_url=base_url)
    run = runs.create_run(criterion=relevance, judge=judge, concurrency=concurrency)
    ideal = concurrency / latency_s
    with PostgresCpu() as pg:
        start, cpu = time.perf_counter(), time.process_time()
        run = runs.run_inline(run_id=run.pk, concurrency=concurrency)
        seconds = time.perf_counter() - start
        app_ms = 1000 * (time.process_time() - cpu) / n
    pg_ms = 1000 * pg.seconds / n if pg.seconds is not None else None
    assert run.done_units == n, run.status
    rate = n / seconds
    share_alone = client_ms = None
    if alone:
        cpu = time.process_time()
        share_alone = n / client_alone(base_url=base_url, concurrency=concurrency, n=n) / ideal
        client_ms = 1000 * (time.process_time() - cpu) / n
    return Measure(share=rate / ideal, alone=share_alone, app_ms=app_ms, client_ms=client_ms, pg_ms=pg_ms)


def throughput(
    *, latencies: list[float], concurrencies: list[int], per_thread: int | None, repeat: int, alone: bool
) -> None:
    print(
        "share: judgments/s as a share of the ideal (concurrency / latency); client alone: the bare SDK's "
        "share in the same conditions; gap: client alone minus the judge, in points"
    )
    print(
        "CPU ms per judgment: app, this process while the judge works; client, while the bare client "
        "does; PG, PostgreSQL's backends of the bench database while the judge works"
    )
    for latency_s in latencies:
        calls = per_thread or max(5, round(10 / latency_s))
        print(f"\njudge throughput, server latency {latency_s * 1000:.0f} ms, {calls} calls per thread")
        print(
            f"{'concurrency':>11} {'judgments':>9} {'share':>6} {'client alone':>12} "
            f"{'gap':>5} {'app CPU':>8} {'client CPU':>10} {'PG CPU':>7}"
        )
        with ServerProcess(latency_s) as server:
            for concurrency in concurrencies:
                n = concurrency * calls
                measured = []
                for _ in range(repeat):
                    one = judge_once(
                        base_url=server.base_url,
                        latency_s=latency_s,
                        concurrency=concurrency,
                        n=n,
                        alone=alone,
                    )
                    measured.append(one)
                    _print_row(str(concurrency), str(n), one)
                if repeat > 1:
                    median = Measure(
                        share=statistics.median(m.share for m in measured),
                        alone=_median([m.alone for m in measured]),
                        app_ms=statistics.median(m.app_ms for m in measured),
                        client_ms=_median([m.client_ms for m in measured]),
                        pg_ms=_median([m.pg_ms for m in measured]),
                    )
                    _print_row("median", "", median)


def _print_row(concurrency: str, n: str, m: Measure) -> None:
    alone = f"{m.alone:>12.0%}" if m.alone is not None else f"{'-':>12}"
    gap = f"{100 * (m.alone - m.share):>5.0f}" if m.alone is not None else f"{'-':>5}"
    print(
        f"{concurrency:>11} {n:>9} {m.share:>6.1%} {alone} {gap} "
        f"{m.app_ms:>8.2f} {_ms(m.client_ms):>10} {_ms(m.pg_ms):>7}",
        flush=True,
    )


def _median(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def prompt_tokens() -> None:
    from annotation.models import Answer, Criterion
    from evaluation.imports.campaign_file import import_file
    from evaluation.judge import inputs, runs
    from evaluation.models import JudgeBatch

    demo = Path(__file__).resolve().parents[1] / "demo" / "campaign.jsonl"
    if not demo.exists():
        print("demo campaign not found; skipping the token comparison")
        return
    import_file(path=demo, campaign_name="judge-bench-demo")
    veracity = Criterion.objects.get(campaign__name="judge-bench-demo", name="veracity")
    judge = runs.get_or_create_judge(campaign=veracity.campaign, name="gpt-tokens", model="m")
    run = runs.create_run(criterion=veracity, judge=judge)
    batched_chars = single_chars = sentences = 0
    ids = list(JudgeBatch.objects.filter(run=run).values_list("id", flat=True))
    for data in inputs.load_batches(batch_ids=ids, criterion=veracity).values():
        batched_chars += sum(
            len(m["content"]) for m in inputs.build_messages(data=data, criterion=veracity, judge=judge)
        )
        for item in data.items:
            one = inputs.BatchInput(
                question=data.question,
                answer=data.answer,
                items=[item],
                sources=[s for s in data.sources if s["id"] in item["cited_ids"]],
                retrieved_ids=data.retrieved_ids,
            )
            single_chars += sum(
                len(m["content"]) for m in inputs.build_messages(data=one, criterion=veracity, judge=judge)
            )
            sentences += 1
    n_answers = Answer.objects.filter(campaign=veracity.campaign).count()
    print(f"\nprompt tokens per sentence on the demo campaign ({n_answers} answers, {sentences} sentences)")
    print(f"  one prompt per answer:   {batched_chars / 4 / sentences:8.1f}")
    print(f"  one prompt per sentence: {single_chars / 4 / sentences:8.1f}")
    print(f"  ratio: {single_chars / batched_chars:.2f}x fewer prompt tokens when batched per answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--concurrency", type=int, nargs="*", default=[1, 4, 16, 64])
    parser.add_argument(
        "--latency",
        type=float,
        nargs="*",
        default=[0.1],
        help="the server's latency, seconds (several: each)",
    )
    parser.add_argument(
        "--per-thread",
        type=int,
        default=None,
        help="judgments per thread at each level (by default about 10 s of ideal time, at least 5)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per level, judge and client alone in turn, then their medians (the machine is noisy)",
    )
    parser.add_argument("--no-client", action="store_true", help="skip the bare client's runs")
    parser.add_argument("--no-tokens", action="store_true", help="skip the prompt tokens comparison")
    args = parser.parse_args()
    with bench_database("attest_bench_judge") as engine:
        print(f"database: {engine}")
        throughput(
            latencies=args.latency,
            concurrencies=args.concurrency,
            per_thread=args.per_thread,
            repeat=max(1, args.repeat),
            alone=not args.no_client,
        )
        if not args.no_tokens:
            prompt_tokens()


if __name__ == "__main__":
    main()
