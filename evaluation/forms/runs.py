"""The input of a judge run, started or resumed."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.utils.translation import gettext_lazy as _

from annotation.models import Campaign, Criterion
from evaluation.forms.fields import MessagesMixin, WholeNumberField
from evaluation.models import JudgeRun


class JudgeRunForm(MessagesMixin, forms.Form):
    """A judge run to start: the criterion (by name), the judge (by name; a new name creates an
    LLM judge with ``model``, "lexical" is the offline judge), the units, and optional
    concurrency and token budget."""

    criterion = forms.ModelChoiceField(
        queryset=Criterion.objects.none(),
        to_field_name="name",
        error_messages={
            "required": _("choose one of the campaign's criteria"),
            "invalid_choice": _("choose one of the campaign's criteria"),
        },
    )
    judge = forms.CharField(error_messages={"required": _("give a name ('lexical' is the offline judge)")})
    model = forms.CharField(required=False)
    scope = forms.ChoiceField(
        choices=JudgeRun.Scope.choices,
        required=False,
        error_messages={"invalid_choice": _("%(value)r is not one of all, missing, failed, share")},
    )
    concurrency = WholeNumberField(required=False)
    token_budget = WholeNumberField(required=False)
    # Where a new LLM judge's confidence in each verdict comes from (evaluation.judge.confidence).
    CONFIDENCE_SOURCES = [
        ("logprobs", _("from the reply's log-probabilities")),
        ("samples", _("from 5 sampled verdicts (5 times the completion tokens)")),
        ("verbal", _("as the judge states it")),
        ("none", _("none")),
    ]
    confidence = forms.ChoiceField(
        choices=CONFIDENCE_SOURCES,
        required=False,
        error_messages={"invalid_choice": _("%(value)r is not one of logprobs, samples, verbal, none")},
    )

    def __init__(self, data: Any, *, campaign: Campaign) -> None:
        super().__init__(data)
        cast(forms.ModelChoiceField, self.fields["criterion"]).queryset = Criterion.objects.filter(
            campaign=campaign
        )

    def clean_scope(self) -> str:
        return self.cleaned_data["scope"] or JudgeRun.Scope.ALL


class ResumeForm(MessagesMixin, forms.Form):
    """A run to resume, with an optional new token budget."""

    token_budget = WholeNumberField(required=False)
