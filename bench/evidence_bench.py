"""Evidence coverage: answers scored per second at 10 token budgets, on passages of realistic size.

    python bench/evidence_bench.py [--answers 400] [--chunks 15] [--passages 3] [--seed 7]

No database: the same functions the report runs per answer (``coverage_at_budgets`` with the
passages' suffix automata built once per question, as ``evidence_report`` does). A synthetic
data room of French-like prose: each answer has ``--chunks`` retrieved chunks of 500 to 900
characters (the demo's and the study's sizes), its question ``--passages`` gold passages of 150
to 400 characters, one copied from a retrieved chunk at a random rank, one half-copied (its
second half rewritten), one absent. Budgets 100 to 1000 by 100.

Prints answers per second of the linear scan (suffix automaton), and, on a few answers, the
quadratic dynamic programme it replaces (one longest common substring per budget and passage),
with the check that both give the same scores.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.measures.coverage import (
    DEFAULT_BUDGETS,
    SuffixAutomaton,
    concatenate,
    coverage_at_budgets,
    prefix_lengths,
)

TEXT = (
    "le chiffre d'affaires consolidé progresse de 7,8 % pour atteindre 148,6 M€ en 2023 "
    "selon le rapport de gestion du groupe la marge d'EBITDA atteint 13,3 % contre 11,7 % "
    "les effectifs comptent 734 salariés répartis sur trois sites industriels et une filiale "
    "le contrat de prêt prévoit un covenant de levier inférieur à 3,0x testé semestriellement"
)
WORDS = TEXT.split(" ")


def prose(rng: random.Random, low: int, high: int) -> str:
    size = rng.randint(low, high)
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < size:
        words.append(rng.choice(WORDS))
    text = " ".join(words)
    return text[:size].capitalize() + "."


def make_answer(rng: random.Random, *, chunks: int, passages: int) -> tuple[list[str], list[str]]:
    retrieved = [prose(rng, 500, 900) for _ in range(chunks)]
    gold: list[str] = []
    for i in range(passages):
        kind = i % 3
        if kind == 0:  # copied from a retrieved chunk
            source = rng.choice(retrieved)
            start = rng.randrange(max(1, len(source) - 300))
            gold.append(source[start : start + rng.randint(150, 300)])
        elif kind == 1:  # half copied, half rewritten
            source = rng.choice(retrieved)
            start = rng.randrange(max(1, len(source) - 200))
            gold.append(source[start : start + 150] + " " + prose(rng, 100, 200))
        else:  # absent from the retrieved chunks
            gold.append(prose(rng, 150, 400))
    return retrieved, gold


def lcs_quadratic(a: str, b: str) -> int:
    best = 0
    previous = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        current = [0] * (len(b) + 1)
        ai = a[i - 1]
        for j in range(1, len(b) + 1):
            if ai == b[j - 1]:
                value = previous[j - 1] + 1
                current[j] = value
                if value > best:
                    best = value
        previous = current
    return best


def quadratic_scores(passages: list[str], chunks: list[str], budgets: list[int]) -> list[float]:
    text = concatenate(chunks)
    cuts = prefix_lengths(text, budgets)
    return [sum(lcs_quadratic(p, text[:cut]) / len(p) for p in passages) / len(passages) for cut in cuts]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=400)
    parser.add_argument("--chunks", type=int, default=15)
    parser.add_argument("--passages", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    budgets = list(DEFAULT_BUDGETS)
    answers = [make_answer(rng, chunks=args.chunks, passages=args.passages) for _ in range(args.answers)]
    passage_chars = sum(len(p) for _, gold in answers for p in gold) / (args.answers * args.passages)
    chunk_chars = sum(len(c) for chunks, _ in answers for c in chunks) / (args.answers * args.chunks)
    print(
        f"{args.answers} answers, {args.chunks} chunks of {chunk_chars:.0f} characters on average, "
        f"{args.passages} gold passages of {passage_chars:.0f}; budgets {budgets[0]}..{budgets[-1]} "
        f"({len(budgets)})"
    )
    started = time.perf_counter()
    scores = []
    for chunks, gold in answers:
        automata = [SuffixAutomaton(p) for p in gold]
        scores.append(coverage_at_budgets(passages=automata, chunks=chunks, budgets=budgets))
    linear = time.perf_counter() - started
    print(
        f"suffix automaton (automata built per answer): {args.answers / linear:,.0f} answers/s "
        f"at {len(budgets)} budgets ({linear * 1000 / args.answers:.2f} ms per answer)"
    )
    few = min(5, args.answers)
    started = time.perf_counter()
    for (chunks, gold), expected in zip(answers[:few], scores[:few], strict=True):
        got = quadratic_scores(gold, chunks, budgets)
        assert all(abs(a - b) < 1e-12 for a, b in zip(got, expected or [], strict=True)), (got, expected)
    quadratic = (time.perf_counter() - started) / few
    print(
        f"quadratic dynamic programme, per budget: {1 / quadratic:,.2f} answers/s "
        f"({quadratic * 1000:.0f} ms per answer), same scores on {few} answers; "
        f"the linear scan is {quadratic / (linear / args.answers):,.0f} times faster"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
