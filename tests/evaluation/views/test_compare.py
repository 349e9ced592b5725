"""The comparison page with versions that share question ids: compared by question."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from annotation.models import Criterion, Role
from evaluation.measures import comparison
from tests.evaluation.measures.test_comparison import _outcomes, _version
from tests.factories import add_member, make_user
from tests.judged import pct


@pytest.fixture
def analyst_of_all(three_versions):
    user = make_user(username="analyst")
    for campaign in three_versions:
        add_member(campaign=campaign, user=user, roles=[Role.ANALYST])
    return user


def url(campaign) -> str:
    return reverse("evaluation:compare", args=[campaign.slug, "relevance"])


def section(content: str, estimate: str) -> str:
    match = re.search(rf'<table [^>]*data-estimate="{estimate}">(.*?)</table>', content, re.S)
    assert match, estimate
    return match.group(1)


def test_two_versions_sharing_questions_are_compared_by_question(three_versions, analyst_of_all, client):
    client.force_login(analyst_of_all)
    response = client.get(url(three_versions[0]), {"other": three_versions[2].slug})
    content = response.content.decode()
    assert response.status_code == 200, content
    assert 'id="paired-note"' in content and "compare-row" not in content
    expected = comparison.compare_versions(
        versions=comparison.versions_for(
            campaigns=[three_versions[0], three_versions[2]], criterion="relevance"
        )
    )
    for name in ("ppi", "human", "judge", "response"):
        table = section(content, name)
        for row in expected.rows_of(name):
            match = re.search(rf'data-theme="{re.escape(escape(row.theme))}">(.*?)</tr>', table, re.S)
            assert match, (name, row.theme)
            cells = match.group(1)
            assert pct(row.left_value) in cells and pct(row.right_value) in cells
            assert row.difference is not None
            assert f"{row.difference.estimate * 100:+.1f} pts" in cells
            assert ("differs" in cells) == row.difference.significant
    # The overall PPI++ difference of v1 and v3 stays significant; 100% response rates never do.
    assert "differs" in section(content, "ppi")
    assert "differs" not in section(content, "response")


def test_more_versions_give_every_pair(three_versions, analyst_of_all, client):
    client.force_login(analyst_of_all)
    response = client.get(
        url(three_versions[0]), {"other": three_versions[1].slug, "more": three_versions[2].slug}
    )
    content = response.content.decode()
    assert response.status_code == 200, content
    table = section(content, "ppi")
    assert table.count('data-theme="overall"') == 3
    assert "Assistant v2 → Assistant v3" in table


def test_a_version_i_do_not_analyse_is_refused_naming_the_field(three_versions, analyst_of_all, client):
    stranger = _version("Assistant v4", _outcomes(4, 0.0))
    client.force_login(analyst_of_all)
    response = client.get(url(three_versions[0]), {"other": three_versions[1].slug, "more": stranger.slug})
    assert response.status_code == 400
    assert response.context["errors"] == [f"more: {stranger.slug!r} is not a campaign you manage or analyse"]


def test_a_third_version_sharing_no_question_is_refused_naming_it(three_versions, analyst_of_all, client):
    apart = _version("Elsewhere", {"x": [(1, 1)], "y": [(0, 0)]})
    add_member(campaign=apart, user=analyst_of_all, roles=[Role.ANALYST])
    client.force_login(analyst_of_all)
    response = client.get(url(three_versions[0]), {"other": three_versions[1].slug, "more": apart.slug})
    assert response.status_code == 400
    assert any(
        "'Assistant v1' and 'Elsewhere' have no question id in common" in e
        for e in response.context["errors"]
    )


def test_a_third_version_without_the_criterion_is_refused(three_versions, analyst_of_all, client):
    Criterion.objects.filter(campaign=three_versions[2], name="relevance").update(name="relevance-old")
    client.force_login(analyst_of_all)
    response = client.get(
        url(three_versions[0]), {"other": three_versions[1].slug, "more": three_versions[2].slug}
    )
    assert response.status_code == 400
    assert response.context["errors"] == [
        "criterion: 'relevance' is not a criterion of campaign 'Assistant v3'"
    ]


def test_people_who_only_label_get_403_and_outsiders_404(three_versions, client):
    annotator, outsider = make_user(username="annotator"), make_user(username="outsider")
    add_member(campaign=three_versions[0], user=annotator, roles=[Role.ANNOTATOR])
    client.force_login(annotator)
    assert client.get(url(three_versions[0]), {"other": three_versions[1].slug}).status_code == 403
    client.force_login(outsider)
    assert client.get(url(three_versions[0]), {"other": three_versions[1].slug}).status_code == 404
    client.logout()
    assert client.get(url(three_versions[0])).status_code == 302
    assert client.post(url(three_versions[0])).status_code in (302, 405)


def test_the_page_costs_a_fixed_number_of_queries(
    three_versions, analyst_of_all, client, django_assert_num_queries
):
    client.force_login(analyst_of_all)
    params = {"other": three_versions[1].slug, "more": three_versions[2].slug}
    client.get(url(three_versions[0]), params)
    with django_assert_num_queries(QUERIES):
        assert client.get(url(three_versions[0]), params).status_code == 200


# Session, user, memberships, candidates and judges; then per version its question ids and what
# the page cache keeps its figures under (read by the first request): the versions of its
# labels, judgments and samples for its estimates (its content version comes with the
# campaign); whatever the number of answers and labels.
QUERIES = 28


def test_twice_the_answers_cost_the_same_queries(db, client, django_assert_num_queries):
    big = [_version(f"Big v{i}", _outcomes(i, 0.1 * i, answers=8)) for i in (1, 2, 3)]
    user = make_user(username="analyst")
    for campaign in big:
        add_member(campaign=campaign, user=user, roles=[Role.ANALYST])
    client.force_login(user)
    params = {"other": big[1].slug, "more": big[2].slug}
    client.get(url(big[0]), params)
    with django_assert_num_queries(QUERIES):
        assert client.get(url(big[0]), params).status_code == 200


# The report's change against the previous version (its section, loaded after the report)


def previous_url(campaign, **params) -> str:
    query = {"judge": "imported", "method": "robust", "alpha": "0.05", **params}
    return reverse("evaluation:previous_version", args=[campaign.slug, "relevance"]), query


def test_the_report_section_compares_with_the_previous_version_by_question(
    three_versions, analyst_of_all, client
):
    client.force_login(analyst_of_all)
    path, query = previous_url(three_versions[1])
    response = client.get(path, query, HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert response.status_code == 200 and "<html" not in content
    assert "Against the previous version of the assistant (Assistant v1)" in content
    expected = comparison.compare_versions(
        versions=comparison.versions_for(
            campaigns=[three_versions[0], three_versions[1]], criterion="relevance"
        ),
        metrics=False,
    ).rows_of(comparison.PPI)
    rows = re.findall(r'<tr class="version-row[^"]*" data-theme="([^"]+)">(.*?)</tr>', content, re.S)
    assert [theme for theme, _ in rows] == [row.theme for row in expected]
    for (_, cells), row in zip(rows, expected, strict=True):
        assert pct(row.left_value) in cells and pct(row.right_value) in cells
        assert f"{row.difference.estimate * 100:+.1f} pts" in cells
    # The first version has none before it: an empty section, nothing to swap in.
    first = client.get(*previous_url(three_versions[0]), HTTP_HX_REQUEST="true")
    assert first.status_code == 200 and first.content == b""


def test_the_previous_version_must_be_one_the_reader_may_compare_with(three_versions, client):
    user = make_user(username="only-v2")
    add_member(campaign=three_versions[1], user=user, roles=[Role.ANALYST])
    client.force_login(user)
    response = client.get(*previous_url(three_versions[1]))
    assert response.status_code == 200 and response.content == b""


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.REVIEWER, Role.ADJUDICATOR])
def test_the_section_has_the_reports_access_rule(role, three_versions, client):
    user = make_user(username=f"who-{role}")
    add_member(campaign=three_versions[1], user=user, roles=[role])
    client.force_login(user)
    assert client.get(*previous_url(three_versions[1])).status_code == 403
    stranger = make_user(username="stranger")
    client.force_login(stranger)
    assert client.get(*previous_url(three_versions[1])).status_code == 404
    client.logout()
    assert client.get(*previous_url(three_versions[1])).status_code == 302


def test_the_section_refuses_a_post_and_a_bad_parameter(three_versions, analyst_of_all, client):
    client.force_login(analyst_of_all)
    path, query = previous_url(three_versions[1])
    assert client.post(path, query).status_code == 405
    refused = client.get(path, {**query, "alpha": "2"})
    assert refused.status_code == 400 and refused.content.decode().startswith("alpha:")
