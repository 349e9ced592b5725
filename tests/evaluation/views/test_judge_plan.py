"""The planner of several judges' page: access by role, the plan and its ledger shown, the form's
defaults and refusals, the hourly rate and the draw for managers only, a number of queries that
does not grow with the units, French, and the plan's CSV and JSON."""

from __future__ import annotations

import copy
import csv
import io

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Role
from evaluation.models import JudgeRun, JudgeShare
from tests.factories import add_member, api_token, make_campaign, make_user
from tests.judge_planned import planned
from tests.test_french_pages import Data, offences

FRENCH = {"HTTP_ACCEPT_LANGUAGE": "fr"}


def url(campaign, name: str = "evaluation:judge_plan", criterion: str = "relevance") -> str:
    return reverse(name, args=[campaign.slug, criterion])


PERSONAS = ("manager", "analyst", "annotator", "reviewer", "adjudicator")


@pytest.fixture(scope="module")
def _world(module_transaction):
    """A campaign planned as ``planned`` plans it and a person in each role (and an outsider),
    built once for the module; each test's writes are rolled back after it."""
    campaign = make_campaign(name="Velmont due diligence")
    people = {role: make_user(username=role) for role in (*PERSONAS, "outsider")}
    for role in PERSONAS:
        add_member(campaign=campaign, user=people[role], roles=[role])
    return campaign, planned(campaign=campaign), people


@pytest.fixture
def world(_world, db):
    return copy.deepcopy(_world)


@pytest.fixture
def campaign(world):
    return world[0]


@pytest.fixture
def judges(world):
    return world[1]


@pytest.fixture
def bare_campaign(manager):
    """A campaign of its own, with the module's manager, for a test that plans it its way."""
    campaign = make_campaign(name="Velmont plans")
    add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
    return campaign


def _person(role: str):
    @pytest.fixture(name=role)
    def person(world):
        return world[2][role]

    return person


# The module's people, in place of the conftest's (made per test, each on its own campaign).
manager, analyst, annotator, reviewer, adjudicator, outsider = (
    _person(role) for role in (*PERSONAS, "outsider")
)


@pytest.mark.parametrize("persona", ["analyst", "manager"])
def test_managers_and_analysts_see_each_themes_plan_and_the_ledger(
    persona, campaign, judges, client_for, request
):
    response = client_for(request.getfixturevalue(persona)).get(url(campaign), {"target": "0.15"})
    assert response.status_code == 200
    content = response.content.decode()
    plan = response.context["plan"]
    assert [row.theme for row in plan.planned] == ["Finance", "IT"]
    assert 'data-theme="Finance"' in content and 'data-judge="dear"' in content
    assert 'id="human-cost"' in content and "1.000" in content  # one minute a label at 60 an hour
    assert "0.00100" in content and "0.05000" in content  # each judge's measured cost per unit
    assert 'data-figure="total-saving"' in content
    draw = 'action="' + url(campaign, "evaluation:judge_plan_draw") + '"'
    rate = 'action="' + url(campaign, "evaluation:judge_plan_rate") + '"'
    assert (draw in content) == (rate in content) == (persona == "manager")


def test_the_judges_page_links_to_the_planner(campaign, judges, client_for, manager):
    content = client_for(manager).get(url(campaign, "evaluation:judge_alignment")).content.decode()
    assert 'id="judge-plan-link"' in content and url(campaign) in content


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator"])
@pytest.mark.parametrize(
    "name", ["evaluation:judge_plan", "evaluation:judge_plan_rate", "evaluation:judge_plan_draw"]
)
def test_people_who_label_get_403(persona, name, campaign, judges, client_for, request):
    client = client_for(request.getfixturevalue(persona))
    response = (
        client.get(url(campaign, name))
        if name == "evaluation:judge_plan"
        else client.post(url(campaign, name))
    )
    assert response.status_code == 403


