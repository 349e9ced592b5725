"""The language an answer is written in: langdetect, deterministic and restricted to a campaign's
candidate languages where the text is mostly in the Latin script (``detect_language``).

``_Detector`` runs langdetect's own arithmetic faster by overriding two of its private methods;
``LANGDETECT_VERSION`` pins the version it was written against (tests/test_private_library_uses.py).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from functools import lru_cache

from langdetect.detector import Detector
from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory
from langdetect.lang_detect_exception import ErrorCode, LangDetectException
from langdetect.utils.ngram import NGram

from annotation.corpus.citations import compile_citation_pattern
from annotation.corpus.conventions import DEFAULT_CITATION_PATTERN

_factories: dict[frozenset[str] | None, DetectorFactory] = {}
_factory_lock = threading.Lock()
_NOT_LANGUAGE = re.compile(r"https?://\S+|[#*_>`|~\[\]^]+|\d[\d.,:/%\u00a0\u202f]*")


@lru_cache(maxsize=64)
def _profile_names(languages: frozenset[str]) -> tuple[str, ...]:
    """langdetect's profile files for ISO 639-1 codes ("zh" is zh-cn and zh-tw); unknown codes
    are left out."""
    available = os.listdir(PROFILES_DIRECTORY)
    return tuple(
        name
        for code in sorted(languages)
        for name in sorted(available)
        if name == code or name.startswith(f"{code}-")
    )


def _detector_factory(languages: frozenset[str] | None = None) -> DetectorFactory:
    """A factory with every profile (``languages`` None) or only those of ``languages``.

    Loading the 55 language profiles takes a few tenths of a second: once per process and set.
    """
    factory = _factories.get(languages)
    if factory is None:
        with _factory_lock:
            factory = _factories.get(languages)
            if factory is None:
                factory = DetectorFactory()
                if languages is None:
                    factory.load_profile(PROFILES_DIRECTORY)
                else:
                    profiles = []
                    for name in _profile_names(languages):
                        with open(os.path.join(PROFILES_DIRECTORY, name), encoding="utf-8") as stream:
                            profiles.append(stream.read())
                    factory.load_json_profile(profiles)
                # On the class too, so that langdetect.detect elsewhere in the process is repeatable.
                DetectorFactory.seed = 0
                factory.seed = 0
                _factories[languages] = factory
    return factory


_LATIN_LETTER = re.compile(r"[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]")
_ANY_LETTER = re.compile(r"[^\W\d_]")


def _mostly_latin(text: str) -> bool:
    # Profiles of Latin-script languages still hold a few Cyrillic or Greek n-grams: a Russian
    # text weighed among them alone would come out Dutch. Other scripts get every profile.
    letters = len(_ANY_LETTER.findall(text))
    return bool(letters) and len(_LATIN_LETTER.findall(text)) >= 0.9 * letters


@lru_cache(maxsize=4096)
def _normalized(ch: str) -> str:
    return NGram.normalize(ch)


# The langdetect whose private methods (``_extract_ngrams``, ``_detect_block``,
# ``_init_probability``) and attributes ``_Detector`` overrides and reads; ``_detect`` is the one
# function that uses it. tests/test_private_library_uses.py pins the version.
LANGDETECT_VERSION = "1.0.9"


class _Detector(Detector):
    """langdetect's detector with its inner loops written to cost less (a quarter less in all), with the
    very same results: the same n-grams, the same random draws, the same floating-point
    operations in the same order (a test compares both detectors on texts in about a hundred
    languages). Each character's normalisation is looked up once per process instead of at every
    occurrence, NGram.add_char is inlined, and so are the probability updates of each trial."""

    def _extract_ngrams(self) -> list[str]:
        known = self.word_lang_prob_map
        result: list[str] = []
        grams, capitalword = " ", False
        for raw in self.text:
            # NGram.add_char, inlined.
            ch = _normalized(raw)
            last_char = grams[-1]
            if last_char == " ":
                grams, capitalword = " ", False
                if ch == " ":
                    continue
            elif len(grams) >= NGram.N_GRAM:
                grams = grams[1:]
            grams += ch
            if ch.isupper():
                if last_char.isupper():
                    capitalword = True
            else:
                capitalword = False
            if capitalword:
                continue
            for n in (1, 2, 3):
                if len(grams) < n:
                    break
                w = grams[-n:]
                if w and w != " " and w in known:
                    result.append(w)
        return result

    def _detect_block(self) -> None:
        self.cleaning_text()
        ngrams = self._extract_ngrams()
        if not ngrams:
            raise LangDetectException(ErrorCode.CantDetectError, "No features in text.")
        self.langprob = [0.0] * len(self.langlist)
        self.random.seed(self.seed)
        # Each drawn n-gram's probabilities (every extracted n-gram has some); drawing from this
        # list of the same length takes the same random numbers as drawing the n-gram.
        tables = [self.word_lang_prob_map[ngram] for ngram in ngrams]
        choice = self.random.choice
        languages = range(len(self.langlist))
        for _ in range(self.n_trial):
            prob = self._init_probability()
            alpha = self.alpha + self.random.gauss(0.0, 1.0) * self.ALPHA_WIDTH
            weight = alpha / self.BASE_FREQ
            i = 0
            while True:
                table = choice(tables)  # _update_lang_prob
                for j in languages:
                    prob[j] *= weight + table[j]
                if i % 5 == 0:  # _normalize_prob
                    maxp, sump = 0.0, sum(prob)
                    for j in languages:
                        p = prob[j] / sump
                        if maxp < p:
                            maxp = p
                        prob[j] = p
                    if maxp > self.CONV_THRESHOLD or i >= self.ITERATION_LIMIT:
                        break
                i += 1
            for j in languages:
                self.langprob[j] += prob[j] / self.n_trial


def _detect(factory: DetectorFactory, cleaned: str) -> str:
    if not factory.langlist:
        raise LangDetectException(ErrorCode.NeedLoadProfileError, "Need to load profiles.")
    detector = _Detector(factory)
    detector.append(cleaned)
    return detector.detect().split("-", 1)[0]


def detect_language(
    text: str,
    *,
    citation_pattern: str = DEFAULT_CITATION_PATTERN,
    candidates: Iterable[str] | None = None,
) -> str:
    """ISO 639-1 code of the language of ``text`` ("fr", "en", ...), or "" when it has no letters.

    Citation markers, markdown symbols, URLs and numbers are removed first. Deterministic: the
    same text always gives the same code. langdetect's regional Chinese codes become "zh".

    ``candidates`` (ISO codes) restricts the choice to those languages: langdetect's cost grows
    with the number of profiles it weighs, and a campaign's answers are in a handful of
    languages. A text not mostly in the Latin script, or that none of the candidates can read,
    is decided among all 55 profiles instead.
    """
    cleaned = _NOT_LANGUAGE.sub(" ", compile_citation_pattern(citation_pattern).sub(" ", text))
    if not _ANY_LETTER.search(cleaned):
        return ""
    restricted = frozenset(code for code in candidates or () if code)
    if restricted and _profile_names(restricted) and _mostly_latin(cleaned):
        try:
            return _detect(_detector_factory(restricted), cleaned)
        except LangDetectException:
            pass
    try:
        return _detect(_detector_factory(None), cleaned)
    except LangDetectException:
        return ""
