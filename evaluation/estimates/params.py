"""What an estimate may be asked with: the methods (``robust``, ``study``), alpha, and the name of
the combination over themes (``overall``)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from evaluation.errors import EstimateError
from inference import intervals

METHODS = ("robust", "study")
OVERALL = "overall"


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
