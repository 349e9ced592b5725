"""Text functions of the corpus: citations, sentence splitting, source blobs, language detection.

Everything here is deterministic and, apart from ``langdetect``, standard library only: the same
answer always gives the same sentences and the same language, in any process.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from langdetect.detector import Detector
from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory
from langdetect.lang_detect_exception import ErrorCode, LangDetectException
from langdetect.utils.ngram import NGram

from annotation.conventions import DEFAULT_CITATION_PATTERN


@dataclass(frozen=True, slots=True)
class SplitSentence:
    """One sentence of an answer: its 0-based position, text (with its citation markers), paragraph."""

    position: int
    text: str
    paragraph: str
    paragraph_index: int
    cited_ids: tuple[str, ...]


@lru_cache(maxsize=32)
def _citation(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def find_citations(text: str, *, citation_pattern: str = DEFAULT_CITATION_PATTERN) -> list[str]:
    """Ids cited in ``text`` (group 1 of ``citation_pattern``), in order of first appearance, once each."""
    return list(dict.fromkeys(m.group(1) for m in _citation(citation_pattern).finditer(text)))


def chunk_text_hash(text: str) -> str:
    """The digest that tells a chunk's texts apart (SourceChunk.text_hash): SHA-256 of its UTF-8
    text, in hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- Sentence splitting -------------------------------------------------------------------------

# A period after these never ends a sentence: they announce what follows (a name, a number, an
# example). Titles are compared with their case ("me." and "m." end sentences, "Me" and "M" do not).
# fmt: off
_TITLES = frozenset({
    "M", "MM", "Mme", "Mmes", "Mlle", "Mlles", "Mgr", "Me", "Dr", "Drs", "Pr", "Pres", "Prof", "Mr",
    "Mrs", "Ms", "Messrs", "St", "Ste", "Sté", "Stés", "Sen", "Gen", "Gov", "Rev"
})
_PREFIXES = frozenset({
    "cf", "p", "pp", "ch", "chap", "env", "approx", "ex", "n°", "nº", "réf", "ref", "av", "bd", "vs",
    "tél", "éd", "ed", "eq", "sect", "para", "resp", "e.g", "i.e", "c.-à-d", "c-à-d", "c.à.d", "n.b",
    "a.k.a", "p.ex", "viz"
})
# Also ordinary words ("No.", "le vol.", "l'art.", "sept."): an abbreviation only before a number
# or a code. Month abbreviations belong here: "au 31 déc. 2022" goes on, "arrivé en sept. Le" ends.
_BEFORE_NUMBER = frozenset({
    "no", "nos", "vol", "art", "arts", "fig", "figs", "tab", "tabl",
    "janv", "févr", "fév", "mars", "avr", "juil", "sept", "oct", "nov", "déc",
    "jan", "feb", "apr", "jun", "jul", "aug", "sep", "dec"
})
# May end a sentence: they do when the next word is capitalised ("... Acme Inc. The deal ...").
_SUFFIXES = frozenset({
    "etc", "inc", "ltd", "co", "corp", "plc", "llc", "sa", "sas", "sarl", "al", "jr", "sr", "bros",
    "s.a", "s.a.s", "s.a.r.l"
})
# fmt: on

# French elision glued to the abbreviation: "l'art.", "d'art.", "qu'av." are "art." and "av.".
_ELISION = re.compile(r"^(?:[ldjmnstc]|qu|jusqu|lorsqu|puisqu)['’]", re.IGNORECASE)
_INITIALS = re.compile(r"(?:[A-ZÀ-ÖØ-Þ]\.-?)*[A-ZÀ-ÖØ-Þ]")
_REFERENCE = re.compile(r"\d|[IVXLC]+\b|[A-Z]{1,3}[.\-\d]")
_NEXT = re.compile(r"[\s«“‘\"'(\[*_]*(\S)")
_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"\w")
_OPENERS = "([{«“‘\"'*_"

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_HEADING = re.compile(r"#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_LIST_ITEM = re.compile(r"(?:[-*+•–—▪]|\d{1,3}[.)]|[A-Za-z]\))[ \t]+(?=\S)")
_RULE = re.compile(r"(?:[-*_=][ \t]*){3,}$")
# A whole line in bold or italics works as a title: the line break after it ends it.
_EMPHASIS_LINE = re.compile(r"(\*\*|__|\*|_)\S.*\1:?$")


