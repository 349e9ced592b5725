"""The annotators' page: who sees it, what it shows, what it costs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import translation

from annotation.models import AnnotationMode, Criterion, Role, Stage
from annotation.workflow import next_unit
from tests.factories import add_member, label_at, make_campaign, make_user, reviewed_work, sampled

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def url(campaign, **query) -> str:
    base = reverse("evaluation:annotators", args=[campaign.slug])
    return base + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


@pytest.fixture
def worked(campaign, manager, annotator, reviewer, adjudicator):
    return reviewed_work(campaign, annotator, reviewer, adjudicator)


# Who sees it


@pytest.mark.parametrize(
    ("persona", "status"),
    [
        ("manager", 200),
        ("adjudicator", 200),
        ("annotator", 403),
        ("reviewer", 403),
        ("analyst", 403),
        ("outsider", 404),
    ],
)
def test_managers_and_adjudicators_only(persona, status, campaign, client_for, request):
    user = request.getfixturevalue(persona)
    assert client_for(user).get(url(campaign)).status_code == status


def test_an_analyst_who_also_adjudicates_sees_it_and_anonymous_goes_to_login(campaign, analyst, client):
    assert client.get(url(campaign)).status_code == 302
    add_member(campaign=campaign, user=analyst, roles=[Role.ADJUDICATOR])
    client.force_login(analyst)
    assert client.get(url(campaign)).status_code == 200


def test_only_get(campaign, manager, client_for):
    assert client_for(manager).post(url(campaign)).status_code == 405


def test_an_unknown_criterion_is_refused_on_the_form(campaign, manager, client_for):
    response = client_for(manager).get(url(campaign, criterion="nope"))
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()


# What it shows


def test_the_page_shows_each_persons_figures_worked_by_hand(worked, campaign, manager, client_for):
    response = client_for(manager).get(url(campaign))
    assert response.status_code == 200
    page = response.context["page"]
    assert page.criterion == worked  # the first criterion with human labels is the default
    rows = {(name, row.stage): row for name, row in page.named_rows}
    labeller, reviewer, adjudicator = (
        rows[("annotator", "label")],
        rows[("reviewer", "review")],
        rows[("adjudicator", "adjudication")],
    )
    # Gaps 20 and 30 s (the 1000 s break left out): median 25 s, 2 labels in 50 s = 144 an hour.
    assert (
        labeller.labels == 4 and labeller.pace.median_seconds == 25 and round(labeller.pace.per_hour) == 144
    )
    assert reviewer.labels == 3 and reviewer.pace.median_seconds == 40 and round(reviewer.pace.per_hour) == 90
    assert (reviewer.leases, labeller.leases) == (1, 0)
    assert (reviewer.overrides.k, reviewer.overrides.n) == (1, 3)
    assert (labeller.overridden.k, labeller.overridden.n) == (1, 3)
    assert (labeller.final.k, labeller.final.n) == (2, 3) and (reviewer.final.k, reviewer.final.n) == (3, 3)
    assert adjudicator.final is None
    html = response.content.decode()
    assert "25.0" in html and "144" in html and "(1/3)" in html and "66.7%" in html
    assert "anchored" in html  # review mode: the agreement is anchored, and the page says so
    # Reliability of the criterion: pairs (1, 1), (1, 0), (0, 0): kappa 0.40, alpha 0.44.
    figures = {item.criterion.name: item.reliability for item in page.criteria}
    assert figures[worked.name].agreed.n == 3
    assert round(figures[worked.name].kappa, 2) == 0.4 and round(figures[worked.name].alpha, 2) == 0.44
    assert "0.40" in html and "0.44" in html


def test_no_judge_data_on_the_page(worked, campaign, manager, client_for):
    from evaluation.models import Judge, Judgment

    judge = Judge.objects.create(campaign=campaign, name="secret-judge")
    unit = worked.labels.first().unit
    Judgment.objects.create(unit=unit, criterion=worked, judge=judge, value=0, reasoning="judge's reasoning")
    html = client_for(manager).get(url(campaign)).content.decode()
    assert "secret-judge" not in html and "judge's reasoning" not in html


def test_blind_mode_shows_the_pairs_table(db, client_for):
    campaign = make_campaign(name="Blind campaign", annotation_mode=AnnotationMode.BLIND_DOUBLE)
    manager = make_user(username="boss")
    add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
    one, two = make_user(username="ann"), make_user(username="bob")
    for person in (one, two):
        add_member(campaign=campaign, user=person, roles=[Role.ANNOTATOR])
    criterion, units = sampled(campaign=campaign, answers=3)
    for n, (a, b) in enumerate([(1, 1), (0, 0), (1, 0)]):
        label_at(at(10 * n), one, criterion, Stage.LABEL, a, unit=units[n])
        label_at(at(10 * n + 5), two, criterion, Stage.LABEL, b, unit=units[n])
    response = client_for(manager).get(url(campaign, criterion=criterion.name))
    page = response.context["page"]
    assert [(a, b, pair.agreed.k, pair.agreed.n) for a, b, pair in page.named_pairs] == [("ann", "bob", 2, 3)]
    rows = {name: row for name, row in page.named_rows}
    assert sum(rows["ann"].slots) == 3 and sum(rows["bob"].slots) == 3
    html = response.content.decode()
    assert "Pairs of annotators" in html and "anchored" not in html


def test_the_page_speaks_french(worked, campaign, manager, client_for):
    client = client_for(manager)
    response = client.get(url(campaign), HTTP_ACCEPT_LANGUAGE="fr")
    assert response.status_code == 200
    assert '<html lang="fr"' in response.content.decode()
    # Decimal comma: the labeller's median of 25 seconds.
    assert "25,0" in response.content.decode()
    translation.activate("en")


def test_linked_from_the_overview_work_and_team_pages_for_those_who_see_it(
    campaign, manager, annotator, client_for
):
    target = url(campaign)
    for page in ("evaluation:campaign_overview", "annotation:work", "annotation:team"):
        assert target in client_for(manager).get(reverse(page, args=[campaign.slug])).content.decode()
    for page in ("evaluation:campaign_overview", "annotation:work"):
        assert target not in client_for(annotator).get(reverse(page, args=[campaign.slug])).content.decode()


# What it costs


def test_a_constant_number_of_queries_whatever_the_number_of_labels(
    db, client_for, django_assert_num_queries
):
    counts = []
    for units in (4, 9):
        campaign = make_campaign()
        manager, annotator, reviewer, adjudicator = (make_user() for _ in range(4))
        add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
        add_member(campaign=campaign, user=annotator, roles=[Role.ANNOTATOR])
        add_member(campaign=campaign, user=reviewer, roles=[Role.REVIEWER])
        add_member(campaign=campaign, user=adjudicator, roles=[Role.ADJUDICATOR])
        reviewed_work(campaign, annotator, reviewer, adjudicator, units=units)
        client = client_for(manager)
        # Session, user, campaign, roles, criteria, the labels' version, label states, slots,
        # timeline, live leases, names.
        with django_assert_num_queries(11):
            response = client.get(url(campaign))
        assert response.status_code == 200
        # Again, nothing labelled since: what the labels give comes from the cache.
        with django_assert_num_queries(8):
            again = client.get(url(campaign))
        assert again.context["page"].rows == response.context["page"].rows
        counts.append(len(Criterion.objects.filter(campaign=campaign)))
    assert counts[0] == counts[1]


def test_a_new_label_and_a_new_lease_show_at_once(db, client_for):
    campaign = make_campaign()
    manager, annotator, reviewer, adjudicator = (make_user() for _ in range(4))
    add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
    add_member(campaign=campaign, user=annotator, roles=[Role.ANNOTATOR])
    add_member(campaign=campaign, user=reviewer, roles=[Role.REVIEWER])
    add_member(campaign=campaign, user=adjudicator, roles=[Role.ADJUDICATOR])
    criterion = reviewed_work(campaign, annotator, reviewer, adjudicator, units=5)
    client = client_for(manager)

    def rows() -> dict[tuple[int, str], tuple[int, int]]:
        page = client.get(url(campaign)).context["page"]
        return {(row.user_id, row.stage): (row.labels, row.leases) for row in page.rows}

    before = rows()
    assert before[(annotator.pk, "label")] == (5, 0) and before[(reviewer.pk, "review")] == (3, 1)
    # The reviewer labels the unit they hold (a label: the cached figures are read again),
    # then takes the fifth unit (a lease alone: the live leases are read on every request).
    label_at(at(5000), reviewer, criterion, Stage.REVIEW, 1)
    assert rows()[(reviewer.pk, "review")] == (4, 0)
    assert next_unit(user=reviewer, criterion=criterion, stage=Stage.REVIEW) is not None
    assert rows()[(reviewer.pk, "review")] == (4, 1)
