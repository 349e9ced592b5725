"""The text work of an import: each answer's language and sentences, with cited ids.

Pure functions without Django, so that big imports can run them in worker processes while the
main process writes to the database: language detection (langdetect, about a millisecond per
answer whatever its length) would otherwise be most of an import's time.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import islice
from typing import TypeVar

from annotation.corpus.citations import compile_citation_pattern, find_citations
from annotation.corpus.language import detect_language
from annotation.corpus.sentences import split_sentences

# langdetect's cost grows with the text; a prefix this long (citations removed) decides the
# language as well for answers of a few paragraphs.
LANGUAGE_SAMPLE_CHARS = 250
# Below this many answers, starting worker processes costs more than it saves.
POOL_MIN_ANSWERS = 1000
POOL_MAX_WORKERS = 4
CHUNK = 100
# The text work runs ahead of the writes, which are an import's critical path: its worker
# processes yield the CPU to the importing process and its database backend (and to the pages
# of a server sharing the machine), without which they take the cores the writes wait for.
WORKER_NICENESS = 10
# Chunks of work queued per worker process: one being done, one waiting.
AHEAD_PER_WORKER = 2

P = TypeVar("P")
R = TypeVar("R")

# (text, paragraph, paragraph index, cited ids) of one sentence.
SentenceRow = tuple[str, str, int, list[str]]


@dataclass(frozen=True)
class TextJob:
    """A text to analyse: an answer, with its sentences as (text, paragraph or None) when given
    already split; or, with ``language_only``, any text whose language alone is wanted."""

    answer: str
    sentences: tuple[tuple[str, str | None], ...] | None = None
    language_only: bool = False


def language_sample(*, text: str, citation_pattern: str) -> str:
    """The part of ``text`` its language is detected on: citations removed, a bounded prefix."""
    plain = compile_citation_pattern(citation_pattern).sub(" ", text)
    if len(plain) <= LANGUAGE_SAMPLE_CHARS:
        return plain
    cut = plain.rfind(" ", 0, LANGUAGE_SAMPLE_CHARS)
    return plain[: cut if cut > 0 else LANGUAGE_SAMPLE_CHARS]


def _paragraphs(text: str) -> list[str]:
    # The same paragraphs split_sentences sees: blocks separated by blank lines.
    return [p.strip() for p in re.split(r"\n\s*\n", text.replace("\r\n", "\n")) if p.strip()]


def analyse(
    job: TextJob, *, citation_pattern: str, candidates: tuple[str, ...] = ()
) -> tuple[str, list[SentenceRow]]:
    """The text's language (among ``candidates`` when given, see ``detect_language``) and,
    unless ``language_only``, its sentences.

    Without given sentences the answer is split with ``split_sentences``. Given sentences are
    kept; each one's paragraph is its own when given, else the answer's paragraph containing it
    (else the sentence itself), and its cited ids are found in its text.
    """
    language = detect_language(
        language_sample(text=job.answer, citation_pattern=citation_pattern), candidates=candidates
    )
    if job.language_only:
        return language, []
    if job.sentences is None:
        split = split_sentences(job.answer, citation_pattern=citation_pattern)
        return language, [(s.text, s.paragraph, s.paragraph_index, list(s.cited_ids)) for s in split]
    paragraphs = _paragraphs(job.answer)
    rows: list[SentenceRow] = []
    for text, paragraph in job.sentences:
        index = 0
        if paragraph is None:
            found = next((i for i, p in enumerate(paragraphs) if text in p), None)
            paragraph, index = (text, 0) if found is None else (paragraphs[found], found)
        rows.append((text, paragraph, index, find_citations(text, citation_pattern=citation_pattern)))
    return language, rows


def _analyse_chunk(
    payload: tuple[list[TextJob], str, tuple[str, ...]],
) -> list[tuple[str, list[SentenceRow]]]:
    jobs, citation_pattern, candidates = payload
    return [analyse(job, citation_pattern=citation_pattern, candidates=candidates) for job in jobs]


def _lower_priority() -> None:
    """A worker process's initializer: its priority below the importing process's."""
    os.nice(WORKER_NICENESS)


def spare_workers() -> int:
    """How many worker processes an import may start: as many as CPUs (up to POOL_MAX_WORKERS),
    none on one CPU or where processes may not start their own."""
    if multiprocessing.current_process().daemon:
        # Daemonic processes (a Celery prefork child) may not start processes of their own.
        return 0
    cpus = os.cpu_count() or 1
    # As many workers as CPUs: the importing process mostly waits for the database meanwhile.
    return min(POOL_MAX_WORKERS, cpus) if cpus > 1 else 0


def process_pool(
    workers: int, *, initializer: Callable[[], None] | None = None
) -> ProcessPoolExecutor | None:
    """A pool of ``workers`` processes started by a fork server (safe from threaded servers), or
    None when it cannot start: the caller then does the work itself."""
    try:
        return ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("forkserver"), initializer=initializer
        )
    except Exception:  # whatever stops a pool from starting, the work is done in the caller instead
        return None


def in_order(
    pool: ProcessPoolExecutor, function: Callable[[P], R], payloads: Iterable[P], *, ahead: int
) -> Iterator[R]:
    """``function`` of each payload, run in ``pool`` and yielded in order; payloads are taken
    lazily, ``ahead`` at most in flight. What a call raises is raised here, in its place."""
    payloads = iter(payloads)
    in_flight: deque[Future] = deque()
    while True:
        in_flight.extend(
            pool.submit(function, payload) for payload in islice(payloads, ahead - len(in_flight))
        )
        if not in_flight:
            return
        yield in_flight.popleft().result()


def _workers(count: int) -> int:
    return 0 if count < POOL_MIN_ANSWERS else spare_workers()


class Analysis:
    """``analyse`` of every job, yielded in order by iterating; use as a context manager.

    ``jobs`` may be a lazy iterable: it is consumed only as far ahead as the work in flight
    (a few chunks per worker), so a caller streaming a file holds a bounded number of jobs.
    ``count`` is how many jobs there will be (default ``len(jobs)``); big imports on machines with
    spare CPUs run the work in worker processes (forkserver, safe from threaded servers) while the
    caller reads and writes. If the workers cannot start or break, the rest is done in this
    process, so the result is the same. ``workers`` is the number of worker processes started;
    ``inline`` counts the jobs done here.
    """

    def __init__(
        self,
        *,
        jobs: Iterable[TextJob],
        citation_pattern: str,
        candidates: tuple[str, ...] = (),
        count: int | None = None,
    ) -> None:
        self.jobs = iter(jobs)
        self.citation_pattern = citation_pattern
        self.candidates = candidates
        self.done = 0
        self.inline = 0
        self._pool: ProcessPoolExecutor | None = None
        self._finished = False
        self.workers = _workers(len(jobs) if count is None else count)  # type: ignore[arg-type]
        if self.workers > 0:
            self._pool = process_pool(self.workers, initializer=_lower_priority)
            if self._pool is None:
                self.workers = 0

    def _analyse_here(self, jobs: Iterable[TextJob]) -> Iterator[tuple[str, list[SentenceRow]]]:
        for job in jobs:
            self.done += 1
            self.inline += 1
            yield analyse(job, citation_pattern=self.citation_pattern, candidates=self.candidates)

    def __iter__(self) -> Iterator[tuple[str, list[SentenceRow]]]:
        # The chunks handed to the workers whose results have not come back, in order.
        handed: deque[list[TextJob]] = deque()

        def chunks() -> Iterator[tuple[list[TextJob], str, tuple[str, ...]]]:
            while chunk := list(islice(self.jobs, CHUNK)):
                handed.append(chunk)
                yield chunk, self.citation_pattern, self.candidates

        if self._pool is not None:
            try:
                # Enough chunks in flight to keep every worker busy, few enough to bound what waits.
                for results in in_order(
                    self._pool, _analyse_chunk, chunks(), ahead=AHEAD_PER_WORKER * self.workers
                ):
                    handed.popleft()
                    for result in results:
                        self.done += 1
                        yield result
                self._finished = True
                return
            except BrokenProcessPool:
                pass
        # No workers, or they broke: the chunks they held and the rest are done here, in order.
        for chunk in handed:
            yield from self._analyse_here(chunk)
        yield from self._analyse_here(self.jobs)
        self._finished = True

    def close(self) -> None:
        """Stop the workers, without waiting for queued work when the caller stopped early."""
        if self._pool is not None:
            self._pool.shutdown(wait=self._finished, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Analysis:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
