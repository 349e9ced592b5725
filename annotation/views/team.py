"""The campaign's work page (my queues, progress, human agreement) and the label history for managers."""

from __future__ import annotations

import csv
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import AppRequest, get_campaign_for
from annotation.agreement import campaign_agreement, may_see_agreement
from annotation.forms import HistoryFilterForm
from annotation.history import action_of, history_csv_rows, label_history, labellers
from annotation.models import Campaign, Criterion, Role, Stage
from annotation.workflow import my_queues

HISTORY_ROLES = [Role.MANAGER]
PAGE_SIZE = 50


@login_required
@require_GET
def work(request: AppRequest, slug: str) -> HttpResponse:
    campaign, roles = get_campaign_for(user=request.user, slug=slug)
    context = {"campaign": campaign, "queues": my_queues(user=request.user, campaign=campaign)}
    if request.htmx:
        return render(request, "annotation/work.html#queues", context)
    context.update(
        # Labellers never see agreement: a blind pair's outcome would tell them the other label.
        agreement=campaign_agreement(campaign=campaign) if may_see_agreement(roles=roles) else None,
        can_see_history=bool(roles.intersection(HISTORY_ROLES)),
        roles=sorted(roles),
    )
    return render(request, "annotation/work.html", context)


class _Echo:
    """A file-like object whose write returns the line, for csv.writer feeding a stream."""

    def write(self, value: str) -> str:
        return value


def _filters(request: AppRequest, campaign: Campaign) -> HistoryFilterForm:
    """The history filters from the query string; values the campaign does not know are ignored."""
    criteria = Criterion.objects.filter(campaign=campaign).order_by("name")
    return HistoryFilterForm(request.GET, people=labellers(campaign=campaign), criteria=criteria)


@login_required
@require_GET
def history(request: AppRequest, slug: str) -> HttpResponse:
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=HISTORY_ROLES)
    filters = _filters(request, campaign)
    rows = label_history(campaign=campaign, **filters.arguments())
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    selected = filters.selected()
    context = {
        "campaign": campaign,
        "page": page,
        "rows": [(label, action_of(label)) for label in page.object_list],
        "query": urlencode({name: value for name, value in selected.items() if value}),
        "people": filters.people,
        "criteria": filters.criteria,
        "stages": list(Stage),
        "selected": selected,
    }
    if request.htmx:
        return render(request, "annotation/history.html#rows", context)
    return render(request, "annotation/history.html", context)


@login_required
@require_GET
def history_csv(request: AppRequest, slug: str) -> StreamingHttpResponse:
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=HISTORY_ROLES)
    writer = csv.writer(_Echo())
    rows = history_csv_rows(campaign=campaign, **_filters(request, campaign).arguments())
    response = StreamingHttpResponse(
        (writer.writerow(row) for row in rows), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-label-history.csv"'
    return response
