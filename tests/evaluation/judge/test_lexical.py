from __future__ import annotations

import pytest

from evaluation.judge.lexical import lexical_relevance, lexical_veracity, number_forms

REPORT = (
    "Le chiffre d'affaires de Velmont SA atteint 12,4 M€ en 2023, en hausse de 8 % par rapport à "
    "2022. La marge brute s'établit à 66.5%. L'effectif compte 1 234 salariés répartis sur trois "
    "sites industriels en France et en Belgique."
)


def test_a_sentence_whose_words_and_numbers_are_in_its_source_is_true():
    label, reasoning, _ = lexical_veracity(
        sentence="Le chiffre d'affaires de Velmont atteint 12,4 M€ en 2023 [^4ca822^].", sources=[REPORT]
    )
    assert label == 1
    assert "content words found" in reasoning and "all 2 number(s) found" in reasoning


def test_one_number_absent_from_the_sources_makes_the_sentence_false():
    label, reasoning, _ = lexical_veracity(
        sentence="Le chiffre d'affaires de Velmont atteint 13,4 M€ en 2023 [^4ca822^].", sources=[REPORT]
    )
    assert label == 0
    assert "not found: 13,4" in reasoning


@pytest.mark.parametrize(
    ("sentence", "source"),
    [
        ("La marge brute atteint 66,5 %.", "marge brute : 66.5%"),
        ("La marge brute atteint 66.5%.", "marge brute : 66,5 %"),
        ("La marge brute atteint 66,50 %.", "marge brute : 66,5 %"),
        ("Les salariés sont 1 234.", "salariés : 1234"),
        ("Les salariés sont 1\u202f234.", "salariés : 1 234"),
        ("Les salariés sont 1\u00a0234.", "salariés : 1,234"),
        ("Le budget atteint 12,4 M€.", "le budget atteint 12,4 millions d'euros"),
        ("Le budget atteint 1,234,567.89 $.", "budget atteint : 1 234 567,89 $"),
    ],
)
def test_numbers_match_across_decimal_marks_spaces_and_units(sentence, source):
    assert lexical_veracity(sentence=sentence, sources=[source])[0] == 1


@pytest.mark.parametrize(
    ("written", "forms"),
    [
        ("66,5", {"66.5"}),
        ("66.50", {"66.5"}),
        ("1 234", {"1234"}),
        ("1,234", {"1.234", "1234"}),
        ("1.234.567", {"1234567"}),
        ("1 234,5", {"1234.5"}),
        ("007", {"7"}),
        ("1.2.3", {"1.2.3"}),
    ],
)
def test_number_forms_normalise_a_written_number(written, forms):
    assert number_forms(written) == forms


def test_a_filler_sentence_is_true_even_without_sources():
    for sentence in (
        "N'hésitez pas si vous avez d'autres questions !",
        "Bonjour, voici les éléments demandés.",
        "Merci.",
    ):
        label, reasoning, _ = lexical_veracity(sentence=sentence, sources=[])
        assert label == 1, sentence
        assert "filler" in reasoning


def test_a_sentence_with_content_that_cites_nothing_is_false():
    assert lexical_veracity(sentence="Velmont emploie 1 234 salariés.", sources=[])[0] == 0
    label, reasoning, _ = lexical_veracity(sentence="Velmont emploie 1 234 salariés.", sources=["", "  "])
    assert label == 0
    assert "no cited source" in reasoning


def test_a_sentence_about_something_else_than_its_source_is_false():
    label, reasoning, _ = lexical_veracity(
        sentence="La cybersécurité repose sur un pare-feu mutualisé et une supervision externalisée.",
        sources=[REPORT],
    )
    assert label == 0
    assert "0/" in reasoning


def test_accents_plurals_and_word_endings_are_folded():
    assert lexical_veracity(sentence="Financières, salariés.", sources=["financier salarie"])[0] == 1
    assert lexical_veracity(sentence="Les effectifs industriels.", sources=["EFFECTIF INDUSTRIEL"])[0] == 1


def test_citation_markers_are_neither_words_nor_numbers():
    label, reasoning, _ = lexical_veracity(
        sentence="Velmont compte trois sites [^4ca822^][^b7_1-f^].", sources=[REPORT]
    )
    assert label == 1
    assert "no number" in reasoning


