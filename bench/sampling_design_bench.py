"""Time the stratified sample: embed, cluster and draw 140 units over 100,000 synthetic sentences.

Run with ``.venv/bin/python bench/sampling_design_bench.py [--sentences N] [--budget B]``. Prints the
seconds of each step; it asserts nothing (timings belong here, never in tests).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation.sampling.design import (
    allocate_clusters,
    draw_stratified,
    redraw_with_keep,
)
from annotation.sampling.embeddings import embed_texts

THEMES = {"Finance": 0.4, "RH": 0.3, "IT": 0.2, "Juridique": 0.1}
# Words of a made-up French: accents, elisions and "œ" exercise the tokenizer like real answers.
FUNCTION_WORDS = (
    "le la les des de du un une et ou pour dans sur avec par selon est sont a été être "
    "qui que dont cette ce ces leur son sa ses au aux en ne pas plus très aussi l'on d'un"
)
SYLLABLES = (
    "ma té ri al con trat fi nan ce sa la é em ploy ser veur ré seau bud get li cen dé part "
    "ges tion com pta bi li té au dit ca pi tal ob li ga tion so cié fis cal œu vre prê ts"
)


def synthetic_sentences(*, n: int, seed: int) -> tuple[list[str], list[str]]:
    """``n`` sentences of about 20 words, in 4 themes of 8 topics each, with French-like accented words."""
    rng = np.random.default_rng(seed)
    syllables, glue_words = SYLLABLES.split(), FUNCTION_WORDS.split()
    vocabulary = np.array(["".join(rng.choice(syllables, size=rng.integers(2, 5))) for _ in range(30_000)])
    general = 1 / np.arange(1, vocabulary.size + 1) ** 1.1
    general /= general.sum()
    names = list(THEMES)
    theme_of = rng.choice(len(names), size=n, p=list(THEMES.values()))
    topic_of = rng.integers(0, 8, size=n)
    topic_words = rng.choice(vocabulary.size, size=(len(names), 8, 40))
    lengths = rng.integers(14, 27, size=n)
    texts = []
    for i in range(n):
        length = int(lengths[i])
        own = vocabulary[rng.choice(topic_words[theme_of[i], topic_of[i]], size=length // 3)]
        common = vocabulary[rng.choice(vocabulary.size, size=length // 3, p=general)]
        glue = rng.choice(glue_words, size=length - 2 * (length // 3))
        words = np.concatenate([own, common, glue])
        rng.shuffle(words)
        texts.append(" ".join(words).capitalize() + ".")
    return texts, [names[t] for t in theme_of]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--budget", type=int, default=140)
    parser.add_argument("--per-cluster", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    start = time.perf_counter()
    texts, themes = synthetic_sentences(n=args.sentences, seed=args.seed)
    unit_ids = list(range(1, len(texts) + 1))
    words = sum(len(t.split()) for t in texts) / len(texts)
    print(f"{len(texts)} synthetic sentences, {words:.1f} words each on average")
    print(f"cores available: {len(os.sched_getaffinity(0))}")

    start = time.perf_counter()
    vectors = embed_texts(texts=texts, backend="tfidf", dimensions=64, seed=args.seed)
    embed_s = time.perf_counter() - start
    print(f"embed (tfidf + svd, {vectors.shape[1]} dims):  {embed_s:6.2f} s")

    sizes = dict(Counter(themes))
    start = time.perf_counter()
    k = allocate_clusters(theme_sizes=sizes, budget=args.budget, per_cluster=args.per_cluster)
    draws = draw_stratified(
        unit_ids=unit_ids,
        themes=themes,
        embeddings=vectors,
        k_per_theme=k,
        per_cluster=args.per_cluster,
        seed=args.seed,
    )
    draw_s = time.perf_counter() - start
    print(f"allocate + cluster + draw:        {draw_s:6.2f} s  K per theme {k}, {len(draws)} units drawn")
    print(f"embed + cluster + draw:           {embed_s + draw_s:6.2f} s")

    bigger = allocate_clusters(theme_sizes=sizes, budget=2 * args.budget, per_cluster=args.per_cluster)
    start = time.perf_counter()
    updated = redraw_with_keep(
        previous=draws,
        unit_ids=unit_ids,
        themes=themes,
        embeddings=vectors,
        k_per_theme=bigger,
        per_cluster=args.per_cluster,
        seed=args.seed,
    )
    print(
        f"top-up to budget {2 * args.budget} (re-cluster): {time.perf_counter() - start:6.2f} s  "
        f"{len(updated)} units, {len(updated) - len(draws)} new"
    )


if __name__ == "__main__":
    main()
