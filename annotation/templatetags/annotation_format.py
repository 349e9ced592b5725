"""Small formatting filters of the annotation pages."""

from __future__ import annotations

from django import template
from django.utils.text import capfirst

register = template.Library()


@register.filter
def as_sentence(message: object) -> str:
    """A domain message ("nothing to undo at this stage") as a sentence: capital first, full stop last."""
    text = str(message or "").strip()
    if not text:
        return ""
    return capfirst(text) + ("" if text.endswith((".", "!", "?", "…")) else ".")
