from __future__ import annotations

from django.urls import path

from evaluation.views import (
    annotators,
    anytime,
    campaigns,
    compare,
    downloads,
    evidence,
    reference,
    runs,
    sampling,
    stability,
    start,
    units,
)
from evaluation.views import file_import as import_views
from evaluation.views import history as history_views
from evaluation.views import judge_alignment as alignment_views
from evaluation.views import judge_plan as plan_views
from evaluation.views import reports as report_views

app_name = "evaluation"

REPORT = "campaigns/<slug:slug>/reports/<slug:criterion>/"

urlpatterns = [
    path("", campaigns.campaign_list, name="campaign_list"),
    path("start/", start.start, name="start"),
    # Before the overview: "import" would otherwise be read as a campaign slug.
    path("campaigns/import/", import_views.import_new, name="import_new"),
    path("campaigns/import/format/", import_views.import_format, name="import_format"),
    path("campaigns/import/example.jsonl", import_views.import_example, name="import_example"),
    path("campaigns/<slug:slug>/", campaigns.campaign_overview, name="campaign_overview"),
    path("campaigns/<slug:slug>/headline/<slug:criterion>/", campaigns.headline_card, name="headline_card"),
    path("campaigns/<slug:slug>/import/", import_views.import_into, name="import_into"),
    path("campaigns/<slug:slug>/judge/", runs.run_list, name="run_list"),
    path("campaigns/<slug:slug>/judge/runs/<int:run_id>/", runs.run_detail, name="run_detail"),
    path("campaigns/<slug:slug>/judge/runs/<int:run_id>/cancel/", runs.run_cancel, name="run_cancel"),
    path("campaigns/<slug:slug>/judge/runs/<int:run_id>/resume/", runs.run_resume, name="run_resume"),
    path("campaigns/<slug:slug>/units/<int:unit_id>/", units.unit, name="unit"),
    path("campaigns/<slug:slug>/annotators/", annotators.annotators, name="annotators"),
    path("campaigns/<slug:slug>/stability/", stability.stability_page, name="stability"),
    path("campaigns/<slug:slug>/stability/export.csv", stability.stability_csv, name="stability_csv"),
    path("campaigns/<slug:slug>/stability/export.json", stability.stability_json, name="stability_json"),
    path("campaigns/<slug:slug>/evidence/", evidence.evidence, name="evidence"),
    path("campaigns/<slug:slug>/reference-answers/", reference.reference_section, name="reference_answers"),
    path(
        "campaigns/<slug:slug>/reference-answers.json",
        reference.reference_json,
        name="reference_answers_json",
    ),
    path(
        "campaigns/<slug:slug>/reference-answers.csv", reference.reference_csv, name="reference_answers_csv"
    ),
    path("campaigns/<slug:slug>/evidence.json", evidence.evidence_json, name="evidence_json"),
    path("campaigns/<slug:slug>/evidence.csv", evidence.evidence_csv, name="evidence_csv"),
    path("campaigns/<slug:slug>/sampling/confidence/", sampling.confidence_sample, name="confidence_sample"),
    path("campaigns/<slug:slug>/anytime/", anytime.anytime, name="anytime"),
    path("campaigns/<slug:slug>/anytime/status/", anytime.anytime_work, name="anytime_work"),
    path("campaigns/<slug:slug>/anytime/<int:sample_id>/next/", anytime.anytime_next, name="anytime_next"),
    path(REPORT, report_views.report, name="report"),
    path(REPORT + "calibration/", report_views.calibration_section, name="calibration"),
    path(REPORT + "previous-version/", compare.previous_version_section, name="previous_version"),
    path(REPORT + "primary-judge/", report_views.choose_primary_judge, name="primary_judge"),
    path(REPORT + "disagreements/", units.disagreements, name="disagreements"),
    path(
        "campaigns/<slug:slug>/<slug:criterion>/judges/",
        alignment_views.judge_alignment_page,
        name="judge_alignment",
    ),
    path(
        "campaigns/<slug:slug>/<slug:criterion>/judges/export.csv",
        alignment_views.judge_alignment_csv,
        name="judge_alignment_csv",
    ),
    path(
        "campaigns/<slug:slug>/<slug:criterion>/judges/export.json",
        alignment_views.judge_alignment_json,
        name="judge_alignment_json",
    ),
    path(
        "campaigns/<slug:slug>/<slug:criterion>/judges/plan/", plan_views.judge_plan_page, name="judge_plan"
    ),
    path(
        "campaigns/<slug:slug>/<slug:criterion>/judges/plan/export.csv",
        plan_views.judge_plan_csv,
        name="judge_plan_csv",
    ),
    path(
        "campaigns/<slug:slug>/<slug:criterion>/judges/plan/export.json",
        plan_views.judge_plan_json,
        name="judge_plan_json",
    ),
    path(
        "campaigns/<slug:slug>/<slug:criterion>/judges/plan/rate/",
        plan_views.judge_plan_rate,
        name="judge_plan_rate",
    ),
    path(
        "campaigns/<slug:slug>/<slug:criterion>/judges/plan/draw/",
        plan_views.judge_plan_draw,
        name="judge_plan_draw",
    ),
    path(REPORT + "history/", history_views.history, name="history"),
    path(REPORT + "refresh/", history_views.refresh, name="refresh_estimates"),
    path(REPORT + "compare/", compare.compare, name="compare"),
    path(REPORT + "export.xlsx", downloads.export_xlsx, name="export_xlsx"),
    path(REPORT + "export.csv", downloads.export_csv, name="export_csv"),
    path(REPORT + "export.json", downloads.export_json, name="export_json"),
    path(REPORT + "export.pdf", downloads.export_pdf, name="export_pdf"),
    path(REPORT + "export.ares.json", downloads.export_ares, name="export_ares"),
    path(REPORT + "export.label-studio.json", downloads.export_label_studio, name="export_label_studio"),
    path(REPORT + "export.argilla.json", downloads.export_argilla, name="export_argilla"),
    path(REPORT + "export.parquet", downloads.export_parquet, name="export_parquet"),
]
