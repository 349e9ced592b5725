"""The measures' tables for people outside their pages: stability across repetitions as CSV and
as the command's text, versions compared by question as the command's text, the judges
against the humans as CSV, and the plan of several judges as CSV and as the command's text.
Their JSON is each measure's own (``stability_as_json``, ``comparison_as_json``,
``judge_plan.plan_as_json``)."""

from __future__ import annotations

import math
from typing import Any

from annotation.spreadsheets import neutralise_row
from evaluation.designs.judge_plan import CATEGORICAL, NO_HUMAN_COST, NO_JUDGE
from evaluation.measures.comparison import Comparison
from evaluation.measures.judge_alignment import JudgeAlignmentResult
from evaluation.measures.stability import JUDGE, NO_REPETITIONS, NO_VALUES, SINGLE_VALUES, Stability
from inference.numbers import decimal, percent, signed_points

STABILITY_CSV_HEADER = (
    "question",
    "theme",
    "difficulty",
    "answers",
    "rate",
    "spread_sd",
    "min",
    "max",
    "disagree",
    "values",
)


def stability_csv_rows(*, stability: Stability) -> list[list[Any]]:
    """The per-question table as spreadsheet rows, header first, formulas neutralised."""
    rows: list[list[Any]] = [list(STABILITY_CSV_HEADER)]
    for row in stability.questions:
        rows.append(
            neutralise_row(
                [
                    row.external_id,
                    row.theme,
                    row.difficulty,
                    row.n,
                    round(row.rate, 6),
                    "" if math.isnan(row.spread) else round(row.spread, 6),
                    row.least,
                    row.greatest,
                    int(row.disagree),
                    " ".join(f"{value:g}" for value in row.values),
                ]
            )
        )
    return rows


# Why a stability result has nothing to compare, as the command says it (the page words its own).
NOTHING_TO_COMPARE = {
    NO_REPETITIONS: "no question of the campaign has two answers or more: nothing to compare",
    NO_VALUES: "no answer has a value of this measure from this source yet: nothing to compare",
    SINGLE_VALUES: "the values cover one answer per question at most: nothing to compare",
}


def stability_lines(*, stability: Stability) -> list[str]:
    """A plain-text summary: per theme and overall, then the width curve; or why there is
    nothing to compare."""
    s = stability
    source = f"judge {s.judge}" if s.source == JUDGE else s.source
    heading = (
        f"{s.campaign}: {s.measure.kind} {s.measure.name} ({s.level} level), {source}, alpha = {s.alpha:g}"
    )
    if s.empty:
        return [heading, NOTHING_TO_COMPARE[s.empty]]
    lines = [
        heading,
        "",
        f"{'theme':<24} {'questions':>9} {'answers':>7} {'rate':>7} {'interval':>17} "
        f"{'disagree':>9} {'ICC(1)':>7} {'ICC interval':>17}",
    ]
    for group in [*s.themes, s.overall]:
        est = group.estimate
        lines.append(
            f"{group.theme[:24]:<24} {group.questions:>9} {group.answers:>7} {percent(est.mean):>7} "
            f"{'[' + percent(est.shown_lo) + ', ' + percent(est.shown_hi) + ']':>17} "
            f"{percent(group.share_disagreeing):>9} {decimal(group.icc.value):>7} "
            f"{'[' + decimal(group.icc.lo) + ', ' + decimal(group.icc.hi) + ']':>17}"
        )
    lines += ["", f"{'repetitions':>11} {'mean width':>10} {'predicted':>9} {'draws':>5}"]
    for point in s.widths:
        lines.append(
            f"{point.r:>11} {percent(point.mean_width):>10} {percent(point.predicted_width):>9} "
            f"{point.draws:>5}"
        )
    return lines


