"""Evidence coverage's conventions as options (evaluation.measures.coverage.Conventions): Unicode
NFC on both sides, the authors' join, N - 1 units and short answers left out, budgets in
characters or words, and a tokenizer refused when it cannot be read here."""

from __future__ import annotations

import unicodedata
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from evaluation.measures.coverage import (
    ATTEST,
    CHARACTERS,
    WORDS,
    Conventions,
    SuffixAutomaton,
    TokenizerUnavailable,
    authors,
    coverage_at_budgets,
    load_tokenizer,
    longest_common_substring,
    prepared,
)


def score(passage, chunks, budgets, conventions=ATTEST):
    automaton = SuffixAutomaton(prepared(passage, conventions=conventions))
    return coverage_at_budgets(passages=[automaton], chunks=chunks, budgets=budgets, conventions=conventions)


def test_nfc_on_both_sides_makes_nfd_and_nfc_the_same_text():
    nfc, nfd = unicodedata.normalize("NFC", "élève"), unicodedata.normalize("NFD", "élève")
    assert score(nfc, [nfd], [10]) == [1.0]
    # Without it, "ve" is the longest run shared: 2 of the passage's 5 characters.
    raw = score(nfc, [nfd], [10], Conventions(nfc=False))
    assert raw == [longest_common_substring(nfc, nfd) / len(nfc)] == [0.4]


def test_the_authors_join_lets_a_match_run_across_chunks():
    passage = "la marge baisse"
    chunks = ["la marge", "baisse nettement"]
    assert score(passage, chunks, [100]) == [len("la marge") / len(passage)]
    assert score(passage, chunks, [100], Conventions(join=" ")) == [1.0]
    # The authors' whole convention, at a budget the chunks reach (4 tokens): 3 kept.
    assert score(passage, chunks, [4], authors()) == [1.0]


def test_the_authors_keep_n_minus_one_units_and_leave_short_answers_out():
    chunks = ["un deux trois quatre"]
    # Budget 3: the authors keep 2 words; budget 5: the chunks hold 4 words, left out.
    assert score("trois", chunks, [3, 4, 5], authors(unit=WORDS)) == [0.0, 1.0, None]
    assert score("trois", chunks, [3, 4, 5], Conventions(unit=WORDS)) == [1.0, 1.0, 1.0]


def test_budgets_in_characters():
    assert score("abcdef", ["abcdef"], [3, 6], Conventions(unit=CHARACTERS)) == [0.5, 1.0]


def test_a_tokenizer_is_read_from_a_local_file_or_refused_with_the_reason(tmp_path):
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        with pytest.raises(TokenizerUnavailable, match="tokenizers package is not installed"):
            load_tokenizer(str(tmp_path / "tokenizer.json"))
    else:
        with pytest.raises(TokenizerUnavailable, match="not a tokenizer file"):
            load_tokenizer(str(tmp_path / "missing.json"))


@pytest.mark.django_db
def test_the_command_refuses_a_tokenizer_it_cannot_read(tmp_path, campaign):
    with pytest.raises(CommandError, match="--tokenizer"):
        call_command(
            "evidence_coverage",
            campaign=[campaign.name],
            tokenizer=str(tmp_path / "x.json"),
            stdout=StringIO(),
        )
    out = StringIO()
    call_command(
        "evidence_coverage", campaign=[campaign.name], conventions="authors", format="json", stdout=out
    )
    assert '"join": " "' in out.getvalue() and '"short_left_out": true' in out.getvalue()
