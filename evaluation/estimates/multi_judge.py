"""Several judges in one estimate: what the combination of ``inference.estimators.multi_ppi`` reads of the
database, per theme and overall, and its JSON.

Per theme, the arrays are those of a one-judge report with a column per judge: each labeled
unit's final human label, its design weight (1 / its inclusion probability, as the robust report
weighs it: ``evaluation.estimates.weights``), its answer (or question) as cluster, and every judge's
label on it; a labeled unit that one of the judges did not judge (successfully) is left out, with
a note. Each judge's **term** is its mean over the theme:

- over every unit it judged, when it judged the whole theme (or has no recorded share: then over
  those it judged, as a one-judge report takes it, with a note);
- over its **share** (``JudgeShare``: a random share of the answers drawn for it, each unit with
  its inclusion probability) when it did not judge the whole theme: its inverse-probability mean
  on the share's units it judged, with that draw's design variance.

The units outside the labels that every judge predicted (each in its share, for a judge on a
share) feed the coefficients' Var(f), weighted by 1 / their probability of being there.

Robust method only (design weights, clusters, floors, t quantile, kept in [0, 1]); binary
criteria only. Computed when read, no snapshot: it reads every judgment of the judges combined.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from annotation.models import Criterion, Unit
from annotation.sampling.current import current_sample
from annotation.workflow.state import unit_states
from evaluation.estimates import weights as sample_weights
from evaluation.estimates.inputs import Labeled, labeled_units
from evaluation.estimates.params import ANSWER, OVERALL, QUESTION, check_alpha, check_clusters
from evaluation.models import Judge, JudgeShareItem, Judgment
from inference import intervals, notes
from inference.estimators import means
from inference.estimators.multi_ppi import JudgeTerm, multi_ppi
from inference.estimators.ppi import PPI_MULTI
from inference.numbers import finite

ID_CHUNK = 900


@dataclass(frozen=True)
class JudgePart:
    """One judge in one theme: its coefficient, the share of the combination's variance it takes
    off beyond the others (``reduction``), the theme's drawn share of its answers (None: every
    unit) and the units its term is over."""

    judge: str
    coefficient: float
    reduction: float
    share: float | None
    units: int


@dataclass(frozen=True)
class CombinedGroup:
    """The combination in one theme (or overall): ``estimate`` its interval, ``human`` the human
    labels' alone (the same weights and clusters), the units, labels and labels every judge
    judged, each judge's part, and the notes."""

    theme: str
    size: int
    n_human: int
    n_paired: int
    estimate: intervals.Interval
    human: intervals.Interval
    judges: list[JudgePart] = field(default_factory=list)
    weighted: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def effective_n(self) -> float:
        """How many human labels alone would give as narrow an interval (against the human-only
        interval shown beside it, as the one-judge report measures it)."""
        if math.isnan(self.estimate.mean):
            return math.nan
        return intervals.effective_n(
            theta=self.estimate.mean,
            halfwidth=self.estimate.halfwidth,
            alpha=self.estimate.alpha,
            reference=self.human,
        )


@dataclass(frozen=True)
class CombinedReport:
    """Several judges combined on one criterion: per theme and overall (stratified by the themes'
    sizes)."""

    criterion: str
    judges: list[str]
    alpha: float
    clusters: str
    themes: list[CombinedGroup]
    overall: CombinedGroup


def _chunks(ids: list[int]) -> list[list[int]]:
    return [ids[start : start + ID_CHUNK] for start in range(0, len(ids), ID_CHUNK)]


def _judgments(*, criterion: Criterion, judges: Sequence[Judge]) -> dict[int, dict[int, float]]:
    """Each judge's 0/1 labels by unit (ok judgments of the criterion's level)."""
    found: dict[int, dict[int, float]] = {judge.pk: {} for judge in judges}
    rows = Judgment.objects.filter(
        judge__in=list(judges),
        criterion=criterion,
        status=Judgment.Status.OK,
        value__isnull=False,
        unit__level=criterion.level,
    ).values_list("judge_id", "unit_id", "value")
    for judge_id, unit_id, value in rows.iterator(chunk_size=10_000):
        found[judge_id][unit_id] = 1.0 if value == 1 else 0.0
    return found


def _shares(*, criterion: Criterion, judges: Sequence[Judge]) -> dict[int, tuple[int, dict[int, float]]]:
    """Each judge's recorded share of the criterion: (its id, unit -> inclusion probability)."""
    found: dict[int, tuple[int, dict[int, float]]] = {}
    rows = JudgeShareItem.objects.filter(
        share__criterion=criterion, share__judge__in=list(judges)
    ).values_list("share__judge_id", "share_id", "unit_id", "probability")
    for judge_id, share_id, unit_id, probability in rows.iterator(chunk_size=10_000):
        found.setdefault(judge_id, (share_id, {}))[1][unit_id] = float(probability)
    return found


