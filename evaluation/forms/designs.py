"""The input of the pages that draw a human sample by the judge: the confidence-driven sample
(its split planned, then drawn: ``evaluation.designs.budget_split``) and the anytime mode's sequences
(``evaluation.designs.anytime``). Both name a criterion and a judge of the campaign; unbound, both read
the report's default judge and the first criterion it gave confidences on (one with a pilot's
worth of human labels first), so that the page shows something before anything is asked.
"""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Count, Exists, OuterRef
from django.utils.translation import gettext_lazy as _

from annotation.forms import CriterionChoiceField
from annotation.models import Campaign, Criterion, Label
from evaluation.designs import anytime, judge_plan
from evaluation.designs.active import PilotNeeded
from evaluation.errors import EstimateError
from evaluation.estimates import judge_choice
from evaluation.estimates.params import check_alpha
from evaluation.forms.fields import MessagesMixin, NumberField
from evaluation.forms.reports import DEFAULT_ALPHA
from evaluation.models import Judge, Judgment
from inference.designs import allocation
from inference.reliability.calibration import MIN_LABELS

DEFAULT_SAMPLE_BUDGET = 60


class JudgeSampleForm(forms.Form):
    """A criterion and a judge of ``campaign``; subclasses add their fields, and their
    ``defaults`` what an unbound page reads besides the criterion and the judge."""

    judge_required = _("choose a judge of this campaign")

    criterion = CriterionChoiceField(
        queryset=Criterion.objects.none(),
        to_field_name="name",
        empty_label=None,
        label=_("criterion"),
        error_messages={"invalid_choice": _("choose one of the campaign's criteria")},
    )
    judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(),
        to_field_name="name",
        label=_("judge"),
        error_messages={"invalid_choice": _("choose one of the campaign's judges")},
    )

    def defaults(self) -> dict[str, Any]:
        return {}

    def __init__(self, data=None, *, campaign: Campaign) -> None:
        criteria = Criterion.objects.filter(campaign=campaign).exclude(kind="categorical").order_by("name")
        self.choice_needed = False
        # The candidate judges of each criterion, when the defaults have read them already.
        self.candidates: dict[int, list[Judge]] = {}
        if data is None:
            self.candidates = judge_choice.candidates_by_criterion(criteria=list(criteria), confidences=True)
            first, default = _first_with_confidences(
                criteria=list(criteria), candidates=self.candidates, labelled=_labelled_units(criteria)
            )
            initial = {
                "criterion": first.name if first else "",
                "judge": default.name if default else "",
                **self.defaults(),
            }
            if default is None:
                # No judge to read without asking (several, none primary, or none yet): the page
                # shows the form with the choice to make, not a refusal.
                self.choice_needed = True
                super().__init__(None, initial=initial)
            else:
                super().__init__(initial)
        else:
            super().__init__(data)
        cast(forms.ModelChoiceField, self.fields["criterion"]).queryset = criteria
        judge = cast(forms.ModelChoiceField, self.fields["judge"])
        # The judges that labeled something: a judge whose every call failed offers nothing to draw by.
        succeeded = Judgment.objects.filter(judge=OuterRef("pk"), status=Judgment.Status.OK)
        judge.queryset = Judge.objects.filter(campaign=campaign).filter(Exists(succeeded)).order_by("name")
        judge.error_messages["required"] = self.judge_required

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        criterion, judge = data.get("criterion"), data.get("judge")
        if criterion is not None and judge is not None:
            try:
                judge_choice.choose_judge(
                    criterion=criterion, name=judge.name, judges=self.candidates.get(criterion.pk)
                )
            except EstimateError as exc:
                self.add_error("judge", exc.message)
        return data


def _labelled_units(criteria) -> dict[int, int]:
    """Criterion id -> units people or an import labelled for it (one query)."""
    rows = (
        Label.objects.filter(criterion__in=criteria)
        .values("criterion")
        .annotate(n=Count("unit", distinct=True))
    )
    return {row["criterion"]: row["n"] for row in rows}


