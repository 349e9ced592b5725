"""A campaign's answers against their questions' reference answers: exact match, token F1 and
ROUGE-L (``evaluation.measures.overlap``), per theme and overall.

Each answer whose question has a reference answer (``Question.reference_answer``) is scored; per
theme and overall, each measure is the mean over answers with a percentile bootstrap interval
over questions (``inference.estimators.bootstrap``: the answers to one question share its reference and are
not independent). Two versions of the assistant that share question ids are compared question by
question (:func:`reference_linears`, read by ``evaluation.measures.comparison``). See
docs/statistics.md, "Against the reference answer".
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.utils.translation import gettext_lazy as _

from annotation.corpus.citations import compile_citation_pattern
from annotation.errors import FieldError, refusal
from annotation.models import Answer, Campaign
from annotation.spreadsheets import Writable, neutralise_row
from evaluation import page_cache
from evaluation.estimates.params import OVERALL
from evaluation.measures.overlap import AUTO, MEASURES, NORMALISATIONS, resolve, scores
from inference.estimators.bootstrap import Mean, question_bootstrap_means
from inference.intervals import check_alpha
from inference.paired import Linear, mean_linear

EXACT_MATCH, TOKEN_F1, ROUGE_L = MEASURES
TITLES = {EXACT_MATCH: "Exact match", TOKEN_F1: "Token F1", ROUGE_L: "ROUGE-L"}
# Answers read per query.
ANSWER_BATCH = 2000


class ReferenceError(FieldError):
    """A request the measures refuse; ``field`` names the option at fault."""


@dataclass(frozen=True)
class Scored:
    """One answer's scores: its theme, question id, and exact match, token F1, ROUGE-L."""

    theme: str
    question: str
    answer_id: int
    values: tuple[float, float, float]


@dataclass
class ReferenceReport:
    """The three measures per theme then overall (``rows``: theme -> measure -> Mean)."""

    campaign: Campaign
    normalisation: str
    alpha: float
    rows: dict[str, dict[str, Mean]] = field(default_factory=dict)
    answers: int = 0
    questions_with_reference: int = 0

    @property
    def themes(self) -> list[str]:
        return [theme for theme in self.rows if theme != OVERALL]


def check(*, normalisation: str, alpha: float) -> None:
    """ReferenceError naming the option at fault."""
    if normalisation not in NORMALISATIONS:
        raise ReferenceError(
            "normalisation",
            refusal(
                _("normalisation: %(value)s is not one of %(choices)s"),
                value=repr(normalisation),
                choices=", ".join(NORMALISATIONS),
            ),
        )
    try:
        check_alpha(alpha)
    except ValueError:
        raise ReferenceError("alpha", _("alpha: must be between 0 and 1")) from None


def scored_answers(*, campaign: Campaign, normalisation: str = AUTO) -> list[Scored]:
    """Every answer of ``campaign`` whose question has a reference answer, scored without its
    citation markers (the campaign's pattern; ``auto``: by its question's language, else the
    answer's). One query per ANSWER_BATCH answers."""
    rows = (
        Answer.objects.filter(campaign=campaign)
        .exclude(question__reference_answer="")
        .order_by("pk")
        .values_list(
            "pk",
            "text",
            "language",
            "question__external_id",
            "question__theme",
            "question__language",
            "question__reference_answer",
        )
    )
    markers = compile_citation_pattern(campaign.citation_pattern)
    result = []
    for pk, text, language, question, theme, question_language, reference in rows.iterator(
        chunk_size=ANSWER_BATCH
    ):
        if not reference.strip():
            continue
        chosen = resolve(normalisation, language=question_language or language)
        # The answer's citation markers are not part of what it says (ALCE removes them too).
        s = scores(markers.sub("", text), reference, normalisation=chosen)
        result.append(Scored(theme, question, pk, (s.exact_match, s.token_f1, s.rouge_l)))
    return result


def _cache_key(campaign: Campaign, *parameters: Any) -> list[Any]:
    """What the measures of ``campaign`` depend on, for the page cache (``evaluation.page_cache``):
    the campaign's settings (its citation pattern), its answers and questions (their reference
    answers come with an import or a hand edit) and ``parameters``. No query."""
    return [*page_cache.campaign_key(campaign), *parameters]


