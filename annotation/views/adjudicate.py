"""The adjudication page: a unit whose labels disagree, the labels and comments in conflict, one
keystroke to decide, the decision recorded with its reason."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.models import Campaign, Criterion, Label, Stage
from annotation.views.annotate import (
    after_post,
    open_stage,
    respond,
    skip_from_post,
    submit_from_post,
    undo_from_post,
)
from annotation.workflow import unit_state

TEMPLATE = "annotation/adjudicate.html"
STAGE = Stage.ADJUDICATION


def _conflict_extra(context: dict) -> None:
    """The labels in conflict on the unit, with who gave them and why; every decision needs a reason."""
    for choice in context["choices"]:
        choice["needs_comment"] = True
    unit = context["unit"]
    if unit is None:
        context["conflict"] = []
        return
    state = unit_state(unit_id=unit.pk, criterion=context["criterion"])
    ids = [label.label_id for label in state.in_conflict]
    rows = {label.pk: label for label in Label.objects.filter(pk__in=ids).select_related("user")}
    context["conflict"] = [rows[pk] for pk in ids if pk in rows]


def _page(campaign: Campaign, criterion: Criterion) -> str:
    return reverse("annotation:adjudicate", args=[campaign.slug, criterion.name])


def _after(request: HttpRequest, campaign: Campaign, criterion: Criterion, outcome: dict) -> HttpResponse:
    return after_post(
        request,
        campaign=campaign,
        criterion=criterion,
        stage=STAGE,
        page=_page(campaign, criterion),
        template=TEMPLATE,
        extra=_conflict_extra,
        **outcome,
    )


@login_required
@require_GET
def adjudicate(request: HttpRequest, slug: str, criterion: str) -> HttpResponse:
    campaign, found = open_stage(request=request, slug=slug, criterion=criterion, stage=STAGE)
    return respond(
        request, campaign=campaign, criterion=found, stage=STAGE, template=TEMPLATE, extra=_conflict_extra
    )


@login_required
@require_POST
def adjudicate_submit(request: HttpRequest, slug: str, criterion: str) -> HttpResponse:
    campaign, found = open_stage(request=request, slug=slug, criterion=criterion, stage=STAGE)
    outcome = submit_from_post(request=request, criterion=found, stage=STAGE)
    if isinstance(outcome, HttpResponse):
        return outcome
    return _after(request, campaign, found, outcome)


@login_required
@require_POST
def adjudicate_skip(request: HttpRequest, slug: str, criterion: str) -> HttpResponse:
    campaign, found = open_stage(request=request, slug=slug, criterion=criterion, stage=STAGE)
    outcome = skip_from_post(request=request, criterion=found, stage=STAGE)
    if isinstance(outcome, HttpResponse):
        return outcome
    return _after(request, campaign, found, outcome)


@login_required
@require_POST
def adjudicate_undo(request: HttpRequest, slug: str, criterion: str) -> HttpResponse:
    campaign, found = open_stage(request=request, slug=slug, criterion=criterion, stage=STAGE)
    return _after(request, campaign, found, undo_from_post(request=request, criterion=found, stage=STAGE))
