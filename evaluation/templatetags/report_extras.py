"""Template filters and tags of the evaluation pages: numbers, intervals, charts and where the
numbers come from.

Formatting lives here rather than in the views, after healthchecks' ``hc_extras``. Every filter
takes what the domain returns (floats that may be None, NaN or infinite, ``Interval``, a
snapshot's JSON of one group) and gives text; a missing number is a dash.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from django import template
from django.utils.dateformat import format as date_format
from django.utils.timezone import localtime
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop, pgettext_lazy

from annotation import page_numbers
from evaluation.estimates.params import OVERALL
from evaluation.estimates.report import Report
from evaluation.estimates.small_themes import ShrunkTheme, SmallThemes
from evaluation.judge import lexical
from evaluation.measures.stability import QuestionStability
from evaluation.pages.overview import COUNT_NAMES, METRIC_TITLES
from evaluation.reports import summary
from evaluation.reports.read import Changes, Provenance
from inference import intervals, notes, paired
from inference.estimators import means, ppi, shrinkage

register = template.Library()

# The descriptions of estimators.METHODS, for the French catalogue: the report translates them
# where it shows them (tests/test_i18n.py checks that every description has its translation).
_METHOD_NOTES = (
    gettext_noop("Human labels only; normal interval, simple random sample (ppi_py.classical_mean_ci)."),
    gettext_noop(
        "Human labels only; design-weighted mean, cluster-robust variance, t interval "
        "(Wilson score interval at the effective sample size where the t interval leaves [0, 1])."
    ),
    gettext_noop(
        "Judge labels only, on every unit; normal interval (robust method: Wilson score interval "
        "where the normal one leaves [0, 1]). Says nothing about the judge's bias."
    ),
    gettext_noop(
        "PPI++ exactly as ppi_py (simple random sample, normal interval, lambda fitted on the labels)."
    ),
    gettext_noop(
        "PPI++ with design weights, cluster-robust variance, t interval (Wilson score "
        "interval at the effective sample size where it leaves [0, 1]) and a lambda cross-fitted by "
        "leaving each answer out."
    ),
    gettext_noop(
        "PPI++ with design weights, cluster-robust variance, t interval (Wilson score "
        "interval at the effective sample size where it leaves [0, 1]) and one lambda pooled across groups."
    ),
    gettext_noop(
        "PPI++ with design weights, cluster-robust variance, t interval (Wilson score "
        "interval at the effective sample size where it leaves [0, 1]) and a given lambda."
    ),
    gettext_noop(
        "Inverse-probability PPI++ on the judge's confidence, for a sample drawn by it: "
        "the judge's mean probability of a 1 plus the design-weighted mean residual, lambda 1, variance "
        "of the Poisson design, t interval."
    ),
)


# The templates of the estimators' notes (inference.notes.TEMPLATES), for the French catalogue:
# the report translates a note where it shows it (the ``notes`` filter); the exports keep them in
# English (docs/statistics.md). tests/test_i18n.py checks that every template has its translation.
_NOTE_TEMPLATES = (
    gettext_noop("overall %(note)s"),
    gettext_noop("human: %(note)s"),
    gettext_noop("judge: %(note)s"),
    gettext_noop("PPI++: %(note)s"),
    gettext_noop("no labeled units"),
    gettext_noop("no unlabeled units"),
    gettext_noop("no judge labels"),
    gettext_noop("one label: no variance"),
    gettext_noop("one judge label"),
    gettext_noop("one cluster: no variance"),
    gettext_noop("all labels are equal: the normal interval has zero width"),
    gettext_noop("all labels are equal: variance of the smoothed rate"),
    gettext_noop("the judge's labels are all equal: lambda 0"),
    gettext_noop("no unlabeled units: lambda 0 (human labels only)"),
    gettext_noop("rare disagreements or equal labels: rectifier variance floored"),
    gettext_noop("residuals smaller than the judge's confidences imply: variance floored at theirs"),
    gettext_noop("no groups"),
    gettext_noop("%(missing)s of %(groups)s groups have no estimate"),
    gettext_noop("a group has no variance"),
    gettext_noop(
        "normal interval left [0, 1]: cut at the bound and widened to the Wilson score interval "
        "at the effective sample size"
    ),
    gettext_noop("normal interval left [0, 1]: cut at the bound"),
    gettext_noop(
        "few events near a bound: normal interval widened to the Wilson score interval at the "
        "effective sample size"
    ),
    gettext_noop(
        "estimate and normal interval past a bound of [0, 1]: centred on the bound, no narrower than "
        "the Wilson score interval at the labels used"
    ),
    gettext_noop("bound clipped to [0, 1]"),
    gettext_noop("%(count)s human-labeled units have no judgment and are left out of PPI++"),
    gettext_noop("labeled units are not all from the current sample: equal weights"),
    gettext_noop("no sample drawn for this criterion: equal weights"),
    gettext_noop(
        "labeled units come from several samples: each weighted by its probability of having been "
        "drawn by any of them"
    ),
    gettext_noop(
        "sample drawn by the judge's confidence: PPI++ is the inverse-probability estimate on the "
        "judge's confidence (lambda 1)"
    ),
    gettext_noop(
        "the judge's confidence recalibrated on %(labels)s human labels (Platt, cross-fitted over "
        "%(folds)s folds)"
    ),
    gettext_noop(
        "the judge's confidence used as it gave it: fewer than %(least)s human labels to recalibrate it"
    ),
    gettext_noop(
        "questions as clusters: the rate of the assistant asked these questions again, beyond this "
        "campaign's answers"
    ),
    gettext_noop(
        "drawn by the judge's confidence: the interval is about this campaign's answers (the draw's "
        "own randomness)"
    ),
    gettext_noop(
        "%(judge)s judged a random share of the answers (%(share)s): its term is its inverse-probability "
        "mean on them"
    ),
    gettext_noop(
        "%(judge)s judged %(judged)s of %(size)s units without a recorded share: its term is its mean "
        "over those it judged"
    ),
    gettext_noop("%(judge)s judged no unit here: left out of the combination"),
    gettext_noop(
        "%(count)s human-labeled units lack a judgment of one of the judges and are left out of the "
        "combination"
    ),
)


# What people read for a method's key: an interval's ``method`` (``ppi++-robust-crossfit``...) or
# the method a report is asked with (``robust``, ``study``). The one map from key to shown name;
# files, JSON and the API keep the keys.
METHOD_NAMES = {
    "robust": pgettext_lazy("method", "robust"),
    "study": pgettext_lazy("method", "study"),
    means.CLASSICAL: gettext_lazy("human labels only, as ppi_py"),
    means.CLASSICAL_ROBUST: gettext_lazy("human labels only, robust"),
    means.JUDGE_ONLY: gettext_lazy("judge labels only"),
    ppi.PPI: gettext_lazy("PPI++ as ppi_py"),
    ppi.PPI_ROBUST_CROSSFIT: gettext_lazy("robust PPI++, cross-fitted λ"),
    ppi.PPI_ROBUST_POOLED: gettext_lazy("robust PPI++, one λ for all groups"),
    ppi.PPI_ROBUST_FIXED: gettext_lazy("robust PPI++, given λ"),
    ppi.PPI_CONFIDENCE: gettext_lazy("PPI++ on the judge's confidence"),
    ppi.PPI_MULTI: gettext_lazy("PPI++ with several judges"),
    shrinkage.PPI_SHRUNK: gettext_lazy("PPI++ shrunk toward the judge"),
    paired.DIFFERENCE: gettext_lazy("difference of independent samples"),
    "wilson": gettext_lazy("Wilson score interval"),
}


@register.filter
def method_name(key: str) -> str:
    """A method's key as people read it (``METHOD_NAMES``); a key it does not know, as it is."""
    return str(METHOD_NAMES.get(key, key))


