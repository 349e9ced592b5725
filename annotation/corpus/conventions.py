"""The conventions the whole app shares, in one Django-free place: how answers cite their
sources, what counts as a manifest abstention, and the built-in criteria.

Everything else reads these names: the models' defaults, the sentence splitter, the import, the
annotation pages, the judge's prompts and the lexical judge. A campaign may set its own citation
and abstention patterns (``Campaign``); these are the defaults.
"""

from __future__ import annotations

# A citation marker such as [^4ca822^]; its one group is the cited chunk's id.
DEFAULT_CITATION_PATTERN = r"\[\^([A-Za-z0-9_-]+)\^\]"

# Manifest abstentions, matched case-insensitively on the answer's text (French and English).
DEFAULT_ABSTENTION_PATTERNS = [
    r"\bje ne (?:trouve|dispose|peux|suis) pas\b",
    r"\baucune information\b",
    # "The sources do not say": the subject must be the documents, or "Le contrat ne contient pas
    # de clause de changement de contrôle [^b^]." (a real answer) would count as an abstention.
    r"\b(?:documents?|sources?|extraits?|passages?|data room|contexte)\b(?:\s+[\w'’-]+){0,4}?\s+"
    r"ne (?:contiennent|contient|mentionnent|mentionne|permettent|permet) pas\b",
    r"\bpas d['’]information\b",
    r"\bi (?:cannot|can't|could not|couldn't|do not|don't) (?:find|answer|provide)\b",
    r"\bno information\b",
    r"\b(?:documents?|sources?|excerpts?|passages?|data room|context)\b(?:\s+[\w'’-]+){0,4}?\s+"
    r"(?:do|does) not (?:contain|mention|provide)\b",
]

# The criteria every campaign has: name -> level, title and the names of its two values.
BUILTIN_CRITERIA: dict[str, dict] = {
    "veracity": {
        "level": "sentence",
        "title": "Veracity",
        "values": {1: "Supported", 0: "Not supported"},
    },
    "relevance": {
        "level": "answer",
        "title": "Relevance",
        "values": {1: "On topic", 0: "Off topic"},
    },
    # One unit per (sentence, retrieved chunk it cites): the share of 1s is citation precision.
    "citation_support": {
        "level": "citation",
        "title": "Citation support",
        "values": {1: "Supports", 0: "Does not support"},
    },
}