@pytest.mark.parametrize(
    "name", ["evaluation:judge_plan", "evaluation:judge_plan_rate", "evaluation:judge_plan_draw"]
)
def test_outsiders_get_404_and_anonymous_people_the_login_page(name, campaign, judges, client_for, outsider):
    method = "get" if name == "evaluation:judge_plan" else "post"
    assert getattr(Client(), method)(url(campaign, name)).status_code == 302
    assert getattr(client_for(outsider), method)(url(campaign, name)).status_code == 404


@pytest.mark.parametrize("name", ["evaluation:judge_plan_rate", "evaluation:judge_plan_draw"])
def test_analysts_may_not_set_the_rate_nor_draw(name, campaign, judges, client_for, analyst):
    assert client_for(analyst).post(url(campaign, name), {"rate": "10"}).status_code == 403
    campaign.refresh_from_db()
    assert campaign.label_hourly_rate == 60 and not JudgeShare.objects.exists()


def test_wrong_methods_are_refused(campaign, judges, client_for, manager):
    client = client_for(manager)
    assert client.post(url(campaign)).status_code == 405
    assert client.get(url(campaign, "evaluation:judge_plan_rate")).status_code == 405
    assert client.get(url(campaign, "evaluation:judge_plan_draw")).status_code == 405


def test_a_manager_sets_the_hourly_rate(campaign, judges, client_for, manager):
    response = client_for(manager).post(
        url(campaign, "evaluation:judge_plan_rate"), {"rate": "42.5"}, follow=True
    )
    campaign.refresh_from_db()
    assert campaign.label_hourly_rate == 42.5
    assert "The hourly rate of labelling is saved." in response.content.decode()
    client_for(manager).post(url(campaign, "evaluation:judge_plan_rate"), {"rate": "-1"})
    campaign.refresh_from_db()
    assert campaign.label_hourly_rate == 42.5


def test_without_a_rate_the_page_says_what_is_missing(bare_campaign, client_for, manager):
    planned(campaign=bare_campaign, prefix="bare", rate=None)
    content = client_for(manager).get(url(bare_campaign)).content.decode()
    assert 'data-empty="no_human_cost"' in content and "no hourly rate set" in content


def test_a_manager_draws_the_shares_and_starts_the_runs(campaign, judges, client_for, manager):
    response = client_for(manager).post(
        url(campaign, "evaluation:judge_plan_draw"),
        {"target": "0.15", "alpha": "0.05", "judges": ["cheap", "dear"], "seed": "9"},
    )
    assert response.status_code == 302 and response.url == reverse(
        "evaluation:run_list", args=[campaign.slug]
    )
    (share,) = JudgeShare.objects.all()
    assert share.judge.name == "dear" and JudgeRun.objects.filter(scope=JudgeRun.Scope.SHARE).count() == 1
    again = client_for(manager).post(
        url(campaign, "evaluation:judge_plan_draw"),
        {"target": "0.15", "judges": ["cheap", "dear"]},
        follow=True,
    )
    assert "already has a drawn share" in again.content.decode() and JudgeShare.objects.count() == 1


def test_a_wrong_parameter_gives_400_with_its_message_and_the_defaults_plan(
    campaign, judges, client_for, manager
):
    response = client_for(manager).get(url(campaign), {"target": "2", "judges": ["nobody"]})
    assert response.status_code == 400
    content = response.content.decode()
    assert "target:" in content and "judges:" in content
    assert response.context["target"] == 0.05 and response.context["plan"].judges


def test_too_few_labels_is_explained(bare_campaign, client_for, manager):
    planned(campaign=bare_campaign, prefix="bare", labeled=6)
    content = client_for(manager).get(url(bare_campaign)).content.decode()
    assert "Too few labels to plan" in content and 'class="lead too-few"' in content


def test_the_page_reads_the_database_in_a_constant_number_of_queries(bare_campaign, client_for, manager):
    planned(campaign=bare_campaign, prefix="bare", themes={"Finance": 20, "IT": 15}, labeled=12)
    client = client_for(manager)
    client.get(url(bare_campaign))
    with CaptureQueriesContext(connection) as few:
        assert client.get(url(bare_campaign)).status_code == 200
    more = make_campaign(name="Bigger")
    add_member(campaign=more, user=manager, roles=[Role.MANAGER])
    planned(campaign=more, themes={"Finance": 60, "IT": 45, "RH": 30}, labeled=25, prefix="big")
    with CaptureQueriesContext(connection) as many:
        assert client.get(url(more)).status_code == 200
    assert len(few) == len(many) == 13  # session included