def test_the_campaigns_own_citation_pattern_is_left_out_too():
    """A dataset citing ``[1]`` (HAGRID, ALCE): with the campaign's pattern the marker is no
    number of the sentence; with the default one it would be, and the verdict wrong."""
    sentence = "Velmont compte trois sites [1][2]."
    label, reasoning, _ = lexical_veracity(sentence=sentence, sources=[REPORT], citation_pattern=r"\[(\d+)\]")
    assert label == 1 and "no number" in reasoning
    wrong, why, _ = lexical_veracity(sentence=sentence, sources=[REPORT])
    assert wrong == 0 and "number(s) not found: 1, 2" in why


def test_the_threshold_decides_between_partial_overlaps():
    sentence = "Velmont compte trois sites logistiques modernes."  # 3 of 5 content words in REPORT
    assert lexical_veracity(sentence=sentence, sources=[REPORT], threshold=0.6)[0] == 1
    assert lexical_veracity(sentence=sentence, sources=[REPORT], threshold=0.8)[0] == 0


def test_words_may_come_from_any_of_the_cited_sources():
    sources = ["Velmont compte trois sites.", "La marge brute s'établit à 66,5 %."]
    assert lexical_veracity(sentence="Velmont a une marge brute de 66,5 %.", sources=sources)[0] == 1
    assert lexical_veracity(sentence="Velmont a une marge brute de 66,5 %.", sources=sources[:1])[0] == 0


def test_the_lexical_judge_is_deterministic():
    calls = [lexical_veracity(sentence="La marge brute atteint 70 %.", sources=[REPORT]) for _ in range(3)]
    assert calls[0] == calls[1] == calls[2]


def test_an_answer_that_takes_up_the_question_is_relevant():
    label, reasoning, _ = lexical_relevance(
        question="Quel est le chiffre d'affaires 2023 de Velmont ?",
        answer="Le chiffre d'affaires de Velmont atteint 12,4 M€ en 2023 [^4ca822^].",
    )
    assert label == 1
    assert "4/4" in reasoning


def test_an_answer_that_ignores_the_question_is_not_relevant():
    label, _, _ = lexical_relevance(
        question="Quel est le chiffre d'affaires 2023 de Velmont ?",
        answer="La météo de Lyon sera ensoleillée demain.",
    )
    assert label == 0


def test_an_abstention_is_judged_like_any_answer_by_its_overlap():
    question = "Quel est le chiffre d'affaires 2023 de Velmont ?"
    assert lexical_relevance(question=question, answer="Je ne dispose pas de cette information.")[0] == 0
    restating = "Les documents ne donnent pas le chiffre d'affaires 2023 de Velmont."
    assert lexical_relevance(question=question, answer=restating)[0] == 1


def test_a_question_without_content_words_makes_any_answer_relevant():
    label, reasoning, _ = lexical_relevance(question="Et alors ?", answer="Rien.")
    assert label == 1
    assert "no content word" in reasoning


# Its reasons, in the reader's language


def test_every_reason_of_the_lexical_judge_has_a_french_translation():
    from django.utils import translation

    from evaluation.judge import lexical

    with translation.override("fr"):
        for template in lexical.TEMPLATES:
            assert translation.gettext(template) != template, template


@pytest.mark.parametrize(
    ("verdict", "french"),
    [
        (
            lambda: lexical_veracity(sentence="Le chiffre d'affaires atteint 13,4 M€.", sources=[REPORT]),
            "lexical\u00a0: 3/3 mots de contenu trouvés dans les sources citées (100\u00a0%, seuil 60\u00a0%)"
            "\u00a0; nombre(s) introuvable(s)\u00a0: 13,4",
        ),
        (
            lambda: lexical_veracity(sentence="Merci pour votre question.", sources=[REPORT]),
            "lexical\u00a0: aucun mot de contenu ni aucun nombre (phrase de remplissage)",
        ),
        (
            lambda: lexical_relevance(question="Quel est le chiffre d'affaires 2023 ?", answer=REPORT),
            "lexical\u00a0: 3/3 des termes de la question trouvés dans la réponse "
            "(100\u00a0%, seuil 50\u00a0%)",
        ),
    ],
)
def test_a_stored_reason_is_read_back_in_french_and_stays_english_in_english(verdict, french):
    from django.utils import translation

    from evaluation.judge import lexical

    reason = verdict().reasoning
    assert reason.startswith("lexical: ")
    with translation.override("fr"):
        assert lexical.translate(reason, translation.gettext) == french
    with translation.override("en"):
        assert lexical.translate(reason, translation.gettext) == reason


def test_an_llm_s_reasoning_is_left_as_it_was_written():
    from django.utils import translation

    from evaluation.judge import lexical

    with translation.override("fr"):
        assert lexical.translate("lexical: whatever the model says", translation.gettext) == (
            "lexical: whatever the model says"
        )