@dataclass(frozen=True, slots=True)
class _Patterns:
    citation: re.Pattern[str]
    ender: re.Pattern[str]
    colon_end: re.Pattern[str]
    marker_end: re.Pattern[str]
    markers_only: re.Pattern[str]


@lru_cache(maxsize=32)
def _patterns(citation_pattern: str) -> _Patterns:
    cite = f"(?:{citation_pattern})"
    ender = re.compile(
        r"(?P<punct>[.!?…]+)"
        r"(?:[\s\u00a0]*[»”]|[\"'’)\]*_])*"  # closing quotes, brackets, emphasis
        rf"(?:[\s\u00a0]*{cite})*"  # markers after the period belong to this sentence
        r"[.!?…]*(?:[»”\"'’)*_])*"
        r"(?=\s|$)"
        # A marker, the period, then the next sentence with no space ("personnes[^j^].Elle"): the
        # missing space is a typing slip, not an abbreviation, since a marker ends a statement.
        rf"|{cite}(?P<glued>[.!?…]+)(?=[A-ZÀ-ÖØ-Þ])"
    )
    return _Patterns(
        citation=_citation(citation_pattern),
        ender=ender,
        colon_end=re.compile(rf":[\s\u00a0]*(?:{cite}[\s\u00a0]*)*$"),
        marker_end=re.compile(rf"{cite}[\s\u00a0]*$"),
        markers_only=re.compile(rf"(?:[\W_]*{cite})+[\W_]*"),
    )


def _is_boundary(unit: str, start: int, match: re.Match[str]) -> bool:
    """Whether the punctuation in ``match`` ends the sentence that began at ``start``."""
    following = _NEXT.match(unit, match.end())
    next_char = following.group(1) if following else ""
    if next_char.islower():
        return False
    if not _LETTER.search(unit, start, match.start()):
        return False  # "1." or "[^a^]." alone is not a sentence yet
    if match.group("punct") != ".":
        return True  # "?", "!", "…", or a period glued between a marker and a capital
    point = match.start()
    window = unit[max(start, point - 16) : point].rsplit(None, 1)
    token = _ELISION.sub("", window[-1].lstrip(_OPENERS)) if window else ""
    if not token:
        return True
    if token in _TITLES:
        return False
    lowered = token.lower()
    if lowered in _PREFIXES:
        return False
    if lowered in _BEFORE_NUMBER:
        return not (following and _REFERENCE.match(unit, following.start(1)))
    if lowered in _SUFFIXES:
        return next_char.isupper()
    if token.isdigit() and len(token) <= 2 and unit[start : point - len(token)].rstrip().endswith(":"):
        return False  # inline numbering: "trois étapes : 1. Collecter ..."
    return not _INITIALS.fullmatch(token)


def _split_unit(unit: str, patterns: _Patterns) -> list[str]:
    pieces: list[str] = []
    start = 0
    length = len(unit)
    for match in patterns.ender.finditer(unit):
        end = match.end()
        if end >= length:
            break
        if _is_boundary(unit, start, match):
            pieces.append(unit[start:end].strip())
            start = end
    pieces.append(unit[start:].strip())
    return pieces


def _starts_upper(line: str) -> bool:
    first = _NEXT.match(line)
    return first is not None and first.group(1).isupper()


