"""Campaigns: the caller's list, a new one (staff, as on the new-campaign page), its overview."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja import Router, Status
from ninja.responses import codes_4xx

from annotation.access import (
    campaigns_for,
    get_campaign_for,
    may_create_campaigns,
    may_see_counts,
    roles_by_campaign,
)
from annotation.corpus.campaigns import create_managed_campaign
from annotation.errors import FieldError
from api.errors import domain_refusal
from api.schemas import CampaignDetailOut, CampaignIn, CampaignOut, ErrorOut
from evaluation.pages.overview import campaign_counts

router = Router(tags=["campaigns"])


@router.get("/campaigns", response={200: list[CampaignOut], codes_4xx: ErrorOut}, url_name="campaigns")
def list_campaigns(request: HttpRequest):
    """The campaigns the token's person is a member of (every campaign for a superuser)."""
    campaigns = list(campaigns_for(user=request.user).order_by("name"))
    roles = roles_by_campaign(user=request.user, campaigns=campaigns)
    return [
        {"slug": campaign.slug, "name": campaign.name, "roles": sorted(roles[campaign.pk])}
        for campaign in campaigns
    ]


@router.post("/campaigns", response={201: CampaignOut, codes_4xx: ErrorOut})
def create_campaign(request: HttpRequest, data: CampaignIn):
    """A new, empty campaign (staff only); the caller becomes its manager."""
    if not may_create_campaigns(user=request.user):
        raise PermissionDenied("Only staff may create campaigns.")
    try:
        campaign = create_managed_campaign(name=data.name, manager=request.user)
    except FieldError as exc:
        raise domain_refusal(exc) from None
    return Status(201, {"slug": campaign.slug, "name": campaign.name, "roles": ["manager"]})


@router.get("/campaigns/{slug}", response={200: CampaignDetailOut, codes_4xx: ErrorOut}, url_name="campaign")
def campaign_detail(request: HttpRequest, slug: str):
    """The campaign's criteria and counts (of labels and judgments too for managers and analysts)."""
    campaign, roles = get_campaign_for(user=request.user, slug=slug)
    criteria = dict(campaign.criteria.order_by("name").values_list("name", "title"))
    return {
        "slug": campaign.slug,
        "name": campaign.name,
        "roles": sorted(roles),
        "criteria": list(criteria),
        "criterion_titles": criteria,
        "counts": campaign_counts(campaign=campaign, with_work=may_see_counts(roles=roles)),
    }