# The lexical judge's reasons (evaluation.judge.lexical.TEMPLATES), for the French catalogue: a page
# translates a stored reason where it shows it (the ``reasoning`` filter); the exports keep them in
# English. tests/evaluation/judge/test_lexical.py checks that every template has its translation.
_LEXICAL_REASONS = (
    gettext_noop("lexical: no content word and no number (filler sentence)"),
    gettext_noop("lexical: %(words)s content word(s) and %(numbers)s number(s) but no cited source"),
    gettext_noop(
        "lexical: %(found)s/%(total)s content words found in the cited sources "
        "(%(overlap)s%%, threshold %(threshold)s%%); %(detail)s"
    ),
    gettext_noop("lexical: the question has no content word to look for"),
    gettext_noop(
        "lexical: %(found)s/%(total)s of the question's terms found in the answer "
        "(%(overlap)s%%, threshold %(threshold)s%%)"
    ),
    gettext_noop("number(s) not found: %(numbers)s"),
    gettext_noop("all %(count)s number(s) found"),
    gettext_noop("no number"),
)


@register.filter
def reasoning(text: str) -> str:
    """A judgment's reasoning as the reader reads it: the lexical judge's reasons in the active
    language (``lexical.translate``), an LLM's own words as it wrote them."""
    return lexical.translate(str(text or ""), _)


