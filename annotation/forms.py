"""The forms of the annotation pages: what a request may carry, checked before any domain call.

Each form names the field at fault, so that a page can say what to fix. A domain function that
refuses an argument raises an error naming it: :func:`add_domain_error` puts the message on that
field when the error carries it (``error.field``), else on the form as a whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation import limits
from annotation.criteria.editing import CriterionDraft, criterion_problems, parse_categories, parse_groups
from annotation.errors import FieldError
from annotation.models import Campaign, Criterion, Level, Stage, Unit
from annotation.team import ROLE_NAMES, ROLE_ORDER
from annotation.workbench import shown_title

THEME_BUDGET_PREFIX = "theme_budget:"


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
    if isinstance(error, FieldError) and error.field in form.fields:
        form.add_error(error.field, error.reason)  # the field's label is shown before it
    else:
        form.add_error(None, str(error))


def request_errors(form: forms.Form) -> str:
    """A refused request's fields and what is wrong with each, as plain text (for a 400)."""
    return "; ".join(f"{name} {message}" for name, messages in form.errors.items() for message in messages)


# The stage pages (label, review, adjudication): hidden fields a person never types.

_NUMBER = {"invalid": _("must be a whole number"), "required": _("is required")}


class LabelForm(forms.Form):
    """A label: the unit, the value, an optional comment, the request key and the guidelines shown;
    ``shown``, the unit the page put on screen as it sent the label (its prefetched one)."""

    unit_id = forms.IntegerField(error_messages=_NUMBER)
    value = forms.IntegerField(error_messages=_NUMBER)
    comment = forms.CharField(required=False, strip=False, max_length=limits.COMMENT)
    request_key = forms.CharField(required=False)
    guidelines_version = forms.IntegerField(required=False, error_messages=_NUMBER)
    shown = forms.IntegerField(required=False, error_messages=_NUMBER)


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


# Sampling (managers)


class CriterionChoiceField(forms.ModelChoiceField):
    """A criterion chosen by its name, shown by its title (``workbench.shown_title``) and level."""

    def label_from_instance(self, obj: Criterion) -> str:
        return f"{shown_title(obj.title)} ({str(obj.get_level_display()).lower()})"


class SampleDrawForm(forms.Form):
    """A stratified draw: criterion, budget, units per cluster, seed, and optional budgets per theme.

    Every theme of the campaign has its field ``theme_budget:<theme>``; a posted theme the campaign
    does not have is kept too, so that the draw refuses it by name instead of ignoring it.
    """

    criterion = CriterionChoiceField(
        queryset=Criterion.objects.none(),
        to_field_name="name",
        empty_label=None,
        label=_("criterion"),
        error_messages={
            "required": _("choose one of the campaign's criteria"),
            "invalid_choice": _("choose one of the campaign's criteria"),
        },
    )
    budget = WholeNumberField(
        min_value=1,
        initial=140,
        label=_("budget"),
        error_messages={"required": _("give the number of human labels to spend")},
    )
    per_cluster = WholeNumberField(min_value=1, required=False, initial=3, label=_("per cluster"))
    seed = WholeNumberField(min_value=0, required=False, initial=0, label=_("seed"))

    def __init__(self, data=None, *, criteria: QuerySet[Criterion], themes: Iterable[str]) -> None:
        super().__init__(data, auto_id="%s")
        cast(forms.ModelChoiceField, self.fields["criterion"]).queryset = criteria
        themes = list(themes)
        posted = [
            key.removeprefix(THEME_BUDGET_PREFIX) for key in self.data if key.startswith(THEME_BUDGET_PREFIX)
        ]
        for number, theme in enumerate(dict.fromkeys([*themes, *posted]), start=1):
            self.fields[THEME_BUDGET_PREFIX + theme] = WholeNumberField(
                min_value=0,
                required=False,
                label=_("budget for %(theme)s") % {"theme": theme},
                widget=forms.NumberInput(attrs={"id": f"theme-budget-{number}"}),
            )
        self.theme_fields = [(theme, self[THEME_BUDGET_PREFIX + theme]) for theme in themes]

    def per_theme_budget(self) -> dict[str, int] | None:
        """The budgets given per theme (blank themes share the rest); None when none was given."""
        budgets = {
            name.removeprefix(THEME_BUDGET_PREFIX): value
            for name, value in self.cleaned_data.items()
            if name.startswith(THEME_BUDGET_PREFIX) and value is not None
        }
        return budgets or None

    def draw_arguments(self) -> dict:
        """The arguments of the draw, with the defaults of the blank fields."""
        data = self.cleaned_data
        return {
            "criterion": data["criterion"],
            "budget": data["budget"],
            "seed": 0 if data["seed"] is None else data["seed"],
            "per_cluster": 3 if data["per_cluster"] is None else data["per_cluster"],
            "per_theme_budget": self.per_theme_budget(),
        }


