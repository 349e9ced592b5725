"""A campaign's evidence coverage and retrieval ranking metrics, per theme and overall.

Reads the questions' gold evidence (``Question.gold_evidence``), each answer's retrieved chunks
in rank order and, for the calibration, the final human labels of one answer-level criterion;
the arithmetic is in ``evaluation.measures.coverage`` and ``evaluation.measures.retrieval``. See
docs/evidence.md for the measures, their formulas and intervals.

Its length is two measures read once: evidence coverage and retrieval ranking share the
questions' gold evidence and the answers' ranked chunks.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from typing import Any

import numpy as np
from django.db.models import Exists, OuterRef
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, refusal
from annotation.models import AnswerSource, Campaign, Criterion, Label, Level, Question, Unit
from annotation.spreadsheets import Writable, neutralise_row
from annotation.workflow.state import final_labels
from evaluation import page_cache
from evaluation.estimates.params import OVERALL
from evaluation.measures.coverage import (
    ATTEST,
    DEFAULT_BUDGETS,
    Conventions,
    ShareBin,
    SuffixAutomaton,
    Threshold,
    category_shares,
    coverage_at_budgets,
    fit_threshold,
    prepared,
)
from evaluation.measures.retrieval import DEFAULT_KS, metric_names, ranking_metrics
from inference.estimators.bootstrap import Mean, question_bootstrap_means
from inference.intervals import check_alpha

SHARE_BINS = 10
_UNSEEN = object()
# Retrieved chunks read per round trip of the streamed query.
SOURCES_CHUNK = 5000


class EvidenceError(FieldError):
    """A request the evidence report refuses; ``field`` names the option at fault."""


@dataclass(frozen=True)
class Calibration:
    """What the coverage score at ``budget`` says about the categories of ``criterion``: the
    share of each category along the sorted scores, and the two fitted thresholds."""

    criterion: str
    budget: int
    categories: list[tuple[int, str]]
    insufficient: int
    correct: int
    labelled: int
    bins: list[ShareBin]
    lower: Threshold  # h: below it, likely "not enough information"
    upper: Threshold  # k: above it, likely "fully correct"


@dataclass
class EvidenceReport:
    campaign: Campaign
    budgets: list[int]
    ks: list[int]
    alpha: float
    # Theme (and OVERALL, last) -> one Mean per budget.
    coverage: dict[str, list[Mean]] = field(default_factory=dict)
    # Theme (and OVERALL, last) -> metric name -> Mean.
    retrieval: dict[str, dict[str, Mean]] = field(default_factory=dict)
    questions_with_passages: int = 0
    questions_with_chunk_ids: int = 0
    calibration: Calibration | None = None
    conventions: Conventions = ATTEST

    @property
    def metrics(self) -> list[str]:
        return metric_names(self.ks)


def answer_criteria(*, campaign: Campaign) -> list[Criterion]:
    """The campaign's answer-level criteria by name, each with ``has_human_labels`` (any human
    label, imported or made in the app; one query)."""
    labels = Label.objects.filter(criterion=OuterRef("pk"), value__isnull=False)
    return list(
        campaign.criteria.filter(level=Level.ANSWER)
        .annotate(has_human_labels=Exists(labels))
        .order_by("name")
    )


def criterion_categories(criterion: Criterion) -> list[tuple[int, str]]:
    """The (value, name) of each category a criterion's labels take: its named categories when
    it has them, else 0 and 1."""
    categories = getattr(criterion, "categories", None)
    if getattr(criterion, "kind", "binary") == "categorical" and categories:
        return [
            (int(c["value"]), str(c.get("title") or c.get("name") or c.get("key") or c["value"]))
            for c in categories
        ]
    return [(0, "0"), (1, "1")]


def _refuse(field: str, message: str | Promise, **params: Any) -> EvidenceError:
    return EvidenceError(field, refusal(message, **params) if params else message)


def _gold(items: object) -> tuple[list[str], set[str]]:
    """The passage texts and the chunk ids of a question's stored gold evidence."""
    texts: list[str] = []
    ids: set[str] = set()
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            if isinstance(item.get("text"), str) and item["text"]:
                texts.append(item["text"])
            if item.get("chunk_id") not in (None, ""):
                ids.add(str(item["chunk_id"]))
    return texts, ids


