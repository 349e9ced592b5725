"""Sentence splitting, citations, source blobs and language detection (expected outputs written by hand)."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest

from annotation.corpus.citations import find_citations
from annotation.corpus.conventions import DEFAULT_CITATION_PATTERN
from annotation.corpus.language import detect_language
from annotation.corpus.sentences import SplitSentence, split_sentences
from annotation.corpus.sources import parse_source_blob

# (input, [(sentence text, cited ids), ...])
SPLIT_CASES = {
    # Plain sentences.
    "fr_two_plain_sentences": (
        "Le chiffre d'affaires progresse. La marge baisse.",
        [("Le chiffre d'affaires progresse.", ()), ("La marge baisse.", ())],
    ),
    "en_two_plain_sentences": (
        "Revenue increased in 2023. Margins were stable.",
        [("Revenue increased in 2023.", ()), ("Margins were stable.", ())],
    ),
    # Citation markers before or after the final period.
    "fr_marker_before_the_period": (
        "Le chiffre d'affaires atteint 48,2 M€ en 2023 [^a1^]. Ensuite, la marge baisse [^b2^].",
        [
            ("Le chiffre d'affaires atteint 48,2 M€ en 2023 [^a1^].", ("a1",)),
            ("Ensuite, la marge baisse [^b2^].", ("b2",)),
        ],
    ),
    "fr_marker_after_the_period": (
        "Le chiffre d'affaires atteint 48,2 M€ en 2023. [^a1^] Ensuite, la marge baisse. [^b2^]",
        [
            ("Le chiffre d'affaires atteint 48,2 M€ en 2023. [^a1^]", ("a1",)),
            ("Ensuite, la marge baisse. [^b2^]", ("b2",)),
        ],
    ),
    "en_marker_glued_after_the_period": (
        "Revenue grew in 2023.[^a1^] Margins fell.[^b2^]",
        [("Revenue grew in 2023.[^a1^]", ("a1",)), ("Margins fell.[^b2^]", ("b2",))],
    ),
    "fr_adjacent_markers_never_split": (
        "La dette nette diminue [^a^][^b^]. Le ratio s'améliore [^c^].",
        [("La dette nette diminue [^a^][^b^].", ("a", "b")), ("Le ratio s'améliore [^c^].", ("c",))],
    ),
    "fr_spaced_markers_never_split": (
        "La dette nette diminue [^a^] [^b^]. Le ratio s'améliore.",
        [("La dette nette diminue [^a^] [^b^].", ("a", "b")), ("Le ratio s'améliore.", ())],
    ),
    "en_spaced_markers_after_the_period_go_to_the_first_sentence": (
        "Net debt decreased. [^a^] [^b^] The ratio improved.",
        [("Net debt decreased. [^a^] [^b^]", ("a", "b")), ("The ratio improved.", ())],
    ),
    "fr_repeated_id_is_listed_once": (
        "La marge est de 11,4 % [^a^] selon le rapport [^a^] et la note [^b^].",
        [("La marge est de 11,4 % [^a^] selon le rapport [^a^] et la note [^b^].", ("a", "b"))],
    ),
    "fr_period_after_a_marker_after_a_period": (
        "La marge baisse. [^a^]. Le ratio monte.",
        [("La marge baisse. [^a^].", ("a",)), ("Le ratio monte.", ())],
    ),
    "fr_marker_after_a_question_mark": (
        "Quel est le risque ? [^a^] Le change.",
        [("Quel est le risque ? [^a^]", ("a",)), ("Le change.", ())],
    ),
    # Abbreviations.
    "fr_monsieur": (
        "M. Dupont dirige la filiale depuis 2019 [^a^]. Il sera remplacé en 2025.",
        [("M. Dupont dirige la filiale depuis 2019 [^a^].", ("a",)), ("Il sera remplacé en 2025.", ())],
    ),
    "fr_madame_and_messieurs": (
        "Mme. Martin et MM. Durand et Petit siègent au conseil. Le conseil se réunit chaque mois.",
        [
            ("Mme. Martin et MM. Durand et Petit siègent au conseil.", ()),
            ("Le conseil se réunit chaque mois.", ()),
        ],
    ),
    "en_doctor_mister_missis": (
        "Dr. Smith led the audit [^a^]. Mr. Brown and Mrs. Green signed it.",
        [("Dr. Smith led the audit [^a^].", ("a",)), ("Mr. Brown and Mrs. Green signed it.", ())],
    ),
    "fr_par_exemple": (
        "Certaines charges, p. ex. les loyers, sont fixes. D'autres varient.",
        [("Certaines charges, p. ex. les loyers, sont fixes.", ()), ("D'autres varient.", ())],
    ),
    "en_eg_and_ie": (
        "Some costs, e.g. Rent, are fixed. Others, i.e. Wages, vary with activity.",
        [("Some costs, e.g. Rent, are fixed.", ()), ("Others, i.e. Wages, vary with activity.", ())],
    ),
    "en_inc_and_ltd_inside_sentences": (
        "Apple Inc. reported higher revenue [^a^]. Acme Ltd. did not publish its accounts.",
        [
            ("Apple Inc. reported higher revenue [^a^].", ("a",)),
            ("Acme Ltd. did not publish its accounts.", ()),
        ],
    ),
    "en_inc_ending_a_sentence": (
        "The deal was signed by Acme Inc. The closing took place in June [^a^].",
        [("The deal was signed by Acme Inc.", ()), ("The closing took place in June [^a^].", ("a",))],
    ),
    "fr_societe_anonyme": (
        "La société Velmont S.A. a été fondée en 1990 [^a^]. Elle emploie 312 personnes.",
        [
            ("La société Velmont S.A. a été fondée en 1990 [^a^].", ("a",)),
            ("Elle emploie 312 personnes.", ()),
        ],
    ),
    "fr_cf_and_article": (
        "Le délai est de trois mois (cf. Art. 12 du contrat) [^a^]. Il peut être prolongé.",
        [
            ("Le délai est de trois mois (cf. Art. 12 du contrat) [^a^].", ("a",)),
            ("Il peut être prolongé.", ()),
        ],
    ),
    "fr_numero_volume_pages": (
        "Voir le rapport n° 12, vol. 2, p. 45 et pp. 50-52 [^a^]. Les chiffres y sont détaillés.",
        [
            ("Voir le rapport n° 12, vol. 2, p. 45 et pp. 50-52 [^a^].", ("a",)),
            ("Les chiffres y sont détaillés.", ()),
        ],
    ),
    "fr_environ_and_approximativement": (
        "L'effectif atteint env. 300 salariés, soit approx. 12 % de plus [^a^]. La hausse est récente.",
        [
            ("L'effectif atteint env. 300 salariés, soit approx. 12 % de plus [^a^].", ("a",)),
            ("La hausse est récente.", ()),
        ],
    ),
    "en_figure_and_number": (
        "See Fig. 3 and contract No. 42 for details [^a^]. Both are in the annex.",
        [("See Fig. 3 and contract No. 42 for details [^a^].", ("a",)), ("Both are in the annex.", ())],
    ),
    "en_no_as_a_word_ends_a_sentence": (
        "Did the board approve the plan? No. It was rejected [^a^].",
        [("Did the board approve the plan?", ()), ("No.", ()), ("It was rejected [^a^].", ("a",))],
    ),
    "en_us_inside_a_sentence": (
        "U.S. GAAP applies to the group [^a^]. IFRS does not.",
        [("U.S. GAAP applies to the group [^a^].", ("a",)), ("IFRS does not.", ())],
    ),
    "fr_inline_numbering_after_a_colon": (
        "Deux étapes : 1. Collecter les documents. 2. Les analyser.",
        [("Deux étapes : 1. Collecter les documents.", ()), ("2. Les analyser.", ())],
    ),
    "fr_chapitre": (
        "Le risque est décrit au ch. 4 du rapport. Il est jugé faible.",
        [("Le risque est décrit au ch. 4 du rapport.", ()), ("Il est jugé faible.", ())],
    ),
    "fr_etc_ending_a_sentence": (
        "Les charges incluent les loyers, l'énergie, etc. Elles augmentent de 4 %.",
        [("Les charges incluent les loyers, l'énergie, etc.", ()), ("Elles augmentent de 4 %.", ())],
    ),
    "fr_etc_inside_a_sentence": (
        "Les loyers, l'énergie, etc. sont des charges fixes [^a^].",
        [("Les loyers, l'énergie, etc. sont des charges fixes [^a^].", ("a",))],
    ),
    "fr_c_a_d": (
        "Le ratio est élevé, c.-à-d. supérieur à 3. Il baisse.",
        [("Le ratio est élevé, c.-à-d. supérieur à 3.", ()), ("Il baisse.", ())],
    ),
    "fr_unknown_abbreviation_followed_by_lowercase": (
        "Le terme est défini à l'annexe techn. du contrat. Il est clair.",
        [("Le terme est défini à l'annexe techn. du contrat.", ()), ("Il est clair.", ())],
    ),
    "fr_lowercase_m_for_metres_ends_a_sentence": (
        "La tour mesure 120 m. Elle a été livrée en 2020.",
        [("La tour mesure 120 m.", ()), ("Elle a été livrée en 2020.", ())],
    ),
    # Numbers.
    "fr_decimals_percentages_and_amounts": (
        "La marge passe de 66,5 % à 70,2 % en 2023 [^a^]. Le résultat net atteint 1 234,56 €.",
        [
            ("La marge passe de 66,5 % à 70,2 % en 2023 [^a^].", ("a",)),
            ("Le résultat net atteint 1 234,56 €.", ()),
        ],
    ),
    "en_decimal_points_and_percentages": (
        "Revenue rose 12.5% to 3.2 billion euros [^a^]. Costs rose 2.1%.",
        [("Revenue rose 12.5% to 3.2 billion euros [^a^].", ("a",)), ("Costs rose 2.1%.", ())],
    ),
    "fr_percentage_before_the_period": (
        "La marge atteint 11,4 %. Elle progresse.",
        [("La marge atteint 11,4 %.", ()), ("Elle progresse.", ())],
    ),
    "fr_next_sentence_starts_with_a_number": (
        "Le bilan est solide. 45 % des actifs sont liquides.",
        [("Le bilan est solide.", ()), ("45 % des actifs sont liquides.", ())],
    ),
    "fr_period_after_a_parenthesis": (
        "Le CA progresse (+6 %). La marge baisse (voir p. 12).",
        [("Le CA progresse (+6 %).", ()), ("La marge baisse (voir p. 12).", ())],
    ),
    # Initials.
    "fr_initial": (
        "Le rapport est signé par J. Dupont [^a^]. Il date de mars.",
        [("Le rapport est signé par J. Dupont [^a^].", ("a",)), ("Il date de mars.", ())],
    ),
    "en_several_initials": (
        "The audit was led by J. R. Smith and J.-P. Martin. It ended in May.",
        [("The audit was led by J. R. Smith and J.-P. Martin.", ()), ("It ended in May.", ())],
    ),
    # Ellipsis, questions, exclamations, quotes.
    "fr_ellipsis_character": (
        "Plusieurs facteurs jouent… Le principal est le prix de l'énergie [^a^].",
        [("Plusieurs facteurs jouent…", ()), ("Le principal est le prix de l'énergie [^a^].", ("a",))],
    ),
    "fr_three_dots_inside_a_sentence": (
        "Les coûts, les délais... et les risques augmentent. La direction réagit.",
        [("Les coûts, les délais... et les risques augmentent.", ()), ("La direction réagit.", ())],
    ),
    "en_three_dots_ending_a_sentence": (
        "The list goes on... The main factor is energy.",
        [("The list goes on...", ()), ("The main factor is energy.", ())],
    ),
    "fr_question_and_exclamation_marks": (
        "Pourquoi la marge baisse-t-elle ? Les coûts augmentent [^a^] ! C'est net.",
        [
            ("Pourquoi la marge baisse-t-elle ?", ()),
            ("Les coûts augmentent [^a^] !", ("a",)),
            ("C'est net.", ()),
        ],
    ),
    "en_question_and_exclamation_marks": (
        "Is the company profitable? Yes! Profit reached 2 million [^a^].",
        [("Is the company profitable?", ()), ("Yes!", ()), ("Profit reached 2 million [^a^].", ("a",))],
    ),
    "fr_combined_marks": (
        "Vraiment ?! Oui.",
        [("Vraiment ?!", ()), ("Oui.", ())],
    ),
    "fr_guillemets_stay_with_the_sentence": (
        "Le rapport conclut : « La situation est saine. » Le conseil approuve.",
        [("Le rapport conclut : « La situation est saine. »", ()), ("Le conseil approuve.", ())],
    ),
    "en_closing_quote_stays_with_the_sentence": (
        'The CEO said "growth will continue." Analysts agree.',
        [('The CEO said "growth will continue."', ()), ("Analysts agree.", ())],
    ),
    # Lists.
    "fr_bullet_list_after_a_colon": (
        "Les risques sont :\n- le change [^a^] ;\n- le crédit [^b^] ;\n* la liquidité ;\n• la conformité.",
        [
            ("Les risques sont :", ()),
            ("le change [^a^] ;", ("a",)),
            ("le crédit [^b^] ;", ("b",)),
            ("la liquidité ;", ()),
            ("la conformité.", ()),
        ],
    ),
    "fr_numbered_list": (
        "Trois étapes :\n1. Collecter les documents [^a^].\n2) Analyser les contrats.\n"
        "3. Rédiger la synthèse.",
        [
            ("Trois étapes :", ()),
            ("Collecter les documents [^a^].", ("a",)),
            ("Analyser les contrats.", ()),
            ("Rédiger la synthèse.", ()),
        ],
    ),
    "fr_list_item_with_two_sentences": (
        "- Le chiffre d'affaires progresse [^a^]. La marge baisse [^b^].\n- Aucun litige en cours.",
        [
            ("Le chiffre d'affaires progresse [^a^].", ("a",)),
            ("La marge baisse [^b^].", ("b",)),
            ("Aucun litige en cours.", ()),
        ],
    ),
    "en_items_without_final_punctuation": (
        "Key figures:\n- Revenue: 48.2 million [^a^]\n- Headcount: 312 [^b^]",
        [("Key figures:", ()), ("Revenue: 48.2 million [^a^]", ("a",)), ("Headcount: 312 [^b^]", ("b",))],
    ),
    "fr_line_break_after_a_list_item_separates": (
        "- Premier point\n- Second point\nEn conclusion, tout va bien.",
        [("Premier point", ()), ("Second point", ()), ("En conclusion, tout va bien.", ())],
    ),
    "fr_nested_list": (
        "1. Finance\n   - CA en hausse [^a^]\n   - Marge en baisse\n2. RH",
        [("Finance", ()), ("CA en hausse [^a^]", ("a",)), ("Marge en baisse", ()), ("RH", ())],
    ),
    "fr_indented_line_continues_a_list_item": (
        "- Le contrat expire\n  en 2025 [^a^].\n- Il est renouvelable.",
        [("Le contrat expire en 2025 [^a^].", ("a",)), ("Il est renouvelable.", ())],
    ),
    "fr_colon_with_a_marker_introducing_a_list": (
        "Voici les chiffres clés [^a^] :\n- CA : 48,2 M€\n- Marge : 11,4 %",
        [("Voici les chiffres clés [^a^] :", ("a",)), ("CA : 48,2 M€", ()), ("Marge : 11,4 %", ())],
    ),
    "fr_colon_inside_a_line_does_not_split": (
        "Trois risques : le change, le crédit et la liquidité.",
        [("Trois risques : le change, le crédit et la liquidité.", ())],
    ),
    # Markdown.
    "fr_heading_is_its_own_sentence": (
        "## Synthèse financière\nLe chiffre d'affaires atteint 48,2 M€ [^a^].",
        [("Synthèse financière", ()), ("Le chiffre d'affaires atteint 48,2 M€ [^a^].", ("a",))],
    ),
    "fr_heading_levels_and_closing_hashes": (
        "# Risques\n\n### Risque de change ###\n\nL'exposition au dollar est faible.",
        [("Risques", ()), ("Risque de change", ()), ("L'exposition au dollar est faible.", ())],
    ),
    "fr_heading_with_a_marker": (
        "## Chiffres clés [^a^]\nLe CA progresse.",
        [("Chiffres clés [^a^]", ("a",)), ("Le CA progresse.", ())],
    ),
    "fr_heading_with_a_period_is_not_split": (
        "## 1. Contexte\nLa société est cotée.",
        [("1. Contexte", ()), ("La société est cotée.", ())],
    ),
    "fr_bold_and_italics_never_split": (
        "Le **chiffre d'affaires** atteint **48,2 M€** [^a^]. La *marge* baisse.",
        [("Le **chiffre d'affaires** atteint **48,2 M€** [^a^].", ("a",)), ("La *marge* baisse.", ())],
    ),
    "fr_bold_label_with_a_colon": (
        "**Attention :** le contrat expire en 2025 [^a^]. Il doit être renouvelé.",
        [("**Attention :** le contrat expire en 2025 [^a^].", ("a",)), ("Il doit être renouvelé.", ())],
    ),
    "fr_period_inside_closing_bold": (
        "Le point clé est **la dette.** Elle baisse.",
        [("Le point clé est **la dette.**", ()), ("Elle baisse.", ())],
    ),
    "fr_bold_line_as_a_title": (
        "**Synthèse**\nLe chiffre d'affaires progresse [^a^].",
        [("**Synthèse**", ()), ("Le chiffre d'affaires progresse [^a^].", ("a",))],
    ),
    "fr_bold_list_item": (
        "- **Chiffre d'affaires** : 48,2 M€ [^a^]\n- **Marge** : 11,4 % [^b^]",
        [("**Chiffre d'affaires** : 48,2 M€ [^a^]", ("a",)), ("**Marge** : 11,4 % [^b^]", ("b",))],
    ),
    "fr_horizontal_rule_is_not_a_sentence": (
        "La marge baisse.\n\n---\n\nLe ratio monte.",
        [("La marge baisse.", ()), ("Le ratio monte.", ())],
    ),
    # Paragraphs and line breaks.
    "fr_paragraphs": (
        "Premier paragraphe ici. Deuxième phrase.\n\nSecond paragraphe.",
        [("Premier paragraphe ici.", ()), ("Deuxième phrase.", ()), ("Second paragraphe.", ())],
    ),
    "fr_soft_line_break_without_punctuation_joins": (
        "Le chiffre d'affaires\natteint 48,2 M€ [^a^].",
        [("Le chiffre d'affaires atteint 48,2 M€ [^a^].", ("a",))],
    ),
    "fr_line_ending_with_a_marker_before_a_capital_ends_the_sentence": (
        "Le chiffre progresse [^a^]\nLa marge baisse [^b^]",
        [("Le chiffre progresse [^a^]", ("a",)), ("La marge baisse [^b^]", ("b",))],
    ),
    "fr_line_ending_with_a_marker_before_lowercase_continues": (
        "Le chiffre progresse [^a^]\net la marge baisse [^b^].",
        [("Le chiffre progresse [^a^] et la marge baisse [^b^].", ("a", "b"))],
    ),
    "en_line_break_after_a_period": (
        "Margins fell.\nThe ratio improved.",
        [("Margins fell.", ()), ("The ratio improved.", ())],
    ),
    "fr_windows_line_endings": (
        "La marge baisse.\r\n\r\nLe ratio monte.",
        [("La marge baisse.", ()), ("Le ratio monte.", ())],
    ),
    # Empty pieces and stray markers.
    "empty_text": ("", []),
    "whitespace_only": ("   \n\n \t \n", []),
    "markers_only": ("[^a^] [^b^]", []),
    "fr_stray_marker_paragraph_goes_to_the_previous_sentence": (
        "La marge baisse.\n\n[^a^] [^b^]",
        [("La marge baisse. [^a^] [^b^]", ("a", "b"))],
    ),
    "fr_stray_marker_line_goes_to_the_previous_sentence": (
        "La marge baisse.\n[^a^]",
        [("La marge baisse. [^a^]", ("a",))],
    ),
    "fr_stray_marker_item_goes_to_the_previous_sentence": (
        "- La marge baisse.\n- [^a^]",
        [("La marge baisse. [^a^]", ("a",))],
    ),
    "fr_marker_line_after_a_list_item_goes_to_the_item": (
        "- La marge baisse.\n[^a^]\nEnsuite le ratio monte.",
        [("La marge baisse. [^a^]", ("a",)), ("Ensuite le ratio monte.", ())],
    ),
    "fr_marker_line_opening_a_paragraph_goes_to_the_previous_sentence": (
        "La marge baisse.\n\n[^a^]\nLe ratio monte.",
        [("La marge baisse. [^a^]", ("a",)), ("Le ratio monte.", ())],
    ),
    "fr_leading_marker_stays_with_the_first_sentence": (
        "[^a^] La marge baisse.",
        [("[^a^] La marge baisse.", ("a",))],
    ),
    # Elided abbreviations, French months, "Tab." and "Sté." are no sentence ends.
    "fr_elided_article_abbreviation_goes_on": (
        "Selon l'art. 3 du contrat, le prix est ferme [^a^]. Il est payable à 30 jours.",
        [("Selon l'art. 3 du contrat, le prix est ferme [^a^].", ("a",)), ("Il est payable à 30 jours.", ())],
    ),
    "fr_elided_article_abbreviation_with_a_typographic_apostrophe_goes_on": (
        "Les clauses d’art. 12 et d'art. 14 s'appliquent. Le reste est caduc.",
        [("Les clauses d’art. 12 et d'art. 14 s'appliquent.", ()), ("Le reste est caduc.", ())],
    ),
    "fr_month_abbreviation_before_a_year_goes_on": (
        "Le bail court au 31 déc. 2022 [^a^]. Il a été signé le 3 janv. 2019 et révisé le 4 févr. 2021.",
        [
            ("Le bail court au 31 déc. 2022 [^a^].", ("a",)),
            ("Il a été signé le 3 janv. 2019 et révisé le 4 févr. 2021.", ()),
        ],
    ),
    "fr_every_month_abbreviation_before_a_year_goes_on": (
        "Les échéances : 1er mars. 2021, avr. 2021, juil. 2021, sept. 2021, oct. 2021 et nov. 2021.",
        [("Les échéances : 1er mars. 2021, avr. 2021, juil. 2021, sept. 2021, oct. 2021 et nov. 2021.", ())],
    ),
    "fr_month_abbreviation_before_a_capital_ends_the_sentence": (
        "Le paiement est arrivé en sept. La banque l'a confirmé.",
        [("Le paiement est arrivé en sept.", ()), ("La banque l'a confirmé.", ())],
    ),
    "fr_table_abbreviation_goes_on": (
        "Le détail figure dans le Tab. 3 du rapport [^a^]. Il est complet.",
        [("Le détail figure dans le Tab. 3 du rapport [^a^].", ("a",)), ("Il est complet.", ())],
    ),
    "fr_societe_abbreviation_in_parentheses_goes_on": (
        "Le prêteur (Sté. Générale) a signé [^a^]. Il a versé les fonds.",
        [("Le prêteur (Sté. Générale) a signé [^a^].", ("a",)), ("Il a versé les fonds.", ())],
    ),
    # "[^x^]. Elle" is cut, and so is the same with the space forgotten: a marker then a period
    # ends a statement, and a capital right after it starts the next one.
    "fr_marker_period_and_capital_without_space_is_cut_as_with_a_space": (
        "L'effectif compte 312 personnes[^j^].Elle recrute encore [^k^].",
        [("L'effectif compte 312 personnes[^j^].", ("j",)), ("Elle recrute encore [^k^].", ("k",))],
    ),
    "fr_initials_glued_to_a_capital_are_not_cut": (
        "La société Velmont S.A.Elle est cotée.",
        [("La société Velmont S.A.Elle est cotée.", ())],
    ),
}


@pytest.mark.parametrize(("text", "expected"), list(SPLIT_CASES.values()), ids=list(SPLIT_CASES))
def test_split_sentences_gives_the_expected_sentences_and_cited_ids(text, expected):
    sentences = split_sentences(text)
    assert [(s.text, s.cited_ids) for s in sentences] == expected
    assert [s.position for s in sentences] == list(range(len(expected)))


def test_there_are_enough_hand_written_splitting_cases():
    assert len(SPLIT_CASES) >= 45


def test_sentences_know_their_paragraph_and_its_index():
    text = "## Titre\n\nPhrase un [^a^]. Phrase deux.\n\n- point a\n- point b"
    sentences = split_sentences(text)
    assert [(s.text, s.paragraph, s.paragraph_index) for s in sentences] == [
        ("Titre", "## Titre", 0),
        ("Phrase un [^a^].", "Phrase un [^a^]. Phrase deux.", 1),
        ("Phrase deux.", "Phrase un [^a^]. Phrase deux.", 1),
        ("point a", "- point a\n- point b", 2),
        ("point b", "- point a\n- point b", 2),
    ]


def test_a_stray_marker_paragraph_leaves_the_previous_sentence_in_its_own_paragraph():
    sentences = split_sentences("Un.\n\nDeux.\n\n[^z^]\n\nTrois.")
    assert [(s.text, s.paragraph, s.paragraph_index, s.position) for s in sentences] == [
        ("Un.", "Un.", 0, 0),
        ("Deux. [^z^]", "Deux.", 1, 1),
        ("Trois.", "Trois.", 3, 2),
    ]


def test_split_sentences_accepts_another_citation_pattern():
    sentences = split_sentences(
        "Revenue rose [1]. Costs fell. [2] [3] Profit doubled.", citation_pattern=r"\[(\d+)\]"
    )
    assert [(s.text, s.cited_ids) for s in sentences] == [
        ("Revenue rose [1].", ("1",)),
        ("Costs fell. [2] [3]", ("2", "3")),
        ("Profit doubled.", ()),
    ]


def test_another_citation_pattern_treats_the_default_markers_as_text():
    sentences = split_sentences("Revenue rose. [^a^] Costs fell.", citation_pattern=r"\[(\d+)\]")
    assert [(s.text, s.cited_ids) for s in sentences] == [("Revenue rose.", ()), ("[^a^] Costs fell.", ())]


def test_split_sentence_is_immutable():
    sentence = split_sentences("La marge baisse [^a^].")[0]
    assert sentence == SplitSentence(
        position=0,
        text="La marge baisse [^a^].",
        paragraph="La marge baisse [^a^].",
        paragraph_index=0,
        cited_ids=("a",),
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        sentence.text = "autre"  # type: ignore[misc]


def test_split_sentences_is_deterministic():
    text = "## Titre\n\nM. Dupont signe [^a^]. Le contrat court.\n\n- point [^b^]\n- autre"
    assert split_sentences(text) == split_sentences(text)


FUZZ_TOKENS = [
    "Le", "chiffre", "Ensuite", "et", "M.", "Dr.", "etc.", "p.", "J.", "Inc.", "12,5", "%", "3.2", ".", "!",
    "?", "…", "...", ":", "\n", "\n\n", "- ", "1. ", "## ", "**", "«", "»", "(", ")", "|", "---", ">",
    "[^a1^]", "[^b2^]", "[^c3^]", " ",
]  # fmt: skip


def test_no_cited_id_is_lost_and_no_sentence_is_empty_on_random_markdown():
    rng = random.Random(20231)
    for _ in range(3000):
        text = "".join(rng.choice(FUZZ_TOKENS) + rng.choice(["", " "]) for _ in range(rng.randrange(60)))
        sentences = split_sentences(text)
        assert [s.position for s in sentences] == list(range(len(sentences)))
        for sentence in sentences:
            assert sentence.text == sentence.text.strip()
            assert re.search(r"\w", re.sub(DEFAULT_CITATION_PATTERN, "", sentence.text)), (text, sentence)
            assert sentence.cited_ids == tuple(find_citations(sentence.text))
        if sentences:
            assert {i for s in sentences for i in s.cited_ids} == set(find_citations(text)), text


# find_citations


def test_find_citations_lists_ids_in_order_of_first_appearance_without_duplicates():
    text = "Un [^b2^]. Deux [^a1^][^b2^]. Trois [^c-3^] [^a1^] [^d_4^]."
    assert find_citations(text) == ["b2", "a1", "c-3", "d_4"]


def test_find_citations_returns_an_empty_list_without_markers():
    assert find_citations("Aucune citation [ici] ni [^ là^].") == []


def test_find_citations_accepts_another_pattern():
    assert find_citations("Vu [3], [1] et [3].", citation_pattern=r"\[(\d+)\]") == ["3", "1"]


def test_default_citation_pattern_captures_the_id():
    assert find_citations("[^4ca822^]", citation_pattern=DEFAULT_CITATION_PATTERN) == ["4ca822"]


# parse_source_blob

GOOD_BLOB = """##### [^c1^] #####
Source: Rapport annuel 2023.pdf (page 12)

