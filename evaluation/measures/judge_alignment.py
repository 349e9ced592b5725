"""Whether a judge can be trusted on a binary criterion: each judge that labelled it, against the
final human labels (``annotation.workflow.final_labels``, the labels every report reads), per
theme and overall, with its drift.

A judge is one prompt per criterion: its binding (``JudgePrompt``) fixes the version of the
criterion's guidelines and judge prompt it sends, and a run refuses a changed text
(``evaluation.judge.bindings``). Another prompt version is therefore another judge of the same
kind and model: those judges form a **line**, ordered by the version of the guidelines they are
bound to (a judge sending no prompt, lexical or imported, has none), then by their own
``prompt_version``, then by when they were made. Each judge is one version, measured on its own.

Per judge, on the units with a final human label and an ok judgment
(``inference.reliability.judge_alignment.alignment``): agreement, sensitivity and specificity with Wilson
intervals at the effective number of units, Cohen's kappa with a bootstrap over clusters, the
confusion counts, n, the saving the judge brings to PPI++ and Dorner's ceiling (the most any
judge agreeing that often could bring). The clusters are the answers (a judge that misreads an
answer errs on its sentences together), or the questions when the intervals are about the
assistant asked again (``evaluation.estimates.params.CLUSTERS``).

**Drift**: the change of agreement, ``later - earlier``, with Newcombe's hybrid score interval
(``inference.paired.newcombe_difference``), flagged when the interval excludes 0:

- between consecutive versions of a line, on the units both labelled (paired: the correlation of
  their hits on those units), or on each one's units when they share none (independent);
- between consecutive periods of one judge's judged units, by the month of the judgment, or,
  when they all fall in one month, the first and second half of the units by date (independent).

The database is read in a constant number of queries, whatever the number of units and judges.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from annotation.criteria.categories import is_categorical
from annotation.models import Criterion
from annotation.workflow import final_labels
from evaluation.designs import held_out
from evaluation.errors import EstimateError
from evaluation.estimates import judge_choice
from evaluation.estimates.params import ANSWER, QUESTION, check_alpha, check_clusters
from evaluation.models import HeldOutSplit, Judge, JudgePrompt, Judgment
from inference.intervals import Interval
from inference.numbers import finite
from inference.paired import newcombe_difference
from inference.reliability import judge_alignment

# Why a result has nothing to show ("" when it has something).
CATEGORICAL = "categorical"
NO_JUDGE = "no_judge"
NO_LABELS = "no_labels"

# What a drift compares.
PROMPT = "prompt"
MONTH = "month"
HALF = "half"

# What the figures are computed on: with a held-out split, by default the prompts are compared on
# its selection part and the judges' figures reported on its held-out part (``split``); or
# everything on one part; or everything on every labelled unit (``all``, the only choice without
# a split).
SPLIT = "split"
PARTS = (SPLIT, held_out.SELECTION, held_out.HELD_OUT, held_out.ALL)


@dataclass(frozen=True)
class ThemeAlignment:
    theme: str
    alignment: judge_alignment.Alignment


@dataclass(frozen=True)
class Period:
    """One period of a judge's judged units: a month (``key`` ``2026-11``) or a half (``1``,
    ``2``), its first and last judgment's date, and the agreement on its units."""

    kind: str
    key: str
    first: datetime
    last: datetime
    agreement: Interval | None
    n: int


@dataclass(frozen=True)
class JudgeVersion:
    """One judge on the criterion: its line (kind and model), its versions (of the guidelines it
    is bound to, None without a binding, and its own prompt version), and its alignment."""

    judge: Judge
    line: str
    guidelines: int | None
    prompt_version: str
    overall: judge_alignment.Alignment
    themes: list[ThemeAlignment]
    periods: list[Period] = field(default_factory=list)

    @property
    def saving(self) -> float | None:
        """The share of human labels this judge saves PPI++ at best: 1 - 1 / its factor."""
        return saved_share(self.overall.factor.value)

    @property
    def ceiling_saving(self) -> float | None:
        """The share of human labels any judge agreeing this often saves at most (Dorner)."""
        return saved_share(self.overall.ceiling.value)


