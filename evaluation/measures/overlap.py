"""An answer against its question's reference answer: exact match, token F1 and ROUGE-L.

Pure functions over texts; ``evaluation.measures.reference_answers`` reads the campaign.

**Exact match** and **token F1** are SQuAD's (Rajpurkar et al. 2016; the official v1.1 evaluation
script's ``exact_match_score`` and ``f1_score``): both texts normalised, then EM is 1 when the
normalised texts are equal, and F1 the harmonic mean of the precision and recall of the
normalised tokens shared (a bag of tokens: each shared token counted as often as in both), 0
when none is shared. **ROUGE-L** (Lin 2004) is the F-measure of the longest common subsequence
of the two texts' tokens, as Google's ``rouge-score`` computes it without stemming:
precision LCS / |answer|, recall LCS / |reference|, F = 2PR / (P + R), 0 when either text has no
token.

Normalisation (``NORMALISATIONS``):

- ``squad``: SQuAD v1.1's ``normalize_answer`` exactly: lower case, every character of Python's
  ``string.punctuation`` removed, the English articles a, an, the removed, whitespace collapsed;
  ROUGE-L with ``rouge-score``'s tokenizer exactly (lower case, runs of ``a-z0-9``: any other
  character, an accented letter included, separates tokens). For English texts.
- ``en``: the same rules on Unicode text: both texts in NFC (so that ``é`` typed as one code
  point or as ``e`` and an accent compare equal), lower case, every Unicode punctuation character
  removed (categories P*: ``’`` and ``«`` as ``'`` and ``"``), articles a, an, the removed;
  ROUGE-L tokens are runs of Unicode letters and digits.
- ``fr``: as ``en`` with the French articles: le, la, les, un, une, des, du, de la, and the
  elided l' and d' (with ' or ’) removed before the punctuation is.
- ``auto`` (the default): ``fr`` for a question in French, ``en`` otherwise.

Accents are **kept**: in French they tell words apart (a / à, ou / où, du / dû, côte / cote), and
an answer that loses them has a different word. A removed character is deleted, as SQuAD deletes
it ("48,2" becomes "482", "aujourd'hui" "aujourdhui"), not replaced by a space.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

SQUAD = "squad"
ENGLISH = "en"
FRENCH = "fr"
AUTO = "auto"
NORMALISATIONS = (AUTO, SQUAD, ENGLISH, FRENCH)

_SQUAD_PUNCTUATION = set(string.punctuation)
_ENGLISH_ARTICLES = re.compile(r"\b(a|an|the)\b")
_FRENCH_ELISIONS = re.compile(r"\b[ld]['’]")
_FRENCH_ARTICLES = re.compile(r"\b(?:de la|le|la|les|un|une|des|du)\b")
_ROUGE_SCORE_TOKEN = re.compile(r"[a-z0-9]+")
_UNICODE_TOKEN = re.compile(r"[^\W_]+")


def resolve(normalisation: str, *, language: str = "") -> str:
    """The normalisation in force: ``auto`` becomes ``fr`` for a French question, ``en``
    otherwise; ValueError for a name not in NORMALISATIONS."""
    if normalisation not in NORMALISATIONS:
        raise ValueError(
            f"unknown normalisation {normalisation!r}; expected one of {', '.join(NORMALISATIONS)}"
        )
    if normalisation == AUTO:
        return FRENCH if (language or "").lower().startswith("fr") else ENGLISH
    return normalisation


def _squad(text: str) -> str:
    # SQuAD v1.1's normalize_answer: white_space_fix(remove_articles(remove_punc(lower(s)))).
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _SQUAD_PUNCTUATION)
    text = _ENGLISH_ARTICLES.sub(" ", text)
    return " ".join(text.split())


class _Punctuation(dict[int, int | None]):
    """``str.translate``'s table that deletes every Unicode punctuation character (categories
    P*) and keeps the others: each code point's category is looked up once, then remembered."""

    def __missing__(self, code: int) -> int | None:
        kept = None if unicodedata.category(chr(code)).startswith("P") else code
        self[code] = kept
        return kept


_PUNCTUATION = _Punctuation()


