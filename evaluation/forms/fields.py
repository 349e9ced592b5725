"""Fields and helpers the evaluation forms share: numbers read as sent (never localised), whole
numbers, and errors listed as ``field: message``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.forms.utils import ErrorDict
from django.utils.translation import gettext_lazy as _


class NumberField(forms.Field):
    """A number written with a decimal point (never localised); empty is None."""

    def to_python(self, value: Any) -> float | None:
        if value in self.empty_values:
            return None
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValidationError(_("%(value)r is not a number"), params={"value": value}) from None


class WholeNumberField(forms.Field):
    """A whole number of at least 1; empty is None."""

    def to_python(self, value: Any) -> int | None:
        if value in self.empty_values:
            return None
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ValidationError(_("%(value)r is not a whole number"), params={"value": value}) from None
        if number < 1:
            raise ValidationError(_("must be at least 1"))
        return number


class MessagesMixin:
    """The form's errors as ``field: message`` lines (a message on no field alone), the way the
    evaluation pages list them."""

    errors: ErrorDict

    def messages(self) -> list[str]:
        return [
            str(message) if field == NON_FIELD_ERRORS else f"{field}: {message}"
            for field, errors in self.errors.items()
            for message in errors
        ]