@register.filter
def note(text: str) -> str:
    """One of the estimators' notes in the active language (``inference.notes.translate``)."""
    return notes.translate(text, _)


@register.filter(name="notes")
def notes_text(texts: list[str]) -> str:
    """A group's notes in the active language, joined as the exports join them."""
    return notes.SEPARATOR.join(notes.translate(text, _) for text in texts)


@register.filter
def count_name(name: str) -> str:
    """The campaign overview's name of a count ("questions", "labels"...), translated."""
    return str(COUNT_NAMES.get(name, name))


# The pages' rule for numbers (a decimal comma and "12,3 %" in French) has its home in
# annotation.page_numbers, which the charts and the annotation pages share: these filters write
# through it.
DASH = page_numbers.DASH
_number = page_numbers.finite_number
_localized = page_numbers.localized
_percent = page_numbers.percent_text
_bounds = page_numbers.bounds


@register.filter
def beside(names: Iterable[Any], values: Iterable[Any]) -> list[tuple[Any, Any]]:
    """Each column's name beside its value, ``(name, value)`` in column order: a table stacked on
    a phone names each figure by its column (``data-label``)."""
    return list(zip(names, values, strict=False))


@register.filter
def theme_name(theme: str) -> str:
    """A theme as the reader sees it: the total row's key (``params.OVERALL``) is "Overall"."""
    return _("Overall") if theme == OVERALL else theme


@register.filter
def pct(value: Any) -> str:
    """A rate as a percentage with one decimal: ``0.1234`` is ``12.3%`` (``12,3 %`` in French)."""
    return page_numbers.pct(value)


@register.filter
def number(value: Any, digits: int = 2) -> str:
    """A number with ``digits`` decimals (2 by default)."""
    return page_numbers.number(value, digits)


@register.filter
def whole(value: Any) -> str:
    """A whole number with its thousands grouped: ``20,000`` (``20 000`` in French)."""
    return page_numbers.whole(value)


@register.filter
def number_bounds(value: Any) -> str:
    """An interval of a number that is not a rate (``lo`` and ``hi`` attributes, such as alpha's
    bootstrap interval) with two decimals, ``[-0.03, 0.98]`` (``[-0,03 ; 0,98]`` in French); a
    dash without one."""
    if value is None:
        return DASH
    return _bounds(number(value.lo), number(value.hi))


def _clipped_mark() -> str:
    return _("(bound clipped to [0, 1])")


@register.filter
def interval(value: intervals.Interval | None) -> str:
    """An interval's bounds as percentages, ``[12.3%, 45.6%]``, never outside [0%, 100%]: a
    bound beyond (the study method keeps ppi_py's, old snapshots may hold one) is shown clipped
    and marked so; ``unbounded`` when a bound is infinite (a single label), a dash without an
    estimate."""
    if value is None or _number(value.mean) is None:
        return DASH
    if math.isinf(value.lo) or math.isinf(value.hi):
        return _("unbounded")
    bounds = _bounds(pct(value.shown_lo), pct(value.shown_hi))
    return f"{bounds} {_clipped_mark()}" if value.clipped else bounds


@register.filter
def halfwidth(value: intervals.Interval | None) -> str:
    """An interval's half-width in percentage points, ``±12.3 pts``; ``∞`` when unbounded."""
    if value is None or _number(value.mean) is None or math.isnan(value.halfwidth):
        return DASH
    return "∞" if math.isinf(value.halfwidth) else points(value.halfwidth)


@register.filter
def shrunk_for(small: SmallThemes | None, theme: str) -> ShrunkTheme | None:
    """The shrinkage of one theme (``evaluation.estimates.small_themes``), None without one."""
    return None if small is None else small.of(theme)


@register.filter
def points(value: Any) -> str:
    """A half-width as percentage points: ``0.123`` is ``±12.3 pts``."""
    number = _number(value)
    return DASH if number is None else f"±{_localized(f'{number * 100:.1f}')} pts"


@register.filter
def signed_points(value: Any) -> str:
    """A difference of rates in percentage points with its sign: ``-0.05`` is ``-5.0 pts``."""
    number = _number(value)
    return DASH if number is None else f"{_localized(f'{number * 100:+.1f}')} pts"


@register.filter
def signed(value: Any) -> str:
    """A difference of rates in points with its sign and no unit, as in an interval: ``+5.0``."""
    number = _number(value)
    return DASH if number is None else _localized(f"{number * 100:+.1f}")