def _first_with_confidences(
    *, criteria: list[Criterion], candidates: dict[int, list[Judge]], labelled: dict[int, int]
) -> tuple[Criterion | None, Judge | None]:
    """The criterion an unbound page opens on and its default judge among its ``candidates``
    (``judge_choice``, read with their confidences): the first criterion whose default judge gave
    confidences on it and that has a pilot's worth of labelled units (``labelled``, per
    criterion id: the designs need one), else the first whose default judge gave confidences,
    else the first with a default judge, else the first criterion (and no judge)."""
    defaults = [(c, judge_choice.default_choice(judges=candidates[c.pk])[0]) for c in criteria]
    scored = [(c, judge) for c, judge in defaults if judge is not None and judge.has_confidences]
    piloted = [(c, judge) for c, judge in scored if labelled.get(c.pk, 0) >= MIN_LABELS]
    judged = [(c, judge) for c, judge in defaults if judge is not None]
    for found in (piloted, scored, judged):
        if found:
            return found[0]
    return (criteria[0], None) if criteria else (None, None)


class ConfidenceSampleForm(JudgeSampleForm):
    """A confidence-driven draw: criterion, judge, expected labels, what the split minimises,
    whether it goes within themes by the judge's verdict, seed. Unbound: 60 labels, the overall
    rate, themes not split, seed 0."""

    judge_required = _("the judge-confidence design needs a judge of this campaign; choose one")
    # The missing pilot's refusal, set by the page when the split asked for needs one.
    pilot_needed: PilotNeeded | None = None

    budget = forms.IntegerField(min_value=1, label=_("budget"))
    objective = forms.ChoiceField(
        choices=[
            (allocation.OVERALL, _("the overall half-width")),
            (allocation.LARGEST_THEME, _("the largest per-theme half-width")),
        ],
        label=_("objective"),
    )
    by_verdict = forms.BooleanField(required=False, label=_("split each theme by the judge's verdict"))
    seed = forms.IntegerField(min_value=0, max_value=2**31 - 1, label=_("seed"))
    without_pilot = forms.BooleanField(
        required=False, label=_("draw without a pilot, on the judge's confidence as it gave it")
    )

    def defaults(self) -> dict[str, Any]:
        return {
            "budget": DEFAULT_SAMPLE_BUDGET,
            "objective": allocation.OVERALL,
            "by_verdict": False,
            "seed": 0,
            "without_pilot": False,
        }


class AnytimeForm(JudgeSampleForm):
    """An anytime sequence to start: criterion, judge, target half-width, draws per theme and
    batch, alpha, seed. Unbound: a half-width of 0.05, 20 draws per theme, alpha 0.05, seed 0.
    The ranges are the domain's (``evaluation.designs.anytime.start_sequence``), whose refusals land on
    their field."""

    judge_required = _("the anytime mode draws by a judge's confidence; choose a judge of this campaign")

    target_halfwidth = NumberField(
        label=_("target half-width"), widget=forms.NumberInput(attrs={"step": "any"})
    )
    batch_size = forms.IntegerField(label=_("draws per theme and batch"))
    alpha = NumberField(label=_("alpha"), widget=forms.NumberInput(attrs={"step": "any"}))
    seed = forms.IntegerField(min_value=0, max_value=2**31 - 1, label=_("seed"))

    def defaults(self) -> dict[str, Any]:
        return {
            "target_halfwidth": anytime.DEFAULT_TARGET,
            "batch_size": anytime.DEFAULT_BATCH,
            "alpha": anytime.DEFAULT_ALPHA,
            "seed": 0,
        }


