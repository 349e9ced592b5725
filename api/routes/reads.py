"""Estimates (the JSON of ``manage.py report --format json``), labels and judgments: for
managers and analysts only, never for the people who label."""

# No ``from __future__ import annotations`` here: django-ninja reads the Query[...] parameters'
# annotations at run time, through the pagination decorator.

from typing import Any, Literal

from django.db.models import F
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Field, Query, Router, Schema
from ninja.pagination import paginate
from ninja.responses import codes_4xx
from pydantic import ConfigDict

from annotation.access import JUDGE_VIEWERS, campaigns_for, get_campaign_for
from annotation.models import Criterion, Role
from annotation.workflow.history import label_history
from api.errors import domain_refusal
from api.pagination import Pages
from api.schemas import VISIBLE, Cleaned, ErrorOut, JudgmentOut, LabelOut
from evaluation.designs.judge_plan import plan_as_json
from evaluation.errors import EstimateError
from evaluation.estimates import judge_choice
from evaluation.forms.designs import requested_plan
from evaluation.measures.reference_answers import reference_report
from evaluation.measures.reference_answers import report_as_json as reference_answers_json
from evaluation.models import Judgment
from evaluation.reports import gate, read
from evaluation.reports.lookups import find_criterion

router = Router(tags=["estimates, labels and judgments"])
READERS = sorted(JUDGE_VIEWERS)
PAGE_SIZE = 200


class EstimatesQuery(Cleaned):
    model_config = ConfigDict(extra="forbid")

    judge: str | None = None
    alpha: float = Field(0.05, gt=0, lt=1)
    method: Literal["robust", "study"] = "robust"
    by_difficulty: bool = False
    # Each theme's PPI++ estimate shrunk toward the judge (evaluation.estimates.small_themes), as
    # ``manage.py report --format json --shrinkage`` adds it.
    shrinkage: bool = False
    # The robust method's clusters: answer (this campaign's answers) or question (the assistant
    # asked these questions again), as ``manage.py report --clusters``.
    clusters: Literal["answer", "question"] = "answer"
    # Judges to combine in one estimate beside the report, comma-separated (none by default), as
    # ``manage.py report --combine``.
    combine: str = ""


class ReadQuery(Cleaned):
    criterion: str | None = None


class JudgmentQuery(ReadQuery):
    judge: str | None = None


@router.get(
    "/campaigns/{slug}/estimates/{criterion}",
    response={200: dict[str, Any], codes_4xx: ErrorOut},
    url_name="estimates",
)
def criterion_estimates(request: HttpRequest, slug: str, criterion: str, query: Query[EstimatesQuery]):
    """Per-theme and overall estimates (human-only, judge-only, PPI++) of one criterion: the
    JSON ``manage.py report --format json`` prints and the report page downloads, read as every
    reader reads a report (the latest snapshot of these parameters, or computed now:
    ``estimates_source`` says which; the judge by the one rule: ``judge_choice`` says how it was
    chosen). Per category and group, with the confusion matrices, for a criterion with
    categories; for citation support, the app's citation support and sentence support rates
    (``citation_measures``) and ALCE's citation recall and precision (``alce_citation_measures``).
    ``shrinkage=true`` adds each theme's estimate shrunk toward the judge (400 naming
    ``shrinkage`` for a criterion with categories or fewer than two themes with a standard
    error); ``combine=a,b`` adds ``combined``, the estimate of those judges combined (404 naming
    ``combine`` for a judge that did not label the criterion, as for ``judge``; 400 for fewer
    than two judges, the study method or a criterion with categories)."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=READERS)
    found = get_object_or_404(Criterion, campaign=campaign, name=criterion)
    try:
        report = read.report_request(
            criterion=found,
            judge=query.judge or "",
            method=query.method,
            alpha=query.alpha,
            by_difficulty=query.by_difficulty,
            shrinkage=query.shrinkage,
            clusters=query.clusters,
            combine=[name.strip() for name in query.combine.split(",") if name.strip()],
        )
        shown = read.read_report(report)
    except EstimateError as exc:
        raise domain_refusal(exc, default_field="judge") from None
    return read.report_as_data(shown)


class ReferenceQuery(Cleaned):
    model_config = ConfigDict(extra="forbid")

    # How both texts are normalised (evaluation.measures.overlap.NORMALISATIONS).
    normalisation: Literal["auto", "squad", "en", "fr"] = "auto"
    alpha: float = Field(0.05, gt=0, lt=1)


@router.get(
    "/campaigns/{slug}/reference-answers",
    response={200: dict[str, Any], codes_4xx: ErrorOut},
    url_name="reference_answers",
)
def reference_answers(request: HttpRequest, slug: str, query: Query[ReferenceQuery]):
    """The answers against their questions' reference answers: exact match and token F1
    (SQuAD's), ROUGE-L (rouge-score's, no stemming), per theme and overall, each a mean over
    answers with a bootstrap interval over questions: the JSON of ``manage.py reference_answers
    --format json`` and of the report page's download."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=READERS)
    return reference_answers_json(
        reference_report(campaign=campaign, normalisation=query.normalisation, alpha=query.alpha)
    )