def _unicode(text: str, *, french: bool) -> str:
    text = unicodedata.normalize("NFC", text).lower()
    if french:
        text = _FRENCH_ELISIONS.sub(" ", text)
    text = text.translate(_PUNCTUATION)
    text = (_FRENCH_ARTICLES if french else _ENGLISH_ARTICLES).sub(" ", text)
    return " ".join(text.split())


def normalise(text: str, *, normalisation: str = ENGLISH) -> str:
    """``text`` normalised for EM and F1 (``normalisation`` one of squad, en, fr)."""
    if normalisation == SQUAD:
        return _squad(text)
    if normalisation in (ENGLISH, FRENCH):
        return _unicode(text, french=normalisation == FRENCH)
    raise ValueError(f"unknown normalisation {normalisation!r}")


def exact_match(answer: str, reference: str, *, normalisation: str = ENGLISH) -> float:
    """1.0 when the two normalised texts are equal, else 0.0 (SQuAD's exact_match_score)."""
    return _exact_match(
        normalise(answer, normalisation=normalisation), normalise(reference, normalisation=normalisation)
    )


def _exact_match(answer: str, reference: str) -> float:
    """:func:`exact_match` of two texts normalised already."""
    return float(answer == reference)


def token_f1(answer: str, reference: str, *, normalisation: str = ENGLISH) -> float:
    """SQuAD v1.1's f1_score: the F1 of the normalised tokens shared (0 when none is)."""
    return _token_f1(
        normalise(answer, normalisation=normalisation), normalise(reference, normalisation=normalisation)
    )


def _token_f1(answer: str, reference: str) -> float:
    """:func:`token_f1` of two texts normalised already."""
    answer_tokens = answer.split()
    reference_tokens = reference.split()
    common = Counter(answer_tokens) & Counter(reference_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = 1.0 * same / len(answer_tokens)
    recall = 1.0 * same / len(reference_tokens)
    return (2 * precision * recall) / (precision + recall)


def rouge_tokens(text: str, *, normalisation: str = ENGLISH) -> list[str]:
    """ROUGE-L's tokens: ``rouge-score``'s (runs of a-z0-9 of the lower-cased text) for squad;
    runs of Unicode letters and digits of the NFC, lower-cased text otherwise."""
    if normalisation == SQUAD:
        return _ROUGE_SCORE_TOKEN.findall(text.lower())
    return _UNICODE_TOKEN.findall(unicodedata.normalize("NFC", text).lower())


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """The length of the longest common subsequence of two token lists, by the bit-vector
    algorithm (Allison and Dix 1986; Hyyrö 2004): one word of |a| bits, a few operations per
    token of ``b``, so ROUGE-L of long answers stays fast in Python."""
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for position, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << position)
    full = (1 << len(a)) - 1
    row = full
    for token in b:
        match = masks.get(token, 0)
        shared = row & match
        row = ((row + shared) | (row - shared)) & full
    return len(a) - row.bit_count()


def rouge_l(answer: str, reference: str, *, normalisation: str = ENGLISH) -> float:
    """ROUGE-L's F-measure of ``answer`` against ``reference`` (``rouge-score``'s, no stemming)."""
    answer_tokens = rouge_tokens(answer, normalisation=normalisation)
    reference_tokens = rouge_tokens(reference, normalisation=normalisation)
    if not answer_tokens or not reference_tokens:
        return 0.0
    lcs = lcs_length(reference_tokens, answer_tokens)
    precision = lcs / len(answer_tokens)
    recall = lcs / len(reference_tokens)
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class Scores:
    """One answer's exact match, token F1 and ROUGE-L against its reference answer."""

    exact_match: float
    token_f1: float
    rouge_l: float


MEASURES = ("exact_match", "token_f1", "rouge_l")


def scores(answer: str, reference: str, *, normalisation: str = ENGLISH) -> Scores:
    """The three measures of one answer (``normalisation`` one of squad, en, fr); each text
    normalised once for the first two."""
    normalised_answer = normalise(answer, normalisation=normalisation)
    normalised_reference = normalise(reference, normalisation=normalisation)
    return Scores(
        exact_match=_exact_match(normalised_answer, normalised_reference),
        token_f1=_token_f1(normalised_answer, normalised_reference),
        rouge_l=rouge_l(answer, reference, normalisation=normalisation),
    )