def sample_draw_form(*, campaign: Campaign, data=None) -> SampleDrawForm:
    """The draw form of ``campaign``: its criteria, and a budget field per theme of its units
    (the sampling page and the API read draws through it)."""
    themes = (
        Unit.objects.filter(campaign=campaign).values_list("theme", flat=True).distinct().order_by("theme")
    )
    return SampleDrawForm(
        data, criteria=Criterion.objects.filter(campaign=campaign).order_by("name"), themes=themes
    )


class TopUpForm(forms.Form):
    """A top-up: a larger budget, more units per cluster, or both; blank keeps the sample's value."""

    budget = WholeNumberField(min_value=1, required=False, label=_("budget"))
    per_cluster = WholeNumberField(min_value=1, required=False, label=_("per cluster"))

    def __init__(self, data=None, *, budget: int, per_cluster: int) -> None:
        super().__init__(data)
        # The page proposes no less than the sample has; the draw says why a smaller one is refused.
        self.fields["budget"].widget.attrs.update(id="top-up-budget", min=budget)
        self.fields["per_cluster"].widget.attrs.update(id="top-up-per-cluster", min=per_cluster)


# The label history (managers)


class HistoryFilterForm(forms.Form):
    """Filters of the label history: person, criterion, stage. A value the campaign does not know
    is ignored (the filter is left out), as a stale bookmark deserves."""

    user = forms.ChoiceField(required=False)
    criterion = forms.ChoiceField(required=False)
    stage = forms.ChoiceField(required=False, choices=[("", ""), *Stage.choices])

    def __init__(self, data, *, people: Iterable[AbstractBaseUser], criteria: Iterable[Criterion]) -> None:
        super().__init__(data)
        self.people = list(people)
        self.criteria = list(criteria)
        cast(forms.ChoiceField, self.fields["user"]).choices = [
            ("", ""),
            *((str(person.pk), person.get_username()) for person in self.people),
        ]
        cast(forms.ChoiceField, self.fields["criterion"]).choices = [
            ("", ""),
            *((c.name, shown_title(c.title)) for c in self.criteria),
        ]
        self.is_valid()

    def selected(self) -> dict[str, str]:
        """The filters in force, as the query string carries them (unknown values left out)."""
        return {name: self.cleaned_data.get(name) or "" for name in ("user", "criterion", "stage")}

    def arguments(self) -> dict:
        """The filters as the history functions take them (None: no filter)."""
        selected = self.selected()
        by_name = {criterion.name: criterion.pk for criterion in self.criteria}
        return {
            "user_id": int(selected["user"]) if selected["user"] else None,
            "criterion_id": by_name.get(selected["criterion"]),
            "stage": selected["stage"] or None,
        }


# The team page (managers): add a member, grant or revoke a role, remove a member.


def _role_choices() -> list[tuple[str, str | Promise]]:
    return [(role.value, ROLE_NAMES[role]) for role in ROLE_ORDER]


class AddMemberForm(forms.Form):
    """An existing account, by username, and the roles it gets; annotator unless said otherwise."""

    username = forms.CharField(label=_("Username"), max_length=150)
    roles = forms.MultipleChoiceField(
        label=_("Roles"), choices=_role_choices, widget=forms.CheckboxSelectMultiple, initial=["annotator"]
    )

    def clean_username(self) -> str:
        return self.cleaned_data["username"].strip()