# The guidelines of the built-in criteria, per language: what annotators read and the judge is told
# (release v1 of the judge's prompts quotes them; tests pin their hash, so an edit is a new release).
BUILTIN_GUIDELINES: dict[str, dict[str, str]] = {
    "veracity": {
        "fr": (
            "Véracité (jugée phrase par phrase).\n"
            "- 1 : chaque information de la phrase se déduit des sources qu'elle cite.\n"
            "- 0 : au moins une information de la phrase ne se déduit pas des sources citées "
            "(absente, différente, contredite ou ajoutée). Un chiffre, une date, un nom ou une unité "
            "qui diffère des sources suffit.\n"
            "- Les phrases sans information (formules de politesse, transitions, annonces de ce qui "
            "suit) reçoivent 1.\n"
            "- Une phrase qui apporte une information sans citer de source reçoit 0 : rien ne se "
            "déduit d'une source absente.\n"
            "- Les connaissances générales ne servent qu'à lever une ambiguïté (sens d'un sigle, "
            "d'un terme), jamais à justifier une information absente des sources."
        ),
        "en": (
            "Veracity (judged sentence by sentence).\n"
            "- 1: every piece of information in the sentence can be deduced from the sources it "
            "cites.\n"
            "- 0: at least one piece of information cannot be deduced from the cited sources "
            "(missing, different, contradicted or added). A figure, date, name or unit that differs "
            "from the sources is enough.\n"
            "- Sentences that carry no information (politeness, transitions, announcing what "
            "follows) get 1.\n"
            "- A sentence that brings information without citing any source gets 0: nothing can be "
            "deduced from a source that is not there.\n"
            "- World knowledge only serves to disambiguate (what an acronym or a term means), never "
            "to justify information the sources do not contain."
        ),
    },
    "relevance": {
        "fr": (
            "Pertinence (jugée sur la réponse entière).\n"
            "- 1 : la réponse répond à la question posée, sans contenu hors sujet.\n"
            "- 0 : la réponse contient au moins un élément hors sujet, qui ne sert pas à répondre à "
            "la question posée.\n"
            "- La véracité n'est pas jugée ici : une information inexacte mais qui porte sur la "
            "question ne rend pas la réponse hors sujet."
        ),
        "en": (
            "Relevance (judged on the whole answer).\n"
            "- 1: the answer answers the question asked, with no off-topic content.\n"
            "- 0: the answer contains at least one off-topic element, one that does not serve to "
            "answer the question asked.\n"
            "- Veracity is not judged here: inaccurate information that is about the question does "
            "not make the answer off-topic."
        ),
    },
    "citation_support": {
        "fr": (
            "Appui de la citation (jugé pour une phrase et une seule source qu'elle cite).\n"
            "- 1 : cette source appuie au moins une partie de la phrase : au moins une information "
            "de la phrase se déduit de son texte.\n"
            "- 0 : aucune information de la phrase ne se déduit de cette source (elle porte sur "
            "autre chose, ou dit autre chose).\n"
            "- Seule cette source est jugée : ce que la phrase doit aux autres sources qu'elle cite "
            "ne compte pas ici, et une phrase peut être vraie alors que cette citation ne l'appuie "
            "pas.\n"
            "- Les connaissances générales ne servent qu'à lever une ambiguïté (sens d'un sigle, "
            "d'un terme), jamais à voir dans la source ce qu'elle ne dit pas."
        ),
        "en": (
            "Citation support (judged for one sentence and one source it cites).\n"
            "- 1: this source supports at least part of the sentence: at least one piece of "
            "information in the sentence can be deduced from its text.\n"
            "- 0: no piece of information in the sentence can be deduced from this source (it is "
            "about something else, or says something else).\n"
            "- Only this source is judged: what the sentence owes to the other sources it cites "
            "does not count here, and a sentence may be true while this citation does not support "
            "it.\n"
            "- World knowledge only serves to disambiguate (what an acronym or a term means), never "
            "to read into the source what it does not say."
        ),
    },
}

# An example of a criterion with named categories (annotation/criteria/categories.py): answer correctness
# in five nominal categories, grouped as correct, hallucination and abstention, as in the RAG
# evaluation literature. Keys 1-5, as the values.
ANSWER_CORRECTNESS: dict = {
    "name": "correctness",
    "title": "Answer correctness",
    "level": "answer",
    "categories": [
        {
            "value": 1,
            "key": "1",
            "name": "not-enough-information",
            "title": "Not enough information in the documents",
        },
        {
            "value": 2,
            "key": "2",
            "name": "partly-incorrect",
            "title": "Partly correct, with incorrect details",
        },
        {
            "value": 3,
            "key": "3",
            "name": "partly-incomplete",
            "title": "Partly correct, incomplete for lack of information",
        },
        {"value": 4, "key": "4", "name": "fully-incorrect", "title": "Fully incorrect"},
        {"value": 5, "key": "5", "name": "fully-correct", "title": "Fully correct"},
    ],
    "groups": {"correct": [5], "hallucination": [2, 4], "abstention": [1, 3]},
}

# The order criteria are listed in wherever several are shown (the overview's headline, the start
# page, the campaign's pages): what people ask of an assistant first. Answer-level criteria judge
# the whole answer (is it on topic, is it right), so they come first; then sentence-level ones
# (is each sentence backed by its sources); then citation-level ones (does each cited chunk
# support its sentence), the finest and the most technical. Within a level, the conventions'
# criteria in this order, then the campaign's own by name.
LEVEL_ORDER = ("answer", "sentence", "citation")
CRITERIA_ORDER = ("relevance", ANSWER_CORRECTNESS["name"], "veracity", "citation_support")


def criterion_order(*, name: str, level: str) -> tuple[int, int, str]:
    """The sort key of a criterion named ``name`` at ``level`` (see ``CRITERIA_ORDER``): sorting
    criteria by it lists them in the order people read them."""
    level_rank = LEVEL_ORDER.index(level) if level in LEVEL_ORDER else len(LEVEL_ORDER)
    known = CRITERIA_ORDER.index(name) if name in CRITERIA_ORDER else len(CRITERIA_ORDER)
    return level_rank, known, name
