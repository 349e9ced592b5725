"""Estimates of a criterion with named categories: one binary report per category and per group.

A categorical label is nominal: its categories' numbers are names, never averaged. What is
estimated is the rate of each category, and of each group of categories, per theme: the mean of
its 0/1 indicator (``annotation.criteria.categories.indicator_array``), human-only, judge-only and PPI++,
with the same estimators, intervals and notes as a binary criterion (``evaluation.estimates.report``).

The PPI++ estimates of one group of units share one lambda across the categories
(``estimators.joint_lambda``): theta_k = lambda mean(Yhat_unl_k) + mean(Y_k - lambda Yhat_k)
sums over k to 1 exactly as the indicators do, and a group's estimate is the sum of its
categories'. With a lambda per category they would not (each lambda tunes its own coordinate).
With the study method this lambda is ppi_py's own on the one-hot (n x K) arrays (the lambda that
minimises the summed variance, Angelopoulos et al. 2023, PPI++ section 6), so every category's
numbers equal ``ppi_py.ppi_mean_ci`` on its indicator arrays with that lambda. A point estimate
that leaves [0, 1] is shown clipped (with a note), and only then can the sum differ from 1.

Agreement: the K x K confusion matrix of final human label (rows) by judge label (columns) on
the units both labeled, its observed agreement, chance agreement sum_k p_h(k) p_j(k), and Cohen's
kappa (``inference.reliability.agreement``), per theme and overall.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from annotation.criteria.categories import Category, Indicator, categories_of, groups_of, indicators
from annotation.models import Criterion
from evaluation.estimates.inputs import EstimateInputs, load_inputs
from evaluation.estimates.params import OVERALL
from evaluation.estimates.report import GroupEstimate, Report, build_report
from evaluation.models import Judge
from inference.reliability.agreement import cohen_kappa


@dataclass(frozen=True)
class Confusion:
    """Final human labels (rows) by judge labels (columns) of one theme, or ``overall``."""

    theme: str
    values: list[int]
    matrix: list[list[int]]
    n: int
    observed: float
    chance: float
    kappa: float


@dataclass(frozen=True)
class IndicatorReport:
    """The estimates of one category or group: a binary report of its indicator."""

    indicator: Indicator
    report: Report


@dataclass(frozen=True)
class CategoricalReport:
    campaign: str
    criterion: str
    level: str
    judge: str
    alpha: float
    method: str
    sample_id: int | None
    categories: list[Category]
    groups: dict[str, list[int]]
    estimates: list[IndicatorReport]  # categories by value, then groups
    confusion: list[Confusion]  # themes by name, then overall
    versions: dict[str, Any]

    @property
    def themes(self) -> list[str]:
        return [group.theme for group in self.estimates[0].report.themes] if self.estimates else []


def compute_categorical_report(
    *,
    criterion: Criterion,
    judge: Judge,
    alpha: float = 0.05,
    method: str = "robust",
    by_difficulty: bool = False,
) -> CategoricalReport:
    """Per category and per group of ``criterion`` (categorical), per theme and overall (and per
    theme x difficulty with ``by_difficulty``): human-only, judge-only and PPI++ rates with their
    intervals, plus the human x judge confusion matrices. The database is read once for all the
    indicators. Raises EstimateError as ``compute_report`` does (bad method, alpha, judge)."""
    values = tuple(category.value for category in categories_of(criterion))
    inputs = load_inputs(criterion=criterion, judge=judge, alpha=alpha, method=method, values=values)
    made = [
        IndicatorReport(
            indicator=indicator,
            report=build_report(
                inputs=inputs, by_difficulty=by_difficulty, positive=indicator.values, categories=values
            ),
        )
        for indicator in indicators(criterion)
    ]
    first = made[0].report
    return CategoricalReport(
        campaign=first.campaign,
        criterion=first.criterion,
        level=first.level,
        judge=first.judge,
        alpha=alpha,
        method=method,
        sample_id=first.sample_id,
        categories=categories_of(criterion),
        groups=groups_of(criterion),
        estimates=made,
        confusion=confusions(inputs=inputs, values=list(values)),
        versions=first.versions,
    )


def confusion_of(*, theme: str, pairs: list[tuple[int, int]], values: list[int]) -> Confusion:
    """The confusion matrix of (human, judge) ``pairs`` over ``values``, with observed agreement,
    chance agreement and Cohen's kappa (NaN where undefined: no pairs, or chance certain)."""
    index = {value: position for position, value in enumerate(values)}
    matrix = [[0] * len(values) for _ in values]
    for human, judged in pairs:
        matrix[index[human]][index[judged]] += 1
    n = len(pairs)
    if not n:
        return Confusion(
            theme=theme, values=values, matrix=matrix, n=0, observed=math.nan, chance=math.nan, kappa=math.nan
        )
    observed = sum(matrix[k][k] for k in range(len(values))) / n
    chance = sum(sum(matrix[k]) * sum(row[k] for row in matrix) for k in range(len(values))) / (n * n)
    kappa = cohen_kappa([human for human, _ in pairs], [judged for _, judged in pairs])
    return Confusion(
        theme=theme,
        values=values,
        matrix=matrix,
        n=n,
        observed=observed,
        chance=chance,
        kappa=math.nan if kappa is None else kappa,
    )


def confusions(*, inputs: EstimateInputs, values: list[int]) -> list[Confusion]:
    """One confusion matrix per theme (by name), then the overall one."""
    by_theme: dict[str, list[tuple[int, int]]] = defaultdict(list)
    themes = {theme for theme, _ in inputs.sizes} | {theme for theme, _, _ in inputs.labeled.values()}
    for theme, _, row in sorted(inputs.labeled.values(), key=lambda item: item[2].unit_id):
        if row.yhat is not None:
            by_theme[theme].append((row.y, int(row.yhat)))
    made = [
        confusion_of(theme=theme, pairs=by_theme.get(theme, []), values=values) for theme in sorted(themes)
    ]
    every = [pair for theme in sorted(by_theme) for pair in by_theme[theme]]
    return [*made, confusion_of(theme=OVERALL, pairs=every, values=values)]


@dataclass(frozen=True)
class ThemeTable:
    """What the report page shows of one theme (or ``overall``): a row per category and group
    (its indicator and its estimates), and the confusion matrix with rows named."""

    theme: str
    rows: list[tuple[Indicator, GroupEstimate]]
    confusion: Confusion
    matrix: list[tuple[Category, list[int]]]


def theme_tables(*, report: CategoricalReport) -> list[ThemeTable]:
    """The report regrouped by theme, themes by name then overall."""
    by_value = {category.value: category for category in report.categories}
    confusion = {item.theme: item for item in report.confusion}
    names = report.themes
    tables = []
    for position, theme in enumerate([*names, OVERALL]):
        rows = [
            (
                item.indicator,
                item.report.overall if theme == OVERALL else item.report.themes[position],
            )
            for item in report.estimates
        ]
        found = confusion.get(theme) or confusion_of(theme=theme, pairs=[], values=list(by_value))
        tables.append(
            ThemeTable(
                theme=theme,
                rows=rows,
                confusion=found,
                matrix=[
                    (by_value[value], row) for value, row in zip(found.values, found.matrix, strict=True)
                ],
            )
        )
    return tables