class JudgePlanQuery(Cleaned):
    model_config = ConfigDict(extra="forbid")

    # The page's bounds, checked again by the page's form (evaluation.forms.designs.requested_plan):
    # a wrong one is a 400 naming it.
    target: float | None = Field(None, gt=0, lt=0.5)
    alpha: float | None = Field(None, gt=0, lt=1)
    # The judges to consider, comma-separated (default: the criterion's first three by name).
    judges: str = ""
    # A label's minutes in place of the people's pace.
    minutes: float | None = Field(None, gt=0, le=600)


@router.get(
    "/campaigns/{slug}/criteria/{criterion}/judge-plan",
    response={200: dict[str, Any], codes_4xx: ErrorOut},
    url_name="judge_plan",
)
def judge_plan(request: HttpRequest, slug: str, criterion: str, query: Query[JudgePlanQuery]):
    """The planner of several judges on a binary criterion: per theme the judges and their
    shares, the human labels in all and still to draw and the cost for a half-width ``target``,
    beside the best single judge and human labels alone; the totals; the ledger's figures with
    their sources. The JSON of ``manage.py judge_plan --format json`` and of the planner page's
    download (``empty`` says why nothing is planned). 404 naming ``judges`` for a name that is
    not one of the criterion's judges."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=READERS)
    found = get_object_or_404(Criterion.objects.select_related("campaign"), campaign=campaign, name=criterion)
    try:
        plan = requested_plan(
            criterion=found,
            target=query.target,
            alpha=query.alpha,
            judges=[name.strip() for name in query.judges.split(",") if name.strip()],
            minutes=query.minutes,
        )
    except EstimateError as exc:
        raise domain_refusal(exc, default_field="judges") from None
    return plan_as_json(plan)


class PrimaryJudgeIn(Cleaned):
    model_config = ConfigDict(extra="forbid")

    # A judge with at least one successful judgment of the criterion; null or "": none any more.
    judge: str | None = None


class PrimaryJudgeOut(Schema):
    criterion: str
    primary_judge: str | None
    # The judge the criterion's reports read when none is named, and how it was chosen.
    default_judge: str | None
    judge_choice: str
    candidates: list[str]


def _primary_judge_out(criterion: Criterion) -> dict[str, Any]:
    judges = judge_choice.candidates(criterion=criterion)
    chosen, how = judge_choice.default_choice(judges=judges)
    primary = judge_choice.primary_among(judges)
    return {
        "criterion": criterion.name,
        "primary_judge": primary.name if primary is not None else None,
        "default_judge": chosen.name if chosen is not None else None,
        "judge_choice": how,
        "candidates": [judge.name for judge in judges],
    }


@router.get(
    "/campaigns/{slug}/criteria/{criterion}/primary-judge",
    response={200: PrimaryJudgeOut, codes_4xx: ErrorOut},
    url_name="primary_judge",
)
def read_primary_judge(request: HttpRequest, slug: str, criterion: str):
    """The criterion's primary judge (null: none chosen), the judge its reports read when none is
    named, and the judges with at least one successful judgment of it (its candidates)."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=READERS)
    found = get_object_or_404(Criterion, campaign=campaign, name=criterion)
    return _primary_judge_out(found)


