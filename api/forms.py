"""Input of the token page."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _


class TokenForm(forms.Form):
    """A new token's name (what it is for: "CI", "release script")."""

    name = forms.CharField(max_length=100, required=False, label=_("Name"))
