"""The annotator page: one unit at a time, one keystroke per label, the next unit in the same response.

GET renders the page (or, for htmx, the ``unit`` partial) with the unit ``next_unit`` hands the
person; each POST (submit, skip, undo) answers with the next unit's partial for htmx, and with a
redirect to the page without JavaScript. An htmx GET with ``?after=<unit on screen>`` prefetches
the following unit: it is leased to the person too, and the page shows it the moment a label is
given, while the label is saved (see docs/protocol.md). Nothing here reads the judge's labels; the reviewer
sees the first label in review mode only, and nobody sees another person's blind label.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST

from annotation.access import get_criterion_for
from annotation.conventions import BUILTIN_CRITERIA, DEFAULT_CITATION_PATTERN
from annotation.guidelines import current_version
from annotation.models import (
    AnswerSource,
    Assignment,
    Campaign,
    Criterion,
    Level,
    Stage,
    Unit,
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
from annotation.workflow.queue import work_progress

TEMPLATE = "annotation/annotate.html"
STAGE_TITLES = {Stage.LABEL: "Label", Stage.REVIEW: "Review", Stage.ADJUDICATION: "Adjudication"}
# How each built-in criterion names its two values; other criteria say yes / no.
VALUE_NAMES = {name: spec["values"] for name, spec in BUILTIN_CRITERIA.items()}
DEFAULT_VALUE_NAMES = {1: "Yes", 0: "No"}
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_BULLET = re.compile(r"^\s*[-*•]\s+")
_NUMBERED = re.compile(r"^\s*\d{1,3}[.)]\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
# Sentinels around the sentence to highlight: control characters never found in answers.
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"


# Rendering untrusted text: escape first, then add our own markup.


def citation_regex(campaign: Campaign) -> re.Pattern[str]:
    """The campaign's citation pattern compiled (the default one if the campaign's is invalid)."""
    try:
        return re.compile(campaign.citation_pattern)
    except re.error:
        return re.compile(DEFAULT_CITATION_PATTERN)


def _cited_id(match: re.Match[str]) -> str:
    return match.group(1) if match.re.groups else match.group(0)


def _inline(text: str, *, citations: re.Pattern[str], retrieved: set[str]) -> str:
    """Escaped ``text`` with **bold**, citation chips (broken ones flagged) and highlight marks."""
    out, position = [], 0
    for match in citations.finditer(text):
        out.append(_BOLD.sub(r"<strong>\1</strong>", str(escape(text[position : match.start()]))))
        cited = _cited_id(match)
        if cited in retrieved:
            out.append(f'<span class="cite">{escape(cited)}</span>')
        else:
            out.append(
                f'<span class="cite broken" title="Cited but not retrieved">{escape(cited)} '
                '<span class="visually-hidden">(cited but not retrieved)</span></span>'
            )
        position = match.end()
    out.append(_BOLD.sub(r"<strong>\1</strong>", str(escape(text[position:]))))
    return "".join(out).replace(MARK_OPEN, '<mark class="target">').replace(MARK_CLOSE, "</mark>")


def _line_kind(line: str) -> tuple[str, str]:
    """("ul" | "ol" | "h" | "", the line without its list or title marker)."""
    for pattern, tag in ((_BULLET, "ul"), (_NUMBERED, "ol"), (_HEADING, "h")):
        if match := pattern.match(line):
            return tag, line[match.end() :]
    return "", line


def render_text(text: str, *, citations: re.Pattern[str], retrieved: set[str]) -> SafeString:
    """Untrusted answer text as HTML: escaped, line breaks kept, light markdown (bold, lists, titles).

    Highlight sentinels (MARK_OPEN/MARK_CLOSE) never span a line, so marks stay well nested.
    """
    blocks: list[str] = []
    paragraph: list[str] = []
    items: list[str] = []
    kind = ""

    def flush() -> None:
        nonlocal paragraph, items, kind
        if paragraph:
            blocks.append("<p>" + "<br>".join(paragraph) + "</p>")
        if items:
            blocks.append(f"<{kind}>" + "".join(f"<li>{item}</li>" for item in items) + f"</{kind}>")
        paragraph, items, kind = [], [], ""

    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw
        opened = raw.lstrip().startswith(MARK_OPEN)
        if opened:
            line = raw.replace(MARK_OPEN, "", 1)
        tag, body = _line_kind(line)
        body = (MARK_OPEN if opened else "") + body
        rendered = _inline(body, citations=citations, retrieved=retrieved)
        if not line.strip():
            flush()
        elif tag == "h":
            flush()
            blocks.append(f'<p class="heading"><strong>{rendered}</strong></p>')
        elif tag:
            if paragraph or (items and kind != tag):
                flush()
            kind = tag
            items.append(rendered)
        else:
            if items:
                flush()
            paragraph.append(rendered)
    flush()
    # Safe: every piece of text went through escape() in _inline.
    return mark_safe("".join(blocks))


def _clean(text: str) -> str:
    return text.replace(MARK_OPEN, "").replace(MARK_CLOSE, "")


def _marked(text: str, start: int, end: int) -> str:
    """``text`` with sentinels around [start, end), closed and reopened at each line break."""
    inner = text[start:end].replace("\n", f"{MARK_CLOSE}\n{MARK_OPEN}")
    return f"{text[:start]}{MARK_OPEN}{inner}{MARK_CLOSE}{text[end:]}"


def _locate(sentence: str, paragraph: str, answer: str) -> tuple[str, bool, str]:
    """The paragraph and the answer with the sentence marked; whether it was found in the paragraph."""
    at = paragraph.find(sentence) if sentence else -1
    found = at >= 0
    marked_paragraph = _marked(paragraph, at, at + len(sentence)) if found else paragraph
    start = answer.find(paragraph) if paragraph else -1
    if found and start >= 0:
        marked_answer = _marked(answer, start + at, start + at + len(sentence))
    else:
        anywhere = answer.find(sentence) if sentence else -1
        marked_answer = _marked(answer, anywhere, anywhere + len(sentence)) if anywhere >= 0 else answer
    return marked_paragraph, found, marked_answer


@dataclass
class UnitView:
    """Everything the page shows about one unit, its untrusted texts already rendered."""

    unit: Unit
    question: str
    answer_html: SafeString
    paragraph_html: SafeString | None = None
    sentence_text: str = ""
    sentence_found: bool = True
    whole_is_paragraph: bool = False
    cited: list[AnswerSource] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    others: list[AnswerSource] = field(default_factory=list)


def unit_view(*, unit: Unit, campaign: Campaign) -> UnitView:
    """The unit's question, answer (sentence highlighted), cited, broken and other sources. One query."""
    answer = unit.answer
    sources = list(AnswerSource.objects.filter(answer_id=answer.pk).select_related("chunk").order_by("rank"))
    retrieved = {source.chunk.external_id for source in sources}
    citations = citation_regex(campaign)
    sentence = unit.sentence if unit.level == Level.SENTENCE else None
    if sentence is None:
        return UnitView(
            unit=unit,
            question=answer.question.text,
            answer_html=render_text(_clean(answer.text), citations=citations, retrieved=retrieved),
            others=sources,
        )
    cited_ids = list(dict.fromkeys(str(c) for c in sentence.cited_ids or []))
    by_id = {source.chunk.external_id: source for source in sources}
    paragraph, found, whole = _locate(
        _clean(sentence.text), _clean(sentence.paragraph or sentence.text), _clean(answer.text)
    )
    return UnitView(
        unit=unit,
        question=answer.question.text,
        answer_html=render_text(whole, citations=citations, retrieved=retrieved),
        paragraph_html=render_text(paragraph, citations=citations, retrieved=retrieved),
        sentence_text=sentence.text,
        sentence_found=found,
        whole_is_paragraph=_clean(sentence.paragraph or "").strip() == _clean(answer.text).strip(),
        cited=[by_id[c] for c in cited_ids if c in by_id],
        broken=[c for c in cited_ids if c not in by_id],
        others=[source for source in sources if source.chunk.external_id not in cited_ids],
    )


