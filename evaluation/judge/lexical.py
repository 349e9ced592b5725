"""The offline lexical judge: deterministic, instant, and a WEAK baseline.

It needs no model and no network, so the app can run a judge anywhere, and it gives a floor any
LLM judge should beat. It only counts shared words; it cannot see negations, paraphrases,
contradictions or off-topic passages. Never read its labels as a substitute for a real judge.

Text analysis, the same for sentences, sources, questions and answers:

- citation markers (the campaign's pattern: ``[^4ca822^]`` by default, ``[1]`` in some
  datasets) and list markers are removed;
- numbers are read from the original text and normalised: thin, narrow and non-breaking spaces
  group thousands, ``,`` or ``.`` is the decimal mark, units and signs are ignored, so
  ``66,5 %``, ``66.5%`` and ``66,50`` are the same number, ``1 234`` is ``1234`` and
  ``12,4 M€`` is ``12.4``; an ambiguous ``1,234`` matches both ``1.234`` and ``1234``;
- words are lower-cased and accent-folded (``é`` -> ``e``, ``œ`` -> ``oe``); French and English
  stopwords, politeness and transition words, and words under 3 letters are dropped; the rest
  are stemmed by dropping a plural ``s``/``x`` and truncating to 6 letters (``financières`` and
  ``financier`` share ``financ``).

Veracity (sentence level): 1 when at least ``VERACITY_THRESHOLD`` of the sentence's content
words occur in the cited sources AND every number of the sentence does; a sentence with no
content word and no number (filler, politeness) is 1; a sentence with content that cites no
source is 0.

Relevance (answer level): 1 when at least ``RELEVANCE_THRESHOLD`` of the question's content words
and numbers occur in the answer. Abstentions get no special treatment: one that restates the
question's terms counts as relevant, one that does not as off-topic.

Source texts are analysed once and cached, so judging the sentences of an answer that share
their sources is fast (well over 20,000 sentences a second).

Its reasons are English text made only from the constant templates below (``REASONS``), as the
judgments store them and the exports show them; the templates are msgids of the French catalogue,
and :func:`translate` reads a stored reason back into its template and parameters to speak it in
the reader's language, as ``inference.notes`` does for the estimators' notes.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from functools import cache, lru_cache
from typing import NamedTuple

from annotation.corpus.citations import compile_citation_pattern
from annotation.corpus.conventions import DEFAULT_CITATION_PATTERN

# The reasons a verdict gives: the same templates are the French catalogue's msgids
# (evaluation/templatetags/report_extras.py marks them), so that a page translates a stored reason.
FILLER = "lexical: no content word and no number (filler sentence)"
NO_SOURCE = "lexical: %(words)s content word(s) and %(numbers)s number(s) but no cited source"
WORDS_FOUND = (
    "lexical: %(found)s/%(total)s content words found in the cited sources "
    "(%(overlap)s%%, threshold %(threshold)s%%); %(detail)s"
)
NO_TERMS = "lexical: the question has no content word to look for"
TERMS_FOUND = (
    "lexical: %(found)s/%(total)s of the question's terms found in the answer "
    "(%(overlap)s%%, threshold %(threshold)s%%)"
)
# What WORDS_FOUND says of the sentence's numbers (its ``detail``).
NUMBERS_MISSING = "number(s) not found: %(numbers)s"
NUMBERS_FOUND = "all %(count)s number(s) found"
NO_NUMBER = "no number"
REASONS = (FILLER, NO_SOURCE, WORDS_FOUND, NO_TERMS, TERMS_FOUND)
DETAILS = (NUMBERS_MISSING, NUMBERS_FOUND, NO_NUMBER)
TEMPLATES = (*REASONS, *DETAILS)


def _percent(share: float) -> str:
    """A share as the reasons write it, a whole percentage without its sign: ``0.333`` is ``33``."""
    return f"{share * 100:.0f}"


@cache
def _pattern(template: str) -> re.Pattern[str]:
    """``template`` as a regular expression whose named groups are its placeholders."""
    parts = re.split(r"%\((\w+)\)s", template)
    return re.compile(
        "".join(
            re.escape(part.replace("%%", "%")) if i % 2 == 0 else f"(?P<{part}>.+?)"
            for i, part in enumerate(parts)
        )
    )


def translate(reason: str, gettext: Callable[[str], str]) -> str:
    """A stored reason in the language of ``gettext`` (Django's, at display time): its template
    translated and filled again with the same numbers, its ``detail`` translated in turn. Text
    that no template makes (an LLM judge's reasoning) comes back unchanged."""
    for template in REASONS:
        if found := _pattern(template).fullmatch(reason):
            params = found.groupdict()
            if "detail" in params:
                detail = params["detail"]
                shown = next(
                    (gettext(t) % m.groupdict() for t in DETAILS if (m := _pattern(t).fullmatch(detail))),
                    detail,
                )
                params["detail"] = shown
            return gettext(template) % params
    return reason


# How sharply the lexical judge's score moves from 0 to 1 around its threshold (see ``_score``).
SCORE_SLOPE = 10.0


class LexicalVerdict(NamedTuple):
    """The lexical judge's label, its reasoning, and its confidence in the label: a score from
    the overlap's distance to the threshold, not a calibrated probability (the report's
    calibration shows how far from one it is)."""

    label: int
    reasoning: str
    confidence: float


def _score(*, overlap: float, threshold: float, label: int) -> float:
    """The confidence in ``label``: a logistic of the overlap's margin over the threshold, so a
    verdict far from the threshold is surer than one beside it (0.5 at the threshold)."""
    one = 1.0 / (1.0 + math.exp(-SCORE_SLOPE * (overlap - threshold)))
    if label == 0:
        # A number not found in the sources makes the verdict 0 whatever the words say.
        return max(1.0 - one, 0.5)
    return max(one, 0.5)


VERACITY_THRESHOLD = 0.6
RELEVANCE_THRESHOLD = 0.5
STEM_LENGTH = 6
MIN_WORD_LENGTH = 3

_FRENCH_STOPWORDS = """
a afin ai aie aient ainsi alors apres as au aucun aucune auquel aura aurai auraient aurait aussi
autre autres aux auxquelles auxquels avaient avais avait avant avec avez aviez avions avoir avons
ayant bien c ca car ce ceci cela celle celles celui ces cet cette ceux chacun chaque chez ci comme
comment concernant contre d dans de depuis des desquelles desquels dessous dessus deux devrait doit
donc dont du duquel durant elle elles en encore entre es est et etaient etais etait etant ete etes
etre eu eue eues eurent eus eut eux faire fait faut fois font hormis il ils j je jusqu jusque l la
laquelle le lequel les lesquelles lesquels leur leurs lors lorsque lui m ma mais me meme memes mes
moi mon n ne ni non nos notamment notre nous on ont ou par parce parmi pas pendant peu peut peuvent
peux plupart plus plusieurs pour pourquoi pourrait pres puis puisque qu quand que quel quelle
quelles quels qui quoi s sa sans se selon ses seulement si sien sienne soi soient sois soit sommes
son sont sous soyez suis sur t ta tandis te tel telle telles tels tes toi ton tous tout toute
toutes tres tu un une unes uns vers via voici voila vos votre vous y egalement neanmoins toutefois
cependant ailleurs afin ainsi donc enfin outre autant quant certains certaines certain certaine
"""

_ENGLISH_STOPWORDS = """
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing done down during each either else etc few
for from further had has have having he her here hers herself him himself his how however i if in
into is it its itself just may me might more most must my myself no nor not now of off on once
only or other our ours ourselves out over own per same shall she should so some such than that
the their theirs them themselves then there these they this those through thus to too under until
up upon very via was we were what when where whether which while who whom whose why will with
within without would yet you your yours yourself yourselves
"""

# Words that frame an answer without stating a fact: a sentence made only of them is filler.
_FILLER_WORDS = """
bonjour merci cordialement hesitez hesiter souhaitez souhaite souhaiter besoin aide aider
question questions demande demandes demandee demandees information informations detail details
suivant suivante suivants suivantes resume resumer synthese dessous voir trouverez
trouver reponse preciser precisions ensemble elements element concerne concernant
hello thanks thank please hope helps help feel free ask following summary information details
answer below find here note
"""

_STOPWORDS = frozenset((_FRENCH_STOPWORDS + _ENGLISH_STOPWORDS + _FILLER_WORDS).split())

_LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+", re.MULTILINE)
_GROUP_SPACES = "\u0020\u00a0\u202f\u2009"
_NUMBER = re.compile(
    r"(?<![\w.,])"  # not glued to a word or to another number
    rf"(?:\d{{1,3}}(?:[{_GROUP_SPACES}]\d{{3}})+(?!\d)|\d+)"  # integer part, maybe grouped by spaces
    r"(?:[.,]\d+)*"  # decimal part, or groups of thousands
)
_SPACES = re.compile(rf"[{_GROUP_SPACES}]")
_WORD = re.compile(r"[a-z]+")
# Non-ASCII marks that separate words; folding to ASCII would otherwise glue the words together.
_NON_ASCII_BREAKS = re.compile(
    "[\u2019\u2018\u02bc\u00ab\u00bb\u201c\u201d\u2014\u2013\u2026\u00a0\u202f\u2009]"
)
_LIGATURES = (("\u0153", "oe"), ("\u00e6", "ae"), ("\u00df", "ss"))


class _Analysis(NamedTuple):
    stems: frozenset[str]
    numbers: tuple[tuple[str, frozenset[str]], ...]  # (as written, normalised forms)


class _Profile(NamedTuple):
    stems: frozenset[str]
    numbers: frozenset[str]


def _canonical(integer: str, fraction: str = "") -> str:
    integer = integer.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    return f"{integer}.{fraction}" if fraction else integer


@lru_cache(maxsize=65536)
def number_forms(raw: str) -> frozenset[str]:
    """The normalised values a written number may stand for (two when ``,``/``.`` is ambiguous)."""
    text = _SPACES.sub("", raw)
    parts = re.split(r"[.,]", text)
    separators = [c for c in text if c in ".,"]
    if not separators:
        return frozenset({_canonical(text)})
    forms = set()
    middle_are_groups = all(len(p) == 3 for p in parts[1:-1])
    same_group_mark = len(set(separators[:-1])) <= 1 and (
        len(separators) == 1 or separators[-1] != separators[0]
    )
    if middle_are_groups and same_group_mark:
        forms.add(_canonical("".join(parts[:-1]), parts[-1]))
    if len(set(separators)) == 1 and all(len(p) == 3 for p in parts[1:]):
        forms.add(_canonical("".join(parts)))
    return frozenset(forms or {text})


def _fold(text: str) -> str:
    text = text.lower()
    if text.isascii():
        return text
    text = _NON_ASCII_BREAKS.sub(" ", text)
    for ligature, letters in _LIGATURES:
        if ligature in text:
            text = text.replace(ligature, letters)
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


def _stem(word: str) -> str:
    if len(word) > 4 and word[-1] in "sx":
        word = word[:-1]
    return word[:STEM_LENGTH]


def _analyse(text: str, citation_pattern: str = DEFAULT_CITATION_PATTERN) -> _Analysis:
    """Content words and numbers of ``text``, its citation markers (``citation_pattern``, the
    campaign's) left out: a marker such as ``[1]`` is no number of the sentence."""
    text = _LIST_MARKER.sub("", compile_citation_pattern(citation_pattern).sub(" ", text))
    numbers = tuple((m.group(0), number_forms(m.group(0))) for m in _NUMBER.finditer(text))
    stems = frozenset(
        _stem(w) for w in _WORD.findall(_fold(text)) if len(w) >= MIN_WORD_LENGTH and w not in _STOPWORDS
    )
    return _Analysis(stems=stems, numbers=numbers)


def _profile(text: str, citation_pattern: str = DEFAULT_CITATION_PATTERN) -> _Profile:
    analysis = _analyse(text, citation_pattern)
    return _Profile(
        stems=analysis.stems, numbers=frozenset(f for _, forms in analysis.numbers for f in forms)
    )


# The sentences of one answer cite the same few sources: analyse each source text once.
_source_profile = lru_cache(maxsize=8192)(_profile)


def lexical_veracity(
    *,
    sentence: str,
    sources: list[str],
    threshold: float = VERACITY_THRESHOLD,
    citation_pattern: str = DEFAULT_CITATION_PATTERN,
) -> LexicalVerdict:
    """(label, reasoning, confidence) for one sentence against the texts of the sources it cites.

    1 when at least ``threshold`` of its content words and all of its numbers occur in the cited
    sources; 1 for a sentence with no content word and no number (filler); 0 for a sentence with
    content that cites no source. See the module docstring for how text is compared.
    """
    analysis = _analyse(sentence, citation_pattern)
    stems, numbers = analysis.stems, analysis.numbers
    if not stems and not numbers:
        return LexicalVerdict(1, FILLER, 0.5)
    profiles = [_source_profile(text, citation_pattern) for text in sources if text and text.strip()]
    if not profiles:
        return LexicalVerdict(0, NO_SOURCE % {"words": len(stems), "numbers": len(numbers)}, 0.95)
    found = sum(1 for stem in stems if any(stem in p.stems for p in profiles))
    missing_numbers = [
        raw for raw, forms in numbers if not any(not forms.isdisjoint(p.numbers) for p in profiles)
    ]
    overlap = found / len(stems) if stems else 1.0
    label = int(overlap >= threshold and not missing_numbers)
    if missing_numbers:
        detail = NUMBERS_MISSING % {"numbers": ", ".join(missing_numbers)}
    else:
        detail = NUMBERS_FOUND % {"count": len(numbers)} if numbers else NO_NUMBER
    reason = WORDS_FOUND % {
        "found": found,
        "total": len(stems),
        "overlap": _percent(overlap),
        "threshold": _percent(threshold),
        "detail": detail,
    }
    return LexicalVerdict(label, reason, _score(overlap=overlap, threshold=threshold, label=label))


def lexical_relevance(
    *,
    question: str,
    answer: str,
    threshold: float = RELEVANCE_THRESHOLD,
    citation_pattern: str = DEFAULT_CITATION_PATTERN,
) -> LexicalVerdict:
    """(label, reasoning, confidence) for one answer: does it take up the question's terms?

    1 when at least ``threshold`` of the question's content words and numbers occur in the
    answer; 1 when the question has none to look for. Abstentions are not special-cased (see the
    module docstring); off-topic additions are invisible to this judge.
    """
    wanted = _analyse(question, citation_pattern)
    terms = len(wanted.stems) + len(wanted.numbers)
    if terms == 0:
        return LexicalVerdict(1, NO_TERMS, 0.5)
    given = _profile(answer, citation_pattern)
    found = sum(1 for stem in wanted.stems if stem in given.stems) + sum(
        1 for _, forms in wanted.numbers if not forms.isdisjoint(given.numbers)
    )
    overlap = found / terms
    label = int(overlap >= threshold)
    reason = TERMS_FOUND % {
        "found": found,
        "total": terms,
        "overlap": _percent(overlap),
        "threshold": _percent(threshold),
    }
    return LexicalVerdict(label, reason, _score(overlap=overlap, threshold=threshold, label=label))
