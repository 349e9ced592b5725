"""The input of the evaluation pages, checked: report parameters (report, history, downloads),
two campaigns compared, a recomputation asked for, a judge run started or resumed, an import.
The forms of the measures' pages are in ``evaluation.measure_forms``, those that draw a sample by
the judge in ``evaluation.sampling_forms``.

A rule the domain owns (which methods exist, what alpha may be, which judge a name means) is
checked by the domain function, whose error carries its field (``EstimateError.field``); the
form places the message on that field. Numbers are read as sent, never localised: a French page
sends "0.05" (its inputs say ``step="any"`` and their values are ``|unlocalize``d).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.forms.utils import ErrorDict
from django.utils.translation import gettext_lazy as _

from annotation import ingest
from annotation.models import Campaign, Criterion, Unit
from annotation.templatetags.annotation_format import builtin_title
from evaluation import estimates, import_previews, judge_choice
from evaluation.estimates import EstimateError
from evaluation.models import Judge, JudgeRun
from evaluation.snapshots import SNAPSHOT_ALPHA

DEFAULT_METHOD = "robust"
DEFAULT_ALPHA = SNAPSHOT_ALPHA
DEFAULT_TARGET = 0.05


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


@dataclass(frozen=True)
class ReportParams:
    """What a report page reads: the judge (None: none yet, or several to choose from, as
    ``no_judge`` says), the method, alpha and the planner's target half-width; a parameter
    that was wrong holds its default."""

    judge: Judge | None
    method: str
    alpha: float
    target: float
    no_judge: str = ""
    shrinkage: bool = False


class ReportForm(MessagesMixin, forms.Form):
    """The GET parameters of a report, its history and its downloads.

    ``judge``: a name among ``judges``; none picks :func:`judge_choice.pick_default_judge`'s choice
    (none when several judges were run: the reader picks one). ``method``: robust or study.
    ``alpha`` and ``target``: strictly between 0 and 1. ``shrinkage``: add each theme's PPI++
    estimate shrunk toward the judge (``evaluation.small_themes``), off unless asked for.
    """

    judge = forms.CharField(required=False)
    method = forms.CharField(required=False)
    alpha = NumberField(required=False)
    target = NumberField(required=False)
    shrinkage = forms.BooleanField(required=False)

    def __init__(self, data: Any, *, judges: list[Judge]) -> None:
        super().__init__(data)
        self.judges = judges

    def clean_target(self) -> float:
        target = self.cleaned_data["target"]
        if target is None:
            return DEFAULT_TARGET
        if not (0 < target < 1):
            raise ValidationError(
                _("must be strictly between 0 and 1, got %(value)s"), params={"value": f"{target:g}"}
            )
        return target

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        if "method" in data:
            data["method"] = data["method"] or DEFAULT_METHOD
        if "alpha" in data and data["alpha"] is None:
            data["alpha"] = DEFAULT_ALPHA
        self._check("method", estimates.check_method)
        self._check("alpha", estimates.check_alpha)
        self._check("judge", lambda name: judge_choice.choose_judge(judges=self.judges, name=name))
        return data

    def _check(self, key: str, check: Callable[[Any], Any], *, prefix: str = "") -> None:
        """Replace ``cleaned_data[key]`` by what the domain's ``check`` returns for it, or place
        the domain's error on the field it names (under ``prefix``)."""
        if key not in self.cleaned_data:
            return
        try:
            self.cleaned_data[key] = check(self.cleaned_data[key])
        except EstimateError as exc:
            self.add_error(prefix + (exc.field or key), exc.message)

    def params(self) -> ReportParams:
        """The parameters, each one's default where it was wrong (call after ``is_valid``)."""
        data = self.cleaned_data
        judge = data.get("judge")
        no_judge = ""
        if judge is None and not self.data.get("judge"):
            names = ", ".join(j.name for j in self.judges)
            no_judge = (
                f"several judges have labeled this campaign: choose one ({names})"
                if self.judges
                else "no judge has labeled this campaign yet"
            )
        return ReportParams(
            judge=judge,
            method=data.get("method", DEFAULT_METHOD),
            alpha=data.get("alpha", DEFAULT_ALPHA),
            target=data.get("target", DEFAULT_TARGET),
            no_judge=no_judge,
            shrinkage=bool(data.get("shrinkage", False)),
        )