def _means_by_theme(
    *, rows: Sequence[tuple[str, int, Sequence[float | None]]], width: int, alpha: float
) -> dict[str, list[Mean]]:
    """(theme, question pk, values) per answer -> theme and OVERALL -> a Mean per value. A value
    None (an answer left out of a budget's mean) leaves that answer out of that column alone."""
    themes = sorted({theme for theme, _, _ in rows})
    result: dict[str, list[Mean]] = {}
    for theme in [*themes, OVERALL]:
        chosen = [r for r in rows if theme == OVERALL or r[0] == theme]
        if all(None not in r[2] for r in chosen):
            values = np.array([r[2] for r in chosen], dtype=float).reshape(len(chosen), width)
            result[theme] = question_bootstrap_means(
                values=values, questions=[r[1] for r in chosen], alpha=alpha
            )
            continue
        result[theme] = []
        for column in range(width):
            kept = [r for r in chosen if r[2][column] is not None]
            (mean,) = question_bootstrap_means(
                values=np.array([[r[2][column]] for r in kept], dtype=float).reshape(len(kept), 1),
                questions=[r[1] for r in kept],
                alpha=alpha,
            )
            result[theme].append(mean)
    return result


def evidence_report(
    *,
    campaign: Campaign,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    ks: Sequence[int] = DEFAULT_KS,
    alpha: float = 0.05,
    criterion: str | None = None,
    insufficient: int | None = None,
    correct: int | None = None,
    fit_budget: int | None = None,
    conventions: Conventions = ATTEST,
    cached: bool = False,
) -> EvidenceReport:
    """Evidence coverage at each of ``budgets`` and ranking metrics at each of ``ks``, per theme
    and overall, each a mean over answers with a bootstrap interval over questions (level
    1 - ``alpha``). Answers count for coverage when their question has gold passages, for the
    ranking metrics when it has gold chunk ids.

    With ``criterion`` (an answer-level criterion of the campaign), also the calibration at
    ``fit_budget`` (default: the largest budget) against the final human labels: the share of
    each category along the sorted scores and the thresholds h (category ``insufficient``
    below it) and k (category ``correct`` above it). Raises EvidenceError naming the option at
    fault. A constant number of queries, whatever the number of answers. ``conventions``: how
    the coverage is computed (``coverage.Conventions``: the chunks' join, NFC, what a budget
    counts, the authors' N - 1 units and short answers left out).

    ``cached``: what the answers give is kept in the page cache (``evaluation.page_cache``)
    under the parameters and the campaign's answers (an import brings the gold evidence and the
    chunks with them), the calibration beside it under the criterion's labels too: one query on
    a hit, two with a criterion.
    """
    budgets = sorted(budgets)
    ks = sorted(ks)
    if not budgets or any(not isinstance(b, int) or b <= 0 for b in budgets):
        raise _refuse("budgets", _("budgets: give positive whole numbers of tokens"))
    if not ks or any(not isinstance(k, int) or k <= 0 for k in ks):
        raise _refuse("k", _("k: give positive whole numbers of chunks"))
    try:
        check_alpha(alpha)
    except ValueError:
        raise _refuse("alpha", _("alpha: must be between 0 and 1")) from None
    chosen: Criterion | None = None
    if criterion:
        chosen = Criterion.objects.filter(campaign=campaign, name=criterion).first()
        if chosen is None:
            raise _refuse(
                "criterion",
                _("criterion: %(criterion)s is not a criterion of this campaign"),
                criterion=repr(criterion),
            )
        if chosen.level != Level.ANSWER:
            raise _refuse(
                "criterion",
                _("criterion: %(criterion)s is not answer-level; the score is an answer's"),
                criterion=repr(criterion),
            )
        values = [value for value, _name in criterion_categories(chosen)]
        for option, given in (("insufficient_category", insufficient), ("correct_category", correct)):
            if given is None or given not in values:
                raise _refuse(
                    option,
                    _("%(name)s: give one of the criterion's values (%(values)s)"),
                    name=option,
                    values=", ".join(map(str, values)),
                )
        fit_budget = budgets[-1] if fit_budget is None else fit_budget
        if fit_budget not in budgets:
            raise _refuse("fit_budget", _("fit_budget: must be one of the budgets"))

    fit_index = budgets.index(fit_budget) if chosen is not None and fit_budget is not None else None

    def measure() -> tuple[EvidenceReport, dict[int, float]]:
        return _answer_measures(
            campaign=campaign,
            budgets=budgets,
            ks=ks,
            alpha=alpha,
            fit_index=fit_index,
            conventions=conventions,
        )

    key = [*page_cache.campaign_key(campaign), budgets, ks, alpha, fit_index, conventions] if cached else None
    report, scores = page_cache.cached("evidence", key, measure)
    report.campaign = campaign  # a kept report holds a copy of the campaign as it was then
    if chosen is not None and fit_budget is not None and insufficient is not None and correct is not None:
        criterion_row, budget, low, high = chosen, fit_budget, insufficient, correct

        def calibrate() -> Calibration:
            return _calibration(
                criterion=criterion_row, scores=scores, budget=budget, insufficient=low, correct=high
            )

        report.calibration = page_cache.cached(
            "evidence-calibration",
            None
            if key is None
            else [*key, chosen.pk, insufficient, correct, page_cache.labels_version(criterion=chosen)],
            calibrate,
        )
    return report


