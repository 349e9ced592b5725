"""Automatic metrics on small campaigns worked out by hand."""

from __future__ import annotations

import json
import math

import pytest

from annotation.corpus.conventions import DEFAULT_ABSTENTION_PATTERNS
from annotation.models import Answer, Question
from evaluation.measures.automatic import (
    ABSTENTION_ON_INAPPROPRIATE,
    ALL_THEMES,
    CORRECT_LANGUAGE,
    FUNCTIONAL_CITATION,
    INAPPROPRIATE_DIFFICULTIES,
    RESPONSE,
    MetricRow,
    abstention_matcher,
    compute_metrics,
    difficulty_sort_key,
    is_inappropriate,
    metrics_as_json,
    metrics_table,
    normalise_difficulty,
    overall_metrics,
    wald_interval,
)
from tests.factories import make_answer, make_campaign

pytestmark = pytest.mark.django_db

Z95 = 1.959963984540054
CITED = "Le chiffre d'affaires est de 12 M€ [^c1^]."


def question(campaign, *, theme="Finance", difficulty="simple", language="fr", qid=None):
    qid = qid or f"{theme}-{difficulty}-{Question.objects.count()}"
    return Question.objects.create(
        campaign=campaign, external_id=qid, text="Quel est le CA ?", theme=theme,
        difficulty=difficulty, language=language,
    )  # fmt: skip


def answer(campaign, q, *, text=CITED, language="fr", sentences=None, chunk_ids=("c1", "c2")):
    a = make_answer(campaign=campaign, question=q, text=text, sentences=sentences, chunk_ids=chunk_ids)
    Answer.objects.filter(pk=a.pk).update(language=language)
    return a


def row_of(rows, metric, theme, difficulty):
    matches = [r for r in rows if (r.metric, r.theme, r.difficulty) == (metric, theme, difficulty)]
    assert len(matches) == 1, f"{metric}/{theme}/{difficulty}: {len(matches)} rows"
    return matches[0]


# Wald intervals ---------------------------------------------------------------------------------


def test_wald_interval_matches_the_hand_computed_formula():
    # p = 0.3, n = 10: half-width 1.96 * sqrt(0.3 * 0.7 / 10) = 0.2840258
    lo, hi = wald_interval(successes=3, n=10)
    assert lo == pytest.approx(0.3 - 0.2840258, abs=1e-6)
    assert hi == pytest.approx(0.3 + 0.2840258, abs=1e-6)


def test_wald_interval_uses_alpha_for_its_level():
    # 90%: z = 1.644854, half-width 1.644854 * 0.1449138 = 0.2383619
    lo, hi = wald_interval(successes=3, n=10, alpha=0.10)
    assert (lo, hi) == pytest.approx((0.3 - 0.2383619, 0.3 + 0.2383619), abs=1e-6)


def test_wald_interval_is_clipped_to_zero_and_one():
    lo, hi = wald_interval(successes=1, n=4)  # 0.25 +- 0.4243
    assert lo == 0.0
    assert hi == pytest.approx(0.25 + Z95 * math.sqrt(0.25 * 0.75 / 4))


@pytest.mark.parametrize("successes, n", [(0, 7), (7, 7)])
def test_wald_interval_collapses_at_zero_and_one(successes, n):
    p = successes / n
    assert wald_interval(successes=successes, n=n) == (p, p)


@pytest.mark.parametrize(
    "kwargs", [{"successes": 0, "n": 0}, {"successes": 3, "n": 2}, {"successes": 1, "n": 2, "alpha": 1.5}]
)
def test_wald_interval_refuses_impossible_inputs(kwargs):
    with pytest.raises(ValueError):
        wald_interval(**kwargs)


# Correct language -------------------------------------------------------------------------------


def test_an_english_answer_to_a_french_question_counts_as_the_wrong_language(campaign):
    q = question(campaign, theme="Finance", difficulty="simple", language="fr")
    for language in ("fr", "fr", "fr", "en"):
        answer(campaign, q, language=language)
    row = row_of(compute_metrics(campaign=campaign), CORRECT_LANGUAGE, "Finance", "simple")
    assert (row.n, row.successes, row.rate) == (4, 3, 0.75)
    # 0.75 +- 1.96 * sqrt(0.75 * 0.25 / 4) = 0.75 +- 0.4243, clipped above at 1
    assert row.ci == pytest.approx((0.3256553, 1.0), abs=1e-6)