@router.put(
    "/campaigns/{slug}/criteria/{criterion}/primary-judge",
    response={200: PrimaryJudgeOut, codes_4xx: ErrorOut},
)
def choose_primary_judge(request: HttpRequest, slug: str, criterion: str, body: PrimaryJudgeIn):
    """Make a candidate judge the criterion's primary judge (``judge``: null or "" for none), as
    a manager does on the report page: managers only. 400 naming ``judge`` when it has no
    successful judgment of the criterion."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=[Role.MANAGER])
    found = get_object_or_404(Criterion, campaign=campaign, name=criterion)
    try:
        judge_choice.set_primary_judge(criterion=found, name=body.judge or "", user=request.user)
    except EstimateError as exc:
        raise domain_refusal(exc, default_field="judge") from None
    return _primary_judge_out(found)


@router.get(
    "/campaigns/{slug}/labels", response={200: list[LabelOut], codes_4xx: ErrorOut}, url_name="labels"
)
@paginate(Pages, page_size=PAGE_SIZE)
def list_labels(request: HttpRequest, slug: str, query: Query[ReadQuery]):
    """Every human label row (append-only: changes and withdrawals included), oldest first: the
    label history the team page and its CSV read (``annotation.workflow.history``), each row
    with what it did (``label``, ``change``, ``withdrawal``) and the value it replaces."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=READERS)
    labels = label_history(campaign=campaign, newest_first=False)
    if query.criterion:
        labels = labels.filter(criterion__name=query.criterion)
    # has_previous and previous: annotations of label_history, which the type checker cannot see.
    return labels.values(  # type: ignore[misc]
        "id",
        "stage",
        "value",
        "comment",
        "created_at",
        "has_previous",
        "previous",
        unit_id_=F("unit_id"),
        answer_id=F("unit__answer__external_id"),
        sentence=F("unit__sentence__position"),
        source=F("unit__chunk__external_id"),
        criterion_name=F("criterion__name"),
        author=F("user__username"),
    )


@router.get(
    "/campaigns/{slug}/judgments",
    response={200: list[JudgmentOut], codes_4xx: ErrorOut},
    url_name="judgments",
)
@paginate(Pages, page_size=PAGE_SIZE)
def list_judgments(request: HttpRequest, slug: str, query: Query[JudgmentQuery]):
    """Every judgment of the campaign's judges, oldest first."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=READERS)
    judgments = Judgment.objects.filter(unit__campaign=campaign)
    if query.criterion:
        judgments = judgments.filter(criterion__name=query.criterion)
    if query.judge:
        judgments = judgments.filter(judge__name=query.judge)
    return judgments.order_by("created_at", "id").values(
        "id",
        "status",
        "value",
        "reasoning",
        "created_at",
        unit_id_=F("unit_id"),
        answer_id=F("unit__answer__external_id"),
        sentence=F("unit__sentence__position"),
        source=F("unit__chunk__external_id"),
        criterion_name=F("criterion__name"),
        judge_name=F("judge__name"),
    )


class GateIn(Cleaned):
    model_config = ConfigDict(extra="forbid")

    criterion: str = Field(min_length=1, pattern=VISIBLE)
    min_lower: float = Field(ge=0, le=1)
    themes: list[str] | None = None
    baseline: str | None = None
    judge: str | None = None
    baseline_judge: str | None = None
    alpha: float = Field(0.05, gt=0, lt=1)
    method: Literal["robust", "study"] = "robust"
    # How the drops' p-values are adjusted over the groups checked (inference.paired.ADJUSTMENTS).
    adjustment: Literal["holm", "bonferroni"] = "holm"
    # Also fail when the judge drifted (evaluation.measures.judge_alignment); off by default.
    refuse_judge_drift: bool = False


@router.post(
    "/campaigns/{slug}/gate",
    response={200: dict[str, Any], codes_4xx: ErrorOut},
    url_name="gate",
)
def release_gate(request: HttpRequest, slug: str, body: GateIn):
    """The release gate of ``manage.py gate`` (``docs/gate.md``): whether every checked theme's
    PPI++ lower bound reaches ``min_lower`` and, with a ``baseline`` campaign (by name, which the
    caller must also be able to read), whether no theme dropped significantly. Answers 200 with
    ``passed`` and ``reason`` either way: a failed gate is a verdict, not an error."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=READERS)
    try:
        found = find_criterion(campaign=campaign, name=body.criterion)
        baseline = None
        if body.baseline is not None:
            # Among the campaigns the caller belongs to: others are not named, even as existing.
            baseline = campaigns_for(user=request.user).filter(name=body.baseline).first()
            if baseline is None:
                raise EstimateError(
                    f"campaign {body.baseline!r} does not exist", field="baseline", missing=True
                )
            get_campaign_for(user=request.user, slug=baseline.slug, roles=READERS)
        result = gate.evaluate_gate(
            campaign=campaign,
            criterion=found,
            min_lower=body.min_lower,
            themes=body.themes,
            baseline=baseline,
            judge=body.judge,
            baseline_judge=body.baseline_judge,
            alpha=body.alpha,
            method=body.method,
            adjustment=body.adjustment,
            refuse_judge_drift=body.refuse_judge_drift,
        )
    except EstimateError as exc:
        raise domain_refusal(exc, default_field="body") from None
    return result.as_dict()
