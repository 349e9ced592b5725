"""Stratified samples for managers: draw one, follow it, read its clusters, top it up, download it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from annotation.access import AppRequest, get_campaign_for
from annotation.forms import SampleDrawForm, TopUpForm, add_domain_error, sample_draw_form
from annotation.jobs import request_sample, request_top_up
from annotation.models import Campaign, Criterion, Role, Sample
from annotation.sampling.reading import cluster_summary, sample_as_json
from annotation.sampling.staleness import is_stale

VIEWERS = [Role.MANAGER, Role.ANALYST]
OPERATORS = [Role.MANAGER]
ACTIVE = (Sample.Status.PENDING, Sample.Status.RUNNING)


def _list_context(*, campaign: Campaign, roles: set[str], form: SampleDrawForm) -> dict:
    samples = (
        Sample.objects.filter(campaign=campaign)
        .select_related("criterion", "created_by")
        .annotate(drawn=Count("items"))
        .order_by("criterion__name", "-created_at", "-id")
    )
    criteria = list(Criterion.objects.filter(campaign=campaign).order_by("name"))
    by_criterion: dict[int, list[Sample]] = {criterion.pk: [] for criterion in criteria}
    for sample in samples:
        by_criterion.setdefault(sample.criterion_id, []).append(sample)
    return {
        "campaign": campaign,
        "can_operate": bool(roles.intersection(OPERATORS)),
        "criteria_samples": [(criterion, by_criterion[criterion.pk]) for criterion in criteria],
        "form": form,
    }


@login_required
@require_GET
def sampling(request: AppRequest, slug: str) -> HttpResponse:
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    context = _list_context(campaign=campaign, roles=roles, form=sample_draw_form(campaign=campaign))
    return render(request, "annotation/sampling.html", context)


@login_required
@require_POST
def sample_draw(request: AppRequest, slug: str) -> HttpResponse:
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=OPERATORS)
    form = sample_draw_form(campaign=campaign, data=request.POST)
    if form.is_valid():
        try:
            sample = request_sample(**form.draw_arguments(), user=request.user)
        except ValueError as error:
            add_domain_error(form, error)
        else:
            return redirect("annotation:sample_detail", slug=campaign.slug, sample_id=sample.pk)
    context = _list_context(campaign=campaign, roles=roles, form=form)
    return render(request, "annotation/sampling.html", context, status=400)


def _detail_context(
    *, campaign: Campaign, roles: set[str], sample: Sample, form: TopUpForm | None = None
) -> dict:
    # A stale sample's run died: stop polling and offer to run it again.
    stale = is_stale(sample=sample)
    finished = sample.status not in ACTIVE or stale
    return {
        "campaign": campaign,
        "sample": sample,
        "active": not finished,
        "stale": stale,
        "summary": cluster_summary(sample=sample) if finished else [],
        "drawn": sample.items.count(),
        "can_operate": bool(roles.intersection(OPERATORS)),
        "form": form or TopUpForm(budget=sample.budget, per_cluster=sample.per_cluster),
    }


@login_required
@require_GET
def sample_detail(request: AppRequest, slug: str, sample_id: int) -> HttpResponse:
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    sample = get_object_or_404(Sample.objects.select_related("criterion"), pk=sample_id, campaign=campaign)
    context = _detail_context(campaign=campaign, roles=roles, sample=sample)
    if request.htmx:
        response = render(request, "annotation/sample_detail.html#progress", context)
        if not context["active"]:
            # 286 tells htmx to stop polling; this last fragment carries the final state.
            return HttpResponseStopPolling(response.content)
        return response
    return render(request, "annotation/sample_detail.html", context)


@login_required
@require_POST
def sample_top_up(request: AppRequest, slug: str, sample_id: int) -> HttpResponse:
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=OPERATORS)
    sample = get_object_or_404(Sample.objects.select_related("criterion"), pk=sample_id, campaign=campaign)
    form = TopUpForm(request.POST, budget=sample.budget, per_cluster=sample.per_cluster)
    if form.is_valid():
        try:
            request_top_up(sample=sample, **form.cleaned_data)
        except ValueError as error:
            add_domain_error(form, error)
        else:
            return redirect("annotation:sample_detail", slug=campaign.slug, sample_id=sample.pk)
    sample.refresh_from_db()
    context = _detail_context(campaign=campaign, roles=roles, sample=sample, form=form)
    return render(request, "annotation/sample_detail.html", context, status=400)


@login_required
@require_GET
def sample_json(request: AppRequest, slug: str, sample_id: int) -> HttpResponse:
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    sample = get_object_or_404(Sample.objects.select_related("criterion"), pk=sample_id, campaign=campaign)
    response = JsonResponse(sample_as_json(sample=sample), json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-sample-{sample.pk}.json"'
    return response
