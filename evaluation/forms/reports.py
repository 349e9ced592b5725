"""The input of the evaluation pages, checked: report parameters (report, history, downloads),
two campaigns compared, a recomputation asked for, a judge run started or resumed, an import.
The forms of the measures' pages are in ``evaluation.forms.measures``, those that draw a sample by
the judge in ``evaluation.forms.designs``.

A rule the domain owns (which methods exist, what alpha may be, which judge a name means) is
checked by the domain function, whose error carries its field (``EstimateError.field``); the
form places the message on that field. Numbers are read as sent, never localised: a French page
sends "0.05" (its inputs say ``step="any"`` and their values are ``|unlocalize``d).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlencode

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from annotation.models import Campaign, Criterion, Unit
from annotation.templatetags.annotation_format import builtin_title
from evaluation.errors import EstimateError
from evaluation.estimates import judge_choice
from evaluation.estimates.params import ANSWER
from evaluation.forms.fields import MessagesMixin, NumberField
from evaluation.models import Judge
from evaluation.reports.read import DEFAULT_ALPHA, DEFAULT_METHOD, ReportRequest, report_request
from inference.paired import BONFERRONI, HOLM

DEFAULT_TARGET = 0.05


@dataclass(frozen=True)
class ReportParams:
    """What a report page reads: the checked request (None when a parameter was wrong, or when
    the reader must choose a judge, as ``no_judge`` says), and the parameters to show back in
    the form, each one's default where it was wrong; the planner's target half-width."""

    request: ReportRequest | None
    judge: Judge | None
    method: str
    alpha: float
    target: float
    no_judge: str = ""
    shrinkage: bool = False
    clusters: str = ANSWER
    combine: tuple[str, ...] = ()


class ReportForm(MessagesMixin, forms.Form):
    """The GET parameters of a report, its history and its downloads, checked once by
    :func:`evaluation.reports.read.report_request`: ``judge`` a candidate of the criterion
    (``judge_choice``; none: the default one, and when there is none the page asks which, as
    ``params().no_judge`` says: not an error), ``method`` robust or study, ``alpha`` strictly
    between 0 and 1, ``shrinkage`` where it is offered, ``clusters`` answer (the default) or
    question, ``combine`` the judges to combine in one estimate beside the report (none by
    default; at least two). ``target``: the planner's half-width, strictly between 0 and 1."""

    judge = forms.CharField(required=False)
    method = forms.CharField(required=False)
    alpha = NumberField(required=False)
    target = NumberField(required=False)
    shrinkage = forms.BooleanField(required=False)
    clusters = forms.CharField(required=False)
    # Names checked by the domain (``judge_choice.pick_several``), which names the candidates.
    combine = forms.MultipleChoiceField(required=False)

    def __init__(self, data: Any, *, criterion: Criterion, judges: list[Judge]) -> None:
        super().__init__(data)
        self.criterion = criterion
        self.judges = judges
        self.request: ReportRequest | None = None
        self.no_judge = ""
        combine = cast(forms.MultipleChoiceField, self.fields["combine"])
        combine.choices = [(judge.name, judge.name) for judge in judges]
        combine.error_messages["invalid_choice"] = _("%(value)r is not a judge that labeled this criterion")

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
        if any(key not in data for key in ("judge", "method", "alpha")):
            return data
        try:
            self.request = report_request(
                criterion=self.criterion,
                judge=data["judge"],
                method=data["method"],
                alpha=data["alpha"],
                shrinkage=bool(data.get("shrinkage")),
                judges=self.judges,
                clusters=data.get("clusters") or ANSWER,
                combine=data.get("combine") or (),
            )
        except EstimateError as exc:
            if exc.field == "judge" and not data["judge"]:
                # No judge named and none to default to: the page asks, it is not an error.
                self.no_judge = str(exc.message)
            else:
                self.add_error(exc.field, exc.message)
        return data

    def params(self) -> ReportParams:
        """The parameters, each one's default where it was wrong (call after ``is_valid``)."""
        data = self.cleaned_data
        request = self.request if not self.errors else None
        method = data.get("method") or DEFAULT_METHOD
        alpha = data.get("alpha") or DEFAULT_ALPHA
        if "method" in self.errors:
            method = DEFAULT_METHOD
        if "alpha" in self.errors:
            alpha = DEFAULT_ALPHA
        return ReportParams(
            request=request,
            judge=request.judge if request is not None else None,
            method=method,
            alpha=alpha,
            target=data.get("target", DEFAULT_TARGET),
            no_judge=self.no_judge,
            shrinkage=bool(data.get("shrinkage", False)),
            clusters=ANSWER if "clusters" in self.errors else (data.get("clusters") or ANSWER),
            combine=() if "combine" in self.errors else tuple(data.get("combine") or ()),
        )