# Access and context shared with the adjudication page


def open_stage(*, request: HttpRequest, slug: str, criterion: str, stage: str) -> tuple[Campaign, Criterion]:
    """The campaign and criterion if the user holds the stage's role; 403 / 404 otherwise.

    The role it checked is noted on the request, so that the workflow functions this request
    calls next do not read it again (see :func:`checked_roles`).
    """
    if stage not in STAGE_ROLE:
        raise Http404("No such stage.")
    found = get_criterion_for(user=request.user, slug=slug, name=criterion, role=STAGE_ROLE[stage])
    campaign = found.campaign
    if stage not in stages_for(mode=campaign.annotation_mode):
        raise Http404("This campaign's annotation mode has no such stage.")
    request.checked_roles = (campaign.pk, frozenset({STAGE_ROLE[stage]}))  # type: ignore[attr-defined]
    return campaign, found


def checked_roles(request: HttpRequest, criterion: Criterion) -> frozenset[str] | None:
    """The roles :func:`open_stage` checked in this request for the criterion's campaign; None
    (the workflow then reads them itself) when it did not."""
    campaign_id, roles = getattr(request, "checked_roles", (None, None))
    return roles if campaign_id == criterion.campaign_id else None


def value_names(criterion: Criterion) -> dict[int, str]:
    """What 1 and 0 mean for ``criterion``, in words."""
    return VALUE_NAMES.get(criterion.name, DEFAULT_VALUE_NAMES)


