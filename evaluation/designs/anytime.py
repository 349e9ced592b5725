"""The anytime-valid mode: label in batches, look after every batch, stop a theme as soon as its
confidence sequence is narrow enough (``inference.estimators.sequential``).

**A sequence.** A manager starts a sequence for a criterion with a judge, a target half-width, a
batch size B and alpha. Each batch makes, in every theme not yet precise enough, B draws **with
replacement** from q, the confidence-driven design's probabilities with a budget of 1
(``inference.designs.inclusion.confidence_probabilities``: proportional to sqrt(c (1 - c)), with the
usual floor; uniform when the judge gave no confidence), seeded by (seed, theme, batch index) so
that a batch is reproducible and never depends on another theme. The draws must be with
replacement: the confidence sequence needs independent, identically distributed draws given the
past (Hansen-Hurwitz), which a draw without replacement is not. A unit drawn again reuses its
label: humans label distinct units.

**Storage.** Each batch is stored as a new sample of design ``anytime``
(``annotation.sampling.draws.store_given_sample``) holding **every** distinct unit the sequence
drew so far, each with its probability of having been drawn at least once, 1 - (1 - q_i)^T (T the
theme's draws so far): the batch becomes the criterion's current sample, so the queue keeps the
earlier batches' units still waiting for a label, and the fixed-sample report weights the
sequence's units exactly (``evaluation.estimates.weights``). Its ``design_parameters`` keep the
sequence id, the judge, the target, alpha, the batch size, the floor, the seed, and per theme the
shape of q (``low``, ``scale``: any unit's q is recomputed), the variance guess, the planned
draws, rho, a fingerprint of the judge's confidences, and the ordered draws [[unit id, q], ...].

**The status.** A theme's look uses the longest prefix of its draws (in draw order) whose units
all have a final human label. Not the labeled draws whatever their order: which units get labeled
first depends on people, and skipping an unlabeled draw would let the order of labeling choose
the data. The prefix keeps the draws the ones the design made, in the order it made them; lambda
for a batch is fitted on earlier batches only. Then :func:`inference.estimators.sequential.anytime_ppi`
with a look every batch: precise enough when the last look's half-width is at most the target;
else about N more labels from :func:`inference.estimators.sequential.more_draws` (draws converted to the
expected number of new distinct units; when that is every unit left, as in a small theme, the
advice is to label the whole theme: draws with replacement never learn a theme is exhausted);
waiting for labels when drawn units are still unlabeled;
out of reach when even ``CAP_FACTOR`` times the planned draws would not do (a theme with fewer
units left than those draws is told to label them all instead).

**The tuning.** rho is set once, at the start, from a variance guess per theme: the variance of
phi if the judge's confidence were calibrated, (1/N^2) sum_i c_i (1 - c_i) / q_i, scaled by the
pilot (final labels already made in the theme: their mean squared residual (y - c)^2 against the
judge's sum c (1 - c), shrunk towards 1 with ``budget_split.PRIOR_LABELS``), as the budget
planner does; the planned draws are where a sequence tuned there reaches the target
(:func:`inference.estimators.sequential.planned_draws`). Any rho is valid: a bad guess costs width only.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, refusal
from annotation.models import Criterion, Sample
from annotation.sampling.draws import GivenDraw, store_given_sample
from annotation.workflow import final_labels
from evaluation.designs.active import (
    Population,
    _shape,
    check_judge,
    judged_units,
    pilot_calibration,
    population,
)
from evaluation.designs.anytime_status import (
    CHANGED,
    draw_probabilities,
    drawn_at_least_once,
    fingerprint,
    open_sequence,
    sequence_calibration,
    sequence_judge,
    sequence_status,
    theme_rows,
)
from evaluation.designs.budget_split import PRIOR_LABELS
from evaluation.models import Judge
from inference.designs.inclusion import DEFAULT_FLOOR, spread
from inference.estimators.sequential import planned_draws

DEFAULT_TARGET = 0.05
DEFAULT_BATCH = 20
DEFAULT_ALPHA = 0.05
MAX_BATCH = 1000


MIN_VARIANCE = 1e-4


def _batch_seed(*, seed: int, theme: str, batch: int) -> int:
    digest = hashlib.sha256(f"{int(seed)}\x1f{theme}\x1f{int(batch)}\x1fanytime".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def variance_guess(*, confidence: np.ndarray, q: np.ndarray, pilot: Sequence[tuple[float, int]]) -> float:
    """The variance guess of phi in one theme: (1/N^2) sum c (1 - c) / q (a calibrated judge),
    times the pilot's ratio of squared residuals (y - c)^2 to c (1 - c), shrunk towards 1 with
    ``PRIOR_LABELS`` labels; at least ``MIN_VARIANCE``. ``pilot``: (c, y) of labeled units."""
    n = confidence.size
    calibrated = float(np.sum(confidence * (1 - confidence) / q)) / n**2
    if pilot:
        # The pilot's squared residuals against what a calibrated judge expects, each side given
        # PRIOR_LABELS labels of the theme's mean c (1 - c) (at least 0.01: a judge sure of
        # everything would otherwise make any error an infinite ratio).
        prior = PRIOR_LABELS * max(float(np.mean(confidence * (1 - confidence))), 0.01)
        residual = sum((y - c) ** 2 for c, y in pilot)
        model = sum(c * (1 - c) for c, _ in pilot)
        calibrated *= (residual + prior) / (model + prior)
    return max(calibrated, MIN_VARIANCE)


def _check_settings(*, target_halfwidth: float, batch_size: int, alpha: float) -> None:
    if not (isinstance(target_halfwidth, int | float) and 0 < target_halfwidth < 0.5):
        raise FieldError(
            "target_halfwidth",
            refusal(
                _("target_halfwidth: %(value)s is not a half-width; give a number above 0 and below 0.5"),
                value=repr(target_halfwidth),
            ),
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH:
        raise FieldError(
            "batch_size",
            refusal(
                _("batch_size: %(value)s draws per theme; give a whole number from 1 to %(max)s"),
                value=repr(batch_size),
                max=MAX_BATCH,
            ),
        )
    if not (isinstance(alpha, int | float) and 0 < alpha <= 0.2):
        raise FieldError(
            "alpha",
            refusal(_("alpha: %(value)s; give a number above 0 and at most 0.2"), value=repr(alpha)),
        )


def start_sequence(
    *,
    criterion: Criterion,
    judge: Judge | None,
    target_halfwidth: float = DEFAULT_TARGET,
    batch_size: int = DEFAULT_BATCH,
    alpha: float = DEFAULT_ALPHA,
    seed: int = 0,
    user=None,
) -> Sample:
    """Start an anytime sequence of ``criterion`` with ``judge`` and draw its first batch;
    return the batch's sample. Refuses (FieldError naming ``judge``, ``target_halfwidth``,
    ``batch_size``, ``alpha``, ``seed`` or ``criterion``) when there is no judge of the
    campaign, a setting is out of range, or the criterion has no unit or has categories; nothing
    is written then. The criterion's row is locked while the batch is drawn, as for the next
    batch (:func:`next_batch`), so that a start and a next batch never both become current."""
    with transaction.atomic():
        Criterion.objects.select_for_update().filter(pk=criterion.pk).first()
        return _start_sequence(
            criterion=criterion,
            judge=judge,
            target_halfwidth=target_halfwidth,
            batch_size=batch_size,
            alpha=alpha,
            seed=seed,
            user=user,
        )


def _start_sequence(
    *,
    criterion: Criterion,
    judge: Judge | None,
    target_halfwidth: float,
    batch_size: int,
    alpha: float,
    seed: int,
    user,
) -> Sample:
    judge = check_judge(criterion=criterion, judge=judge)
    _check_settings(target_halfwidth=target_halfwidth, batch_size=batch_size, alpha=alpha)
    judged = judged_units(criterion=criterion, judge_id=judge.pk)
    calibration, pilot_labels = pilot_calibration(criterion=criterion, judge=judge, judged=judged)
    units = population(criterion=criterion, judge=judge, calibration=calibration, judged=judged)
    if units.ids.size == 0:
        raise FieldError(
            "criterion",
            refusal(_("criterion: %(criterion)s has no unit to draw"), criterion=repr(criterion.name)),
        )
    pilot = final_labels(criterion=criterion)
    themes: dict[str, dict[str, Any]] = {}
    for theme, rows in theme_rows(units).items():
        c = units.confidence[rows]
        q = draw_probabilities(c, floor=DEFAULT_FLOOR)
        labeled = [
            (float(c[k]), pilot[int(unit_id)])
            for k, unit_id in enumerate(units.ids[rows])
            if int(unit_id) in pilot
        ]
        guess = variance_guess(confidence=c, q=q, pilot=labeled)
        planned = planned_draws(target_halfwidth=target_halfwidth, variance_guess=guess, alpha=alpha)
        themes[theme] = {
            "units": int(rows.size),
            **_shape(probabilities=q, scores=spread(confidence=c)),
            "variance_guess": guess,
            "planned": planned,
            "pilot": len(labeled),
            "fingerprint": fingerprint(ids=units.ids[rows], confidence=c),
            "draws": [],
        }
    parameters: dict[str, Any] = {
        "sequence": uuid.uuid4().hex,
        "judge": judge.name,
        "judge_id": judge.pk,
        "target_halfwidth": float(target_halfwidth),
        "alpha": float(alpha),
        "batch_size": int(batch_size),
        "floor": DEFAULT_FLOOR,
        "calibration": calibration.as_json(),
        "pilot_labels": pilot_labels,
        "batches": 0,
        "themes": themes,
    }
    return _draw_batch(
        criterion=criterion, parameters=parameters, units=units, themes=sorted(themes), seed=seed, user=user
    )


def _draw_batch(
    *,
    criterion: Criterion,
    parameters: dict[str, Any],
    units: Population,
    themes: Sequence[str],
    seed: int,
    user,
) -> Sample:
    """Add a batch of draws to ``themes`` of ``parameters`` and store the sequence so far."""
    batch = int(parameters["batches"])
    size = int(parameters["batch_size"])
    floor = float(parameters["floor"])
    rows_of = theme_rows(units)
    given: list[GivenDraw] = []
    for theme, shape in parameters["themes"].items():
        rows = rows_of[theme]
        q = draw_probabilities(units.confidence[rows], floor=floor)
        ids = units.ids[rows]
        if theme in themes:
            rng = np.random.default_rng(_batch_seed(seed=seed, theme=theme, batch=batch))
            picks = rng.choice(rows.size, size=size, p=q)
            shape["draws"] = [*shape["draws"], *([int(ids[k]), float(q[k])] for k in picks)]
        draws = shape["draws"]
        if not draws:
            continue
        position = {int(unit_id): k for k, unit_id in enumerate(ids)}
        for unit_id in sorted({int(unit_id) for unit_id, _q in draws}):
            pi = drawn_at_least_once(q=float(q[position[unit_id]]), draws=len(draws))
            given.append(GivenDraw(unit_id=unit_id, theme=theme, inclusion_probability=pi))
    parameters["batches"] = batch + 1
    total = sum(len(shape["draws"]) for shape in parameters["themes"].values())
    return store_given_sample(
        criterion=criterion,
        draws=given,
        design=Sample.Design.SEQUENTIAL,
        seed=seed,
        budget=total,
        parameters=parameters,
        user=user,
    )


def next_batch(*, sample: Sample, user=None) -> Sample:
    """Draw the next batch of the sequence whose latest batch is ``sample``, in every theme not
    precise enough and below its cap; return the new batch's sample. Refuses (FieldError naming
    ``sequence`` or ``judge``) when ``sample`` is not the criterion's open sequence (a double
    click: the criterion's row is locked, so the second request sees the first one's batch), its
    judge is gone or its confidences changed since the start (q would no longer be the
    sequence's), or no theme needs a draw; nothing is written then."""
    with transaction.atomic():
        locked = Criterion.objects.select_for_update().select_related("campaign")
        criterion = locked.get(pk=sample.criterion_id)
        sample.criterion = criterion
        return _next_batch(sample=sample, criterion=criterion, user=user)


def _next_batch(*, sample: Sample, criterion: Criterion, user) -> Sample:
    current = open_sequence(criterion=criterion)
    if current is None or current.pk != sample.pk:
        raise FieldError(
            "sequence",
            refusal(
                _("sequence: sample %(sample)s is not the latest batch of %(criterion)s's open sequence"),
                sample=sample.pk,
                criterion=repr(criterion.name),
            ),
        )
    judge = sequence_judge(sample=sample)
    if judge is None:
        raise FieldError("judge", _("judge: the sequence's judge no longer exists; start a new sequence"))
    status = sequence_status(sample=sample)
    if any(row.state == CHANGED for row in status.themes):
        raise FieldError(
            "judge",
            refusal(
                _(
                    "judge: %(judge)s's confidences or the units changed since the sequence started; "
                    "its draws would no longer follow one design: start a new sequence"
                ),
                judge=repr(judge.name),
            ),
        )
    parameters = {
        **sample.design_parameters,
        "themes": {k: dict(v) for k, v in sample.design_parameters["themes"].items()},
    }
    themes = status.next_themes
    if not themes:
        raise FieldError(
            "sequence", _("sequence: every theme is precise enough or at its cap; nothing to draw")
        )
    return _draw_batch(
        criterion=criterion,
        parameters=parameters,
        units=population(criterion=criterion, judge=judge, calibration=sequence_calibration(sample=sample)),
        themes=themes,
        seed=sample.seed,
        user=user,
    )
