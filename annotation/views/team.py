"""The campaign's work page (my queues, progress, human agreement); for managers, the label history
and the team page (members and roles)."""

from __future__ import annotations

import csv
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import team
from annotation.access import AppRequest, get_campaign_for, may_see_annotators
from annotation.forms import AddMemberForm, HistoryFilterForm, MemberForm, MemberRoleForm, add_domain_error
from annotation.models import Campaign, Criterion, Role, Stage
from annotation.workflow import my_queues
from annotation.workflow.agreement import campaign_agreement, may_see_agreement
from annotation.workflow.history import action_of, history_csv_rows, label_history, labellers

HISTORY_ROLES = [Role.MANAGER]
# Who sees the anytime sequences' status on the work page (it follows the judge: never labellers).
ANYTIME_ROLES = [Role.MANAGER, Role.ANALYST]
TEAM_ROLES = [Role.MANAGER]
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
        sees_anytime=bool(roles.intersection(ANYTIME_ROLES)),
        sees_annotators=may_see_annotators(roles=roles),
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


def _team_page(
    request: AppRequest, campaign: Campaign, *, form: AddMemberForm, refused: forms.Form | None = None
) -> HttpResponse:
    context = {
        "campaign": campaign,
        "members": team.team_of(campaign=campaign),
        "form": form,
        "refused": refused,
    }
    status = 400 if form.errors or (refused is not None and refused.errors) else 200
    return render(request, "annotation/team.html", context, status=status)


def _names(roles: list[str]) -> str:
    return ", ".join(str(team.ROLE_NAMES[Role(role)]) for role in roles)


@login_required
@require_http_methods(["GET", "POST"])
def members(request: AppRequest, slug: str) -> HttpResponse:
    """The team page; its form adds an existing account with some roles."""
    campaign, _roles = get_campaign_for(user=request.user, slug=slug, roles=TEAM_ROLES)
    form = AddMemberForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            user, granted = team.add_member(
                campaign=campaign,
                username=form.cleaned_data["username"],
                roles=form.cleaned_data["roles"],
                by=request.user,
            )
        except team.TeamError as error:
            add_domain_error(form, error)
        else:
            name = user.get_username()
            if granted:
                messages.success(
                    request, _("%(name)s: %(roles)s granted.") % {"name": name, "roles": _names(granted)}
                )
            else:
                messages.info(request, _("%(name)s already held these roles.") % {"name": name})
            return redirect("annotation:team", slug=campaign.slug)
    return _team_page(request, campaign, form=form)


@login_required
@require_POST
def grant(request: AppRequest, slug: str) -> HttpResponse:
    campaign, _roles = get_campaign_for(user=request.user, slug=slug, roles=TEAM_ROLES)
    form = MemberRoleForm(request.POST, campaign=campaign)
    if not form.is_valid():
        return _team_page(request, campaign, form=AddMemberForm(), refused=form)
    user, role = form.cleaned_data["user"], form.cleaned_data["role"]
    if team.grant_roles(campaign=campaign, user=user, roles=[role], by=request.user):
        messages.success(
            request,
            _("%(name)s: %(roles)s granted.") % {"name": user.get_username(), "roles": _names([role])},
        )
    return redirect("annotation:team", slug=campaign.slug)


def _refused(request: AppRequest, campaign: Campaign, error: team.TeamError) -> HttpResponse:
    """Back to the team page, which says why (the last manager kept, a role not held): a state
    of the team, not a malformed request."""
    messages.error(request, error.reason)
    return redirect("annotation:team", slug=campaign.slug)


def _removal(request: AppRequest, slug: str, *, whole: bool) -> HttpResponse:
    """Revoke one role (``whole`` False) or every role: GET asks for confirmation, POST does it;
    a change the team refuses sends back to the team page with the reason."""
    campaign, _roles = get_campaign_for(user=request.user, slug=slug, roles=TEAM_ROLES)
    data = request.POST if request.method == "POST" else request.GET
    form = MemberForm(data, campaign=campaign) if whole else MemberRoleForm(data, campaign=campaign)
    if not form.is_valid():
        return _team_page(request, campaign, form=AddMemberForm(), refused=form)
    user = form.cleaned_data["user"]
    roles = [role.value for role in Role] if whole else [form.cleaned_data["role"]]
    if request.method == "GET":
        try:
            team.check_revocable(campaign=campaign, user=user, roles=roles)
        except team.TeamError as error:
            return _refused(request, campaign, error)
        context = {
            "campaign": campaign,
            "form": form,
            "person": user,
            "whole": whole,
            "role_name": "" if whole else _names(roles),
            "leases": team.live_leases(campaign=campaign, user=user, roles=roles),
        }
        return render(request, "annotation/team_confirm.html", context)
    try:
        lost = team.revoke_roles(campaign=campaign, user=user, roles=roles, by=request.user)
    except team.TeamError as error:
        return _refused(request, campaign, error)
    name = user.get_username()
    if whole:
        messages.success(request, _("%(name)s is no longer a member of this campaign.") % {"name": name})
    elif lost:
        messages.success(request, _("%(name)s: %(roles)s revoked.") % {"name": name, "roles": _names(lost)})
    if user.pk == request.user.pk and Role.MANAGER in lost and not request.user.is_superuser:
        return redirect("evaluation:campaign_list")  # the team page is no longer theirs
    return redirect("annotation:team", slug=campaign.slug)


@login_required
@require_http_methods(["GET", "POST"])
def revoke(request: AppRequest, slug: str) -> HttpResponse:
    return _removal(request, slug, whole=False)


@login_required
@require_http_methods(["GET", "POST"])
def remove(request: AppRequest, slug: str) -> HttpResponse:
    return _removal(request, slug, whole=True)
