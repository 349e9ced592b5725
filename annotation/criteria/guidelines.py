"""The guidelines humans and the judge follow: the built-in ones by language, and their versions."""

from __future__ import annotations

from typing import TypeGuard

from django.db import IntegrityError, transaction

from annotation.corpus.conventions import BUILTIN_GUIDELINES
from annotation.models import Criterion, CriterionVersion


def guidelines_for(*, criterion: str, language: str = "fr") -> str:
    """The built-in guidelines of ``criterion`` in ``language`` (French when unknown); '' if none."""
    texts = BUILTIN_GUIDELINES.get(criterion, {})
    return texts.get(language) or texts.get("fr", "")


def _matches(version: CriterionVersion | None, criterion: Criterion) -> TypeGuard[CriterionVersion]:
    return (
        version is not None
        and version.guidelines == criterion.guidelines
        and version.judge_prompt == criterion.judge_prompt
    )


def current_version(*, criterion: Criterion) -> CriterionVersion:
    """The version of ``criterion``'s guidelines and judge prompt as they read now.

    The criterion's text fields are an editable draft (the admin, the shell, an import may change
    them); this is where an edit becomes a version. When the texts equal the version the criterion
    points to, that version is returned without a query (load ``current_version`` with
    ``select_related``); otherwise the next version is recorded from them and the criterion points
    to it. Versions are never changed afterwards. Safe when two requests see the same edit: the
    second finds the first one's version. ``criterion`` itself is not changed.
    """
    version = criterion.current_version if criterion.current_version_id else None
    if _matches(version, criterion):
        return version
    for _ in range(3):
        latest = CriterionVersion.objects.filter(criterion=criterion).order_by("-number").first()
        if _matches(latest, criterion):
            version = latest
        else:
            number = (latest.number if latest else 0) + 1
            try:
                with transaction.atomic():
                    version = CriterionVersion.objects.create(
                        criterion=criterion,
                        number=number,
                        guidelines=criterion.guidelines,
                        judge_prompt=criterion.judge_prompt,
                    )
            except IntegrityError:
                continue  # another request recorded this number first: read it again
        # The instance is left as it was read: were the enclosing transaction rolled back (a run
        # refused), a version cached on it would name a row that no longer exists.
        Criterion.objects.filter(pk=criterion.pk).update(current_version=version)
        return version
    raise RuntimeError(f"could not record a version of criterion {criterion.pk}")
