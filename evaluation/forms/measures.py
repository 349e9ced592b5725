"""The input of the measures' pages: stability across repetitions (``evaluation.measures.stability``),
evidence coverage and retrieval ranking (``evaluation.measures.evidence``) and the judges
against the humans (``evaluation.measures.judge_alignment``). Numbers are read as
sent, never localised, as in ``evaluation.forms.reports``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError
from django.http import QueryDict
from django.utils.translation import gettext_lazy as _

from annotation.models import Campaign, Criterion
from annotation.templatetags.annotation_format import builtin_title
from evaluation.designs.held_out import ALL, HELD_OUT, SELECTION
from evaluation.errors import EstimateError
from evaluation.estimates import judge_choice
from evaluation.estimates.params import ANSWER, QUESTION, check_alpha
from evaluation.forms.fields import MessagesMixin, NumberField, WholeNumberField
from evaluation.forms.reports import DEFAULT_ALPHA
from evaluation.measures import stability
from evaluation.measures.automatic import METRICS
from evaluation.measures.coverage import DEFAULT_BUDGETS, parse_budgets
from evaluation.measures.evidence import criterion_categories
from evaluation.measures.judge_alignment import SPLIT
from evaluation.measures.retrieval import DEFAULT_KS
from evaluation.models import Judge
from evaluation.pages.overview import METRIC_TITLES


@dataclass(frozen=True)
class StabilityParams:
    """What the stability page reads (a parameter that was wrong holds its default).
    ``no_judge``: why there is no judge to read when the judge's labels are asked for and none
    is named (several candidates and no primary judge): the page asks, it is not an error."""

    measure: stability.Measure | None
    source: str
    judge: Judge | None
    alpha: float
    draws: int
    seed: int
    no_judge: str = ""


class StabilityForm(MessagesMixin, forms.Form):
    """The GET parameters of the stability page. ``measure``: ``criterion:NAME`` or
    ``metric:NAME`` (default: ``stability.default_measure``, a criterion with values to compare,
    else the response metric); ``source``:
    ``judge`` or ``human``, for a criterion (default: the judge's labels when a judge has
    labeled the criterion, else the final human labels); ``judge``: a candidate of the criterion
    (``judge_choice``; default: its default judge, and when there is none the page asks);
    ``alpha``; ``draws`` (1 to ``stability.MAX_DRAWS``) and ``seed`` of the subsampling.
    Missing parameters take their defaults, which the form then shows."""

    measure = forms.ChoiceField(label=_("Criterion or metric"))
    source = forms.ChoiceField(
        label=_("Labels"),
        choices=[(stability.JUDGE, _("The judge's labels")), (stability.HUMAN, _("Final human labels"))],
    )
    judge = forms.ChoiceField(label=_("Judge"), required=False)
    alpha = NumberField(label=_("Alpha (1 − confidence)"))
    draws = WholeNumberField(label=_("Draws per number of repetitions"))
    seed = forms.IntegerField(label=_("Seed"), min_value=0)

    def __init__(self, data: Any, *, criteria: list[Criterion]) -> None:
        self.criteria = criteria
        # Every binary criterion's candidate judges in one query: the default measure reads them
        # (a criterion a judge has labeled first), and the judge of the measure chosen is one.
        binary = [m.criterion for m in stability.measures(criteria=criteria) if m.criterion is not None]
        by_criterion = judge_choice.candidates_by_criterion(criteria=binary)
        key = data.get("measure") or stability.default_measure(criteria=criteria, candidates=by_criterion).key
        self.criterion = next((c for c in criteria if f"criterion:{c.name}" == key), None)
        judges = by_criterion.get(self.criterion.pk, []) if self.criterion is not None else []
        self.judges = {judge.name: judge for judge in judges}
        default_judge = (
            judge_choice.choose_judge(criterion=self.criterion, judges=judges) if self.criterion else None
        )
        self.no_judge = ""
        defaults = {
            "measure": key,
            "source": stability.JUDGE if judges else stability.HUMAN,
            "judge": default_judge.name if default_judge is not None else "",
            "alpha": str(DEFAULT_ALPHA),
            "draws": str(stability.DEFAULT_DRAWS),
            "seed": str(stability.DEFAULT_SEED),
        }
        super().__init__({**defaults, **{key: value for key, value in data.items() if value != ""}})
        criterion_choices = [
            (m.key, builtin_title(m.criterion.title))
            for m in stability.measures(criteria=criteria)
            if m.criterion is not None
        ]
        metric_choices = [(f"metric:{name}", METRIC_TITLES[name]) for name in METRICS]
        self.titles: dict[str, object] = {**dict(criterion_choices), **dict(metric_choices)}
        cast(forms.ChoiceField, self.fields["measure"]).choices = [
            (_("Criteria"), criterion_choices),
            (_("Automatic metrics"), metric_choices),
        ]
        cast(forms.ChoiceField, self.fields["judge"]).choices = [("", _("choose a judge"))] + [
            (name, name) for name in self.judges
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        self._check("alpha", check_alpha)
        self._check("draws", stability.check_draws)
        self._check("measure", lambda key: stability.parse_measure(key=key, criteria=self.criteria))
        if "judge" in data:
            data["judge"] = self.judges.get(data["judge"])
        measure = data.get("measure")
        if (
            isinstance(measure, stability.Measure)
            and measure.kind != stability.METRIC
            and data.get("source") == stability.JUDGE
            and data.get("judge") is None
            and "judge" not in self.errors
        ):
            # Nothing to show until the reader chooses: not an error.
            self.no_judge = str(
                judge_choice.no_choice(criterion=measure.criterion, judges=list(self.judges.values()))
                if measure.criterion is not None
                else _("choose a judge")
            )
        return data

    def _check(self, key: str, check: Callable[[Any], Any]) -> None:
        if key not in self.cleaned_data:
            return
        try:
            self.cleaned_data[key] = check(self.cleaned_data[key])
        except EstimateError as exc:
            self.add_error(exc.field or key, exc.message)

    @property
    def measure_title(self) -> str:
        """The title of the measure the form reads, as its select shows it."""
        key = str(self["measure"].value() or "")
        return str(self.titles.get(key, key))

    def params(self) -> StabilityParams:
        data = self.cleaned_data
        measure = data.get("measure")
        seed = data.get("seed")
        return StabilityParams(
            measure=measure if isinstance(measure, stability.Measure) else None,
            source=data.get("source") or stability.JUDGE,
            judge=data.get("judge"),
            alpha=data.get("alpha") or DEFAULT_ALPHA,
            draws=data.get("draws") or stability.DEFAULT_DRAWS,
            seed=seed if isinstance(seed, int) else stability.DEFAULT_SEED,
            no_judge=self.no_judge,
        )

    def figures(self, *, campaign: Campaign) -> stability.StabilityParams | None:
        """What the page computes for these parameters (call after ``is_valid``); None when there
        is nothing to compute: a bad parameter, no measure, or a judge to choose first."""
        params = self.params()
        if self.errors or params.measure is None or params.no_judge:
            return None
        return stability.StabilityParams(
            campaign=campaign,
            measure=params.measure,
            source=params.source,
            judge=params.judge,
            alpha=params.alpha,
            draws=params.draws,
            seed=params.seed,
        )


class EvidenceForm(MessagesMixin, forms.Form):
    """The evidence page's parameters (GET): ``budgets`` and ``k`` (positive whole numbers,
    comma-separated), ``criterion`` (an answer-level criterion; by default the first with human
    labels, none when no criterion has any), ``insufficient_category`` and ``correct_category``
    (values of its labels; by default its lowest and its highest) and ``fit_budget`` (one of the
    budgets; by default the largest)."""

    budgets = forms.CharField(label=_("Token budgets"), required=False)
    k = forms.CharField(label=_("Ranks k"), required=False)
    criterion = forms.ChoiceField(label=_("Criterion"), required=False)
    insufficient_category = forms.IntegerField(label=_("“Not enough information” value"), required=False)
    correct_category = forms.IntegerField(label=_("“Fully correct” value"), required=False)
    fit_budget = forms.IntegerField(label=_("Budget of the calibration"), required=False)
    other = forms.MultipleChoiceField(label=_("Side by side with"), required=False)

    def __init__(
        self, data: Any, *, criteria: list[Criterion], candidates: list[Campaign] | None = None
    ) -> None:
        super().__init__(data)
        self.criteria = {criterion.name: criterion for criterion in criteria}
        self.candidates = {campaign.slug: campaign for campaign in candidates or []}
        cast(forms.MultipleChoiceField, self.fields["other"]).choices = [
            (campaign.slug, campaign.name) for campaign in candidates or []
        ]
        cast(forms.ChoiceField, self.fields["criterion"]).choices = [("", "—")] + [
            (criterion.name, builtin_title(criterion.title or criterion.name)) for criterion in criteria
        ]

    def _numbers(self, name: str, default: tuple[int, ...]) -> list[int]:
        text = self.cleaned_data.get(name) or ""
        if not text.strip():
            return list(default)
        try:
            return parse_budgets(text)
        except ValueError as exc:
            raise ValidationError(
                _("%(reason)s; give positive whole numbers separated by commas"), params={"reason": exc}
            ) from None

    def clean_budgets(self) -> list[int]:
        return self._numbers("budgets", DEFAULT_BUDGETS)

    def clean_k(self) -> list[int]:
        return self._numbers("k", DEFAULT_KS)

    def clean_other(self) -> list[Campaign]:
        return [self.candidates[slug] for slug in self.cleaned_data.get("other") or []]

    def clean_criterion(self) -> Criterion | None:
        name = self.cleaned_data.get("criterion")
        if name:
            return self.criteria[name]
        if self.data.get("criterion") == "":
            return None  # "—" chosen: no calibration
        labelled = [c for c in self.criteria.values() if getattr(c, "has_human_labels", False)]
        return next(iter(labelled), None)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        criterion = data.get("criterion")
        if criterion is not None:
            values = [value for value, _name in criterion_categories(criterion)]
            if data.get("insufficient_category") is None:
                data["insufficient_category"] = min(values)
            if data.get("correct_category") is None:
                data["correct_category"] = max(values)
            if data.get("fit_budget") is None and data.get("budgets"):
                data["fit_budget"] = max(data["budgets"])
        return data

    def report_arguments(self) -> dict[str, Any]:
        """``evidence_report``'s arguments these parameters give, besides the campaign (call after
        a successful ``is_valid``)."""
        data = self.cleaned_data
        criterion = data["criterion"]
        return {
            "budgets": data["budgets"],
            "ks": data["k"],
            "criterion": criterion.name if criterion else None,
            "insufficient": data["insufficient_category"] if criterion else None,
            "correct": data["correct_category"] if criterion else None,
            "fit_budget": data["fit_budget"] if criterion else None,
        }

    def effective(self) -> EvidenceForm:
        """The same form bound to the values in effect, defaults written out (call after a
        successful ``is_valid``): the page shows them, and submitting it asks for the same."""
        data = self.cleaned_data
        criterion = data["criterion"]

        def text(value: object) -> str:
            return "" if value is None or criterion is None else str(value)

        effective = QueryDict(mutable=True)
        effective.setlist("other", [campaign.slug for campaign in data["other"]])
        effective.update(
            {
                "budgets": ",".join(map(str, data["budgets"])),
                "k": ",".join(map(str, data["k"])),
                "criterion": criterion.name if criterion else "",
                "insufficient_category": text(data["insufficient_category"]),
                "correct_category": text(data["correct_category"]),
                "fit_budget": text(data["fit_budget"]),
            }
        )
        return EvidenceForm(
            effective, criteria=list(self.criteria.values()), candidates=list(self.candidates.values())
        )


class ReferenceForm(MessagesMixin, forms.Form):
    """The parameters of the answers against their reference answers (GET):
    ``normalisation`` (``evaluation.measures.overlap.NORMALISATIONS``, by default ``auto``: by
    the question's language) and ``alpha``."""

    normalisation = forms.ChoiceField(
        label=_("Normalisation"),
        required=False,
        choices=[
            ("auto", _("By the question's language")),
            ("squad", _("SQuAD's, exactly (English)")),
            ("en", _("English")),
            ("fr", _("French")),
        ],
    )
    alpha = NumberField(required=False)

    def clean_normalisation(self) -> str:
        return self.cleaned_data.get("normalisation") or "auto"

    def clean_alpha(self) -> float:
        alpha = self.cleaned_data.get("alpha")
        if alpha is None:
            return DEFAULT_ALPHA
        try:
            return check_alpha(alpha)
        except EstimateError as exc:
            raise ValidationError(exc.reason) from None


class JudgeAlignmentForm(MessagesMixin, forms.Form):
    """The judge alignment page's parameters (GET): ``alpha`` (default 0.05), ``clusters``,
    what the intervals are about: this campaign's answers (the default: an answer's units
    together) or the assistant asked these questions again (a question's answers together); and
    ``part``, the units the figures are on (``evaluation.measures.judge_alignment.PARTS``): with a
    held-out split, by default the prompts compared on its selection part and the figures reported
    on its held-out part; without one, every labelled unit, the only choice."""

    alpha = NumberField(label=_("Alpha (1 − confidence)"), required=False)
    clusters = forms.ChoiceField(
        label=_("Intervals about"),
        required=False,
        choices=[
            (ANSWER, _("this campaign's answers")),
            (QUESTION, _("the assistant asked these questions again")),
        ],
    )
    part = forms.ChoiceField(
        label=_("Units"),
        required=False,
        choices=[
            (SPLIT, _("selection to compare, held-out to report")),
            (SELECTION, _("the selection part only (to compare)")),
            (HELD_OUT, _("the held-out part only (to report)")),
            (ALL, _("every labelled unit (both parts)")),
        ],
    )

    def __init__(self, *args: Any, split: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.default_part = SPLIT if split else ALL
        if not split:
            cast(forms.ChoiceField, self.fields["part"]).choices = [(ALL, _("every labelled unit"))]

    def clean_alpha(self) -> float:
        alpha = self.cleaned_data.get("alpha")
        if alpha is None:
            return DEFAULT_ALPHA
        try:
            return check_alpha(alpha)
        except EstimateError as exc:
            raise ValidationError(exc.reason) from None

    def clean_clusters(self) -> str:
        return self.cleaned_data.get("clusters") or ANSWER

    def clean_part(self) -> str:
        return self.cleaned_data.get("part") or self.default_part

    def params(self) -> tuple[float, str, str]:
        """Alpha, the clusters and the part in effect, each one's default where it was wrong."""
        data = self.cleaned_data if hasattr(self, "cleaned_data") else {}
        alpha = DEFAULT_ALPHA if "alpha" in self.errors else data.get("alpha", DEFAULT_ALPHA)
        clusters = ANSWER if "clusters" in self.errors else data.get("clusters", ANSWER)
        part = self.default_part if "part" in self.errors else data.get("part", self.default_part)
        return alpha, clusters, part
