"""Citation measures, each under its name: ALCE's citation recall and precision, on the verdicts
of the citation support and veracity criteria, beside the app's own two rates.

The app's rates are those criteria's estimates (``evaluation.reports.read`` puts them side by
side): the **citation support rate**, the share of citations (a sentence and one retrieved chunk
it cites) whose chunk supports at least part of the sentence, pooled over the citations; and the
**sentence support rate** (veracity), the share of sentences every piece of information of which
follows from the sources they cite, pooled over the sentences.

**ALCE's citation recall and citation precision** (Gao et al. 2023) score each answer from the
same verdicts, then average over answers (``inference.citations``): a sentence counts for recall
when all its citations together support it, a sentence that cites nothing or a chunk the
retriever did not return scores 0, and a citation is precise only when its sentence is supported
as a whole and the citation is needed. Per theme and overall, each a mean over answers with a
percentile bootstrap interval over questions (``inference.estimators.bootstrap``), from one source of
verdicts: the report's judge on every unit, or the final human labels, on the answers whose every
needed verdict is there (the others are counted and left out). See docs/statistics.md, "Citation
precision and citation recall".
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotation.corpus.citations import compile_citation_pattern
from annotation.models import AnswerSource, Criterion, Level, Sentence, Unit
from annotation.workflow.state import final_labels
from evaluation import page_cache
from evaluation.estimates.params import OVERALL
from evaluation.models import Judge, Judgment
from inference.citations import AT_MOST_CITATIONS, CitedSentence, MissingVerdict, answer_score
from inference.estimators.bootstrap import Mean, question_bootstrap_means

JUDGE = "judge"
HUMAN = "human"
SOURCES = (JUDGE, HUMAN)

# The names each measure goes by in the JSON and the files.
CITATION_SUPPORT = "citation_support"
SENTENCE_SUPPORT = "sentence_support"
ALCE_RECALL = "citation_recall"
ALCE_PRECISION = "citation_precision"


@dataclass(frozen=True)
class AlceRow:
    """One theme (or the overall row): ALCE's citation recall and precision, means over answers."""

    theme: str
    recall: Mean
    precision: Mean


@dataclass(frozen=True)
class AlceMeasures:
    """ALCE's two measures per theme then overall, from one ``source`` of verdicts (``judge``:
    ``judge_name``'s; ``human``: the final labels). ``answers`` scored; ``left_out``: answers
    with a sentence lacking a verdict the scores need; ``citations``: the citations counted
    (at most ``at_most`` per sentence)."""

    source: str
    judge_name: str
    at_most: int | None
    rows: list[AlceRow] = field(default_factory=list)
    answers: int = 0
    left_out: int = 0
    citations: int = 0
    alpha: float = 0.05

    @property
    def overall(self) -> AlceRow | None:
        return self.rows[-1] if self.rows else None

    def as_data(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "judge": self.judge_name if self.source == JUDGE else None,
            "at_most_citations": self.at_most,
            "answers": self.answers,
            "answers_left_out": self.left_out,
            "citations": self.citations,
            "rows": [
                {
                    "theme": row.theme,
                    ALCE_RECALL: row.recall.as_dict(),
                    ALCE_PRECISION: row.precision.as_dict(),
                }
                for row in self.rows
            ],
        }


@dataclass(frozen=True)
class _Read:
    """What ALCE's measures read of a campaign, once for both sources of verdicts."""

    # answer pk -> (theme, question external id, its sentences' (sentence pk, cited chunk keys))
    answers: dict[int, tuple[str, str, list[tuple[int, tuple[str | None, ...]]]]]
    sentence_unit: dict[int, int]  # veracity's unit pk -> sentence pk
    citation_unit: dict[int, tuple[int, str]]  # citation unit pk -> (sentence pk, chunk key)


def _read(*, support: Criterion) -> _Read:
    """The campaign's answers with their sentences' citations as written (the campaign's pattern
    on each sentence's text: in order, repeats kept; an id the retriever did not return is None),
    and the units the two criteria label. Four queries, and the campaign's unless read already."""
    campaign = support.campaign
    pattern = compile_citation_pattern(campaign.citation_pattern)
    chunk_of: dict[int, dict[str, str]] = defaultdict(dict)
    for answer_id, chunk_id, external_id in (
        AnswerSource.objects.filter(answer__campaign=campaign)
        .order_by("answer_id", "rank")
        .values_list("answer_id", "chunk_id", "chunk__external_id")
    ):
        # The first chunk of an id, as the citation units were made (annotation.ingest.write).
        chunk_of[answer_id].setdefault(str(external_id), str(chunk_id))
    answers: dict[int, tuple[str, str, list[tuple[int, tuple[str | None, ...]]]]] = {}
    for pk, theme, question in campaign.answers.values_list("pk", "question__theme", "question__external_id"):
        answers[pk] = (theme, question, [])
    for sentence_id, answer_id, text in (
        Sentence.objects.filter(answer__campaign=campaign)
        .order_by("answer_id", "position")
        .values_list("pk", "answer_id", "text")
    ):
        retrieved = chunk_of.get(answer_id, {})
        cited = tuple(retrieved.get(match.group(1)) for match in pattern.finditer(text))
        answers[answer_id][2].append((sentence_id, cited))
    sentence_unit: dict[int, int] = {}
    citation_unit: dict[int, tuple[int, str]] = {}
    for pk, level, sentence_id, chunk_id in Unit.objects.filter(
        campaign_id=campaign.pk, level__in=[Level.SENTENCE, Level.CITATION]
    ).values_list("pk", "level", "sentence_id", "chunk_id"):
        if level == Level.SENTENCE:
            sentence_unit[pk] = sentence_id
        else:
            citation_unit[pk] = (sentence_id, str(chunk_id))
    return _Read(answers=answers, sentence_unit=sentence_unit, citation_unit=citation_unit)


