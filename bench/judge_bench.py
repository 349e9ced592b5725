"""Judge throughput against the scripted server, and prompt tokens per sentence judged.

Run with ``.venv/bin/python bench/judge_bench.py``. Prints, it asserts nothing.

1. judgments/s at concurrency 1, 4, 16, 64 with a fixed 100 ms server latency, as a share of the
   ideal (concurrency / latency); relevance units, so one request is one judgment, stored in
   PostgreSQL through the real run code path (claim, call, store). Each level is a run of
   ``--per-thread`` judgments per thread (100: a run long enough for its steady rate to show, not
   only its start). Beside it, "client alone": the share reached by the bare SDK client making the
   same number of calls at the same concurrency against the same server, with none of the app's
   work: the ceiling this machine allows (the server, in its own process, shares its CPUs), and the
   gap between the two in points. ``--repeat`` runs each level several times (judge, then client
   alone, in turn) and prints the medians: on a shared machine one run says little. Beside the
   shares, CPU per judgment: of this process while the judge works and while the bare client does
   (at 64 both are bound by this process's interpreter, so its CPU per call sets the rate), and of
   every PostgreSQL process on this machine while the judge works (when they run here).
2. prompt tokens per sentence judged on the demo campaign, one prompt per answer (what the app
   does) vs one prompt per sentence; tokens estimated as characters / 4, the server's own rule.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pgdb import bench_database

LATENCY_S = 0.1


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
    import threading

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


def postgres_cpu_s() -> float | None:
    """CPU seconds used so far by every PostgreSQL process on this machine (read from /proc); None
    when there is none (SQLite, or a server elsewhere)."""
    total, found = 0.0, False
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # ended meanwhile
        if text[text.index("(") + 1 : text.rindex(")")].startswith("postgres"):
            fields = text.rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
            found = True
    return total / os.sysconf("SC_CLK_TCK") if found else None


def throughput(concurrencies: list[int], per_thread: int, repeat: int = 1) -> None:
    from annotation.models import Criterion
    from evaluation.judge import runs

    print(f"judge throughput, server latency {LATENCY_S * 1000:.0f} ms, {per_thread} calls per thread")
    print(
        "share: judgments/s as a share of the ideal (concurrency / latency); client alone: the bare SDK's "
        "share in the same conditions; gap: client alone minus the judge, in points"
    )
    print(
        "CPU ms per judgment: app, this process while the judge works; client, while the bare client "
        "does; PG, PostgreSQL's processes while the judge works"
    )
    print(
        f"{'concurrency':>11} {'judgments':>9} {'seconds':>8} {'judgments/s':>11} {'ideal/s':>8} "
        f"{'share':>6} {'client alone':>12} {'gap':>5} {'app CPU':>8} {'client CPU':>10} {'PG CPU':>7}"
    )
    with ServerProcess(LATENCY_S) as server:
        for concurrency in concurrencies:
            n = concurrency * per_thread
            ideal = concurrency / LATENCY_S
            shares: list[tuple[float, float]] = []
            cpus: list[tuple[float, float, float | None]] = []
            for _ in range(repeat):
                campaign = _make_campaign(n)
                relevance = Criterion.objects.get(campaign=campaign, name="relevance")
                judge = runs.get_or_create_judge(
                    campaign=campaign, name="gpt", model="m", base_url=server.base_url
                )
                run = runs.create_run(criterion=relevance, judge=judge, concurrency=concurrency)
                start, cpu, pg = time.perf_counter(), time.process_time(), postgres_cpu_s()
                run = runs.run_inline(run_id=run.pk, concurrency=concurrency)
                seconds = time.perf_counter() - start
                app_ms = 1000 * (time.process_time() - cpu) / n
                pg_after = postgres_cpu_s()
                pg_ms = 1000 * (pg_after - pg) / n if pg is not None and pg_after is not None else None
                assert run.done_units == n, run.status
                rate = n / seconds
                cpu = time.process_time()
                alone = n / client_alone(base_url=server.base_url, concurrency=concurrency, n=n)
                client_ms = 1000 * (time.process_time() - cpu) / n
                shares.append((rate / ideal, alone / ideal))
                cpus.append((app_ms, client_ms, pg_ms))
                print(
                    f"{concurrency:>11} {n:>9} {seconds:>8.2f} {rate:>11.1f} {ideal:>8.0f} "
                    f"{rate / ideal:>6.0%} {alone / ideal:>12.0%} {100 * (alone - rate) / ideal:>5.0f} "
                    f"{app_ms:>8.2f} {client_ms:>10.2f} {_ms(pg_ms):>7}"
                )
            if repeat > 1:
                judge_share = statistics.median(share for share, _ in shares)
                alone_share = statistics.median(alone for _, alone in shares)
                gap = statistics.median(100 * (alone - share) for share, alone in shares)
                app_ms = statistics.median(app for app, _, _ in cpus)
                client_ms = statistics.median(client for _, client, _ in cpus)
                pg_values = [pg for _, _, pg in cpus if pg is not None]
                print(
                    f"{'median':>11} {'':>9} {'':>8} {'':>11} {'':>8} "
                    f"{judge_share:>6.0%} {alone_share:>12.0%} {gap:>5.0f} {app_ms:>8.2f} {client_ms:>10.2f} "
                    f"{_ms(statistics.median(pg_values) if pg_values else None):>7}"
                )


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
        "--per-thread",
        type=int,
        default=100,
        help="judgments per thread at each level (100: about 10 s of ideal time per level)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per level, judge and client alone in turn, then their medians (the machine is noisy)",
    )
    parser.add_argument("--no-tokens", action="store_true", help="skip the prompt tokens comparison")
    args = parser.parse_args()
    with bench_database("attest_bench_judge") as engine:
        print(f"database: {engine}")
        throughput(args.concurrency, args.per_thread, max(1, args.repeat))
        if not args.no_tokens:
            prompt_tokens()


if __name__ == "__main__":
    main()
