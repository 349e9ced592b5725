"""What an estimate may be asked with: the methods (``robust``, ``study``), alpha, and the name of
the combination over themes (``overall``)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from evaluation.errors import EstimateError

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
    """``alpha`` when strictly between 0 and 1; EstimateError on field ``alpha`` otherwise."""
    if not (0 < alpha < 1):
        raise EstimateError(
            refusal(_("must be strictly between 0 and 1, got %(alpha)s"), alpha=f"{alpha:g}"), field="alpha"
        )
    return alpha
