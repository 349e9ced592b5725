"""The forms of the annotation pages: what a request may carry, checked before any domain call.

Each form names the field at fault, so that a page can say what to fix. A domain function that
refuses an argument raises an error naming it: :func:`add_domain_error` puts the message on that
field when the error carries it (``error.field``), else on the form as a whole.
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _


class WholeNumberField(forms.IntegerField):
    """An integer field whose errors repeat what was typed."""

    default_error_messages = {
        "invalid": _("'%(value)s' is not a whole number"),
        "min_value": _("must be at least %(limit_value)s"),
    }

    def to_python(self, value: object) -> int | None:
        try:
            return super().to_python(value)
        except ValidationError as error:
            if error.code != "invalid":
                raise
            raise ValidationError(
                self.error_messages["invalid"], code="invalid", params={"value": str(value).strip()}
            ) from None


def add_domain_error(form: forms.Form, error: Exception) -> None:
    """Show a domain function's refusal on ``form``: on its field when the error names one of the
    form's fields (``error.field``), else above the form. The message is the error's own."""
    field = getattr(error, "field", None)
    form.add_error(field if field in form.fields else None, str(error))


def request_errors(form: forms.Form) -> str:
    """A refused request's fields and what is wrong with each, as plain text (for a 400)."""
    return "; ".join(f"{name} {message}" for name, messages in form.errors.items() for message in messages)


# The stage pages (label, review, adjudication): hidden fields a person never types.

_NUMBER = {"invalid": _("must be a whole number"), "required": _("is required")}


class LabelForm(forms.Form):
    """A label: the unit, the value, an optional comment, the request key and the guidelines shown."""

    unit_id = forms.IntegerField(error_messages=_NUMBER)
    value = forms.IntegerField(error_messages=_NUMBER)
    comment = forms.CharField(required=False, strip=False)
    request_key = forms.CharField(required=False)
    guidelines_version = forms.IntegerField(required=False, error_messages=_NUMBER)


class SkipForm(forms.Form):
    """The unit to skip."""

    unit_id = forms.IntegerField(error_messages=_NUMBER)


class UndoForm(forms.Form):
    """An undo, with the request key that makes a repeated one count once."""

    request_key = forms.CharField(required=False)


class PrefetchForm(forms.Form):
    """``?after=<unit on screen>``: the page asks for the unit that follows it. Anything else is ignored."""

    after = forms.IntegerField(required=False)

    def unit_on_screen(self) -> int | None:
        return self.cleaned_data.get("after") if self.is_valid() else None
