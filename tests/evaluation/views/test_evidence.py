"""The evidence page and its JSON: who sees them, what they show, what they cost."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from annotation.models import Criterion, Level, Question, Unit
from evaluation.measures.evidence import report_as_json
from tests.factories import import_label, make_answer

pytestmark = pytest.mark.django_db


def url(campaign, name: str = "evaluation:evidence", **query) -> str:
    base = reverse(name, args=[campaign.slug])
    return base + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


@pytest.fixture
def gold(campaign):
    first = make_answer(campaign=campaign, theme="Finance", chunk_ids=("c1", "c2"))
    first.question.gold_evidence = [{"text": "Texte c1.", "chunk_id": "c1"}]
    first.question.save()
    second = make_answer(campaign=campaign, question=first.question, chunk_ids=("c2", "c3"))
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    import_label(unit=Unit.objects.get(answer=first, level=Level.ANSWER), criterion=relevance, value=1)
    import_label(unit=Unit.objects.get(answer=second, level=Level.ANSWER), criterion=relevance, value=0)
    hostile = make_answer(campaign=campaign, theme="<script>x</script>", chunk_ids=("c1",))
    hostile.question.gold_evidence = [{"chunk_id": "c1"}]
    hostile.question.save()
    return campaign


@pytest.mark.parametrize(
    ("persona", "status"),
    [
        ("manager", 200),
        ("analyst", 200),
        ("annotator", 403),
        ("reviewer", 403),
        ("adjudicator", 403),
        ("outsider", 404),
    ],
)
def test_managers_and_analysts_only(persona, status, campaign, client_for, request):
    user = request.getfixturevalue(persona)
    assert client_for(user).get(url(campaign)).status_code == status
    assert client_for(user).get(url(campaign, "evaluation:evidence_json")).status_code == status


def test_anonymous_goes_to_login_and_only_get(campaign, manager, client, client_for):
    assert client.get(url(campaign)).status_code == 302
    assert client_for(manager).post(url(campaign)).status_code == 405
    assert client_for(manager).post(url(campaign, "evaluation:evidence_json")).status_code == 405


def test_the_page_shows_coverage_ranking_and_calibration_with_its_defaults(gold, manager, client_for):
    response = client_for(manager).get(url(gold))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-theme="Finance"' in html and "N=1000" in html and "ndcg@10" in html
    # The default calibration: relevance (the criterion with labels), values 0 and 1.
    assert "What the score says about Relevance (N=1000)" in html
    assert html.count("<svg") == 2
    assert "<script>x</script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html


def test_the_page_reads_in_a_bounded_number_of_queries(
    gold, manager, client_for, django_assert_max_num_queries, django_assert_num_queries
):
    client = client_for(manager)
    client.get(url(gold))
    with django_assert_max_num_queries(15):
        first = client.get(url(gold, budgets="100,200", k="1,5"))
    # Asked again, nothing imported or labelled since: the report and its calibration come from
    # the cache. Session, user, campaign, roles, the form's criteria and campaigns to compare,
    # the criterion, the labels' version (the campaign's content version comes with it).
    with django_assert_num_queries(8):
        again = client.get(url(gold, budgets="100,200", k="1,5"))
    assert report_as_json(again.context["report"]) == report_as_json(first.context["report"])


def test_the_cached_report_follows_a_new_answer_an_edited_question_and_a_label(gold, manager, client_for):
    client = client_for(manager)

    def report():
        return client.get(url(gold, "evaluation:evidence_json")).json()

    before = report()
    question = Question.objects.get(campaign=gold, theme="Finance")
    answer = make_answer(campaign=gold, question=question, chunk_ids=("c1",))
    after_import = report()
    assert after_import["coverage"]["Finance"][0]["n"] == before["coverage"]["Finance"][0]["n"] + 1
    question.gold_evidence = [{"text": "Texte c1.", "chunk_id": "c3"}]
    question.save()  # as the admin saves it
    edited = report()
    assert edited["retrieval"]["Finance"] != after_import["retrieval"]["Finance"]
    relevance = Criterion.objects.get(campaign=gold, name="relevance")
    import_label(unit=Unit.objects.get(answer=answer, level=Level.ANSWER), criterion=relevance, value=1)
    assert report()["calibration"]["labelled"] == edited["calibration"]["labelled"] + 1


def test_a_bad_parameter_is_named_with_a_400(gold, manager, client_for):
    client = client_for(manager)
    response = client.get(url(gold, budgets="100,abc"))
    assert response.status_code == 400
    assert "budgets: &#x27;abc&#x27; is not a positive whole number" in response.content.decode()
    response = client.get(url(gold, criterion="relevance", insufficient_category=7))
    assert response.status_code == 400
    assert "insufficient_category" in response.content.decode()
    response = client.get(url(gold, "evaluation:evidence_json", k="0"))
    assert response.status_code == 400 and response.content.decode().startswith("k: ")


def test_choosing_no_criterion_leaves_the_calibration_out(gold, manager, client_for):
    html = client_for(manager).get(url(gold, criterion="")).content.decode()
    assert "What the score says" not in html


def test_the_json_download_holds_the_commands_numbers(gold, manager, client_for):
    response = client_for(manager).get(url(gold, "evaluation:evidence_json", budgets="100"))
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{gold.slug}-evidence.json"'
    data = response.json()
    assert data["coverage"]["overall"][0]["mean"] == pytest.approx((1 + 7 / 9) / 2)
    assert data["calibration"]["criterion"] == "relevance"
    assert data["retrieval"]["<script>x</script>"]["mrr"]["mean"] == 1.0


def test_the_form_shows_the_values_in_effect_so_that_submitting_it_asks_for_the_same(
    gold, manager, client_for
):
    html = client_for(manager).get(url(gold)).content.decode()
    assert 'name="budgets" id="id_budgets" value="100,200,300,400,500,600,700,800,900,1000"' in html
    assert '<option value="relevance" selected>' in html
    assert 'name="insufficient_category" value="0"' in html and 'name="correct_category" value="1"' in html


def test_the_csv_download_has_one_row_per_measure_and_theme_with_formulas_neutralised(
    gold, manager, client_for
):
    gold.name = "=cmd()"
    gold.save()
    response = client_for(manager).get(url(gold, "evaluation:evidence_csv", budgets="100", k="1"))
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == [
        "campaign",
        "measure",
        "theme",
        "budget",
        "k",
        "mean",
        "lo",
        "hi",
        "n",
        "questions",
        "alpha",
    ]
    by_key = {(r[1], r[2], r[3], r[4]): r for r in rows[1:]}
    assert float(by_key[("coverage", "overall", "100", "")][5]) == pytest.approx((1 + 7 / 9) / 2)
    assert by_key[("mrr", "overall", "", "")][8] == "3"
    assert ("precision", "Finance", "", "1") in by_key
    assert {r[0] for r in rows[1:]} == {"'=cmd()"}
    assert client_for(manager).get(url(gold, "evaluation:evidence_csv", k="x")).status_code == 400


@pytest.fixture
def other_retriever(gold, manager):
    from annotation.models import Role
    from tests.factories import add_member, make_campaign

    other = make_campaign(name="Other retriever")
    add_member(campaign=other, user=manager, roles=[Role.MANAGER])
    answer = make_answer(campaign=other, theme="Finance", chunk_ids=("c1",))
    answer.question.gold_evidence = [{"text": "Texte c1.", "chunk_id": "c1"}]
    answer.question.save()
    return other


def test_campaigns_side_by_side_on_the_page_and_in_the_downloads(gold, other_retriever, manager, client_for):
    client = client_for(manager)
    html = client.get(url(gold, budgets="100", other=other_retriever.slug)).content.decode()
    assert 'id="side-title"' in html and "Other retriever" in html
    assert f'<option value="{other_retriever.slug}" selected>' in html
    data = client.get(url(gold, "evaluation:evidence_json", budgets="100", other=other_retriever.slug)).json()
    assert [d["campaign"] for d in data] == [gold.name, "Other retriever"]
    assert data[1]["coverage"]["overall"][0]["mean"] == 1.0
    rows = client.get(url(gold, "evaluation:evidence_csv", budgets="100", other=other_retriever.slug))
    assert "Other retriever" in rows.content.decode()


def test_a_campaign_the_user_does_not_manage_or_analyse_cannot_stand_beside(gold, manager, client_for):
    from tests.factories import make_campaign

    hidden = make_campaign(name="Hidden")
    response = client_for(manager).get(url(gold, other=hidden.slug))
    assert response.status_code == 400
    assert "Hidden" not in response.content.decode()
