"""Stability across repetitions: the same question asked R times to a stochastic assistant.

The values are one number per answer, grouped by question (``Answer.question``) and ordered by
``Answer.repetition``:

- a criterion's labels, the judge's (every unit) or the final human labels (where present): 0 or
  1 for an answer-level criterion; for a sentence-level criterion, the answer's rate, the mean
  of its sentences' labels;
- an automatic metric (``evaluation.measures.automatic.answer_values``): 0 or 1 per answer, the share of
  functional citations among an answer's citing sentences.

Per question: the rate across its repetitions (their mean), its spread (standard deviation,
ddof 1) and whether the repetitions disagree (not all equal). Over the questions: the share of
questions whose repetitions disagree (Wilson interval), the intra-question correlation ICC(1)
from the one-way analysis of variance (Shrout and Fleiss 1979, with McGraw and Wong's 1996 F
interval and the k0 of unequal groups), the rate with a cluster-robust interval (questions as
clusters, ``estimators.classical_mean``), and the interval's width against the number of
repetitions used, by subsampling r of each question's repetitions (seeded draws) and as the
design effect 1 + (r - 1) ICC predicts it. ``docs/statistics.md`` gives the formulas.

Its length is one measure's: what is measured, the values per answer read from the database, the
summary per theme and its JSON.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from django.db.models import Avg, Count
from django.utils.translation import gettext_lazy as _

from annotation.criteria.categories import is_categorical
from annotation.errors import refusal
from annotation.models import Answer, Campaign, Criterion, Label, Level, Unit
from annotation.workflow import final_labels
from evaluation import page_cache
from evaluation.errors import EstimateError
from evaluation.estimates import judge_choice
from evaluation.estimates.inputs import ID_CHUNK
from evaluation.estimates.params import check_alpha
from evaluation.measures import automatic
from evaluation.models import Judge, Judgment
from inference import intervals
from inference.numbers import finite
from inference.reliability.icc import ICC, WidthPoint, clustered_estimate, icc_oneway, width_curve

JUDGE = "judge"


HUMAN = "human"


METRIC = "metric"


SOURCES = (JUDGE, HUMAN)


DEFAULT_DRAWS = 20


MAX_DRAWS = 200


DEFAULT_SEED = 0


# Why a result has nothing to compare (``Stability.empty``; "" when it has): no question of the
# campaign has two answers; no answer has a value (the judge or people have not labeled the
# criterion, or the metric applies to no answer); values on one answer per question at most.
NO_REPETITIONS = "no_repetitions"
NO_VALUES = "no_values"
SINGLE_VALUES = "single_values"


@dataclass(frozen=True)
class Measure:
    """What is measured: a criterion (``kind`` ``"criterion"``) or an automatic metric
    (``"metric"``), by name. ``key`` is how a form or a link names it: ``criterion:relevance``,
    ``metric:response``."""

    kind: str
    name: str
    # The criterion itself, when the measure was read from a list of them (saves a query).
    criterion: Criterion | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(frozen=True)
class QuestionStability:
    """One question's answers: their values in repetition order, their mean (``rate``), standard
    deviation (``spread``, ddof 1; NaN with one answer), least and greatest value, and whether
    they disagree (two answers or more, not all equal)."""

    question_id: int
    external_id: str
    theme: str
    difficulty: str
    repetitions: list[int]
    values: list[float]
    rate: float
    spread: float
    least: float
    greatest: float
    disagree: bool

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def binary(self) -> bool:
        return all(value in (0.0, 1.0) for value in self.values)


@dataclass(frozen=True)
class GroupStability:
    """The summary of a set of questions (a theme, or all of them)."""

    theme: str
    questions: int
    answers: int
    estimate: intervals.Interval
    compared: int  # questions with at least two answers
    disagreeing: int
    share_disagreeing: float
    share_interval: tuple[float, float]
    icc: ICC


@dataclass(frozen=True)
class Stability:
    campaign: str
    measure: Measure
    source: str
    level: str
    judge: str | None
    alpha: float
    draws: int
    seed: int
    max_repetitions: int
    questions: list[QuestionStability]
    overall: GroupStability
    themes: list[GroupStability]
    widths: list[WidthPoint]
    # Why there is nothing to compare (NO_REPETITIONS, NO_VALUES, SINGLE_VALUES), "" otherwise.
    empty: str = ""


def measures(*, criteria: Sequence[Criterion]) -> list[Measure]:
    """The campaign's binary criteria (in the given order), then the automatic metrics. A
    criterion with categories has no rate of its own to be stable or not: its labels are
    category values, not 0 or 1."""
    return [Measure("criterion", c.name, c) for c in criteria if not is_categorical(c)] + [
        Measure(METRIC, m) for m in automatic.METRICS
    ]


def default_measure(
    *, criteria: Sequence[Criterion], candidates: Mapping[int, Sequence[Judge]] | None = None
) -> Measure:
    """What the page and the command open on when no measure is named: a binary criterion with
    values to compare, answer-level first (an answer's own label), then in the given order: one
    a judge has labeled (``candidates``: ``judge_choice.candidates_by_criterion`` of the
    criteria, read here when None), else one with human labels; else the response metric,
    which every answer has. One query, two when no judge has labeled a criterion."""
    binary = [m for m in measures(criteria=criteria) if m.criterion is not None]
    ordered = sorted(binary, key=lambda m: m.criterion is None or m.criterion.level != Level.ANSWER)
    chosen = [m.criterion for m in ordered if m.criterion is not None]
    if not chosen:
        return Measure(METRIC, automatic.RESPONSE)
    if candidates is None:
        candidates = judge_choice.candidates_by_criterion(criteria=chosen)
    judged = next((m for m in ordered if m.criterion is not None and candidates.get(m.criterion.pk)), None)
    if judged is not None:
        return judged
    labelled = set(
        Label.objects.filter(criterion__in=chosen, value__isnull=False)
        .order_by()
        .values_list("criterion_id", flat=True)
        .distinct()
    )
    return next(
        (m for m in ordered if m.criterion is not None and m.criterion.pk in labelled),
        Measure(METRIC, automatic.RESPONSE),
    )


def repeated_questions(*, campaign: Campaign) -> int:
    """How many questions of ``campaign`` have two answers or more. One query."""
    return (
        Answer.objects.filter(campaign=campaign)
        .order_by()
        .values("question_id")
        .annotate(answers=Count("id"))
        .filter(answers__gte=2)
        .count()
    )


def parse_measure(*, key: str, criteria: Sequence[Criterion]) -> Measure:
    """The measure ``key`` names (``criterion:NAME`` or ``metric:NAME``, a bare name being a
    criterion's, else a metric's); EstimateError on field ``measure`` otherwise."""
    known = measures(criteria=criteria)
    for measure in known:
        if key in (measure.key, measure.name):
            return measure
    raise EstimateError(
        refusal(
            _("%(measure)s is not a criterion or metric of this campaign (known: %(known)s)"),
            measure=repr(key),
            known=", ".join(m.name for m in known),
        ),
        field="measure",
    )


def check_source(source: str) -> str:
    if source not in SOURCES:
        raise EstimateError(
            refusal(
                _("%(source)s is not one of %(sources)s"), source=repr(source), sources=", ".join(SOURCES)
            ),
            field="source",
        )
    return source


def check_draws(draws: int) -> int:
    if not (1 <= draws <= MAX_DRAWS):
        raise EstimateError(
            refusal(_("must be between 1 and %(most)s, got %(draws)s"), most=MAX_DRAWS, draws=draws),
            field="draws",
        )
    return draws


def judge_values(*, criterion: Criterion, judge: Judge) -> dict[int, float]:
    """Per answer id, the judge's label (answer level) or the mean of its labels on the answer's
    sentences (sentence level); ``ok`` judgments only. One query."""
    rows = (
        Judgment.objects.filter(
            judge=judge, criterion=criterion, status=Judgment.Status.OK, unit__level=criterion.level
        )
        .order_by()
        .values("unit__answer_id")
        .annotate(rate=Avg("value"))
    )
    return {row["unit__answer_id"]: float(row["rate"]) for row in rows}


def human_values(*, criterion: Criterion) -> dict[int, float]:
    """Per answer id, the final human label (answer level) or the mean of the final labels of
    its labeled sentences (sentence level); answers without one are left out."""
    finals = final_labels(criterion=criterion)
    ids = sorted(finals)
    per_answer: dict[int, list[int]] = defaultdict(list)
    for start in range(0, len(ids), ID_CHUNK):
        units = Unit.objects.filter(
            pk__in=ids[start : start + ID_CHUNK], campaign_id=criterion.campaign_id, level=criterion.level
        ).values_list("id", "answer_id")
        for unit_id, answer_id in units:
            per_answer[answer_id].append(finals[unit_id])
    return {answer_id: sum(values) / len(values) for answer_id, values in per_answer.items()}


def by_question(*, campaign: Campaign, values: dict[int, float]) -> list[QuestionStability]:
    """The values grouped by question, in repetition order, with each question's rate, spread
    and agreement; questions without a value are left out. Sorted by theme, then question id.
    One query."""
    answers = (
        Answer.objects.filter(campaign=campaign)
        .order_by("question__theme", "question__external_id", "question_id", "repetition", "id")
        .values_list(
            "id",
            "repetition",
            "question_id",
            "question__external_id",
            "question__theme",
            "question__difficulty",
        )
    )
    grouped: dict[int, tuple[tuple[str, str, str], list[tuple[int, float]]]] = {}
    for answer_id, repetition, question_id, external_id, theme, difficulty in answers:
        if answer_id not in values:
            continue
        entry = grouped.setdefault(question_id, ((external_id, theme, difficulty), []))
        entry[1].append((repetition, values[answer_id]))
    rows = []
    for question_id, ((external_id, theme, difficulty), pairs) in grouped.items():
        vals = np.array([value for _, value in pairs], dtype=float)
        rows.append(
            QuestionStability(
                question_id=question_id,
                external_id=external_id,
                theme=theme,
                difficulty=difficulty,
                repetitions=[repetition for repetition, _ in pairs],
                values=[float(v) for v in vals],
                rate=float(vals.mean()),
                spread=float(vals.std(ddof=1)) if vals.size > 1 else math.nan,
                least=float(vals.min()),
                greatest=float(vals.max()),
                disagree=bool(vals.size > 1 and vals.max() != vals.min()),
            )
        )
    return rows


def summarise(*, theme: str, rows: Sequence[QuestionStability], alpha: float) -> GroupStability:
    """The summary of ``rows``: the clustered estimate, the share of questions whose repetitions
    disagree among those with two answers or more (Wilson interval), and ICC(1)."""
    groups = [row.values for row in rows]
    compared = [row for row in rows if row.n > 1]
    disagreeing = sum(row.disagree for row in compared)
    if compared:
        share = disagreeing / len(compared)
        share_interval = intervals.wilson(
            p=share, n=len(compared), q=intervals.quantile(alpha=alpha, df=None)
        )
    else:
        share, share_interval = math.nan, (math.nan, math.nan)
    return GroupStability(
        theme=theme,
        questions=len(rows),
        answers=sum(row.n for row in rows),
        estimate=clustered_estimate(groups=groups, alpha=alpha),
        compared=len(compared),
        disagreeing=disagreeing,
        share_disagreeing=share,
        share_interval=share_interval,
        icc=icc_oneway(groups=groups, alpha=alpha),
    )


ALL_THEMES = "overall"


def compute_stability(
    *,
    campaign: Campaign,
    measure: Measure,
    source: str = JUDGE,
    judge: Judge | None = None,
    alpha: float = 0.05,
    draws: int = DEFAULT_DRAWS,
    seed: int = DEFAULT_SEED,
) -> Stability:
    """Stability across repetitions of ``measure`` in ``campaign``: per question, per theme,
    overall, and the width curve of the overall estimate.

    A criterion's values are the ``judge``'s labels (``source`` ``"judge"``, the judge needed)
    or the final human labels (``"human"``); a metric's are computed (``source`` is then
    ``"metric"``). EstimateError naming the field on a bad alpha, source, draws, or a missing
    judge or one of another campaign.
    """
    check_alpha(alpha)
    check_draws(draws)
    level = Level.ANSWER.value
    judge_name = None
    if measure.kind == METRIC:
        source = METRIC
        values = automatic.answer_values(campaign=campaign, metric=measure.name)
        if measure.name == automatic.FUNCTIONAL_CITATION:
            level = Level.SENTENCE.value
    else:
        check_source(source)
        criterion = measure.criterion or Criterion.objects.get(campaign=campaign, name=measure.name)
        level = criterion.level
        if source == JUDGE:
            if judge is None:
                raise EstimateError(refusal(_("choose a judge, or the human labels")), field="judge")
            if judge.campaign_id != campaign.pk:
                raise EstimateError(
                    refusal(_("judge %(judge)s belongs to another campaign"), judge=repr(judge.name)),
                    field="judge",
                )
            judge_name = judge.name
            values = judge_values(criterion=criterion, judge=judge)
        else:
            values = human_values(criterion=criterion)
    rows = by_question(campaign=campaign, values=values)
    most = max((row.n for row in rows), default=0)
    empty = ""
    if most < 2:
        # Nothing to compare: say why (one query more, only then).
        empty = (
            NO_REPETITIONS
            if repeated_questions(campaign=campaign) == 0
            else SINGLE_VALUES
            if rows
            else NO_VALUES
        )
    overall = summarise(theme=ALL_THEMES, rows=rows, alpha=alpha)
    by_theme: dict[str, list[QuestionStability]] = defaultdict(list)
    for row in rows:
        by_theme[row.theme].append(row)
    return Stability(
        campaign=campaign.name,
        measure=measure,
        source=source,
        level=level,
        judge=judge_name,
        alpha=alpha,
        draws=draws,
        seed=seed,
        max_repetitions=most,
        questions=rows,
        overall=overall,
        themes=[summarise(theme=theme, rows=by_theme[theme], alpha=alpha) for theme in sorted(by_theme)],
        widths=width_curve(
            groups=[row.values for row in rows], alpha=alpha, draws=draws, seed=seed, icc=overall.icc.value
        ),
        empty=empty,
    )


@dataclass(frozen=True)
class StabilityParams:
    """What :func:`compute_stability` is asked for (its keyword arguments)."""

    campaign: Campaign
    measure: Measure
    source: str = JUDGE
    judge: Judge | None = None
    alpha: float = 0.05
    draws: int = DEFAULT_DRAWS
    seed: int = DEFAULT_SEED


def stability_key(params: StabilityParams) -> list[Any] | None:
    """What :func:`compute_stability`'s result depends on, for the page cache
    (``evaluation.page_cache``): its parameters, the campaign's content version and what the
    values are read from (the judge's judgments of the criterion, or its human labels; a metric's
    come from the answers). One query, none for a metric; None for a criterion named without its
    row."""
    campaign, measure, judge = params.campaign, params.measure, params.judge
    key: list[Any] = [
        *page_cache.campaign_key(campaign),
        campaign.name,  # the result names its campaign
        measure.key,
        params.source if measure.kind != METRIC else METRIC,
        judge.pk if judge is not None else None,
        params.alpha,
        params.draws,
        params.seed,
    ]
    if measure.kind == METRIC:
        return key
    criterion = measure.criterion
    if criterion is None:
        return None
    key += [criterion.pk, criterion.level]
    if params.source == JUDGE and judge is not None and judge.campaign_id == campaign.pk:
        key.append(page_cache.judgments_version(criterion=criterion, judge=judge))
    elif params.source == HUMAN:
        key.append(page_cache.labels_version(criterion=criterion))
    return key


def cached_stability(params: StabilityParams, *, key: list[Any] | None) -> Stability:
    """:func:`compute_stability` of ``params``, kept in the page cache under ``key``
    (:func:`stability_key` of ``params``; None: computed now)."""

    def compute() -> Stability:
        return compute_stability(**{item.name: getattr(params, item.name) for item in fields(params)})

    return page_cache.cached("stability", key, compute)


def _group_json(group: GroupStability) -> dict[str, Any]:
    icc = group.icc
    return {
        "theme": group.theme,
        "questions": group.questions,
        "answers": group.answers,
        "rate": finite(group.estimate.mean),
        "rate_ci": [finite(group.estimate.shown_lo), finite(group.estimate.shown_hi)],
        "rate_method": group.estimate.method,
        "rate_df": group.estimate.df,
        "questions_compared": group.compared,
        "questions_disagreeing": group.disagreeing,
        "share_disagreeing": finite(group.share_disagreeing),
        "share_disagreeing_ci": [finite(bound) for bound in group.share_interval],
        "icc": finite(icc.value),
        "icc_ci": [finite(icc.lo), finite(icc.hi)],
        "icc_k0": finite(icc.k0),
        "icc_ms_between": finite(icc.ms_between),
        "icc_ms_within": finite(icc.ms_within),
    }


def stability_as_json(*, stability: Stability) -> dict[str, Any]:
    """The whole result as JSON-ready data (NaN and infinities become None)."""
    return {
        "campaign": stability.campaign,
        "measure": stability.measure.name,
        "kind": stability.measure.kind,
        "source": stability.source,
        "judge": stability.judge,
        "level": stability.level,
        "alpha": stability.alpha,
        "draws": stability.draws,
        "seed": stability.seed,
        "max_repetitions": stability.max_repetitions,
        "nothing_to_compare": stability.empty or None,
        "overall": _group_json(stability.overall),
        "themes": [_group_json(group) for group in stability.themes],
        "width_by_repetitions": [
            {
                "repetitions": point.r,
                "mean_width": finite(point.mean_width),
                "predicted_width": finite(point.predicted_width),
                "draws": point.draws,
                "mean_answers": point.answers,
            }
            for point in stability.widths
        ],
        "questions": [
            {
                "question": row.external_id,
                "theme": row.theme,
                "difficulty": row.difficulty,
                "repetitions": row.repetitions,
                "values": row.values,
                "rate": row.rate,
                "spread": finite(row.spread),
                "min": row.least,
                "max": row.greatest,
                "disagree": row.disagree,
            }
            for row in stability.questions
        ],
    }