class CompareForm(ReportForm):
    """The report's parameters and the other campaign: ``other`` (a slug among ``candidates``,
    the campaigns the user manages or analyses) and ``other_judge`` (a candidate of its
    criterion, defaulting as ``judge`` does). Both campaigns need a judge, and the other the
    criterion. ``more``: further campaigns among ``candidates`` (versions compared by question,
    each with its default judge)."""

    other = forms.CharField(required=False)
    other_judge = forms.CharField(required=False)
    # More versions, compared by question with this one and ``other`` (each with its default judge).
    more = forms.MultipleChoiceField(required=False)
    # How the pairs' p-values are adjusted for their number.
    adjust = forms.ChoiceField(
        required=False,
        choices=[(HOLM, _("Holm")), (BONFERRONI, _("Bonferroni"))],
        error_messages={"invalid_choice": _("choose Holm or Bonferroni")},
    )

    def __init__(self, data: Any, *, judges: list[Judge], candidates: list[Campaign], criterion: Criterion):
        super().__init__(data, criterion=criterion, judges=judges)
        self.candidates = candidates
        more = cast(forms.MultipleChoiceField, self.fields["more"])
        more.choices = [(c.slug, c.name) for c in candidates]
        more.error_messages["invalid_choice"] = _("%(value)r is not a campaign you manage or analyse")
        self.other_campaign: Campaign | None = None
        self.other_criterion: Criterion | None = None
        self.other_judges: list[Judge] = []
        self.other_request: ReportRequest | None = None

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
        self.other_criterion = Criterion.objects.filter(campaign=found, name=self.criterion.name).first()
        if self.other_criterion is not None:
            self.other_judges = judge_choice.candidates(criterion=self.other_criterion)
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
        if self.other_criterion is None:
            self.add_error(
                "other",
                _("%(campaign)s has no criterion %(criterion)s")
                % {"campaign": repr(other.name), "criterion": repr(self.criterion.name)},
            )
            return data
        if self.no_judge:
            self.add_error("judge", self.no_judge)
        try:
            self.other_request = report_request(
                criterion=self.other_criterion,
                judge=data.get("other_judge") or "",
                method=self.request.method if self.request else DEFAULT_METHOD,
                alpha=self.request.alpha if self.request else DEFAULT_ALPHA,
                judges=self.other_judges,
            )
            data["other_judge"] = self.other_request.judge
        except EstimateError as exc:
            self.add_error("other_judge" if data.get("other_judge") else "other", exc.message)
        return data


class PrimaryJudgeForm(forms.Form):
    """The judge a manager makes a criterion's primary judge, by name (empty: none any more);
    ``judge_choice.set_primary_judge`` checks that it is a candidate."""

    judge = forms.CharField(required=False, max_length=100)


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


class DisagreementForm(forms.Form):
    """The filters of the disagreements between humans and a judge: a theme, a judge (by name).

    No judge named: the report's default judge (none: the reader chooses). Themes are those of
    the criterion's units.
    """

    theme = forms.ChoiceField(label=_("Theme"), required=False)
    judge = forms.ChoiceField(label=_("Judge"), required=False)

    def __init__(self, data: Any, *, criterion: Criterion, judges: list[Judge]) -> None:
        super().__init__(data)
        self.criterion = criterion
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
        blank = [("", _("choose a judge"))] if len(self.judges) > 1 else []
        cast(forms.ChoiceField, self.fields["judge"]).choices = blank + [(name, name) for name in self.judges]

    def clean_judge(self) -> Judge | None:
        name = self.cleaned_data.get("judge")
        if name:
            return self.judges[name]
        # None named: the report's default judge (``judge_choice``), else the reader chooses.
        return judge_choice.choose_judge(criterion=self.criterion, judges=list(self.judges.values()))

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