def test_the_page_in_french(campaign, judges, client_for, manager):
    response = client_for(manager).get(url(campaign), {"target": "0.15"}, **FRENCH)
    content = response.content.decode()
    assert "Planificateur de plusieurs juges" in content
    assert "Meilleur juge seul" in content and "Ce que coûte une étiquette" in content
    data = Data(exact={"cheap", "dear", "manager", "Finance", "IT", campaign.name, "small", "large"})
    assert offences(content, data=data) == []


def test_minutes_given_in_the_form_plan_a_campaign_whose_labels_were_imported(
    bare_campaign, client_for, manager
):
    criterion, cheap, dear = planned(campaign=bare_campaign, prefix="bare")
    # Labels of people nobody timed: the same campaign's labels, as if imported.
    bare_campaign.label_hourly_rate = 60
    bare_campaign.save()
    response = client_for(manager).get(url(bare_campaign), {"minutes": "2", "target": "0.15"})
    assert response.status_code == 200
    human = response.context["plan"].ledger.human
    assert human.source == "given" and human.per_label == 4.0  # 2 minutes x 2 rows x 60 an hour
    assert "as given in the form above" in response.content.decode()
    assert 'name="minutes" value="2.0"' in response.content.decode()
    bad = client_for(manager).get(url(bare_campaign), {"minutes": "0"})
    assert bad.status_code == 400 and bad.context["plan"].ledger.human.source == "criterion"


@pytest.mark.parametrize("persona", ["analyst", "manager"])
def test_the_plan_downloads_as_json_with_its_themes_totals_and_ledger(
    persona, campaign, judges, client_for, request
):
    response = client_for(request.getfixturevalue(persona)).get(
        url(campaign, "evaluation:judge_plan_json"), {"target": "0.15"}
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="{campaign.slug}-relevance-judge-plan.json"'
    )
    data = response.json()
    assert data["target"] == 0.15 and data["judges"] == ["cheap", "dear"] and data["empty"] == ""
    assert [theme["theme"] for theme in data["themes"]] == ["Finance", "IT"]
    finance = data["themes"][0]
    assert finance["planned"] and finance["units"] == 40 and finance["labeled"] == 15
    assert finance["judges"] and finance["human_only"]["human_labels"] >= finance["human_labels"]
    assert finance["best_single_judge"]["judge"] in {"cheap", "dear"}
    assert data["totals"]["cost"] == pytest.approx(sum(theme["cost"] for theme in data["themes"]), abs=1e-5)
    human = data["ledger"]["human"]
    assert human["per_label"] == 1.0 and human["source"] == "criterion" and human["hourly_rate"] == 60
    assert {cost["judge"]: cost["per_unit"] for cost in data["ledger"]["judges"]} == {
        "cheap": 0.001,
        "dear": 0.05,
    }
    assert all(cost["source"] == "runs" for cost in data["ledger"]["judges"])


def test_the_plan_downloads_as_csv_a_row_per_theme_the_totals_and_the_ledger(
    campaign, judges, client_for, manager
):
    response = client_for(manager).get(url(campaign, "evaluation:judge_plan_csv"), {"target": "0.15"})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="{campaign.slug}-relevance-judge-plan.csv"'
    )
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:5] == ["theme", "units", "labeled", "pilot", "judges_and_shares"]
    assert [row[0] for row in rows[1:4]] == ["Finance", "IT", "total"]
    assert rows[4] == [] and rows[5][0] == "ledger"
    assert rows[6][:4] == ["human_label_cost", "", "1.0", "criterion"]
    assert {(row[1], row[2]) for row in rows[7:]} == {("cheap", "0.001"), ("dear", "0.05")}


