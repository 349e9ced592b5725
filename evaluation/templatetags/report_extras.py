"""Template filters and tags of the evaluation pages: numbers, intervals and where they come from.

Formatting lives here rather than in the views, after healthchecks' ``hc_extras``. Every filter
takes what the domain returns (floats that may be NaN or infinite, ``Interval``, snapshot JSON)
and gives text; a missing number is a dash.
"""

from __future__ import annotations

from django import template
from django.utils.translation import gettext as _

from evaluation.snapshots import Changes

register = template.Library()


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
