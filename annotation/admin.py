from __future__ import annotations

from django.apps import apps
from django.contrib import admin
from django.db import transaction

from annotation import models
from annotation.corpus.campaigns import campaign_of_content, content_changed, ensure_builtin_criteria
from annotation.criteria.guidelines import current_version
from annotation.workflow import open_slots
from annotation.workflow.append_only import label_deletion_allowed


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows that are evidence (human labels, judgments): shown, never added, changed or deleted
    one by one here. A correction is a new label made in the app; a judgment changes only by a
    judge run. They go only with the campaign, answer or unit they belong to."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class DeletesLabelsAdmin(admin.ModelAdmin):
    """An object whose deletion takes label rows with it (its confirmation page lists them):
    the one place besides ``import --update`` where label rows may be deleted."""

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        # Read-only rows cannot be deleted alone, but they do not block deleting what owns them.
        read_only = {
            str(model._meta.verbose_name)
            for model in apps.get_models()
            if self.admin_site.is_registered(model)
            and isinstance(self.admin_site.get_model_admin(model), ReadOnlyAdmin)
        }
        return deleted, counts, perms_needed - read_only, protected

    def delete_model(self, request, obj) -> None:
        with transaction.atomic(), label_deletion_allowed():
            campaigns = _campaigns_of([obj])
            super().delete_model(request, obj)
            _rebuild_queues(campaigns)

    def delete_queryset(self, request, queryset) -> None:
        with transaction.atomic(), label_deletion_allowed():
            campaigns = _campaigns_of(queryset)
            super().delete_queryset(request, queryset)
            _rebuild_queues(campaigns)


def _campaigns_of(objs) -> set[int]:
    """The campaigns the objects belong to (a campaign is its own)."""
    ids = set()
    for obj in objs:
        if isinstance(obj, models.Campaign):
            ids.add(obj.pk)
        elif isinstance(obj, models.Sentence):
            ids.add(obj.answer.campaign_id)
        else:
            ids.add(obj.campaign_id)
    return ids


def _rebuild_queues(campaign_ids: set[int]) -> None:
    """Units, samples or slots went: set the stored queues of what remains again, and move the
    campaigns' content version (figures kept from what went are not read again)."""
    open_slots.rebuild_all(
        criteria=models.Criterion.objects.filter(campaign_id__in=campaign_ids).select_related("campaign")
    )
    for campaign_id in campaign_ids:
        content_changed(campaign_id=campaign_id)


class ContentAdmin(admin.ModelAdmin):
    """Rows of a campaign's content deleted here without labels of their own (a chunk, an
    answer's source): the campaign's content version moves (a save moves it by itself:
    ``annotation.apps``)."""

    def delete_model(self, request, obj) -> None:
        with transaction.atomic():
            campaign_id = campaign_of_content(obj)
            super().delete_model(request, obj)
            content_changed(campaign_id=campaign_id)

    def delete_queryset(self, request, queryset) -> None:
        with transaction.atomic():
            campaign_ids = {campaign_of_content(obj) for obj in queryset}
            super().delete_queryset(request, queryset)
            for campaign_id in campaign_ids:
                content_changed(campaign_id=campaign_id)


@admin.register(models.Campaign)
class CampaignAdmin(DeletesLabelsAdmin):
    list_display = ["name", "annotation_mode", "expected_language", "created_at"]
    prepopulated_fields = {"slug": ["name"]}
    search_fields = ["name"]

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        # Every campaign has veracity and relevance, however it was created.
        ensure_builtin_criteria(campaign=obj)


