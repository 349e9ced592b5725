"""The built-in criteria and the guidelines humans (and the judge) follow."""

from __future__ import annotations

BUILTIN_CRITERIA: dict[str, dict[str, str]] = {
    "veracity": {"level": "sentence", "title": "Veracity"},
    "relevance": {"level": "answer", "title": "Relevance"},
}

GUIDELINES: dict[str, dict[str, str]] = {
    "veracity": {
        "fr": (
            "Véracité (au niveau de la phrase). Étiquette 1 : chaque information de la phrase se déduit "
            "des sources qu'elle cite. Étiquette 0 : au moins une information ne se déduit pas des sources "
            "citées (chiffre différent, fait absent, source qui dit autre chose, citation vers une source "
            "qui n'existe pas). Les phrases de politesse, de transition ou de remplissage sans information "
            "reçoivent 1. Les connaissances générales ne servent qu'à lever une ambiguïté, jamais à "
            "justifier une information absente des sources."
        ),
        "en": (
            "Veracity (sentence level). Label 1: every piece of information in the sentence can be deduced "
            "from the sources it cites. Label 0: at least one piece of information cannot be deduced from "
            "the cited sources (a different figure, a fact that is absent, a source that says something "
            "else, a citation to a source that does not exist). Politeness, transition or filler sentences "
            "without information get 1. World knowledge only serves to disambiguate, never to justify "
            "information the sources do not contain."
        ),
    },
    "relevance": {
        "fr": (
            "Pertinence (au niveau de la réponse). Étiquette 1 : la réponse répond à la question posée et "
            "ne contient aucun élément hors sujet. Étiquette 0 : la réponse contient au moins un élément "
            "hors sujet, ou ne répond pas à la question. La véracité n'est pas jugée ici : une réponse "
            "pertinente peut contenir une erreur factuelle."
        ),
        "en": (
            "Relevance (answer level). Label 1: the answer addresses the question asked and contains no "
            "off-topic element. Label 0: the answer contains at least one off-topic element, or does not "
            "address the question. Veracity is not judged here: a relevant answer may contain a factual "
            "error."
        ),
    },
}


def guidelines_for(*, criterion: str, language: str = "fr") -> str:
    """The built-in guidelines of ``criterion`` in ``language`` (French when unknown); '' if none."""
    texts = GUIDELINES.get(criterion, {})
    return texts.get(language) or texts.get("fr", "")
