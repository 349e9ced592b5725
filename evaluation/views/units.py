"""One unit, whole (labels, history, final label, judges), and where humans and the judge disagree.

Managers, analysts and adjudicators open a unit; only managers and analysts see its judges'
labels. People who label and review get 403 (outsiders 404), adjudicators too when they also
label or review: they must not see the others' labels, nor the judge's. The disagreements are
for managers and analysts only.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import AppRequest, get_campaign_for, may_open_units, may_see_judges
from annotation.models import Role
from evaluation.forms.reports import DisagreementForm
from evaluation.pages import unit_record
from evaluation.views.reports import criterion_page

UNIT_VIEWERS = [Role.MANAGER, Role.ANALYST, Role.ADJUDICATOR]
PER_PAGE = 25


@login_required
@require_GET
def unit(request: AppRequest, slug: str, unit_id: int) -> HttpResponse:
    """The unit page (404 when the campaign has no such unit)."""
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=UNIT_VIEWERS)
    if not may_open_units(roles=roles):
        raise PermissionDenied("Your roles in this campaign do not allow this page.")
    record = unit_record.unit_record(
        campaign=campaign, unit_id=unit_id, with_judges=may_see_judges(roles=roles)
    )
    if record is None:
        raise Http404("No such unit.")
    return render(request, "evaluation/unit.html", {"campaign": campaign, "roles": roles, "record": record})


@login_required
@require_GET
def disagreements(request: AppRequest, slug: str, criterion: str) -> HttpResponse:
    """Units whose final human label differs from a judge's, filtered by theme and judge, paginated."""
    campaign, roles, criterion_obj, judges = criterion_page(request=request, slug=slug, criterion=criterion)
    criterion_obj.campaign = campaign
    form = DisagreementForm(request.GET, criterion=criterion_obj, judges=judges)
    context = {"campaign": campaign, "roles": roles, "criterion": criterion_obj, "form": form}
    if form.is_valid() and form.cleaned_data["judge"] is not None:
        judge = form.cleaned_data["judge"]
        ids = unit_record.disagreeing_unit_ids(
            criterion=criterion_obj, judge=judge, theme=form.cleaned_data["theme"] or None
        )
        page = Paginator(ids, PER_PAGE).get_page(request.GET.get("page"))
        context.update(
            judge=judge,
            page=page,
            rows=unit_record.disagreements(criterion=criterion_obj, judge=judge, unit_ids=list(page)),
            query=form.query(),
        )
    return render(request, "evaluation/disagreements.html", context, status=200 if form.is_valid() else 400)
