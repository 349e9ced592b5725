"""What the estimates of one criterion and judge read from the database, read once
(``load_inputs``): units per theme and difficulty, the judge's labels counted by value, each
labeled unit's final human label, judge label, confidence and inclusion probability, and the
versions of the texts the numbers rest on."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import Count
from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from annotation.models import Criterion, Label, Sample, SampleItem, Unit
from annotation.sampling.current import current_sample
from annotation.workflow import final_labels
from annotation.workflow.state import UnitState, status_counts, unit_states
from evaluation import page_cache
from evaluation.errors import EstimateError
from evaluation.estimates import weights
from evaluation.estimates.params import ANSWER, QUESTION, check_alpha, check_clusters, check_method
from evaluation.measures.calibration import probability_of_one
from evaluation.models import Judge, JudgePrompt, Judgment

# Keeps every IN (...) list below SQLite's bound-parameter limit.
ID_CHUNK = 900


@dataclass
class Labeled:
    """One unit with a final human label: its answer, label, the judge's label (None: no ok
    judgment) and its inclusion probability in the criterion's current sample (None: not in it)."""

    unit_id: int
    answer_id: int
    y: int
    question_id: int = 0
    yhat: int | None = None
    pi: float | None = None
    c: float = weights.UNKNOWN  # the judge's probability of a 1 (sample_weights)
    scored: bool = False  # c is the judge's confidence (not its 0/1 verdict, nor unknown)


def ones_zeros(*, ones: int, count: int) -> np.ndarray:
    """A 0/1 array with ``ones`` ones and ``count - ones`` zeros: same mean and variance as any
    binary array with those counts, which is all the estimators read from it."""
    return np.repeat(np.array([1.0, 0.0]), [ones, count - ones])


def labeled_units(
    *,
    criterion: Criterion,
    judge: Judge,
    sample: Sample | None,
    values: tuple[int, ...] | None = None,
    states: dict[int, UnitState] | None = None,
) -> dict[int, tuple[str, str, Labeled]]:
    """Theme, difficulty and row of every unit (of the criterion's level) with a final label.
    ``states``: the criterion's unit states when the caller has read them already."""
    if states is None:
        finals = final_labels(criterion=criterion)
    else:
        finals = {unit_id: state.final for unit_id, state in states.items() if state.final is not None}
    rows: dict[int, tuple[str, str, Labeled]] = {}
    if not finals:
        return rows
    # The criterion's labelled units, as a subquery: one query per table whatever their number
    # (a list of ids would take one per ID_CHUNK, each parsed with its thousand parameters).
    labelled = Label.objects.filter(criterion=criterion).values("unit_id")
    units = (
        Unit.objects.filter(pk__in=labelled, campaign_id=criterion.campaign_id, level=criterion.level)
        .order_by("id")
        .values_list("id", "theme", "difficulty", "answer_id", "answer__question_id")
    )
    for unit_id, theme, difficulty, answer_id, question_id in units:
        if unit_id in finals:
            rows[unit_id] = (
                theme,
                difficulty,
                Labeled(unit_id=unit_id, answer_id=answer_id, y=finals[unit_id], question_id=question_id),
            )
    judged = Judgment.objects.filter(
        judge=judge, criterion=criterion, status=Judgment.Status.OK, unit_id__in=labelled
    ).values_list("unit_id", "value", "confidence")
    for unit_id, value, confidence in judged:
        if unit_id in rows and value is not None and (values is None or value in values):
            rows[unit_id][2].yhat = int(value)
            if values is None:  # a binary criterion: the judge's probability of a 1
                rows[unit_id][2].c = (
                    float(value)
                    if confidence is None
                    else probability_of_one(value=int(value), confidence=confidence)
                )
                rows[unit_id][2].scored = confidence is not None
    if sample is not None:
        items = SampleItem.objects.filter(sample=sample, unit_id__in=labelled).values_list(
            "unit_id", "inclusion_probability"
        )
        for unit_id, pi in items:
            if unit_id in rows:
                rows[unit_id][2].pi = float(pi)
    return rows