@dataclass(frozen=True)
class Drift:
    """The change of agreement from ``before`` to ``after``, its interval, and whether the
    interval excludes 0. ``kind`` ``prompt``: two judges of a line, ``before`` and ``after`` their
    names, ``judge`` the later one; ``month`` or ``half``: two periods of ``judge``, their keys
    (``2026-11``; ``1`` and ``2``). ``paired``: on the units both labelled."""

    kind: str
    judge: str
    before: str
    after: str
    change: Interval
    n: int
    paired: bool
    # The theme whose units alone are compared; "" for all the judge's units (overall).
    theme: str = ""
    # The part of the held-out split the change is measured on (``evaluation.designs.held_out``).
    part: str = held_out.ALL
    # Each side's agreement on the units compared (the common units when paired).
    earlier: float | None = None
    later: float | None = None

    @property
    def flagged(self) -> bool:
        return self.change.excludes(0.0)

    @property
    def pair(self) -> tuple[str, str, str, str]:
        return (self.kind, self.judge, self.before, self.after)


@dataclass(frozen=True)
class Part:
    """What one part of the split holds: its judged units with a final human label, and their
    questions."""

    name: str
    units: int
    questions: int


@dataclass(frozen=True)
class JudgeAlignmentResult:
    """The judges (``judges``: their figures and periods) and the drifts, overall (``drifts``)
    and per theme (``theme_drifts``). ``part``: what was asked (:data:`PARTS`); the judges'
    figures and their periods' drifts are on ``figures_part``, the prompt versions' drifts on
    ``comparisons_part``; ``split`` the criterion's held-out split (None without one) and
    ``parts`` the size of each part."""

    criterion: Criterion
    alpha: float
    clusters: str
    judges: list[JudgeVersion]
    drifts: list[Drift]
    empty: str = ""
    theme_drifts: list[Drift] = field(default_factory=list)
    part: str = held_out.ALL
    split: HeldOutSplit | None = None
    parts: dict[str, Part] = field(default_factory=dict)

    @property
    def figures_part(self) -> str:
        return held_out.HELD_OUT if self.part == SPLIT else self.part

    @property
    def comparisons_part(self) -> str:
        return held_out.SELECTION if self.part == SPLIT else self.part

    @property
    def flagged(self) -> list[Drift]:
        """The overall changes beyond chance (what the gate reads; not the themes')."""
        return [drift for drift in self.drifts if drift.flagged]

    @property
    def flagged_themes(self) -> list[Drift]:
        return [drift for drift in self.theme_drifts if drift.flagged]

    @property
    def drift_groups(self) -> list[tuple[Drift, list[Drift]]]:
        """Each overall drift with the same comparison's drifts per theme."""
        themes: dict[tuple[str, str, str, str], list[Drift]] = defaultdict(list)
        for drift in self.theme_drifts:
            themes[drift.pair].append(drift)
        return [(drift, themes.get(drift.pair, [])) for drift in self.drifts]


@dataclass
class _Row:
    unit_id: int
    theme: str
    cluster: int
    y: int
    yhat: int
    created_at: datetime
    part: str = held_out.ALL
    question: int = 0


def saved_share(factor: float | None) -> float | None:
    """1 - 1 / ``factor``: the share of human labels a judge worth ``factor`` labels each saves
    (None without a finite factor)."""
    if factor is None or not factor >= 1:
        return None
    return 1.0 - 1.0 / factor


def _line(judge: Judge) -> str:
    return f"{judge.kind}:{judge.model}" if judge.model else judge.kind


def _arrays(rows: list[_Row]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        np.array([row.y for row in rows], dtype=int),
        np.array([row.yhat for row in rows], dtype=int),
        np.array([row.cluster for row in rows], dtype=int),
    )


def _align(rows: list[_Row], *, alpha: float) -> judge_alignment.Alignment:
    y, yhat, clusters = _arrays(rows)
    return judge_alignment.alignment(y=y, yhat=yhat, clusters=clusters, alpha=alpha)


