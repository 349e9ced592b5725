"""The judge of labels that came with the data (an import file's judge labels, another tool's
predictions): one judge per name, of kind ``imported``, found or created here and nowhere else.
It holds labels; it never runs."""

from __future__ import annotations

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from annotation.models import Campaign
from evaluation.models import Judge

IMPORTED = "imported"


class NotAnImportedJudge(ValueError):
    """A judge of that name exists and runs in the app: its judgments cannot take imported
    labels. ``field`` names what the caller should change."""

    field = "judge"

    def __init__(self, message: str | Promise) -> None:
        super().__init__(message)
        self.message = message


def existing_imported_judge(*, campaign: Campaign, name: str = IMPORTED) -> Judge | None:
    """The campaign's judge of imported labels called ``name``, or None when there is none yet.
    NotAnImportedJudge when the judge of that name is not an imported one (an LLM or the lexical
    judge): its judgments cannot take imported labels."""
    judge = Judge.objects.filter(campaign=campaign, name=name).first()
    if judge is not None and judge.kind != Judge.Kind.IMPORTED:
        raise NotAnImportedJudge(
            refusal(
                _("the campaign's judge %(judge)s is not an imported judge; name another or rename it"),
                judge=repr(name),
            )
        )
    return judge


def imported_judge(*, campaign: Campaign, name: str = IMPORTED) -> Judge:
    """:func:`existing_imported_judge`, created on first use (NotAnImportedJudge as there)."""
    judge = existing_imported_judge(campaign=campaign, name=name)
    if judge is None:
        judge, _created = Judge.objects.get_or_create(
            campaign=campaign,
            name=name,
            defaults={"kind": Judge.Kind.IMPORTED, "language": campaign.expected_language or "fr"},
        )
    return judge
