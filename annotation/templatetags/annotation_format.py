"""Small formatting filters of the annotation pages."""

from __future__ import annotations

from django import template
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy

register = template.Library()


@register.filter
def as_sentence(message: object) -> str:
    """A domain message ("nothing to undo at this stage") as a sentence: capital first, full stop last."""
    text = str(message or "").strip()
    if not text:
        return ""
    return capfirst(text) + ("" if text.endswith((".", "!", "?", "…")) else ".")


# The built-in criteria's titles as stored (English, from annotation.conventions), in the
# reader's language; other titles are shown as written.
_BUILTIN_TITLES = {
    "Veracity": gettext_lazy("Veracity"),
    "Relevance": gettext_lazy("Relevance"),
}


@register.filter
def builtin_title(title: object) -> str:
    """A criterion's title, translated when it is a built-in criterion's English title."""
    text = str(title or "")
    return str(_BUILTIN_TITLES.get(text, text))
