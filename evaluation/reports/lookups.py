"""Campaigns and criteria named by a command or an API request: found, or refused with a message
that names the field and, for a criterion, the campaign's criteria."""

from __future__ import annotations

from annotation.models import Campaign, Criterion
from evaluation.errors import EstimateError


def find_campaign(name: str, *, field: str = "campaign") -> Campaign:
    """The campaign named ``name``; EstimateError on ``field`` otherwise."""
    found = Campaign.objects.filter(name=name).first()
    if found is None:
        raise EstimateError(f"campaign {name!r} does not exist", field=field, missing=True)
    return found


def find_criterion(*, campaign: Campaign, name: str, field: str = "criterion") -> Criterion:
    """The criterion ``name`` of ``campaign``; EstimateError on ``field``, naming the campaign's
    criteria, otherwise."""
    found = Criterion.objects.filter(campaign=campaign, name=name).first()
    if found is None:
        names = ", ".join(campaign.criteria.order_by("name").values_list("name", flat=True)) or "none"
        raise EstimateError(
            f"criterion {name!r} does not exist in {campaign.name!r} (criteria: {names})",
            field=field,
            missing=True,
        )
    return found
