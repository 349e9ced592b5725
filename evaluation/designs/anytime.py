"""The anytime-valid mode: label in batches, look after every batch, stop a theme as soon as its
confidence sequence is narrow enough (``inference.sequential``).

**A sequence.** A manager starts a sequence for a criterion with a judge, a target half-width, a
batch size B and alpha. Each batch makes, in every theme not yet precise enough, B draws **with
replacement** from q, the confidence-driven design's probabilities with a budget of 1
(``inference.inclusion.confidence_probabilities``: proportional to sqrt(c (1 - c)), with the
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
for a batch is fitted on earlier batches only. Then :func:`inference.sequential.anytime_ppi`
with a look every batch: precise enough when the last look's half-width is at most the target;
else about N more labels from :func:`inference.sequential.more_draws` (draws converted to the
expected number of new distinct units; when that is every unit left, as in a small theme, the
advice is to label the whole theme: draws with replacement never learn a theme is exhausted);
waiting for labels when drawn units are still unlabeled;
out of reach when even ``CAP_FACTOR`` times the planned draws would not do.

**The tuning.** rho is set once, at the start, from a variance guess per theme: the variance of
phi if the judge's confidence were calibrated, (1/N^2) sum_i c_i (1 - c_i) / q_i, scaled by the
pilot (final labels already made in the theme: their mean squared residual (y - c)^2 against the
judge's sum c (1 - c), shrunk towards 1 with ``budget_split.PRIOR_LABELS``), as the budget
planner does; the planned draws are where a sequence tuned there reaches the target
(:func:`inference.sequential.planned_draws`). Any rho is valid: a bad guess costs width only.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, refusal
from annotation.models import Campaign, Criterion, Sample
from annotation.sampling.current import current_sample
from annotation.sampling.draws import GivenDraw, store_given_sample
from annotation.workflow import final_labels
from evaluation.designs.active import Population, _shape, check_judge, population
from evaluation.designs.budget_split import PRIOR_LABELS
from evaluation.models import Judge
from inference.inclusion import DEFAULT_FLOOR, UNKNOWN, confidence_probabilities, spread
from inference.sequential import Look, anytime_ppi, more_draws, planned_draws, tuning

DEFAULT_TARGET = 0.05
DEFAULT_BATCH = 20
DEFAULT_ALPHA = 0.05
MAX_BATCH = 1000
# A theme is out of reach when even this many times its planned draws would not reach the target.
CAP_FACTOR = 4
MIN_VARIANCE = 1e-4

STOP, MORE, WAITING, OUT_OF_REACH, CHANGED = "stop", "more", "waiting", "out_of_reach", "changed"
# The draws it takes would label (about) every unit of the theme: label them all instead.
WHOLE = "whole"


@dataclass(frozen=True)
class ThemeStatus:
    """One theme of a sequence: its ``units``, the ``draws`` made, the ``labeled_draws`` (the
    labeled prefix) and their distinct ``labels``, the distinct drawn units still ``pending`` a
    label, the last ``look`` (None before the first label), the ``state`` (``STOP``, ``MORE``,
    ``WHOLE``, ``WAITING``, ``OUT_OF_REACH``, ``CHANGED``) and, for ``MORE``, the further draws and
    the expected new labels they need (for ``WHOLE``, the theme's units not drawn yet)."""

    theme: str
    units: int
    draws: int
    labeled_draws: int
    labels: int
    pending: int
    look: Look | None
    state: str
    more_draws: int | None = None
    more_labels: int | None = None
    cap: int = 0

    @property
    def bounds(self) -> tuple[float, float] | None:
        """The anytime interval cut to [0, 1], or None before the first look."""
        return None if self.look is None else (self.look.lo, self.look.hi)


@dataclass(frozen=True)
class SequenceStatus:
    """A sequence (its latest batch ``sample``) and its themes' status."""

    sample: Sample
    criterion: Criterion
    judge_name: str
    target_halfwidth: float
    alpha: float
    batch_size: int
    batches: int
    themes: list[ThemeStatus]

    @property
    def next_themes(self) -> list[str]:
        """The themes the next batch draws: not precise enough, not out of reach and below their
        cap; none when a theme's confidences changed (the sequence cannot go on)."""
        if any(row.state == CHANGED for row in self.themes):
            return []
        return [
            row.theme for row in self.themes if row.state not in (STOP, OUT_OF_REACH) and row.draws < row.cap
        ]

    @property
    def open_themes(self) -> int:
        return len(self.next_themes)


def _fingerprint(*, ids: np.ndarray, confidence: np.ndarray) -> str:
    """What the sequence's q and C depend on: the theme's units and the judge's confidences."""
    digest = hashlib.sha256(np.asarray(ids, dtype=np.int64).tobytes())
    digest.update(np.round(np.asarray(confidence, dtype=float), 9).tobytes())
    return digest.hexdigest()[:16]


def _batch_seed(*, seed: int, theme: str, batch: int) -> int:
    digest = hashlib.sha256(f"{int(seed)}\x1f{theme}\x1f{int(batch)}\x1fanytime".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _theme_rows(units: Population) -> dict[str, np.ndarray]:
    themes = units.themes.astype(str)
    return {str(theme): np.flatnonzero(themes == theme) for theme in np.unique(themes)}


def _draw_probabilities(confidence: np.ndarray, *, floor: float) -> np.ndarray:
    """q of one theme: the confidence design with a budget of one draw."""
    return confidence_probabilities(confidence=confidence, budget=1.0, floor=floor)


def drawn_at_least_once(*, q: float | np.ndarray, draws: int) -> Any:
    """1 - (1 - q)^T: the probability that T draws with replacement take a unit of draw
    probability q at least once (computed without cancellation for small q)."""
    q_array = np.asarray(q, dtype=float)
    with np.errstate(divide="ignore"):
        out = np.where(q_array >= 1, 1.0, -np.expm1(draws * np.log1p(-np.minimum(q_array, 1.0))))
    return float(out) if out.ndim == 0 else out


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
    units = population(criterion=criterion, judge=judge)
    if units.ids.size == 0:
        raise FieldError(
            "criterion",
            refusal(_("criterion: %(criterion)s has no unit to draw"), criterion=repr(criterion.name)),
        )
    pilot = final_labels(criterion=criterion)
    themes: dict[str, dict[str, Any]] = {}
    for theme, rows in _theme_rows(units).items():
        c = units.confidence[rows]
        q = _draw_probabilities(c, floor=DEFAULT_FLOOR)
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
            "rho": tuning(planned=planned, variance_guess=guess, alpha=alpha),
            "pilot": len(labeled),
            "fingerprint": _fingerprint(ids=units.ids[rows], confidence=c),
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
    rows_of = _theme_rows(units)
    given: list[GivenDraw] = []
    for theme, shape in parameters["themes"].items():
        rows = rows_of[theme]
        q = _draw_probabilities(units.confidence[rows], floor=floor)
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


def open_sequence(*, criterion: Criterion) -> Sample | None:
    """The criterion's open sequence: its current sample when that is an anytime batch (people
    label the current sample only, so at most one sequence is open)."""
    sample = current_sample(criterion=criterion)
    return sample if sample is not None and sample.design == Sample.Design.SEQUENTIAL else None


def _judge(*, sample: Sample) -> Judge | None:
    judge_id = sample.design_parameters.get("judge_id")
    return Judge.objects.filter(pk=judge_id, campaign_id=sample.campaign_id).first() if judge_id else None


def _expected_new_labels(*, q: np.ndarray, drawn: np.ndarray, draws: int) -> int:
    """Expected distinct units among ``draws`` further draws that the sequence has not drawn."""
    fresh = q[~drawn]
    return math.ceil(float(np.sum(drawn_at_least_once(q=fresh, draws=draws)))) if fresh.size else 0


def _theme_status(
    *,
    theme: str,
    shape: Mapping[str, Any],
    settings: Mapping[str, Any],
    units: Population,
    rows: np.ndarray | None,
    labels: Mapping[int, int],
) -> ThemeStatus:
    draws = [(int(unit_id), float(q)) for unit_id, q in shape["draws"]]
    drawn_ids = {unit_id for unit_id, _q in draws}
    pending = sum(1 for unit_id in drawn_ids if unit_id not in labels)
    prefix = 0
    while prefix < len(draws) and draws[prefix][0] in labels:
        prefix += 1
    base = ThemeStatus(
        theme=theme,
        units=int(shape["units"]),
        draws=len(draws),
        labeled_draws=prefix,
        labels=len({unit_id for unit_id, _q in draws[:prefix]}),
        pending=pending,
        look=None,
        state=WAITING,
        cap=CAP_FACTOR * int(shape["planned"]),
    )
    c = units.confidence[rows] if rows is not None else None
    if rows is None or c is None or _fingerprint(ids=units.ids[rows], confidence=c) != shape["fingerprint"]:
        return replace(base, look=None, state=CHANGED)
    if prefix == 0:
        return replace(base, look=None, state=WAITING)
    floor, alpha, target = (
        float(settings["floor"]),
        float(settings["alpha"]),
        float(settings["target_halfwidth"]),
    )
    q = _draw_probabilities(c, floor=floor)
    position = {int(unit_id): k for k, unit_id in enumerate(units.ids[rows])}
    index = np.array([position[unit_id] for unit_id, _q in draws[:prefix]], dtype=int)
    looks = anytime_ppi(
        units=index,
        y=[labels[unit_id] for unit_id, _q in draws[:prefix]],
        q=q,
        confidence_all=c,
        batch=int(settings["batch_size"]),
        alpha=alpha,
        planned=float(shape["planned"]),
        variance_guess=float(shape["variance_guess"]),
    )
    look = looks[-1]
    if look.halfwidth <= target:
        return replace(base, look=look, state=STOP)
    if prefix < len(draws):
        return replace(base, look=look, state=WAITING)
    cap = base.cap
    more = more_draws(
        t=prefix,
        variance=look.variance,
        target_halfwidth=target,
        alpha=alpha,
        rho=float(shape["rho"]),
        limit=cap,
    )
    if prefix + more > cap:
        return replace(base, look=look, state=OUT_OF_REACH)
    drawn = np.zeros(c.size, dtype=bool)
    drawn[[position[unit_id] for unit_id in drawn_ids]] = True
    labels_needed = _expected_new_labels(q=q, drawn=drawn, draws=more)
    remaining = int(np.count_nonzero(~drawn))
    # Draws with replacement never learn that a small theme is exhausted: when they would label
    # about every unit left, labelling the whole theme is the honest advice (a census).
    state = WHOLE if labels_needed >= remaining else MORE
    return replace(
        base,
        look=look,
        state=state,
        more_draws=more,
        more_labels=remaining if state == WHOLE else labels_needed,
    )


def sequence_status(*, sample: Sample) -> SequenceStatus:
    """The status of every theme of the sequence whose latest batch is ``sample`` (a constant
    number of queries: the judge, the population, the final labels of the drawn units)."""
    settings = sample.design_parameters
    judge = _judge(sample=sample)
    criterion = sample.criterion
    shapes: dict[str, Any] = settings.get("themes", {})
    drawn = sorted({int(unit_id) for shape in shapes.values() for unit_id, _q in shape["draws"]})
    labels = final_labels(criterion=criterion, unit_ids=drawn) if drawn else {}
    if judge is None:
        units = Population(
            ids=np.array([], dtype=np.int64),
            themes=np.array([], dtype=object),
            confidence=np.array([]),
            scored_mask=np.array([], dtype=bool),
            prediction=np.array([]),
            verdicts=np.array([], dtype=np.int64),
        )
    else:
        units = population(criterion=criterion, judge=judge)
    rows_of = _theme_rows(units) if units.ids.size else {}
    themes = [
        _theme_status(
            theme=theme, shape=shape, settings=settings, units=units, rows=rows_of.get(theme), labels=labels
        )
        for theme, shape in sorted(shapes.items())
    ]
    return SequenceStatus(
        sample=sample,
        criterion=criterion,
        judge_name=str(settings.get("judge", "")),
        target_halfwidth=float(settings["target_halfwidth"]),
        alpha=float(settings["alpha"]),
        batch_size=int(settings["batch_size"]),
        batches=int(settings.get("batches", 0)),
        themes=themes,
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
    judge = _judge(sample=sample)
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
        units=population(criterion=criterion, judge=judge),
        themes=themes,
        seed=sample.seed,
        user=user,
    )


def open_sequences(*, campaign: Campaign) -> list[SequenceStatus]:
    """The status of every criterion's open sequence in ``campaign``, by criterion name."""
    out = []
    for criterion in Criterion.objects.filter(campaign=campaign).order_by("name"):
        criterion.campaign = campaign  # the final labels read the campaign's mode
        sample = open_sequence(criterion=criterion)
        if sample is not None:
            sample.criterion = criterion
            out.append(sequence_status(sample=sample))
    return out


def sequence_probabilities(
    *, sample: Sample, themes: Mapping[int, str], confidence: Mapping[int, float]
) -> dict[int, float]:
    """The probability that the anytime batch ``sample`` holds each unit of ``themes`` (unit id ->
    theme): 1 - (1 - q_i)^T with q_i from the recorded shape and the judge's probability of a 1
    (``confidence``; ``UNKNOWN`` when missing) and T the theme's draws; 0 for a theme with none."""
    shapes = sample.design_parameters.get("themes", {})
    out: dict[int, float] = {}
    for unit_id, theme in themes.items():
        shape = shapes.get(theme)
        if shape is None or not shape.get("draws"):
            out[unit_id] = 0.0
            continue
        c = float(confidence.get(unit_id, UNKNOWN))
        q = min(1.0, max(float(shape["low"]), float(shape["scale"]) * math.sqrt(c * (1 - c))))
        out[unit_id] = drawn_at_least_once(q=q, draws=len(shape["draws"]))
    return out
