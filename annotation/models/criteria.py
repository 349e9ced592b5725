"""What is labelled: a criterion (its level, values or categories, keys, title) and the
versions of its guidelines."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy

from annotation.criteria.titles import title_key
from annotation.models.campaigns import (
    Campaign,
    Level,
)

RESERVED_KEYS = ("s", "u", "c", "?", "S", "U", "C")


class Criterion(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="criteria")
    # The slug: what URLs, files, commands and the API name the criterion by.
    name = models.SlugField(max_length=100)
    # What people read wherever the criterion is named (shown through
    # annotation.workbench.shown_title); unique in its campaign through ``title_key``.
    title = models.CharField(max_length=200)
    # The title folded (annotation.criteria.titles.title_key: no accents, no case), kept by save():
    # what makes "Complétude" and "completude" one title for the unique constraint below.
    title_key = models.CharField(max_length=200, editable=False)
    level = models.CharField(max_length=10, choices=Level.choices)
    guidelines = models.TextField(blank=True)
    judge_prompt = models.TextField(blank=True, help_text="Blank: the built-in prompt.")
    prompt_version = models.CharField(max_length=50, default="v1")
    positive_key = models.CharField(max_length=1, default="1")
    negative_key = models.CharField(max_length=1, default="0")
    # "binary" (labels 0/1 with the two keys above) or "categorical": labels are the values of
    # ``categories`` ([{"value": 1.., "key", "name", "title"}]), optionally grouped by
    # ``category_groups`` ({"group": [values]}); see annotation.criteria.categories.
    kind = models.CharField(
        max_length=12,
        choices=[("binary", gettext_lazy("Binary")), ("categorical", gettext_lazy("Categories"))],
        default="binary",
    )
    categories = models.JSONField(default=list, blank=True)
    category_groups = models.JSONField(default=dict, blank=True)
    builtin = models.BooleanField(default=False)
    # The version of ``guidelines`` and ``judge_prompt`` above as last recorded; the texts above
    # are the editable draft, the versions are what labels and judges rest on (see
    # annotation.criteria.guidelines.current_version, which records a new version after an edit).
    current_version = models.ForeignKey(
        "CriterionVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["campaign_id", "name"]
        verbose_name_plural = "criteria"
        constraints = [
            models.UniqueConstraint(fields=["campaign", "name"], name="criterion_unique_name"),
            models.UniqueConstraint(
                fields=["campaign", "title_key"],
                name="criterion_unique_title",
                violation_error_message="The campaign has a criterion with this title already.",
            ),
            models.CheckConstraint(
                condition=~Q(title_key=""),
                name="criterion_has_title",
                violation_error_message="A criterion needs a title.",
            ),
            models.CheckConstraint(
                condition=~Q(positive_key="")
                & ~Q(negative_key="")
                & ~Q(positive_key__in=RESERVED_KEYS)
                & ~Q(negative_key__in=RESERVED_KEYS)
                & ~Q(positive_key__iexact=models.F("negative_key")),
                name="criterion_keys_usable",
                violation_error_message=(
                    "The label keys must be two different single characters, none of s, u, c or ?."
                ),
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.title_key = title_key(self.title)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "title" in update_fields:
            kwargs["update_fields"] = {*update_fields, "title_key"}
        super().save(*args, **kwargs)

    def clean(self) -> None:
        """Name the key at fault (the check constraint only says that one is); fold the title
        before the constraints on it are checked."""
        self.title_key = title_key(self.title)
        errors = {}
        for field in ("positive_key", "negative_key"):
            key = getattr(self, field) or ""
            if len(key) != 1 or key.isspace():
                errors[field] = "A label key is one visible character."
            elif key in RESERVED_KEYS:
                errors[field] = f"{key!r} is taken: s skips, u undoes, c comments and ? shows the keys."
        if not errors and self.positive_key.lower() == self.negative_key.lower():
            errors["negative_key"] = "The two label keys must differ."
        if self.kind == "categorical":
            from annotation.criteria.categories import CategoryError, check_definition

            try:
                check_definition(categories=self.categories, groups=self.category_groups)
            except CategoryError as error:
                errors[error.field or "categories"] = str(error)
        if errors:
            raise ValidationError(errors)


class CriterionVersion(models.Model):
    """One version of a criterion's guidelines and judge prompt. Immutable: an edit of the
    criterion makes a new version (numbered from 1), so what a label's author saw and what a
    judge sent stay known."""

    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    guidelines = models.TextField(blank=True)
    judge_prompt = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["criterion_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["criterion", "number"], name="criterionversion_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.criterion} v{self.number}"
