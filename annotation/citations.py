"""Citation units: one per (sentence, retrieved chunk it cites).

A sentence citing ``[^a^]`` and ``[^b^]``, both among the chunks the retriever returned for its
answer, makes two citation units; the built-in criterion ``citation_support`` asks of each whether
that one chunk supports at least part of the sentence (citation precision, ALCE). A cited id the
retriever did not return is a broken citation (``Sentence.citations_ok`` is False): it has no text
to judge, so it makes no unit; the functional-citation rate counts it apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


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
