"""Citations: how a campaign's pattern finds the cited ids in a text (``compile_citation_pattern``,
``find_citations``), and citation units, one per (sentence, retrieved chunk it cites).

A sentence citing ``[^a^]`` and ``[^b^]``, both among the chunks the retriever returned for its
answer, makes two citation units; the built-in criterion ``citation_support`` asks of each whether
that one chunk supports at least part of the sentence (citation precision, ALCE). A cited id the
retriever did not return is a broken citation (``Sentence.citations_ok`` is False): it has no text
to judge, so it makes no unit; the functional-citation rate counts it apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

from annotation.corpus.conventions import DEFAULT_CITATION_PATTERN


def cited_chunks(*, cited_ids: Iterable[object], retrieved: Mapping[str, int]) -> list[int]:
    """The pks of the retrieved chunks a sentence cites, each once, in the order of its first
    citation. ``retrieved`` maps the answer's retrieved chunk ids to their pks; a cited id not in
    it (a broken citation) gives nothing."""
    pks: list[int] = []
    for cited in cited_ids:
        pk = retrieved.get(str(cited))
        if pk is not None and pk not in pks:
            pks.append(pk)
    return pks


class CitationPatternError(ValueError):
    """A citation pattern that cannot find cited ids: not a regular expression, or one without a
    group for the id. ``field`` names the campaign's setting; the text starts "citation
    pattern:", ``reason`` is the rest (what a form shows beside the field)."""

    field = "citation_pattern"

    def __init__(self, reason: str) -> None:
        super().__init__(f"citation pattern: {reason}")
        self.reason = reason


@lru_cache(maxsize=32)
def compile_citation_pattern(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled: the one place a citation pattern becomes a regular expression, for
    the splitter, the import, the metrics, the annotation pages and the lexical judge. Its first
    group is the cited chunk's id. CitationPatternError (a ValueError) when it is not a valid
    regular expression or has no group; a campaign's pattern is checked so when it is saved
    (``Campaign.citation_pattern``'s validator), so a stored one always compiles."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise CitationPatternError(f"invalid regular expression {pattern!r} ({exc})") from None
    if compiled.groups < 1:
        raise CitationPatternError(
            f"{pattern!r} has no group: its first group (...) must capture the cited chunk's id"
        )
    return compiled


def find_citations(text: str, *, citation_pattern: str = DEFAULT_CITATION_PATTERN) -> list[str]:
    """Ids cited in ``text`` (group 1 of ``citation_pattern``), in order of first appearance, once each."""
    return list(dict.fromkeys(m.group(1) for m in compile_citation_pattern(citation_pattern).finditer(text)))