Le chiffre d'affaires consolidé 2023 s'élève à 48,2 M€.

Il progresse de 6 %.

##### [^c2^] #####
Source: RH/effectifs_2023.pdf
Page: 2

Effectif au 31/12/2023 : 312 salariés.
##### [^c3^] #####
Source: Comptes consolidés.xlsx

Marge opérationnelle : 11,4 %.
"""


def test_parse_source_blob_reads_ids_titles_pages_and_texts_in_order():
    assert parse_source_blob(GOOD_BLOB) == [
        {
            "id": "c1",
            "title": "Rapport annuel 2023.pdf",
            "page": 12,
            "text": "Le chiffre d'affaires consolidé 2023 s'élève à 48,2 M€.\n\nIl progresse de 6 %.",
        },
        {
            "id": "c2",
            "title": "RH/effectifs_2023.pdf",
            "page": 2,
            "text": "Effectif au 31/12/2023 : 312 salariés.",
        },
        {
            "id": "c3",
            "title": "Comptes consolidés.xlsx",
            "page": None,
            "text": "Marge opérationnelle : 11,4 %.",
        },
    ]


def test_parse_source_blob_accepts_windows_line_endings_and_leading_blank_lines():
    blob = "\r\n\r\n##### [^x9^] #####\r\nSource: Note.docx\r\n\r\nTexte.\r\n"
    assert parse_source_blob(blob) == [{"id": "x9", "title": "Note.docx", "page": None, "text": "Texte."}]


def test_parse_source_blob_keeps_parentheses_that_are_not_a_page_in_the_title():
    blob = "##### [^a^] #####\nSource: Contrat (version 2).pdf\n\nTexte."
    assert parse_source_blob(blob)[0]["title"] == "Contrat (version 2).pdf"
    assert parse_source_blob(blob)[0]["page"] is None


def test_parse_source_blob_of_an_empty_text_is_an_empty_list():
    assert parse_source_blob("") == []
    assert parse_source_blob(" \n\n ") == []


def test_parse_source_blob_rejects_text_before_the_first_header():
    with pytest.raises(ValueError, match=r"line 1.*before the first"):
        parse_source_blob("Voici les sources.\n" + GOOD_BLOB)


def test_parse_source_blob_rejects_a_chunk_without_source_line():
    blob = GOOD_BLOB.replace("Source: RH/effectifs_2023.pdf\n", "")
    with pytest.raises(ValueError, match=r"chunk 2 \(\[\^c2\^\]\).*Source"):
        parse_source_blob(blob)


def test_parse_source_blob_rejects_a_last_chunk_without_source_line():
    with pytest.raises(ValueError, match=r"chunk 1 .*missing 'Source: TITLE'"):
        parse_source_blob("##### [^c1^] #####\n\n")


def test_parse_source_blob_rejects_an_empty_title():
    with pytest.raises(ValueError, match=r"chunk 1 .*empty title"):
        parse_source_blob("##### [^c1^] #####\nSource:   \n\nTexte.")


def test_parse_source_blob_rejects_an_empty_id():
    blob = GOOD_BLOB.replace("[^c3^]", "[^ ^]")
    with pytest.raises(ValueError, match=r"chunk 3 .*empty id"):
        parse_source_blob(blob)


def test_parse_source_blob_rejects_a_duplicate_id():
    blob = GOOD_BLOB.replace("[^c3^]", "[^c1^]")
    with pytest.raises(ValueError, match=r"chunk 3 .*duplicate id 'c1'.*chunk 1"):
        parse_source_blob(blob)


def test_parse_source_blob_rejects_a_page_that_is_not_a_whole_number():
    blob = GOOD_BLOB.replace("Page: 2", "Page: deux")
    with pytest.raises(ValueError, match=r"chunk 2 .*page"):
        parse_source_blob(blob)


# detect_language

FRENCH = (
    "Le chiffre d'affaires consolidé de la société s'élève à 48,2 M€ en 2023 [^a1^], en hausse de 6 % "
    "par rapport à l'exercice précédent. **La marge opérationnelle** reste stable à 11,4 % [^b2^]. "
    "Les principaux risques identifiés dans la salle de données concernent le change et la liquidité."
)
ENGLISH = (
    "The company's consolidated revenue reached 48.2 million euros in 2023 [^a1^], up 6% on the previous "
    "year. **Operating margin** remained stable at 11.4% [^b2^]. The main risks identified in the data "
    "room relate to foreign exchange and liquidity."
)


def test_detect_language_recognises_french():
    assert detect_language(FRENCH) == "fr"


def test_detect_language_recognises_english():
    assert detect_language(ENGLISH) == "en"


@pytest.mark.parametrize("text", ["", "   \n", "[^a1^] [^b2^]", "12,5 % 2023 — 48.2 **", "## 1. 2. 3."])
def test_detect_language_returns_an_empty_code_for_text_without_letters(text):
    assert detect_language(text) == ""


def test_detect_language_is_deterministic_on_short_ambiguous_text():
    results = {detect_language("Transport logistique import export") for _ in range(20)}
    assert len(results) == 1


def test_detect_language_ignores_citation_ids():
    # Ids made of letters would otherwise outweigh a short sentence.
    text = "La marge baisse fortement cette année [^zzqxwk^][^qwkzzy^][^wkqzzx^][^kwzzyq^]."
    assert detect_language(text) == "fr"


CANDIDATES = ("de", "en", "es", "fr", "it", "nl", "pt")


@pytest.mark.parametrize(("text", "code"), [(FRENCH, "fr"), (ENGLISH, "en")])
def test_detect_language_among_candidates_agrees_with_all_profiles(text, code):
    assert detect_language(text, candidates=CANDIDATES) == detect_language(text) == code


def test_a_text_in_another_script_is_decided_among_all_profiles():
    japanese = "当社の連結売上高は2023年に482億円に達し、前年比6%増加しました。営業利益率は安定しています。"
    russian = "Консолидированная выручка компании в 2023 году составила 48,2 миллиона евро."
    assert detect_language(japanese, candidates=CANDIDATES) == "ja"
    assert detect_language(russian, candidates=CANDIDATES) == "ru"


def test_candidates_name_the_languages_a_text_is_told_apart_among():
    polish = (
        "Skonsolidowane przychody spółki wyniosły w 2023 roku 48,2 mln euro, o 6% więcej niż rok wcześniej."
    )
    assert detect_language(polish) == "pl"
    assert detect_language(polish, candidates=("fr", "pl")) == "pl"
    # Unknown codes are ignored rather than failing.
    assert detect_language(FRENCH, candidates=("xx", "fr")) == "fr"


def test_import_candidates_are_the_setting_plus_the_expected_language(settings):
    from annotation.ingest.load import language_candidates

    settings.LANGUAGE_CANDIDATES = ["fr", "en"]
    assert language_candidates() == ("en", "fr")
    assert language_candidates(expected="pl") == ("en", "fr", "pl")


def _translations() -> list[str]:
    """Texts in about a hundred languages and a dozen scripts: the translated messages Django
    ships, a few hundred characters per language."""
    import glob
    from pathlib import Path

    import django

    texts = []
    for path in sorted(glob.glob(str(Path(django.__file__).parent / "conf/locale/*/LC_MESSAGES/django.po"))):
        messages = re.findall(r'^msgstr "(.+)"$', Path(path).read_text(encoding="utf-8"), re.M)
        texts.append(" ".join(messages[:15])[:300])
    return texts


@pytest.mark.parametrize("candidates", [None, frozenset(CANDIDATES)])
def test_the_faster_detector_gives_exactly_langdetects_probabilities(candidates):
    from langdetect.detector import Detector
    from langdetect.lang_detect_exception import LangDetectException

    from annotation.corpus.language import _Detector, _detector_factory

    factory = _detector_factory(candidates)

    def probabilities(detector_class, text):
        detector = detector_class(factory)
        detector.append(text)
        try:
            return [(language.lang, language.prob) for language in detector.get_probabilities()]
        except LangDetectException as exc:
            return str(exc)

    texts = [*_translations(), FRENCH, ENGLISH, "Transport logistique import export", "ÉTAT DES LIEUX."]
    assert len(texts) > 90
    detected = [probabilities(_Detector, text) for text in texts]
    assert detected == [probabilities(Detector, text) for text in texts]
    # The texts do tell languages apart (the comparison is not between empty results).
    assert len({result[0][0] for result in detected if isinstance(result, list)}) >= (7 if candidates else 40)