class CompareForm(ReportForm):
    """The report's parameters and the other campaign: ``other`` (a slug among ``candidates``,
    the campaigns the user manages or analyses) and ``other_judge`` (a name among its judges,
    defaulting as ``judge`` does). Both campaigns need a judge, and the other the criterion.
    ``more``: further campaigns among ``candidates`` (versions compared by question, each with
    its only judge)."""

    other = forms.CharField(required=False)
    other_judge = forms.CharField(required=False)
    # More versions, compared by question with this one and ``other`` (each with its only judge).
    more = forms.MultipleChoiceField(required=False)

    def __init__(self, data: Any, *, judges: list[Judge], candidates: list[Campaign], criterion: Criterion):
        super().__init__(data, judges=judges)
        self.candidates = candidates
        more = cast(forms.MultipleChoiceField, self.fields["more"])
        more.choices = [(c.slug, c.name) for c in candidates]
        more.error_messages["invalid_choice"] = _("%(value)r is not a campaign you manage or analyse")
        self.criterion = criterion
        self.other_campaign: Campaign | None = None
        self.other_criterion: Criterion | None = None
        self.other_judges: list[Judge] = []

    def clean_other(self) -> Campaign | None:
        slug = self.cleaned_data["other"]
        if not slug:
            return None
        found = next((c for c in self.candidates if c.slug == slug), None)
        if found is None:
            # The same answer whether the campaign exists or not: outsiders learn nothing.
            raise ValidationError(
                _("%(slug)r is not a campaign you manage or analyse"), params={"slug": slug}
            )
        self.other_campaign = found
        self.other_judges = list(Judge.objects.filter(campaign=found).order_by("name"))
        self.other_criterion = Criterion.objects.filter(campaign=found, name=self.criterion.name).first()
        return found

    def clean_more(self) -> list[Campaign]:
        slugs = set(self.cleaned_data["more"])
        return [c for c in self.candidates if c.slug in slugs]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        other = data.get("other")
        if other is None:
            data["other_judge"] = None
            return data
        self._check(
            "other_judge",
            lambda name: judge_choice.choose_judge(judges=self.other_judges, name=name),
            prefix="other_",
        )
        if self.errors:
            return data
        if self.other_criterion is None:
            self.add_error(
                "other",
                _("%(campaign)s has no criterion %(criterion)s")
                % {"campaign": repr(other.name), "criterion": repr(self.criterion.name)},
            )
        if data.get("judge") is None:
            self.add_error("judge", self.params().no_judge)
        if data.get("other_judge") is None and not self.data.get("other_judge"):
            names = ", ".join(j.name for j in self.other_judges)
            self.add_error(
                "other",
                _("several judges have labeled this campaign: choose one (%(names)s)") % {"names": names}
                if self.other_judges
                else _("no judge has labeled this campaign yet"),
            )
        return data


class RefreshForm(forms.Form):
    """A recomputation asked for: the report parameters to come back with, and ``back``
    ("report" to come back to the report, the history otherwise). The parameters are passed on
    as sent; the page they come back to checks them."""

    judge = forms.CharField(required=False)
    method = forms.CharField(required=False)
    alpha = forms.CharField(required=False)
    back = forms.ChoiceField(choices=[("", ""), ("report", "report")], required=False)

    def query(self) -> str:
        """``?judge=...&method=...&alpha=...`` with the parameters sent, or ""."""
        kept = {
            key: self.cleaned_data[key] for key in ("judge", "method", "alpha") if self.cleaned_data.get(key)
        }
        return "?" + urlencode(kept) if kept else ""


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
        error_messages={"invalid_choice": _("%(value)r is not one of all, missing, failed")},
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


def _campaign_name(name: str, *, may_manage: Callable[[Campaign], bool]) -> str:
    """A campaign name typed on the new-campaign page: not empty, and new or managed."""
    name = name.strip()
    if not name:
        raise ValidationError(_("give a campaign name"))
    existing = Campaign.objects.filter(name=name).first()
    if existing is not None and not may_manage(existing):
        # A form error, not 403: the name is taken (names are unique), whoever holds it.
        raise ValidationError(_("this name is taken by a campaign you do not manage: choose another name"))
    return name


class ImportForm(forms.Form):
    """An import through the browser: the campaign's name (for a new campaign; an existing one
    is named by the page), the file, an optional column mapping and whether to replace answers.

    ``user`` may import into an existing campaign by name only when managing it."""

    campaign = forms.CharField(required=False)
    file = forms.FileField(allow_empty_file=True, error_messages={"required": _("choose a file")})
    mapping = forms.FileField(required=False, allow_empty_file=True)
    update = forms.BooleanField(required=False)
    # The page's form asks for a preview first; a POST without it imports at once.
    preview = forms.BooleanField(required=False)

    def __init__(self, data: Any = None, files: Any = None, *, campaign: Campaign | None, may_manage) -> None:
        super().__init__(data, files)
        self.target = campaign
        self.may_manage = may_manage

    def clean_campaign(self) -> str:
        if self.target is not None:
            return self.target.name
        return _campaign_name(self.cleaned_data["campaign"], may_manage=self.may_manage)

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > settings.IMPORT_MAX_BYTES:
            # A body declaring more is refused before it is read (config/middleware.py); this
            # catches a file sent without a Content-Length.
            raise ValidationError(
                _("%(size)s bytes is more than the limit of %(limit)s bytes (IMPORT_MAX_BYTES)"),
                params={"size": upload.size, "limit": settings.IMPORT_MAX_BYTES},
            )
        return upload

    def row_errors(self) -> list[ingest.RowError]:
        """The form's errors as the import's own errors (file, row, field, message)."""
        upload = self.files.get("file")
        name = (upload.name if upload is not None else None) or "upload"
        return [
            ingest.RowError(file=name, row=None, field=field, message=str(message))
            for field, messages in self.errors.items()
            for message in messages
        ]

    def entered_name(self) -> str:
        """The campaign name as typed, to fill the form in again."""
        if self.target is not None:
            return self.target.name
        return (self.data.get("campaign") or "").strip()


