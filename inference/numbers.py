"""Numbers as the app writes them outside its pages: in JSON, a value that is not a finite
number (NaN, an infinite bound) is null; in the commands' plain-text tables, a rate in percent
and a decimal with a fixed number of digits, a missing one as ``-``. The pages write numbers in
the reader's language (``evaluation.templatetags.report_extras``)."""

from __future__ import annotations

import math
from typing import Any

MISSING = "-"


def is_finite(*values: Any) -> bool:
    """Whether every value is a finite number (None, NaN and infinities are not)."""
    return all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def finite(value: Any) -> float | None:
    """``value`` as a float, or None when it is None, NaN or infinite (JSON's null)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def percent(value: Any, *, digits: int = 1, sign: str = "%") -> str:
    """A rate as a percentage: ``12.3%`` (``sign`` "" for a table whose header says %), or
    ``-`` when it is missing."""
    number = finite(value)
    return MISSING if number is None else f"{100 * number:.{digits}f}{sign}"


def decimal(value: Any, *, digits: int = 3) -> str:
    """A decimal with ``digits`` places, or ``-`` when it is missing."""
    number = finite(value)
    return MISSING if number is None else f"{number:.{digits}f}"


def signed_points(value: Any, *, digits: int = 1) -> str:
    """A difference of two rates in percentage points, signed: ``+1.2``, or ``-`` when missing."""
    number = finite(value)
    return MISSING if number is None else f"{100 * number:+.{digits}f}"
