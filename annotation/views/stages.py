"""The stage pages (label, review, adjudication): one unit at a time, one keystroke per label, the
next unit in the same response. One set of views serves every stage; :data:`STAGE_PAGES` says
what differs (template, title, what the page shows besides the unit, its URL).

GET renders the page (or, for htmx, the ``unit`` partial) with the unit ``next_unit`` hands the
person; each POST (submit, skip, undo) answers with the next unit's partial for htmx, and with a
redirect to the page without JavaScript. An htmx GET with ``?after=<unit on screen>`` prefetches
the following unit: it is leased to the person too, and the page shows it the moment a label is
given, while the label is saved. That label's POST names it (``shown``) and is answered with the
unit after it, marked ``data-after``, so that each label costs one request and each unit is
rendered once (see docs/protocol.md). Nothing here reads the judge's labels;
the reviewer sees the first label in review mode only, nobody sees another person's blind label,
and the adjudicator sees the labels in conflict (``annotation.workbench``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from annotation import limits
from annotation.access import AppRequest, get_criterion_for, may_open_units
from annotation.criteria.guidelines import current_version
from annotation.forms import LabelForm, PrefetchForm, SkipForm, UndoForm, request_errors
from annotation.models import Campaign, Criterion, Stage, Unit
from annotation.workbench import (
    script_texts,
    shown_at_adjudication,
    shown_at_label,
    shown_at_review,
    unit_view,
)
from annotation.workflow import (
    STAGE_ROLE,
    WorkflowError,
    next_unit,
    skip,
    stages_for,
    submit_label,
    undo_last,
)
from annotation.workflow.queue import next_unit_after_shown, work_progress


@dataclass(frozen=True)
class StagePage:
    """What sets a stage's page apart from the others."""

    stage: str
    title: Promise
    template: str
    # The page's URL name; its actions are the same name + "_submit", "_skip", "_undo".
    url_name: str
    # What the page shows besides the unit and its choices (``annotation.workbench``).
    shown: Callable[..., dict]

    def url(self, *, slug: str, criterion: str) -> str:
        """The page's address (the adjudication page's has no stage in it: its route supplies it)."""
        return reverse(
            f"annotation:{self.url_name}", kwargs={"slug": slug, "criterion": criterion, "stage": self.stage}
        )


_PAGES = (
    StagePage(
        stage=Stage.LABEL,
        title=gettext_lazy("Label"),
        template="annotation/annotate.html",
        url_name="annotate",
        shown=shown_at_label,
    ),
    StagePage(
        stage=Stage.REVIEW,
        title=gettext_lazy("Review"),
        template="annotation/annotate.html",
        url_name="annotate",
        shown=shown_at_review,
    ),
    StagePage(
        stage=Stage.ADJUDICATION,
        title=gettext_lazy("Adjudication"),
        template="annotation/adjudicate.html",
        url_name="adjudicate",
        shown=shown_at_adjudication,
    ),
)
STAGE_PAGES: dict[str, StagePage] = {page.stage: page for page in _PAGES}


@dataclass(frozen=True)
class Opened:
    """A stage page opened by a person who holds its role: the stage, the campaign and criterion,
    and every role the person holds in the campaign (handed to the workflow functions, which then
    do not read them again, and deciding what else the page offers)."""

    page: StagePage
    campaign: Campaign
    criterion: Criterion
    roles: frozenset[str]


@dataclass(frozen=True)
class Outcome:
    """What to tell the person above the next unit: a message, its kind ("error", "info"), and
    the field to focus ("comment" when the refused label needs one)."""

    message: str = ""
    kind: str = ""
    focus: str = ""


def refused(error: WorkflowError) -> Outcome:
    return Outcome(
        message=str(error), kind="error", focus="comment" if error.code == "comment_required" else ""
    )


def open_stage(*, request: AppRequest, slug: str, criterion: str, stage: str) -> Opened:
    """The stage's page, campaign and criterion if the user holds the stage's role; 403 / 404 otherwise."""
    if stage not in STAGE_PAGES:
        raise Http404("No such stage.")
    found, roles = get_criterion_for(user=request.user, slug=slug, name=criterion, role=STAGE_ROLE[stage])
    if stage not in stages_for(mode=found.campaign.annotation_mode):
        raise Http404("This campaign's annotation mode has no such stage.")
    return Opened(
        page=STAGE_PAGES[stage],
        campaign=found.campaign,
        criterion=found,
        roles=roles,
    )


def work_context(
    *, request: AppRequest, opened: Opened, unit: Unit | None, outcome: Outcome, after: int | None = None
) -> dict:
    """Context of the work region: the unit, progress, choices, what the stage shows, fresh request keys.

    ``after``: the unit on screen this one follows (a prefetch), said on the region (``data-after``).
    """
    criterion, stage = opened.criterion, opened.page.stage
    progress, overall = work_progress(user=request.user, criterion=criterion, stage=stage)
    return {
        "campaign": opened.campaign,
        "criterion": criterion,
        "stage": stage,
        "stage_title": opened.page.title,
        "unit": unit,
        "after": after,
        "view": unit_view(unit=unit, campaign=opened.campaign) if unit else None,
        "progress": progress,
        "overall": overall,
        **opened.page.shown(unit=unit, criterion=criterion),
        # The guidelines on screen; a label submitted from this page records this version.
        "guidelines_version": current_version(criterion=criterion),
        "request_key": uuid.uuid4().hex,
        "undo_key": uuid.uuid4().hex,
        "message": outcome.message,
        "message_kind": outcome.kind,
        "focus": outcome.focus,
        "key_guard_ms": settings.LABEL_KEY_GUARD_MS,
        # The page's script says nothing of its own: its texts come from here, translated.
        "script_texts": script_texts(),
        "comment_max": limits.COMMENT,
        # The adjudication page links to the unit's page only for those who may open it.
        "may_open_units": may_open_units(roles=opened.roles),
    }