def reference_report(
    *, campaign: Campaign, normalisation: str = AUTO, alpha: float = 0.05
) -> ReferenceReport:
    """Exact match, token F1 and ROUGE-L per theme and overall (see the module's docstring),
    kept in the page cache under :func:`_cache_key`: every answer is scored on a miss only."""
    check(normalisation=normalisation, alpha=alpha)

    def measure() -> tuple[int, int, dict[str, dict[str, Mean]]]:
        scored = scored_answers(campaign=campaign, normalisation=normalisation)
        rows: dict[str, dict[str, Mean]] = {}
        for theme in [*sorted({s.theme for s in scored}), OVERALL] if scored else []:
            chosen = [s for s in scored if theme == OVERALL or s.theme == theme]
            means = question_bootstrap_means(
                values=np.array([s.values for s in chosen], dtype=float),
                questions=[s.question for s in chosen],
                alpha=alpha,
            )
            rows[theme] = dict(zip(MEASURES, means, strict=True))
        return len(scored), len({s.question for s in scored}), rows

    answers, questions, rows = page_cache.cached(
        "reference_report", _cache_key(campaign, normalisation, alpha), measure
    )
    report = ReferenceReport(campaign=campaign, normalisation=normalisation, alpha=alpha, answers=answers)
    report.questions_with_reference = questions
    report.rows = rows
    return report


def reference_linears(*, campaign: Campaign, normalisation: str = AUTO) -> dict[str, dict[str, Linear]]:
    """Each measure's mean per theme and overall, decomposed by question id, for the comparison
    of two versions by question: measure -> theme -> Linear (empty without reference answers).
    Kept in the page cache under :func:`_cache_key`."""

    def measure() -> dict[str, dict[str, Linear]]:
        scored = scored_answers(campaign=campaign, normalisation=normalisation)
        if not scored:
            return {}
        result: dict[str, dict[str, Linear]] = {name: {} for name in MEASURES}
        for theme in [*sorted({s.theme for s in scored}), OVERALL]:
            chosen = [s for s in scored if theme == OVERALL or s.theme == theme]
            for index, name in enumerate(MEASURES):
                result[name][theme] = mean_linear(
                    values=np.array([s.values[index] for s in chosen], dtype=float),
                    questions=[s.question for s in chosen],
                    answers=np.array([s.answer_id for s in chosen]),
                    w=None,
                    alpha=0.05,
                    floored=False,
                )
        return result

    return page_cache.cached("reference_linears", _cache_key(campaign, normalisation), measure)


def report_as_json(report: ReferenceReport) -> dict[str, Any]:
    """The report as JSON-ready data (the command, the API, the page's download)."""
    return {
        "campaign": report.campaign.name,
        "normalisation": report.normalisation,
        "alpha": report.alpha,
        "answers": report.answers,
        "questions_with_reference": report.questions_with_reference,
        "rows": [
            {"theme": theme, **{name: mean.as_dict() for name, mean in means.items()}}
            for theme, means in report.rows.items()
        ],
    }


CSV_HEADERS = ("campaign", "measure", "theme", "mean", "lo", "hi", "n", "questions", "alpha", "normalisation")


def write_csv(*, report: ReferenceReport, stream: Writable) -> None:
    """One row per measure and theme: fractions, an empty field for a missing number, texts from
    the file neutralised against spreadsheet formulas."""
    writer = csv.writer(stream)
    writer.writerow(CSV_HEADERS)
    for theme, means in report.rows.items():
        for name, mean in means.items():
            numbers = ["" if v is None else v for v in (mean.mean, mean.lo, mean.hi)]
            writer.writerow(
                neutralise_row(
                    [
                        report.campaign.name,
                        name,
                        theme,
                        *numbers,
                        mean.n,
                        mean.questions,
                        mean.alpha,
                        report.normalisation,
                    ]
                )
            )


def report_table(report: ReferenceReport) -> str:
    """The report as plain text, one line per theme."""
    level = f"{(1 - report.alpha) * 100:g}%"
    lines = [
        f"Against the reference answer: {report.answers} answers of {report.questions_with_reference} "
        f"questions; normalisation {report.normalisation}; mean [{level} bootstrap over questions]"
    ]
    if not report.rows:
        return "\n".join([*lines, "  (no question has a reference answer)"])
    width = max(len(theme) for theme in report.rows)
    lines.append(f"  {'theme':<{width}}  " + "  ".join(f"{TITLES[name]:<22}" for name in MEASURES))
    for theme, means in report.rows.items():
        cells = [
            f"{m.mean:.3f} [{m.lo:.3f}, {m.hi:.3f}]" if m.mean is not None else "–" for m in means.values()
        ]
        lines.append(f"  {theme:<{width}}  " + "  ".join(f"{cell:<22}" for cell in cells))
    return "\n".join(lines)