def _units(block: str, patterns: _Patterns) -> list[tuple[str, bool]]:
    """The block's headings, list items and runs of prose lines, as (text, is a heading)."""
    units: list[tuple[str, bool]] = []
    buffer: list[str] = []
    in_item = False

    def flush() -> None:
        if buffer:
            units.append((" ".join(buffer), False))
            buffer.clear()

    for raw in block.split("\n"):
        line = raw.strip()
        if line.startswith(">"):
            line = line.lstrip("> \t")
        if not line:
            continue
        if line[0] == "#" and (heading := _HEADING.match(line)):
            flush()
            in_item = False
            units.append((heading.group(1), True))
            continue
        if line[0] in "-*_=" and _RULE.match(line):
            flush()
            in_item = False
            continue
        item = _LIST_ITEM.match(line)
        if item:
            flush()
            in_item = True
            line = line[item.end() :]
        elif patterns.markers_only.fullmatch(line):
            # Markers alone on a line go with what precedes them, even across a paragraph break.
            if buffer:
                buffer.append(line)
            else:
                units.append((line, False))
            continue
        elif line[0] == "|" or _EMPHASIS_LINE.match(line):
            flush()
            in_item = False
            units.append((line, False))
            continue
        elif in_item and raw[:1] not in " \t":
            flush()
            in_item = False
        elif buffer and _starts_upper(line) and patterns.marker_end.search(buffer[-1]):
            flush()  # "... [^a^]" then a capitalised line: a sentence whose period was left out
        buffer.append(line)
        if ":" in line and patterns.colon_end.search(line):
            flush()
    flush()
    return units


def split_sentences(text: str, *, citation_pattern: str = DEFAULT_CITATION_PATTERN) -> list[SplitSentence]:
    """Cut a French or English answer into sentences, each keeping its citation markers.

    Paragraphs are the blocks between blank lines (``paragraph`` is the stripped block,
    ``paragraph_index`` counts non-blank blocks). A markdown heading is one sentence, without its
    ``#``; each list item is split on its own and loses its bullet or number; other lines of a block
    are joined, except after a line ending with a colon, or with a citation marker when the next
    line is capitalised. Sentences end at ``. ! ? …`` followed by space (or, right after a citation
    marker, by a capital: ``[^a^].Elle``), unless the next word starts in lowercase or the period
    closes an abbreviation (elided too: ``l'art. 3``), an initial or a decimal number. Markers (and
    closing quotes) right after the final punctuation stay with the sentence; a piece made only of
    markers joins the previous sentence (the next one if none). Pieces without a letter or digit
    are dropped; ``text`` is stripped, with line breaks as spaces. ``cited_ids`` lists each id
    once, in order of appearance.
    """
    patterns = _patterns(citation_pattern)
    citation = patterns.citation
    result: list[SplitSentence] = []
    leading_markers = ""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    blocks = [block.strip() for block in _PARAGRAPH_BREAK.split(text)]
    for paragraph_index, paragraph in enumerate(block for block in blocks if block):
        for unit, is_heading in _units(paragraph, patterns):
            for piece in [unit.strip()] if is_heading else _split_unit(unit, patterns):
                if not _WORD.search(piece):
                    continue
                if patterns.markers_only.fullmatch(piece):
                    if not result:
                        leading_markers = f"{leading_markers} {piece}".strip()
                        continue
                    last = result[-1]
                    merged = f"{last.text} {piece}"
                    result[-1] = SplitSentence(
                        position=last.position,
                        text=merged,
                        paragraph=last.paragraph,
                        paragraph_index=last.paragraph_index,
                        cited_ids=tuple(dict.fromkeys(m.group(1) for m in citation.finditer(merged))),
                    )
                    continue
                if leading_markers:
                    piece = f"{leading_markers} {piece}"
                    leading_markers = ""
                result.append(
                    SplitSentence(
                        position=len(result),
                        text=piece,
                        paragraph=paragraph,
                        paragraph_index=paragraph_index,
                        cited_ids=tuple(dict.fromkeys(m.group(1) for m in citation.finditer(piece))),
                    )
                )
    return result


# --- Source blobs --------------------------------------------------------------------------------