@register.filter
def degrees(value: Any) -> str:
    """Degrees of freedom: whole when whole (``12``), else one decimal (``45.3``)."""
    number = _number(value)
    if number is None:
        return ""
    return f"{number:.0f}" if number == round(number) else _localized(f"{number:.1f}")


@register.filter
def confidence(alpha: Any) -> str:
    """The confidence level of ``alpha``: ``0.05`` is ``95%``."""
    number = _number(alpha)
    return DASH if number is None else _percent(f"{(1 - number) * 100:g}")


@register.filter
def in_points(value: Any) -> str:
    """A rate in points with no unit and no useless zero: ``0.05`` is ``5``."""
    number = _number(value)
    return DASH if number is None else _localized(f"{number * 100:g}")


@register.filter
def snapshot_cell(group: dict[str, Any] | None) -> str:
    """A snapshot's PPI++ estimate of one group (its JSON) with its interval:
    ``45.6% [40.1%, 51.2%]``, ``45.6% (unbounded)``, a dash without an estimate. Bounds are
    shown in [0%, 100%], marked when clipped (old snapshots may hold bounds outside)."""
    if not group or group.get("ppi_mean") is None:
        return DASH
    lo, hi = group.get("ppi_ci") or (None, None)
    if lo is None or hi is None:
        return f"{pct(group['ppi_mean'])} ({_('unbounded')})"
    shown_lo, shown_hi = intervals.clip_bound(lo), intervals.clip_bound(hi)
    clipped = bool(group.get("ppi_ci_raw")) or (shown_lo, shown_hi) != (lo, hi)
    bounds = " " + _bounds(pct(shown_lo), pct(shown_hi))
    return f"{pct(group['ppi_mean'])}{bounds}" + (f" {_clipped_mark()}" if clipped else "")


@register.filter
def used_methods(report: Report) -> list[str]:
    """The estimators behind a report's intervals, by name, to explain each once."""
    methods = {g.human.method for g in report.themes} | {g.ppi.method for g in report.themes}
    return sorted(methods | {report.overall.judge.method})


@register.filter
def provenance_text(provenance: Provenance | None) -> str:
    """Where a report's numbers come from, in one sentence of the reader's language: a snapshot
    (its time, and what was recorded since) or a computation now (and why)."""
    if provenance is None:
        return ""
    moment = date_format(localtime(provenance.as_of), "Y-m-d H:i T")
    if provenance.from_snapshot:
        since = changes_text(provenance.changes)
        if since:
            return _("snapshot of %(time)s; recorded since: %(what)s") % {"time": moment, "what": since}
        return _("snapshot of %(time)s; nothing recorded since") % {"time": moment}
    return _("computed now (%(time)s)") % {"time": moment}


@register.filter
def changes_text(changes: Changes | None) -> str:
    """What was recorded after a snapshot, as one phrase: ``new human labels, new judgments``."""
    if changes is None:
        return ""
    parts = [
        text
        for happened, text in (
            (changes.labels, _("new human labels")),
            (changes.judgments, _("new judgments")),
            (changes.units, _("units added or removed")),
            (changes.sample, _("a new sample (other design weights)")),
        )
        if happened
    ]
    return ", ".join(parts)


@register.filter
def rate_bounds(value: tuple[float, float] | None) -> str:
    """Two bounds of a rate, ``(lo, hi)``, as an interval of percentages; a dash without one."""
    if value is None or _number(value[0]) is None or _number(value[1]) is None:
        return DASH
    return _bounds(pct(value[0]), pct(value[1]))


@register.filter
def width_points(value: Any) -> str:
    """The width of an interval of rates in percentage points: ``0.123`` is ``12.3 pts``."""
    number = _number(value)
    return DASH if number is None else f"{_localized(f'{number * 100:.1f}')} pts"


@register.filter
def repetition_values(row: QuestionStability, level: str = "answer") -> str:
    """A question's values in repetition order: ``1 0 1 1`` for labels of answers, percentages
    for rates (``level`` ``"sentence"``: an answer's value is the rate of its sentences)."""
    if level != "sentence" and row.binary:
        return " ".join(f"{value:.0f}" for value in row.values)
    return " ".join(pct(value) for value in row.values)


# Versions compared by question

_ESTIMATE_TITLES = {
    "human": gettext_lazy("Human labels only"),
    "judge": gettext_lazy("Judge only"),
    "ppi": gettext_lazy("PPI++"),
    # The answers against their reference answers (evaluation.measures.overlap).
    "exact_match": gettext_lazy("Exact match with the reference answer"),
    "token_f1": gettext_lazy("Token F1 with the reference answer"),
    "rouge_l": gettext_lazy("ROUGE-L with the reference answer"),
}


