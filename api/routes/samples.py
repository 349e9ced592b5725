"""Samples: draw one (managers), follow it and read its items (managers and analysts)."""

from __future__ import annotations

from django.db.models import Count, F
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import Router, Status
from ninja.pagination import paginate
from ninja.responses import codes_4xx

from annotation.access import get_campaign_for
from annotation.forms import THEME_BUDGET_PREFIX, sample_draw_form
from annotation.jobs import request_sample
from annotation.models import Role, Sample
from annotation.sampling.reading import JSON_FIELDS
from api.errors import domain_refusal, form_refusal
from api.pagination import Pages
from api.schemas import ErrorOut, SampleIn, SampleItemOut, SampleOut

router = Router(tags=["samples"])
VIEWERS = [Role.MANAGER, Role.ANALYST]
OPERATORS = [Role.MANAGER]
PAGE_SIZE = 100


def sample_out(sample: Sample, *, drawn: int) -> dict:
    return {
        "id": sample.pk,
        "criterion": sample.criterion.name,
        "status": sample.status,
        "progress": sample.progress,
        "budget": sample.budget,
        "per_cluster": sample.per_cluster,
        "seed": sample.seed,
        "error": sample.error,
        "drawn": drawn,
        "url": reverse("api-v1:sample", kwargs={"slug": sample.campaign.slug, "sample_id": sample.pk}),
        "created_at": sample.created_at,
    }


@router.get(
    "/campaigns/{slug}/samples", response={200: list[SampleOut], codes_4xx: ErrorOut}, url_name="samples"
)
def list_samples(request: HttpRequest, slug: str):
    """The campaign's samples, newest first."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    samples = (
        Sample.objects.filter(campaign=campaign)
        .select_related("criterion", "campaign")
        .annotate(drawn=Count("items"))
        .order_by("-created_at", "-id")
    )
    return [sample_out(sample, drawn=sample.drawn) for sample in samples]


@router.post("/campaigns/{slug}/samples", response={202: SampleOut, codes_4xx: ErrorOut})
def draw_sample(request: HttpRequest, slug: str, data: SampleIn):
    """Draw a stratified sample in the background, as the sampling page does (managers)."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=OPERATORS)
    posted: dict[str, object] = {
        "criterion": data.criterion,
        "budget": data.budget,
        "per_cluster": data.per_cluster,
        "seed": data.seed,
    }
    for theme, budget in (data.per_theme_budget or {}).items():
        posted[THEME_BUDGET_PREFIX + theme] = budget
    form = sample_draw_form(
        campaign=campaign, data={key: "" if value is None else str(value) for key, value in posted.items()}
    )
    if not form.is_valid():
        raise form_refusal(form)
    try:
        sample = request_sample(**form.draw_arguments(), user=request.user)
    except ValueError as exc:
        raise domain_refusal(exc) from None
    sample = Sample.objects.select_related("criterion", "campaign").get(pk=sample.pk)
    return Status(202, sample_out(sample, drawn=sample.items.count()))


@router.get(
    "/campaigns/{slug}/samples/{sample_id}", response={200: SampleOut, codes_4xx: ErrorOut}, url_name="sample"
)
def sample_status(request: HttpRequest, slug: str, sample_id: int):
    """A sample's status and progress (pending, running, done, failed)."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    sample = get_object_or_404(
        Sample.objects.select_related("criterion", "campaign"), pk=sample_id, campaign=campaign
    )
    return sample_out(sample, drawn=sample.items.count())


@router.get(
    "/campaigns/{slug}/samples/{sample_id}/items",
    response={200: list[SampleItemOut], codes_4xx: ErrorOut},
    url_name="sample_items",
)
@paginate(Pages, page_size=PAGE_SIZE)
def sample_items(request: HttpRequest, slug: str, sample_id: int):
    """The sample's items (the units drawn, with their cluster and inclusion probability), by
    theme, cluster and rank, PAGE_SIZE a page."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=VIEWERS)
    sample = get_object_or_404(Sample, pk=sample_id, campaign=campaign)
    return sample.items.order_by("theme", "cluster", "rank", "unit_id").values(
        "theme",
        "cluster",
        "cluster_size",
        "inclusion_probability",
        answer_id=F(JSON_FIELDS["answer_id"]),
        sentence=F(JSON_FIELDS["sentence"]),
        source=F(JSON_FIELDS["source"]),
    )
