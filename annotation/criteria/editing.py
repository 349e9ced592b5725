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

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError, transaction
from django.utils import translation
from django.utils.functional import Promise
from django.utils.text import format_lazy
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
from annotation.criteria.titles import title_key
from annotation.errors import FieldError, refusal
from annotation.models import Campaign, Criterion, CriterionVersion, Label, Level
from annotation.workbench import shown_title


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


class CriterionErrors(CriterionError):
    """Every refusal of a criterion at once, one per field at fault (``errors``); read as one
    error, it is the first of them."""

    def __init__(self, errors: list[CriterionError]) -> None:
        super().__init__(errors[0].field, errors[0].args[0])
        self.errors = errors


def _shown_keys(title: str) -> set[str]:
    """The folded forms of ``title`` as stored and as shown in each of the app's languages."""
    keys = {title_key(title)}
    for language, _name in settings.LANGUAGES:
        with translation.override(language):
            keys.add(title_key(shown_title(title)))
    return keys - {""}


def title_clash(*, campaign: Campaign, title: str, criterion: Criterion | None = None) -> Criterion | None:
    """The other criterion of ``campaign`` (not ``criterion``) whose title is ``title`` once case,
    accents and spaces are set aside, as stored or as shown in one of the app's languages (a
    title "Pertinence" is the built-in "Relevance" to a French reader); None when there is none."""
    wanted = _shown_keys(title)
    others = Criterion.objects.filter(campaign=campaign).only("pk", "name", "title")
    if criterion is not None and criterion.pk is not None:
        others = others.exclude(pk=criterion.pk)
    return next((other for other in others if wanted & _shown_keys(other.title)), None)


def _new(*, campaign: Campaign, draft: CriterionDraft) -> Criterion:
    return Criterion(campaign=campaign, name=draft.name, level=draft.level, kind=draft.kind)


def _apply(draft: CriterionDraft, *, to: Criterion) -> None:
    """Write the draft's editable fields into ``to`` (nothing checked or saved)."""
    to.title = " ".join(draft.title.split())
    to.guidelines = draft.guidelines.replace("\r\n", "\n").strip()
    to.judge_prompt = draft.judge_prompt.replace("\r\n", "\n").strip()
    if to.kind == CATEGORICAL:
        to.categories, to.category_groups = draft.categories, draft.groups
    else:
        to.positive_key, to.negative_key = draft.positive_key, draft.negative_key