class MemberForm(forms.Form):
    """One member of the campaign (a hidden field on the team page's buttons)."""

    user: forms.ModelChoiceField = forms.ModelChoiceField(queryset=None, widget=forms.HiddenInput)

    def __init__(self, data=None, *, campaign: Campaign) -> None:
        super().__init__(data)
        people = get_user_model().objects.filter(memberships__campaign=campaign).distinct()
        cast(forms.ModelChoiceField, self.fields["user"]).queryset = people


class MemberRoleForm(MemberForm):
    """One member and one role: what a grant or a revocation names."""

    role = forms.ChoiceField(label=_("Role"), choices=_role_choices)


class CriterionForm(forms.Form):
    """A criterion as the criteria page writes it. Name, level and kind at creation only
    (``editing`` leaves them out); categories and groups as text (``annotation.criteria.editing``)."""

    # The server says what is missing, in place, in the page's language.
    use_required_attribute = False

    name = forms.SlugField(label=_("Name"), max_length=100, help_text=_("letters, digits, - and _"))
    level = forms.ChoiceField(label=_("Level"), choices=Level.choices, initial=Level.ANSWER)
    kind = forms.ChoiceField(
        label=_("Kind"),
        choices=[("binary", _("Binary (1 / 0)")), ("categorical", _("Named categories"))],
        initial="binary",
    )
    title = forms.CharField(
        label=_("Title"),
        max_length=200,
        help_text=_("what people read wherever the criterion is named; unique in the campaign"),
        error_messages={
            "required": _("give the criterion a title: it is what people read wherever it is named")
        },
    )
    positive_key = forms.CharField(
        label=_("Key of 1"),
        max_length=1,
        initial="1",
        required=False,
        strip=False,
        help_text=_("binary only"),
    )
    negative_key = forms.CharField(
        label=_("Key of 0"),
        max_length=1,
        initial="0",
        required=False,
        strip=False,
        help_text=_("binary only"),
    )
    categories = forms.CharField(
        label=_("Categories"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text=_("one per line: value | key | name | title (named categories only)"),
    )
    category_groups = forms.CharField(
        label=_("Groups"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("optional, one per line: name: values, such as hallucination: 2, 4"),
    )
    guidelines = forms.CharField(
        label=_("Guidelines"),
        required=False,
        max_length=limits.GUIDELINES,
        widget=forms.Textarea(attrs={"rows": 8}),
    )
    judge_prompt = forms.CharField(
        label=_("Judge prompt"),
        required=False,
        max_length=limits.JUDGE_PROMPT,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text=_("blank: the built-in framing around the guidelines"),
    )

    def __init__(
        self,
        data=None,
        *,
        campaign: Campaign,
        criterion: Criterion | None = None,
        initial: dict | None = None,
    ) -> None:
        super().__init__(data, initial=initial)
        self.campaign, self.criterion = campaign, criterion
        if criterion is not None:
            for name in ("name", "level", "kind"):
                del self.fields[name]

    def clean(self) -> dict:
        """Every refusal at once: the fields' own, the categories' and groups' text, then what
        ``criterion_problems`` finds in the rest (the name or title taken, the keys...)."""
        data = super().clean() or self.cleaned_data
        for field, parse in (("categories", parse_categories), ("category_groups", parse_groups)):
            if field in data:
                try:
                    parse(data[field])
                except FieldError as error:
                    add_domain_error(self, error)
        problems = criterion_problems(
            campaign=self.campaign, draft=self.draft(), criterion=self.criterion, skip=list(self.errors)
        )
        for problem in problems:
            add_domain_error(self, problem)
        return data

    def draft(self) -> CriterionDraft:
        """The criterion the form describes, with what it holds of its valid fields (a field
        in error counts as empty)."""
        data = self.cleaned_data

        def parsed(field: str, parse, empty):
            try:
                return parse(data.get(field) or "") if field not in self.errors else empty
            except FieldError:
                return empty

        return CriterionDraft(
            name=data.get("name", ""),
            level=data.get("level", ""),
            kind=data.get("kind", ""),
            title=data.get("title") or "",
            positive_key=data.get("positive_key") or "1",
            negative_key=data.get("negative_key") or "0",
            categories=parsed("categories", parse_categories, []),
            groups=parsed("category_groups", parse_groups, {}),
            guidelines=data.get("guidelines") or "",
            judge_prompt=data.get("judge_prompt") or "",
        )