def _agreement(rows: list[_Row], *, alpha: float) -> Interval | None:
    y, yhat, clusters = _arrays(rows)
    return judge_alignment.clustered_wilson(hits=(y == yhat).astype(int), clusters=clusters, alpha=alpha)


def _period_parts(rows: list[_Row]) -> list[tuple[str, str, list[_Row]]]:
    """The judge's units by month of their judgment; in halves by date when one month holds them
    all (none with fewer than two units): (kind, key, rows) each."""
    ordered = sorted(rows, key=lambda row: (row.created_at, row.unit_id))
    months: dict[str, list[_Row]] = defaultdict(list)
    for row in ordered:
        months[row.created_at.strftime("%Y-%m")].append(row)
    if len(months) > 1:
        return [(MONTH, key, part) for key, part in sorted(months.items())]
    if len(ordered) >= 2:
        middle = len(ordered) // 2
        return [(HALF, "1", ordered[:middle]), (HALF, "2", ordered[middle:])]
    return []


def periods_of(rows: list[_Row], *, alpha: float) -> list[Period]:
    """The judge's periods (:func:`_period_parts`) with their agreement."""
    return [
        Period(
            kind=kind,
            key=key,
            first=part[0].created_at,
            last=part[-1].created_at,
            agreement=_agreement(part, alpha=alpha),
            n=len(part),
        )
        for kind, key, part in _period_parts(rows)
    ]


def _themes(rows: list[_Row]) -> dict[str, list[_Row]]:
    by_theme: dict[str, list[_Row]] = defaultdict(list)
    for row in rows:
        by_theme[row.theme].append(row)
    return dict(sorted(by_theme.items()))


def _period_drifts(
    judge: Judge, rows: list[_Row], *, alpha: float, part: str
) -> tuple[list[Drift], list[Drift]]:
    """The changes between consecutive periods of ``judge``'s units, overall and per theme (a
    theme's units of the two periods; only when the two periods hold two themes or more)."""
    overall: list[Drift] = []
    themes: list[Drift] = []
    periods = _period_parts(rows)
    for (_kind, before, earlier), (kind, after, later) in zip(periods, periods[1:], strict=False):
        for theme, left, right in [("", earlier, later), *_theme_pairs(earlier, later)]:
            left_agreement, right_agreement = _agreement(left, alpha=alpha), _agreement(right, alpha=alpha)
            if left_agreement is None or right_agreement is None:
                continue
            drift = Drift(
                kind=kind,
                judge=judge.name,
                before=before,
                after=after,
                change=newcombe_difference(right=right_agreement, left=left_agreement),
                n=len(left) + len(right),
                paired=False,
                theme=theme,
                part=part,
                earlier=left_agreement.mean,
                later=right_agreement.mean,
            )
            (themes if theme else overall).append(drift)
    return overall, themes


def _theme_pairs(before: list[_Row], after: list[_Row]) -> list[tuple[str, list[_Row], list[_Row]]]:
    """Per theme, its units on either side; none when the two sides hold one theme (its change
    would be the overall one)."""
    left, right = _themes(before), _themes(after)
    names = sorted(set(left) | set(right))
    if len(names) < 2:
        return []
    return [(name, left.get(name, []), right.get(name, [])) for name in names]


