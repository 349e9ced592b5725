"""What the campaign overview shows: counts of everything the campaign holds, automatic metrics."""

from __future__ import annotations

from django.utils.translation import gettext, gettext_lazy

from annotation.models import Answer, Campaign, Label, Question, Sentence, Unit
from annotation.page_numbers import pct, percent_text
from evaluation.measures.automatic import (
    ABSTENTION_ON_INAPPROPRIATE,
    CORRECT_LANGUAGE,
    FUNCTIONAL_CITATION,
    METRICS,
    RESPONSE,
    MetricRow,
    compute_metrics,
    difficulty_sort_key,
    overall_metrics,
)
from evaluation.models import Judgment
from evaluation.reports.charts import grouped_bar_chart

# The page's words for the metrics, in the reader's language (evaluation.measures.automatic keeps the
# English ones for the command line and the exports).
METRIC_TITLES = {
    CORRECT_LANGUAGE: gettext_lazy("Correct language"),
    RESPONSE: gettext_lazy("Response"),
    FUNCTIONAL_CITATION: gettext_lazy("Functional citations"),
    ABSTENTION_ON_INAPPROPRIATE: gettext_lazy("Abstention on inappropriate questions"),
}
METRIC_DEFINITIONS = {
    CORRECT_LANGUAGE: gettext_lazy(
        "Answers whose detected language is the expected one "
        "(the campaign's expected language, else the question's)."
    ),
    RESPONSE: gettext_lazy("Answers that are not a manifest abstention and cite at least one source."),
    FUNCTIONAL_CITATION: gettext_lazy(
        "Sentences that cite, whose cited ids were all returned by the retriever."
    ),
    ABSTENTION_ON_INAPPROPRIATE: gettext_lazy("Answers to inappropriate questions that manifestly abstain."),
}
METRIC_UNITS = {
    CORRECT_LANGUAGE: gettext_lazy("answers"),
    RESPONSE: gettext_lazy("answers"),
    FUNCTIONAL_CITATION: gettext_lazy("citing sentences"),
    ABSTENTION_ON_INAPPROPRIATE: gettext_lazy("answers"),
}
COUNT_NAMES = {
    "questions": gettext_lazy("questions"),
    "answers": gettext_lazy("answers"),
    "sentences": gettext_lazy("sentences"),
    "units": gettext_lazy("units"),
    "labels": gettext_lazy("labels"),
    "judgments": gettext_lazy("judgments"),
}


def campaign_counts(*, campaign: Campaign, with_work: bool) -> dict[str, int]:
    """Counts of questions, answers, sentences and units; with ``with_work``, of human labels
    and judgments too (see annotation.access.COUNT_VIEWERS for who sees those)."""
    counts = {
        "questions": Question.objects.filter(campaign=campaign).count(),
        "answers": Answer.objects.filter(campaign=campaign).count(),
        "sentences": Sentence.objects.filter(answer__campaign=campaign).count(),
        "units": Unit.objects.filter(campaign=campaign).count(),
    }
    if with_work:
        counts["labels"] = Label.objects.filter(unit__campaign=campaign).count()
        counts["judgments"] = Judgment.objects.filter(unit__campaign=campaign).count()
    return counts


def _display_difficulty(difficulty: str | None) -> str:
    if difficulty is None:
        return gettext("All difficulties")
    return difficulty or gettext("(none)")


def _display_row(row: MetricRow) -> dict:
    return {
        "theme": row.theme,
        "difficulty": _display_difficulty(row.difficulty),
        "is_total": row.difficulty is None,
        "n": row.n,
        "successes": row.successes,
        "rate": pct(row.rate),
        "interval": f"{pct(row.ci[0])} – {pct(row.ci[1])}",
        "collapsed": row.collapsed,
    }


def automatic_metrics_sections(*, campaign: Campaign, alpha: float = 0.05) -> dict:
    """``{"sections": [...], "error": str | None}``: one section per automatic metric that has
    data, in display order; ``error`` explains why there is none when a campaign regex is invalid.

    Each section: ``name``, ``title``, ``definition``, ``unit``, ``chart`` (safe SVG: bars per
    theme, one per difficulty, with Wald error bars), ``rows`` (table rows per theme, the
    difficulties in protocol order then the theme's total) and ``overall`` (all themes).
    Two queries, whatever the number of answers.
    """
    try:
        rows = compute_metrics(campaign=campaign, alpha=alpha)
    except ValueError as exc:
        return {"sections": [], "error": str(exc)}
    overall = {row.metric: row for row in overall_metrics(rows=rows, alpha=alpha)}
    level = percent_text(f"{(1 - alpha) * 100:g}")
    sections = []
    for metric in METRICS:
        mine = [row for row in rows if row.metric == metric]
        if not mine:
            continue
        themes = sorted({row.theme for row in mine})
        difficulties = sorted(
            {row.difficulty for row in mine if row.difficulty is not None}, key=difficulty_sort_key
        )
        mine.sort(key=lambda row: (row.theme, difficulty_sort_key(row.difficulty)))
        chart = grouped_bar_chart(
            groups=themes,
            series=[_display_difficulty(d) for d in difficulties],
            values={
                (row.theme, _display_difficulty(row.difficulty)): (row.rate, *row.ci)
                for row in mine
                if row.difficulty is not None
            },
            title=gettext("%(metric)s by theme and difficulty (%(level)s Wald intervals)")
            % {"metric": METRIC_TITLES[metric], "level": level},
        )
        sections.append(
            {
                "name": metric,
                "title": METRIC_TITLES[metric],
                "definition": METRIC_DEFINITIONS[metric],
                "unit": METRIC_UNITS[metric],
                "chart": chart,
                "rows": [_display_row(row) for row in mine],
                "overall": {**_display_row(overall[metric]), "theme": gettext("All themes")},
            }
        )
    return {"sections": sections, "error": None}
