"""Evidence coverage, the linear-time longest common substring, thresholds and category shares."""

from __future__ import annotations

import random

import pytest

from evaluation.measures.coverage import (
    SuffixAutomaton,
    category_shares,
    coverage_at_budgets,
    fit_threshold,
    longest_common_substring,
    parse_budgets,
    prefix_lengths,
    tokenize,
)


def brute_lcs(a: str, b: str) -> int:
    best = 0
    previous = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        current = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def test_the_suffix_automaton_agrees_with_brute_force_on_random_strings():
    rng = random.Random(7)
    for _ in range(600):
        alphabet = rng.choice(["ab", "abc", "abcd é"])
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        b = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert longest_common_substring(a, b) == brute_lcs(a, b), (a, b)


def test_longest_in_prefixes_matches_brute_force_on_every_prefix():
    rng = random.Random(3)
    for _ in range(200):
        a = "".join(rng.choice("abc") for _ in range(rng.randint(1, 15)))
        b = "".join(rng.choice("abc") for _ in range(rng.randint(0, 25)))
        ends = sorted(rng.sample(range(len(b) + 1), k=min(4, len(b) + 1)))
        assert SuffixAutomaton(a).longest_in_prefixes(b, ends) == [brute_lcs(a, b[:e]) for e in ends]


def test_tokens_are_unicode_words_and_single_punctuation():
    assert tokenize("Le CA 2023 s'élève à 48,2 M€.") == [
        "Le", "CA", "2023", "s", "'", "élève", "à", "48", ",", "2", "M", "€", ".",
    ]  # fmt: skip
    assert tokenize("  ") == []


def test_prefix_lengths_cut_after_the_nth_token_and_keep_the_whole_text_beyond():
    assert prefix_lengths("ab cd, ef", [1, 2, 3, 10]) == [2, 5, 6, 9]


# Hand-computed cases of the score.

PASSAGE = "revenue was 48 million"  # 22 characters


def score(passages: list[str], chunks: list[str], budgets: list[int]) -> list[float] | None:
    return coverage_at_budgets(
        passages=[SuffixAutomaton(p) for p in passages], chunks=chunks, budgets=budgets
    )


def test_a_passage_found_whole_scores_one():
    assert score([PASSAGE], ["In 2023 revenue was 48 million euros."], [100]) == [1.0]


def test_no_overlap_scores_zero():
    assert score(["xyz"], ["abc"], [100]) == [0.0]


def test_partial_overlap_scores_the_longest_common_substring_over_the_passage_length():
    # "revenue was 4" (13 characters) is the longest piece of the passage in the chunk.
    assert score([PASSAGE], ["the revenue was 45 thousand"], [100]) == [pytest.approx(13 / 22)]


def test_the_score_is_the_mean_over_passages():
    assert score([PASSAGE, "xyz"], ["revenue was 48 million"], [100]) == [pytest.approx(0.5)]


def test_the_budget_truncates_the_chunks_in_rank_order():
    chunks = ["alpha beta", "revenue was 48 million"]
    # Tokens: alpha beta | revenue was 48 million: 2 tokens hold nothing of the passage, 4 hold
    # "revenue was" (11 characters), 6 the whole passage.
    assert score([PASSAGE], chunks, [2, 4, 6]) == [pytest.approx(1 / 22), pytest.approx(11 / 22), 1.0]


def test_a_match_does_not_run_across_two_chunks():
    assert score(["ab cd"], ["ab", "cd"], [100]) == [pytest.approx(2 / 5)]


def test_an_answer_without_chunks_scores_zero_and_a_question_without_passages_none():
    assert score([PASSAGE], [], [100]) == [0.0]
    assert score([], ["abc"], [100]) is None


def test_budgets_in_any_order_get_their_own_scores():
    chunks = ["alpha beta", "revenue was 48 million"]
    assert score([PASSAGE], chunks, [6, 2]) == [1.0, pytest.approx(1 / 22)]


@pytest.mark.parametrize("text", ["0", "-5", "a", "1.5", "", "100,,200", "100,100"])
def test_a_budget_that_is_not_a_positive_whole_number_is_refused(text):
    with pytest.raises(ValueError):
        parse_budgets(text)


def test_budgets_are_sorted():
    assert parse_budgets("300, 100,200") == [100, 200, 300]


# Thresholds and shares.


def test_the_lower_threshold_separates_the_insufficient_answers_below_it():
    scores = [0.1, 0.2, 0.3, 0.6, 0.8, 0.9]
    insufficient = [True, True, False, False, False, False]
    fitted = fit_threshold(scores=scores, positive=insufficient, below=True)
    assert fitted.value == pytest.approx(0.25)
    assert (fitted.agreement, fitted.n, fitted.positives) == (1.0, 6, 2)


def test_the_upper_threshold_maximises_agreement_when_labels_overlap():
    scores = [0.1, 0.4, 0.5, 0.7, 0.8, 0.9]
    correct = [False, False, True, False, True, True]
    fitted = fit_threshold(scores=scores, positive=correct, below=False)
    # Above 0.75: 5 of 6 agree (0.5 is correct but below); above 0.45: also 5 of 6; the highest wins.
    assert fitted.value == pytest.approx(0.75)
    assert fitted.agreement == pytest.approx(5 / 6)


def test_a_threshold_on_one_category_only_puts_every_answer_on_its_side():
    fitted = fit_threshold(scores=[0.2, 0.5], positive=[True, True], below=True)
    assert fitted.value > 0.5 and fitted.agreement == 1.0
    assert fit_threshold(scores=[], positive=[], below=True).value is None


def test_category_shares_cut_the_sorted_scores_into_equal_bins():
    pairs = [(0.9, 2), (0.1, 0), (0.2, 0), (0.5, 1), (0.7, 2), (0.3, 1), (0.8, 2)]
    bins = category_shares(pairs=pairs, categories=[0, 1, 2], bins=3)
    assert [(b.low, b.high, b.n) for b in bins] == [(0.1, 0.3, 3), (0.5, 0.7, 2), (0.8, 0.9, 2)]
    assert bins[0].shares == {0: pytest.approx(2 / 3), 1: pytest.approx(1 / 3), 2: 0.0}
    assert bins[2].shares == {0: 0.0, 1: 0.0, 2: 1.0}
    assert category_shares(pairs=[], categories=[0, 1], bins=5) == []
