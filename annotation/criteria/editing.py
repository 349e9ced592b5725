"""Criteria made and edited by a campaign's managers: name, level, binary or named categories
(with groups), keys, guidelines and judge prompt.

An edit of the guidelines or the judge prompt records a new ``CriterionVersion``
(``annotation.criteria.guidelines.current_version``): labels keep the version their author saw, and a
judge bound to an earlier prompt refuses to run with the new one. The name, the level and the
kind are chosen once, at creation: labels, imports and reports refer to them. A category that
human labels use keeps its value.

Categories are written one per line, ``value | key | name | title``; groups one per line,
``name: value, value``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from annotation.criteria.categories import (
    BINARY,
    CATEGORICAL,
    KINDS,
    CategoryError,
    categories_of,
    check_definition,
    groups_of,
)
from annotation.criteria.guidelines import current_version
from annotation.errors import FieldError, refusal
from annotation.models import Campaign, Criterion, CriterionVersion, Label, Level


class CriterionError(FieldError):
    """A criterion the form describes cannot be saved; ``field`` names the form's field."""


@dataclass
class CriterionDraft:
    """What the criterion page sends: the criterion's fields, categories and groups as parsed
    from their text (``parse_categories``, ``parse_groups``)."""

    title: str = ""
    guidelines: str = ""
    judge_prompt: str = ""
    positive_key: str = "1"
    negative_key: str = "0"
    categories: list[dict] = field(default_factory=list)
    groups: dict[str, list[int]] = field(default_factory=dict)
    # At creation only.
    name: str = ""
    level: str = Level.ANSWER
    kind: str = BINARY


def parse_categories(text: str) -> list[dict]:
    """Categories from lines ``value | key | name | title`` (blank lines ignored). Raises
    CriterionError on field ``categories`` naming the line that is not of that form."""
    made = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = [part.strip() for part in line.split("|")]
        if len(parts) != 4 or not parts[0].isdigit():
            raise CriterionError(
                "categories",
                refusal(
                    _("line %(line)s: write value | key | name | title, such as 5 | 5 | right | Right"),
                    line=number,
                ),
            )
        made.append({"value": int(parts[0]), "key": parts[1], "name": parts[2], "title": parts[3]})
    return made


def parse_groups(text: str) -> dict[str, list[int]]:
    """Groups from lines ``name: value, value`` (blank lines ignored). Raises CriterionError on
    field ``category_groups`` naming the line that is not of that form."""
    made: dict[str, list[int]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, colon, values = line.partition(":")
        numbers = [value.strip() for value in values.replace(";", ",").split(",") if value.strip()]
        if not colon or not name.strip() or not numbers or not all(value.isdigit() for value in numbers):
            raise CriterionError(
                "category_groups",
                refusal(_("line %(line)s: write name: values, such as hallucination: 2, 4"), line=number),
            )
        made[name.strip()] = [int(value) for value in numbers]
    return made


def categories_text(criterion: Criterion) -> str:
    """The criterion's categories as the page writes them, one per line."""
    return "\n".join(f"{c.value} | {c.key} | {c.name} | {c.title}" for c in categories_of(criterion))


def groups_text(criterion: Criterion) -> str:
    """The criterion's groups as the page writes them, one per line."""
    return "\n".join(
        f"{name}: {', '.join(str(value) for value in values)}"
        for name, values in groups_of(criterion).items()
    )


def _values_in_use(criterion: Criterion) -> set[int]:
    """The values the criterion's human labels hold (the judge's are evaluation's concern: a
    judgment whose category is gone is left out of the estimates)."""
    values = Label.objects.filter(criterion=criterion, value__isnull=False).values_list("value", flat=True)
    return {int(value) for value in values.distinct() if value is not None}


@transaction.atomic
def save_criterion(
    *, campaign: Campaign, draft: CriterionDraft, criterion: Criterion | None = None
) -> tuple[Criterion, CriterionVersion]:
    """Create a criterion of ``campaign`` from ``draft`` (``criterion`` None), or edit
    ``criterion`` (its name, level and kind stay); returns it with the version of its guidelines
    and judge prompt now in force, a new one when they changed.

    Raises CriterionError naming the field at fault: a name taken or not a slug, an unknown
    level or kind, keys that clash or are reserved, categories or groups that
    ``annotation.criteria.categories.check_definition`` refuses, or an edit that drops a category whose
    value human labels use. Nothing is written then.
    """
    creating = criterion is None
    if criterion is None:
        if draft.kind not in KINDS:
            raise CriterionError(
                "kind", refusal(_("%(kind)s is not a kind of criterion"), kind=repr(draft.kind))
            )
        if draft.level not in Level.values:
            raise CriterionError("level", refusal(_("%(level)s is not a level"), level=repr(draft.level)))
        if Criterion.objects.filter(campaign=campaign, name=draft.name).exists():
            raise CriterionError(
                "name", refusal(_("the campaign has a criterion %(name)s already"), name=repr(draft.name))
            )
        criterion = Criterion(campaign=campaign, name=draft.name, level=draft.level, kind=draft.kind)
    criterion.title = draft.title.strip()
    criterion.guidelines = draft.guidelines.replace("\r\n", "\n").strip()
    criterion.judge_prompt = draft.judge_prompt.replace("\r\n", "\n").strip()
    if criterion.kind == CATEGORICAL:
        if not creating:
            given = {item.get("value") for item in draft.categories if isinstance(item, dict)}
            missing = sorted(_values_in_use(criterion) - given)
            if missing:
                raise CriterionError(
                    "categories",
                    refusal(
                        _("human labels use the values %(values)s: keep a category for each"),
                        values=", ".join(str(value) for value in missing),
                    ),
                )
        try:
            categories, groups = check_definition(categories=draft.categories, groups=draft.groups)
        except CategoryError as error:
            raise CriterionError(error.field, error.reason) from None
        criterion.categories = [
            {"value": c.value, "key": c.key, "name": c.name, "title": c.title} for c in categories
        ]
        criterion.category_groups = groups
    else:
        criterion.positive_key, criterion.negative_key = draft.positive_key, draft.negative_key
    try:
        criterion.full_clean(exclude=["campaign", "current_version", "prompt_version"])
    except ValidationError as error:
        name, messages = next(iter(error.message_dict.items()))
        raise CriterionError(name if name != "__all__" else None, " ".join(messages)) from None
    criterion.save()
    return criterion, current_version(criterion=criterion)


def campaign_category_keys(*, campaign_name: str) -> dict[str, dict[str, int]]:
    """For each criterion with named categories of the campaign called ``campaign_name``, its
    keys (lower case) -> category values: how an import reads their labels. {} when the
    campaign does not exist yet (its criteria are then the built-in binary ones)."""
    return {
        criterion.name: {c.key.lower(): c.value for c in categories_of(criterion)}
        for criterion in Criterion.objects.filter(campaign__name=campaign_name.strip(), kind=CATEGORICAL)
    }
