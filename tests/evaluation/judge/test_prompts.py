from __future__ import annotations

import hashlib
import json

import pytest

from annotation.corpus.conventions import BUILTIN_GUIDELINES
from evaluation.judge.prompts import (
    PROMPT_VERSION,
    PROMPTS_BY_VERSION,
    VERDICT_JSON_SCHEMA,
    MissingPrompt,
    build_citation_support_messages,
    build_criterion_messages,
    build_relevance_messages,
    build_veracity_messages,
    check_version,
    normalise_language,
    system_prompt,
)
from tests.llm_server import expected_indices, find_indices

LONG_SOURCE = " ".join(
    f"Paragraphe {i} du rapport annuel de Velmont, marge brute de 66,5 %." for i in range(80)
)
SOURCES = [
    {"id": "4ca822", "title": "Rapport annuel 2023", "page": 12, "text": LONG_SOURCE},
    {"id": "b71f0e", "title": "Organigramme", "page": None, "text": "Effectif : 1 234 salariés."},
]
PARAGRAPH = "Le chiffre d'affaires atteint 12,4 M€ [^4ca822^]. L'effectif compte 1 234 salariés [^b71f0e^]."
SENTENCES = [
    {
        "index": 0,
        "text": "Bonjour, voici les éléments demandés.",
        "paragraph": "Bonjour, voici les éléments demandés.",
    },
    {"index": 1, "text": "Le chiffre d'affaires atteint 12,4 M€ [^4ca822^].", "paragraph": PARAGRAPH},
    {"index": 2, "text": "L'effectif compte 1 234 salariés [^b71f0e^].", "paragraph": PARAGRAPH},
]


def veracity(**overrides):
    options = {"question": "Quel est le chiffre d'affaires ?", "sources": SOURCES, "sentences": SENTENCES}
    options.update(overrides)
    return build_veracity_messages(**options)


def test_prompt_version_is_v2_the_release_with_the_citation_level():
    assert PROMPT_VERSION == "v2"


def test_veracity_messages_are_a_system_then_a_user_message():
    messages = veracity()
    assert [m["role"] for m in messages] == ["system", "user"]
    assert all(isinstance(m["content"], str) and m["content"] for m in messages)


def test_veracity_user_message_ends_with_the_indices_line():
    user = veracity()[-1]["content"]
    assert user.splitlines()[-1] == "INDICES: [0, 1, 2]"
    assert find_indices(user) == [0, 1, 2]


def test_indices_line_keeps_the_given_sentence_positions():
    sentences = [dict(SENTENCES[1], index=3), dict(SENTENCES[2], index=7)]
    user = veracity(sentences=sentences)[-1]["content"]
    assert find_indices(user) == [3, 7]
    assert '<sentence index="3">' in user and '<sentence index="7">' in user


def test_the_scripted_server_reads_the_indices_the_prompt_announces():
    assert expected_indices({"messages": veracity()}) == [0, 1, 2]
    assert expected_indices({"messages": build_relevance_messages(question="q", answer="a")}) == [0]


def test_every_cited_source_is_sent_in_full_with_its_id_title_and_page():
    user = veracity()[-1]["content"]
    assert LONG_SOURCE in user
    assert "Effectif : 1 234 salariés." in user
    assert "4ca822" in user and "b71f0e" in user
    assert "Rapport annuel 2023" in user and "page : 12" in user


def test_a_source_without_page_has_no_page_line():
    user = veracity(sources=[SOURCES[1]])[-1]["content"]
    assert "page :" not in user


def test_no_cited_source_is_said_explicitly():
    assert "(aucune source citée)" in veracity(sources=[])[-1]["content"]
    assert "(no source cited)" in veracity(sources=[], language="en")[-1]["content"]


def test_each_sentence_is_sent_once_and_a_shared_paragraph_once():
    user = veracity()[-1]["content"]
    assert user.count("Le chiffre d'affaires atteint 12,4 M€ [^4ca822^].") == 2  # in the paragraph and alone
    assert user.count(PARAGRAPH) == 1
    assert user.count("<sentence index=") == 3