def _answer_measures(
    *,
    campaign: Campaign,
    budgets: list[int],
    ks: list[int],
    alpha: float,
    fit_index: int | None,
    conventions: Conventions,
) -> tuple[EvidenceReport, dict[int, float]]:
    """The report's coverage and ranking means (no calibration), and each answer's coverage at
    ``budgets[fit_index]`` by answer id (empty without ``fit_index``)."""
    report = EvidenceReport(
        campaign=campaign, budgets=list(budgets), ks=list(ks), alpha=alpha, conventions=conventions
    )
    questions: dict[int, tuple[str, list[SuffixAutomaton], set[str]]] = {}
    for pk, theme, gold in Question.objects.filter(campaign=campaign).values_list(
        "pk", "theme", "gold_evidence"
    ):
        texts, ids = _gold(gold)
        if texts or ids:
            # One automaton per passage, shared by every answer to the question.
            questions[pk] = (
                theme,
                [SuffixAutomaton(prepared(t, conventions=conventions)) for t in texts],
                ids,
            )
    report.questions_with_passages = sum(bool(q[1]) for q in questions.values())
    report.questions_with_chunk_ids = sum(bool(q[2]) for q in questions.values())

    coverage_rows: list[tuple[str, int, list[float | None]]] = []
    retrieval_rows: list[tuple[str, int, list[float]]] = []
    scores: dict[int, float] = {}  # answer pk -> coverage at fit_budget
    names = metric_names(ks)
    answers = list(
        campaign.answers.filter(question_id__in=list(questions))
        .order_by("pk")
        .values_list("pk", "question_id")
    )
    # Every retrieved chunk of the campaign's answers in one streamed query, in answer then rank
    # order, walked beside the answers (also in id order).
    sources = groupby(
        AnswerSource.objects.filter(answer__campaign=campaign)
        .order_by("answer_id", "rank")
        .values_list("answer_id", "chunk__text", "chunk__external_id")
        .iterator(chunk_size=SOURCES_CHUNK),
        key=itemgetter(0),
    )
    pending = next(sources, None)
    # (question, retrieved chunks' texts or ids) -> coverage per budget, ranking metrics.
    covered: dict[tuple[int, tuple[str, ...]], Any] = {}
    ranked_values: dict[tuple[int, tuple[str, ...]], list[float]] = {}
    for answer_id, question_id in answers:
        while pending is not None and pending[0] < answer_id:
            pending = next(sources, None)
        retrieved: list[tuple[str, str]] = []
        if pending is not None and pending[0] == answer_id:
            retrieved = [(text, external_id) for _, text, external_id in pending[1]]
        theme, passages, gold_ids = questions[question_id]
        if passages:
            # The repetitions of a question often retrieve the same chunks: computed once.
            read = tuple(text for text, _ in retrieved)
            known = covered.get((question_id, read), _UNSEEN)
            if known is _UNSEEN:
                known = covered[(question_id, read)] = coverage_at_budgets(
                    passages=passages, chunks=list(read), budgets=budgets, conventions=conventions
                )
            coverage = known
            if coverage is not None:
                coverage_rows.append((theme, question_id, coverage))
                fitted = coverage[fit_index] if fit_index is not None else None
                if fitted is not None:
                    scores[answer_id] = fitted
        if gold_ids:
            ranked = tuple(i for _, i in retrieved)
            values = ranked_values.get((question_id, ranked))
            if values is None:
                metrics = ranking_metrics(ranked=list(ranked), gold=gold_ids, ks=ks)
                values = ranked_values[(question_id, ranked)] = [metrics[name] for name in names]
            retrieval_rows.append((theme, question_id, values))
    if coverage_rows:
        report.coverage = _means_by_theme(rows=coverage_rows, width=len(budgets), alpha=alpha)
    if retrieval_rows:
        report.retrieval = {
            theme: dict(zip(names, means, strict=True))
            for theme, means in _means_by_theme(rows=retrieval_rows, width=len(names), alpha=alpha).items()
        }
    return report, scores


