"""Numbers as people read them on the pages and in their SVG charts, in the reader's language:
``82.4%`` and ``0.50`` in English, ``82,4 %`` and ``0,50`` in French (a decimal comma, a no-break
space before ``%``, as the catalogue's ``%(number)s%%`` says), a dash for a missing number.

The one home of that rule, below both apps: the template filters (``annotation_format``,
``evaluation.templatetags.report_extras``) and the charts (``evaluation.reports.charts``) write
every number through it, in the language active when the page is drawn. Files, JSON and the
commands keep machine formats (``inference.numbers``).
"""

from __future__ import annotations

import math
from typing import Any

from django.utils import formats
from django.utils.translation import gettext as _

DASH = "—"


def finite_number(value: Any) -> float | None:
    """``value`` as a finite float, or None (None, "", NaN, infinities, anything else)."""
    if value is None or isinstance(value, str | bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def localized(text: str) -> str:
    """A number written with a dot, with the reader's decimal separator (a comma in French)."""
    separator = formats.get_format("DECIMAL_SEPARATOR")
    return text if separator == "." else text.replace(".", separator)


def percent_text(text: str) -> str:
    """A number already written with a dot, as a percentage in the reader's typography: ``12.3``
    is ``12.3%`` (``12,3 %`` in French)."""
    return _("%(number)s%%") % {"number": localized(text)}


def bounds(lo: str, hi: str) -> str:
    """Two bounds already written, as an interval: ``[12.3%, 45.6%]``, ``[12,3 % ; 45,6 %]``."""
    return _("[%(lo)s, %(hi)s]") % {"lo": lo, "hi": hi}


def pct(value: Any, digits: int = 1) -> str:
    """A rate as a percentage with ``digits`` decimals: ``0.1234`` is ``12.3%`` (``12,3 %`` in
    French); a dash when it is missing."""
    number = finite_number(value)
    return DASH if number is None else percent_text(f"{number * 100:.{int(digits)}f}")


def number(value: Any, digits: int = 2) -> str:
    """A number with ``digits`` decimals (2 by default); a dash when it is missing."""
    number = finite_number(value)
    return DASH if number is None else localized(f"{number:.{int(digits)}f}")


def whole(value: Any) -> str:
    """A whole number with its thousands grouped as the reader groups them: ``20,000`` in
    English, ``20 000`` in French (a no-break space); a dash when it is missing."""
    number = finite_number(value)
    return DASH if number is None else formats.number_format(round(number), force_grouping=True)


def plain(value: float) -> str:
    """A number with no useless zero, ``%g`` as a person writes it: ``5``, ``2.5`` (``2,5``)."""
    return localized(f"{value:g}")


def rate_with_interval(what: str, value: Any, lo: Any = None, hi: Any = None) -> str:
    """What a chart's mark says when pointed at: ``Finance, PPI++: 45.6% (interval 40.1% to
    51.2%)``, without the interval when a bound is missing."""
    if finite_number(lo) is None or finite_number(hi) is None:
        return _("%(what)s: %(value)s") % {"what": what, "value": pct(value)}
    low, high = sorted((float(lo), float(hi)))
    return _("%(what)s: %(value)s (interval %(lo)s to %(hi)s)") % {
        "what": what,
        "value": pct(value),
        "lo": pct(low),
        "hi": pct(high),
    }
