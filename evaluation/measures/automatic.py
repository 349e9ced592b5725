"""Automatic metrics: computed on every answer and sentence, no reasoning needed.

Four rates, each per theme x difficulty and per theme, with a Wald interval:

- ``correct_language`` (answers): the detected language is the expected one.
- ``response`` (answers): not a manifest abstention, and cites at least one source.
- ``functional_citation`` (sentences that cite): every cited id is one the retriever returned.
- ``abstention_on_inappropriate`` (answers to inappropriate questions): a manifest abstention.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.db.models import Count, Q

from annotation.corpus.citations import compile_citation_pattern
from annotation.models import Answer, Campaign, Sentence
from evaluation import page_cache
from inference.intervals import check_alpha, wald_interval

CORRECT_LANGUAGE = "correct_language"
RESPONSE = "response"
FUNCTIONAL_CITATION = "functional_citation"
ABSTENTION_ON_INAPPROPRIATE = "abstention_on_inappropriate"

# Display order (rows themselves are sorted by metric name).
METRICS: tuple[str, ...] = (CORRECT_LANGUAGE, RESPONSE, FUNCTIONAL_CITATION, ABSTENTION_ON_INAPPROPRIATE)
METRIC_TITLES: dict[str, str] = {
    CORRECT_LANGUAGE: "Correct language",
    RESPONSE: "Response",
    FUNCTIONAL_CITATION: "Functional citations",
    ABSTENTION_ON_INAPPROPRIATE: "Abstention on inappropriate questions",
}
METRIC_DEFINITIONS: dict[str, str] = {
    CORRECT_LANGUAGE: "Answers whose detected language is the expected one "
    "(the campaign's expected language, else the question's).",
    RESPONSE: "Answers that are not a manifest abstention and cite at least one source.",
    FUNCTIONAL_CITATION: "Sentences that cite, whose cited ids were all returned by the retriever.",
    ABSTENTION_ON_INAPPROPRIATE: "Answers to inappropriate questions that manifestly abstain.",
}
METRIC_UNITS: dict[str, str] = {
    CORRECT_LANGUAGE: "answers",
    RESPONSE: "answers",
    FUNCTIONAL_CITATION: "citing sentences",
    ABSTENTION_ON_INAPPROPRIATE: "answers",
}

# Difficulty spellings meaning "the assistant should abstain", after normalise_difficulty().
INAPPROPRIATE_DIFFICULTIES: frozenset[str] = frozenset(
    {"inappropriate", "inappropriee", "inapproprie", "inappropriate-should-abstain"}
)
# Protocol order of the usual difficulties, for display; unknown ones follow alphabetically.
_DIFFICULTY_RANK: dict[str, int] = {
    "simple": 0,
    "easy": 0,
    "facile": 0,
    "intermediate": 1,
    "intermediaire": 1,
    "medium": 1,
    "moyen": 1,
    "hard": 2,
    "difficile": 2,
    **{name: 3 for name in INAPPROPRIATE_DIFFICULTIES},
}
INTERVAL_METHODS: tuple[str, ...] = ("wald",)
ALL_THEMES = "(all)"


@dataclass(frozen=True)
class MetricRow:
    """One rate over one group: ``difficulty`` is None on the per-theme rows."""

    metric: str
    theme: str
    difficulty: str | None
    n: int
    successes: int
    rate: float
    ci: tuple[float, float]

    @property
    def collapsed(self) -> bool:
        """True when the interval has no width (Wald at a rate of 0 or 1): not a certainty."""
        return self.ci[0] == self.ci[1]


def normalise_difficulty(difficulty: str) -> str:
    """Lower case, accents removed, spaces and underscores turned into hyphens."""
    decomposed = unicodedata.normalize("NFKD", difficulty.strip().casefold())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return re.sub(r"[\s_]+", "-", bare)


def is_inappropriate(difficulty: str | None) -> bool:
    """Whether ``difficulty`` names the inappropriate-should-abstain level, however spelt."""
    if not difficulty:
        return False
    return normalise_difficulty(difficulty) in INAPPROPRIATE_DIFFICULTIES


def difficulty_sort_key(difficulty: str | None) -> tuple[int, str]:
    """Sort key putting difficulties in protocol order (simple, intermediate, hard, inappropriate),
    other names after them alphabetically, and None (the per-theme total) last."""
    if difficulty is None:
        return (6, "")
    norm = normalise_difficulty(difficulty)
    return (_DIFFICULTY_RANK.get(norm, 4 if norm else 5), norm)


def _compile(pattern: str, *, what: str, flags: int = 0) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise ValueError(f"{what}: invalid regular expression {pattern!r} ({exc})") from None


def abstention_matcher(*, campaign: Campaign) -> Callable[[str], bool]:
    """A function ``text -> bool``: whether any abstention pattern matches (case-insensitive).

    Raises ValueError naming the first invalid pattern.
    """
    patterns = campaign.effective_abstention_patterns
    compiled = [_compile(p, what="abstention pattern", flags=re.IGNORECASE) for p in patterns]
    if not compiled:
        return lambda text: False
    # One alternation scans the text once (about 3x faster than one search per pattern); it is
    # only safe when no pattern refers to its own groups by number or name.
    if not any(re.search(r"\\\d|\(\?P=|\(\?[a-zA-Z]+\)", p) for p in patterns):
        try:
            combined = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
        except re.error:
            pass
        else:
            return lambda text: combined.search(text) is not None
    return lambda text: any(c.search(text) for c in compiled)


def _primary_language(code: str) -> str:
    return code.strip().casefold().replace("_", "-").split("-")[0]


def _answer_outcomes(*, campaign: Campaign) -> Iterator[tuple[int, str, str, str, dict[str, bool]]]:
    """(answer id, theme, difficulty, question external id, {metric: success}) per answer for the
    three answer-level metrics; a metric that does not apply to the answer (no expected language,
    a question that is not inappropriate) is absent from its dict. The one definition of those
    metrics."""
    citation = compile_citation_pattern(campaign.citation_pattern)
    abstains = abstention_matcher(campaign=campaign)
    expected_for_campaign = _primary_language(campaign.expected_language or "")
    inappropriate: dict[str, bool] = {}
    rows = (
        Answer.objects.filter(campaign=campaign)
        .order_by()
        .values_list(
            "id",
            "text",
            "language",
            "question__theme",
            "question__difficulty",
            "question__language",
            "question__external_id",
        )
        .iterator(chunk_size=2000)
    )
    for answer_id, text, language, theme, difficulty, question_language, question in rows:
        outcomes: dict[str, bool] = {}
        expected = expected_for_campaign or _primary_language(question_language or "")
        # Without an expected language there is nothing to compare with: the answer is not counted.
        if expected:
            outcomes[CORRECT_LANGUAGE] = _primary_language(language or "") == expected
        abstention = abstains(text)
        outcomes[RESPONSE] = (not abstention) and citation.search(text) is not None
        if difficulty not in inappropriate:
            inappropriate[difficulty] = is_inappropriate(difficulty)
        if inappropriate[difficulty]:
            outcomes[ABSTENTION_ON_INAPPROPRIATE] = abstention
        yield answer_id, theme, difficulty, question, outcomes


def _outcome_counts(
    *, campaign: Campaign
) -> tuple[dict[tuple[str, str, str], list[int]], dict[tuple[str, str, str], list[int]]]:
    """Every metric counted, (metric, theme, difficulty) -> [n, successes] and (metric, theme,
    question external id) -> [n, successes]: one pass over the answers for the three
    answer-level ones, a count in the database per group for functional citations. Kept in the
    page cache (``evaluation.page_cache``) under the campaign's settings and answers: the
    metrics read the answers' texts, sentences and questions only, which change with an import
    or a hand edit. No query on a hit (the campaign's content version comes with it), three on a miss."""

    def count() -> tuple[dict[tuple[str, str, str], list[int]], dict[tuple[str, str, str], list[int]]]:
        by_difficulty: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
        by_question: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
        for _answer_id, theme, difficulty, question, outcomes in _answer_outcomes(campaign=campaign):
            for metric, success in outcomes.items():
                for cell in (by_difficulty[metric, theme, difficulty], by_question[metric, theme, question]):
                    cell[0] += 1
                    cell[1] += success
        by_difficulty.update(_sentence_counts(campaign=campaign, by="answer__question__difficulty"))
        by_question.update(_sentence_counts(campaign=campaign, by="answer__question__external_id"))
        return dict(by_difficulty), dict(by_question)

    key = [*page_cache.campaign_key(campaign)]
    by_difficulty, by_question = page_cache.cached("automatic_counts", key, count)
    # Copies: a caller may change them.
    return (
        {cell: list(counts) for cell, counts in by_difficulty.items()},
        {cell: list(counts) for cell, counts in by_question.items()},
    )


def answer_values(*, campaign: Campaign, metric: str) -> dict[int, float]:
    """Per answer id, the answer's value of ``metric``: 0 or 1 for the answer-level metrics; for
    functional citations, the share of the answer's citing sentences whose cited ids were all
    retrieved (answers without a citing sentence are left out). Answers the metric does not
    apply to are left out. One query. Raises ValueError for an unknown metric."""
    if metric not in METRICS:
        raise ValueError(f"metric: unknown metric {metric!r} (known: {', '.join(METRICS)})")
    if metric == FUNCTIONAL_CITATION:
        groups = (
            Sentence.objects.filter(answer__campaign=campaign, citations_ok__isnull=False)
            .order_by()
            .values("answer_id")
            .annotate(n=Count("id"), ok=Count("id", filter=Q(citations_ok=True)))
        )
        return {g["answer_id"]: g["ok"] / g["n"] for g in groups}
    return {
        answer_id: float(outcomes[metric])
        for answer_id, _theme, _difficulty, _question, outcomes in _answer_outcomes(campaign=campaign)
        if metric in outcomes
    }


def _sentence_counts(*, campaign: Campaign, by: str) -> dict[tuple[str, str, str], list[int]]:
    """(functional_citation, theme, the question's ``by``) -> [n, successes], aggregated in the
    database."""
    groups = (
        Sentence.objects.filter(answer__campaign=campaign, citations_ok__isnull=False)
        .order_by()
        .values("answer__question__theme", by)
        .annotate(n=Count("id"), ok=Count("id", filter=Q(citations_ok=True)))
    )
    return {(FUNCTIONAL_CITATION, g["answer__question__theme"], g[by]): [g["n"], g["ok"]] for g in groups}


def question_counts(*, campaign: Campaign) -> dict[tuple[str, str, str], list[int]]:
    """(metric, theme, question external id) -> [n, successes] for every metric: the same
    counts as :func:`compute_metrics` reads, per question instead of per difficulty, for
    comparing two versions of the assistant question by question (:func:`_outcome_counts`)."""
    return _outcome_counts(campaign=campaign)[1]


def _row(
    *, metric: str, theme: str, difficulty: str | None, n: int, successes: int, alpha: float
) -> MetricRow:
    return MetricRow(
        metric=metric,
        theme=theme,
        difficulty=difficulty,
        n=n,
        successes=successes,
        rate=successes / n,
        ci=wald_interval(successes=successes, n=n, alpha=alpha),
    )


def _sort_key(row: MetricRow) -> tuple:
    return (row.metric, row.theme, row.difficulty is None, row.difficulty or "")


def compute_metrics(*, campaign: Campaign, alpha: float = 0.05, interval: str = "wald") -> list[MetricRow]:
    """Every automatic metric of ``campaign``, per theme x difficulty and per theme (difficulty None).

    Groups with no unit (n = 0) are left out. Rows are sorted by metric, theme, then difficulty
    with the per-theme row last. Intervals are Wald intervals at level 1 - alpha (see
    wald_interval for their limits); ``interval`` names the method and only "wald" exists.
    Answers whose expected language is unknown (no campaign or question language) are left out
    of ``correct_language``; an answer whose language could not be detected counts as wrong.
    Raises ValueError for an unknown interval method, a bad alpha or an invalid campaign regex.
    One query when the counts are in the page cache, four otherwise (:func:`_outcome_counts`),
    whatever the size of the campaign.
    """
    if interval not in INTERVAL_METHODS:
        raise ValueError(f"interval: unknown method {interval!r} (known: {', '.join(INTERVAL_METHODS)})")
    check_alpha(alpha)
    counts = _outcome_counts(campaign=campaign)[0]
    per_theme: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    rows = []
    for (metric, theme, difficulty), (n, successes) in counts.items():
        if n == 0:
            continue
        rows.append(
            _row(metric=metric, theme=theme, difficulty=difficulty, n=n, successes=successes, alpha=alpha)
        )
        total = per_theme[(metric, theme)]
        total[0] += n
        total[1] += successes
    for (metric, theme), (n, successes) in per_theme.items():
        rows.append(_row(metric=metric, theme=theme, difficulty=None, n=n, successes=successes, alpha=alpha))
    return sorted(rows, key=_sort_key)


def overall_metrics(*, rows: list[MetricRow], alpha: float = 0.05) -> list[MetricRow]:
    """One row per metric over every theme (theme ALL_THEMES, difficulty None), from the
    per-theme rows of compute_metrics; ``alpha`` should be the one those rows were computed with."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        if row.difficulty is None:
            totals[row.metric][0] += row.n
            totals[row.metric][1] += row.successes
    return [
        _row(metric=metric, theme=ALL_THEMES, difficulty=None, n=n, successes=successes, alpha=alpha)
        for metric, (n, successes) in sorted(totals.items())
    ]


def metrics_as_json(*, campaign: Campaign, rows: list[MetricRow]) -> dict:
    """``{"campaign": name, "metrics": [{metric, theme, difficulty, n, rate, ci: [lo, hi]}]}``,
    in the order of ``rows``; difficulty is null on the per-theme rows."""
    return {
        "campaign": campaign.name,
        "metrics": [
            {
                "metric": row.metric,
                "theme": row.theme,
                "difficulty": row.difficulty,
                "n": row.n,
                "rate": row.rate,
                "ci": [row.ci[0], row.ci[1]],
            }
            for row in rows
        ],
    }


def percent(value: float) -> str:
    """A rate as a percentage with one decimal: 0.4567 -> '45.7%'."""
    return f"{value * 100:.1f}%"


def metrics_table(*, rows: list[MetricRow], alpha: float = 0.05) -> str:
    """``rows`` as a plain-text table with aligned columns, rates and intervals as percentages."""
    level = f"{(1 - alpha) * 100:g}%"
    header = ("metric", "theme", "difficulty", "n", "rate", f"{level} Wald interval")
    lines = [
        (
            row.metric,
            row.theme,
            "(all)" if row.difficulty is None else (row.difficulty or "(none)"),
            str(row.n),
            percent(row.rate),
            f"[{percent(row.ci[0])}, {percent(row.ci[1])}]",
        )
        for row in rows
    ]
    widths = [max(len(cells[i]) for cells in [header, *lines]) for i in range(len(header))]
    right = {3, 4}

    def fmt(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    out = [fmt(header), "  ".join("-" * w for w in widths)]
    out.extend(fmt(cells) for cells in lines)
    if not lines:
        out.append("(no answers)")
    return "\n".join(out) + "\n"
