from __future__ import annotations

from django.contrib import admin

from annotation.admin import ReadOnlyAdmin
from evaluation import models


@admin.register(models.Judge)
class JudgeAdmin(admin.ModelAdmin):
    list_display = ["name", "campaign", "kind", "model", "prompt_version", "temperature"]
    list_filter = ["campaign", "kind"]


@admin.register(models.Judgment)
class JudgmentAdmin(ReadOnlyAdmin):
    list_display = ["unit", "criterion", "judge", "status", "value", "prompt_tokens", "latency_ms"]
    list_filter = ["status", "judge"]
    raw_id_fields = ["unit", "criterion", "judge"]


# The accounting of runs (tokens, calls, cost) and the dated snapshots are evidence too: shown,
# never edited here (on PostgreSQL a trigger also refuses to rewrite them: evaluation/0008).
@admin.register(models.JudgeRun)
class JudgeRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "campaign", "criterion", "judge", "scope", "status", "done_units", "total_units"]
    list_filter = ["status", "campaign"]


@admin.register(models.JudgeBatch)
class JudgeBatchAdmin(ReadOnlyAdmin):
    list_display = ["id", "run", "answer", "status", "attempts", "claimed_by"]
    list_filter = ["status"]
    raw_id_fields = ["run", "answer"]


@admin.register(models.ReportSnapshot)
class ReportSnapshotAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "campaign", "criterion", "judge", "method", "alpha", "trigger", "n_human"]
    list_filter = ["campaign", "method", "trigger"]
    raw_id_fields = ["campaign", "criterion", "judge"]


@admin.register(models.EstimateSchedule)
class EstimateScheduleAdmin(admin.ModelAdmin):
    list_display = ["criterion", "due_at", "trigger"]


class UneditableAdmin(admin.ModelAdmin):
    """Records nobody adds or edits by hand (what a judge is bound to); unlike
    :class:`annotation.admin.ReadOnlyAdmin` they may be deleted."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.LLMCall)
class LLMCallAdmin(ReadOnlyAdmin):
    list_display = ["id", "run", "batch", "outcome", "used", "prompt_tokens", "completion_tokens", "sent_at"]
    list_filter = ["outcome", "used"]
    raw_id_fields = ["run", "batch"]


@admin.register(models.JudgePrompt)
class JudgePromptAdmin(UneditableAdmin):
    list_display = ["judge", "criterion", "version", "sha256", "created_at"]
    raw_id_fields = ["judge", "criterion", "version"]


@admin.register(models.PrimaryJudge)
class PrimaryJudgeAdmin(admin.ModelAdmin):
    # Chosen on the report page (managers), with ``manage.py primary_judge`` or the API, all of
    # which check that the judge labeled the criterion: read-only here.
    list_display = ("criterion", "judge", "chosen_by", "chosen_at")
    list_select_related = ("criterion", "judge", "chosen_by")

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.JudgeShare)
class JudgeShareAdmin(UneditableAdmin):
    # Drawn by the planner's design with its seed: a hand edit would make its probabilities wrong.
    list_display = ("criterion", "judge", "seed", "created_by", "created_at")
    list_select_related = ("criterion", "judge", "created_by")
    raw_id_fields = ["campaign", "criterion", "judge", "created_by"]


@admin.register(models.HeldOutSplit)
class HeldOutSplitAdmin(UneditableAdmin):
    # Made once with its seed: an edited seed would move units between the parts after the fact.
    list_display = ("criterion", "seed", "held_out_share", "created_by", "created_at")
    list_select_related = ("criterion", "created_by")
    raw_id_fields = ["criterion", "created_by"]


@admin.register(models.JudgeShareItem)
class JudgeShareItemAdmin(UneditableAdmin):
    list_display = ("share", "unit", "probability")
    list_select_related = ("share__judge", "share__criterion")
    raw_id_fields = ["share", "unit"]