def test_expected_language_of_the_campaign_overrides_the_question_language(db):
    campaign = make_campaign(name="English campaign", expected_language="en")
    q = question(campaign, language="fr")
    answer(campaign, q, language="en")
    answer(campaign, q, language="fr")
    answer(campaign, q, language="fr")
    row = row_of(compute_metrics(campaign=campaign), CORRECT_LANGUAGE, "Finance", None)
    assert (row.n, row.successes) == (3, 1)


def test_an_answer_whose_language_was_not_detected_counts_as_wrong(campaign):
    q = question(campaign, language="fr")
    answer(campaign, q, language="")
    answer(campaign, q, language="fr")
    row = row_of(compute_metrics(campaign=campaign), CORRECT_LANGUAGE, "Finance", "simple")
    assert (row.n, row.successes) == (2, 1)


def test_answers_without_any_expected_language_are_left_out_of_correct_language(campaign):
    answer(campaign, question(campaign, language=""), language="fr")
    rows = compute_metrics(campaign=campaign)
    assert not [r for r in rows if r.metric == CORRECT_LANGUAGE]
    assert row_of(rows, RESPONSE, "Finance", None).n == 1


def test_language_codes_compare_case_and_region_insensitively(db):
    campaign = make_campaign(name="Regional", expected_language="FR")
    q = question(campaign, language="")
    answer(campaign, q, language="fr")
    answer(campaign, q, language="fr-ca")
    answer(campaign, q, language="de")
    row = row_of(compute_metrics(campaign=campaign), CORRECT_LANGUAGE, "Finance", None)
    assert (row.n, row.successes) == (3, 2)


# Response ---------------------------------------------------------------------------------------


def test_response_needs_no_abstention_and_at_least_one_citation(campaign):
    q = question(campaign, theme="RH", difficulty="hard")
    answer(campaign, q, text="Le budget est de 3 M€ [^c1^].")  # responds
    answer(campaign, q, text="Je ne trouve pas cette information [^c1^].")  # abstains, though it cites
    answer(campaign, q, text="Le budget est de 3 M€.")  # cites nothing
    answer(campaign, q, text="Les documents ne contiennent pas cette information.")  # both
    row = row_of(compute_metrics(campaign=campaign), RESPONSE, "RH", "hard")
    assert (row.n, row.successes, row.rate) == (4, 1, 0.25)
    # 0.25 +- 1.96 * sqrt(0.25 * 0.75 / 4) = 0.25 +- 0.4243, clipped below at 0
    assert row.ci == pytest.approx((0.0, 0.6743447), abs=1e-6)


@pytest.mark.parametrize(
    ("text", "abstains"),
    [
        ("Le contrat ne contient pas de clause de changement de contrôle [^c1^].", False),
        ("The lease does not contain a break clause [^c1^].", False),
        ("Le bail ne mentionne pas de garantie autonome [^c1^].", False),
        ("Les documents fournis ne contiennent pas cette information [^c1^].", True),
        ("Les extraits de la data room ne permettent pas de conclure [^c1^].", True),
        ("The provided documents do not mention the lease term [^c1^].", True),
        ("The context does not provide the figure [^c1^].", True),
    ],
)
def test_a_negative_finding_is_an_answer_but_sources_that_say_nothing_are_an_abstention(
    campaign, text, abstains
):
    answer(campaign, question(campaign), text=text)
    row = row_of(compute_metrics(campaign=campaign), RESPONSE, "Finance", "simple")
    assert (row.n, row.successes) == (1, 0 if abstains else 1)


def test_abstention_patterns_match_whatever_the_case(campaign):
    answer(campaign, question(campaign), text="AUCUNE INFORMATION sur ce point [^c1^].")
    row = row_of(compute_metrics(campaign=campaign), RESPONSE, "Finance", "simple")
    assert (row.n, row.successes) == (1, 0)