class JudgePlanForm(MessagesMixin, forms.Form):
    """The planner of several judges (GET, and the draw's POST): ``target`` the half-width per
    theme (default ``judge_plan.DEFAULT_TARGET``, strictly between 0 and 0.5), ``alpha``, and the
    ``judges`` to consider among ``candidates`` (default: the first ``judge_plan.MAX_JUDGES``; at
    most that many), and ``minutes`` per label in place of the people's pace (optional). Missing
    parameters take their defaults; a wrong one its default too, with its message."""

    target = NumberField(label=_("Target half-width per theme"), required=False)
    alpha = NumberField(label=_("Alpha (1 − confidence)"), required=False)
    minutes = NumberField(label=_("Minutes per label (empty: the people's pace)"), required=False)
    judges = forms.MultipleChoiceField(
        label=_("Judges to consider"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        error_messages={"invalid_choice": _("%(value)s is not a judge of this criterion")},
    )

    def __init__(self, data: Any, *, candidates: list[Judge]) -> None:
        super().__init__(data)
        self.candidates = candidates
        cast(forms.MultipleChoiceField, self.fields["judges"]).choices = [
            (judge.name, judge.name) for judge in candidates
        ]

    def clean_target(self) -> float:
        target = self.cleaned_data.get("target")
        if target is None:
            return judge_plan.DEFAULT_TARGET
        if not (0 < target < 0.5):
            raise ValidationError(_("give a half-width strictly between 0 and 0.5"))
        return float(target)

    def clean_alpha(self) -> float:
        alpha = self.cleaned_data.get("alpha")
        if alpha is None:
            return DEFAULT_ALPHA
        try:
            return check_alpha(alpha)
        except EstimateError as exc:
            raise ValidationError(exc.reason) from None

    def clean_minutes(self) -> float | None:
        minutes = self.cleaned_data.get("minutes")
        if minutes is not None and not (0 < minutes <= 600):
            raise ValidationError(_("give the minutes a label takes, more than 0 and at most 600"))
        return minutes

    def clean_judges(self) -> list[str]:
        names = self.cleaned_data.get("judges") or []
        if len(names) > judge_plan.MAX_JUDGES:
            raise ValidationError(
                _("choose at most %(count)s judges"), params={"count": judge_plan.MAX_JUDGES}
            )
        return names

    def given_minutes(self) -> float | None:
        """The minutes per label given (None: the people's pace, or a wrong value)."""
        data = self.cleaned_data if hasattr(self, "cleaned_data") else {}
        return None if "minutes" in self.errors else data.get("minutes")

    def params(self) -> tuple[float, float, list[Judge]]:
        """Target, alpha and the judges in effect, each one's default where it was wrong."""
        data = self.cleaned_data if hasattr(self, "cleaned_data") else {}
        target = judge_plan.DEFAULT_TARGET if "target" in self.errors else data.get("target")
        alpha = DEFAULT_ALPHA if "alpha" in self.errors else data.get("alpha")
        names = [] if "judges" in self.errors else data.get("judges") or []
        chosen = [judge for judge in self.candidates if judge.name in names]
        if not chosen:
            chosen = self.candidates[: judge_plan.MAX_JUDGES]
        return (
            judge_plan.DEFAULT_TARGET if target is None else target,
            DEFAULT_ALPHA if alpha is None else alpha,
            chosen,
        )


def requested_plan(
    *,
    criterion: Criterion,
    target: float | None = None,
    alpha: float | None = None,
    judges: list[str] | None = None,
    minutes: float | None = None,
) -> judge_plan.JudgePlan:
    """The plan of ``criterion`` for parameters given outside the page (the command, the API),
    checked by the page's form: EstimateError on the first parameter at fault (``judges``
    missing for a judge that is not one of the criterion's)."""
    data: dict[str, Any] = {
        key: "" if value is None else str(value)
        for key, value in (("target", target), ("alpha", alpha), ("minutes", minutes))
    }
    data["judges"] = list(judges or [])
    candidates = judge_choice.candidates(criterion=criterion)
    form = JudgePlanForm(data, candidates=candidates)
    if not form.is_valid():
        field, errors = next(iter(form.errors.items()))
        known = {judge.name for judge in candidates}
        missing = field == "judges" and any(name not in known for name in data["judges"])
        raise EstimateError(str(errors[0]), field=field, missing=missing)
    chosen_target, chosen_alpha, chosen = form.params()
    return judge_plan.compute_plan(
        criterion=criterion,
        judges=chosen,
        target=chosen_target,
        alpha=chosen_alpha,
        minutes=form.given_minutes(),
    )


class HourlyRateForm(forms.Form):
    """What an hour of labelling costs on the campaign (empty: unset), in the judges' prices' unit."""

    rate = NumberField(label=_("Cost of an hour of labelling"), required=False)

    def clean_rate(self) -> float | None:
        rate = self.cleaned_data.get("rate")
        if rate is not None and not (0 <= rate < 1e9):
            raise ValidationError(_("give a cost of 0 or more"))
        return rate


class ShareDrawForm(JudgePlanForm):
    """The planner's parameters and the seed of the shares' draw."""

    seed = forms.IntegerField(label=_("Seed"), min_value=0, max_value=2**32 - 1, required=False)
