"""Where an anytime sequence stands, theme by theme: its confidence sequence after the latest
batch, and per theme "precise enough, stop", "about N more labels", waiting for labels, out of
reach, or changed (the judge's confidences moved since the sequence started); the inclusion
probabilities of its draws (what the estimates weigh its labels by). Read by the anytime page,
the work page and ``evaluation.estimates.weights``."""

from __future__ import annotations

import hashlib
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from annotation.models import Campaign, Criterion, Sample
from annotation.sampling.current import current_sample
from annotation.workflow import final_labels
from evaluation.designs.active import Judged, Population, design_confidence, population
from evaluation.models import Judge
from inference.designs.inclusion import confidence_probabilities
from inference.estimators.sequential import Look, anytime_ppi, more_draws
from inference.reliability.calibration import Platt

# A theme is out of reach when even this many times its planned draws would not reach the target.
CAP_FACTOR = 4

# What a theme's status says.
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


def fingerprint(*, ids: np.ndarray, confidence: np.ndarray) -> str:
    """What the sequence's q and C depend on: the theme's units and the judge's confidences."""
    digest = hashlib.sha256(np.asarray(ids, dtype=np.int64).tobytes())
    digest.update(np.round(np.asarray(confidence, dtype=float), 9).tobytes())
    return digest.hexdigest()[:16]


def theme_rows(units: Population) -> dict[str, np.ndarray]:
    themes = units.themes.astype(str)
    return {str(theme): np.flatnonzero(themes == theme) for theme in np.unique(themes)}


def draw_probabilities(confidence: np.ndarray, *, floor: float) -> np.ndarray:
    """q of one theme: the confidence design with a budget of one draw."""
    return confidence_probabilities(confidence=confidence, budget=1.0, floor=floor)


def drawn_at_least_once(*, q: float | np.ndarray, draws: int) -> Any:
    """1 - (1 - q)^T: the probability that T draws with replacement take a unit of draw
    probability q at least once (computed without cancellation for small q)."""
    q_array = np.asarray(q, dtype=float)
    with np.errstate(divide="ignore"):
        out = np.where(q_array >= 1, 1.0, -np.expm1(draws * np.log1p(-np.minimum(q_array, 1.0))))
    return float(out) if out.ndim == 0 else out


def open_sequence(*, criterion: Criterion) -> Sample | None:
    """The criterion's open sequence: its current sample when that is an anytime batch (people
    label the current sample only, so at most one sequence is open)."""
    sample = current_sample(criterion=criterion)
    return sample if sample is not None and sample.design == Sample.Design.SEQUENTIAL else None


def sequence_judge(*, sample: Sample) -> Judge | None:
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
    if rows is None or c is None or fingerprint(ids=units.ids[rows], confidence=c) != shape["fingerprint"]:
        return replace(base, look=None, state=CHANGED)
    if prefix == 0:
        return replace(base, look=None, state=WAITING)
    floor, alpha, target = (
        float(settings["floor"]),
        float(settings["alpha"]),
        float(settings["target_halfwidth"]),
    )
    q = draw_probabilities(c, floor=floor)
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
    more = more_draws(t=prefix, halfwidth=look.halfwidth, target_halfwidth=target, limit=cap)
    drawn = np.zeros(c.size, dtype=bool)
    drawn[[position[unit_id] for unit_id in drawn_ids]] = True
    remaining = int(np.count_nonzero(~drawn))
    if prefix + more > cap:
        # A theme the capped draws cannot make precise enough is still known exactly once every
        # unit is labelled: when its units left are fewer than the draws it would take (each draw
        # labels at most one more), that census is the advice.
        needed = more_draws(t=prefix, halfwidth=look.halfwidth, target_halfwidth=target, limit=sys.maxsize)
        if remaining <= needed:
            return replace(base, look=look, state=WHOLE, more_draws=needed, more_labels=remaining)
        return replace(base, look=look, state=OUT_OF_REACH)
    labels_needed = _expected_new_labels(q=q, drawn=drawn, draws=more)
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
    judge = sequence_judge(sample=sample)
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
        units = population(criterion=criterion, judge=judge, calibration=sequence_calibration(sample=sample))
    rows_of = theme_rows(units) if units.ids.size else {}
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


def sequence_calibration(*, sample: Sample) -> Platt:
    """The pilot's map the sequence of ``sample`` follows the judge's confidence through, recorded
    at its start (the identity for a sequence started without a pilot, or before maps were
    recorded): every batch and every status reads the confidences the start read."""
    return Platt.from_json(sample.design_parameters.get("calibration"))


def sequence_probabilities(
    *, sample: Sample, themes: Mapping[int, str], judged: Mapping[int, Judged]
) -> dict[int, float]:
    """The probability that the anytime batch ``sample`` holds each unit of ``themes`` (unit id ->
    theme): 1 - (1 - q_i)^T with q_i from the recorded shape and the c the design followed
    (``active.design_confidence`` of what the judge said, ``judged``, through the sequence's
    recorded map) and T the theme's draws; 0 for a theme with none."""
    shapes = sample.design_parameters.get("themes", {})
    calibration = sequence_calibration(sample=sample)
    out: dict[int, float] = {}
    for unit_id, theme in themes.items():
        shape = shapes.get(theme)
        if shape is None or not shape.get("draws"):
            out[unit_id] = 0.0
            continue
        c = design_confidence(judged.get(unit_id), calibration=calibration)
        q = min(1.0, max(float(shape["low"]), float(shape["scale"]) * math.sqrt(c * (1 - c))))
        out[unit_id] = drawn_at_least_once(q=q, draws=len(shape["draws"]))
    return out