def version_drift(
    *, before: list[_Row], after: list[_Row], alpha: float
) -> tuple[Interval, int, bool, float, float] | None:
    """``after``'s agreement minus ``before``'s: on their common units, paired, when they share
    some; else independent; with the count of units, whether paired, and each side's agreement.
    None when either has no unit."""
    if not before or not after:
        return None
    earlier = {row.unit_id: row for row in before}
    common = [row for row in after if row.unit_id in earlier]
    if common:
        left_rows = [earlier[row.unit_id] for row in common]
        left, right = _agreement(left_rows, alpha=alpha), _agreement(common, alpha=alpha)
        hits_left = np.array([row.y == row.yhat for row in left_rows], dtype=int)
        hits_right = np.array([row.y == row.yhat for row in common], dtype=int)
        tp = int(np.sum(hits_left & hits_right))
        fp = int(np.sum((1 - hits_left) & hits_right))
        fn = int(np.sum(hits_left & (1 - hits_right)))
        tn = int(np.sum((1 - hits_left) & (1 - hits_right)))
        correlation = judge_alignment.phi(tp=tp, fp=fp, fn=fn, tn=tn)
        assert left is not None and right is not None
        change = newcombe_difference(right=right, left=left, correlation=correlation)
        return change, len(common), True, left.mean, right.mean
    left, right = _agreement(before, alpha=alpha), _agreement(after, alpha=alpha)
    assert left is not None and right is not None
    return newcombe_difference(right=right, left=left), len(before) + len(after), False, left.mean, right.mean


def check_part(part: str, *, split: HeldOutSplit | None) -> str:
    """``part`` when it is one of :data:`PARTS` the criterion has (EstimateError on ``part``
    otherwise: a part of a split the criterion has not got)."""
    if part not in PARTS:
        raise EstimateError(f"must be one of {', '.join(PARTS)}, got {part!r}", field="part")
    if split is None and part != held_out.ALL:
        raise EstimateError("this criterion has no held-out split: only 'all'", field="part")
    return part


def _order(judge: Judge, bound: dict[int, int]) -> tuple[Any, ...]:
    """A judge's place among its line's versions: the guidelines version it is bound to, its
    prompt version, its creation, its name."""
    return (_line(judge), bound.get(judge.pk) or 0, judge.prompt_version, judge.created_at, judge.name)


def _prompt_drifts(
    judges: list[Judge], rows_by_judge: dict[int, list[_Row]], *, alpha: float, part: str
) -> tuple[list[Drift], list[Drift]]:
    """The changes between consecutive versions of each line (``judges`` in order, each with
    units), overall and per theme (on each theme's units; only when the two hold two themes or
    more)."""
    overall: list[Drift] = []
    themes: list[Drift] = []
    for earlier, later in zip(judges, judges[1:], strict=False):
        if _line(earlier) != _line(later):
            continue
        before, after = rows_by_judge[earlier.pk], rows_by_judge[later.pk]
        for theme, left, right in [("", before, after), *_theme_pairs(before, after)]:
            found = version_drift(before=left, after=right, alpha=alpha)
            if found is None:
                continue
            change, n, paired, earlier_agreement, later_agreement = found
            drift = Drift(
                kind=PROMPT,
                judge=later.name,
                before=earlier.name,
                after=later.name,
                change=change,
                n=n,
                paired=paired,
                theme=theme,
                part=part,
                earlier=earlier_agreement,
                later=later_agreement,
            )
            (themes if theme else overall).append(drift)
    return overall, themes


def _on(rows_by_judge: dict[int, list[_Row]], part: str) -> dict[int, list[_Row]]:
    """Each judge's rows on ``part`` (all of them for ``all``), judges without any left out."""
    if part == held_out.ALL:
        return rows_by_judge
    kept = {judge: [row for row in rows if row.part == part] for judge, rows in rows_by_judge.items()}
    return {judge: rows for judge, rows in kept.items() if rows}


def _sizes(rows_by_judge: dict[int, list[_Row]]) -> dict[str, Part]:
    """Each part's units with a final human label and a judge's label, and their questions."""
    units: dict[str, set[int]] = defaultdict(set)
    questions: dict[str, set[int]] = defaultdict(set)
    for rows in rows_by_judge.values():
        for row in rows:
            for name in {row.part, held_out.ALL}:
                units[name].add(row.unit_id)
                questions[name].add(row.question)
    names = (held_out.SELECTION, held_out.HELD_OUT, held_out.ALL)
    return {name: Part(name, len(units[name]), len(questions[name])) for name in names}


