from __future__ import annotations

from django.urls import path

from annotation.views import adjudicate as adjudicate_views
from annotation.views import annotate as annotate_views
from annotation.views import sampling as sampling_views
from annotation.views import team as team_views

app_name = "annotation"

WORK = "campaigns/<slug:slug>/annotate/<slug:criterion>/<slug:stage>/"
ADJUDICATE = "campaigns/<slug:slug>/adjudicate/<slug:criterion>/"

urlpatterns: list = [
    # Sampling (managers)
    path("campaigns/<slug:slug>/sampling/", sampling_views.sampling, name="sampling"),
    path("campaigns/<slug:slug>/sampling/draw/", sampling_views.sample_draw, name="sample_draw"),
    path(
        "campaigns/<slug:slug>/sampling/<int:sample_id>/", sampling_views.sample_detail, name="sample_detail"
    ),
    path(
        "campaigns/<slug:slug>/sampling/<int:sample_id>/top-up/",
        sampling_views.sample_top_up,
        name="sample_top_up",
    ),
    path(
        "campaigns/<slug:slug>/sampling/<int:sample_id>/json/", sampling_views.sample_json, name="sample_json"
    ),
    # Work page, annotation and adjudication
    path("campaigns/<slug:slug>/work/", team_views.work, name="work"),
    path(WORK, annotate_views.annotate, name="annotate"),
    path(WORK + "submit/", annotate_views.annotate_submit, name="annotate_submit"),
    path(WORK + "skip/", annotate_views.annotate_skip, name="annotate_skip"),
    path(WORK + "undo/", annotate_views.annotate_undo, name="annotate_undo"),
    path(ADJUDICATE, adjudicate_views.adjudicate, name="adjudicate"),
    path(ADJUDICATE + "submit/", adjudicate_views.adjudicate_submit, name="adjudicate_submit"),
    path(ADJUDICATE + "skip/", adjudicate_views.adjudicate_skip, name="adjudicate_skip"),
    path(ADJUDICATE + "undo/", adjudicate_views.adjudicate_undo, name="adjudicate_undo"),
    # Label history (managers)
    path("campaigns/<slug:slug>/history/", team_views.history, name="history"),
    path("campaigns/<slug:slug>/history.csv", team_views.history_csv, name="history_csv"),
]