class ConfirmImportForm(forms.Form):
    """The confirmation of a previewed import: the preview's token, which must be this user's,
    for this page's campaign (``campaign``; None on the new-campaign page, where the token's
    campaign name is checked again as typed), not expired and not yet imported."""

    token = forms.CharField(max_length=1000)

    def __init__(self, data: Any = None, *, campaign: Campaign | None, may_manage, user_id: int) -> None:
        super().__init__(data)
        self.target = campaign
        self.may_manage = may_manage
        self.user_id = user_id

    def clean_token(self) -> import_previews.StoredUpload:
        token = self.cleaned_data["token"]
        # On the new-campaign page the token's own campaign name stands, checked again below.
        name = self.target.name if self.target is not None else None
        try:
            stored = import_previews.open_upload(token=token, user_id=self.user_id, campaign=name)
        except import_previews.PreviewRefused as exc:
            raise ValidationError(str(exc)) from None
        if self.target is None:
            _campaign_name(stored.campaign, may_manage=self.may_manage)
        return stored

    def row_errors(self) -> list[ingest.RowError]:
        """The form's errors as the import's own errors (file, row, field, message)."""
        return [
            ingest.RowError(file="upload", row=None, field=field, message=str(message))
            for field, messages in self.errors.items()
            for message in messages
        ]


class DisagreementForm(forms.Form):
    """The filters of the disagreements between humans and a judge: a theme, a judge (by name).

    No judge named: the first judge by name. Themes are those of the criterion's units.
    """

    theme = forms.ChoiceField(label=_("Theme"), required=False)
    judge = forms.ChoiceField(label=_("Judge"), required=False)

    def __init__(self, data: Any, *, criterion: Criterion, judges: list[Judge]) -> None:
        super().__init__(data)
        self.judges = {judge.name: judge for judge in judges}
        themes = (
            Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level)
            .order_by("theme")
            .values_list("theme", flat=True)
            .distinct()
        )
        cast(forms.ChoiceField, self.fields["theme"]).choices = [
            ("", _("All themes")),
            *((t, t) for t in themes),
        ]
        cast(forms.ChoiceField, self.fields["judge"]).choices = [(name, name) for name in self.judges]

    def clean_judge(self) -> Judge | None:
        name = self.cleaned_data.get("judge")
        if name:
            return self.judges[name]
        return next(iter(self.judges.values()), None)

    def query(self) -> str:
        """The filters as a query string (for the pager's links), without empty values."""
        judge = self.cleaned_data.get("judge")
        pairs = {"theme": self.cleaned_data.get("theme") or "", "judge": judge.name if judge else ""}
        return urlencode({key: value for key, value in pairs.items() if value})


class AnnotatorsForm(forms.Form):
    """The criterion the annotators' page details, by name. None named: the first criterion by
    name that has human labels, else the first by name (None when the campaign has none)."""

    criterion = forms.ChoiceField(label=_("Criterion"), required=False)

    def __init__(self, data: Any, *, criteria: list[Criterion]) -> None:
        self.criteria = {criterion.name: criterion for criterion in criteria}
        default = self._default()
        if data is not None and not data.get("criterion") and default is not None:
            # The menu shows the criterion the page details, so that submitting it as it stands
            # keeps that criterion (a browser shows the first option of a menu with none chosen).
            data = data.copy()
            data["criterion"] = default.name
        super().__init__(data)
        cast(forms.ChoiceField, self.fields["criterion"]).choices = [
            (criterion.name, builtin_title(criterion.title or criterion.name)) for criterion in criteria
        ]

    def _default(self) -> Criterion | None:
        labelled = [c for c in self.criteria.values() if getattr(c, "has_human_labels", False)]
        return next(iter(labelled or self.criteria.values()), None)

    def clean_criterion(self) -> Criterion | None:
        name = self.cleaned_data.get("criterion")
        if name:
            return self.criteria[name]
        return self._default()
