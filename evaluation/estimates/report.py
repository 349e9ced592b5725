"""Estimates per criterion and judge: human-only, judge-only and PPI++, per theme and overall.

For each group of units (a theme, optionally a theme x difficulty cell) the arrays are:

- ``Y``: final human labels of the group's labeled units;
- ``Yhat``: the judge's labels (``ok`` judgments) on those same units;
- ``Yhat_unlabeled``: the judge's labels on the group's units without a final human label.

The arrays estimated are 0/1 (a binary label, or the indicator of a category or a group of
categories: ``positive`` values read as 1), so the unlabeled judge array matters to every
estimator only through its length and its number of ones: the mean and the variance of any 0/1
array are functions of those two counts. The judge's labels are therefore counted per theme,
difficulty and value in SQL,
the ~1,000 labeled units' judge labels are fetched one by one and subtracted, and the unlabeled
array is rebuilt with ``np.repeat`` (ones, then zeros). ``ppi_py`` then returns the same numbers
as on the real array, without a million rows ever reaching Python.

Two methods, each interval labelled with its own: ``study`` is exactly ``ppi_py`` with a simple
random sample assumption (as in the due-diligence study); ``robust`` adds design weights
(1 / inclusion probability, when every labeled unit of the group belongs to the criterion's
current sample, see ``annotation.sampling.current``), a cluster-robust variance with answers as
clusters, a t quantile and a cross-fitted lambda. Units outside the sample have no inclusion
probability, so the unlabeled judge labels get equal weights (``w_unlabeled=None``). The overall
figures combine the theme estimates with weights N_k / N (stratified estimator).

Where a confidence-driven sample fed a theme's labels, the robust PPI++ is the
inverse-probability PPI on the judge's confidence (``inference.estimators.weighted_ppi``, lambda 1); where
a theme's labels come from several samples, each unit is weighted by its probability of having
been drawn by any of them (``evaluation.estimates.weights``).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from django.utils.translation import gettext_lazy as _

from annotation.criteria.categories import is_categorical
from annotation.errors import refusal
from annotation.models import Criterion
from evaluation.errors import EstimateError
from evaluation.estimates import weights as sample_weights
from evaluation.estimates.inputs import EstimateInputs, Labeled, load_inputs, ones_zeros
from evaluation.estimates.params import ANSWER, OVERALL
from evaluation.models import Judge
from inference import intervals, notes
from inference.estimators import means
from inference.estimators.ppi import joint_lambda, robust_ppi, study_ppi
from inference.estimators.weighted_ppi import weighted_ppi
from inference.reliability import agreement as agreement_module
from inference.reliability.agreement import Agreement
from inference.reliability.calibration import MIN_LABELS, Crossfit, crossfit

# The label value a binary criterion's estimates count: the rate of 1.
BINARY_POSITIVE = frozenset({1})


@dataclass(frozen=True)
class GroupEstimate:
    """The numbers of one group: a theme, a theme x difficulty cell, or the whole campaign."""

    theme: str
    difficulty: str | None
    method: str
    size: int  # N_k: units of the criterion's level in the group
    n_human: int  # units with a final human label
    n_paired: int  # ... of which the judge labeled (the PPI++ labeled set)
    n_judge: int  # units with an ok judge label, labeled or not
    human: intervals.Interval
    judge: intervals.Interval
    ppi: intervals.Interval
    agreement: Agreement | None
    effective_n: float
    missing_judgments: list[int]  # units with a human label but no ok judgment
    weighted: bool  # design weights were applied (robust method, units from the sample)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ConfidenceReading:
    """How the judge's confidence enters a group that a confidence-driven sample fed: its mean
    probability of a 1 over the group's units, the prediction each labeled unit's residual is
    taken against (recalibrated and cross-fitted where a map was fitted: the unit's fold's map),
    and the note that says which."""

    mean: float
    predictions: dict[int, float]
    note: str = ""


@dataclass(frozen=True)
class Report:
    """Every group estimate of one criterion and judge."""

    campaign: str
    criterion: str
    level: str
    judge: str
    alpha: float
    method: str
    sample_id: int | None
    themes: list[GroupEstimate]
    overall: GroupEstimate
    by_difficulty: list[GroupEstimate] | None = None
    # Which texts the numbers rest on (``text_versions``).
    versions: dict[str, Any] = field(default_factory=dict)
    # How the judge's confidence was recalibrated for the themes a confidence-driven sample fed
    # (``calibration_summary``); None when no theme reads the confidence.
    calibration: dict[str, Any] | None = None
    # The robust method's clusters (``params.CLUSTERS``): what its intervals are about.
    clusters: str = ANSWER


def _group(
    *,
    theme: str,
    difficulty: str | None,
    size: int,
    judged: dict[int, int],
    labeled: list[Labeled],
    alpha: float,
    method: str,
    sample_id: int | None,
    positive: frozenset[int] = BINARY_POSITIVE,
    categories: tuple[int, ...] | None = None,
    reading: ConfidenceReading | None = None,
    pooled: bool = False,
    by_question: dict[int, dict[int, int]] | None = None,
) -> GroupEstimate:
    """``judged``: the group's ok judge labels counted by value. ``positive``: the label values
    read as 1 (the indicator estimated: 1 for a binary criterion, a category or a group of
    categories). ``categories``: every category value of a categorical criterion, whose PPI++
    estimates then share one lambda (``_joint_lambda``) so that they sum to 1.
    ``reading`` (how the judge's confidence enters the group, binary criteria) turns the robust
    PPI++ into the inverse-probability PPI on the judge's confidence, for groups a
    confidence-driven sample fed; ``pooled`` says the weights combine several samples.
    ``by_question`` (the judge's labels counted by value per question; robust method): questions
    as clusters, the interval about the assistant asked these questions again (no
    finite-population correction, the judge's term a sample too)."""
    n_judge = sum(judged.values())
    judge_ones = sum(count for value, count in judged.items() if value in positive)
    group_notes: list[str] = []
    labeled = sorted(labeled, key=lambda row: row.unit_id)
    paired = [row for row in labeled if row.yhat is not None]
    missing = [row.unit_id for row in labeled if row.yhat is None]
    if missing:
        group_notes.append(notes.MISSING_JUDGMENTS % {"count": len(missing)})
    n_human, n_paired = len(labeled), len(paired)
    n_unlabeled = n_judge - n_paired
    unlabeled_counts = Counter(judged)
    unlabeled_counts.subtract(row.yhat for row in paired if row.yhat is not None)
    unlabeled_ones = sum(count for value, count in unlabeled_counts.items() if value in positive)

    def indicator(value: int | None) -> float:
        return 1.0 if value in positive else 0.0

    weighted = method == "robust" and bool(labeled) and all(row.pi is not None for row in labeled)
    if method == "robust" and labeled and not weighted:
        group_notes.append(notes.NOT_ALL_SAMPLED if sample_id is not None else notes.NO_SAMPLE)
    if weighted and pooled:
        group_notes.append(notes.POOLED_SAMPLES)

    def weights(rows: list[Labeled]) -> np.ndarray | None:
        return np.array([1.0 / cast(float, row.pi) for row in rows]) if weighted else None

    questions = by_question is not None and method == "robust"

    def clusters(rows: list[Labeled]) -> np.ndarray:
        return np.array([row.question_id if questions else row.answer_id for row in rows])

    if questions:
        group_notes.append(notes.BY_QUESTION)

    # The estimators return NaN for an empty array and an infinite interval for one label (with a note).
    y_all = np.array([indicator(row.y) for row in labeled], dtype=float)
    if method == "study":
        human = means.classical_mean(y=y_all, alpha=alpha)
    else:
        human = means.classical_mean(
            y=y_all,
            alpha=alpha,
            w=weights(labeled),
            clusters=clusters(labeled),
            population=None if questions else max(size, n_human),
        )
    judge = means.judge_mean(
        yhat_all=ones_zeros(ones=judge_ones, count=n_judge), alpha=alpha, bounded=method == "robust"
    )
    y = np.array([indicator(row.y) for row in paired], dtype=float)
    yhat = np.array([indicator(row.yhat) for row in paired], dtype=float)
    yhat_unlabeled = ones_zeros(ones=unlabeled_ones, count=n_unlabeled)
    lam = (
        joint_lambda(
            y=[row.y for row in paired],
            yhat=[int(row.yhat) for row in paired if row.yhat is not None],
            unlabeled=unlabeled_counts,
            categories=categories,
            method=method,
        )
        if categories is not None
        else None
    )
    if method == "study":
        ppi = study_ppi(y=y, yhat=yhat, yhat_unlabeled=yhat_unlabeled, alpha=alpha, lam=lam)
    elif weighted and reading is not None and categories is None:
        # Every labeled unit, judged or not (c = 1/2 where unjudged): the design drew them all.
        ppi = weighted_ppi(
            y=y_all,
            confidence=[reading.predictions.get(row.unit_id, row.c) for row in labeled],
            pi=[cast(float, row.pi) for row in labeled],
            confidence_all=np.full(max(size, n_human), reading.mean),
            judge_mean=reading.mean,
            alpha=alpha,
        )
        group_notes.append(notes.CONFIDENCE_PPI)
        if reading.note:
            group_notes.append(reading.note)
        if questions:
            # A design-based estimate: its randomness is the draw, of this campaign's units.
            group_notes.append(notes.DESIGN_BASED)
    else:
        unlabeled_clusters = None
        if questions and by_question is not None:
            yhat_unlabeled, unlabeled_clusters = _unlabeled_by_question(
                by_question=by_question, paired=paired, positive=positive
            )
        ppi = robust_ppi(
            y=y,
            yhat=yhat,
            yhat_unlabeled=yhat_unlabeled,
            alpha=alpha,
            w=weights(paired),
            clusters=clusters(paired),
            unlabeled_clusters=unlabeled_clusters,
            lam=lam,
            lam_method="crossfit" if lam is None else "pooled",
            finite=not questions,
        )
    group_notes.extend(
        notes.OF_ESTIMATOR[name] % {"note": interval.note}
        for name, interval in (("human", human), ("judge", judge), ("PPI++", ppi))
        if interval.note
    )
    group_notes.extend(_clipped_notes(human=human, judge=judge, ppi=ppi))
    agreement = agreement_module.agreement(y=y, yhat=yhat) if n_paired else None
    return GroupEstimate(
        theme=theme,
        difficulty=difficulty,
        method=method,
        size=size,
        n_human=n_human,
        n_paired=n_paired,
        n_judge=n_judge,
        human=human,
        judge=judge,
        ppi=ppi,
        agreement=agreement,
        effective_n=_effective_n(interval=ppi, human=human, alpha=alpha, method=method),
        missing_judgments=missing,
        weighted=weighted,
        notes=group_notes,
    )


def _unlabeled_by_question(
    *, by_question: dict[int, dict[int, int]], paired: list[Labeled], positive: frozenset[int]
) -> tuple[np.ndarray, np.ndarray]:
    """The judge's 0/1 labels on the group's unlabeled units and their questions, rebuilt from
    its labels counted by value per question minus those of the labeled units (as the report's
    unlabeled array is rebuilt from counts: ones, then zeros, question by question)."""
    left: dict[int, Counter[int]] = {question: Counter(values) for question, values in by_question.items()}
    for row in paired:
        if row.yhat is not None and row.question_id in left:
            left[row.question_id][row.yhat] -= 1
    labels: list[np.ndarray] = []
    questions: list[np.ndarray] = []
    for question, counts in sorted(left.items()):
        ones = sum(count for value, count in counts.items() if value in positive)
        total = sum(counts.values())
        labels.append(ones_zeros(ones=max(ones, 0), count=max(total, 0)))
        questions.append(np.full(max(total, 0), question))
    if not labels:
        return np.zeros(0), np.zeros(0, dtype=int)
    return np.concatenate(labels), np.concatenate(questions)


def _clipped_notes(
    *, human: intervals.Interval, judge: intervals.Interval, ppi: intervals.Interval
) -> list[str]:
    """One note per interval whose raw bounds (the study method's, as ppi_py gives them) leave
    [0, 1] and are shown clipped."""
    return [
        notes.OF_ESTIMATOR[name] % {"note": notes.CLIPPED}
        for name, interval in (("human", human), ("judge", judge), ("PPI++", ppi))
        if interval.clipped
    ]


def _effective_n(
    *, interval: intervals.Interval, human: intervals.Interval, alpha: float, method: str
) -> float:
    """The study's n_eff formula for the study method; the robust method measures PPI++ against
    the human-only interval it shows (``intervals.effective_n`` with a reference)."""
    if math.isnan(interval.mean):
        return float("nan")
    reference = human if method == "robust" else None
    return float(
        intervals.effective_n(
            theta=interval.mean, halfwidth=interval.halfwidth, alpha=alpha, reference=reference
        )
    )


def _overall(
    *,
    themes: list[GroupEstimate],
    labeled: list[Labeled],
    alpha: float,
    method: str,
    positive: frozenset[int] = BINARY_POSITIVE,
) -> GroupEstimate:
    def combine(pick) -> intervals.Interval:
        parts = [(pick(group), group.size) for group in themes if group.size]
        label = f"stratified {parts[0][0].method}" if parts else f"stratified {method}"
        return intervals.stratified_combine(
            parts=parts, alpha=alpha, method=label, bounded=method == "robust"
        )

    ppi = combine(lambda group: group.ppi)
    human = combine(lambda group: group.human)
    paired = [row for row in labeled if row.yhat is not None]
    y = np.array([1.0 if row.y in positive else 0.0 for row in paired], dtype=float)
    yhat = np.array([1.0 if row.yhat in positive else 0.0 for row in paired], dtype=float)
    overall_notes = sorted({note for group in themes for note in group.notes})
    if ppi.note:
        overall_notes.append(notes.OVERALL % {"note": notes.OF_ESTIMATOR["PPI++"] % {"note": ppi.note}})
    judge = combine(lambda group: group.judge)
    overall_notes.extend(
        notes.OVERALL % {"note": note} for note in _clipped_notes(human=human, judge=judge, ppi=ppi)
    )
    return GroupEstimate(
        theme=OVERALL,
        difficulty=None,
        method=method,
        size=sum(group.size for group in themes),
        n_human=sum(group.n_human for group in themes),
        n_paired=sum(group.n_paired for group in themes),
        n_judge=sum(group.n_judge for group in themes),
        human=human,
        judge=judge,
        ppi=ppi,
        agreement=agreement_module.agreement(y=y, yhat=yhat) if paired else None,
        effective_n=_effective_n(interval=ppi, human=human, alpha=alpha, method=method),
        missing_judgments=sorted(uid for group in themes for uid in group.missing_judgments),
        weighted=any(g.weighted for g in themes) and all(g.weighted for g in themes if g.n_human),
        notes=overall_notes,
    )


def _merged(
    cells: dict[tuple[str, str], dict[int, dict[int, int]]], keys: list[tuple[str, str]]
) -> dict[int, dict[int, int]]:
    """The judge's labels counted by value per question over the ``keys`` cells of a group."""
    out: dict[int, Counter[int]] = defaultdict(Counter)
    for key in keys:
        for question, values in cells.get(key, {}).items():
            out[question].update(values)
    return {question: dict(values) for question, values in out.items()}


def calibration_note(calibration: Crossfit | None) -> str:
    """The note of a group whose estimate reads the judge's confidence: recalibrated (on how many
    labels), or why not."""
    if calibration is not None and calibration.fitted:
        return notes.RECALIBRATED % {"labels": calibration.whole.labels, "folds": len(calibration.maps)}
    return notes.NOT_RECALIBRATED % {"least": MIN_LABELS}


def calibration_summary(calibration: Crossfit | None) -> dict[str, Any]:
    """Which recalibration the report used, for its JSON and its page: Platt's map fitted on
    every label (``whole``, the one the reliability "after" is drawn with is the cross-fitted
    predictions), the labels and folds; ``method`` "none" below ``MIN_LABELS`` labels."""
    if calibration is None or not calibration.fitted:
        return {
            "method": "none",
            "labels": 0 if calibration is None else int(calibration.labeled.size),
            "least": MIN_LABELS,
        }
    return {
        "method": "platt-crossfit",
        "labels": calibration.whole.labels,
        "folds": len(calibration.maps),
        "slope": calibration.whole.slope,
        "intercept": calibration.whole.intercept,
    }


def build_report(
    *,
    inputs: EstimateInputs,
    by_difficulty: bool = False,
    positive: frozenset[int] = BINARY_POSITIVE,
    categories: tuple[int, ...] | None = None,
) -> Report:
    """The report of the indicator ``positive`` (the label values read as 1) from ``inputs``:
    per theme, overall and, with ``by_difficulty``, per theme x difficulty. ``categories`` as
    for ``_group`` (a categorical criterion's values: one lambda for all its indicators)."""
    criterion, judge, alpha, method, sample = (
        inputs.criterion,
        inputs.judge,
        inputs.alpha,
        inputs.method,
        inputs.sample,
    )
    sizes, judged, labeled = inputs.sizes, inputs.judged, inputs.labeled
    cells: dict[tuple[str, str], list[Labeled]] = defaultdict(list)
    for theme, difficulty, row in labeled.values():
        cells[(theme, difficulty)].append(row)

    pooled = inputs.pooled
    confident_themes = (
        pooled.confidence if pooled is not None and categories is None and method == "robust" else set()
    )
    fit_rows = [
        row
        for theme, _, row in labeled.values()
        if theme in confident_themes and row.scored and row.pi is not None
    ]
    fit_rows.sort(key=lambda row: row.unit_id)
    calibration = (
        crossfit(
            confidence=[row.c for row in fit_rows],
            labels=[1 if row.y in positive else 0 for row in fit_rows],
            clusters=[row.answer_id for row in fit_rows],
        )
        if fit_rows
        else None
    )
    fit_index = {row.unit_id: k for k, row in enumerate(fit_rows)}

    def reading(keys: list[tuple[str, str]], rows: list[Labeled], size: int) -> ConfidenceReading:
        mine = [fit_index[row.unit_id] for row in rows if row.unit_id in fit_index]
        fitted = calibration is not None and calibration.fitted
        return ConfidenceReading(
            mean=sample_weights.prediction_mean(
                cells=inputs.predictions or {},
                keys=keys,
                size=size,
                calibration=calibration if fitted else None,
                rows=np.array(mine, dtype=int),
                weights=np.array([1 / cast(float, fit_rows[k].pi) for k in mine]),
            ),
            predictions=(
                {
                    row.unit_id: float(calibration.labeled[fit_index[row.unit_id]])
                    for row in rows
                    if row.unit_id in fit_index
                }
                if fitted and calibration is not None
                else {}
            ),
            note=calibration_note(calibration),
        )

    def estimate(keys: Iterable[tuple[str, str]], theme: str, difficulty: str | None) -> GroupEstimate:
        keys = list(keys)
        counts: Counter[int] = Counter()
        for key in keys:
            counts.update(judged.get(key, {}))
        size = sum(sizes.get(key, 0) for key in keys)
        rows = [row for key in keys for row in cells.get(key, [])]
        return _group(
            theme=theme,
            difficulty=difficulty,
            size=size,
            reading=reading(keys, rows, size) if theme in confident_themes else None,
            by_question=_merged(inputs.judged_by_question, keys)
            if inputs.judged_by_question is not None
            else None,
            pooled=pooled is not None and theme in pooled.pooled,
            judged=dict(counts),
            labeled=rows,
            alpha=alpha,
            method=method,
            sample_id=sample.pk if sample is not None else None,
            positive=positive,
            categories=categories,
        )

    all_keys = sorted(set(sizes) | set(judged) | set(cells))
    theme_names = sorted({theme for theme, _ in all_keys})
    themes = [estimate((key for key in all_keys if key[0] == theme), theme, None) for theme in theme_names]
    cells_estimates = [estimate([key], key[0], key[1]) for key in all_keys] if by_difficulty else None
    overall = _overall(
        themes=themes,
        labeled=[row for _, _, row in labeled.values()],
        alpha=alpha,
        method=method,
        positive=positive,
    )
    return Report(
        campaign=criterion.campaign.name,
        criterion=criterion.name,
        level=criterion.level,
        judge=judge.name,
        alpha=alpha,
        method=method,
        sample_id=sample.pk if sample is not None else None,
        themes=themes,
        overall=overall,
        by_difficulty=cells_estimates,
        versions=inputs.versions,
        calibration=calibration_summary(calibration) if confident_themes else None,
        clusters=inputs.clusters,
    )


def compute_report(
    *,
    criterion: Criterion,
    judge: Judge,
    alpha: float = 0.05,
    method: str = "robust",
    by_difficulty: bool = False,
    clusters: str = ANSWER,
) -> Report:
    """Human-only, judge-only and PPI++ estimates of ``criterion`` with ``judge``, per theme,
    overall (stratified by theme sizes) and, with ``by_difficulty``, per theme x difficulty;
    under the robust method, with answers or questions as ``clusters`` (``params.CLUSTERS``).

    ``method`` is ``"robust"`` (design weights, cluster-robust variance, t quantile, cross-fitted
    lambda) or ``"study"`` (exactly ``ppi_py``, simple random sample). Raises EstimateError on a
    bad method or alpha, a judge from another campaign, or a categorical criterion (its
    estimates are per category: ``evaluation.estimates.categorical.compute_categorical_report``). Every
    interval carries its method, alpha and sizes; an estimate that cannot be computed is NaN
    with a note saying why.
    """
    if is_categorical(criterion):
        raise EstimateError(
            refusal(
                _(
                    "criterion %(criterion)s has categories: its estimates are per category and "
                    "group (the report page, the report command, or the API's categorical report)"
                ),
                criterion=repr(criterion.name),
            ),
            field="criterion",
        )
    inputs = load_inputs(criterion=criterion, judge=judge, alpha=alpha, method=method, clusters=clusters)
    return build_report(inputs=inputs, by_difficulty=by_difficulty)