def compute_judge_alignment(
    *,
    criterion: Criterion,
    alpha: float,
    clusters: str = ANSWER,
    judges: list[Judge] | None = None,
    part: str = held_out.ALL,
    split: HeldOutSplit | None = None,
) -> JudgeAlignmentResult:
    """Every candidate judge of ``criterion`` (``judge_choice.candidates``, or ``judges`` when the
    caller has read them) against the final human labels, by version and period, and the drifts,
    overall and per theme; a constant number of queries.

    ``part`` (:data:`PARTS`) with ``split``, the criterion's held-out split: ``split`` reports the
    judges' figures and their periods' drifts on the held-out part and compares the prompt
    versions on the selection part; ``selection`` or ``held_out`` everything on that part;
    ``all`` (the default) everything on every labelled unit."""
    alpha = check_alpha(alpha)
    clusters = check_clusters(clusters)
    part = check_part(part, split=split)

    def nothing(empty: str) -> JudgeAlignmentResult:
        return JudgeAlignmentResult(criterion, alpha, clusters, [], [], empty=empty, part=part, split=split)

    if is_categorical(criterion):
        return nothing(CATEGORICAL)
    if judges is None:
        judges = judge_choice.candidates(criterion=criterion)
    if not judges:
        return nothing(NO_JUDGE)
    finals = final_labels(criterion=criterion)
    bound = dict(
        JudgePrompt.objects.filter(criterion=criterion, judge__in=judges).values_list(
            "judge_id", "version__number"
        )
    )
    rows_by_judge: dict[int, list[_Row]] = defaultdict(list)
    judgments = (
        Judgment.objects.filter(criterion=criterion, judge__in=judges, status=Judgment.Status.OK)
        .exclude(value__isnull=True)
        .values_list(
            "judge_id",
            "unit_id",
            "value",
            "created_at",
            "unit__theme",
            "unit__answer_id",
            "unit__answer__question_id",
        )
        .order_by("judge_id", "unit_id")
    )
    sides: dict[int, str] = {}
    for judge_id, unit_id, value, created_at, theme, answer_id, question_id in judgments:
        y = finals.get(unit_id)
        if y is None or y not in (0, 1) or value not in (0, 1):
            continue
        cluster = question_id if clusters == QUESTION else answer_id
        side = held_out.ALL
        if split is not None:
            side = sides.get(question_id) or sides.setdefault(
                question_id, held_out.part_of(split=split, question_id=question_id)
            )
        rows_by_judge[judge_id].append(
            _Row(unit_id, theme, cluster, y, value, created_at, part=side, question=question_id)
        )
    if not rows_by_judge:
        return nothing(NO_LABELS)
    sizes = _sizes(rows_by_judge) if split is not None else {}
    figures_part = held_out.HELD_OUT if part == SPLIT else part
    comparisons_part = held_out.SELECTION if part == SPLIT else part
    on_figures = _on(rows_by_judge, figures_part)
    versions: list[JudgeVersion] = []
    drifts: list[Drift] = []
    theme_drifts: list[Drift] = []
    for judge in judges:
        rows = on_figures.get(judge.pk, [])
        if not rows:
            continue
        by_theme = _themes(rows)
        versions.append(
            JudgeVersion(
                judge=judge,
                line=_line(judge),
                guidelines=bound.get(judge.pk),
                prompt_version=judge.prompt_version,
                overall=_align(rows, alpha=alpha),
                themes=[
                    ThemeAlignment(theme, _align(part_rows, alpha=alpha))
                    for theme, part_rows in by_theme.items()
                ],
                periods=periods_of(rows, alpha=alpha),
            )
        )
        overall, themes = _period_drifts(judge, rows, alpha=alpha, part=figures_part)
        drifts += overall
        theme_drifts += themes
    versions.sort(key=lambda v: _order(v.judge, bound))
    on_comparisons = _on(rows_by_judge, comparisons_part)
    ordered = sorted(
        (judge for judge in judges if judge.pk in on_comparisons), key=lambda j: _order(j, bound)
    )
    overall, themes = _prompt_drifts(ordered, on_comparisons, alpha=alpha, part=comparisons_part)
    drifts += overall
    theme_drifts += themes
    drifts.sort(key=lambda drift: (drift.kind != PROMPT, drift.judge, drift.before))
    theme_drifts.sort(key=lambda drift: (drift.kind != PROMPT, drift.judge, drift.before, drift.theme))
    return JudgeAlignmentResult(
        criterion,
        alpha,
        clusters,
        versions,
        drifts,
        theme_drifts=theme_drifts,
        part=part,
        split=split,
        parts=sizes,
    )