_BLOB_HEADER = re.compile(r"#####[ \t]*\[\^(.*?)\^\][ \t]*#####")
_SOURCE_LINE = re.compile(r"source[ \t]*:(.*)", re.IGNORECASE)
_SOURCE_PAGE = re.compile(r"^(.*?)[ \t]*\((?:page|pages|p\.)[ \t]*(\d+)[ \t]*\)$", re.IGNORECASE)
_PAGE_LINE = re.compile(r"page[ \t]*:(.*)", re.IGNORECASE)


def parse_source_blob(blob: str) -> list[dict]:
    """Chunks of the assistant's source text, in order, as ``{"id", "title", "page", "text"}``.

    Each chunk is a header line ``##### [^ID^] #####``, a line ``Source: TITLE`` (the title may
    end with ``(page N)``, or a ``Page: N`` line may follow), a blank line, then the text up to the
    next header (stripped; inner blank lines kept). ``page`` is an int or None. A blank blob gives
    ``[]``. Raises ValueError naming the chunk number and line on text before the first header, a
    missing or empty Source line, an empty or duplicate id, or a page that is not a whole number.
    """
    chunks: list[dict] = []
    first_chunk_of: dict[str, int] = {}
    body: list[str] = []
    expecting = ""  # "source", then "page", then "" (text)

    def where(line_number: int) -> str:
        return f"source chunk {len(chunks)} ([^{chunks[-1]['id']}^]) at line {line_number}"

    def close_chunk() -> None:
        if chunks:
            chunks[-1]["text"] = "\n".join(body).strip()
            body.clear()

    lines = blob.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        header = _BLOB_HEADER.fullmatch(line)
        if header:
            if expecting == "source":
                raise ValueError(f"{where(number)}: missing 'Source: TITLE' line before the next header")
            close_chunk()
            chunk_id = header.group(1).strip()
            number_of_chunk = len(chunks) + 1
            if not chunk_id:
                raise ValueError(f"source chunk {number_of_chunk} at line {number}: empty id in {line!r}")
            if chunk_id in first_chunk_of:
                raise ValueError(
                    f"source chunk {number_of_chunk} ([^{chunk_id}^]) at line {number}: duplicate id "
                    f"{chunk_id!r} (already the id of chunk {first_chunk_of[chunk_id]})"
                )
            first_chunk_of[chunk_id] = number_of_chunk
            chunks.append({"id": chunk_id, "title": "", "page": None, "text": ""})
            expecting = "source"
            continue
        if not chunks:
            if line:
                raise ValueError(
                    f"source text: line {number} comes before the first '##### [^ID^] #####' header: "
                    f"{line[:60]!r}"
                )
            continue
        if expecting == "source":
            if not line:
                continue
            source = _SOURCE_LINE.fullmatch(line)
            if not source:
                raise ValueError(f"{where(number)}: expected a 'Source: TITLE' line, found {line[:60]!r}")
            title, page = source.group(1).strip(), None
            with_page = _SOURCE_PAGE.match(title)
            if with_page:
                title, page = with_page.group(1).strip(), int(with_page.group(2))
            if not title:
                raise ValueError(f"{where(number)}: empty title in the Source line")
            chunks[-1]["title"], chunks[-1]["page"] = title, page
            expecting = "page"
            continue
        if expecting == "page":
            expecting = ""
            page_line = _PAGE_LINE.fullmatch(line)
            if page_line:
                value = page_line.group(1).strip()
                if not value.isdigit():
                    raise ValueError(f"{where(number)}: page {value!r} is not a whole number")
                chunks[-1]["page"] = int(value)
                continue
        body.append(raw)
    if expecting == "source":
        raise ValueError(f"{where(len(lines))}: missing 'Source: TITLE' line")
    close_chunk()
    return chunks


# --- Language ------------------------------------------------------------------------------------

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
    cleaned = _NOT_LANGUAGE.sub(" ", _citation(citation_pattern).sub(" ", text))
    if not _LETTER.search(cleaned):
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