def test_cited_ids_are_shown_when_given():
    sentences = [dict(SENTENCES[1], cited_ids=["4ca822"]), dict(SENTENCES[0], index=5, cited_ids=[])]
    user = veracity(sentences=sentences)[-1]["content"]
    assert "(sources citées : 4ca822)" in user
    assert "(sources citées : -)" in user


def test_french_is_the_default_language():
    system = veracity()[0]["content"]
    assert BUILTIN_GUIDELINES["veracity"]["fr"] in system
    assert "Consignes d'annotation" in system
    assert "QUESTION :" in veracity()[-1]["content"]


def test_english_prompt_uses_the_english_guidelines_and_framing():
    messages = veracity(language="en")
    assert BUILTIN_GUIDELINES["veracity"]["en"] in messages[0]["content"]
    assert "Consignes" not in messages[0]["content"]
    assert "CITED SOURCES (full text):" in messages[-1]["content"]
    assert messages[-1]["content"].splitlines()[-1] == "INDICES: [0, 1, 2]"


@pytest.mark.parametrize(
    ("language", "expected"), [("fr", "fr"), ("FR-fr", "fr"), ("en_GB", "en"), ("de", "en"), ("", "fr")]
)
def test_language_tags_are_reduced_to_a_supported_prompt_language(language, expected):
    assert normalise_language(language) == expected


def test_custom_guidelines_replace_the_default_ones():
    system = veracity(guidelines="Règle maison : tout chiffre arrondi est faux.")[0]["content"]
    assert "Règle maison : tout chiffre arrondi est faux." in system
    assert BUILTIN_GUIDELINES["veracity"]["fr"] not in system


def test_prompts_ask_for_step_by_step_reasoning_and_strict_json():
    for messages in (veracity(), build_relevance_messages(question="q", answer="a")):
        system = messages[0]["content"]
        # json_object mode requires the word JSON in the messages.
        assert "JSON" in system
        assert '"verdicts"' in system and '"reasoning"' in system and '"label"' in system
        assert "étape par étape" in system


def test_guidelines_define_both_labels_for_both_criteria_in_both_languages():
    for criterion in ("veracity", "relevance"):
        for language in ("fr", "en"):
            text = BUILTIN_GUIDELINES[criterion][language]
            assert "1" in text and "0" in text
    assert "politesse" in BUILTIN_GUIDELINES["veracity"]["fr"]
    assert "politeness" in BUILTIN_GUIDELINES["veracity"]["en"]
    assert "véracité n'est pas jugée" in BUILTIN_GUIDELINES["relevance"]["fr"].lower()


def test_relevance_messages_ask_for_one_verdict_of_index_0_on_the_whole_answer():
    answer = "Le chiffre d'affaires 2023 est de 12,4 M€ [^4ca822^].\n\nLa météo était clémente."
    messages = build_relevance_messages(question="Quel est le chiffre d'affaires ?", answer=answer)
    assert BUILTIN_GUIDELINES["relevance"]["fr"] in messages[0]["content"]
    assert answer in messages[-1]["content"]
    assert find_indices(messages[-1]["content"]) == [0]


def test_relevance_messages_switch_language():
    messages = build_relevance_messages(question="What is the revenue?", answer="12.4 M€.", language="en")
    assert BUILTIN_GUIDELINES["relevance"]["en"] in messages[0]["content"]
    assert "ANSWER TO JUDGE:" in messages[-1]["content"]


def test_duplicate_or_missing_sentences_are_refused():
    with pytest.raises(ValueError, match="distinct"):
        veracity(sentences=[SENTENCES[0], SENTENCES[0]])
    with pytest.raises(ValueError, match="at least one"):
        veracity(sentences=[])


def test_verdict_schema_requires_index_reasoning_and_a_binary_label():
    item = VERDICT_JSON_SCHEMA["properties"]["verdicts"]["items"]
    assert VERDICT_JSON_SCHEMA["required"] == ["verdicts"]
    assert item["required"] == ["index", "reasoning", "label"]
    assert item["properties"]["label"]["enum"] == [0, 1]
    assert item["additionalProperties"] is False


def test_unknown_prompt_versions_are_refused_naming_the_known_ones():
    assert check_version(None) == PROMPT_VERSION
    assert check_version("v1") == "v1"
    with pytest.raises(ValueError, match="prompt version 'v0' is unknown; known versions: v1"):
        veracity(version="v0")