@register.filter
def estimate_title(name: str) -> str:
    """The reader's words for a compared estimate (``human``, ``judge``, ``ppi``) or metric."""
    return str(_ESTIMATE_TITLES.get(name) or METRIC_TITLES.get(name) or name)


@register.filter
def p_value(value: Any) -> str:
    """A p-value with three decimals (``0.054``), ``< 0.001`` below that; a dash when there is
    none (a degenerate difference)."""
    number = _number(value)
    if number is None:
        return DASH
    if number < 0.001:
        return _("< %(number)s") % {"number": _localized("0.001")}
    return _localized(f"{number:.3f}")


@register.filter
def difference_bounds(value: Any) -> str:
    """A paired difference's interval in signed points: ``[-3.1, +12.0]``."""
    if value is None:
        return ""
    return _bounds(signed(value.lo), signed(value.hi))


# The report read top down (``evaluation.reports.summary``)

_NOTE_KINDS = {
    summary.WILSON: gettext_lazy(
        "Interval widened to stay within 0–100% where few events lie near 0% or 100% (Wilson score interval)"
    ),
    summary.FLOOR: gettext_lazy(
        "Few labels and no disagreement seen (or all labels equal): the interval is kept from "
        "shrinking to nothing (variance floor)"
    ),
    summary.BOUNDS: gettext_lazy("Interval cut at 0% or 100%"),
    summary.EQUAL_WEIGHTS: gettext_lazy(
        "Labels counted with equal weights: they do not all come from the current sample"
    ),
    summary.POOLED_WEIGHTS: gettext_lazy(
        "Labels from several samples, each weighted by its chance of having been drawn by any of them"
    ),
    summary.MISSING: gettext_lazy(
        "Labelled units without a judgment: left out of PPI++, still counted by the human-only estimate"
    ),
    summary.NO_ESTIMATE: gettext_lazy("Too few labels or judgments for an estimate or an interval"),
    summary.HUMAN_ONLY: gettext_lazy("The judge's labels could not help: human labels only (λ = 0)"),
    summary.CONFIDENCE: gettext_lazy(
        "Sample drawn by the judge's confidence: estimated on that confidence, about this campaign's answers"
    ),
    summary.CLUSTERS: gettext_lazy(
        "Intervals about the assistant asked these questions again (questions as clusters)"
    ),
    summary.COMBINED: gettext_lazy("Several judges combined: what each judge's term rests on"),
    summary.OTHER: gettext_lazy("Other notes"),
}


@register.filter
def note_kind(kind: str) -> str:
    """A kind of note (``summary.KINDS``) in a few plain words of the reader's language."""
    return str(_NOTE_KINDS.get(kind, kind))


@register.filter
def grouped_notes(report: Report) -> list[summary.NoteGroup]:
    """The report's notes said once each, by kind (``summary.grouped_notes``)."""
    return summary.grouped_notes(report)


@register.filter
def label_account(report: Any) -> summary.LabelAccount | None:
    """The labels a report rests on, by where their units stand (``summary.label_account``)."""
    return summary.label_account(report)


@register.filter
def theme_list(themes: list[str]) -> str:
    """Theme names as one phrase: ``Finance, RH and Overall`` (``Finance, RH et Ensemble``)."""
    names = [theme_name(theme) for theme in themes]
    if len(names) < 2:
        return "".join(names)
    return _("%(first)s and %(last)s") % {"first": ", ".join(names[:-1]), "last": names[-1]}


@register.filter
def interval_words(value: intervals.Interval | None) -> str:
    """An interval of a rate in words: ``76.0% to 88.0%`` (``76,0 % à 88,0 %``); ``unbounded``
    when a bound is infinite, a dash without an estimate. Shown bounds: never outside [0%, 100%]."""
    if value is None or _number(value.mean) is None:
        return DASH
    if math.isinf(value.lo) or math.isinf(value.hi):
        return _("unbounded")
    words = _("%(lo)s to %(hi)s") % {"lo": pct(value.shown_lo), "hi": pct(value.shown_hi)}
    return f"{words} {_clipped_mark()}" if value.clipped else words


@register.filter
def difference_words(value: Any) -> str:
    """A difference's interval in signed points, in words: ``-3.1 to +12.0 points``."""
    if value is None or _number(value.lo) is None or _number(value.hi) is None:
        return DASH
    return _("%(lo)s to %(hi)s points") % {"lo": signed(value.lo), "hi": signed(value.hi)}
