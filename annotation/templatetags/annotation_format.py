"""Small formatting filters of the annotation pages."""

from __future__ import annotations

from collections.abc import Iterable

from django import template
from django.utils.text import capfirst

from annotation import page_numbers
from annotation.models import Role, Stage
from annotation.team import ROLE_NAMES
from annotation.workbench import shown_title

register = template.Library()


@register.filter
def as_sentence(message: object) -> str:
    """A domain message ("nothing to undo at this stage") as a sentence: capital first, full stop last."""
    text = str(message or "").strip()
    if not text:
        return ""
    return capfirst(text) + ("" if text.endswith((".", "!", "?", "…")) else ".")


@register.filter
def builtin_title(title: object) -> str:
    """A criterion's or a category's title, translated when the conventions give it
    (``workbench.shown_title``)."""
    return shown_title(title)


@register.filter
def stage_name(stage: object) -> str:
    """A stage's name (``label``, ``review``...) as the reader says it."""
    try:
        return str(Stage(str(stage)).label)
    except ValueError:
        return str(stage)


@register.filter
def role_names(roles: Iterable[str] | None) -> str:
    """Roles (``annotator``, ``manager``...) as the reader names them, comma-separated."""
    names = []
    for role in roles or []:
        try:
            names.append(str(ROLE_NAMES.get(Role(role), role)))
        except ValueError:
            names.append(str(role))
    return ", ".join(names)


@register.filter
def percent(value: object) -> str:
    """A share already in percent, ``66.7``, with one decimal in the reader's typography:
    ``66.7%``, ``66,7 %`` in French (``annotation.page_numbers``); a dash without one."""
    number = page_numbers.finite_number(value)
    return page_numbers.DASH if number is None else page_numbers.percent_text(f"{number:.1f}")