def _verdicts(*, criteria: list[Criterion], source: str, judge: Judge | None) -> list[dict[int, int]]:
    """For each of ``criteria``, unit pk -> 0/1: the judge's successful judgments (one query for
    all), or the final human labels."""
    if source == HUMAN:
        return [final_labels(criterion=criterion) for criterion in criteria]
    found: dict[int, dict[int, int]] = {criterion.pk: {} for criterion in criteria}
    for criterion_id, unit_id, value in Judgment.objects.filter(
        criterion__in=criteria, judge=judge, status=Judgment.Status.OK
    ).values_list("criterion_id", "unit_id", "value"):
        if value is not None:
            found[criterion_id][unit_id] = int(value)
    return [found[criterion.pk] for criterion in criteria]


def alce_measures(
    *,
    support: Criterion,
    veracity: Criterion,
    judge: Judge,
    alpha: float = 0.05,
    at_most: int | None = AT_MOST_CITATIONS,
    sources: tuple[str, ...] = (JUDGE,),
) -> list[AlceMeasures]:
    """ALCE's citation recall and precision per theme and overall, one :class:`AlceMeasures` per
    source of verdicts in ``sources`` (``judge``: ``judge``'s on citation support and veracity;
    ``human``: the final human labels of both). See the module's docstring. Kept in the page
    cache (``evaluation.page_cache``) under what they read: the campaign's answers, sentences
    and units (they come with an import), the judge's judgments of both criteria or their
    labels (one query each)."""
    campaign = support.campaign
    key: list[Any] = [
        *page_cache.campaign_key(campaign),
        support.pk,
        veracity.pk,
        judge.pk,
        judge.name,
        alpha,
        at_most,
        sources,
    ]
    for criterion in (support, veracity):
        if JUDGE in sources:
            key.append(page_cache.judgments_version(criterion=criterion, judge=judge))
        if HUMAN in sources:
            key.append(page_cache.labels_version(criterion=criterion))
    return page_cache.cached(
        "alce",
        key,
        lambda: _alce_measures(
            support=support, veracity=veracity, judge=judge, alpha=alpha, at_most=at_most, sources=sources
        ),
    )


def _alce_measures(
    *,
    support: Criterion,
    veracity: Criterion,
    judge: Judge,
    alpha: float,
    at_most: int | None,
    sources: tuple[str, ...],
) -> list[AlceMeasures]:
    read = _read(support=support)
    result = []
    for source in sources:
        joint, partial = _verdicts(criteria=[veracity, support], source=source, judge=judge)
        joint_of = {
            read.sentence_unit[unit]: value for unit, value in joint.items() if unit in read.sentence_unit
        }
        supports_of: dict[int, dict[str, int]] = defaultdict(dict)
        for unit, value in partial.items():
            if unit in read.citation_unit:
                sentence_id, key = read.citation_unit[unit]
                supports_of[sentence_id][key] = value
        rows: list[tuple[str, str, float, float]] = []
        left_out = citations = 0
        for theme, question, sentences in read.answers.values():
            try:
                score = answer_score(
                    [
                        CitedSentence(cited=cited, joint=joint_of.get(pk), supports=supports_of.get(pk, {}))
                        for pk, cited in sentences
                    ],
                    at_most=at_most,
                )
            except MissingVerdict:
                left_out += 1
                continue
            if score is not None:
                rows.append((theme, question, score.recall, score.precision))
                citations += score.citations
        result.append(
            AlceMeasures(
                source=source,
                judge_name=judge.name,
                at_most=at_most,
                rows=_rows(rows, alpha=alpha),
                answers=len(rows),
                left_out=left_out,
                citations=citations,
                alpha=alpha,
            )
        )
    return result


def _rows(scores: list[tuple[str, str, float, float]], *, alpha: float) -> list[AlceRow]:
    """Per theme (sorted) then overall: the means of the answers' recall and precision."""
    if not scores:
        return []
    rows = []
    for theme in [*sorted({s[0] for s in scores}), OVERALL]:
        chosen = [s for s in scores if theme == OVERALL or s[0] == theme]
        values = np.array([[s[2], s[3]] for s in chosen], dtype=float)
        recall, precision = question_bootstrap_means(
            values=values, questions=[s[1] for s in chosen], alpha=alpha
        )
        rows.append(AlceRow(theme=theme, recall=recall, precision=precision))
    return rows