def work_context(
    *, request: HttpRequest, campaign: Campaign, criterion: Criterion, stage: str, unit: Unit | None
) -> dict:
    """Context of the work region: the unit, progress, keys, a fresh request key."""
    names = value_names(criterion)
    progress, overall = work_progress(user=request.user, criterion=criterion, stage=stage)
    return {
        "campaign": campaign,
        "criterion": criterion,
        "stage": stage,
        "stage_title": STAGE_TITLES[stage],
        "unit": unit,
        "view": unit_view(unit=unit, campaign=campaign) if unit else None,
        "progress": progress,
        "overall": overall,
        "choices": [
            {"value": 1, "key": criterion.positive_key or "1", "name": names[1], "meaning": names[1]},
            {"value": 0, "key": criterion.negative_key or "0", "name": names[0], "meaning": names[0]},
        ],
        # The guidelines on screen; a label submitted from this page records this version.
        "guidelines_version": current_version(criterion=criterion),
        "request_key": uuid.uuid4().hex,
        "undo_key": uuid.uuid4().hex,
        "message": "",
        "message_kind": "",
        "focus": "",
    }


def _first_label(*, unit: Unit, criterion: Criterion) -> Assignment | None:
    """The filled first-stage slot a reviewer is to confirm or override (review mode only)."""
    return (
        Assignment.objects.filter(unit=unit, criterion=criterion, stage=Stage.LABEL, label__isnull=False)
        .select_related("label")
        .order_by("slot")
        .first()
    )


Extra = Callable[[dict], None]


def _review_extra(context: dict) -> None:
    """In review mode the reviewer sees the first label and confirms or overrides it."""
    unit, criterion = context["unit"], context["criterion"]
    if unit is None or context["stage"] != Stage.REVIEW:
        return
    first = _first_label(unit=unit, criterion=criterion)
    context["first"] = first
    if first is None:
        return
    names = value_names(criterion)
    context["first_name"] = names[first.label.value]
    for choice in context["choices"]:
        # Overriding needs a comment: the keyboard asks for it before submitting.
        choice["needs_comment"] = choice["value"] != first.label.value
        verb = "Override" if choice["needs_comment"] else "Confirm"
        choice["name"] = f"{verb}: {names[choice['value']].lower()}"


def respond(
    request: HttpRequest,
    *,
    campaign: Campaign,
    criterion: Criterion,
    stage: str,
    template: str = TEMPLATE,
    extra: Extra | None = None,
    message: str = "",
    kind: str = "",
    focus: str = "",
    after: int | None = None,
) -> HttpResponse:
    """Hand the user their next unit and render it: the ``unit`` partial for htmx, else the page.

    ``extra`` adds the stage's own context (the first label to review, the labels in conflict).
    An error (``kind`` "error") answers 400 to a plain form post, 200 to htmx so that it swaps.
    ``after``: the unit on screen, to leave out (a prefetch of the one that follows it).
    """
    unit = next_unit(
        user=request.user,
        criterion=criterion,
        stage=stage,
        after=after,
        roles=checked_roles(request, criterion),
    )
    context = work_context(request=request, campaign=campaign, criterion=criterion, stage=stage, unit=unit)
    context.update(message=message, message_kind=kind, focus=focus)
    if extra is not None:
        extra(context)
    if request.htmx:
        return render(request, f"{template}#unit", context)
    return render(request, template, context, status=400 if kind == "error" else 200)


def after_post(
    request: HttpRequest,
    *,
    campaign: Campaign,
    criterion: Criterion,
    stage: str,
    page: str,
    template: str = TEMPLATE,
    extra: Extra | None = None,
    message: str = "",
    kind: str = "",
    focus: str = "",
) -> HttpResponse:
    """After a write: htmx gets the next unit at once; a plain form post is redirected to ``page``."""
    if request.htmx or kind == "error":
        return respond(
            request,
            campaign=campaign,
            criterion=criterion,
            stage=stage,
            template=template,
            extra=extra,
            message=message,
            kind=kind,
            focus=focus,
        )
    if message:
        messages.add_message(request, messages.INFO, message)
    return redirect(page)


