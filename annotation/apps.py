from __future__ import annotations

from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from annotation import models

        # Rows saved one by one (the admin, a shell): an import writes in bulk and moves the
        # campaign's content version itself (annotation.ingest). Deletions by hand go through the
        # admin, which moves it too; no receiver on deletions, which would keep Django from
        # deleting a campaign's rows in bulk.
        for model in (
            models.Question,
            models.SourceChunk,
            models.Answer,
            models.AnswerSource,
            models.Sentence,
            models.Unit,
        ):
            post_save.connect(
                _content_saved, sender=model, dispatch_uid=f"annotation.content.{model.__name__}"
            )


def _content_saved(sender, *, instance, **kwargs) -> None:
    """A question, chunk, answer, answer's source, sentence or unit was saved one by one."""
    from annotation.corpus.campaigns import campaign_of_content, content_changed

    content_changed(campaign_id=campaign_of_content(instance))