def drifted(*, criterion: Criterion, alpha: float) -> list[Drift]:
    """The flagged overall drifts of ``criterion``'s judges (for a gate), on every labelled unit:
    a drift is a check, not a choice, so the held-out split does not restrict it, and the themes'
    drifts, many tests on few units each, are the page's to show, not the gate's to fail on."""
    return compute_judge_alignment(criterion=criterion, alpha=alpha).flagged


def _interval_json(interval: Interval | None) -> dict[str, Any] | None:
    if interval is None:
        return None
    return {
        "value": finite(interval.mean),
        "lo": finite(interval.lo),
        "hi": finite(interval.hi),
        "n": interval.n,
    }


def _alignment_json(alignment: judge_alignment.Alignment) -> dict[str, Any]:
    return {
        "n": alignment.n,
        "clusters": alignment.clusters,
        "confusion": alignment.confusion,
        "human_rate": finite(alignment.human_rate),
        "agreement": _interval_json(alignment.agreement),
        "sensitivity": _interval_json(alignment.sensitivity),
        "specificity": _interval_json(alignment.specificity),
        "kappa": alignment.kappa.as_dict(),
        "saving_factor": alignment.factor.as_dict(),
        "dorner_ceiling": alignment.ceiling.as_dict(),
        "resamples": alignment.resamples,
    }


def judge_alignment_as_json(*, result: JudgeAlignmentResult) -> dict[str, Any]:
    """Everything the page shows, numbers as numbers (None where there is none)."""
    return {
        "campaign": result.criterion.campaign.slug,
        "criterion": result.criterion.name,
        "alpha": result.alpha,
        "clusters": result.clusters,
        "part": result.part,
        "figures_part": result.figures_part,
        "comparisons_part": result.comparisons_part,
        "split": split_json(result),
        "empty": result.empty,
        "judges": [
            {
                "judge": version.judge.name,
                "kind": version.judge.kind,
                "model": version.judge.model,
                "line": version.line,
                "guidelines_version": version.guidelines,
                "prompt_version": version.prompt_version,
                "overall": _alignment_json(version.overall),
                "themes": {theme.theme: _alignment_json(theme.alignment) for theme in version.themes},
                "periods": [
                    {
                        "kind": period.kind,
                        "period": period.key,
                        "first": period.first.isoformat(),
                        "last": period.last.isoformat(),
                        "n": period.n,
                        "agreement": _interval_json(period.agreement),
                    }
                    for period in version.periods
                ],
            }
            for version in result.judges
        ],
        "drifts": [_drift_json(drift) for drift in result.drifts],
        "theme_drifts": [_drift_json(drift) for drift in result.theme_drifts],
    }


def _drift_json(drift: Drift) -> dict[str, Any]:
    return {
        "kind": drift.kind,
        "judge": drift.judge,
        "before": drift.before,
        "after": drift.after,
        "theme": drift.theme or None,
        "part": drift.part,
        "n": drift.n,
        "paired": drift.paired,
        "before_agreement": finite(drift.earlier) if drift.earlier is not None else None,
        "after_agreement": finite(drift.later) if drift.later is not None else None,
        "change": _interval_json(drift.change),
        "flagged": drift.flagged,
    }


def split_json(result: JudgeAlignmentResult) -> dict[str, Any] | None:
    """The held-out split the result read: its seed, share, date, and each part's size."""
    split = result.split
    if split is None:
        return None
    return {
        "seed": split.seed,
        "held_out_share": split.held_out_share,
        "grouped_by": "question",
        "created_at": split.created_at.isoformat(),
        "parts": {
            name: {"units": part.units, "questions": part.questions} for name, part in result.parts.items()
        },
    }
