"""Samples of a criterion's units and their items: the current sample is the work queue's
scope."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import pgettext_lazy

from annotation.models.campaigns import (
    Campaign,
)
from annotation.models.corpus import Unit
from annotation.models.criteria import Criterion


class Sample(models.Model):
    """A sample of one criterion's units drawn for human annotation; reproducible from its seed.

    Three designs: stratified K-means (the study's, the default); confidence-driven (a Poisson
    draw whose probabilities rise with the judge's uncertainty, computed in ``evaluation``, which
    hands the probabilities over; ``design_parameters`` then keeps what recomputes any unit's
    probability: per theme, the floor and the scale of the spread); or anytime (batches of draws
    with replacement, ``evaluation.designs.anytime``: each batch is a new sample holding every unit the
    sequence drew so far, and its ``design_parameters`` the ordered draws of each theme).
    """

    class Design(models.TextChoices):
        KMEANS = "kmeans", pgettext_lazy("sample design", "K-means (study)")
        CONFIDENCE = "confidence", pgettext_lazy("sample design", "Judge confidence")
        SEQUENTIAL = "anytime", pgettext_lazy("sample design", "Anytime (batches)")

    class Status(models.TextChoices):
        PENDING = "pending", pgettext_lazy("choice", "Pending")
        RUNNING = "running", pgettext_lazy("choice", "Running")
        DONE = "done", pgettext_lazy("choice", "Done")
        FAILED = "failed", pgettext_lazy("choice", "Failed")

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="samples")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="samples")
    seed = models.IntegerField(default=0)
    budget = models.PositiveIntegerField(default=0)
    per_cluster = models.PositiveIntegerField(default=3)
    k_per_theme = models.JSONField(default=dict, blank=True)
    embedding_backend = models.CharField(max_length=50, default="tfidf")
    design = models.CharField(max_length=20, choices=Design.choices, default=Design.KMEANS)
    design_parameters = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    progress = models.FloatField(default=0.0)
    error = models.TextField(blank=True)
    # When the sample entered its status: the request (pending) or the worker's claim (running).
    # A running sample's value is its claim: only the run that set it may finish the sample.
    status_since = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"sample {self.pk} of {self.criterion}"


class SampleItem(models.Model):
    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="items")
    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="sample_items")
    theme = models.CharField(max_length=200)
    cluster = models.IntegerField()
    cluster_size = models.PositiveIntegerField()
    inclusion_probability = models.FloatField()
    rank = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["sample_id", "theme", "cluster", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "unit"], name="sampleitem_unique_unit"),
            models.CheckConstraint(
                condition=Q(inclusion_probability__gt=0) & Q(inclusion_probability__lte=1),
                name="sampleitem_probability_range",
            ),
        ]
