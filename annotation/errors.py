"""Refusals that name what was refused, so a form can put the message beside that field."""

from __future__ import annotations


class FieldError(ValueError):
    """A domain function refused one of its arguments: ``field`` is the argument's name (such as
    ``budget``, ``per_cluster`` or ``per_theme_budget``; None when no one argument is at fault),
    the message says why and starts with that name, as every refusal of the app does. A
    ValueError, so callers that catch those keep working; forms show it on their field of that
    name (``annotation.forms.add_domain_error``).
    """

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field

    @property
    def reason(self) -> str:
        """The message without the field's name in front, for a place that already shows it."""
        message = str(self)
        return message.removeprefix(f"{self.field}: ") if self.field else message