def criterion_problems(
    *,
    campaign: Campaign,
    draft: CriterionDraft,
    criterion: Criterion | None = None,
    skip: Iterable[str] = (),
) -> list[CriterionError]:
    """Everything wrong with saving ``draft`` as a new criterion of ``campaign`` (``criterion``
    None) or as ``criterion``: one refusal per field at fault, all of them, so that a form can
    show them together. Fields in ``skip`` (already refused by the form) are not looked at.

    A name taken or not a slug, an unknown level or kind, a blank title or one another
    criterion has (case and accents aside, in any language of the app), keys that clash or
    are reserved, categories or groups that ``check_definition`` refuses, a category dropped
    whose value human labels use. Reads the campaign's criteria; writes nothing.
    """
    problems: dict[str | None, CriterionError] = {field: CriterionError(field, "") for field in skip}

    def refuse(field: str | None, message: str | Promise, **params: object) -> None:
        if field not in problems:
            problems[field] = CriterionError(field, format_lazy("{}: {}", field, refusal(message, **params)))

    if criterion is None:
        if draft.kind not in KINDS:
            refuse("kind", _("%(kind)s is not a kind of criterion"), kind=repr(draft.kind))
        if draft.level not in Level.values:
            refuse("level", _("%(level)s is not a level"), level=repr(draft.level))
        if "name" not in problems and Criterion.objects.filter(campaign=campaign, name=draft.name).exists():
            refuse("name", _("the campaign has a criterion %(name)s already"), name=repr(draft.name))
    title = " ".join(draft.title.split())
    if not title_key(title):
        refuse("title", _("give the criterion a title: it is what people read wherever it is named"))
    elif "title" not in problems:
        other = title_clash(campaign=campaign, title=title, criterion=criterion)
        if other is not None:
            refuse(
                "title",
                _("another criterion of this campaign is titled “%(title)s” already: give this one its own"),
                title=shown_title(other.title),
            )
    kind = draft.kind if criterion is None else criterion.kind
    if kind == CATEGORICAL and "categories" not in problems:
        if criterion is not None:
            given = {item.get("value") for item in draft.categories if isinstance(item, dict)}
            missing = sorted(_values_in_use(criterion) - given)
            if missing:
                refuse(
                    "categories",
                    _("human labels use the values %(values)s: keep a category for each"),
                    values=", ".join(str(value) for value in missing),
                )
        groups = {} if "category_groups" in problems else draft.groups
        try:
            check_definition(categories=draft.categories, groups=groups)
        except CategoryError as error:
            if error.field not in problems:
                problems[error.field] = CriterionError(error.field, str(error))
    if criterion is not None or (draft.kind in KINDS and draft.level in Level.values):
        # A copy: the caller's criterion stays as it is (a page shows it beside the refusals).
        made = copy.copy(criterion) if criterion is not None else _new(campaign=campaign, draft=draft)
        _apply(draft, to=made)
        try:
            # The model's own checks (the slug, the keys, the lengths), every field at once.
            made.full_clean(exclude=["campaign", "current_version", "prompt_version", "title_key"])
        except ValidationError as error:
            for name, messages in error.message_dict.items():
                field = None if name == NON_FIELD_ERRORS else name
                if field not in problems:
                    problems[field] = CriterionError(
                        field, f"{field}: {' '.join(messages)}" if field else " ".join(messages)
                    )
    skipped = set(skip)
    return [problem for field, problem in problems.items() if field not in skipped]


@transaction.atomic
def save_criterion(
    *, campaign: Campaign, draft: CriterionDraft, criterion: Criterion | None = None
) -> tuple[Criterion, CriterionVersion]:
    """Create a criterion of ``campaign`` from ``draft`` (``criterion`` None), or edit
    ``criterion`` (its name, level and kind stay); returns it with the version of its guidelines
    and judge prompt now in force, a new one when they changed.

    Raises CriterionErrors, every refusal of :func:`criterion_problems` at once, each naming
    its field. Nothing is written then.
    """
    problems = criterion_problems(campaign=campaign, draft=draft, criterion=criterion)
    if problems:
        raise CriterionErrors(problems)
    made = criterion if criterion is not None else _new(campaign=campaign, draft=draft)
    _apply(draft, to=made)
    if made.kind == CATEGORICAL:
        categories, groups = check_definition(categories=draft.categories, groups=draft.groups)
        made.categories = [
            {"value": c.value, "key": c.key, "name": c.name, "title": c.title} for c in categories
        ]
        made.category_groups = groups
    try:
        with transaction.atomic():
            made.save()
    except IntegrityError:
        # Another request took the name or the title meanwhile: say which, as the checks do.
        problems = criterion_problems(campaign=campaign, draft=draft, criterion=criterion)
        if not problems:
            raise
        raise CriterionErrors(problems) from None
    return made, current_version(criterion=made)


def campaign_category_keys(*, campaign_name: str) -> dict[str, dict[str, int]]:
    """For each criterion with named categories of the campaign called ``campaign_name``, its
    keys (lower case) -> category values: how an import reads their labels. {} when the
    campaign does not exist yet (its criteria are then the built-in binary ones)."""
    return {
        criterion.name: {c.key.lower(): c.value for c in categories_of(criterion)}
        for criterion in Criterion.objects.filter(campaign__name=campaign_name.strip(), kind=CATEGORICAL)
    }