def compute_combined(
    *, criterion: Criterion, judges: Sequence[Judge], alpha: float = 0.05, clusters: str = ANSWER
) -> CombinedReport:
    """The estimate of ``criterion`` with ``judges`` combined (see the module), per theme and
    overall, under the robust method; ``clusters`` answers (about this campaign's answers) or
    questions (about the assistant asked these questions again). The caller checks the judges
    (``reports.read.report_request``)."""
    alpha = check_alpha(alpha)
    clusters = check_clusters(clusters)
    by_question = clusters == QUESTION
    units = list(
        Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level)
        .values_list("id", "theme", "answer_id", "answer__question_id")
        .order_by("id")
    )
    sample = current_sample(criterion=criterion)
    states = unit_states(criterion=criterion)
    labeled = labeled_units(criterion=criterion, judge=judges[0], sample=sample, states=states)
    pooled = sample_weights.pool(
        criterion=criterion,
        current=sample,
        labeled={unit_id: (theme, row.pi) for unit_id, (theme, _, row) in labeled.items()},
    )
    for unit_id, pi in pooled.probability.items():
        labeled[unit_id][2].pi = pi
    judged = _judgments(criterion=criterion, judges=judges)
    shares = _shares(criterion=criterion, judges=judges)

    by_theme: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for unit_id, theme, answer_id, question_id in units:
        by_theme[theme].append((unit_id, answer_id, question_id))
    rows_by_theme: dict[str, list[Labeled]] = defaultdict(list)
    for theme, _, row in labeled.values():
        rows_by_theme[theme].append(row)
    themes = [
        _theme(
            theme=theme,
            units=by_theme[theme],
            rows=sorted(rows_by_theme.get(theme, []), key=lambda row: row.unit_id),
            judges=judges,
            judged=judged,
            shares=shares,
            alpha=alpha,
            by_question=by_question,
            pooled=pooled.pooled,
            sampled=sample is not None,
        )
        for theme in sorted(by_theme)
    ]
    return CombinedReport(
        criterion=criterion.name,
        judges=[judge.name for judge in judges],
        alpha=alpha,
        clusters=clusters,
        themes=themes,
        overall=_overall(themes=themes, alpha=alpha),
    )


def _theme(
    *,
    theme: str,
    units: list[tuple[int, int, int]],
    rows: list[Labeled],
    judges: Sequence[Judge],
    judged: dict[int, dict[int, float]],
    shares: dict[int, tuple[int, dict[int, float]]],
    alpha: float,
    by_question: bool,
    pooled: set[str],
    sampled: bool,
) -> CombinedGroup:
    size = len(units)
    ids = {unit_id for unit_id, _, _ in units}
    answer_of = {unit_id: answer_id for unit_id, answer_id, _ in units}
    question_of = {unit_id: question_id for unit_id, _, question_id in units}
    group_notes: list[str] = []
    present: list[Judge] = []
    terms: list[JudgeTerm] = []
    inclusion: list[dict[int, float] | None] = []
    share_of: list[float | None] = []
    term_units: list[int] = []
    for judge in judges:
        labels = judged[judge.pk]
        mine = [unit_id for unit_id, _, _ in units if unit_id in labels]
        if not mine:
            group_notes.append(notes.JUDGE_ABSENT % {"judge": judge.name})
            continue
        share = shares.get(judge.pk)
        drawn = {unit_id: q for unit_id, q in share[1].items() if unit_id in ids} if share else {}
        if len(mine) < size and drawn:
            kept = [unit_id for unit_id in sorted(drawn) if unit_id in labels]
            if not kept:
                group_notes.append(notes.JUDGE_ABSENT % {"judge": judge.name})
                continue
            q_values = np.array([drawn[unit_id] for unit_id in kept])
            terms.append(
                JudgeTerm(
                    values=[labels[unit_id] for unit_id in kept],
                    weights=1 / q_values,
                    clusters=[answer_of[unit_id] for unit_id in kept],
                    draw=f"share-{share[0]}" if share else "",
                    questions=[question_of[unit_id] for unit_id in kept],
                )
            )
            inclusion.append({unit_id: drawn[unit_id] for unit_id in kept})
            term_units.append(len(kept))
            typical = float(np.median(q_values))
            share_of.append(typical)
            group_notes.append(notes.SHARE_TERM % {"judge": judge.name, "share": f"{typical:.0%}"})
        else:
            if len(mine) < size:
                group_notes.append(
                    notes.NO_RECORDED_SHARE % {"judge": judge.name, "judged": len(mine), "size": size}
                )
            terms.append(
                JudgeTerm(
                    values=[labels[unit_id] for unit_id in mine],
                    questions=[question_of[unit_id] for unit_id in mine],
                )
            )
            inclusion.append(None)
            share_of.append(None)
            term_units.append(len(mine))
        present.append(judge)

    paired = [row for row in rows if all(row.unit_id in judged[judge.pk] for judge in present)]
    if len(paired) < len(rows):
        group_notes.append(notes.NOT_EVERY_JUDGE % {"count": len(rows) - len(paired)})
    weighted = bool(rows) and all(row.pi is not None for row in rows)
    if rows and not weighted:
        group_notes.append(notes.NOT_ALL_SAMPLED if sampled else notes.NO_SAMPLE)
    if weighted and theme in pooled:
        group_notes.append(notes.POOLED_SAMPLES)
    if by_question:
        group_notes.append(notes.BY_QUESTION)

    def weights_of(selected: list[Labeled]) -> np.ndarray | None:
        return np.array([1.0 / cast(float, row.pi) for row in selected]) if weighted else None

    def clusters_of(selected: list[Labeled]) -> np.ndarray:
        return np.array([row.question_id if by_question else row.answer_id for row in selected])

    labeled_ids = {row.unit_id for row in rows}
    pool_ids = [
        unit_id
        for unit_id, _, _ in units
        if unit_id not in labeled_ids
        and all(unit_id in judged[judge.pk] for judge in present)
        and all(chances is None or unit_id in chances for chances in inclusion)
    ]
    pool = np.array([[judged[judge.pk][unit_id] for judge in present] for unit_id in pool_ids]).reshape(
        len(pool_ids), len(present)
    )
    pool_weights = np.array(
        [
            1 / float(np.prod([chances[unit_id] for chances in inclusion if chances is not None]))
            for unit_id in pool_ids
        ]
    )
    y = np.array([float(row.y == 1) for row in paired])
    preds = np.array([[judged[judge.pk][row.unit_id] for judge in present] for row in paired]).reshape(
        len(paired), len(present)
    )
    combination = multi_ppi(
        y=y,
        preds=preds,
        terms=terms,
        alpha=alpha,
        population=max(size, len(rows)),
        w=weights_of(paired),
        clusters=clusters_of(paired),
        pool=pool,
        pool_weights=pool_weights if any(chances is not None for chances in inclusion) else None,
        finite=not by_question,
    )
    human = means.classical_mean(
        y=np.array([float(row.y == 1) for row in rows]),
        alpha=alpha,
        w=weights_of(rows),
        clusters=clusters_of(rows),
        population=None if by_question else max(size, len(rows)),
    )
    if combination.interval.note:
        group_notes.append(notes.OF_ESTIMATOR["PPI++"] % {"note": combination.interval.note})
    parts = [
        JudgePart(
            judge=judge.name,
            coefficient=combination.coefficients[k],
            reduction=combination.reduction(k),
            share=share_of[k],
            units=term_units[k],
        )
        for k, judge in enumerate(present)
    ]
    return CombinedGroup(
        theme=theme,
        size=size,
        n_human=len(rows),
        n_paired=len(paired),
        estimate=combination.interval,
        human=human,
        judges=parts,
        weighted=weighted,
        notes=group_notes,
    )


