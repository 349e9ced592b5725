"""The heavy pages computed ahead of their first visit: after ``warm_campaign``, the first visit
of each page at its default parameters reads the page cache as a second visit does (the same
queries, nothing computed), where without it the first visit computes; imports and
recomputations of the estimates have it done once they commit."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Campaign
from config.celery import app as celery_app
from evaluation import page_warming
from evaluation.demo.campaign import DEMO_CAMPAIGN
from evaluation.demo.versions import SECOND_CAMPAIGN
from evaluation.imports.campaign_file import import_file
from evaluation.measures import automatic
from evaluation.pages import stability as stability_page
from evaluation.tasks import refresh_estimates_task
from tests.ingest_files import RECORDS, write_jsonl


def _pages(campaign: Campaign, other: Campaign) -> list[tuple[str, dict[str, str]]]:
    """Each heavy page's first visit: its address (no parameter but the other version on
    compare) and its headers."""
    htmx = {"HTTP_HX_REQUEST": "true"}
    slug = campaign.slug
    pages = [
        (reverse("evaluation:campaign_overview", args=[slug]), htmx),
        (reverse("evaluation:reference_answers", args=[slug]), htmx),
        (reverse("evaluation:evidence", args=[slug]), {}),
        (reverse("evaluation:stability", args=[slug]), {}),
    ]
    for criterion in ("relevance", "citation_support", "correctness"):
        pages.append((reverse("evaluation:report", args=[slug, criterion]), {}))
    pages += [
        (reverse("evaluation:calibration", args=[slug, "relevance"]), htmx),
        (reverse("evaluation:compare", args=[slug, "relevance"]) + f"?other={other.slug}", {}),
    ]
    return pages


def _queries(client: Client, url: str, headers: dict[str, str]) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, **headers)
    assert response.status_code == 200, url
    return len(queries)


@pytest.fixture
def manager(loaded_demo, db) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username="manager"))
    return client


def test_after_warming_each_page_opens_as_on_its_second_visit(manager):
    campaign, other = (Campaign.objects.get(name=name) for name in (DEMO_CAMPAIGN, SECOND_CAMPAIGN))
    pages = _pages(campaign, other)
    cold = {}
    for url, headers in pages:
        cache.clear()
        cold[url] = _queries(manager, url, headers)
    cache.clear()
    warmed = page_warming.warm_campaign(campaign=campaign) + page_warming.warm_campaign(campaign=other)
    assert {"metrics", "reference answers", "evidence", "stability", "report relevance"} <= set(warmed)
    first = {url: _queries(manager, url, headers) for url, headers in pages}
    second = {url: _queries(manager, url, headers) for url, headers in pages}
    assert first == second
    # Without warming, each first visit computes: more queries, on every page but the report
    # read from its snapshot (what it computes besides, the planner, reads no more rows).
    snapshotted = reverse("evaluation:report", args=[campaign.slug, "relevance"])
    assert all(cold[url] > second[url] for url, _ in pages if url != snapshotted)
    assert cold[snapshotted] == second[snapshotted]


def test_the_stability_table_is_rendered_ahead_in_each_language(manager, monkeypatch, settings):
    campaign = Campaign.objects.get(name=DEMO_CAMPAIGN)
    cache.clear()
    page_warming.warm_campaign(campaign=campaign)
    rendered = []
    render = stability_page.render_to_string
    monkeypatch.setattr(
        stability_page, "render_to_string", lambda *a, **k: rendered.append(a) or render(*a, **k)
    )
    url = reverse("evaluation:stability", args=[campaign.slug])
    for language, _name in settings.LANGUAGES:
        response = manager.get(url, HTTP_ACCEPT_LANGUAGE=language)
        assert response.status_code == 200 and response.headers["Content-Language"] == language
    assert rendered == []
    cache.clear()
    assert manager.get(url).status_code == 200
    assert len(rendered) == 1


def test_warming_again_what_is_kept_computes_nothing(manager):
    campaign = Campaign.objects.get(name=DEMO_CAMPAIGN)
    cache.clear()
    with CaptureQueriesContext(connection) as cold:
        page_warming.warm_campaign(campaign=campaign)
    with CaptureQueriesContext(connection) as again:
        page_warming.warm_campaign(campaign=campaign)
    # Only the keys' queries and the forms' choices: no measure reads the answers again.
    assert len(again) < len(cold) / 2
    assert not any("annotation_answer" in query["sql"] for query in again.captured_queries)


def test_warming_reaches_the_pages_only_through_a_shared_cache_or_in_process(settings):
    settings.PAGE_WARMING = True
    assert celery_app.conf.task_always_eager  # the tests' set-up: the task runs here
    assert page_warming.enabled()
    celery_app.conf.task_always_eager = False
    try:
        # Local memory is the worker's own: computing there would reach no page.
        assert not page_warming.enabled()
        settings.CACHES = {
            "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://x"}
        }
        assert page_warming.enabled()
    finally:
        celery_app.conf.task_always_eager = True
    settings.PAGE_WARMING = False
    assert not page_warming.enabled()


def _metrics_kept(campaign: Campaign) -> bool:
    """Whether the automatic metrics' counts of the campaign are in the page cache: read, they
    query no answer."""
    campaign = Campaign.objects.get(pk=campaign.pk)
    with CaptureQueriesContext(connection) as queries:
        automatic.compute_metrics(campaign=campaign)
    return not any("annotation_answer" in query["sql"] for query in queries.captured_queries)


@pytest.mark.django_db
def test_an_import_has_its_pages_computed_once_it_commits(
    settings, django_capture_on_commit_callbacks, tmp_path
):
    # Answers alone: no label or judgment, so no recomputation of the estimates follows.
    answers = write_jsonl(tmp_path / "answers.jsonl", [dict(r, labels={}) for r in RECORDS])
    settings.PAGE_WARMING = True
    cache.clear()
    with django_capture_on_commit_callbacks(execute=True):
        campaign = import_file(path=answers, campaign_name="Warm").campaign
    assert _metrics_kept(campaign)
    # Turned off: the next import leaves them to the first visit.
    settings.PAGE_WARMING = False
    cache.clear()
    with django_capture_on_commit_callbacks(execute=True):
        other = import_file(path=answers, campaign_name="Cold").campaign
    assert not _metrics_kept(other)


def test_a_recomputation_of_the_estimates_warms_its_campaign(
    manager, settings, django_capture_on_commit_callbacks
):
    settings.PAGE_WARMING = True
    campaign = Campaign.objects.get(name=DEMO_CAMPAIGN)
    criterion = campaign.criteria.get(name="relevance")
    url = reverse("evaluation:report", args=[campaign.slug, "relevance"])
    cache.clear()
    with django_capture_on_commit_callbacks(execute=True):
        refresh_estimates_task(criterion.pk)
    first = _queries(manager, url, {})
    assert first == _queries(manager, url, {})
    assert _metrics_kept(campaign)
