"""ALCE's citation recall and citation precision of one answer, from verdicts. Django-free.

ALCE (Gao et al. 2023, *Enabling Large Language Models to Generate Text with Citations*, EMNLP;
``compute_autoais`` in their ``eval.py``) scores each answer, then averages over answers:

- a sentence's **recall** is 1 when the passages it cites, together, entail it (one NLI call on
  their concatenation), 0 otherwise; a sentence that cites nothing, or cites a passage that was
  not given (an id out of range), scores 0. The answer's citation recall is the mean over its
  sentences.
- a citation is **precise** when its sentence is entailed by all its citations together and the
  citation is needed: it alone entails the sentence, or the sentence's other citations without
  it do not. A sentence with one citation gives that citation its recall. The answer's citation
  precision is its precise citations over its citations (0 when it has none); the citations of
  a sentence that cites nothing, or a passage not given, are not counted.
- citations are taken as written, in order, repeats included, at most ``at_most`` per sentence
  (their evaluation script's ``--at_most_citations``, 3 by default), after the check for ids out
  of range; the support of a sentence by its first ``at_most`` citations is then asked of the
  model; answers without a sentence are left out of the means.

Here the NLI model's verdicts come from the app's criteria: ``joint`` is the sentence's support by
all its citations together (veracity: every piece of information follows from the sources it
cites), and ``supports[c]`` whether citation c alone supports at least part of the sentence
(citation support). ALCE asks its model of single citations and of a sentence's citations less
one; the app's verdicts answer those questions by one rule (:func:`entails`): a set of the
sentence's citations entails it when the sentence is supported by all of them together and the
set holds every citation that supports part of the sentence. A citation that supports nothing
is never needed; one that supports part is needed unless it is repeated (the redundancy of two
different citations supporting the same part is not in the verdicts, so such a citation counts
as needed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# ALCE's evaluation script's --at_most_citations default.
AT_MOST_CITATIONS = 3


@dataclass(frozen=True)
class CitedSentence:
    """One sentence of an answer and what is known of its citations.

    ``cited``: the chunks it cites, as written (in order, repeats included), each a key of a chunk
    the retriever returned, or None for a cited id it did not return. ``joint``: 1 when all its
    citations together support it, 0 when not, None when not known. ``supports``: chunk key ->
    1 when that chunk alone supports at least part of the sentence, 0 when it supports none."""

    cited: tuple[str | None, ...]
    joint: int | None = None
    supports: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class AnswerScore:
    """One answer's ALCE citation recall and precision, and what they count: ``sentences``,
    ``supported`` sentences (the recall's numerator), ``citations`` counted and ``precise`` ones."""

    recall: float
    precision: float
    sentences: int
    supported: int
    citations: int
    precise: int


class MissingVerdict(ValueError):
    """An answer lacks a verdict its scores need (``what``: "joint" or "supports")."""

    def __init__(self, what: str) -> None:
        super().__init__(f"a {what} verdict is missing")
        self.what = what


def joint(sentence: CitedSentence) -> int:
    """Whether all the sentence's citations together support it (its joint verdict)."""
    if sentence.joint is None:
        raise MissingVerdict("joint")
    return int(sentence.joint)


def entails(sentence: CitedSentence, subset: Sequence[str]) -> int:
    """Whether ``subset`` of the sentence's citations entails it: all its citations together
    support it (its joint verdict), and ``subset`` holds every citation of the sentence that
    supports part of it (all of them, when ``subset`` holds every cited chunk)."""
    if not joint(sentence):
        return 0
    keys = {str(key) for key in sentence.cited}
    if keys <= set(subset):
        return 1
    needed = {key for key in keys if _support(sentence, key)}
    return int(needed <= set(subset))


def _support(sentence: CitedSentence, key: str) -> int:
    value = sentence.supports.get(key)
    if value is None:
        raise MissingVerdict("supports")
    return int(value)


def answer_score(
    sentences: Sequence[CitedSentence], *, at_most: int | None = AT_MOST_CITATIONS
) -> AnswerScore | None:
    """ALCE's citation recall and precision of one answer (see the module's docstring), None for
    an answer without a sentence. MissingVerdict when a verdict the scores need is unknown: the
    joint verdict of a sentence whose citations were all retrieved, and, when its citations
    together support it, the verdict of each citation of such a sentence that cites more than
    one chunk (or more than ``at_most`` citations)."""
    if not sentences:
        return None
    supported = precise = citations = 0
    for sentence in sentences:
        refs = list(sentence.cited)
        if not refs or any(ref is None for ref in refs):
            continue  # no citation, or one out of range: recall 0, and no citation counted
        cited = [str(ref) for ref in refs]
        if at_most is not None:
            cited = cited[:at_most]
        citations += len(cited)
        together = entails(sentence, cited)
        supported += together
        if together and len(cited) > 1:
            for key in cited:
                if entails(sentence, [key]):
                    precise += 1
                    continue
                rest = list(cited)
                rest.remove(key)
                if not entails(sentence, rest):
                    precise += 1
        else:
            precise += together
    return AnswerScore(
        recall=supported / len(sentences),
        precision=precise / citations if citations else 0.0,
        sentences=len(sentences),
        supported=supported,
        citations=citations,
        precise=precise,
    )