def _overall(*, themes: list[CombinedGroup], alpha: float) -> CombinedGroup:
    def combine(pick: Any, method: str) -> intervals.Interval:
        parts = [(pick(group), group.size) for group in themes if group.size]
        return intervals.stratified_combine(parts=parts, alpha=alpha, method=method, bounded=True)

    estimate = combine(lambda group: group.estimate, f"stratified {PPI_MULTI}")
    human = combine(lambda group: group.human, f"stratified {means.CLASSICAL_ROBUST}")
    overall_notes = sorted({note for group in themes for note in group.notes})
    if estimate.note:
        overall_notes.append(notes.OVERALL % {"note": notes.OF_ESTIMATOR["PPI++"] % {"note": estimate.note}})
    return CombinedGroup(
        theme=OVERALL,
        size=sum(group.size for group in themes),
        n_human=sum(group.n_human for group in themes),
        n_paired=sum(group.n_paired for group in themes),
        estimate=estimate,
        human=human,
        weighted=any(group.weighted for group in themes),
        notes=overall_notes,
    )


def _interval_data(interval: intervals.Interval) -> dict[str, Any]:
    return {
        "mean": finite(interval.shown_mean),
        "ci": [finite(interval.shown_lo), finite(interval.shown_hi)],
        "se": finite(interval.se),
        "df": interval.df,
        "method": interval.method,
        "n": interval.n,
    }


def group_as_data(group: CombinedGroup) -> dict[str, Any]:
    """One theme (or the overall row) as JSON (NaN and infinities null; intervals as shown)."""
    return {
        "theme": group.theme,
        "size": group.size,
        "n_human": group.n_human,
        "n_paired": group.n_paired,
        "estimate": _interval_data(group.estimate),
        "human": _interval_data(group.human),
        "effective_n": finite(group.effective_n),
        "weighted": group.weighted,
        "judges": [
            {
                "judge": part.judge,
                "coefficient": finite(part.coefficient),
                "variance_reduction": finite(part.reduction),
                "share": part.share,
                "units": part.units,
            }
            for part in group.judges
        ],
        "notes": group.notes,
    }


def combined_as_data(report: CombinedReport) -> dict[str, Any]:
    """The combination as JSON: under the report's ``combined`` key (the command, the API, the
    page's JSON download)."""
    return {
        "judges": report.judges,
        "method": PPI_MULTI,
        "alpha": report.alpha,
        "clusters": report.clusters,
        "themes": [group_as_data(group) for group in report.themes],
        "overall": group_as_data(report.overall),
    }