@admin.register(models.Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["campaign", "user", "role"]
    list_filter = ["role", "campaign"]
    autocomplete_fields = ["user"]


@admin.register(models.Question)
class QuestionAdmin(DeletesLabelsAdmin):
    list_display = ["external_id", "campaign", "theme", "difficulty", "language"]
    list_filter = ["campaign", "theme", "difficulty"]
    search_fields = ["external_id", "text"]


@admin.register(models.SourceChunk)
class SourceChunkAdmin(ContentAdmin):
    list_display = ["external_id", "campaign", "title", "page"]
    list_filter = ["campaign"]
    search_fields = ["external_id", "title"]


class AnswerSourceInline(admin.TabularInline):
    model = models.AnswerSource
    raw_id_fields = ["chunk"]
    extra = 0


@admin.register(models.Answer)
class AnswerAdmin(DeletesLabelsAdmin):
    list_display = ["external_id", "campaign", "question", "repetition", "language"]
    list_filter = ["campaign", "language"]
    search_fields = ["external_id", "text"]
    raw_id_fields = ["question"]
    inlines = [AnswerSourceInline]


@admin.register(models.AnswerSource)
class AnswerSourceAdmin(ContentAdmin):
    list_display = ["answer", "chunk", "rank"]
    raw_id_fields = ["answer", "chunk"]


@admin.register(models.Sentence)
class SentenceAdmin(DeletesLabelsAdmin):
    list_display = ["answer", "position", "text", "citations_ok"]
    raw_id_fields = ["answer"]
    search_fields = ["text"]


class CriterionVersionInline(admin.TabularInline):
    """The recorded versions, read-only: an edit of the criterion records a new one."""

    model = models.CriterionVersion
    fields = readonly_fields = ("number", "guidelines", "judge_prompt", "created_at")
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.Criterion)
class CriterionAdmin(DeletesLabelsAdmin):
    list_display = ["name", "campaign", "level", "prompt_version", "builtin"]
    list_filter = ["campaign", "level"]
    exclude = ["current_version"]
    # Categories are made and edited on the campaign's criteria page (annotation.criteria.editing), which
    # checks them and keeps the values that labels hold.
    readonly_fields = ["kind", "categories", "category_groups"]
    inlines = [CriterionVersionInline]

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        # An edit of the guidelines or the judge prompt becomes a new version now, dated now.
        current_version(criterion=obj)


@admin.register(models.Unit)
class UnitAdmin(DeletesLabelsAdmin):
    list_display = ["id", "campaign", "level", "theme", "difficulty"]
    list_filter = ["campaign", "level", "theme"]
    raw_id_fields = ["answer", "sentence", "chunk"]


@admin.register(models.Label)
class LabelAdmin(ReadOnlyAdmin):
    list_display = ["id", "unit", "criterion", "user", "stage", "value", "created_at"]
    list_filter = ["stage", "criterion__campaign"]
    raw_id_fields = ["unit", "criterion", "user"]


@admin.register(models.Sample)
class SampleAdmin(DeletesLabelsAdmin):
    """A sample is drawn in the app; deleting one makes the criterion's previous sample current
    again (its queue is set from it)."""

    list_display = ["id", "campaign", "criterion", "seed", "budget", "per_cluster", "status", "created_at"]
    list_filter = ["campaign", "status"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class WorkflowRecordAdmin(ReadOnlyAdmin):
    """What the draws and the workflow write (sample items, slots): the queue is derived from
    them, so they change only through the app."""


@admin.register(models.SampleItem)
class SampleItemAdmin(WorkflowRecordAdmin):
    list_display = ["sample", "unit", "theme", "cluster", "cluster_size", "inclusion_probability"]
    raw_id_fields = ["sample", "unit"]


@admin.register(models.OpenSlot)
class OpenSlotAdmin(WorkflowRecordAdmin):
    list_display = ["criterion", "stage", "slot", "unit", "theme", "cluster", "rank", "held_until"]
    list_filter = ["stage", "criterion__campaign"]
    raw_id_fields = ["criterion", "unit"]


@admin.register(models.QueueTally)
class QueueTallyAdmin(WorkflowRecordAdmin):
    list_display = ["criterion", "kind", "user", "filled", "settled"]
    list_filter = ["kind", "criterion__campaign"]


@admin.register(models.Assignment)
class AssignmentAdmin(WorkflowRecordAdmin):
    list_display = ["unit", "criterion", "stage", "slot", "user", "label", "expires_at", "skipped_at"]
    list_filter = ["stage", "criterion__campaign"]
    raw_id_fields = ["unit", "criterion", "user", "label"]


@admin.register(models.CriterionVersion)
class CriterionVersionAdmin(admin.ModelAdmin):
    """Versions are recorded by edits of their criterion and never changed."""

    list_display = ["criterion", "number", "created_at"]
    list_filter = ["criterion__campaign"]
    raw_id_fields = ["criterion"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