def test_the_campaign_citation_pattern_decides_what_a_citation_is(db):
    campaign = make_campaign(name="Bracketed", citation_pattern=r"\[(doc\d+)\]")
    q = question(campaign)
    answer(campaign, q, text="Le CA est de 12 M€ [doc3].")
    answer(campaign, q, text="Le CA est de 12 M€ [^c1^].")
    row = row_of(compute_metrics(campaign=campaign), RESPONSE, "Finance", None)
    assert (row.n, row.successes) == (2, 1)


def test_campaign_abstention_patterns_replace_the_default_ones(db):
    campaign = make_campaign(name="Custom abstention", abstention_patterns=[r"\bno idea\b"])
    q = question(campaign)
    answer(campaign, q, text="No idea, sorry [^c1^].")
    answer(campaign, q, text="Je ne trouve pas cette information [^c1^].")  # a default pattern only
    row = row_of(compute_metrics(campaign=campaign), RESPONSE, "Finance", None)
    assert (row.n, row.successes) == (2, 1)


@pytest.mark.parametrize(
    ("patterns", "successes"),
    [
        # None: the built-in patterns; the abstention citing a source is not a response.
        (None, 1),
        # []: no patterns at all; the response rate is "cites at least one source" alone.
        ([], 2),
    ],
    ids=["null_means_the_built_in_patterns", "empty_list_means_no_patterns"],
)
def test_no_abstention_patterns_is_distinct_from_the_default_ones(db, patterns, successes):
    campaign = make_campaign(name=f"Patterns {patterns!r}", abstention_patterns=patterns)
    campaign.refresh_from_db()
    assert campaign.abstention_patterns == patterns
    q = question(campaign)
    answer(campaign, q, text="Le CA est de 12 M€ [^c1^].")
    answer(campaign, q, text="Je ne trouve pas cette information [^c1^].")
    answer(campaign, q, text="Aucune information sur ce point.")  # no citation: never a response
    row = row_of(compute_metrics(campaign=campaign), RESPONSE, "Finance", None)
    assert (row.n, row.successes) == (3, successes)


def test_a_new_campaign_uses_the_built_in_abstention_patterns(db):
    campaign = make_campaign(name="Defaults")
    assert campaign.abstention_patterns is None
    assert campaign.effective_abstention_patterns == DEFAULT_ABSTENTION_PATTERNS


def test_patterns_with_backreferences_or_inline_flags_still_match_each_on_its_own(db):
    campaign = make_campaign(
        name="Tricky patterns", abstention_patterns=[r"\b(non)\s+\1\b", r"(?x) rien \s dire"]
    )
    matches = abstention_matcher(campaign=campaign)
    assert matches("Non non, impossible.")
    assert matches("Il n'y a RIEN DIRE.")
    assert not matches("Non, il faut 3 M€.")


def test_an_invalid_campaign_regex_is_a_value_error_naming_it(db):
    campaign = make_campaign(name="Broken", abstention_patterns=["(unclosed"])
    answer(campaign, question(campaign))
    with pytest.raises(ValueError, match=r"abstention pattern: invalid regular expression '\(unclosed'"):
        compute_metrics(campaign=campaign)


# Functional citations ---------------------------------------------------------------------------


def test_functional_citation_counts_only_sentences_that_cite(campaign):
    sentences = [
        ("Le CA est de 12 M€ [^c1^].", ["c1"]),
        ("Il progresse [^zz9^].", ["zz9"]),  # corrupted id: not among the retrieved chunks
        ("Merci de votre question.", []),  # cites nothing: not counted
    ]
    q = question(campaign, theme="IT", difficulty="intermediate")
    answer(campaign, q, sentences=sentences)
    answer(campaign, q, sentences=sentences)
    row = row_of(compute_metrics(campaign=campaign), FUNCTIONAL_CITATION, "IT", "intermediate")
    assert (row.n, row.successes, row.rate) == (4, 2, 0.5)
    # 0.5 +- 1.96 * sqrt(0.25 / 4) = 0.5 +- 0.4899910
    assert row.ci == pytest.approx((0.0100090, 0.9899910), abs=1e-6)


