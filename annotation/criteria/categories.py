"""Criteria with named categories: their definition, keys, label values and indicator arrays.

A criterion is ``binary`` (labels 0 and 1, keys ``positive_key`` and ``negative_key``) or
``categorical``: ``Criterion.categories`` lists its categories, each
``{"value": int, "key": str, "name": slug, "title": str}`` with values 1..N (nominal, never
averaged), and ``Criterion.category_groups`` names groups of them (``{"hallucination": [2, 4]}``).
A label of a categorical criterion stores its category's value. Estimates read one 0/1 indicator
per category and per group (``indicators``, ``indicator_array``): the rate of a category is the
mean of its indicator.

Every other module asks here what a criterion's values and keys are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from django.utils.functional import Promise
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, refusal

BINARY = "binary"
CATEGORICAL = "categorical"
KINDS = (BINARY, CATEGORICAL)
BINARY_VALUES = (0, 1)
MAX_CATEGORIES = 20
# The label keys the annotation pages give another meaning (skip, undo, comment, help), as in
# annotation.models.RESERVED_KEYS (repeated: models import this module's checks).
RESERVED = frozenset("sucSUC?")
_SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")


class CategoryError(FieldError):
    """A categories definition, a key or a label value the criterion refuses; ``field`` names
    ``categories``, ``category_groups`` or ``value``."""


@dataclass(frozen=True)
class Category:
    value: int
    key: str
    name: str
    title: str


@dataclass(frozen=True)
class Indicator:
    """A category or a group of categories, read as 0/1: ``values`` are the label values that
    count as 1. ``kind`` is ``category`` or ``group``."""

    name: str
    title: str
    kind: str
    values: frozenset[int]


def _fail(field: str, message: str | Promise, **params: object) -> CategoryError:
    return CategoryError(field, format_lazy("{}: {}", field, refusal(message, **params)))


def check_definition(*, categories: object, groups: object) -> tuple[list[Category], dict[str, list[int]]]:
    """The categories and groups of a categorical criterion, checked: at least 2 and at most
    ``MAX_CATEGORIES`` categories, values exactly 1..N, keys one visible character each, unique
    whatever their case and none of the reserved keys (s, u, c, ?), names unique slugs, titles
    not blank; groups named by slugs that are not category names, each listing known values.
    Raises CategoryError naming the field and the category or group at fault."""
    if not isinstance(categories, list) or not (2 <= len(categories) <= MAX_CATEGORIES):
        raise _fail("categories", _("a list of 2 to %(max)s categories is needed"), max=MAX_CATEGORIES)
    made: list[Category] = []
    for position, item in enumerate(categories, start=1):
        if not isinstance(item, dict):
            raise _fail("categories", _("category %(n)s is not an object"), n=position)
        value, key = item.get("value"), item.get("key")
        name, title = item.get("name"), item.get("title") or item.get("name")
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= len(categories):
            raise _fail(
                "categories",
                _("category %(n)s: value %(value)s is not a whole number from 1 to %(max)s"),
                n=position,
                value=repr(value),
                max=len(categories),
            )
        if not isinstance(key, str) or len(key) != 1 or key.isspace() or not key.isprintable():
            raise _fail("categories", _("category %(n)s: its key must be one visible character"), n=position)
        if key in RESERVED:
            raise _fail(
                "categories",
                _("category %(n)s: key %(key)s is taken (s skips, u undoes, c comments, ? shows the keys)"),
                n=position,
                key=repr(key),
            )
        if not isinstance(name, str) or not _SLUG.match(name):
            raise _fail(
                "categories",
                _("category %(n)s: its name must be a slug (letters, digits, - and _)"),
                n=position,
            )
        if not isinstance(title, str) or not title.strip():
            raise _fail("categories", _("category %(n)s: its title is blank"), n=position)
        made.append(Category(value=value, key=key, name=name, title=title.strip()))
    for attribute, label in (("value", _("value")), ("name", _("name"))):
        seen = [getattr(category, attribute) for category in made]
        if len(set(seen)) != len(seen):
            twice = next(item for item in seen if seen.count(item) > 1)
            raise _fail("categories", _("%(what)s %(item)s is used twice"), what=label, item=repr(twice))
    keys = [category.key.lower() for category in made]
    if len(set(keys)) != len(keys):
        twice = next(key for key in keys if keys.count(key) > 1)
        raise _fail("categories", _("key %(key)s is used twice (keys ignore case)"), key=repr(twice))
    checked = _check_groups(groups=groups, categories=made)
    return sorted(made, key=lambda category: category.value), checked


def _check_groups(*, groups: object, categories: list[Category]) -> dict[str, list[int]]:
    if groups in (None, ""):
        return {}
    if not isinstance(groups, dict):
        raise _fail("category_groups", _('an object of groups is needed, such as {"correct": [5]}'))
    known = {category.value for category in categories}
    names = {category.name for category in categories}
    checked: dict[str, list[int]] = {}
    for name, values in groups.items():
        if not isinstance(name, str) or not _SLUG.match(name) or name in names:
            raise _fail(
                "category_groups",
                _("group %(name)s: its name must be a slug that no category has"),
                name=repr(name),
            )
        if (
            not isinstance(values, list)
            or not values
            or any(isinstance(v, bool) or not isinstance(v, int) or v not in known for v in values)
        ):
            raise _fail(
                "category_groups",
                _("group %(name)s: a list of category values among %(known)s is needed"),
                name=repr(name),
                known=", ".join(str(value) for value in sorted(known)),
            )
        checked[name] = sorted(set(values))
    return checked


def is_categorical(criterion: object) -> bool:
    """Whether ``criterion`` labels with named categories."""
    return getattr(criterion, "kind", BINARY) == CATEGORICAL


def categories_of(criterion: object) -> list[Category]:
    """The categories of a categorical criterion, by value; [] for a binary one."""
    if not is_categorical(criterion):
        return []
    return [
        Category(
            value=int(item["value"]),
            key=str(item["key"]),
            name=str(item["name"]),
            title=str(item.get("title") or item["name"]),
        )
        for item in sorted(getattr(criterion, "categories", None) or [], key=lambda item: item["value"])
    ]


def groups_of(criterion: object) -> dict[str, list[int]]:
    """The groups of a categorical criterion (name -> values) by name, {} for a binary one (by
    name: PostgreSQL's jsonb keeps no order of keys)."""
    if not is_categorical(criterion):
        return {}
    return {
        str(name): sorted(int(v) for v in values)
        for name, values in sorted((getattr(criterion, "category_groups", None) or {}).items())
    }


def allowed_values(criterion: object) -> tuple[int, ...]:
    """The values a label of ``criterion`` may take: 0 and 1, or the category values."""
    if is_categorical(criterion):
        return tuple(category.value for category in categories_of(criterion))
    return BINARY_VALUES


def check_value(*, criterion: object, value: object, where: str = "") -> int:
    """``value`` as a label value of ``criterion``; CategoryError on field ``value`` otherwise
    (``where`` names the row or option at fault, put in front of the message)."""
    allowed = allowed_values(criterion)
    if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
        raise CategoryError(
            "value",
            refusal(
                _("%(where)s%(value)s is not a value of criterion %(criterion)s (values: %(values)s)"),
                where=f"{where}: " if where else "",
                value=repr(value),
                criterion=getattr(criterion, "name", "?"),
                values=", ".join(str(v) for v in allowed),
            ),
        )
    return int(value)


def value_for_key(*, criterion: object, key: object) -> int | None:
    """The value a category key (or, for a binary criterion, a label key) stands for; None when
    ``key`` is not one of the criterion's keys. Keys compare without case, as the pages do."""
    text = str(key).strip().lower()
    if is_categorical(criterion):
        return next((c.value for c in categories_of(criterion) if c.key.lower() == text), None)
    keys = {
        str(getattr(criterion, "positive_key", "1")).lower(): 1,
        str(getattr(criterion, "negative_key", "0")).lower(): 0,
    }
    return keys.get(text)


def indicators(criterion: object) -> list[Indicator]:
    """One indicator per category (by value), then one per group (by name)."""
    made = [
        Indicator(name=c.name, title=c.title, kind="category", values=frozenset({c.value}))
        for c in categories_of(criterion)
    ]
    made += [
        Indicator(name=name, title=name, kind="group", values=frozenset(values))
        for name, values in groups_of(criterion).items()
    ]
    return made


def indicator_array(values: Iterable[int], indicator: Indicator) -> np.ndarray:
    """1.0 where a label value belongs to ``indicator``, else 0.0."""
    return np.array([1.0 if value in indicator.values else 0.0 for value in values], dtype=float)
