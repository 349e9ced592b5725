"""The sampling pages: list and draw form, sample detail with live progress, top-up, JSON download."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from annotation.models import Criterion, Role, Sample, SampleItem
from annotation.sampling.background import create_pending_sample
from annotation.sampling.draws import draw_sample
from annotation.sampling.reading import sample_as_json
from annotation.sampling.staleness import stale_after
from tests.factories import add_member, die_while_running, make_answer, make_campaign, make_corpus

pytestmark = pytest.mark.django_db


@pytest.fixture
def veracity(campaign):
    make_corpus(campaign=campaign)
    return Criterion.objects.get(campaign=campaign, name="veracity")


@pytest.fixture
def done_sample(veracity):
    return draw_sample(criterion=veracity, budget=24, seed=4)


def urls(campaign, sample) -> dict[str, str]:
    return {
        "list": reverse("annotation:sampling", args=[campaign.slug]),
        "draw": reverse("annotation:sample_draw", args=[campaign.slug]),
        "detail": reverse("annotation:sample_detail", args=[campaign.slug, sample.pk]),
        "top_up": reverse("annotation:sample_top_up", args=[campaign.slug, sample.pk]),
        "json": reverse("annotation:sample_json", args=[campaign.slug, sample.pk]),
    }


# Reading


def test_list_page_shows_samples_per_criterion_and_the_draw_form_to_managers(
    client_for, manager, campaign, done_sample
):
    response = client_for(manager).get(reverse("annotation:sampling", args=[campaign.slug]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<html" in page
    assert reverse("annotation:sample_detail", args=[campaign.slug, done_sample.pk]) in page
    assert reverse("annotation:sample_draw", args=[campaign.slug]) in page
    assert 'name="theme_budget:Finance"' in page
    assert "relevance" in page and "No sample yet." in page


def test_analyst_reads_samples_without_the_forms(client_for, analyst, campaign, done_sample):
    client = client_for(analyst)
    page = client.get(reverse("annotation:sampling", args=[campaign.slug])).content.decode()
    assert f"#{done_sample.pk}" in page
    assert reverse("annotation:sample_draw", args=[campaign.slug]) not in page
    detail = client.get(reverse("annotation:sample_detail", args=[campaign.slug, done_sample.pk]))
    assert detail.status_code == 200
    assert (
        reverse("annotation:sample_top_up", args=[campaign.slug, done_sample.pk])
        not in detail.content.decode()
    )


def test_detail_page_shows_clusters_per_theme_with_escaped_examples(client_for, manager, campaign):
    make_answer(
        campaign=campaign,
        theme="Finance",
        sentences=[("<script>alert('x')</script> trésorerie", []), ("Bilan <b>net</b>.", [])],
    )
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    sample = draw_sample(criterion=veracity, budget=3, per_cluster=3)
    response = client_for(manager).get(reverse("annotation:sample_detail", args=[campaign.slug, sample.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; trésorerie" in page
    assert "Bilan &lt;b&gt;net&lt;/b&gt;." in page
    assert reverse("annotation:sample_top_up", args=[campaign.slug, sample.pk]) in page
    assert 'hx-trigger="every 1s"' not in page


def test_detail_lists_every_cluster_with_size_and_drawn_count(client_for, manager, campaign, done_sample):
    page = client_for(manager).get(urls(campaign, done_sample)["detail"]).content.decode()
    for theme in ("Finance", "RH", "IT"):
        assert f">{theme}</h2>" in page
    clusters = SampleItem.objects.filter(sample=done_sample).values("theme", "cluster").distinct().count()
    assert page.count('<td class="wide"><ul class="small prose">') == clusters
    assert f'<div class="value">{done_sample.items.count()}</div><div class="name">Units drawn' in page


def test_htmx_request_for_a_finished_sample_gets_the_fragment_and_stops_polling(
    client_for, manager, campaign, done_sample
):
    response = client_for(manager).get(urls(campaign, done_sample)["detail"], headers={"HX-Request": "true"})
    assert response.status_code == 286
    body = response.content.decode()
    assert "<html" not in body
    assert body.lstrip().startswith('<section id="progress"')
    assert "Units drawn" in body


def test_pending_sample_page_polls_every_second(client_for, manager, campaign, veracity):
    sample = create_pending_sample(criterion=veracity, budget=24)
    url = reverse("annotation:sample_detail", args=[campaign.slug, sample.pk])
    full = client_for(manager).get(url)
    assert 'hx-trigger="every 1s"' in full.content.decode()
    fragment = client_for(manager).get(url, headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    body = fragment.content.decode()
    assert "<html" not in body
    assert 'hx-trigger="every 1s"' in body
    assert 'role="progressbar"' in body


def test_json_download_is_the_sample_as_json(client_for, analyst, campaign, done_sample):
    response = client_for(analyst).get(urls(campaign, done_sample)["json"])
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert (
        response["Content-Disposition"]
        == f'attachment; filename="{campaign.slug}-sample-{done_sample.pk}.json"'
    )
    assert json.loads(response.content) == sample_as_json(sample=done_sample)


# Writing


def test_manager_draws_a_sample_computed_by_the_task_after_commit(
    client_for, manager, campaign, veracity, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client_for(manager).post(
            reverse("annotation:sample_draw", args=[campaign.slug]),
            {
                "criterion": "veracity",
                "budget": "30",
                "per_cluster": "3",
                "seed": "7",
                "theme_budget:IT": "9",
            },
        )
    assert len(callbacks) == 1
    sample = Sample.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:sample_detail", args=[campaign.slug, sample.pk])
    assert (sample.status, sample.seed, sample.budget, sample.created_by) == ("done", 7, 30, manager)
    assert sample.k_per_theme["IT"] == 3
    assert sample.items.filter(theme="IT").exists()


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"criterion": "nope", "budget": "30"}, "criterion: choose one"),
        ({"criterion": "veracity", "budget": ""}, "budget: give the number"),
        ({"criterion": "veracity", "budget": "x"}, "budget: &#x27;x&#x27; is not a whole number"),
        ({"criterion": "veracity", "budget": "2"}, "budget: 2 is below per_cluster = 3"),
        ({"criterion": "veracity", "budget": "30", "per_cluster": "0"}, "per cluster: must be at least 1"),
        (
            {"criterion": "veracity", "budget": "30", "theme_budget:Juridique": "6"},
            "per_theme_budget: unknown",
        ),
        (
            {"criterion": "veracity", "budget": "30", "theme_budget:IT": "-1"},
            "budget for IT: must be at least 0",
        ),
    ],
)
def test_bad_draw_input_is_refused_naming_the_field_and_creates_nothing(
    client_for, manager, campaign, veracity, form, message
):
    response = client_for(manager).post(reverse("annotation:sample_draw", args=[campaign.slug]), form)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Sample.objects.exists()


def test_manager_tops_up_keeping_every_unit(
    client_for, manager, campaign, done_sample, django_capture_on_commit_callbacks
):
    before = set(done_sample.items.values_list("unit_id", flat=True))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client_for(manager).post(urls(campaign, done_sample)["top_up"], {"budget": "48"})
    assert response.status_code == 302
    assert len(callbacks) == 1
    done_sample.refresh_from_db()
    assert (done_sample.status, done_sample.budget) == ("done", 48)
    assert before < set(done_sample.items.values_list("unit_id", flat=True))


def test_a_sample_whose_worker_died_stops_polling_and_the_manager_runs_it_again(
    client_for, manager, campaign, veracity, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    sample = create_pending_sample(criterion=veracity, budget=24, seed=4)
    die_while_running(sample, ago=stale_after() + timedelta(minutes=1))
    client = client_for(manager)
    polled = client.get(urls(campaign, sample)["detail"], HTTP_HX_REQUEST="true")
    assert polled.status_code == 286
    page = client.get(urls(campaign, sample)["detail"]).content.decode()
    assert 'id="stale"' in page and 'id="run-again"' in page and 'hx-trigger="every 1s"' not in page
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(urls(campaign, sample)["top_up"], {})
    assert response.status_code == 302 and len(callbacks) == 1
    sample.refresh_from_db()
    assert (sample.status, sample.items.count()) == ("done", 24)


def test_a_live_draw_offers_no_run_again(client_for, manager, campaign, veracity):
    sample = create_pending_sample(criterion=veracity, budget=24)
    page = client_for(manager).get(urls(campaign, sample)["detail"]).content.decode()
    assert 'id="run-again"' not in page and 'hx-trigger="every 1s"' in page
    assert client_for(manager).post(urls(campaign, sample)["top_up"], {}).status_code == 400
    sample.refresh_from_db()
    assert sample.status == "pending"


def test_a_failed_sample_offers_run_again_to_managers_only(client_for, manager, analyst, campaign, veracity):
    sample = create_pending_sample(criterion=veracity, budget=24)
    Sample.objects.filter(pk=sample.pk).update(status=Sample.Status.FAILED, error="boom")
    assert 'id="run-again"' in client_for(manager).get(urls(campaign, sample)["detail"]).content.decode()
    assert 'id="run-again"' not in client_for(analyst).get(urls(campaign, sample)["detail"]).content.decode()


def test_top_up_below_the_sample_is_refused_and_changes_nothing(client_for, manager, campaign, done_sample):
    before = list(done_sample.items.values_list("unit_id", "cluster", "inclusion_probability"))
    response = client_for(manager).post(urls(campaign, done_sample)["top_up"], {"budget": "12"})
    assert response.status_code == 400
    page = response.content.decode()
    # The refusal sits on the budget field, under the field's own label.
    error = re.search(r'<li id="id_budget_error">(.*?)</li>', page)
    assert error and "12 is below the sample&#x27;s 24" in error.group(1)
    done_sample.refresh_from_db()
    assert (done_sample.status, done_sample.budget) == ("done", 24)
    assert list(done_sample.items.values_list("unit_id", "cluster", "inclusion_probability")) == before


# Methods and access


def test_writes_need_post(client_for, manager, campaign, done_sample):
    client = client_for(manager)
    assert client.get(urls(campaign, done_sample)["draw"]).status_code == 405
    assert client.get(urls(campaign, done_sample)["top_up"]).status_code == 405
    assert client.post(urls(campaign, done_sample)["list"]).status_code == 405
    assert client.post(urls(campaign, done_sample)["detail"]).status_code == 405


def test_anonymous_is_sent_to_login(client, campaign, done_sample):
    for name, url in urls(campaign, done_sample).items():
        response = client.post(url) if name in ("draw", "top_up") else client.get(url)
        assert response.status_code == 302, name
        assert response["Location"].startswith(reverse("login")), name


@pytest.mark.parametrize("persona", ["outsider", "annotator", "reviewer", "adjudicator"])
def test_people_without_a_sampling_role_get_403_outsiders_404(
    request, client_for, campaign, done_sample, persona
):
    client = client_for(request.getfixturevalue(persona))
    for name, url in urls(campaign, done_sample).items():
        response = client.post(url, {"budget": "48"}) if name in ("draw", "top_up") else client.get(url)
        assert response.status_code == (404 if persona == "outsider" else 403), name
    done_sample.refresh_from_db()
    assert done_sample.budget == 24


def test_analyst_cannot_draw_or_top_up(client_for, analyst, campaign, done_sample):
    client = client_for(analyst)
    assert (
        client.post(
            urls(campaign, done_sample)["draw"], {"criterion": "veracity", "budget": "30"}
        ).status_code
        == 403
    )
    assert client.post(urls(campaign, done_sample)["top_up"], {"budget": "48"}).status_code == 403
    assert Sample.objects.count() == 1


def test_a_sample_of_another_campaign_is_not_found(client_for, manager, campaign, done_sample):
    other = make_campaign(name="Other campaign")
    add_member(campaign=other, user=manager, roles=[Role.MANAGER])
    response = client_for(manager).get(reverse("annotation:sample_detail", args=[other.slug, done_sample.pk]))
    assert response.status_code == 404
