"""The notes the estimators put beside a number (why an estimate is NaN, an interval infinite,
widened or cut, a group unweighted), and how a page translates them.

Estimators, intervals and estimates are Django-free, and their notes also go into the exports
and the stored snapshots of the estimates: a note is English text made only from the constant
templates below (``%(name)s`` placeholders filled with numbers, or with another note). The same
templates are the French catalogue's msgids (``evaluation/templatetags/report_extras.py`` marks
them for ``make messages``), so :func:`translate` reads a note back into its templates and
parameters and speaks it in any language, old snapshots' notes included. A text it does not
recognise comes back unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

# Why one estimator's interval is what it is.
NO_LABELED_UNITS = "no labeled units"
NO_UNLABELED_UNITS = "no unlabeled units"
NO_JUDGE_LABELS = "no judge labels"
ONE_LABEL = "one label: no variance"
ONE_JUDGE_LABEL = "one judge label"
ONE_CLUSTER = "one cluster: no variance"
ZERO_WIDTH = "all labels are equal: the normal interval has zero width"
SMOOTHED = "all labels are equal: variance of the smoothed rate"
JUDGE_CONSTANT = "the judge's labels are all equal: lambda 0"
HUMAN_ONLY = "no unlabeled units: lambda 0 (human labels only)"
FLOORED = "rare disagreements or equal labels: rectifier variance floored"
CONFIDENCE_FLOOR = "residuals smaller than the judge's confidences imply: variance floored at theirs"
NO_GROUPS = "no groups"
GROUPS_WITHOUT_ESTIMATE = "%(missing)s of %(groups)s groups have no estimate"
GROUP_WITHOUT_VARIANCE = "a group has no variance"
# Intervals made to respect [0, 1].
WILSON = (
    "normal interval left [0, 1]: cut at the bound and widened to the Wilson score interval "
    "at the effective sample size"
)
CUT = "normal interval left [0, 1]: cut at the bound"
FEW_EVENTS = (
    "few events near a bound: normal interval widened to the Wilson score interval at the "
    "effective sample size"
)
PAST_BOUND = (
    "estimate and normal interval past a bound of [0, 1]: centred on the bound, no narrower than "
    "the Wilson score interval at the labels used"
)
CLIPPED = "bound clipped to [0, 1]"
# A group's notes.
MISSING_JUDGMENTS = "%(count)s human-labeled units have no judgment and are left out of PPI++"
NOT_ALL_SAMPLED = "labeled units are not all from the current sample: equal weights"
NO_SAMPLE = "no sample drawn for this criterion: equal weights"
POOLED_SAMPLES = (
    "labeled units come from several samples: each weighted by its probability of having been "
    "drawn by any of them"
)
CONFIDENCE_PPI = (
    "sample drawn by the judge's confidence: PPI++ is the inverse-probability estimate on the "
    "judge's confidence (lambda 1)"
)
RECALIBRATED = (
    "the judge's confidence recalibrated on %(labels)s human labels (Platt, cross-fitted over "
    "%(folds)s folds)"
)
NOT_RECALIBRATED = (
    "the judge's confidence used as it gave it: fewer than %(least)s human labels to recalibrate it"
)
BY_QUESTION = (
    "questions as clusters: the rate of the assistant asked these questions again, beyond this "
    "campaign's answers"
)
DESIGN_BASED = (
    "drawn by the judge's confidence: the interval is about this campaign's answers (the draw's "
    "own randomness)"
)
# Several judges combined in one estimate (``inference.estimators.multi_ppi``).
SHARE_TERM = (
    "%(judge)s judged a random share of the answers (%(share)s): its term is its inverse-probability "
    "mean on them"
)
NO_RECORDED_SHARE = (
    "%(judge)s judged %(judged)s of %(size)s units without a recorded share: its term is its mean "
    "over those it judged"
)
JUDGE_ABSENT = "%(judge)s judged no unit here: left out of the combination"
NOT_EVERY_JUDGE = (
    "%(count)s human-labeled units lack a judgment of one of the judges and are left out of the combination"
)

# A note about one estimator's interval, and a note about the overall figures: the ``note``
# placeholder holds another note (or several, joined by SEPARATOR).
OF_ESTIMATOR = {
    "human": "human: %(note)s",
    "judge": "judge: %(note)s",
    "PPI++": "PPI++: %(note)s",
}
OVERALL = "overall %(note)s"
SEPARATOR = "; "

PLAIN = (
    NO_LABELED_UNITS,
    NO_UNLABELED_UNITS,
    NO_JUDGE_LABELS,
    ONE_LABEL,
    ONE_JUDGE_LABEL,
    ONE_CLUSTER,
    ZERO_WIDTH,
    SMOOTHED,
    JUDGE_CONSTANT,
    HUMAN_ONLY,
    FLOORED,
    CONFIDENCE_FLOOR,
    NO_GROUPS,
    GROUPS_WITHOUT_ESTIMATE,
    GROUP_WITHOUT_VARIANCE,
    WILSON,
    CUT,
    FEW_EVENTS,
    PAST_BOUND,
    CLIPPED,
    MISSING_JUDGMENTS,
    NOT_ALL_SAMPLED,
    NO_SAMPLE,
    POOLED_SAMPLES,
    CONFIDENCE_PPI,
    RECALIBRATED,
    NOT_RECALIBRATED,
    BY_QUESTION,
    DESIGN_BASED,
    SHARE_TERM,
    NO_RECORDED_SHARE,
    JUDGE_ABSENT,
    NOT_EVERY_JUDGE,
)
NESTED = (OVERALL, *OF_ESTIMATOR.values())
# Every template a note is made of: each is a msgid of the French catalogue.
TEMPLATES = (*NESTED, *PLAIN)


def joined(notes: list[str]) -> str:
    """Several notes of one interval as one."""
    return SEPARATOR.join(notes)


@cache
def _pattern(template: str) -> re.Pattern[str]:
    """``template`` as a regular expression whose named groups are its placeholders."""
    parts = re.split(r"%\((\w+)\)s", template)
    # re.split alternates literal text and placeholder names.
    return re.compile(
        "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)" for i, part in enumerate(parts))
    )


def template_of(note: str) -> str | None:
    """The template of ``PLAIN`` that makes ``note`` (a single note, not nested nor joined),
    None when none does."""
    return next((template for template in PLAIN if _pattern(template).fullmatch(note)), None)


def translate(note: str, gettext: Callable[[str], str]) -> str:
    """``note`` in the language of ``gettext`` (Django's, at display time): each template it is
    made of is translated and filled again with the same parameters, nested notes translated in
    turn. Text that no template makes is left as it is."""
    for template in NESTED:
        if found := _pattern(template).fullmatch(note):
            return gettext(template) % {"note": translate(found["note"], gettext)}
    if SEPARATOR in note:
        return SEPARATOR.join(translate(part, gettext) for part in note.split(SEPARATOR))
    for template in PLAIN:
        if found := _pattern(template).fullmatch(note):
            return gettext(template) % found.groupdict()
    return note
