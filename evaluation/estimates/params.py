"""What an estimate may be asked with: the methods (``robust``, ``study``), alpha, the clusters of
the robust method's intervals (``answer``, ``question``), and the name of the combination over
themes (``overall``)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from evaluation.errors import EstimateError
from inference import intervals
from inference.designs import allocation

METHODS = ("robust", "study")
# The key of every table's total row (the overall figures), beside the themes.
OVERALL = allocation.OVERALL
# The robust method's clusters, and what its intervals are about: answers (the default), this
# campaign's answers (with the finite-population correction, the judge's labels a census);
# questions, the assistant asked these questions again, a repeated question's answers sharing
# its difficulty (no correction, the judge's labels a sample too). docs/statistics.md says when
# each is the right choice.
ANSWER = "answer"
QUESTION = "question"
CLUSTERS = (ANSWER, QUESTION)


def check_method(method: str) -> str:
    """``method`` when it is one of ``METHODS``; EstimateError on field ``method`` otherwise."""
    if method not in METHODS:
        raise EstimateError(
            refusal(
                _("%(method)s is not one of %(methods)s"), method=repr(method), methods=", ".join(METHODS)
            ),
            field="method",
        )
    return method


def check_alpha(alpha: float) -> float:
    """``alpha`` when strictly between 0 and 1 (``intervals.check_alpha``, the one check); an
    EstimateError on field ``alpha`` otherwise, for a form, a command or the API to place."""
    try:
        return intervals.check_alpha(alpha)
    except ValueError:
        raise EstimateError(
            refusal(_("must be strictly between 0 and 1, got %(alpha)s"), alpha=f"{alpha:g}"), field="alpha"
        ) from None


def check_clusters(clusters: str) -> str:
    """``clusters`` when it is one of ``CLUSTERS``; EstimateError on field ``clusters`` otherwise."""
    if clusters not in CLUSTERS:
        raise EstimateError(
            refusal(
                _("%(clusters)s is not one of %(choices)s"),
                clusters=repr(clusters),
                choices=", ".join(CLUSTERS),
            ),
            field="clusters",
        )
    return clusters
