from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin

from tests.factories import make_user


def test_every_model_of_both_apps_is_registered_in_the_admin():
    models = [
        *apps.get_app_config("annotation").get_models(),
        *apps.get_app_config("evaluation").get_models(),
    ]
    missing = [m.__name__ for m in models if not admin.site.is_registered(m)]
    assert missing == []


@pytest.mark.django_db
def test_admin_changelists_open_for_a_superuser(client):
    client.force_login(make_user(superuser=True))
    models = [
        *apps.get_app_config("annotation").get_models(),
        *apps.get_app_config("evaluation").get_models(),
    ]
    for model in models:
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        assert client.get(url).status_code == 200, url


@pytest.mark.django_db
def test_a_campaign_created_in_the_admin_gets_the_built_in_criteria(client):
    from annotation.models import Campaign

    client.force_login(make_user(superuser=True))
    response = client.post(
        "/admin/annotation/campaign/add/",
        {
            "name": "Made by hand",
            "slug": "made-by-hand",
            "citation_pattern": r"\[\^([A-Za-z0-9_-]+)\^\]",
            "abstention_patterns": "[]",
            "annotation_mode": "review",
            "lease_minutes": "15",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    campaign = Campaign.objects.get(slug="made-by-hand")
    names = sorted(campaign.criteria.values_list("name", flat=True))
    assert names == ["citation_support", "relevance", "veracity"]


@pytest.mark.django_db
@pytest.mark.parametrize(("posted", "stored"), [("", None), ("null", None), ("[]", [])])
def test_the_admin_tells_built_in_abstention_patterns_from_none(client, posted, stored):
    from annotation.models import Campaign

    client.force_login(make_user(superuser=True))
    response = client.post(
        "/admin/annotation/campaign/add/",
        {
            "name": "Patterns",
            "slug": "patterns",
            "citation_pattern": r"\[\^([A-Za-z0-9_-]+)\^\]",
            "abstention_patterns": posted,
            "annotation_mode": "review",
            "lease_minutes": "15",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Campaign.objects.get(slug="patterns").abstention_patterns == stored


def test_an_edit_in_the_admin_records_a_new_guidelines_version(client, campaign):
    from annotation.criteria.guidelines import current_version
    from annotation.models import Criterion

    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    current_version(criterion=criterion)
    client.force_login(make_user(superuser=True))
    response = client.post(
        f"/admin/annotation/criterion/{criterion.pk}/change/",
        {
            "campaign": campaign.pk,
            "name": "relevance",
            "title": criterion.title,
            "level": "answer",
            "guidelines": "Edited in the admin.",
            "judge_prompt": "",
            "prompt_version": "v1",
            "positive_key": "1",
            "negative_key": "0",
            "builtin": "on",
            "versions-TOTAL_FORMS": "1",
            "versions-INITIAL_FORMS": "1",
            "versions-MIN_NUM_FORMS": "0",
            "versions-MAX_NUM_FORMS": "1000",
            "versions-0-id": criterion.current_version_id or criterion.versions.get().pk,
            "versions-0-criterion": criterion.pk,
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    criterion.refresh_from_db()
    assert [v.number for v in criterion.versions.all()] == [1, 2]
    assert criterion.current_version.guidelines == "Edited in the admin."
    assert criterion.versions.get(number=1).guidelines != "Edited in the admin."