def respond(
    request: AppRequest,
    *,
    opened: Opened,
    outcome: Outcome = Outcome(),
    after: int | None = None,
    shown: int | None = None,
) -> HttpResponse:
    """Hand the user their next unit and render it: the ``unit`` partial for htmx, else the page.

    An error answers 400 to a plain form post, 200 to htmx so that it swaps.
    ``after``: the unit on screen, to leave out (a prefetch of the one that follows it).
    ``shown``: the unit the page put on screen as the label was sent (htmx only): while it is
    still the person's, the answer is the unit after it (``next_unit_after_shown``).
    """
    user, criterion, stage = request.user, opened.criterion, opened.page.stage
    if shown is not None:
        unit, follows = next_unit_after_shown(
            user=user, criterion=criterion, stage=stage, shown=shown, roles=opened.roles
        )
        after = shown if follows else None
    else:
        unit = next_unit(user=user, criterion=criterion, stage=stage, after=after, roles=opened.roles)
    context = work_context(request=request, opened=opened, unit=unit, outcome=outcome, after=after)
    if request.htmx:
        return render(request, f"{opened.page.template}#unit", context)
    return render(request, opened.page.template, context, status=400 if outcome.kind == "error" else 200)


def after_post(
    request: AppRequest, *, opened: Opened, outcome: Outcome = Outcome(), shown: int | None = None
) -> HttpResponse:
    """After a write: htmx gets the next unit at once (the one after ``shown``, the unit the page
    already shows, when it is still the person's); a plain form post is redirected to the page
    (or, refused, gets the page with the reason)."""
    if request.htmx:
        return respond(request, opened=opened, outcome=outcome, shown=shown)
    if outcome.kind == "error":
        return respond(request, opened=opened, outcome=outcome)
    if outcome.message:
        messages.add_message(request, messages.INFO, outcome.message)
    return redirect(opened.page.url(slug=opened.campaign.slug, criterion=opened.criterion.name))


# Views


@login_required
@require_GET
def page(request: AppRequest, slug: str, criterion: str, stage: str) -> HttpResponse:
    known = STAGE_PAGES.get(stage)
    url_name = request.resolver_match.url_name if request.resolver_match else None
    if known is not None and url_name != known.url_name:
        # The annotate URL of the adjudication stage: its page is the adjudication page.
        return redirect(known.url(slug=slug, criterion=criterion))
    opened = open_stage(request=request, slug=slug, criterion=criterion, stage=stage)
    after = PrefetchForm(request.GET).unit_on_screen() if request.htmx else None
    return respond(request, opened=opened, after=after)


@login_required
@require_POST
def submit(request: AppRequest, slug: str, criterion: str, stage: str) -> HttpResponse:
    opened = open_stage(request=request, slug=slug, criterion=criterion, stage=stage)
    form = LabelForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest(request_errors(form), content_type="text/plain; charset=utf-8")
    posted = form.cleaned_data
    try:
        submit_label(
            user=request.user,
            unit_id=posted["unit_id"],
            criterion=opened.criterion,
            stage=stage,
            value=posted["value"],
            comment=posted["comment"],
            request_key=posted["request_key"],
            roles=opened.roles,
            guidelines_version_id=posted["guidelines_version"],
        )
    except WorkflowError as error:
        return after_post(request, opened=opened, outcome=refused(error))
    return after_post(request, opened=opened, shown=posted["shown"])


@login_required
@require_POST
def skip_unit(request: AppRequest, slug: str, criterion: str, stage: str) -> HttpResponse:
    opened = open_stage(request=request, slug=slug, criterion=criterion, stage=stage)
    form = SkipForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest(request_errors(form), content_type="text/plain; charset=utf-8")
    skip(
        user=request.user,
        criterion=opened.criterion,
        stage=stage,
        unit_id=form.cleaned_data["unit_id"],
        roles=opened.roles,
    )
    return after_post(request, opened=opened)


@login_required
@require_POST
def undo(request: AppRequest, slug: str, criterion: str, stage: str) -> HttpResponse:
    opened = open_stage(request=request, slug=slug, criterion=criterion, stage=stage)
    form = UndoForm(request.POST)
    form.is_valid()  # an optional text field: always valid
    try:
        undo_last(
            user=request.user,
            criterion=opened.criterion,
            stage=stage,
            request_key=form.cleaned_data["request_key"],
            roles=opened.roles,
        )
    except WorkflowError as error:
        return after_post(request, opened=opened, outcome=refused(error))
    withdrawn = Outcome(message=_("Your last label was withdrawn: here is the unit again."), kind="info")
    return after_post(request, opened=opened, outcome=withdrawn)
