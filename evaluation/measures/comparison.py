"""Versions of the assistant compared by question.

Two campaigns that share question ids asked the same questions of two versions of the assistant.
Their rates are then not independent samples: a hard question is hard for both versions, and
comparing them question by question removes that common part from the difference's variance.

Every estimate here is asymptotically linear: theta_hat - theta ~ sum_i psi_i, one contribution
psi_i per unit (answer or sentence). For a Hajek mean psi_i = w_i (x_i - theta_hat) / sum w
(``estimators.hajek_influence``); for PPI++ with its lambda held fixed, the labeled units
contribute the rectifier's psi and the unlabeled ones lam (Yhat_j - mean) / N; a stratified
overall sums (N_k / N) psi over the themes. Summed per question id, the two versions'
contributions give the difference's cluster-robust variance with the question as cluster:

    Var(theta_B - theta_A) = G / (G - 1) sum_q (psi_B,q - psi_A,q)^2

over the G questions of either campaign (a question present on one side only contributes its
present side), and a t interval with G - 1 degrees of freedom. The independent-sample variance,
shown beside it, is the sum of the two sides' own cluster-robust variances.

With more than two versions every pair is compared, and for each estimate and theme the pairs'
p-values are adjusted for their number, by Holm's step-down procedure or, as an option,
Bonferroni's; a pair is marked when its adjusted p-value stays below alpha. A difference whose
variance (or either side's) is zero, such as two rates of 100% with no width, has no p-value and
is never marked.

Its length is two comparisons of versions that share their reading of campaigns and criteria: by
question, and as independent samples.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import Count, Sum
from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from annotation.models import Campaign, Criterion, Question, Unit
from annotation.sampling.current import current_sample
from evaluation import page_cache
from evaluation.errors import ComparisonError, EstimateError
from evaluation.estimates import inputs, judge_choice, params
from evaluation.estimates.params import OVERALL
from evaluation.estimates.report import GroupEstimate, Report
from evaluation.measures import automatic, overlap
from evaluation.measures.reference_answers import reference_linears
from evaluation.models import Judge, Judgment
from inference.intervals import Interval
from inference.numbers import finite
from inference.paired import (
    ADJUSTMENTS,
    BONFERRONI,
    HOLM,
    NAN,
    Linear,
    PairedDifference,
    adjusted,
    difference,
    mean_linear,
    paired_difference,
    ppi_linear,
    rate_linear,
    stratified,
)

HUMAN = "human"


JUDGE = "judge"


PPI = "ppi"


ESTIMATES: tuple[str, ...] = (HUMAN, JUDGE, PPI)
# The automatic metrics, then the answers against their reference answers, compared beside them.
COMPARED_METRICS: tuple[str, ...] = (*automatic.METRICS, *overlap.MEASURES)


def theme_linears(
    *,
    rows: list[tuple[inputs.Labeled, str]],
    judged: dict[str, tuple[int, int]],
    method: str,
    alpha: float = 0.05,
) -> dict[str, Linear]:
    """Human-only, judge-only and PPI++ of one theme: ``rows`` its labeled units with their
    question ids, ``judged`` question -> (ok judgments, ones) over all its units. The estimates
    are those of ``estimates.compute_report`` (same weights, same lambdas, held fixed, the same
    floors on their variances: ``inference.paired.mean_linear`` and ``ppi_linear``)."""
    out: dict[str, Linear] = {JUDGE: rate_linear(judged)}
    if not rows:
        return {HUMAN: NAN, JUDGE: out[JUDGE], PPI: NAN}
    weighted = method == "robust" and all(row.pi is not None for row, _ in rows)

    def weights(chosen: list[tuple[inputs.Labeled, str]]) -> np.ndarray | None:
        return np.array([1.0 / float(row.pi or 1.0) for row, _ in chosen]) if weighted else None

    out[HUMAN] = mean_linear(
        values=np.array([row.y for row, _ in rows], dtype=float),
        questions=[q for _, q in rows],
        answers=np.array([row.answer_id for row, _ in rows]),
        w=weights(rows),
        alpha=alpha,
        floored=method == "robust",
    )
    paired = [(row, q) for row, q in rows if row.yhat is not None]
    if not paired:
        out[PPI] = NAN
        return out
    out[PPI] = ppi_linear(
        y=np.array([row.y for row, _ in paired], dtype=float),
        yhat=np.array([row.yhat for row, _ in paired], dtype=float),
        questions=[q for _, q in paired],
        answers=np.array([row.answer_id for row, _ in paired]),
        judged=judged,
        w=weights(paired),
        method=method,
        alpha=alpha,
    )
    return out


def version_estimates(
    *, criterion: Criterion, judge: Judge, method: str, alpha: float = 0.05
) -> dict[str, dict[str, Linear]]:
    """One version's human-only, judge-only and PPI++ estimates of ``criterion`` with ``judge``,
    per theme and ``overall`` (stratified by the themes' unit counts), decomposed by question id:
    estimate -> theme -> :class:`Linear`. Kept in the page cache (``evaluation.page_cache``)
    under what they are computed from (``page_cache.estimates_key``), the method and alpha."""
    with page_cache.one_read():
        key = page_cache.estimates_key(criterion=criterion, judge=judge)
        return page_cache.cached(
            "version_estimates",
            None if key is None else [*key, method, alpha],
            lambda: _version_estimates(criterion=criterion, judge=judge, method=method, alpha=alpha),
        )


def _counted_by_question(
    *, criterion: Criterion, judge: Judge
) -> tuple[dict[str, int], dict[str, dict[str, tuple[int, int]]]]:
    """The criterion's units per theme, and the judge's ok labels of them per theme and question
    id: (count, ones)."""
    sizes = dict(
        Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level)
        .values_list("theme")
        .annotate(n=Count("id"))
        .order_by()
    )
    judged: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for row in (
        Judgment.objects.filter(
            judge=judge, criterion=criterion, status=Judgment.Status.OK, unit__level=criterion.level
        )
        .values("unit__theme", "unit__answer__question__external_id")
        .annotate(n=Count("id"), ones=Sum("value"))
        .order_by()
    ):
        judged[row["unit__theme"]][row["unit__answer__question__external_id"]] = (
            row["n"],
            int(row["ones"] or 0),
        )
    return sizes, dict(judged)


def _version_estimates(
    *, criterion: Criterion, judge: Judge, method: str, alpha: float
) -> dict[str, dict[str, Linear]]:
    campaign_id = criterion.campaign_id
    # Kept apart from the estimates, under what alone moves them (a label does not).
    sizes, judged = page_cache.cached(
        "counted_by_question",
        page_cache.judge_counts_key(criterion=criterion, judge=judge),
        lambda: _counted_by_question(criterion=criterion, judge=judge),
    )
    sample = current_sample(criterion=criterion) if method == "robust" else None
    labeled = inputs.labeled_units(criterion=criterion, judge=judge, sample=sample)
    # The labelled units' question ids, from the campaign's questions (one query, whatever the
    # number of labels).
    question_of: dict[int, str] = (
        dict(Question.objects.filter(campaign_id=campaign_id).values_list("id", "external_id"))
        if labeled
        else {}
    )
    by_theme: dict[str, list[tuple[inputs.Labeled, str]]] = defaultdict(list)
    for theme, _difficulty, unit in sorted(labeled.values(), key=lambda item: item[2].unit_id):
        by_theme[theme].append((unit, question_of[unit.question_id]))
    themes = sorted(set(sizes) | set(judged) | set(by_theme))
    result: dict[str, dict[str, Linear]] = {name: {} for name in ESTIMATES}
    for theme in themes:
        for name, linear in theme_linears(
            rows=by_theme.get(theme, []), judged=judged.get(theme, {}), method=method, alpha=alpha
        ).items():
            result[name][theme] = linear
    for name in ESTIMATES:
        result[name][OVERALL] = stratified([(result[name][theme], sizes.get(theme, 0)) for theme in themes])
    return result


def metric_estimates(*, campaign: Campaign) -> dict[str, dict[str, Linear]]:
    """The automatic metrics of ``campaign`` per theme and ``overall`` (pooled over the themes,
    as ``metrics.overall_metrics``), decomposed by question id: metric -> theme -> Linear."""
    per: dict[str, dict[str, dict[str, tuple[int, int]]]] = defaultdict(lambda: defaultdict(dict))
    for (metric, theme, question), (n, ones) in automatic.question_counts(campaign=campaign).items():
        per[metric][theme][question] = (n, ones)
    result: dict[str, dict[str, Linear]] = {}
    for metric, themes in per.items():
        result[metric] = {theme: rate_linear(counts) for theme, counts in sorted(themes.items())}
        pooled: dict[str, tuple[int, int]] = {}
        for counts in themes.values():
            for question, (n, ones) in counts.items():
                before = pooled.get(question, (0, 0))
                pooled[question] = (before[0] + n, before[1] + ones)
        result[metric][OVERALL] = rate_linear(pooled)
    return result


@dataclass(frozen=True)
class Version:
    """One version of the assistant: its campaign, its criterion of the compared name, its judge."""

    campaign: Campaign
    criterion: Criterion
    judge: Judge


@dataclass(frozen=True)
class Row:
    """One estimate (``human``, ``judge``, ``ppi`` or a metric's name) of one theme, for one pair
    of versions (``left``, ``right``: campaign names); ``difference`` is right - left."""

    estimate: str
    theme: str
    left: str
    right: str
    left_value: float
    right_value: float
    difference: PairedDifference | None


@dataclass(frozen=True)
class Comparison:
    """Every pair of versions compared by question, per estimate and theme (``overall`` last)."""

    criterion: str
    alpha: float
    method: str
    versions: list[Version]
    shared_questions: dict[tuple[str, str], int]
    rows: list[Row] = field(default_factory=list)
    # How the pairs' p-values are adjusted for their number (``inference.paired.ADJUSTMENTS``).
    adjustment: str = HOLM

    def rows_of(self, estimate: str) -> list[Row]:
        return [row for row in self.rows if row.estimate == estimate]

    @property
    def sections(self) -> list[tuple[str, list[Row]]]:
        """(estimate, its rows) for PPI++, human-only, judge-only, then each metric compared."""
        names = [PPI, HUMAN, JUDGE, *self.metric_names]
        return [(name, self.rows_of(name)) for name in names if self.rows_of(name)]

    @property
    def metric_names(self) -> list[str]:
        return [name for name in COMPARED_METRICS if any(row.estimate == name for row in self.rows)]


def question_ids(*, campaign: Campaign) -> set[str]:
    """The external ids of the campaign's questions."""
    return set(Question.objects.filter(campaign=campaign).values_list("external_id", flat=True))


def shares_questions(*, left: Campaign, right: Campaign) -> bool:
    """Whether two campaigns have at least one question id in common (then they compare by question)."""
    return bool(question_ids(campaign=left) & question_ids(campaign=right))


def by_question(*, campaigns: Sequence[Campaign]) -> bool:
    """Whether these campaigns are compared by question: more than two versions always are (and
    are refused by :func:`compare_versions` when two of them share no question); two are when they
    share a question id, and are otherwise independent samples."""
    if len(campaigns) != 2:
        return True
    return shares_questions(left=campaigns[0], right=campaigns[1])


def versions_for(
    *,
    campaigns: Sequence[Campaign],
    criterion: str,
    judges: Sequence[Judge | None] | None = None,
    judge_name: str = "",
) -> list[Version]:
    """The versions to compare: each campaign's criterion named ``criterion`` and its judge (the
    one given in ``judges``, else the one named ``judge_name``, else the criterion's default
    judge: ``judge_choice``).
    ComparisonError on field ``criterion`` naming the campaign that lacks it, on ``judge`` when a
    campaign has no judge to pick, on ``other`` when a campaign is given twice."""
    names = [c.name for c in campaigns]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ComparisonError(
            refusal(_("campaign %(campaign)s is given more than once"), campaign=repr(repeated[0])),
            field="other",
        )
    versions: list[Version] = []
    for position, campaign in enumerate(campaigns):
        found = Criterion.objects.filter(campaign=campaign, name=criterion).first()
        if found is None:
            raise ComparisonError(
                refusal(
                    _("%(criterion)s is not a criterion of campaign %(campaign)s"),
                    criterion=repr(criterion),
                    campaign=repr(campaign.name),
                ),
                field="criterion",
            )
        judge = judges[position] if judges is not None else None
        if judge is None:
            try:
                judge = judge_choice.require_judge(criterion=found, name=judge_name)
            except EstimateError as exc:
                raise ComparisonError(exc.reason, field="judge") from None
        versions.append(Version(campaign=campaign, criterion=found, judge=judge))
    return versions


def compare_versions(
    *,
    versions: Sequence[Version],
    alpha: float = 0.05,
    method: str = "robust",
    adjustment: str = HOLM,
    metrics: bool = True,
) -> Comparison:
    """Every pair of ``versions`` (in the order given: each earlier one on the left) compared by
    question on the human-only, judge-only and PPI++ estimates of their criterion and on the
    automatic metrics and the answers' exact match, token F1 and ROUGE-L against their reference
    answers (unless ``metrics`` is False: the report's change against the previous version reads
    its criterion only), per theme and overall, the pairs' p-values adjusted for
    their number by Holm's procedure (the default) or Bonferroni's (``adjustment``).

    ComparisonError (nothing is written anywhere) on field ``alpha`` or ``method`` when bad, on
    ``other`` with fewer than two versions or when two campaigns have no question id in common."""
    try:
        params.check_alpha(alpha)
        params.check_method(method)
    except EstimateError as exc:
        raise ComparisonError(exc.reason, field=exc.field) from None
    if adjustment not in ADJUSTMENTS:
        raise ComparisonError(
            refusal(
                _("%(adjustment)s is not one of %(choices)s"),
                adjustment=repr(adjustment),
                choices=", ".join(ADJUSTMENTS),
            ),
            field="adjustment",
        )
    if len(versions) < 2:
        raise ComparisonError(_("compare needs at least two campaigns"), field="other")
    ids = {v.campaign.pk: question_ids(campaign=v.campaign) for v in versions}
    shared: dict[tuple[str, str], int] = {}
    for a, b in itertools.combinations(versions, 2):
        common = len(ids[a.campaign.pk] & ids[b.campaign.pk])
        if not common:
            raise ComparisonError(
                refusal(
                    _(
                        "campaigns %(left)s and %(right)s have no question id in common: "
                        "they cannot be compared by question"
                    ),
                    left=repr(a.campaign.name),
                    right=repr(b.campaign.name),
                ),
                field="other",
            )
        shared[(a.campaign.name, b.campaign.name)] = common
    per_version: list[dict[str, dict[str, Linear]]] = []
    for v in versions:
        values = version_estimates(criterion=v.criterion, judge=v.judge, method=method, alpha=alpha)
        if metrics:
            values.update(metric_estimates(campaign=v.campaign))
            values.update(reference_linears(campaign=v.campaign))
        per_version.append(values)
    names = [*ESTIMATES, *[m for m in COMPARED_METRICS if any(m in values for values in per_version)]]
    rows: list[Row] = []
    for name in names:
        themes = sorted(
            {theme for values in per_version for theme in values.get(name, {}) if theme != OVERALL}
        )
        for theme in [*themes, OVERALL]:
            group: list[Row] = []
            for (i, a), (j, b) in itertools.combinations(enumerate(versions), 2):
                left = per_version[i].get(name, {}).get(theme, NAN)
                right = per_version[j].get(name, {}).get(theme, NAN)
                group.append(
                    Row(
                        estimate=name,
                        theme=theme,
                        left=a.campaign.name,
                        right=b.campaign.name,
                        left_value=left.estimate,
                        right_value=right.estimate,
                        difference=paired_difference(left=left, right=right, alpha=alpha),
                    )
                )
            p_values = [row.difference.p_value if row.difference else math.nan for row in group]
            by = {method: adjusted(p_values, method=method) for method in ADJUSTMENTS}
            rows.extend(
                replace(
                    row,
                    difference=replace(
                        row.difference,
                        p_adjusted=by[adjustment][i],
                        p_holm=by[HOLM][i],
                        p_bonferroni=by[BONFERRONI][i],
                    ),
                )
                if row.difference
                else row
                for i, row in enumerate(group)
            )
    return Comparison(
        criterion=versions[0].criterion.name,
        alpha=alpha,
        method=method,
        versions=list(versions),
        shared_questions=shared,
        rows=rows,
        adjustment=adjustment,
    )


def comparison_as_json(*, comparison: Comparison) -> dict[str, Any]:
    """The comparison as a JSON-ready dict (NaN becomes None)."""
    rows = []
    for row in comparison.rows:
        d = row.difference
        rows.append(
            {
                "estimate": row.estimate,
                "theme": row.theme,
                "left": row.left,
                "right": row.right,
                "left_value": finite(row.left_value),
                "right_value": finite(row.right_value),
                "difference": finite(d.estimate) if d else None,
                "ci": [d.lo, d.hi] if d else None,
                "se": d.se if d else None,
                "independent_se": d.independent_se if d else None,
                "df": d.df if d else None,
                "questions": d.questions if d else None,
                "shared_questions": d.shared if d else None,
                "p_value": finite(d.p_value) if d else None,
                "p_adjusted": finite(d.p_adjusted) if d else None,
                "p_holm": finite(d.p_holm) if d else None,
                "p_bonferroni": finite(d.p_bonferroni) if d else None,
                "significant": d.significant if d else False,
                "degenerate": d.degenerate if d else None,
            }
        )
    return {
        "criterion": comparison.criterion,
        "alpha": comparison.alpha,
        "method": comparison.method,
        "adjustment": comparison.adjustment,
        "paired_by": "question",
        "versions": [{"campaign": v.campaign.name, "judge": v.judge.name} for v in comparison.versions],
        "shared_questions": [
            {"left": left, "right": right, "questions": n}
            for (left, right), n in comparison.shared_questions.items()
        ],
        "rows": rows,
    }


@dataclass(frozen=True)
class ThemeComparison:
    theme: str
    left: GroupEstimate | None
    right: GroupEstimate | None
    difference: Interval | None


def compare_reports(*, left: Report, right: Report) -> list[ThemeComparison]:
    """The two reports' PPI++ estimates theme by theme (themes of either, by name), then overall."""
    if left.alpha != right.alpha:
        raise ValueError("the two reports must use the same alpha")
    lefts = {group.theme: group for group in left.themes}
    rights = {group.theme: group for group in right.themes}
    rows: list[ThemeComparison] = []
    pairs = [(theme, lefts.get(theme), rights.get(theme)) for theme in sorted(set(lefts) | set(rights))]
    pairs.append(("overall", left.overall, right.overall))
    for theme, a, b in pairs:
        diff = difference(left=a.ppi, right=b.ppi, alpha=left.alpha) if a and b else None
        rows.append(ThemeComparison(theme=theme, left=a, right=b, difference=diff))
    return rows


# What a snapshot keeps of its estimates for the versions' comparison (its ``by_question``): the
# overall human-only, judge-only and PPI++ estimates decomposed by question, so that two versions'
# snapshots give their difference paired by question without reading a label again.


def overall_by_question(
    *, criterion: Criterion, judge: Judge, method: str, alpha: float
) -> dict[str, Linear]:
    """The overall row of :func:`version_estimates`: each estimate (``human``, ``judge``, ``ppi``)
    of ``criterion`` with ``judge``, decomposed by question id."""
    values = version_estimates(criterion=criterion, judge=judge, method=method, alpha=alpha)
    return {name: values[name][OVERALL] for name in ESTIMATES}


def linears_as_json(linears: dict[str, Linear]) -> dict[str, Any]:
    """Estimates decomposed by question as JSON-ready data (one that is NaN, or holds a
    contribution that is not finite, becomes None)."""
    data: dict[str, Any] = {}
    for name, linear in linears.items():
        parts = list(linear.contributions.values())
        if not (math.isfinite(linear.estimate) and math.isfinite(linear.floor) and np.isfinite(parts).all()):
            data[name] = None
            continue
        data[name] = {
            "estimate": linear.estimate,
            "contributions": {question: float(value) for question, value in linear.contributions.items()},
            "n": linear.n,
            "floor": linear.floor,
        }
    return data


def linears_from_json(data: dict[str, Any] | None) -> dict[str, Linear]:
    """:func:`linears_as_json` read back (None, or an estimate it lacks: NaN)."""
    linears: dict[str, Linear] = {}
    for name in ESTIMATES:
        item = (data or {}).get(name)
        linears[name] = (
            Linear(
                estimate=float(item["estimate"]),
                contributions={str(q): float(v) for q, v in item["contributions"].items()},
                n=int(item["n"]),
                floor=float(item["floor"]),
            )
            if item
            else NAN
        )
    return linears


def version_difference(*, previous: Linear, current: Linear, alpha: float) -> PairedDifference | None:
    """``current - previous`` paired by question, as :func:`compare_versions` gives it for two
    versions (Holm's adjustment over one pair leaves the p-value as it is); None when either
    estimate is missing."""
    found = paired_difference(left=previous, right=current, alpha=alpha)
    if found is None:
        return None
    p = adjusted([found.p_value], method=HOLM)[0]
    return replace(
        found, p_adjusted=p, p_holm=p, p_bonferroni=adjusted([found.p_value], method=BONFERRONI)[0]
    )


def sharing_questions(*, campaigns: Sequence[int], others: Sequence[int]) -> set[tuple[int, int]]:
    """The pairs (campaign, other), ``campaign`` among ``campaigns`` and ``other`` among
    ``others`` (ids), two campaigns that share at least one question id. One query (the join
    reads the questions' (campaign, external id) index)."""
    if not campaigns or not others:
        return set()
    table = Question._meta.db_table
    mine = ", ".join(["%s"] * len(campaigns))
    theirs = ", ".join(["%s"] * len(others))
    sql = (
        f"SELECT DISTINCT a.campaign_id, b.campaign_id FROM {table} a JOIN {table} b"
        " ON b.external_id = a.external_id AND b.campaign_id <> a.campaign_id"
        f" WHERE a.campaign_id IN ({mine}) AND b.campaign_id IN ({theirs})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*campaigns, *others])
        return {(int(a), int(b)) for a, b in cursor.fetchall()}


def previous_versions(
    *, campaigns: Sequence[Campaign], candidates: Sequence[Campaign], criteria: dict[int, set[str]]
) -> dict[tuple[int, str], Campaign]:
    """The previous version of the assistant for each criterion of each of ``campaigns``: among
    ``candidates`` (the campaigns the reader may compare with), the latest created before the
    campaign that shares a question id with it and has a criterion of the same name (ties: by
    name). ``criteria``: the names of each campaign's and candidate's criteria, by campaign id.
    ``{(campaign id, criterion name): previous campaign}``, the criteria without one left out.
    One query (:func:`sharing_questions`)."""
    pairs = sharing_questions(campaigns=[c.pk for c in campaigns], others=[c.pk for c in candidates])
    found: dict[tuple[int, str], Campaign] = {}
    for campaign in campaigns:
        earlier = sorted(
            (c for c in candidates if c.created_at < campaign.created_at and (campaign.pk, c.pk) in pairs),
            key=lambda c: c.name,
        )
        earlier.sort(key=lambda c: c.created_at, reverse=True)
        for name in sorted(criteria.get(campaign.pk, ())):
            previous = next((c for c in earlier if name in criteria.get(c.pk, ())), None)
            if previous is not None:
                found[(campaign.pk, name)] = previous
    return found