def _pool(
    *, criterion: Criterion, sample: Sample | None, labeled: dict[int, tuple[str, str, Labeled]]
) -> weights.Pooled:
    """Union probabilities where a theme's labels come from several samples (set on the rows)."""
    pooled = weights.pool(
        criterion=criterion,
        current=sample,
        labeled={unit_id: (theme, row.pi) for unit_id, (theme, _, row) in labeled.items()},
    )
    for unit_id, pi in pooled.probability.items():
        labeled[unit_id][2].pi = pi
    return pooled


@dataclass
class EstimateInputs:
    """What every estimate of one criterion and judge reads from the database, read once: unit
    counts per (theme, difficulty), the judge's ok labels counted by value per (theme,
    difficulty), the labeled units (final human label, judge label, inclusion probability), the
    sample whose probabilities weight them (robust method) and the texts' versions."""

    criterion: Criterion
    judge: Judge
    alpha: float
    method: str
    sizes: dict[tuple[str, str], int]
    judged: dict[tuple[str, str], dict[int, int]]
    sample: Sample | None
    labeled: dict[int, tuple[str, str, Labeled]]
    versions: dict[str, Any]
    # Themes whose labels several samples fed, or a confidence-driven one (binary criteria), and
    # the judge's summed probabilities of a 1 per (theme, difficulty) for the latter.
    pooled: weights.Pooled | None = None
    predictions: dict | None = None
    # Questions as clusters (``CLUSTERS``): the judge's ok labels counted by value per (theme,
    # difficulty) and question, read only then.
    clusters: str = ANSWER
    judged_by_question: dict[tuple[str, str], dict[int, dict[int, int]]] | None = None


def load_inputs(
    *,
    criterion: Criterion,
    judge: Judge,
    alpha: float = 0.05,
    method: str = "robust",
    values: tuple[int, ...] | None = None,
    clusters: str = ANSWER,
) -> EstimateInputs:
    """The rows the estimates of ``criterion`` with ``judge`` rest on (``EstimateInputs``).
    ``values``: the label values the criterion has now (its categories); a judgment of another
    value (a category removed since) is left out, as a judgment that failed. ``clusters``:
    ``question`` reads the judge's labels per question too. Raises EstimateError on a bad
    method, alpha or clusters, or a judge from another campaign."""
    check_method(method)
    clusters = check_clusters(clusters)
    check_alpha(alpha)
    if judge.campaign_id != criterion.campaign_id:
        raise EstimateError(refusal(_("judge %(judge)s belongs to another campaign"), judge=repr(judge.name)))

    sizes, judged, by_question = judge_counts(
        criterion=criterion, judge=judge, values=values, clusters=clusters
    )
    sample = current_sample(criterion=criterion) if method == "robust" else None
    # Read once: the final labels the estimates read, and every labelled unit's state, counted
    # for the reader (``text_versions``).
    states = unit_states(criterion=criterion)
    labeled = labeled_units(criterion=criterion, judge=judge, sample=sample, values=values, states=states)
    pooled = _pool(criterion=criterion, sample=sample, labeled=labeled)
    sums = (
        weights.predictions(criterion=criterion, judge=judge) if pooled.confidence and values is None else {}
    )
    return EstimateInputs(
        criterion=criterion,
        judge=judge,
        alpha=alpha,
        method=method,
        sizes=sizes,
        judged=judged,
        sample=sample,
        labeled=labeled,
        versions=text_versions(criterion=criterion, judge=judge, states=states),
        pooled=pooled,
        predictions=sums,
        clusters=clusters,
        judged_by_question=by_question,
    )


# Units per (theme, difficulty); the judge's ok labels counted by value per (theme, difficulty);
# the same per question (questions as clusters), else None.
Counts = tuple[
    dict[tuple[str, str], int],
    dict[tuple[str, str], dict[int, int]],
    dict[tuple[str, str], dict[int, dict[int, int]]] | None,
]


