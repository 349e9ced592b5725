"""Creating campaigns and their built-in criteria."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils.text import slugify
from django.utils.translation import gettext_lazy as _

from annotation.corpus.conventions import BUILTIN_CRITERIA
from annotation.criteria.guidelines import guidelines_for
from annotation.errors import FieldError, refusal
from annotation.models import Answer, Campaign, Criterion, Membership, Role
from annotation.workflow import events


def ensure_builtin_criteria(*, campaign: Campaign) -> list[Criterion]:
    """Create the built-in criteria (veracity, relevance) the campaign lacks; return all of them."""
    language = campaign.expected_language or "fr"
    criteria = []
    for name, spec in BUILTIN_CRITERIA.items():
        criterion, _ = Criterion.objects.get_or_create(
            campaign=campaign,
            name=name,
            defaults={
                "level": spec["level"],
                "title": spec["title"],
                "guidelines": guidelines_for(criterion=name, language=language),
                "builtin": True,
            },
        )
        criteria.append(criterion)
    return criteria


@transaction.atomic
def get_or_create_campaign(*, name: str, **fields: object) -> tuple[Campaign, bool]:
    """The campaign named ``name``, created with ``fields`` and the built-in criteria on first use.

    Raises ValueError when the name is blank or its slug is taken by another campaign.
    """
    name = name.strip()
    if not name:
        raise ValueError(_("campaign name: must not be blank"))
    campaign = Campaign.objects.filter(name=name).first()
    if campaign is not None:
        ensure_builtin_criteria(campaign=campaign)
        return campaign, False
    slug = slugify(name)[:200] or "campaign"
    if Campaign.objects.filter(slug=slug).exists():
        raise FieldError(
            "campaign name",
            refusal(
                _("campaign name: %(name)s gives the slug %(slug)s, already used by another campaign"),
                name=repr(name),
                slug=repr(slug),
            ),
            conflict=True,
        )
    campaign = Campaign.objects.create(name=name, slug=slug, **fields)
    ensure_builtin_criteria(campaign=campaign)
    return campaign, True


@transaction.atomic
def create_managed_campaign(*, name: str, manager) -> Campaign:
    """A new, empty campaign named ``name`` (with the built-in criteria), ``manager`` its manager.

    Raises FieldError (field ``name``) when the name is blank or taken, or its slug is taken.
    """
    name = name.strip()
    if Campaign.objects.filter(name=name).exists():
        raise FieldError("name", f"name: a campaign named {name!r} exists already", conflict=True)
    try:
        campaign, _ = get_or_create_campaign(name=name)
    except ValueError as exc:
        taken = isinstance(exc, FieldError) and exc.conflict
        raise FieldError(
            "name", "name: " + str(exc).removeprefix("campaign name: "), conflict=taken
        ) from None
    Membership.objects.create(campaign=campaign, user=manager, role=Role.MANAGER)
    return campaign


def campaign_of_content(row) -> int:
    """The campaign of a row of content: its own (a question, chunk, answer, unit), or its
    answer's (an answer's source, a sentence: one query)."""
    campaign_id = getattr(row, "campaign_id", None)
    if campaign_id is not None:
        return campaign_id
    return Answer.objects.values_list("campaign_id", flat=True).get(pk=row.answer_id)


def content_changed(*, campaign_id: int) -> None:
    """The campaign's questions, chunks or answers changed: its ``content_version`` moves, so that
    figures kept from the former content are not read again (one UPDATE, in the current
    transaction: rolled back with it), and the layers above are told once it commits
    (``events.content_changed``)."""
    Campaign.objects.filter(pk=campaign_id).update(content_version=F("content_version") + 1)
    events.announce_content_changed(campaign_id=campaign_id)
