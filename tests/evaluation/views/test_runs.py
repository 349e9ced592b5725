from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Criterion
from evaluation.judge import runs
from evaluation.models import JudgeRun, Judgment, ReportSnapshot
from tests.factories import make_answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished_run(campaign):
    make_answer(campaign=campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    return runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)


def test_manager_starts_a_run_and_it_is_processed_after_commit(
    client_for, manager, campaign, django_capture_on_commit_callbacks
):
    make_answer(campaign=campaign)
    url = reverse("evaluation:run_list", args=[campaign.slug])
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client_for(manager).post(
            url, {"criterion": "veracity", "judge": "lexical", "scope": "all"}
        )
    assert response.status_code == 302
    run = JudgeRun.objects.get()
    # Dispatched once, after commit; the run, over at once here, then says its estimates moved,
    # and the app has them recomputed.
    assert len(callbacks) == 3
    assert callbacks[0].args == (run.pk,)
    assert ReportSnapshot.objects.filter(criterion=run.criterion, trigger="judge_run").exists()
    assert response["Location"] == reverse("evaluation:run_detail", args=[campaign.slug, run.pk])
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.DONE
    assert Judgment.objects.count() == 2


def test_start_with_bad_input_changes_nothing_and_names_the_field(client_for, manager, campaign):
    url = reverse("evaluation:run_list", args=[campaign.slug])
    response = client_for(manager).post(url, {"criterion": "nope", "judge": "", "concurrency": "x"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "criterion: choose one" in page
    assert "judge: give a name" in page
    assert "concurrency: &#x27;x&#x27; is not a whole number" in page
    assert not JudgeRun.objects.exists()


def test_analyst_sees_runs_but_cannot_start_one(client_for, analyst, campaign):
    url = reverse("evaluation:run_list", args=[campaign.slug])
    assert client_for(analyst).get(url).status_code == 200
    response = client_for(analyst).post(url, {"criterion": "veracity", "judge": "lexical"})
    assert response.status_code == 403
    assert not JudgeRun.objects.exists()


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator", "outsider"])
def test_people_who_must_not_see_judge_output_get_403_outsiders_404(
    request, client_for, campaign, finished_run, persona
):
    user = request.getfixturevalue(persona)
    client = client_for(user)
    status = 404 if persona == "outsider" else 403
    assert client.get(reverse("evaluation:run_list", args=[campaign.slug])).status_code == status
    assert (
        client.get(reverse("evaluation:run_detail", args=[campaign.slug, finished_run.pk])).status_code
        == status
    )


def test_anonymous_is_sent_to_login(client, campaign, finished_run):
    response = client.get(reverse("evaluation:run_detail", args=[campaign.slug, finished_run.pk]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_run_page_full_and_htmx_fragment_stops_polling_when_done(client_for, analyst, campaign, finished_run):
    url = reverse("evaluation:run_detail", args=[campaign.slug, finished_run.pk])
    client = client_for(analyst)
    full = client.get(url)
    assert full.status_code == 200
    assert "<html" in full.content.decode()
    fragment = client.get(url, headers={"HX-Request": "true"})
    assert fragment.status_code == 286  # htmx: stop polling
    body = fragment.content.decode()
    assert "<html" not in body
    assert 'id="progress"' in body
    assert "1/1" in body


def test_active_run_fragment_keeps_polling(client_for, analyst, campaign):
    make_answer(campaign=campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    run = runs.create_run(
        criterion=relevance, judge=runs.get_or_create_judge(campaign=campaign, name="lexical")
    )
    url = reverse("evaluation:run_detail", args=[campaign.slug, run.pk])
    fragment = client_for(analyst).get(url, headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    assert 'hx-trigger="every 1s"' in fragment.content.decode()


def test_cancel_and_resume_need_post_and_a_manager(client_for, manager, analyst, campaign):
    make_answer(campaign=campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    run = runs.create_run(
        criterion=relevance, judge=runs.get_or_create_judge(campaign=campaign, name="lexical")
    )
    cancel = reverse("evaluation:run_cancel", args=[campaign.slug, run.pk])
    assert client_for(manager).get(cancel).status_code == 405
    assert client_for(analyst).post(cancel).status_code == 403
    assert client_for(manager).post(cancel).status_code == 302
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.CANCELLED
    resume = reverse("evaluation:run_resume", args=[campaign.slug, run.pk])
    assert client_for(manager).post(resume).status_code == 302
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.RUNNING


def test_llm_reasoning_is_escaped_on_the_run_page(client_for, manager, campaign, finished_run):
    Judgment.objects.filter(judge=finished_run.judge).update(
        status="failed", value=None, error="<script>x</script>"
    )
    finished_run.batches.update(status="failed")
    page = client_for(manager).get(reverse("evaluation:run_detail", args=[campaign.slug, finished_run.pk]))
    body = page.content.decode()
    assert "<script>x</script>" not in body
    assert "&lt;script&gt;x&lt;/script&gt;" in body