def _int(raw: str | None) -> int | None:
    try:
        return int(raw or "")
    except ValueError:
        return None


# Views


def _page(campaign: Campaign, criterion: Criterion, stage: str) -> str:
    return reverse("annotation:annotate", args=[campaign.slug, criterion.name, stage])


@login_required
@require_GET
def annotate(request: HttpRequest, slug: str, criterion: str, stage: str) -> HttpResponse:
    if stage == Stage.ADJUDICATION:
        return redirect("annotation:adjudicate", slug=slug, criterion=criterion)
    campaign, found = open_stage(request=request, slug=slug, criterion=criterion, stage=stage)
    after = _int(request.GET.get("after")) if request.htmx else None
    return respond(request, campaign=campaign, criterion=found, stage=stage, extra=_review_extra, after=after)


@login_required
@require_POST
def annotate_submit(request: HttpRequest, slug: str, criterion: str, stage: str) -> HttpResponse:
    campaign, found = open_stage(request=request, slug=slug, criterion=criterion, stage=stage)
    outcome = submit_from_post(request=request, criterion=found, stage=stage)
    if isinstance(outcome, HttpResponse):
        return outcome
    return after_post(
        request,
        campaign=campaign,
        criterion=found,
        stage=stage,
        page=_page(campaign, found, stage),
        extra=_review_extra,
        **outcome,
    )


def submit_from_post(*, request: HttpRequest, criterion: Criterion, stage: str) -> dict | HttpResponse:
    """Record the posted label; the outcome to show (message, kind, focus), or a 400 response."""
    unit_id, value = _int(request.POST.get("unit_id")), _int(request.POST.get("value"))
    if unit_id is None or value is None:
        return HttpResponseBadRequest("unit_id and value are required whole numbers")
    shown = request.POST.get("guidelines_version")
    if shown not in (None, "") and _int(shown) is None:
        return HttpResponseBadRequest("guidelines_version must be a whole number")
    try:
        submit_label(
            user=request.user,
            unit_id=unit_id,
            criterion=criterion,
            stage=stage,
            value=value,
            comment=request.POST.get("comment", ""),
            request_key=request.POST.get("request_key"),
            roles=checked_roles(request, criterion),
            guidelines_version_id=_int(shown),
        )
    except WorkflowError as exc:
        focus = "comment" if exc.code == "comment_required" else ""
        return {"message": str(exc).capitalize() + ".", "kind": "error", "focus": focus}
    return {}


def skip_from_post(*, request: HttpRequest, criterion: Criterion, stage: str) -> dict | HttpResponse:
    """Skip the posted unit; the outcome to show, or a 400 response."""
    unit_id = _int(request.POST.get("unit_id"))
    if unit_id is None:
        return HttpResponseBadRequest("unit_id is required")
    skip(
        user=request.user,
        criterion=criterion,
        stage=stage,
        unit_id=unit_id,
        roles=checked_roles(request, criterion),
    )
    return {}


def undo_from_post(*, request: HttpRequest, criterion: Criterion, stage: str) -> dict:
    """Withdraw the user's last label at the stage; the outcome to show."""
    try:
        undo_last(
            user=request.user,
            criterion=criterion,
            stage=stage,
            request_key=request.POST.get("request_key"),
            roles=checked_roles(request, criterion),
        )
    except WorkflowError as exc:
        return {"message": str(exc).capitalize() + ".", "kind": "error"}
    return {"message": "Your last label was withdrawn: here is the unit again.", "kind": "info"}


@login_required
@require_POST
def annotate_skip(request: HttpRequest, slug: str, criterion: str, stage: str) -> HttpResponse:
    campaign, found = open_stage(request=request, slug=slug, criterion=criterion, stage=stage)
    outcome = skip_from_post(request=request, criterion=found, stage=stage)
    if isinstance(outcome, HttpResponse):
        return outcome
    return after_post(
        request,
        campaign=campaign,
        criterion=found,
        stage=stage,
        page=_page(campaign, found, stage),
        extra=_review_extra,
    )


@login_required
@require_POST
def annotate_undo(request: HttpRequest, slug: str, criterion: str, stage: str) -> HttpResponse:
    campaign, found = open_stage(request=request, slug=slug, criterion=criterion, stage=stage)
    outcome = undo_from_post(request=request, criterion=found, stage=stage)
    return after_post(
        request,
        campaign=campaign,
        criterion=found,
        stage=stage,
        page=_page(campaign, found, stage),
        extra=_review_extra,
        **outcome,
    )
