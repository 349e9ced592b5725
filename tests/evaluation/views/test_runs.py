from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Criterion
from evaluation.judge import runs
from evaluation.models import JudgeRun, Judgment, ReportSnapshot
from evaluation.tasks import dispatch_run
from tests.factories import api_token, make_answer

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
    assert callbacks[0].args == (dispatch_run, run.pk)
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
    # As storing a failure leaves them: the batch and the run count it.
    finished_run.batches.update(status="failed", done_units=0, failed_units=1)
    JudgeRun.objects.filter(pk=finished_run.pk).update(done_units=0, failed_units=1)
    page = client_for(manager).get(reverse("evaluation:run_detail", args=[campaign.slug, finished_run.pk]))
    body = page.content.decode()
    assert "<script>x</script>" not in body
    assert "&lt;script&gt;x&lt;/script&gt;" in body


# A run that tells failure from success, its failures grouped by reason.


def _failed_run(campaign, settings, *, answers: int = 1) -> JudgeRun:
    """A run of an LLM judge made while a key was set, worked through after it went away: every
    call fails with the same reason."""
    settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = "", None
    for _ in range(answers):
        make_answer(campaign=campaign)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    judge = runs.get_or_create_judge(campaign=campaign, name="gpt")
    return runs.run_inline(run_id=runs.create_run(criterion=veracity, judge=judge).pk)


def test_a_run_whose_every_unit_failed_reads_failed_with_one_row_per_reason(
    client_for, analyst, campaign, settings
):
    run = _failed_run(campaign, settings, answers=3)
    assert (run.status, run.failed_units) == (JudgeRun.Status.FAILED, 6)
    client = client_for(analyst)
    page = client.get(reverse("evaluation:run_detail", args=[campaign.slug, run.pk])).content.decode()
    assert '<div class="value run-status bad" id="run-status">Failed: 6 of 6 units</div>' in page
    assert ">Done<" not in page
    assert page.count("OPENAI_API_KEY is not set") == 1
    assert "6&nbsp;×" in page
    assert "the 6 units" in page
    for unit_id in Judgment.objects.filter(judge=run.judge).values_list("unit_id", flat=True):
        assert reverse("evaluation:unit", args=[campaign.slug, unit_id]) in page
    # The bar draws the failures in their own colour, over the whole width here.
    assert '<rect class="judged" width="0.0" height="4"/>' in page
    assert '<rect class="failed" x="0.0" width="100.0" height="4"/>' in page
    listed = client.get(reverse("evaluation:run_list", args=[campaign.slug])).content.decode()
    assert '<span class="badge bad">Failed: 6 of 6 units</span>' in listed
    french = client.get(
        reverse("evaluation:run_detail", args=[campaign.slug, run.pk]), headers={"Accept-Language": "fr"}
    ).content.decode()
    assert "En échec\u00a0: 6 unités sur 6" in french
    assert "Pourquoi des unités ont échoué" in french and "les 6 unités" in french


def test_the_run_page_lists_the_first_units_of_a_reason_and_says_how_many_more(
    client_for, analyst, campaign, settings
):
    run = _failed_run(campaign, settings, answers=14)  # 28 sentences, one reason
    page = client_for(analyst).get(reverse("evaluation:run_detail", args=[campaign.slug, run.pk]))
    body = page.content.decode()
    assert "the first 25 of 28 units" in body
    assert body.count('class="reason-unit-list"') == 1
    assert body.count(f"/campaigns/{campaign.slug}/units/") == runs.SHOWN_UNITS


def test_a_run_with_some_failures_reads_done_with_them(client_for, analyst, campaign):
    make_answer(campaign=campaign)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.run_inline(run_id=runs.create_run(criterion=veracity, judge=judge).pk)
    unit_id = Judgment.objects.filter(judge=judge).order_by("unit_id").values_list("unit_id", flat=True)[0]
    # One unit failed: the run's tallies and its batch say so, as storing a failure leaves them.
    Judgment.objects.filter(unit_id=unit_id, judge=judge).update(
        status="failed", value=None, error="HTTP 500"
    )
    run.batches.update(status="failed", done_units=1, failed_units=1)
    JudgeRun.objects.filter(pk=run.pk).update(done_units=1, failed_units=1)
    page = (
        client_for(analyst)
        .get(reverse("evaluation:run_detail", args=[campaign.slug, run.pk]))
        .content.decode()
    )
    assert '<div class="value run-status warn" id="run-status">Done with 1 failure</div>' in page
    assert '<rect class="judged" width="50.0" height="4"/>' in page
    assert '<rect class="failed" x="50.0" width="50.0" height="4"/>' in page
    assert "1&nbsp;×" in page and "HTTP 500" in page


def test_the_run_page_costs_the_same_queries_however_many_failures(
    client_for, analyst, campaign, settings, django_assert_num_queries
):
    client = client_for(analyst)
    small = _failed_run(campaign, settings, answers=1)
    large = _failed_run(campaign, settings, answers=12)
    assert large.failed_units > 10 * small.failed_units / 2
    for run in (small, large):
        url = reverse("evaluation:run_detail", args=[campaign.slug, run.pk])
        with django_assert_num_queries(8):
            assert client.get(url).status_code == 200
        with django_assert_num_queries(8):
            assert client.get(url, headers={"HX-Request": "true"}).status_code == 286


def test_the_api_says_failed(client, manager, campaign, settings):
    run = _failed_run(campaign, settings)
    response = client.get(
        f"/api/v1/campaigns/{campaign.slug}/runs/{run.pk}", HTTP_AUTHORIZATION=f"Bearer {api_token(manager)}"
    )
    body = response.json()
    assert (body["status"], body["active"], body["done_units"], body["failed_units"]) == (
        "failed",
        False,
        0,
        2,
    )
