"""Sentence splitting: an answer cut into sentences that keep their citation markers and their
paragraph (``split_sentences``).

Deterministic and standard library only: the same answer always gives the same sentences, in any
process. Markdown headings, list items and rules end sentences; abbreviations, initials and
references ("art. 12", "M. Dupont", "p. 4") do not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from annotation.corpus.citations import compile_citation_pattern
from annotation.corpus.conventions import DEFAULT_CITATION_PATTERN


@dataclass(frozen=True, slots=True)
class SplitSentence:
    """One sentence of an answer: its 0-based position, text (with its citation markers), paragraph."""

    position: int
    text: str
    paragraph: str
    paragraph_index: int
    cited_ids: tuple[str, ...]


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
        citation=compile_citation_pattern(citation_pattern),
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
