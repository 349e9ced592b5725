"""The report page's option to combine several judges in one estimate: off by default, the
combination shown beside the one judge's report, refusals on the page, a constant number of
queries."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Role
from evaluation.estimates import multi_judge
from tests.factories import add_member, make_user
from tests.multi_judged import two_judges


def url(criterion) -> str:
    return reverse("evaluation:report", args=[criterion.campaign.slug, criterion.name])


@pytest.fixture
def combined(db, client):
    criterion, cheap, strong, _ = two_judges(share=True)
    analyst = make_user()
    add_member(campaign=criterion.campaign, user=analyst, roles=[Role.ANALYST])
    client.force_login(analyst)
    return criterion, cheap, strong, client


def test_off_by_default_the_page_offers_the_judges_to_combine(combined):
    criterion, _cheap, _strong, client = combined
    content = client.get(url(criterion), {"judge": "cheap"}).content.decode()
    assert 'name="combine" value="cheap"' in content and 'name="combine" value="strong"' in content
    assert 'id="combined-judges"' not in content


def test_two_judges_combined_are_shown_beside_the_report(combined):
    criterion, cheap, strong, client = combined
    response = client.get(url(criterion), {"judge": "cheap", "combine": ["cheap", "strong"]})
    content = response.content.decode()
    assert response.status_code == 200
    assert 'id="combined-judges"' in content and "Several judges in one estimate" in content
    report = multi_judge.compute_combined(criterion=criterion, judges=[cheap, strong])
    finance = report.themes[0]
    assert f"{100 * finance.estimate.shown_mean:.1f}%" in content
    assert 'name="combine" value="strong" checked' in content
    assert "of the answers" in content  # the strong judge's share


def test_an_htmx_request_gets_the_combination_in_the_results_fragment(combined):
    criterion, _cheap, _strong, client = combined
    response = client.get(
        url(criterion), {"judge": "cheap", "combine": ["cheap", "strong"]}, HTTP_HX_REQUEST="true"
    )
    content = response.content.decode()
    assert response.status_code == 200 and "<html" not in content and 'id="combined-judges"' in content


def test_one_judge_to_combine_is_refused_naming_the_field(combined):
    criterion, _cheap, _strong, client = combined
    response = client.get(url(criterion), {"judge": "cheap", "combine": ["cheap"]})
    assert response.status_code == 400
    assert "combine: choose at least two judges to combine" in response.content.decode()
    unknown = client.get(url(criterion), {"judge": "cheap", "combine": ["cheap", "ghost"]})
    assert (
        unknown.status_code == 400
        and "is not a judge that labeled this criterion" in unknown.content.decode()
    )


def test_the_combination_reads_as_many_queries_whatever_the_campaign_s_size(
    db, client, django_assert_max_num_queries
):
    counts = []
    for name, themes in (
        ("Small", {"Finance": 14, "IT": 13}),
        ("Larger", {"Finance": 40, "IT": 30, "RH": 25}),
    ):
        criterion, _cheap, _strong, _ = two_judges(share=True, themes=themes, name=name)
        analyst = make_user()
        add_member(campaign=criterion.campaign, user=analyst, roles=[Role.ANALYST])
        client.force_login(analyst)
        client.get(url(criterion), {"judge": "cheap"})  # warm the snapshots' reads
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as single:
            client.get(url(criterion), {"judge": "cheap"})
        with CaptureQueriesContext(connection) as both:
            client.get(url(criterion), {"judge": "cheap", "combine": ["cheap", "strong"]})
        counts.append(len(both) - len(single))
    assert counts[0] == counts[1]
    assert counts[0] <= 12
