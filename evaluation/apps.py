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