def judge_counts(
    *, criterion: Criterion, judge: Judge, values: tuple[int, ...] | None = None, clusters: str = ANSWER
) -> Counts:
    """The criterion's units and the judge's ok labels of them counted (:data:`Counts`; ``values``
    and ``clusters`` as :func:`load_inputs`). Kept in the page cache under the campaign's units
    and the judge's judgments of the criterion, which alone move them: a label does not, so the
    estimates computed again after one read the labelled units only (at a million units these
    counts are 1 to 2 s of PostgreSQL's time)."""
    key = [*page_cache.judge_counts_key(criterion=criterion, judge=judge), ("counted", values, clusters)]
    return page_cache.cached(
        "judge_counts",
        key,
        lambda: _judge_counts(criterion=criterion, judge=judge, values=values, clusters=clusters),
    )


def _judge_counts(
    *, criterion: Criterion, judge: Judge, values: tuple[int, ...] | None, clusters: str
) -> Counts:
    sizes: dict[tuple[str, str], int] = {
        (row["theme"], row["difficulty"]): row["n"]
        for row in Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level)
        .values("theme", "difficulty")
        .annotate(n=Count("id"))
        .order_by()
    }
    judged: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)
    ok = Judgment.objects.filter(judge=judge, criterion=criterion, status=Judgment.Status.OK)
    if values is not None:
        ok = ok.filter(value__in=values)
    for row in (
        ok.filter(unit__level=criterion.level)
        .values("unit__theme", "unit__difficulty", "value")
        .annotate(n=Count("id"))
        .order_by()
    ):
        judged[(row["unit__theme"], row["unit__difficulty"])][int(row["value"])] = row["n"]
    if clusters != QUESTION:
        return sizes, dict(judged), None
    by_question: dict[tuple[str, str], dict[int, dict[int, int]]] = defaultdict(lambda: defaultdict(dict))
    for row in (
        ok.filter(unit__level=criterion.level)
        .values("unit__theme", "unit__difficulty", "unit__answer__question_id", "value")
        .annotate(n=Count("id"))
        .order_by()
    ):
        cell = by_question[(row["unit__theme"], row["unit__difficulty"])]
        cell[row["unit__answer__question_id"]][int(row["value"])] = row["n"]
    # Plain dicts: a defaultdict of a lambda does not pickle.
    return sizes, dict(judged), {key: dict(value) for key, value in by_question.items()} or None


def text_versions(
    *, criterion: Criterion, judge: Judge, states: dict[int, UnitState] | None = None
) -> dict[str, Any]:
    """The versions of the criterion's texts that a report's numbers rest on.

    ``human_labels``: the guidelines versions the human labels were given under, with how many
    labels each (``guidelines_version`` None: imported labels, written outside Attest, or labels
    from before versions were recorded). ``judge_prompt``: the guidelines version and the SHA-256
    of the prompt the judge sends for the criterion; None for a judge that sends none (lexical,
    imported) or has not run on it. ``label_states``: the labelled units by where they stand
    (``workflow.state.status_counts``; ``states``: the unit states when read already): the
    estimates read the ``final`` ones only, and a count of labels says nothing of the rest unless
    they are named (32 awaiting review).
    """
    human = [
        {"guidelines_version": number, "labels": n}
        for number, n in Label.objects.filter(criterion=criterion, value__isnull=False)
        .values_list("guidelines_version__number")
        .annotate(n=Count("id"))
        .order_by("guidelines_version__number")
    ]
    binding = (
        JudgePrompt.objects.filter(judge=judge, criterion=criterion)
        .values_list("version__number", "sha256")
        .first()
    )
    return {
        "human_labels": human,
        "label_states": status_counts(criterion=criterion, states=states),
        "judge_prompt": (
            {"guidelines_version": binding[0], "sha256": binding[1]} if binding is not None else None
        ),
    }
