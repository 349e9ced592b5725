from __future__ import annotations

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        from annotation.workflow.events import labels_changed

        labels_changed.connect(_labels_changed, dispatch_uid="evaluation.refresh_on_labels")


def _labels_changed(sender, *, criterion_id: int, stage: str, **kwargs) -> None:
    """Human labels changed: recompute the estimates after a pause, so that a batch of reviews
    or adjudications costs one recomputation."""
    from django.conf import settings

    from evaluation.models import ReportSnapshot
    from evaluation.tasks import enqueue_refresh

    enqueue_refresh(
        criterion_id=criterion_id,
        trigger=ReportSnapshot.Trigger.LABELS,
        delay_s=settings.ESTIMATES_REFRESH_DELAY_S,
    )