def test_the_csv_neutralises_a_theme_that_reads_as_a_formula(bare_campaign, client_for, manager):
    planned(campaign=bare_campaign, prefix="bare", themes={"=HYPERLINK(1)": 20, "IT": 20})
    rows = list(
        csv.reader(
            io.StringIO(
                client_for(manager).get(url(bare_campaign, "evaluation:judge_plan_csv")).content.decode()
            )
        )
    )
    assert "'=HYPERLINK(1)" in [row[0] for row in rows if row]


def test_the_downloads_refuse_a_wrong_parameter_and_people_who_label(
    campaign, judges, client_for, manager, annotator, outsider
):
    for name in ("evaluation:judge_plan_csv", "evaluation:judge_plan_json"):
        bad = client_for(manager).get(url(campaign, name), {"target": "2"})
        assert bad.status_code == 400 and "target:" in bad.content.decode()
        assert client_for(annotator).get(url(campaign, name)).status_code == 403
        assert client_for(outsider).get(url(campaign, name)).status_code == 404
        assert Client().get(url(campaign, name)).status_code == 302


def test_the_page_links_to_its_downloads_with_its_parameters(campaign, judges, client_for, manager):
    content = client_for(manager).get(url(campaign), {"target": "0.15"}).content.decode()
    assert url(campaign, "evaluation:judge_plan_csv") + "?target=0.15" in content
    assert url(campaign, "evaluation:judge_plan_json") + "?target=0.15" in content


def test_the_json_download_reads_the_database_in_as_many_queries_as_the_page(
    bare_campaign, client_for, manager
):
    planned(campaign=bare_campaign, prefix="bare", themes={"Finance": 20, "IT": 15}, labeled=12)
    client = client_for(manager)
    client.get(url(bare_campaign, "evaluation:judge_plan_json"))
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url(bare_campaign, "evaluation:judge_plan_json")).status_code == 200
    assert len(queries) == 13  # session included


def api_plan(campaign, person, **params):
    return Client().get(
        f"/api/v1/campaigns/{campaign.slug}/criteria/relevance/judge-plan",
        params,
        HTTP_AUTHORIZATION=f"Bearer {api_token(person)}",
    )


def test_the_api_gives_the_downloads_json(campaign, judges, client_for, manager):
    api = api_plan(campaign, manager, target="0.15", judges="cheap,dear", minutes="2")
    assert api.status_code == 200
    page = client_for(manager).get(
        url(campaign, "evaluation:judge_plan_json"),
        {"target": "0.15", "judges": ["cheap", "dear"], "minutes": "2"},
    )
    assert api.json() == page.json() and api.json()["ledger"]["human"]["source"] == "given"


@pytest.mark.parametrize(
    ("params", "status", "field"),
    [
        ({"target": "2"}, 400, "target"),
        ({"alpha": "0"}, 400, "alpha"),
        ({"minutes": "0"}, 400, "minutes"),
        ({"judges": "nobody"}, 404, "judges"),
        ({"judges": "a,b,c,d"}, 404, "judges"),
    ],
)
def test_the_api_refuses_a_wrong_parameter_naming_it(campaign, judges, manager, params, status, field):
    response = api_plan(campaign, manager, **params)
    assert response.status_code == status, response.content
    assert field in response.json()["errors"][0]["field"]


def test_the_api_reads_the_database_in_a_constant_number_of_queries(bare_campaign, manager):
    planned(campaign=bare_campaign, prefix="bare", themes={"Finance": 20, "IT": 15}, labeled=12)
    api_plan(bare_campaign, manager)
    with CaptureQueriesContext(connection) as few:
        assert api_plan(bare_campaign, manager).status_code == 200
    more = make_campaign(name="Bigger")
    add_member(campaign=more, user=manager, roles=[Role.MANAGER])
    planned(campaign=more, themes={"Finance": 60, "IT": 45, "RH": 30}, labeled=25, prefix="big")
    api_plan(more, manager)
    with CaptureQueriesContext(connection) as many:
        assert api_plan(more, manager).status_code == 200
    assert len(few) == len(many) == 15  # the token check included
