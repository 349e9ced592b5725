from __future__ import annotations

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        from annotation.workflow.events import content_changed, labels_changed
        from evaluation.estimates.snapshots import estimates_moved

        labels_changed.connect(_labels_changed, dispatch_uid="evaluation.refresh_on_labels")
        estimates_moved.connect(_estimates_moved, dispatch_uid="evaluation.refresh_on_import")
        content_changed.connect(_content_changed, dispatch_uid="evaluation.warm_on_content")


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


def _content_changed(sender, *, campaign_id: int, **kwargs) -> None:
    """A campaign's questions, chunks or answers changed (an import): have its heavy pages
    computed ahead of their visit. (Labels or judgments that came with it are announced apart,
    and their recomputation of the estimates warms the reports.)"""
    from evaluation.jobs import request_page_warming

    request_page_warming(campaign_id=campaign_id)
