"""Personal API tokens and the answer batches imported in the background."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import pgettext_lazy

from annotation.models import Campaign


def default_expiry():
    """When a token made now stops opening the API: API_TOKEN_DAYS from now."""
    return timezone.now() + timedelta(days=settings.API_TOKEN_DAYS)


class ApiToken(models.Model):
    """A person's token for the REST API. Only a SHA-256 digest of the token is kept (the token
    itself is shown once, at creation); ``prefix`` is its first characters, shown in the list so
    that a person can tell their tokens apart. It opens the API until ``expires_at``, or until it
    is revoked: by its person, or when their password changes or their account is deactivated
    (``revoked_because``). A revoked or expired token stays, for the record."""

    class Revoked(models.TextChoices):
        PERSON = "person", pgettext_lazy("revoked because", "by its person")
        PASSWORD = "password", pgettext_lazy("revoked because", "the password changed")
        DEACTIVATED = "deactivated", pgettext_lazy("revoked because", "the account was deactivated")

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_because = models.CharField(max_length=12, choices=Revoked.choices, blank=True)
    expires_at = models.DateTimeField(default=default_expiry)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()


class AnswerBatch(models.Model):
    """A batch of answer records posted to the API and imported by a worker (large batches)."""

    class Status(models.TextChoices):
        PENDING = "pending", pgettext_lazy("choice", "Pending")
        RUNNING = "running", pgettext_lazy("choice", "Running")
        DONE = "done", pgettext_lazy("choice", "Done")
        FAILED = "failed", pgettext_lazy("choice", "Failed")

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="answer_batches")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    records = models.PositiveIntegerField(default=0)
    update = models.BooleanField(default=False)
    # The import's summary when done, its errors (file, row, field, message) when refused.
    summary = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    more_errors = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"answer batch {self.pk} ({self.status})"