def _calibration(
    *, criterion: Criterion, scores: dict[int, float], budget: int, insufficient: int, correct: int
) -> Calibration:
    # The criterion's final labels (its labelled units only, by unit id), then the answers of
    # those of its units that are answer-level: two queries that read labelled units only.
    finals = final_labels(criterion=criterion)
    units = dict(
        Unit.objects.filter(
            campaign_id=criterion.campaign_id,
            level=Level.ANSWER,
            pk__in=Label.objects.filter(criterion=criterion).values("unit_id"),
        ).values_list("pk", "answer_id")
    )
    pairs = [
        (scores[units[unit_id]], value)
        for unit_id, value in finals.items()
        if unit_id in units and units[unit_id] in scores
    ]
    categories = criterion_categories(criterion)
    return Calibration(
        criterion=criterion.name,
        budget=budget,
        categories=categories,
        insufficient=insufficient,
        correct=correct,
        labelled=len(pairs),
        bins=category_shares(pairs=pairs, categories=[v for v, _ in categories], bins=SHARE_BINS),
        lower=fit_threshold(
            scores=[s for s, _ in pairs], positive=[v == insufficient for _, v in pairs], below=True
        ),
        upper=fit_threshold(
            scores=[s for s, _ in pairs], positive=[v == correct for _, v in pairs], below=False
        ),
    )


# Renderings: JSON for the command and the download, CSV for a spreadsheet, a plain-text table
# for a terminal.

CSV_HEADERS = ("campaign", "measure", "theme", "budget", "k", "mean", "lo", "hi", "n", "questions", "alpha")


def write_csv(*, reports: Sequence[EvidenceReport], stream: Writable) -> None:
    """The reports' means as CSV, one row per campaign, measure and theme: ``coverage`` per
    budget, then ``precision``, ``recall``, ``ndcg`` per k and ``mrr``. Fractions (0.5, not 50);
    an empty field for a missing number; texts from the file (themes, campaign names)
    neutralised against spreadsheet formulas."""
    writer = csv.writer(stream)
    writer.writerow(CSV_HEADERS)
    for report in reports:
        _csv_rows(writer=writer, report=report)


def _csv_rows(*, writer: Any, report: EvidenceReport) -> None:
    def row(measure: str, theme: str, budget: object, k: object, mean: Mean) -> None:
        numbers = ["" if v is None else v for v in (mean.mean, mean.lo, mean.hi)]
        writer.writerow(
            neutralise_row(
                [
                    report.campaign.name,
                    measure,
                    theme,
                    budget,
                    k,
                    *numbers,
                    mean.n,
                    mean.questions,
                    mean.alpha,
                ]
            )
        )

    for theme, means in report.coverage.items():
        for budget, mean in zip(report.budgets, means, strict=True):
            row("coverage", theme, budget, "", mean)
    for theme, metrics in report.retrieval.items():
        for name, mean in metrics.items():
            measure, _, k = name.partition("@")
            row(measure, theme, "", k, mean)


def _mean_json(mean: Mean) -> dict[str, object]:
    return mean.as_dict()


