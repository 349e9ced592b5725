"""Exact match, token F1 and ROUGE-L (evaluation.measures.overlap) against their references: the
official SQuAD v1.1 evaluation script's functions, copied below as written there, and Google's
``rouge-score`` (a test requirement) without stemming."""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter

import numpy as np
import pytest
from rouge_score import rouge_scorer

from evaluation.measures.overlap import (
    ENGLISH,
    FRENCH,
    SQUAD,
    exact_match,
    lcs_length,
    normalise,
    resolve,
    rouge_l,
    token_f1,
)

# The official SQuAD v1.1 evaluate-v1.1.py, its three functions.


def normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace."""

    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def f1_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def exact_match_score(prediction, ground_truth):
    return normalize_answer(prediction) == normalize_answer(ground_truth)


WORDS = [
    "the",
    "a",
    "an",
    "The",
    "revenue",
    "grew",
    "by",
    "12",
    "percent",
    "in",
    "2023",
    "to",
    "148.6",
    "million",
    "euros,",
    "while",
    "margin",
    "fell;",
    "An",
    "audit",
    "(Q3)",
    "found",
    "$4",
    "of",
    "debt!",
]


def random_text(rng: np.random.Generator, *, words=WORDS) -> str:
    return " ".join(rng.choice(words, size=int(rng.integers(0, 25))))


@pytest.mark.parametrize("seed", range(20))
def test_exact_match_and_f1_are_squads_own(seed):
    rng = np.random.default_rng(seed)
    for _ in range(50):
        answer, reference = random_text(rng), random_text(rng)
        if rng.random() < 0.2:
            reference = answer.upper() + " ."
        assert exact_match(answer, reference, normalisation=SQUAD) == float(
            exact_match_score(answer, reference)
        )
        assert abs(token_f1(answer, reference, normalisation=SQUAD) - f1_score(answer, reference)) < 1e-15
        assert normalise(answer, normalisation=SQUAD) == normalize_answer(answer)


@pytest.mark.parametrize("seed", range(20))
def test_rouge_l_is_rouge_scores_without_stemming(seed):
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    rng = np.random.default_rng(seed)
    for _ in range(50):
        answer, reference = random_text(rng), random_text(rng)
        expected = scorer.score(reference, answer)["rougeL"].fmeasure
        assert abs(rouge_l(answer, reference, normalisation=SQUAD) - expected) < 1e-15
        # Plain ASCII letters and digits: the Unicode tokens are rouge-score's too.
        assert abs(rouge_l(answer, reference, normalisation=ENGLISH) - expected) < 1e-15


def test_the_bit_vector_lcs_is_the_dynamic_programmes():
    rng = np.random.default_rng(3)
    for _ in range(300):
        a = list(rng.choice(list("abcde"), size=int(rng.integers(0, 70))))
        b = list(rng.choice(list("abcdef"), size=int(rng.integers(0, 70))))
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                table[i][j] = (
                    table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(table[i - 1][j], table[i][j - 1])
                )
        assert lcs_length(a, b) == table[-1][-1]


def test_english_on_unicode_text_is_squad_with_unicode_punctuation():
    # Curly quotes and French guillemets are punctuation; SQuAD's string.punctuation misses them.
    assert normalise("The “audit” ends.", normalisation=ENGLISH) == "audit ends"
    assert normalise("The “audit” ends.", normalisation=SQUAD) == "“audit” ends"


def test_french_removes_its_articles_and_elisions_and_keeps_accents():
    assert normalise("L’entreprise a réalisé des ventes de la société.", normalisation=FRENCH) == (
        "entreprise a réalisé ventes société"
    )
    assert (
        normalise("D'après le rapport, l'élève est là.", normalisation=FRENCH) == "après rapport élève est là"
    )
    # Accents tell words apart: ou / où differ.
    assert exact_match("Où ?", "ou", normalisation=FRENCH) == 0.0
    # One text in NFC, the other in NFD: the same word.
    nfc, nfd = unicodedata.normalize("NFC", "élève"), unicodedata.normalize("NFD", "élève")
    assert nfc != nfd
    assert exact_match(nfc, nfd, normalisation=FRENCH) == 1.0
    assert rouge_l(nfc, nfd, normalisation=FRENCH) == 1.0
    assert (
        token_f1(
            "Le chiffre d'affaires est de 148,6 M€.",
            "chiffre d’affaires est de 148,6 M€",
            normalisation=FRENCH,
        )
        == 1.0
    )


def test_auto_reads_the_language():
    assert resolve("auto", language="fr") == FRENCH
    assert resolve("auto", language="en") == ENGLISH
    assert resolve("auto", language="") == ENGLISH
    with pytest.raises(ValueError):
        resolve("latin")
