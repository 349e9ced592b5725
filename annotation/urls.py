from __future__ import annotations

from django.urls import path

from annotation.models import Stage
from annotation.views import criteria as criteria_views
from annotation.views import sampling as sampling_views
from annotation.views import stages as stage_views
from annotation.views import team as team_views

app_name = "annotation"

# Label and review pages: the stage is in the address. The adjudication page has its own address,
# which supplies the stage; the same views serve every stage.
WORK = "campaigns/<slug:slug>/annotate/<slug:criterion>/<slug:stage>/"
ADJUDICATE = "campaigns/<slug:slug>/adjudicate/<slug:criterion>/"
ADJUDICATION = {"stage": Stage.ADJUDICATION.value}

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
    path(WORK, stage_views.page, name="annotate"),
    path(WORK + "submit/", stage_views.submit, name="annotate_submit"),
    path(WORK + "skip/", stage_views.skip_unit, name="annotate_skip"),
    path(WORK + "undo/", stage_views.undo, name="annotate_undo"),
    path(ADJUDICATE, stage_views.page, ADJUDICATION, name="adjudicate"),
    path(ADJUDICATE + "submit/", stage_views.submit, ADJUDICATION, name="adjudicate_submit"),
    path(ADJUDICATE + "skip/", stage_views.skip_unit, ADJUDICATION, name="adjudicate_skip"),
    path(ADJUDICATE + "undo/", stage_views.undo, ADJUDICATION, name="adjudicate_undo"),
    # Label history (managers)
    path("campaigns/<slug:slug>/history/", team_views.history, name="history"),
    path("campaigns/<slug:slug>/history.csv", team_views.history_csv, name="history_csv"),
    # Criteria (managers)
    path("campaigns/<slug:slug>/criteria/", criteria_views.criteria, name="criteria"),
    path(
        "campaigns/<slug:slug>/criteria/<slug:criterion>/",
        criteria_views.criterion_edit,
        name="criterion_edit",
    ),
    # Team (managers)
    path("campaigns/<slug:slug>/team/", team_views.members, name="team"),
    path("campaigns/<slug:slug>/team/grant/", team_views.grant, name="team_grant"),
    path("campaigns/<slug:slug>/team/revoke/", team_views.revoke, name="team_revoke"),
    path("campaigns/<slug:slug>/team/remove/", team_views.remove, name="team_remove"),
]