def report_as_json(report: EvidenceReport) -> dict[str, object]:
    """The report as JSON-ready data (the command's --format json and the page's download)."""
    data: dict[str, object] = {
        "campaign": report.campaign.name,
        "tokenizer": "unicode-regex \\w+|[^\\w\\s]"
        if report.conventions.unit == "tokens"
        else report.conventions.unit,
        "conventions": report.conventions.as_data(),
        "budgets": report.budgets,
        "k": report.ks,
        "alpha": report.alpha,
        "questions_with_passages": report.questions_with_passages,
        "questions_with_chunk_ids": report.questions_with_chunk_ids,
        "coverage": {
            theme: [{"budget": b, **_mean_json(m)} for b, m in zip(report.budgets, means, strict=True)]
            for theme, means in report.coverage.items()
        },
        "retrieval": {
            theme: {name: _mean_json(m) for name, m in metrics.items()}
            for theme, metrics in report.retrieval.items()
        },
    }
    calibration = report.calibration
    if calibration is not None:
        data["calibration"] = {
            "criterion": calibration.criterion,
            "budget": calibration.budget,
            "labelled": calibration.labelled,
            "categories": [{"value": v, "name": n} for v, n in calibration.categories],
            "insufficient_category": calibration.insufficient,
            "correct_category": calibration.correct,
            "h": _threshold_json(calibration.lower),
            "k": _threshold_json(calibration.upper),
            "shares": [
                {
                    "low": b.low,
                    "high": b.high,
                    "n": b.n,
                    "shares": {str(value): share for value, share in b.shares.items()},
                }
                for b in calibration.bins
            ],
        }
    return data


def _threshold_json(threshold: Threshold) -> dict[str, object]:
    return {
        "value": threshold.value,
        "agreement": threshold.agreement,
        "n": threshold.n,
        "positives": threshold.positives,
    }


def _cell(mean: Mean | None) -> str:
    if mean is None or mean.mean is None:
        return "–"
    return f"{mean.mean:.3f} [{mean.lo:.3f}, {mean.hi:.3f}]"


def reports_table(reports: Sequence[EvidenceReport]) -> str:
    """Several campaigns' reports side by side (one column per campaign), as plain text."""
    heads = [r.campaign.name for r in reports]
    lines: list[str] = []

    def table(title: str, rows: list[tuple[str, str, list[str]]]) -> None:
        lines.append(title)
        if not rows:
            lines.extend(["  (none)", ""])
            return
        widths = [max(len(h), *(len(r[2][i]) for r in rows)) for i, h in enumerate(heads)]
        first = max(len(r[0]) for r in rows)
        second = max(len(r[1]) for r in rows)
        lines.append(
            f"  {'theme':<{first}}  {'':<{second}}  "
            + "  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True))
        )
        for theme, what, cells in rows:
            lines.append(
                f"  {theme:<{first}}  {what:<{second}}  "
                + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
            )
        lines.append("")

    themes = sorted({t for r in reports for t in r.coverage if t != OVERALL}) + [OVERALL]
    coverage_rows = [
        (theme, f"N={budget}", [_cell(r.coverage.get(theme, [None] * len(r.budgets))[i]) for r in reports])
        for theme in themes
        for i, budget in enumerate(reports[0].budgets)
        if any(theme in r.coverage for r in reports)
    ]
    alpha = reports[0].alpha
    level = f"{(1 - alpha) * 100:g}%"
    table(f"Evidence coverage (mean [{level} bootstrap over questions])", coverage_rows)
    themes = sorted({t for r in reports for t in r.retrieval if t != OVERALL}) + [OVERALL]
    retrieval_rows = [
        (theme, name, [_cell(r.retrieval.get(theme, {}).get(name)) for r in reports])
        for theme in themes
        for name in reports[0].metrics
        if any(theme in r.retrieval for r in reports)
    ]
    table(f"Retrieval ranking (mean [{level} bootstrap over questions])", retrieval_rows)
    for r in reports:
        c = r.calibration
        if c is None:
            continue
        lines.append(
            f"Calibration of {r.campaign.name!r} on {c.criterion!r} at N={c.budget} "
            f"({c.labelled} labelled answers)"
        )
        for label, t in (
            (f"h (below: category {c.insufficient})", c.lower),
            (f"k (above: category {c.correct})", c.upper),
        ):
            value = "–" if t.value is None else f"{t.value:.3f}"
            agreement = "–" if t.agreement is None else f"{t.agreement:.1%}"
            lines.append(f"  {label}: {value}, agreement {agreement} of {t.n}")
        names = dict(c.categories)
        for b in c.bins:
            shares = ", ".join(f"{names[v]} {s:.0%}" for v, s in b.shares.items())
            lines.append(f"  scores {b.low:.3f}-{b.high:.3f} (n={b.n}): {shares}")
        lines.append("")
    return "\n".join(lines)