def comparison_table(*, comparison: Comparison) -> str:
    """The comparison as a plain-text table, one line per estimate, theme and pair."""
    header = (
        "estimate",
        "theme",
        "left",
        "right",
        "left rate",
        "right rate",
        "diff (pts)",
        "interval",
        "p",
        "p Holm",
        "p Bonferroni",
        "",
    )
    lines = [header]
    for row in comparison.rows:
        d = row.difference
        lines.append(
            (
                row.estimate,
                row.theme,
                row.left,
                row.right,
                percent(row.left_value),
                percent(row.right_value),
                signed_points(d.estimate) if d else "—",
                f"[{signed_points(d.lo)}, {signed_points(d.hi)}]" if d else "—",
                f"{d.p_value:.3g}" if d and math.isfinite(d.p_value) else "—",
                f"{d.p_holm:.3g}" if d and math.isfinite(d.p_holm) else "—",
                f"{d.p_bonferroni:.3g}" if d and math.isfinite(d.p_bonferroni) else "—",
                "*" if d and d.significant else "",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    confidence = f"{100 * (1 - comparison.alpha):g}%"
    out = [
        f"{comparison.criterion}: versions paired by question, {confidence} t intervals, "
        f"method {comparison.method}; * = {comparison.adjustment.capitalize()}-adjusted p below alpha",
    ]
    out += [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    ]
    return "\n".join(out)


JUDGE_ALIGNMENT_CSV_HEADER = (
    "judge",
    "kind",
    "model",
    "guidelines_version",
    "prompt_version",
    "theme",
    "n",
    "clusters",
    "tp",
    "fp",
    "fn",
    "tn",
    "agreement",
    "agreement_lo",
    "agreement_hi",
    "sensitivity",
    "sensitivity_lo",
    "sensitivity_hi",
    "specificity",
    "specificity_lo",
    "specificity_hi",
    "kappa",
    "kappa_lo",
    "kappa_hi",
    "saving_factor",
    "dorner_ceiling",
    "part",
)


def _cells(*values: float | None) -> list[Any]:
    return ["" if value is None or not math.isfinite(value) else round(value, 6) for value in values]


def judge_alignment_csv_rows(*, result: JudgeAlignmentResult) -> list[list[Any]]:
    """One row per judge and theme, then the judge overall (theme ``overall``): its counts and
    figures with their bounds, and the part of the held-out split they are on (``held_out``,
    ``selection``, or ``all``), header first, formulas neutralised."""
    rows: list[list[Any]] = [list(JUDGE_ALIGNMENT_CSV_HEADER)]
    for version in result.judges:
        judge = version.judge
        parts = [(theme.theme, theme.alignment) for theme in version.themes] + [("overall", version.overall)]
        for theme, alignment in parts:
            figures: list[Any] = []
            for interval in (alignment.agreement, alignment.sensitivity, alignment.specificity):
                figures += _cells(*((interval.mean, interval.lo, interval.hi) if interval else (None,) * 3))
            kappa = alignment.kappa
            figures += _cells(
                kappa.value, kappa.lo, kappa.hi, alignment.factor.value, alignment.ceiling.value
            )
            counts = alignment.confusion
            rows.append(
                neutralise_row(
                    [
                        judge.name,
                        judge.kind,
                        judge.model,
                        "" if version.guidelines is None else version.guidelines,
                        version.prompt_version,
                        theme,
                        alignment.n,
                        alignment.clusters,
                        counts["tp"],
                        counts["fp"],
                        counts["fn"],
                        counts["tn"],
                        *figures,
                        result.figures_part,
                    ]
                )
            )
    return rows


JUDGE_PLAN_CSV_HEADER = (
    "theme",
    "units",
    "labeled",
    "pilot",
    "judges_and_shares",
    "human_labels",
    "to_draw",
    "halfwidth",
    "cost",
    "best_single_judge",
    "single_judge_human_labels",
    "single_judge_cost",
    "human_only_labels",
    "human_only_cost",
    "saving",
)
NOTHING_PLANNED = {
    CATEGORICAL: "this criterion labels with categories: the planner works on binary criteria",
    NO_JUDGE: "no judge to plan with: run a judge on this criterion first",
    NO_HUMAN_COST: "a human label's cost is not known yet (no label timed, or no hourly rate set)",
}


def _shares(judges: list[dict[str, Any]]) -> str:
    return " ".join(f"{item['judge']}:{item['share']:g}" for item in judges)


def judge_plan_csv_rows(*, data: dict[str, Any]) -> list[list[Any]]:
    """The plan (``judge_plan.plan_as_json``) as spreadsheet rows: one per theme and the totals
    (theme ``total``), then after an empty row the ledger's figures with their sources, header
    first, formulas neutralised."""
    rows: list[list[Any]] = [list(JUDGE_PLAN_CSV_HEADER)]
    for theme in data["themes"]:
        single, alone = theme["best_single_judge"] or {}, theme["human_only"] or {}
        cells = [
            theme["theme"],
            theme["units"],
            theme["labeled"],
            theme["pilot"],
            _shares(theme["judges"]),
            theme["human_labels"],
            theme["to_draw"],
            theme["halfwidth"],
            theme["cost"],
            single.get("judge"),
            single.get("human_labels"),
            single.get("cost"),
            alone.get("human_labels"),
            alone.get("cost"),
            theme["saving"],
        ]
        rows.append(neutralise_row([_blank(cell) for cell in cells]))
    totals = data["totals"]
    total = ["total", "", "", "", "", "", totals["to_draw"], "", totals["cost"], "", ""]
    total += [totals["single_judge_cost"], "", totals["human_only_cost"], totals["saving"]]
    rows.append([_blank(cell) for cell in total])
    rows += [[], ["ledger", "judge", "value", "source", "detail"]]
    ledger = data["ledger"] or {"human": None, "judges": []}
    human = ledger["human"]
    if human is not None:
        detail = (
            f"median_seconds={human['median_seconds']} timed={human['timed']} "
            f"rows_per_unit={human['rows_per_unit']} hourly_rate={human['hourly_rate']}"
        )
        rows.append(["human_label_cost", "", _blank(human["per_label"]), human["source"], detail])
    for cost in ledger["judges"]:
        detail = f"runs={cost['runs']} spend={cost['spend']} judged={cost['judged']}"
        row = ["judge_cost_per_unit", cost["judge"], _blank(cost["per_unit"]), cost["source"], detail]
        rows.append(neutralise_row(row))
    for item in data["left_out"]:
        rows.append(neutralise_row(["left_out", item["judge"], "", item["reason"], ""]))
    return rows


def _blank(value: Any) -> Any:
    return "" if value is None else value


def judge_plan_lines(*, data: dict[str, Any]) -> list[str]:
    """The plan (``judge_plan.plan_as_json``) as the command's text: the ledger, then per theme
    the cheapest plan beside the best single judge and human labels alone, and the totals; or
    why nothing is planned."""
    heading = (
        f"{data['campaign']}: {data['criterion']}, half-width {data['target']:g} per theme, "
        f"alpha = {data['alpha']:g}"
    )
    lines = [heading, ""]
    ledger = data["ledger"]
    if ledger is not None:
        human = ledger["human"]
        source = human["source"] or "no label timed"
        lines.append(
            f"human label: {decimal(human['per_label'], digits=4)} "
            f"({decimal(human['minutes'], digits=2)} min per label, source {source}, "
            f"{human['timed']} timed, {decimal(human['rows_per_unit'], digits=2)} rows per unit, "
            f"hourly rate {decimal(human['hourly_rate'], digits=2)})"
        )
        for cost in ledger["judges"]:
            measured = (
                f"{decimal(cost['per_unit'], digits=6)} per unit ({cost['runs']} runs, "
                f"{decimal(cost['spend'], digits=4)} spent, {cost['judged']} units judged)"
                if cost["per_unit"] is not None
                else "not measured (never run on this criterion)"
            )
            lines.append(f"judge {cost['judge']}: {measured}")
    for item in data["left_out"]:
        lines.append(
            f"judge {item['judge']} left out: its cost is not measured and it has not judged every unit"
        )
    if data["empty"]:
        return [*lines, "", NOTHING_PLANNED[data["empty"]]]
    lines += [
        "",
        f"{'theme':<20} {'units':>6} {'pilot':>5} {'judges and shares':<28} {'labels':>6} "
        f"{'to draw':>7} {'cost':>10} {'single judge':>14} {'humans alone':>12} {'saving':>7}",
    ]
    for theme in data["themes"]:
        if not theme["planned"]:
            lines.append(
                f"{theme['theme'][:20]:<20} {theme['units']:>6} {theme['pilot']:>5} "
                f"not planned: a pilot under {data['min_pilot']} units"
            )
            continue
        single, alone = theme["best_single_judge"], theme["human_only"]
        lines.append(
            f"{theme['theme'][:20]:<20} {theme['units']:>6} {theme['pilot']:>5} "
            f"{_shares(theme['judges'])[:28]:<28} {theme['human_labels']:>6} {theme['to_draw']:>7} "
            f"{decimal(theme['cost'], digits=4):>10} "
            f"{decimal(single['cost'] if single else None, digits=4):>14} "
            f"{decimal(alone['cost'], digits=4):>12} {percent(theme['saving']):>7}"
        )
    totals = data["totals"]
    lines.append(
        f"{'total':<20} {'':>6} {'':>5} {'':<28} {'':>6} {totals['to_draw']:>7} "
        f"{decimal(totals['cost'], digits=4):>10} {decimal(totals['single_judge_cost'], digits=4):>14} "
        f"{decimal(totals['human_only_cost'], digits=4):>12} {percent(totals['saving']):>7}"
    )
    return lines
