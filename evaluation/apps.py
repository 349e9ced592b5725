from __future__ import annotations

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        from annotation.workflow.events import labels_changed
        from evaluation.estimates.snapshots import estimates_moved

        labels_changed.connect(_labels_changed, dispatch_uid="evaluation.refresh_on_labels")
        estimates_moved.connect(_estimates_moved, dispatch_uid="evaluation.refresh_on_import")

        from django.db.models.signals import post_save

        from annotation.models import Answer, Question, SourceChunk

        # Saved one by one (the admin): no count of the page cache's keys moves. No receiver on
        # deletions: deleting a question or an answer moves the answers' count, and a receiver
        # would keep Django from deleting a campaign's rows in bulk.
        for model in (Question, SourceChunk, Answer):
            post_save.connect(
                _content_edited, sender=model, dispatch_uid=f"evaluation.page_cache.{model.__name__}"
            )


def _labels_changed(sender, *, criterion_id: int, stage: str, **kwargs) -> None:
    """Human labels changed: recompute the estimates after a pause, so that a batch of reviews
    or adjudications costs one recomputation."""
    from django.conf import settings

    from evaluation.jobs import enqueue_refresh
    from evaluation.models import ReportSnapshot

    enqueue_refresh(
        criterion_id=criterion_id,
        trigger=ReportSnapshot.Trigger.LABELS,
        delay_s=settings.ESTIMATES_REFRESH_DELAY_S,
    )


def _estimates_moved(sender, *, criterion_ids: list[int], trigger: str, **kwargs) -> None:
    """Labels or judgments were imported, or a judge run finished: recompute the criteria's
    estimates now."""
    from evaluation.jobs import enqueue_refresh

    for criterion_id in criterion_ids:
        enqueue_refresh(criterion_id=criterion_id, trigger=trigger)


def _content_edited(sender, *, instance, **kwargs) -> None:
    """A question, chunk or answer was saved one by one (the admin, a fix by hand): the heavy
    pages' cached figures of its campaign are read again (``evaluation.page_cache``)."""
    from evaluation.page_cache import content_edited

    content_edited(instance.campaign_id)
