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
}
