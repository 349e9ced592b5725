"""Input of the token page."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.validators import MaxValueValidator
from django.utils.translation import gettext_lazy as _


class TokenForm(forms.Form):
    """A new token's name (what it is for: "CI", "release script") and how many days it opens
    the API (API_TOKEN_DAYS by default, at most API_TOKEN_MAX_DAYS)."""

    # The server says what is missing, in place, in the page's language.
    use_required_attribute = False

    # Required: the list shows it, and it is how a person tells which token to revoke.
    name = forms.CharField(
        max_length=100,
        label=_("Name"),
        error_messages={"required": _("give the token a name: what it is for, such as CI")},
        widget=forms.TextInput(attrs={"aria-describedby": "token-name-help", "autocomplete": "off"}),
    )
    days = forms.IntegerField(min_value=1, required=False, label=_("Valid for (days)"))

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        days = self.fields["days"]
        days.initial = settings.API_TOKEN_DAYS
        # The settings read when the form is made, not when the module is imported.
        days.validators.append(MaxValueValidator(settings.API_TOKEN_MAX_DAYS))
        days.widget.attrs.update(max=settings.API_TOKEN_MAX_DAYS)
