"""Stratified samples for managers: draw one, follow it, read its clusters, top it up, download it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from annotation.access import get_campaign_for
from annotation.jobs import request_sample, request_top_up
from annotation.models import Campaign, Criterion, Role, Sample, Unit
from annotation.sampling.reading import cluster_summary, sample_as_json
from annotation.sampling.staleness import is_stale

VIEWERS = [Role.MANAGER, Role.ANALYST]
OPERATORS = [Role.MANAGER]
THEME_BUDGET_PREFIX = "theme_budget:"
ACTIVE = (Sample.Status.PENDING, Sample.Status.RUNNING)


def _whole_number(raw: str | None, *, field: str, errors: list[str], minimum: int = 0) -> int | None:
    """The form value as an int, None when blank; an error naming ``field`` otherwise."""
    raw = (raw or "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        errors.append(f"{field}: {raw!r} is not a whole number")
        return None
    if value < minimum:
        errors.append(f"{field}: must be at least {minimum}")
        return None
    return value


def _themes(campaign: Campaign) -> list[str]:
    return list(
        Unit.objects.filter(campaign=campaign).values_list("theme", flat=True).distinct().order_by("theme")
    )


def _list_context(*, campaign: Campaign, roles: set[str], errors: list[str], form: dict) -> dict:
    samples = (
        Sample.objects.filter(campaign=campaign)
        .select_related("criterion", "created_by")
        .annotate(drawn=Count("items"))
        .order_by("criterion__name", "-created_at", "-id")
    )
    criteria = list(Criterion.objects.filter(campaign=campaign).order_by("name"))
    by_criterion = {criterion.pk: [] for criterion in criteria}
    for sample in samples:
        by_criterion.setdefault(sample.criterion_id, []).append(sample)
    themes = _themes(campaign)
    return {
        "campaign": campaign,
        "can_operate": bool(roles.intersection(OPERATORS)),
        "criteria_samples": [(criterion, by_criterion[criterion.pk]) for criterion in criteria],
        "criteria": criteria,
        "themes": [(theme, form.get(THEME_BUDGET_PREFIX + theme, "")) for theme in themes],
        "errors": errors,
        "form": form,
    }


@login_required
@require_GET
def sampling(request: HttpRequest, slug: str) -> HttpResponse:
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    context = _list_context(campaign=campaign, roles=roles, errors=[], form={})
    return render(request, "annotation/sampling.html", context)


@login_required
@require_POST
def sample_draw(request: HttpRequest, slug: str) -> HttpResponse:
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=OPERATORS)
    errors: list[str] = []
    criterion = Criterion.objects.filter(campaign=campaign, name=request.POST.get("criterion", "")).first()
    if criterion is None:
        errors.append("criterion: choose one of the campaign's criteria")
    budget = _whole_number(request.POST.get("budget"), field="budget", errors=errors, minimum=1)
    if budget is None and not any(e.startswith("budget:") for e in errors):
        errors.append("budget: give the number of human labels to spend")
    per_cluster = _whole_number(
        request.POST.get("per_cluster"), field="per cluster", errors=errors, minimum=1
    )
    seed = _whole_number(request.POST.get("seed"), field="seed", errors=errors)
    per_theme: dict[str, int] = {}
    for key, raw in request.POST.items():
        if key.startswith(THEME_BUDGET_PREFIX):
            theme = key[len(THEME_BUDGET_PREFIX) :]
            value = _whole_number(raw, field=f"budget for {theme}", errors=errors)
            if value is not None:
                per_theme[theme] = value
    if not errors:
        try:
            sample = request_sample(
                criterion=criterion,
                budget=budget,
                seed=0 if seed is None else seed,
                per_cluster=3 if per_cluster is None else per_cluster,
                per_theme_budget=per_theme or None,
                user=request.user,
            )
        except ValueError as exc:
            errors.append(str(exc))
        else:
            return redirect("annotation:sample_detail", slug=campaign.slug, sample_id=sample.pk)
    context = _list_context(campaign=campaign, roles=roles, errors=errors, form=request.POST.dict())
    return render(request, "annotation/sampling.html", context, status=400)


def _detail_context(*, campaign: Campaign, roles: set[str], sample: Sample, errors: list[str]) -> dict:
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
        "errors": errors,
    }


@login_required
@require_GET
def sample_detail(request: HttpRequest, slug: str, sample_id: int) -> HttpResponse:
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    sample = get_object_or_404(Sample.objects.select_related("criterion"), pk=sample_id, campaign=campaign)
    context = _detail_context(campaign=campaign, roles=roles, sample=sample, errors=[])
    if request.htmx:
        response = render(request, "annotation/sample_detail.html#progress", context)
        if not context["active"]:
            # 286 tells htmx to stop polling; this last fragment carries the final state.
            return HttpResponseStopPolling(response.content)
        return response
    return render(request, "annotation/sample_detail.html", context)


@login_required
@require_POST
def sample_top_up(request: HttpRequest, slug: str, sample_id: int) -> HttpResponse:
    campaign, roles = get_campaign_for(user=request.user, slug=slug, roles=OPERATORS)
    sample = get_object_or_404(Sample.objects.select_related("criterion"), pk=sample_id, campaign=campaign)
    errors: list[str] = []
    budget = _whole_number(request.POST.get("budget"), field="budget", errors=errors, minimum=1)
    per_cluster = _whole_number(
        request.POST.get("per_cluster"), field="per cluster", errors=errors, minimum=1
    )
    if not errors:
        try:
            request_top_up(sample=sample, budget=budget, per_cluster=per_cluster)
        except ValueError as exc:
            errors.append(str(exc))
        else:
            return redirect("annotation:sample_detail", slug=campaign.slug, sample_id=sample.pk)
    sample.refresh_from_db()
    context = _detail_context(campaign=campaign, roles=roles, sample=sample, errors=errors)
    return render(request, "annotation/sample_detail.html", context, status=400)


@login_required
@require_GET
def sample_json(request: HttpRequest, slug: str, sample_id: int) -> HttpResponse:
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    sample = get_object_or_404(Sample.objects.select_related("criterion"), pk=sample_id, campaign=campaign)
    response = JsonResponse(sample_as_json(sample=sample), json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-sample-{sample.pk}.json"'
    return response