def test_a_sentence_citing_one_good_and_one_corrupted_id_is_not_functional(campaign):
    answer(campaign, question(campaign), sentences=[("Deux sources [^c1^][^bad^].", ["c1", "bad"])])
    row = row_of(compute_metrics(campaign=campaign), FUNCTIONAL_CITATION, "Finance", "simple")
    assert (row.n, row.successes) == (1, 0)


# Abstention on inappropriate questions ----------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    ["inappropriate", "Inappropriée", "INAPPROPRIEE", "inapproprié", "inappropriate-should-abstain",
     "Inappropriate should abstain", "inappropriate_should_abstain"],
)  # fmt: skip
def test_inappropriate_difficulty_is_recognised_however_spelt(spelling):
    assert is_inappropriate(spelling)
    assert normalise_difficulty(spelling) in INAPPROPRIATE_DIFFICULTIES


@pytest.mark.parametrize("difficulty", ["simple", "hard", "", None, "appropriate"])
def test_other_difficulties_are_not_inappropriate(difficulty):
    assert not is_inappropriate(difficulty)


def test_abstention_on_inappropriate_counts_abstentions_of_inappropriate_questions_only(campaign):
    accented = question(campaign, theme="Juridique", difficulty="Inappropriée")
    answer(campaign, accented, text="Je ne dispose pas de cette information.")
    answer(campaign, accented, text="Aucune information à ce sujet.")
    answer(campaign, accented, text="Voici la réponse [^c1^].")
    english = question(campaign, theme="Juridique", difficulty="inappropriate-should-abstain")
    answer(campaign, english, text="I cannot answer this question.")
    simple = question(campaign, theme="Juridique", difficulty="simple")
    answer(campaign, simple, text="Je ne dispose pas de cette information.")
    rows = compute_metrics(campaign=campaign)

    accented_row = row_of(rows, ABSTENTION_ON_INAPPROPRIATE, "Juridique", "Inappropriée")
    assert (accented_row.n, accented_row.successes) == (3, 2)
    # 2/3 +- 1.96 * sqrt(2/9 / 3) = 0.6667 +- 0.5334347
    assert accented_row.ci == pytest.approx((0.1332320, 1.0), abs=1e-6)
    theme_row = row_of(rows, ABSTENTION_ON_INAPPROPRIATE, "Juridique", None)
    assert (theme_row.n, theme_row.successes, theme_row.rate) == (4, 3, 0.75)
    assert not [r for r in rows if r.metric == ABSTENTION_ON_INAPPROPRIATE and r.difficulty == "simple"]


def test_a_theme_without_inappropriate_questions_has_no_abstention_row(campaign):
    answer(campaign, question(campaign, theme="Finance", difficulty="simple"))
    rows = compute_metrics(campaign=campaign)
    assert not [r for r in rows if r.metric == ABSTENTION_ON_INAPPROPRIATE]


# Grouping, order, overall -----------------------------------------------------------------------


def test_per_theme_rows_sum_the_difficulties_and_come_last(campaign):
    for difficulty, texts in (("simple", [CITED, CITED]), ("hard", [CITED, "Sans source."])):
        q = question(campaign, theme="Finance", difficulty=difficulty)
        for text in texts:
            answer(campaign, q, text=text)
    answer(campaign, question(campaign, theme="Achats", difficulty="simple"), text="Sans source.")
    rows = [r for r in compute_metrics(campaign=campaign) if r.metric == RESPONSE]
    assert [(r.theme, r.difficulty, r.n, r.successes) for r in rows] == [
        ("Achats", "simple", 1, 0),
        ("Achats", None, 1, 0),
        ("Finance", "hard", 2, 1),
        ("Finance", "simple", 2, 2),
        ("Finance", None, 4, 3),
    ]


