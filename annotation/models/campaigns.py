"""Campaigns and who works in them: the roles, the annotation modes, the levels and stages
of the work, a campaign's settings (its citation pattern, its abstention phrases) and its
memberships."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy, pgettext_lazy

from annotation.corpus.citations import CitationPatternError, compile_citation_pattern
from annotation.corpus.conventions import DEFAULT_ABSTENTION_PATTERNS, DEFAULT_CITATION_PATTERN


class Role(models.TextChoices):
    MANAGER = "manager", gettext_lazy("Manager")
    ANNOTATOR = "annotator", gettext_lazy("Annotator")
    REVIEWER = "reviewer", gettext_lazy("Reviewer")
    ADJUDICATOR = "adjudicator", gettext_lazy("Adjudicator")
    ANALYST = "analyst", gettext_lazy("Analyst")


class AnnotationMode(models.TextChoices):
    REVIEW = "review", gettext_lazy("Review (label, review, adjudication)")
    BLIND_DOUBLE = "blind_double", gettext_lazy("Blind double (two labels, adjudication when they differ)")


class Level(models.TextChoices):
    ANSWER = "answer", pgettext_lazy("choice", "Answer")
    SENTENCE = "sentence", pgettext_lazy("choice", "Sentence")
    CITATION = "citation", pgettext_lazy("choice", "Citation")


class Stage(models.TextChoices):
    LABEL = "label", pgettext_lazy("choice", "Label")
    REVIEW = "review", pgettext_lazy("choice", "Review")
    ADJUDICATION = "adjudication", gettext_lazy("Adjudication")
    IMPORTED = "imported", pgettext_lazy("choice", "Imported")


def validate_citation_pattern(value: str) -> None:
    """A campaign's citation pattern must find cited ids (``compile_citation_pattern``): refused
    when saved, naming the field, so that every reader of a stored pattern can compile it."""
    try:
        compile_citation_pattern(value)
    except CitationPatternError as exc:
        raise ValidationError(exc.reason, code="invalid_pattern") from None


def validate_abstention_patterns(value: Any) -> None:
    """None (the built-in patterns) or a list of regular expressions."""
    if value is None:
        return
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError(gettext_lazy("a list of regular expressions, or null"), code="invalid_patterns")
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValidationError(
                gettext_lazy("invalid regular expression %(pattern)s (%(error)s)"),
                code="invalid_pattern",
                params={"pattern": repr(pattern), "error": str(exc)},
            ) from None


class Campaign(models.Model):
    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    expected_language = models.CharField(
        max_length=8, blank=True, help_text="ISO 639-1 code; blank: the question's language."
    )
    citation_pattern = models.CharField(
        max_length=300,
        default=DEFAULT_CITATION_PATTERN,
        validators=[validate_citation_pattern],
        help_text="A regular expression whose first group (...) is the cited chunk's id.",
    )
    # None: the built-in DEFAULT_ABSTENTION_PATTERNS; a list (even empty) replaces them, so []
    # means no abstention detection at all (the response rate is then "cites a source" alone).
    abstention_patterns = models.JSONField(
        null=True,
        blank=True,
        default=None,
        validators=[validate_abstention_patterns],
        help_text="Regular expressions. null: the built-in patterns; []: none.",
    )
    annotation_mode = models.CharField(
        max_length=20, choices=AnnotationMode.choices, default=AnnotationMode.REVIEW
    )
    lease_minutes = models.PositiveIntegerField(default=15)
    # What an hour of a person's labelling costs, in the unit the judges' prices are given in
    # (JUDGE_PRICE_PER_1K_*): the planner of several judges prices a human label with it. None:
    # not set, and nothing is planned until a manager sets it.
    label_hourly_rate = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0)],
        help_text="Cost of an hour of labelling, in the unit of the judges' prices; blank: not set.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Moves by one with every change of the campaign's questions, chunks or answers: each import
    # (annotation.ingest), each one saved or deleted by hand (the admin, a shell). Figures computed
    # from them are kept under keys that hold it (evaluation.page_cache), in every process alike.
    content_version = models.PositiveBigIntegerField(default=0, editable=False)

    class Meta:
        ordering = ["-created_at", "name"]

    def __str__(self) -> str:
        return self.name

    @property
    def effective_abstention_patterns(self) -> list[str]:
        """The patterns in force: the built-in ones when none are set (None), else the campaign's
        own, which may be none at all ([])."""
        if self.abstention_patterns is None:
            return list(DEFAULT_ABSTENTION_PATTERNS)
        return list(self.abstention_patterns)


class Membership(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "user", "role"], name="membership_unique_role"),
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.role} in {self.campaign}"
