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
(``inference.judge_alignment.alignment``): agreement, sensitivity and specificity with Wilson
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
from evaluation.estimates import judge_choice
from evaluation.estimates.params import ANSWER, QUESTION, check_alpha, check_clusters
from evaluation.models import Judge, JudgePrompt, Judgment
from inference import judge_alignment
from inference.intervals import Interval
from inference.numbers import finite
from inference.paired import newcombe_difference

# Why a result has nothing to show ("" when it has something).
CATEGORICAL = "categorical"
NO_JUDGE = "no_judge"
NO_LABELS = "no_labels"

# What a drift compares.
PROMPT = "prompt"
MONTH = "month"
HALF = "half"


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

    @property
    def flagged(self) -> bool:
        return self.change.excludes(0.0)


@dataclass(frozen=True)
class JudgeAlignmentResult:
    criterion: Criterion
    alpha: float
    clusters: str
    judges: list[JudgeVersion]
    drifts: list[Drift]
    empty: str = ""

    @property
    def flagged(self) -> list[Drift]:
        return [drift for drift in self.drifts if drift.flagged]


@dataclass
class _Row:
    unit_id: int
    theme: str
    cluster: int
    y: int
    yhat: int
    created_at: datetime


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


def periods_of(rows: list[_Row], *, alpha: float) -> list[Period]:
    """The judge's units by month of their judgment; in halves by date when one month holds them
    all (none with fewer than two units)."""
    ordered = sorted(rows, key=lambda row: (row.created_at, row.unit_id))
    months: dict[str, list[_Row]] = defaultdict(list)
    for row in ordered:
        months[row.created_at.strftime("%Y-%m")].append(row)
    if len(months) > 1:
        parts = [(MONTH, key, part) for key, part in sorted(months.items())]
    elif len(ordered) >= 2:
        middle = len(ordered) // 2
        parts = [(HALF, "1", ordered[:middle]), (HALF, "2", ordered[middle:])]
    else:
        return []
    return [
        Period(
            kind=kind,
            key=key,
            first=part[0].created_at,
            last=part[-1].created_at,
            agreement=_agreement(part, alpha=alpha),
            n=len(part),
        )
        for kind, key, part in parts
    ]


def version_drift(
    *, before: list[_Row], after: list[_Row], alpha: float
) -> tuple[Interval, int, bool] | None:
    """``after``'s agreement minus ``before``'s: on their common units, paired, when they share
    some; else independent. None when either has no unit."""
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
        return newcombe_difference(right=right, left=left, correlation=correlation), len(common), True
    left, right = _agreement(before, alpha=alpha), _agreement(after, alpha=alpha)
    assert left is not None and right is not None
    return newcombe_difference(right=right, left=left), len(before) + len(after), False


def compute_judge_alignment(
    *, criterion: Criterion, alpha: float, clusters: str = ANSWER, judges: list[Judge] | None = None
) -> JudgeAlignmentResult:
    """Every candidate judge of ``criterion`` (``judge_choice.candidates``, or ``judges`` when the
    caller has read them) against the final human labels, by version and period, and the drifts;
    a constant number of queries."""
    alpha = check_alpha(alpha)
    clusters = check_clusters(clusters)
    if is_categorical(criterion):
        return JudgeAlignmentResult(criterion, alpha, clusters, [], [], empty=CATEGORICAL)
    if judges is None:
        judges = judge_choice.candidates(criterion=criterion)
    if not judges:
        return JudgeAlignmentResult(criterion, alpha, clusters, [], [], empty=NO_JUDGE)
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
    for judge_id, unit_id, value, created_at, theme, answer_id, question_id in judgments:
        y = finals.get(unit_id)
        if y is None or y not in (0, 1) or value not in (0, 1):
            continue
        cluster = question_id if clusters == QUESTION else answer_id
        rows_by_judge[judge_id].append(_Row(unit_id, theme, cluster, y, value, created_at))
    versions: list[JudgeVersion] = []
    drifts: list[Drift] = []
    for judge in judges:
        rows = rows_by_judge.get(judge.pk, [])
        if not rows:
            continue
        by_theme: dict[str, list[_Row]] = defaultdict(list)
        for row in rows:
            by_theme[row.theme].append(row)
        version = JudgeVersion(
            judge=judge,
            line=_line(judge),
            guidelines=bound.get(judge.pk),
            prompt_version=judge.prompt_version,
            overall=_align(rows, alpha=alpha),
            themes=[
                ThemeAlignment(theme, _align(part, alpha=alpha)) for theme, part in sorted(by_theme.items())
            ],
            periods=periods_of(rows, alpha=alpha),
        )
        versions.append(version)
        for earlier, later in zip(version.periods, version.periods[1:], strict=False):
            if earlier.agreement is None or later.agreement is None:
                continue
            drifts.append(
                Drift(
                    kind=later.kind,
                    judge=judge.name,
                    before=earlier.key,
                    after=later.key,
                    change=newcombe_difference(right=later.agreement, left=earlier.agreement),
                    n=earlier.n + later.n,
                    paired=False,
                )
            )
    if not versions:
        return JudgeAlignmentResult(criterion, alpha, clusters, [], [], empty=NO_LABELS)
    versions.sort(
        key=lambda v: (v.line, v.guidelines or 0, v.prompt_version, v.judge.created_at, v.judge.name)
    )
    for earlier_version, later_version in zip(versions, versions[1:], strict=False):
        if earlier_version.line != later_version.line:
            continue
        found = version_drift(
            before=rows_by_judge[earlier_version.judge.pk],
            after=rows_by_judge[later_version.judge.pk],
            alpha=alpha,
        )
        if found is None:
            continue
        change, n, paired = found
        drifts.append(
            Drift(
                kind=PROMPT,
                judge=later_version.judge.name,
                before=earlier_version.judge.name,
                after=later_version.judge.name,
                change=change,
                n=n,
                paired=paired,
            )
        )
    drifts.sort(key=lambda drift: (drift.kind != PROMPT, drift.judge, drift.before))
    return JudgeAlignmentResult(criterion, alpha, clusters, versions, drifts)


def drifted(*, criterion: Criterion, alpha: float) -> list[Drift]:
    """The flagged drifts of ``criterion``'s judges (for a gate)."""
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
        "drifts": [
            {
                "kind": drift.kind,
                "judge": drift.judge,
                "before": drift.before,
                "after": drift.after,
                "n": drift.n,
                "paired": drift.paired,
                "change": _interval_json(drift.change),
                "flagged": drift.flagged,
            }
            for drift in result.drifts
        ],
    }