def test_a_criterions_own_prompt_replaces_the_framing_but_not_the_output_contract():
    system = veracity(instructions="Tu es un juriste.", guidelines="Règle maison.")[0]["content"]
    assert system.startswith("Tu es un juriste.")
    assert "Règle maison." in system
    assert "étape par étape" not in system.split("Règle maison.")[0]
    assert '{"verdicts"' in system


@pytest.mark.parametrize("level", ["sentence", "answer"])
def test_a_campaign_criterion_gets_a_generic_prompt_around_its_guidelines(level):
    messages = build_criterion_messages(
        title="Ton",
        level=level,
        question="Q ?",
        answer="Réponse.",
        sources=SOURCES,
        sentences=SENTENCES,
        guidelines="1 : ton neutre.",
    )
    system, user = (m["content"] for m in messages)
    assert "« Ton »" in system and "1 : ton neutre." in system
    assert "véracité" not in system.lower() and "pertinence" not in system.lower()
    assert find_indices(user) == ([0, 1, 2] if level == "sentence" else [0])


def test_release_v1_is_frozen():
    """Judges are bound to the prompts they were sent: an edit of v1's texts (its own or the
    built-in guidelines it quotes) must be a new release, not a silent change of v1."""
    release = json.dumps(PROMPTS_BY_VERSION["v1"], sort_keys=True, ensure_ascii=False)
    assert hashlib.sha256(release.encode("utf-8")).hexdigest() == (
        "13275f507dec55298a6f370d4744f36f68018859e0e2327325791bc1425647d0"
    )


# Release v2 as published: an edit of its texts must be a new release.
V2_SHA256 = "c556dbe7b9cf2a712ec717851b847436ba2759455d0ddcea0168aac9e305be66"


def test_release_v2_keeps_v1_and_adds_the_citation_level():
    v1, v2 = PROMPTS_BY_VERSION["v1"], PROMPTS_BY_VERSION["v2"]
    for language in ("fr", "en"):
        assert {k: v2["text"][language][k] for k in v1["text"][language]} == v1["text"][language]
        assert {"citation_support_role", "citation_role", "citations"} <= set(v2["text"][language])
    assert {k: v2["guidelines"][k] for k in v1["guidelines"]} == v1["guidelines"]
    release = json.dumps(v2, sort_keys=True, ensure_ascii=False)
    assert hashlib.sha256(release.encode("utf-8")).hexdigest() == V2_SHA256


def test_a_v1_judge_has_no_prompt_for_the_citation_level():
    with pytest.raises(MissingPrompt, match="'v1' has no prompt for 'citation_support'"):
        system_prompt(name="citation_support", level="citation", version="v1")
    assert system_prompt(name="veracity", level="sentence", version="v1") == system_prompt(
        name="veracity", level="sentence", version="v2"
    )


def test_citation_support_sends_each_citation_with_its_one_source_and_the_sources_once():
    system, user = build_citation_support_messages(
        question="Quel est le loyer ?",
        sources=[{"id": "a", "title": "Bail.pdf", "page": 3, "text": "Le loyer annuel est de 120 k€."}],
        citations=[
            {"index": 0, "text": "Le loyer est de 120 k€ [^a^].", "paragraph": "P.", "cited_ids": ["a"]},
            {"index": 1, "text": "Il est indexé [^a^].", "paragraph": "P.", "cited_ids": ["a"]},
        ],
        language="en",
    )
    assert "at least part of the sentence" in system["content"]
    assert "Citation support (judged for one sentence and one source it cites)." in system["content"]
    assert user["content"].count("<source>") == 1
    assert '<citation index="0">' in user["content"] and '<citation index="1">' in user["content"]
    assert user["content"].count("(source of the citation: a)") == 2
    assert find_indices(user["content"]) == [0, 1]


def test_annotators_read_the_guidelines_the_judge_is_told():
    from annotation.criteria.guidelines import guidelines_for

    for criterion, texts in BUILTIN_GUIDELINES.items():
        for language, text in texts.items():
            assert guidelines_for(criterion=criterion, language=language) == text
            assert PROMPTS_BY_VERSION[PROMPT_VERSION]["guidelines"][criterion][language] == text