def test_rows_are_sorted_by_metric_then_theme_then_difficulty(campaign):
    answer(campaign, question(campaign, theme="B", difficulty="inappropriate"))
    answer(campaign, question(campaign, theme="A", difficulty="simple"))
    rows = compute_metrics(campaign=campaign)
    keys = [(r.metric, r.theme, r.difficulty is None, r.difficulty or "") for r in rows]
    assert keys == sorted(keys)
    assert [r.metric for r in rows][0] == ABSTENTION_ON_INAPPROPRIATE
    assert {r.metric for r in rows} == {
        ABSTENTION_ON_INAPPROPRIATE,
        CORRECT_LANGUAGE,
        FUNCTIONAL_CITATION,
        RESPONSE,
    }


def test_an_empty_campaign_has_no_rows(campaign):
    assert compute_metrics(campaign=campaign) == []


def test_overall_rows_pool_every_theme(campaign):
    answer(campaign, question(campaign, theme="A"), text=CITED)
    answer(campaign, question(campaign, theme="B"), text="Sans source.")
    answer(campaign, question(campaign, theme="B"), text=CITED)
    overall = {r.metric: r for r in overall_metrics(rows=compute_metrics(campaign=campaign))}
    response = overall[RESPONSE]
    assert (response.theme, response.difficulty, response.n, response.successes) == (ALL_THEMES, None, 3, 2)
    assert response.ci == wald_interval(successes=2, n=3)


def test_only_wald_intervals_are_offered_for_now(campaign):
    assert compute_metrics(campaign=campaign, interval="wald") == []
    with pytest.raises(ValueError, match="unknown method 'wilson'"):
        compute_metrics(campaign=campaign, interval="wilson")


def test_difficulties_sort_in_protocol_order_with_the_total_last():
    names = [None, "inappropriée", "zeta", "hard", "", "simple", "intermediate"]
    assert sorted(names, key=difficulty_sort_key) == [
        "simple", "intermediate", "hard", "inappropriée", "zeta", "", None,
    ]  # fmt: skip


# Output -----------------------------------------------------------------------------------------


def test_json_has_exactly_the_specified_shape(campaign):
    answer(campaign, question(campaign, theme="Finance", difficulty="simple"))
    rows = compute_metrics(campaign=campaign)
    data = json.loads(json.dumps(metrics_as_json(campaign=campaign, rows=rows)))
    assert set(data) == {"campaign", "metrics"}
    assert data["campaign"] == "Velmont due diligence"
    assert len(data["metrics"]) == len(rows)
    for item in data["metrics"]:
        assert set(item) == {"metric", "theme", "difficulty", "n", "rate", "ci"}
        assert item["metric"] in {
            CORRECT_LANGUAGE,
            RESPONSE,
            FUNCTIONAL_CITATION,
            ABSTENTION_ON_INAPPROPRIATE,
        }
        assert isinstance(item["ci"], list) and len(item["ci"]) == 2
    theme_rows = [m for m in data["metrics"] if m["difficulty"] is None]
    assert {m["metric"] for m in theme_rows} == {CORRECT_LANGUAGE, RESPONSE, FUNCTIONAL_CITATION}
    response = next(m for m in theme_rows if m["metric"] == RESPONSE)
    assert response == {
        "metric": RESPONSE, "theme": "Finance", "difficulty": None, "n": 1, "rate": 1.0, "ci": [1.0, 1.0],
    }  # fmt: skip


def test_table_aligns_columns_and_shows_percentages():
    rows = [
        MetricRow(RESPONSE, "Finance", "simple", 4, 3, 0.75, (0.3256559, 1.0)),
        MetricRow(RESPONSE, "Ressources humaines", None, 12, 6, 0.5, (0.2171, 0.7829)),
    ]
    lines = metrics_table(rows=rows).splitlines()
    assert lines[0].split() == ["metric", "theme", "difficulty", "n", "rate", "95%", "Wald", "interval"]
    assert "75.0%  [32.6%, 100.0%]" in lines[2]
    assert "(all)" in lines[3] and "[21.7%, 78.3%]" in lines[3]
    # Right-aligned rates end in the same column on every line.
    assert lines[2].index("75.0%") + len("75.0%") == lines[3].index("50.0%") + len("50.0%")
    assert lines[0].index("theme") == lines[2].index("Finance") == lines[3].index("Ressources")
